"""The pyte-backed ``VirtualScreen`` used by the daemon: feeding, draining and reads.

Spec: agents.md §7.6; protocol.md §5 ``pane.read``, ``pane.attach``; §9 history 5000.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from signaltty.core.limits import COLS_DEFAULT, HISTORY_LINES, ROWS_DEFAULT, SCREEN_SLICE_BYTES
from signaltty.term.screen.lazy import WINDOW, LazyFeed
from signaltty.term.screen.parser import TolerantStream
from signaltty.term.screen.queries import TailText, VirtualScreen, tail_text
from signaltty.term.screen.snapshot import _snapshot
from signaltty.term.screen.state import HardenedScreen


class PendingBytes:
    """FIFO of byte chunks, taken out in bounded slices without re-copying the whole queue."""

    __slots__ = ("_chunks", "_size")

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def append(self, data: bytes | bytearray | memoryview) -> None:
        """Queue a copy of ``data`` (the caller may reuse its buffer)."""
        if data:
            chunk = bytes(data)
            self._chunks.append(chunk)
            self._size += len(chunk)

    def take(self, limit: int) -> bytes:
        """Remove and return up to ``limit`` bytes from the front."""
        chunks = self._chunks
        if limit <= 0 or not chunks:
            return b""
        out: list[bytes] = []
        need = limit
        while need and chunks:
            head = chunks[0]
            if len(head) <= need:
                out.append(chunks.popleft())
                need -= len(head)
            else:
                out.append(head[:need])
                chunks[0] = head[need:]
                need = 0
        data = b"".join(out)
        self._size -= len(data)
        return data

    def clear(self) -> None:
        self._chunks.clear()
        self._size = 0


class PyteScreen(VirtualScreen):
    """``VirtualScreen`` backed by ``HardenedScreen`` + ``TolerantStream``, with fast-forward.

    Output goes: ``feed`` → pending bytes → (``drain``: decode) → the lazy window
    (``lazy.LazyFeed``) → the model. Reads resolve the window first, so every read equals
    feeding every byte to the hardened pyte model (tests/term/test_screen_differential.py),
    while output that scrolls away or is cleared is mostly never drawn cell by cell.

    Args:
        cols: width in cells (default ``COLS_DEFAULT``).
        rows: height in rows (default ``ROWS_DEFAULT``).
        history_lines: rendered rows kept above the main grid (``HISTORY_LINES``).
        fast_forward: False draws every byte (the reference model of the tests).
        window: chars the lazy window holds before a partial resolve (``lazy.WINDOW``).

    Spec: agents.md §7.6; protocol.md §5 ``pane.read``, ``pane.attach``; §9 history 5000.
    """

    def __init__(
        self,
        cols: int = COLS_DEFAULT,
        rows: int = ROWS_DEFAULT,
        *,
        history_lines: int = HISTORY_LINES,
        fast_forward: bool = True,
        window: int = WINDOW,
    ) -> None:
        self._screen = HardenedScreen(cols, rows, history_lines)
        self._stream = TolerantStream(self._screen)
        self._pending = PendingBytes()
        self._lazy = LazyFeed(self._screen, self._stream, window) if fast_forward else None
        self._outer_faults = 0

    @property
    def model(self) -> HardenedScreen:
        """The underlying pyte screen, fully applied (tests and diagnostics)."""
        self._apply_all()
        return self._screen

    @property
    def fast_forward_stats(self) -> dict[str, int]:
        """Counters of the lazy window (``LazyFeed.stats``); empty without fast-forward."""
        return dict(self._lazy.stats) if self._lazy is not None else {}

    # --- input --------------------------------------------------------------------------------

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        pending = self._pending
        pending.append(data)
        lazy = self._lazy
        if (
            lazy is not None
            and lazy.skipping
            and len(pending) >= SCREEN_SLICE_BYTES
            and not lazy.committed
            and not lazy.resolves_after(len(pending))
        ):
            # What the drain would do with a slice of bulk output that is being skipped:
            # decode and hold it (no resolve, nothing drawn), without its turns (flood kind
            # a: one drain call per 2 KiB before). Less than a slice waits for a reader or
            # the sweep as before: held text is not pending, so a save's tail would resolve
            # it early and draw what later output could have skipped (bench/replay.py).
            try:
                lazy.hold(self._stream.utf8_decoder.decode(pending.take(len(pending))))
            except Exception as exc:  # noqa: BLE001 - bug guard, see drain
                self._bug(exc)

    @property
    def pending(self) -> int:
        """Bytes not yet decoded, committed chars the model must still draw, and the text
        held lazily when it cannot be resolved before them or is not being skipped
        (``LazyFeed.skipping``). Otherwise held text is not pending: every read resolves it
        (mostly skipping it), so the model counts as having applied it
        (``PaneRuntime.screen_offset``)."""
        lazy = self._lazy
        if lazy is None:
            return len(self._pending)
        if lazy.committed or not lazy.skipping:
            return len(self._pending) + lazy.committed + lazy.held
        return len(self._pending)

    def drain_is_costly(self, max_bytes: int = SCREEN_SLICE_BYTES) -> bool:
        """See ``VirtualScreen.drain_is_costly``: the next drain fills the lazy window, which
        then resolves (a scan of up to ``lazy.WINDOW`` chars and the drawing of its live
        part: about 5 ms for a repaint-only TUI on the reference machine, issue 12)."""
        lazy = self._lazy
        return lazy is not None and lazy.resolves_after(min(len(self._pending), max_bytes))

    def drain(self, max_bytes: int = SCREEN_SLICE_BYTES) -> int:
        """See ``VirtualScreen.drain``. With fast-forward: committed text is drawn first; else
        up to ``max_bytes`` are decoded into the lazy window (which may resolve), and text
        that turned out not to be skippable is drawn, at most ``max_bytes`` chars of it."""
        if max_bytes <= 0:
            return 0
        lazy = self._lazy
        try:
            if lazy is None:
                chunk = self._pending.take(max_bytes)
                if chunk:
                    self._stream.feed(chunk)
                return len(chunk)
            if lazy.committed:
                return lazy.draw_committed(max_bytes)
            chunk = self._pending.take(max_bytes)
            if chunk:
                lazy.push(self._stream.utf8_decoder.decode(chunk))
            moved = 0
            if not self._pending and not lazy.skipping and not lazy.committed:
                moved = lazy.flush()
            drawn = lazy.draw_committed(max_bytes) if lazy.committed else 0
            # At most ``max_bytes``, and more than 0 whenever something moved on.
            return max(len(chunk), drawn) or min(moved, max_bytes)
        except Exception as exc:  # noqa: BLE001 - the stream catches per element; bug guard
            self._bug(exc)
            return max_bytes

    def _bug(self, exc: Exception) -> None:
        """Last line of defence: count the fault, and if it came from the fast-forward, draw
        everything it still has and turn it off for this screen, so that ``pending`` always
        reaches 0 and no output is lost."""
        self._outer_faults += 1
        self._stream._record_fault(exc)
        lazy = self._lazy
        if lazy is not None:
            self._lazy = None
            rest = "".join([*lazy._committed, *lazy._lazy])
            lazy.clear()
            self._stream.feed_text(rest)

    def _apply_all(self) -> None:
        lazy = self._lazy
        if lazy is None:
            while self._pending:
                self.drain(SCREEN_SLICE_BYTES)
            return
        try:
            if self._pending:
                lazy.hold(self._stream.utf8_decoder.decode(self._pending.take(len(self._pending))))
            lazy.materialize()
        except Exception as exc:  # noqa: BLE001 - bug guard, see drain
            self._bug(exc)
            self._apply_all()

    def _settle_held(self) -> None:
        """Resolve the lazy window when nothing pending precedes it (cheap, bounded reads)."""
        lazy = self._lazy
        if lazy is not None and lazy.held and not self.pending:
            try:
                lazy.materialize()
            except Exception as exc:  # noqa: BLE001 - bug guard, see drain
                self._bug(exc)

    @property
    def faults(self) -> int:
        return self._stream.faults

    @property
    def fault_classes(self) -> dict[str, int]:
        """Exception class name → count of caught faults."""
        return dict(self._stream.fault_classes)

    @property
    def last_fault(self) -> str:
        """``"Class: message"`` of the last caught fault (at most 200 characters), or ``""``."""
        return self._stream.last_fault

    # --- geometry -----------------------------------------------------------------------------

    def resize(self, cols: int, rows: int) -> None:
        if cols < 1 or rows < 1:
            raise ValueError(f"screen size must be at least 1x1, got {cols}x{rows}")
        self._apply_all()
        self._screen.resize(rows, cols)

    @property
    def size(self) -> tuple[int, int]:
        return (self._screen.columns, self._screen.lines)

    # --- reads ------------------------------------------------------------------------------------

    def lines(self) -> list[str]:
        self._apply_all()
        screen = self._screen
        return [screen.render_row(y) for y in range(screen.lines)]

    @property
    def cursor(self) -> tuple[int, int]:
        self._apply_all()
        cursor = self._screen.cursor
        return (cursor.y, min(cursor.x, self._screen.columns - 1))

    @property
    def cursor_hidden(self) -> bool:
        self._apply_all()
        return bool(self._screen.cursor.hidden)

    @property
    def alt_screen(self) -> bool:
        self._apply_all()
        return self._screen.alt_active

    @property
    def title(self) -> str:
        """Last OSC 0/2 title seen by the screen (the OSC scanner is the authority)."""
        self._apply_all()
        return self._screen.title

    def tail(self, lines: int, *, apply_pending: bool = True) -> TailText:
        """See ``VirtualScreen.tail``. While the alternate screen is shown, the main grid (not
        the alternate one) follows the history, as agents.md §7.6 specifies."""
        if apply_pending:
            self._apply_all()
        else:
            self._settle_held()
        return tail_text(self._screen, lines)

    def snapshot_bytes(self) -> bytes:
        self._apply_all()
        return _snapshot(self._screen)

    def take_dirty(self) -> bool:
        self._apply_all()
        screen = self._screen
        changed = screen.changed or bool(screen.dirty) or bool(screen.rows_dirty)
        screen.changed = False
        screen.dirty.clear()
        screen.rows_dirty.clear()
        return changed

    def take_dirty_rows(self) -> set[int] | None:
        self._settle_held()
        screen = self._screen
        if screen.changed or screen.dirty:
            rows = None
        else:
            rows = {y for y in screen.rows_dirty if 0 <= y < screen.lines}
        screen.changed = False
        screen.dirty.clear()
        screen.rows_dirty.clear()
        return rows

    def peek_rows(self, ys: Iterable[int] | None = None) -> list[str]:
        self._settle_held()
        screen = self._screen
        if ys is None:
            ys = range(screen.lines)
        return [screen.render_row(y) for y in ys]

    def reset(self) -> None:
        self._pending.clear()
        if self._lazy is not None:
            self._lazy.clear()
        self._stream.utf8_decoder.reset()
        self._stream._initialize_parser()
        self._screen.reset()
        self._screen.history.clear()
