"""Pane runtime: the PTY pump, viewers, serialized input, the screen model, exit handling.

One ``PaneRuntime`` per pane that has (or had) a process in this daemon instance. The pump is
event driven (``loop.add_reader`` on the master, or ``read_batch`` rounds for panes nobody
follows live and that do not print in bulk — 10 ms rounds, 250 ms once nobody has talked to
the program for 2 s — or a native reader thread's wake pipe for a few panes that do print in
bulk, ``term/reader_thread.py``): each read of at most 64 KiB is scanned for
OSC/BEL items, answered queries go back to the PTY at once, the bytes go to the raw ring, the
viewers and the screen's pending buffer, and the items are applied through ``core.rules``.
The screen is fed by a separate drain task in ≤ 16 KiB slices with a yield between slices; when
too much is pending the reader pauses, so a flooding pane cannot starve the loop (the program
is slowed down by the PTY, like a slow terminal would).
Answering terminal queries is ``server/term_replies.py`` (a mixin of ``PaneRuntime``);
``pane.wait_for_output`` matching is ``server/output_match.py``.
Spec: README "Data flow", agents.md §7.1/§7.5/§7.6, protocol.md §5 pane methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from signaltty.core import layer_rules, rules
from signaltty.core.ids import new_id
from signaltty.core.limits import (
    PTY_READ_BYTES,
    RAW_RING_BYTES,
    SCREEN_PIECE_BYTES,
    SCREEN_SLICE_BYTES,
    SCREEN_SLICE_S,
)
from signaltty.core.model import Pane, iso
from signaltty.core.rules import NotificationInput
from signaltty.proto.envelope import SignalttyError
from signaltty.server import read_batch
from signaltty.server.coalesce import Budget, Coalescer
from signaltty.server.status_layer import ProgramStatusLayer
from signaltty.server.term_replies import ReplyJob, TerminalReplies
from signaltty.term import osc, reader_thread
from signaltty.term import pty as ptymod
from signaltty.term.raw_ring import RawRing
from signaltty.term.screen import PyteScreen, VirtualScreen

if TYPE_CHECKING:
    from signaltty.server.store import Store
    from signaltty.term._reader import Reader as BulkReader

log = structlog.get_logger("signaltty.panes")

# Reader backpressure: pause reading above HIGH pending screen bytes, resume below LOW.
_PENDING_HIGH = 64 * 1024
_PENDING_LOW = 16 * 1024
# Pending screen bytes that start a drain at once instead of waiting for a reader or the sweep.
_DRAIN_NOW = 16 * 1024
# A read at least this large means the program prints in bulk: its master is read directly
# (not in ``read_batch`` rounds) until no read this large came for BULK_HOLD_S seconds.
_BULK_READ = 2048
_BULK_HOLD_S = 0.25
# A batched pane moves to the slow lane (``read_batch.SLOW_BATCH_S`` rounds) once this long has
# passed since it started, was written to, resized, asked the terminal something or had an
# output waiter: a program that answers input or waits for a reply is read within 10 ms, one
# that only redraws a spinner is read 4 times a second (a screen rule looks every 500 ms).
_SLOW_AFTER_S = 2.0
# A read that held this many items (OSC sequences, BELs, queries: ~25 µs each to scan and
# apply) makes the next read of the pane take at most _DENSE_READ_BYTES: a loop turn then
# spends ~1 ms instead of ~4 ms on such a pane, and another pane's request waits that long
# at each of its steps (issue 12, bad input: 10⁴ OSC a second, bench/latency.py "osc").
_DENSE_ITEMS = 32
_DENSE_READ_BYTES = 1024
# After the child exits, read what it left in the PTY, at most this much and this long.
_EXIT_DRAIN_BYTES = 256 * 1024
_EXIT_DRAIN_S = 0.05
# A pane's OSC 9/99/777 notifications: this many at once, then this many a second; past it
# the latest waits for a token and the ones it replaced are dropped (issue 12, "bad input":
# 10⁴ OSC a second made a record, an id, an event and a snapshot change each, 45 % of a core).
NOTE_BURST = 20.0
NOTE_RATE = 4.0
# OSC 7 cwd reports name this host (agents.md §7.2).
_HOSTNAME = socket.gethostname()


class Viewer(Protocol):
    """A connection attached to a pane; receives ``pty.data`` (protocol.md §7)."""

    def deliver_data(self, pane_id: str, data: bytes, output_offset: int) -> None: ...

    def detached(self, pane_id: str) -> None: ...


class PaneRuntime(TerminalReplies):
    """The live side of one pane: PTY, pump, screen, viewers, input queue."""

    def __init__(self, store: Store, pane: Pane, screen: VirtualScreen | None = None) -> None:
        self.store = store
        self.pane = pane
        self.screen: VirtualScreen = screen or PyteScreen(pane.cols, pane.rows)
        self.scanner = osc.OscScanner(hostname=_HOSTNAME)
        self.raw = RawRing(RAW_RING_BYTES)
        self.output_offset = 0
        self.viewers: set[Viewer] = set()
        # viewers attached with ``mark_seen: false`` (tools, not a person); pruned lazily
        self._passive: set[Viewer] = set()
        self.proc: ptymod.PtyProcess | None = None
        self.watcher: ptymod.ExitWatcher | None = None
        self.eof = False
        self.closed = False
        self.retained_text: str | None = None
        self._loop = asyncio.get_running_loop()
        self._reading = False
        # ``read_batch``: the master is read in rounds (None: the platform has no batcher)
        self._batcher = read_batch.for_loop(self._loop)
        self._slow_batcher = read_batch.for_loop(self._loop, read_batch.SLOW_BATCH_S)
        self._batched = False
        self._slow = False  # batched in the slow lane
        self._fast_until = time.monotonic() + _SLOW_AFTER_S
        self._read_by: read_batch.ReadBatcher | None = None  # the batcher holding the master
        self._direct_until = 0.0  # bulk output: read directly until then (monotonic s)
        # bulk output: a thread reads the master and the loop takes from it (reader_thread)
        self._bulk_reader: BulkReader | None = None
        self._bulk_timer: asyncio.TimerHandle | None = None
        self._child_exited = False
        self._paused = False
        self._handing_over = False  # readers stay off until the restart (issue 15)
        self._drain_task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._settled.set()
        self._reply_job: ReplyJob | None = None
        self._read_limit = PTY_READ_BYTES
        self._screen_faults = 0
        self._reply_task: asyncio.Task[None] | None = None
        self._input_lock = asyncio.Lock()
        self._writable: asyncio.Future[None] | None = None
        self._output_listeners: set[Callable[[bytes], None]] = set()
        self._progress_pending: dict[str, Any] | None = None
        self._progress_events = Coalescer(self._flush_progress)
        self._title_events = Coalescer(self._flush_title)
        # a pane's own OSC notifications: a burst, then a steady rate; past it the latest
        # waits for the next token (bench/latency.py "osc": 10⁴ OSC a second)
        self._note_budget = Budget(NOTE_BURST, NOTE_RATE)
        self._held_note: NotificationInput | None = None
        self._held_note_handle: asyncio.TimerHandle | None = None
        self._notes_limited_logged = False
        self._exit_waiters: list[asyncio.Future[None]] = []
        self.on_exit_hooks: list[Callable[[PaneRuntime], None]] = []
        self.status = ProgramStatusLayer(store, pane)
        self._reply_tasks: set[asyncio.Task[None]] = set()

    # ---------------------------------------------------------------- viewers

    def set_watching(self, viewer: Viewer, watching: bool) -> None:
        """Record whether ``viewer`` (already in :attr:`viewers`) is a person looking."""
        self._passive &= self.viewers
        if watching:
            self._passive.discard(viewer)
        else:
            self._passive.add(viewer)

    @property
    def watched(self) -> bool:
        """True while an interactive viewer is attached (issue 13 item 9: its own BEL, OSC
        notification or exit then leaves the pane's attention alone)."""
        return any(v not in self._passive for v in self.viewers)

    # ---------------------------------------------------------------- lifecycle

    @property
    def live(self) -> bool:
        return self.proc is not None and self.pane.live

    def start(self, proc: ptymod.PtyProcess, *, child: bool = True) -> None:
        """Adopt a spawned process: start the pump and the exit watcher (``child=False``: a
        program kept across a daemon crash, not ours to reap; ``ExitWatcher``)."""
        self.proc = proc
        self.eof = False
        self._child_exited = False
        self.status.reset()
        self._start_reading()
        self.watcher = ptymod.ExitWatcher(self._loop, proc.pid, self._on_child_exit, child=child)

    def _start_reading(self) -> None:
        if (
            self.proc is not None
            and self.proc.master_fd >= 0
            and not self._reading
            and not self.eof
            and not self.closed
            and self._reply_job is None  # held bytes of a deferred cursor report go first
            and not self._handing_over
        ):
            fd = self.proc.master_fd
            if self._bulk_reader is not None:
                self._loop.add_reader(self._bulk_reader.wake_fd, self._on_readable)
            elif self._batched:
                batcher = self._slow_batcher if self._slow else self._batcher
                assert batcher is not None
                batcher.add(fd, self._on_readable)
                self._read_by = batcher
            else:
                self._loop.add_reader(fd, self._on_readable)
            self._reading = True

    def _stop_reading(self) -> None:
        if self.proc is not None and self._reading:
            fd = self.proc.master_fd
            if self._bulk_reader is not None:
                with contextlib.suppress(ValueError, OSError):
                    self._loop.remove_reader(self._bulk_reader.wake_fd)
            elif self._read_by is not None:
                self._read_by.remove(fd)
                self._read_by = None
            else:
                with contextlib.suppress(ValueError, OSError):
                    self._loop.remove_reader(fd)
            self._reading = False

    @property
    def reads_batched(self) -> bool:
        """True while the master is read in ``read_batch`` rounds (output up to
        ``READ_BATCH_S`` late, ``SLOW_BATCH_S`` in the slow lane), False while it is read as
        soon as output arrives."""
        return self._reading and self._batched

    @property
    def reads_slowly(self) -> bool:
        """True while the master is read in the slow lane's rounds (``_SLOW_AFTER_S``)."""
        return self._reading and self._batched and self._slow

    def catch_up(self) -> None:
        """Read what waits on a master read in rounds now (one read, up to the read limit):
        a ``pane.read`` shows what the program printed so far, not the last round's state."""
        if self.reads_batched:
            self._on_readable()

    def stay_fast(self) -> None:
        """Someone talks to the program (input, a resize, a terminal query, an output
        waiter): read it in the fast rounds for the next ``_SLOW_AFTER_S`` seconds."""
        self._fast_until = time.monotonic() + _SLOW_AFTER_S
        if self._slow:
            self._choose_reader(0)

    @property
    def reads_by_thread(self) -> bool:
        """True while a native reader thread reads the master (the pane prints in bulk;
        ``term/reader_thread.py``) and the loop takes its output from that thread."""
        return self._bulk_reader is not None

    def _choose_reader(self, size: int, *, full: bool = False) -> None:
        """Read in ``read_batch`` rounds unless someone follows the pane live (a viewer or an
        output listener) or it prints in bulk (a read of ``_BULK_READ`` or more, or one that
        filled its limit — ``full``: a stream dense with OSC sequences is read 1 KiB at a
        time, and in rounds it would crawl at 4 KiB a second in the slow lane — until
        ``_BULK_HOLD_S`` without one): those are read as soon as output arrives."""
        now = time.monotonic()
        if full or size >= _BULK_READ:
            self._direct_until = now + _BULK_HOLD_S
            # off: no call per read; a dense stream's 1 KiB reads stay on the loop
            if size >= _BULK_READ and self._bulk_reader is None and reader_thread.ENABLED:
                self._begin_bulk_reader()
        if self._bulk_reader is not None:
            return
        batched = (
            self._batcher is not None
            and now >= self._direct_until
            and not self.viewers
            and not self._output_listeners
        )
        slow = (
            batched
            and self._slow_batcher is not None
            and now >= self._fast_until
            and not self.store.bus.has_output_waiters(self.pane.id)
        )
        if (batched != self._batched or slow != self._slow) and self._reading:
            self._stop_reading()
            self._batched, self._slow = batched, slow
            self._start_reading()
        else:
            self._batched, self._slow = batched, slow

    def _on_readable(self) -> None:
        try:
            self._read_once(self._read_limit)
        except Exception:  # noqa: BLE001 - one pane's fault must not reach the loop
            log.exception("pump.failed", pane_id=self.pane.id)
            self.scanner.reset()

    def _read_once(self, limit: int = PTY_READ_BYTES) -> int:
        """Read at most ``limit`` bytes (from the bulk reader's buffer while there is one,
        else from the master) and put them through the pump; their count, 0 if none were
        waiting, -1 at the end of output."""
        assert self.proc is not None
        reader = self._bulk_reader
        if reader is not None:
            data = reader.take(limit)
            if not data:
                if reader.running:
                    return 0
                # halted or ended and emptied: the master is read here again, and tells
                # the end of output itself (EIO) if that is why the thread ended
                self._end_bulk_reader()
                return self._read_once(limit)
        else:
            try:
                data = os.read(self.proc.master_fd, limit)
            except BlockingIOError:
                return 0
            except OSError as exc:
                if exc.errno in (errno.EIO, errno.EBADF):
                    self._on_eof()
                    return -1
                raise
            if not data:
                self._on_eof()
                return -1
        self._process(data)
        if reader is not None and self._bulk_reader is reader and not reader.running:
            if not reader.pending:
                # the wake pipe went quiet with the last byte: nothing would call again
                self._end_bulk_reader()
            return len(data)
        self._choose_reader(len(data), full=len(data) >= limit)
        return len(data)

    # ---------------------------------------------------------------- bulk reader thread

    def _begin_bulk_reader(self) -> None:
        """Hand the master to a reader thread (``term/reader_thread.py``) while the pane
        prints in bulk; nothing changes when none is available (module missing, too many
        threads) or the pump is held (paused, a deferred reply, a handover, the child gone)."""
        if (
            self.proc is None
            or self.proc.master_fd < 0
            or not (self._reading or self._paused)  # held for a reply: one source at a time
            or self._reply_job is not None
            or self._handing_over
            or self._child_exited
            or self.eof
            or self.closed
        ):
            return
        try:
            reader = reader_thread.open_reader(self.proc.master_fd)
        except OSError:
            log.warning("pump.reader_thread_failed", pane_id=self.pane.id, exc_info=True)
            return
        if reader is None:
            return
        reading = self._reading
        self._stop_reading()
        self._batched = self._slow = False
        self._bulk_reader = reader
        if reading:  # paused (the screen is behind): the thread reads on meanwhile
            self._start_reading()
        self._bulk_timer = self._loop.call_later(_BULK_HOLD_S, self._check_bulk)

    def _check_bulk(self) -> None:
        """At the bulk hold's end (an idle pane calls nothing else): halt the thread once no
        large read came for ``_BULK_HOLD_S`` and it holds little; its bytes are taken first."""
        self._bulk_timer = None
        reader = self._bulk_reader
        if reader is None or not reader.running:
            return
        left = self._direct_until - time.monotonic()
        if left > 0 or reader.pending >= _BULK_READ:
            self._bulk_timer = self._loop.call_later(max(left, 0.05), self._check_bulk)
            return
        reader.halt()
        if not reader.pending:
            self._end_bulk_reader()

    def _end_bulk_reader(self) -> None:
        """Close the (halted or ended, emptied) thread; the loop reads the master again."""
        reading = self._reading
        self._drop_bulk_reader()
        if reading:
            self._start_reading()

    def _drop_bulk_reader(self) -> None:
        """Stop watching and close the thread, dropping what it holds (a closing pane's)."""
        reader = self._bulk_reader
        if reader is None:
            return
        self._stop_reading()
        self._bulk_reader = None
        if self._bulk_timer is not None:
            self._bulk_timer.cancel()
            self._bulk_timer = None
        reader.close()

    def _halt_bulk_reader(self) -> None:
        """Stop the thread (the child exited, a handover): what it holds is read next."""
        if self._bulk_reader is not None:
            self._bulk_reader.halt()

    def _on_eof(self) -> None:
        """EIO on the master: end of output (not exit; the exit watcher decides that)."""
        self._stop_reading()
        self.eof = True
        self._apply_items(self.scanner.feed_eof())
        if not self.pane.live:
            self._close_master()

    # ---------------------------------------------------------------- pump

    def _process(self, data: bytes) -> None:
        items = self.scanner.feed(data)
        if len(items) >= _DENSE_ITEMS:
            self._read_limit = _DENSE_READ_BYTES
            # a stream dense with OSC stays in the fast rounds: read 250 ms at a time, 100
            # such panes made the slow lane's rounds bursts the loop waited 30-110 ms on
            self._fast_until = time.monotonic() + _SLOW_AFTER_S
        else:
            self._read_limit = PTY_READ_BYTES
        prefed = self._answer_queries(items, data) if items else 0
        self._append_raw(data)
        self.pane.last_activity_at = time.time()
        self.screen.feed(data[prefed:] if prefed else data)
        if self.viewers:
            for viewer in list(self.viewers):
                try:
                    viewer.deliver_data(self.pane.id, data, self.output_offset)
                except Exception:  # noqa: BLE001 - a viewer's fault never costs the chunk its items
                    log.exception("pump.viewer_failed", pane_id=self.pane.id)
                    self.viewers.discard(viewer)
        if self._output_listeners:
            for listener in list(self._output_listeners):
                listener(data)
        if items:
            self._apply_items(items)
        if self.screen.pending >= _DRAIN_NOW:
            self._schedule_drain()
        self.store.touched.add(self.pane.id)
        self.store.bus.poke_output(self.pane.id)  # output waits re-read the (settled) screen

    def _append_raw(self, data: bytes) -> None:
        self.output_offset += len(data)
        self.raw.write(data)

    def _apply_items(self, items: list[Any]) -> None:
        store = self.store
        pane = self.pane
        now = store.now()
        for item in items:
            effects: list[rules.Effect]
            match item:
                case osc.Title(text=text):
                    # the title itself changes at once; its event is coalesced: Codex turns
                    # its spinner in the title 10×/s, and each event rebuilt the whole pane
                    # record (issue 12, bench/replay.py: 13 % of the daemon's CPU), so
                    # the change itself builds no event either; the scanner's titles are
                    # sanitized already
                    if rules.set_title(pane, text, sanitized=True):
                        self._title_events.poke()
                    continue
                case osc.Notify(source=source, title=title, body=body):
                    note = NotificationInput(
                        id="",
                        title=title,
                        body=body,
                        severity="info",
                        source=source,
                        attention_source="osc",
                    )
                    if not self._note_budget.take():
                        self._hold_note(note)
                        continue
                    note.id = new_id("notif")
                    effects = rules.on_notification(pane, note, now=now, watched=self.watched)
                case osc.Bell():
                    effects = rules.on_bell(pane, now=now, watched=self.watched)
                case osc.Cwd(path=path):
                    effects = rules.on_cwd(pane, path, is_dir=os.path.isdir(path))
                case osc.Progress(state=state, percent=percent, raw=raw):
                    self._queue_progress(
                        {"state": state, "percent": percent, "raw": raw, "at": now}
                    )
                    continue
                case osc.ProgramStatus(payload=payload, size=size):
                    self.status.on_report(payload, size)
                    continue
                case osc.PromptStart():
                    self.status.on_prompt_start()
                    continue
                case osc.Reset():
                    self.status.on_reset()
                    continue
                case _:
                    continue
            store.apply(effects)

    def _hold_note(self, note: NotificationInput) -> None:
        """Past the notification budget: ``note`` replaces any held one (latest wins) and is
        applied when the next token comes; the ones it replaced are dropped (logged once)."""
        if self._held_note is not None and not self._notes_limited_logged:
            self._notes_limited_logged = True
            log.warning(
                "pane.notifications_limited",
                pane_id=self.pane.id,
                burst=NOTE_BURST,
                per_second=NOTE_RATE,
            )
        self._held_note = note
        if self._held_note_handle is None:
            self._held_note_handle = self._loop.call_later(
                self._note_budget.wait_s(), self._release_note
            )

    def _release_note(self) -> None:
        self._held_note_handle = None
        note, self._held_note = self._held_note, None
        if note is None or self.closed or self.pane.id not in self.store.panes:
            return
        if not self._note_budget.take():
            self._hold_note(note)
            return
        note.id = new_id("notif")
        store = self.store
        store.apply(rules.on_notification(self.pane, note, now=store.now(), watched=self.watched))

    def _queue_progress(self, progress: dict[str, Any]) -> None:
        """Coalesce ``pane.progress``: at most one per 250 ms, latest wins (protocol.md §7)."""
        self._progress_pending = progress  # "at" is formatted once, when it is published
        self._progress_events.poke()

    def _flush_title(self) -> None:
        self.store.apply(rules.title_updated(self.pane))

    def _flush_progress(self) -> None:
        progress, self._progress_pending = self._progress_pending, None
        if progress is None or not self.pane.live:
            return
        progress["at"] = iso(progress["at"])
        self.store.apply(rules.on_progress(self.pane, progress))

    # ---------------------------------------------------------------- screen feeding

    def _schedule_drain(self) -> None:
        # Small amounts wait for a reader (pane.read, attach, waits settle first) or the
        # screen sweep, which apply them in one batch: a spinner redrawing at 10 fps is
        # parsed five frames at a time instead of frame by frame. Only a backlog is drained
        # right away, in time slices.
        if self.screen.pending < _DRAIN_NOW:
            return
        if self._drain_task is None or self._drain_task.done():
            self._settled.clear()
            self._drain_task = self._loop.create_task(self._drain(), name=f"drain-{self.pane.id}")
        if self.screen.pending > _PENDING_HIGH and not self._paused:
            self._paused = True
            self._stop_reading()

    async def _drain(self) -> None:
        try:
            while self.screen.pending:
                # Feed small pieces until the time slice is used up, then yield: escape-dense
                # or scroll-heavy input costs far more per byte than plain text.
                deadline = time.perf_counter() + SCREEN_SLICE_S
                fed = 0
                while self.screen.pending and fed < SCREEN_SLICE_BYTES:
                    if fed and self.screen.drain_is_costly(SCREEN_PIECE_BYTES):
                        break  # a resolve of the lazy window gets a slice of its own
                    fed += self.screen.drain(SCREEN_PIECE_BYTES)
                    if time.perf_counter() >= deadline:
                        break
                if self._paused and self.screen.pending < _PENDING_LOW:
                    self._paused = False
                    self._start_reading()
                await asyncio.sleep(0)
        except Exception:  # noqa: BLE001
            log.exception("screen.drain_failed", pane_id=self.pane.id)
        finally:
            self._note_screen_faults()
            if self._paused:
                self._paused = False
                self._start_reading()
            self._settled.set()
            self.store.bus.poke_output(self.pane.id)

    def _note_screen_faults(self) -> None:
        """Log each new fault the screen model caught (a bug in a fast path: the output was
        drawn the slow way instead, nothing lost), once per drain, with the last one's text."""
        faults = self.screen.faults
        if faults != self._screen_faults:
            log.warning(
                "screen.fault",
                pane_id=self.pane.id,
                new=faults - self._screen_faults,
                classes=self.screen.fault_classes,
                last=self.screen.last_fault,
            )
            self._screen_faults = faults

    async def settle(self) -> None:
        """Apply the bytes that were pending when called, yielding between pieces.

        Bounded: output that keeps arriving meanwhile is not waited for, so a pane that
        never stops printing cannot stall a read, an attach or a save.
        """
        task = self._reply_task
        if task is not None and not task.done():
            # Bytes held back behind a deferred cursor report count as pending; the task
            # itself is bounded (one chunk plus the backlog before it) and yields.
            await asyncio.shield(task)
        budget = self.screen.pending
        while budget > 0 and self.screen.pending:
            budget -= max(1, self.screen.drain(min(budget, SCREEN_PIECE_BYTES * 4)))
            await asyncio.sleep(0)

    def settle_now(self) -> None:
        """Apply pending bytes synchronously (bounded by the reader's pause threshold),
        finishing a deferred cursor report first so that its held bytes are included."""
        self._settle_reply()
        while self.screen.pending:
            self.screen.drain(SCREEN_SLICE_BYTES * 16)

    def _settle_reply(self) -> None:
        """Finish a deferred cursor report now (its held bytes are queued for the screen)."""
        job = self._reply_job
        if job is not None and job.deferred:
            self._advance_replies(job, None, None)

    def add_output_listener(self, fn: Callable[[bytes], None]) -> None:
        self._output_listeners.add(fn)
        self._choose_reader(0)

    def follow_live(self) -> None:
        """A viewer was added: read the master as soon as output arrives from now on."""
        self._choose_reader(0)

    def remove_output_listener(self, fn: Callable[[bytes], None]) -> None:
        self._output_listeners.discard(fn)

    # ---------------------------------------------------------------- reads

    @property
    def screen_offset(self) -> int:
        """Output offset (bytes) the screen model has applied: ``output_offset`` minus pending
        bytes and bytes held back behind a deferred cursor report."""
        job = self._reply_job
        held = len(job.chunk) - job.prefed if job is not None and job.deferred else 0
        return self.output_offset - self.screen.pending - held

    def tail_text(self, lines: int, *, apply_pending: bool = True) -> tuple[str, bool]:
        """Rendered history + visible screen, or the restored tail for a pane with no screen;
        ``apply_pending=False``: as applied so far (see ``VirtualScreen.tail``)."""
        if self.retained_text is not None and self.proc is None:
            all_lines = self.retained_text.split("\n")
            return "\n".join(all_lines[-lines:]), len(all_lines) > lines
        return self.screen.tail(lines, apply_pending=apply_pending)

    def read_tail(self, lines: int) -> tuple[str, bool, bool]:
        """The ``pane.read`` tail window and what ``pane.wait_for_output`` matches:
        ``(text, truncated, alt_screen)``, every pending byte applied.

        On the primary screen this is ``tail_text``. While the program shows the alternate
        screen (a full-screen agent such as Codex or OpenCode), its visible rows (right-trimmed,
        trailing empty rows dropped) follow the history and main grid, and the last ``lines``
        lines of that whole are returned (issue 11 item 10; docs/decisions.md). Saves keep
        ``tail_text`` (the main grid), as a real terminal forgets the alternate screen.
        """
        if (self.retained_text is not None and self.proc is None) or not self.screen.alt_screen:
            text, truncated = self.tail_text(lines)
            return text, truncated, False
        alt = self.screen.screen_text()
        alt_rows = alt.split("\n") if alt else []
        if len(alt_rows) >= lines:
            more = len(alt_rows) > lines or bool(self.tail_text(1)[0])
            return "\n".join(alt_rows[len(alt_rows) - lines :]), more, True
        text, truncated = self.tail_text(lines - len(alt_rows))
        if not alt_rows:
            return text, truncated, True
        return ("\n".join([text, *alt_rows]) if text else alt), truncated, True

    def raw_text(self) -> str:
        return bytes(self.raw).decode("utf-8", errors="replace")

    # ---------------------------------------------------------------- input

    async def write_input(self, data: bytes, budget_s: float) -> int:
        """Write ``data`` to the PTY, FIFO per pane, within ``budget_s`` including queueing.

        Raises:
            SignalttyError: ``TIMEOUT`` / ``PANE_EXITED`` with ``details.written_bytes``.
        """
        self.stay_fast()  # the program's answer is read within a fast round
        deadline = self._loop.time() + budget_s
        try:
            async with asyncio.timeout(budget_s):
                await self._input_lock.acquire()
        except TimeoutError:
            raise SignalttyError("TIMEOUT", "input timed out", {"written_bytes": 0}) from None
        written = 0
        try:
            view = memoryview(data)
            while written < len(data):
                if not self.live or self.proc is None:
                    raise SignalttyError(
                        "PANE_EXITED", "pane has exited", {"written_bytes": written}
                    )
                try:
                    written += os.write(self.proc.master_fd, view[written:])
                    continue
                except BlockingIOError:
                    pass
                except OSError as exc:
                    raise SignalttyError(
                        "PANE_EXITED",
                        f"pane is not writable: {exc.strerror}",
                        {"written_bytes": written},
                    ) from exc
                remaining = deadline - self._loop.time()
                if remaining <= 0:
                    raise SignalttyError("TIMEOUT", "input timed out", {"written_bytes": written})
                await self._wait_writable(remaining)
            self.pane.last_activity_at = time.time()
            if written:
                if layer_rules.input_starts_turn(self.pane):
                    self.pane.turn_input = True  # a turn can start now (issue 11 item 5)
                self.pane.input_at = self.pane.last_activity_at  # issue 11 item 7
            return written
        finally:
            self._input_lock.release()

    async def _wait_writable(self, within_s: float) -> None:
        assert self.proc is not None
        fut: asyncio.Future[None] = self._loop.create_future()
        fd = self.proc.master_fd

        def ready() -> None:
            if not fut.done():
                fut.set_result(None)

        self._loop.add_writer(fd, ready)
        self._writable = fut
        try:
            await asyncio.wait_for(asyncio.shield(fut), min(within_s, 0.5))
        except TimeoutError:
            pass
        finally:
            self._writable = None
            self._remove_writer(fd)

    def _remove_writer(self, fd: int) -> None:
        if fd >= 0:
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_writer(fd)

    # ---------------------------------------------------------------- resize / signals

    def resize(self, cols: int, rows: int) -> None:
        """TIOCSWINSZ (the kernel sends SIGWINCH) plus the screen model."""
        self.stay_fast()  # the program redraws for the new size
        self.settle_now()
        self.screen.resize(cols, rows)
        self.pane.cols, self.pane.rows = cols, rows
        if self.live and self.proc is not None:
            try:
                ptymod.set_winsize(self.proc.master_fd, cols, rows)
            except OSError:
                log.debug("pane.resize_failed", pane_id=self.pane.id)

    def send_signal(self, sig: int, *, group: bool) -> None:
        """Raises ProcessLookupError when nothing is left to signal."""
        assert self.proc is not None
        ptymod.signal_child(self.proc.pid, sig, group=group, master_fd=self.proc.master_fd)

    # ---------------------------------------------------------------- exit

    def _on_child_exit(self, code: int | None) -> None:
        self._child_exited = True
        self._halt_bulk_reader()
        self._drain_at_exit()
        store = self.store
        # an attached viewer sees the exit: it is not news for later (issue 13 item 9)
        effects = rules.on_exit(
            self.pane,
            code,
            now=store.now(),
            shutting_down=store.shutting_down,
            watched=self.watched,
        )
        store.apply(effects)
        self._progress_events.cancel()
        self.status.reset()
        if self.eof:
            self._close_master()
        for fut in self._exit_waiters:
            if not fut.done():
                fut.set_result(None)
        for hook in self.on_exit_hooks:
            hook(self)
        store.bus.poke(self.pane.id)

    def _drain_at_exit(self) -> None:
        """Put what the child left in the PTY (and a halted thread's buffer) through the pump
        before its exit is published: also while the reader is paused for the screen (a
        flood's end) or a cursor report is deferred (finished first, so that its held bytes
        go before the rest). Not during a handover, whose parsers must stay where they rest.
        At most ``_EXIT_DRAIN_BYTES`` (plus a thread's buffer) and ``_EXIT_DRAIN_S``: output
        dense with items costs ~2 µs a byte, and a grandchild may print on forever."""
        limit = _EXIT_DRAIN_BYTES + (reader_thread.BUFFER_BYTES if self._bulk_reader else 0)
        deadline = time.monotonic() + _EXIT_DRAIN_S
        drained = 0
        while (
            self.proc is not None
            and self.proc.master_fd >= 0
            and not self._handing_over
            and not self.eof
            and not self.closed
            and drained < limit
            and time.monotonic() < deadline
        ):
            try:
                self._settle_reply()
                n = self._read_once(self._read_limit)
            except Exception:  # noqa: BLE001 - the exit is applied whatever the output did
                log.exception("pump.exit_drain_failed", pane_id=self.pane.id)
                break
            if n <= 0:
                break
            drained += n

    async def wait_exit(self, within_s: float) -> bool:
        """Wait up to ``within_s`` seconds for the child to be reaped; True if it was."""
        if self.watcher is None or self.proc is None or self._child_gone():
            return True
        fut: asyncio.Future[None] = self._loop.create_future()
        self._exit_waiters.append(fut)
        try:
            await asyncio.wait_for(fut, within_s)
            return True
        except TimeoutError:
            return False

    def group_alive(self) -> bool:
        """True while any process is left in the child's process group."""
        if self.proc is None:
            return False
        try:
            os.killpg(self.proc.pid, 0)
        except OSError:
            return False
        return True

    def _child_gone(self) -> bool:
        return self.watcher is not None and getattr(self.watcher, "_done", False)

    def _close_master(self) -> None:
        if self.proc is None or self.proc.master_fd < 0:
            return
        # before the descriptor goes: its number can be reused while a thread polls it
        self._drop_bulk_reader()
        self._stop_reading()
        # libuv aborts the whole process if a registered fd is closed under it.
        self._remove_writer(self.proc.master_fd)
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        with contextlib.suppress(OSError):
            os.close(self.proc.master_fd)
        self.proc.master_fd = -1

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        """Signal the child's process group (pane close / shutdown); errors ignored.

        The group outlives its leader while other members (a grandchild holding the PTY)
        remain, and its id cannot be reused meanwhile, so it is signalled even after the
        child has exited.
        """
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except OSError:
            if not self._child_gone():
                with contextlib.suppress(OSError):
                    os.kill(self.proc.pid, sig)

    def close(self) -> None:
        """Release the master and stop watching (idempotent); the child is reaped if it exits."""
        self.closed = True
        self.viewers.clear()
        self._passive.clear()
        self._output_listeners.clear()
        self._progress_events.cancel()
        self._title_events.cancel()
        if self._held_note_handle is not None:
            self._held_note_handle.cancel()
            self._held_note_handle = None
        self._close_master()

    # ---------------------------------------------------------------- restart (issue 15)

    def pause_for_handover(self, within_s: float) -> bool:
        """Stop reading, apply every pending byte and, when the output stopped inside an
        escape sequence or a UTF-8 character, read on (≤ 4 KiB at a time, ``within_s``) until
        both the OSC scanner and the screen's parser rest. True when they do; the bytes read
        meanwhile went through the whole pump as usual."""
        self._stop_reading()
        self._handing_over = True
        if self._bulk_reader is not None:
            # the thread's bytes belong to this daemon's screen, not the next one's
            self._halt_bulk_reader()
            while self._bulk_reader is not None:
                self._settle_reply()  # a deferred report's held bytes go first
                if self._read_once() < 0:
                    break
        self.settle_now()
        deadline = time.monotonic() + within_s
        while not self._at_ground():
            if self.proc is None or self.eof or time.monotonic() > deadline:
                return False
            try:
                if self._read_once(4096) == 0:
                    time.sleep(0.002)  # the program is writing the rest of its sequence
            except OSError:
                return False
            self.settle_now()
        return True

    def stop_for_retry(self) -> None:
        """Stop reading and watching without closing the PTY (a restore that failed half
        way starts again with the same master; issue 15). A reader thread is closed too
        (none can have started before the retry: the restore does not yield to the loop),
        so that the runtime made by the retry is the master's only reader."""
        self._stop_reading()
        self._drop_bulk_reader()
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None

    def resume_reading(self) -> None:
        """Undo :meth:`pause_for_handover` (a restart that did not happen)."""
        self._handing_over = False
        self._start_reading()

    def _at_ground(self) -> bool:
        from signaltty.term.screen.handover import export_state

        if not self.scanner.at_ground or not isinstance(self.screen, PyteScreen):
            return self.scanner.at_ground
        return export_state(self.screen) is not None

    def handover_state(self, *, exact: bool = True) -> dict[str, Any]:
        """What a restarted daemon needs to go on with this pane's output exactly: the screen
        (``term.screen.handover``; None mid-sequence), the raw ring and offsets, the tail.
        ``exact=False`` (the restart's check, while the daemon still serves): no pending byte
        is applied and no screen exported — cheap, and the tail stands in for it."""
        import base64

        from signaltty.term.screen.handover import export_state

        screen = (
            export_state(self.screen) if exact and isinstance(self.screen, PyteScreen) else None
        )
        tail, _ = self.tail_text(5000, apply_pending=exact)
        return {
            "output_offset": self.output_offset,
            "eof": self.eof,
            "raw": base64.b64encode(bytes(self.raw)).decode("ascii"),
            "screen": screen,
            "tail": tail,
            "retained": self.retained_text,
        }

    def adopt_handover(self, state: dict[str, Any]) -> None:
        """The other side of :meth:`handover_state` (before :meth:`start`); a screen that
        cannot be rebuilt falls back to the tail (logged).

        Raises:
            ValueError: offsets or the raw ring out of shape (the pane keeps a fresh screen).
        """
        import base64
        import binascii

        from signaltty.term.screen.handover import import_state

        offset = state.get("output_offset")
        if type(offset) is not int or offset < 0:
            raise ValueError("output_offset out of shape")
        raw = state.get("raw")
        if not isinstance(raw, str) or len(raw) > RAW_RING_BYTES * 2:
            raise ValueError("raw ring out of shape")
        try:
            ring = base64.b64decode(raw, validate=True)
        except binascii.Error:
            raise ValueError("raw ring is not base64") from None
        retained = state.get("retained")
        self.retained_text = retained if isinstance(retained, str) else None
        try:
            self.screen = import_state(state.get("screen"))
        except ValueError as exc:
            log.warning("handover.screen_lost", pane_id=self.pane.id, why=str(exc))
            tail = state.get("tail")
            if isinstance(tail, str):
                self.screen.feed(tail[-1_000_000:].replace("\n", "\r\n").encode())
                self.settle_now()
        self.screen.resize(self.pane.cols, self.pane.rows)
        self.raw = RawRing(RAW_RING_BYTES, ring)
        self.output_offset = offset
        self.scanner.resume_at(offset)
