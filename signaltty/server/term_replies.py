"""Terminal replies: answers to the queries a pane's program sends on its PTY.

DA1, DSR status and cursor position, OSC 10/11 colours and OSC 7501 are answered on the
master in byte order, before the chunk's later bytes reach the screen (agents.md §7.4,
§7.5); DA1 goes last, after the chunk's other replies, as programs use it as a sentinel.
With a viewer attached only OSC 7501 is answered (the viewer's terminal answers the rest).
A cursor report needs the screen right after its query: a large backlog before it is
applied by a task in time slices while the PTY is not read. A reply arriving during an
input write (a paste) goes right after it, never inside it.

``TerminalReplies`` is a mixin of ``server.panes.PaneRuntime`` (the pump): it reads the
runtime's screen, PTY and reader state, declared below for type checkers.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import TYPE_CHECKING, Any

import structlog

from signaltty.core.limits import SCREEN_PIECE_BYTES, SCREEN_SLICE_S
from signaltty.proto.envelope import SignalttyError
from signaltty.term import osc
from signaltty.term import pty as ptymod

if TYPE_CHECKING:
    from signaltty.core.model import Pane
    from signaltty.server.store import Store
    from signaltty.term.screen import VirtualScreen

log = structlog.get_logger("signaltty.panes")

_MAX_REPLIES_PER_CHUNK = 16
# A terminal reply queued behind an input write gives up after this long.
_REPLY_BUDGET_S = 30.0
# A cursor report (CSI 6 n) is computed on the spot only when at most this much screen output
# is pending before the query (~60 ms of scroll-heavy parsing at worst); a larger backlog is
# applied by a task in time slices while the PTY is not read (agents.md §7.5).
_CURSOR_SYNC_BYTES = 4 * 1024


class ReplyJob:
    """The queries of one PTY chunk being answered, in byte order (agents.md §7.4, §7.5).

    ``base`` is the absolute output offset of ``chunk[0]``; ``prefed`` counts the bytes of
    ``chunk`` already queued on the screen; ``index`` is the next query to answer. Once
    ``deferred``, the bytes after ``prefed`` are held back and the PTY is not read until every
    reply of the chunk is written.
    """

    __slots__ = (
        "base",
        "chunk",
        "da1",
        "deferred",
        "has_viewer",
        "index",
        "prefed",
        "proc",
        "queries",
        "replies",
    )

    def __init__(
        self,
        queries: list[osc.Query],
        chunk: bytes,
        base: int,
        has_viewer: bool,
        proc: ptymod.PtyProcess | None,
    ) -> None:
        self.queries = queries
        self.chunk = chunk
        self.base = base
        self.has_viewer = has_viewer
        self.proc = proc
        self.index = 0
        self.prefed = 0
        self.replies: list[bytes] = []
        self.da1 = 0
        self.deferred = False


class TerminalReplies:
    """Answering the program's terminal queries; mixed into ``PaneRuntime``."""

    if TYPE_CHECKING:
        # provided by PaneRuntime (server/panes.py)
        store: Store
        pane: Pane
        screen: VirtualScreen
        proc: ptymod.PtyProcess | None
        viewers: set[Any]
        output_offset: int
        _loop: asyncio.AbstractEventLoop
        _paused: bool
        _drain_task: asyncio.Task[None] | None
        _input_lock: asyncio.Lock
        _reply_job: ReplyJob | None
        _reply_task: asyncio.Task[None] | None
        _reply_tasks: set[asyncio.Task[None]]

        @property
        def live(self) -> bool: ...

        def _start_reading(self) -> None: ...

        def _stop_reading(self) -> None: ...

        def _schedule_drain(self) -> None: ...

        def stay_fast(self) -> None: ...

        async def write_input(self, data: bytes, budget_s: float) -> int: ...

    def _answer_queries(self, items: list[Any], chunk: bytes) -> int:
        """Terminal replies, written before the chunk's later bytes reach the screen
        (agents.md §7.4, §7.5).

        A cursor report needs the screen as it is right after the query. With at most
        ``_CURSOR_SYNC_BYTES`` pending before it the screen is brought there at once; with
        more, the PTY stops being read, the rest of the chunk is held back and a task applies
        the backlog in time slices, writes the chunk's replies (in order, DA1 last), queues
        the held bytes and resumes reading, so a flood followed by ``CSI 6 n`` never blocks
        the loop for a whole backlog parse.

        Returns:
            How many bytes of ``chunk`` the caller must not queue on the screen: those already
            queued up to a cursor query, or all of them while the replies are deferred.
        """
        queries = [item for item in items if isinstance(item, osc.Query)]
        if not queries:
            return 0
        self.stay_fast()  # a program that asks the terminal may ask again and wait
        job = ReplyJob(queries, chunk, self.output_offset, bool(self.viewers), self.proc)
        self._reply_job = job
        try:
            done = self._advance_replies(job, None, _CURSOR_SYNC_BYTES)
        except BaseException:
            self._reply_job = None  # a left-over job would keep the PTY from being read
            raise
        if done:
            return job.prefed
        job.deferred = True
        self._stop_reading()
        self._reply_task = self._loop.create_task(
            self._finish_replies(job), name=f"replies-{self.pane.id}"
        )
        return len(chunk)

    def _advance_replies(
        self, job: ReplyJob, budget_s: float | None, sync_limit: int | None
    ) -> bool:
        """Answer ``job``'s queries in order; True once its replies are written.

        Args:
            budget_s: time for applying a backlog before a cursor query (None: no bound).
            sync_limit: a cursor query with more pending bytes before it returns False at once.

        Returns:
            False when a cursor query still waits for pending bytes (call again later).
        """
        screen = self.screen
        deadline = None if budget_s is None else time.perf_counter() + budget_s
        while job.index < len(job.queries) and len(job.replies) + job.da1 < _MAX_REPLIES_PER_CHUNK:
            item = job.queries[job.index]
            if item.kind == osc.QUERY_PROGRAM_STATUS:
                job.replies.append(b"\x1b]7501;?\x1b\\")
            elif job.has_viewer:
                pass
            elif item.kind == osc.QUERY_DA1:
                job.da1 += 1  # after every OSC reply of the chunk: DA1 is the programs' sentinel
            elif item.kind == osc.QUERY_DSR_STATUS:
                job.replies.append(b"\x1b[0n")
            elif item.kind == osc.QUERY_DSR_CURSOR:
                # Nothing after the query is queued yet, so applying all pending bytes puts
                # the screen exactly right after it.
                upto = min(len(job.chunk), max(job.prefed, item.offset - job.base))
                screen.feed(job.chunk[job.prefed : upto])
                job.prefed = upto
                if sync_limit is not None and screen.pending > sync_limit:
                    return False
                while screen.pending:
                    if deadline is not None and time.perf_counter() >= deadline:
                        return False
                    screen.drain(SCREEN_PIECE_BYTES)
                row, col = screen.cursor
                job.replies.append(f"\x1b[{row + 1};{col + 1}R".encode())
            elif item.kind in ("osc10", "osc11"):
                num = item.kind[3:]
                colour = "ffff/ffff/ffff" if num == "10" else "0000/0000/0000"
                term = b"\x07" if item.raw.endswith(b"\x07") else b"\x1b\\"
                job.replies.append(f"\x1b]{num};rgb:{colour}".encode() + term)
            job.index += 1
        if self._reply_job is job:
            self._reply_job = None
        replies = job.replies + [b"\x1b[?62;22c"] * job.da1
        if replies and self.live and self.proc is job.proc:
            self._write_now(b"".join(replies))
        if job.deferred:
            self._release_held(job)
        return True

    async def _finish_replies(self, job: ReplyJob) -> None:
        """The deferred part of ``_answer_queries``: time slices with a yield between them."""
        try:
            while self._reply_job is job:
                drain = self._drain_task
                if drain is not None and not drain.done():
                    # The drain task is applying this backlog in its own slices (nothing is
                    # fed meanwhile, so it stops right at the query); slicing here as well
                    # would double the time the loop is held per iteration.
                    await asyncio.shield(drain)
                    continue
                if self._advance_replies(job, SCREEN_SLICE_S, None):
                    break
                await asyncio.sleep(0)
        except Exception:  # noqa: BLE001 - one pane's fault must not reach the loop
            log.exception("pump.reply_failed", pane_id=self.pane.id)
            if self._reply_job is job:
                self._reply_job = None
                self._release_held(job)

    def _release_held(self, job: ReplyJob) -> None:
        """Queue the bytes held back after a deferred cursor query and read the PTY again."""
        self.screen.feed(job.chunk[job.prefed :])
        job.prefed = len(job.chunk)
        self._schedule_drain()
        if not self._paused:
            self._start_reading()
        self.store.bus.poke_output(self.pane.id)

    async def _reply_after_input(self, data: bytes) -> None:
        try:
            await self.write_input(data, _REPLY_BUDGET_S)
        except SignalttyError:
            log.debug("pump.reply_dropped", pane_id=self.pane.id)

    def _write_now(self, data: bytes) -> None:
        assert self.proc is not None
        if self._input_lock.locked():
            # An input write (a paste) is under way: a reply in its middle would reach the
            # program inside the pasted text. It goes right after, in order.
            task = self._loop.create_task(self._reply_after_input(data))
            self._reply_tasks.add(task)
            task.add_done_callback(self._reply_tasks.discard)
            return
        try:
            os.write(self.proc.master_fd, data)
        except OSError:
            log.debug("pump.reply_failed", pane_id=self.pane.id)
