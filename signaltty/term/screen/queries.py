"""Queries: the backend-neutral read interface of a pane's screen (``VirtualScreen``).

Spec: agents.md §7.6; protocol.md §5 ``pane.read``/``pane.attach``; README data flow step 4.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from itertools import islice
from typing import TYPE_CHECKING, NamedTuple

from signaltty.core.limits import SCREEN_SLICE_BYTES

if TYPE_CHECKING:
    from signaltty.term.screen.state import HardenedScreen


class TailText(NamedTuple):
    """Result of ``VirtualScreen.tail`` (Spec: protocol.md §5 ``pane.read`` mode ``tail``)."""

    text: str
    truncated: bool


class VirtualScreen(abc.ABC):
    """Backend-neutral terminal screen fed with a pane's PTY output.

    Bytes go in through ``feed`` (an append, no parsing) and are applied by ``drain`` in slices,
    so the pump can yield to the event loop between slices. Every read (``lines``,
    ``screen_text``, ``tail``, ``cursor``, ``snapshot_bytes``, ...) first applies everything
    still pending, so reads always reflect every byte fed. Backends can be swapped (pyte now; a
    lazy fast-forward or a libghostty backend later) behind this interface.

    Spec: agents.md §7.6; protocol.md §5 ``pane.read``/``pane.attach``; README data flow step 4.
    """

    @abc.abstractmethod
    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Queue raw PTY output: a copy, or text decoded and held where nothing is drawn
        (never a cost per cell: drawing waits for ``drain`` or a read).

        Args:
            data: bytes as read from the PTY master, any split (inside UTF-8 or a sequence).
        """

    @property
    @abc.abstractmethod
    def pending(self) -> int:
        """Bytes fed but not yet applied to the model."""

    @abc.abstractmethod
    def drain(self, max_bytes: int = SCREEN_SLICE_BYTES) -> int:
        """Apply at most ``max_bytes`` pending bytes to the model.

        Args:
            max_bytes: slice size in bytes; the daemon uses ``SCREEN_SLICE_BYTES`` (16 KiB).

        Returns:
            Bytes applied (0 when nothing is pending or ``max_bytes <= 0``).
        """

    def drain_is_costly(self, max_bytes: int = SCREEN_SLICE_BYTES) -> bool:
        """True when ``drain(max_bytes)`` may do much more work than ``max_bytes`` of parsing
        (a backend that batches, like the lazy window's resolve): a caller that time-slices
        its drains starts such a drain in a fresh slice. This base: never."""
        del max_bytes
        return False

    @abc.abstractmethod
    def resize(self, cols: int, rows: int) -> None:
        """Resize the model (the PTY's TIOCSWINSZ happens elsewhere). Pending bytes are applied
        first, because they were produced for the old size.

        Args:
            cols: width in cells, >= 1.
            rows: height in rows, >= 1.

        Raises:
            ValueError: a dimension is < 1.
        """

    @property
    @abc.abstractmethod
    def size(self) -> tuple[int, int]:
        """``(cols, rows)`` in cells."""

    @abc.abstractmethod
    def lines(self) -> list[str]:
        """Visible rows of the active grid, each right-trimmed; always ``rows`` entries."""

    def screen_text(self) -> str:
        """Visible rows right-trimmed, trailing empty rows dropped, joined by ``\\n``.

        Spec: protocol.md §5 ``pane.read`` mode ``screen``.
        """
        rows = self.lines()
        while rows and not rows[-1]:
            rows.pop()
        return "\n".join(rows)

    @property
    @abc.abstractmethod
    def cursor(self) -> tuple[int, int]:
        """``(row, col)``, 0-based, always inside the grid (a pending wrap reports the last
        column, as xterm does)."""

    @property
    @abc.abstractmethod
    def cursor_hidden(self) -> bool:
        """True while DECTCEM (``CSI ? 25 l``) hides the cursor."""

    @property
    @abc.abstractmethod
    def alt_screen(self) -> bool:
        """True while the alternate screen (``?1049``, ``?1047`` or ``?47``) is active."""

    @abc.abstractmethod
    def tail(self, lines: int, *, apply_pending: bool = True) -> TailText:
        """Last ``lines`` rendered lines of history followed by the main grid.

        Args:
            lines: line count; the router clamps it to 1-5000 (protocol.md §9).
            apply_pending: False reads the model as applied so far, leaving pending bytes
                pending: O(lines) instead of a parse of up to the reader's pause threshold, for
                callers on the event loop that accept a slightly stale tail (periodic saves).

        Returns:
            ``TailText(text, truncated)``: lines joined by ``\\n`` with trailing empty grid rows
            dropped; ``truncated`` is true when more lines existed.
        """

    @abc.abstractmethod
    def snapshot_bytes(self) -> bytes:
        """Bytes that, written to a fresh terminal of ``size``, reproduce the visible grid:
        characters, SGR attributes, cursor position and visibility (plus the modes that change
        how later output or the viewer's input is interpreted).

        Spec: protocol.md §5 ``pane.attach`` ``snapshot_b64``.
        """

    @abc.abstractmethod
    def take_dirty(self) -> bool:
        """True if the visible grid may have changed since the previous call; clears the flag.

        Used by the 500 ms sweep (README "Background loops"); it may over-report, never
        under-report.
        """

    @abc.abstractmethod
    def take_dirty_rows(self) -> set[int] | None:
        """Rows of the visible grid changed since the previous call (any ``take_dirty*``),
        WITHOUT applying pending bytes; clears the flags. ``None`` means "any row may have
        changed" (scroll, resize, buffer switch); an empty set means nothing changed.

        The 500 ms screen-rule sweep uses this so it re-renders only changed rows and never
        does a drain's work on the event loop (agents.md §5; issue #4 "render only dirty
        lines"). It may over-report, never under-report.
        """

    @abc.abstractmethod
    def peek_rows(self, ys: Iterable[int] | None = None) -> list[str]:
        """Right-trimmed text of rows ``ys`` (all rows when None) of the active grid as
        applied so far — pending bytes are NOT applied first (see ``take_dirty_rows``)."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Back to the initial state: no pending bytes, blank grid, empty history."""

    @property
    @abc.abstractmethod
    def faults(self) -> int:
        """Unexpected exceptions caught while applying output (0 unless there is a bug)."""

    @property
    def fault_classes(self) -> dict[str, int]:
        """Exception class name → count of caught faults."""
        return {}

    @property
    def last_fault(self) -> str:
        """``"Class: message"`` of the last caught fault, or ``""``."""
        return ""


def tail_text(screen: HardenedScreen, lines: int) -> TailText:
    """Last ``lines`` lines of ``screen``'s history followed by its main grid (also while the
    alternate grid is shown; agents.md §7.6), trailing empty grid rows dropped.

    Args:
        screen: the model, as applied so far.
        lines: line count (the router clamps it to 1-5000, protocol.md §9).
    """
    grid = screen.main_grid
    rows = [grid.text(y, screen.columns) for y in range(screen.lines)]
    while rows and not rows[-1]:
        rows.pop()
    want = max(lines, 0)
    history = screen.history
    total = len(history) + len(rows)
    if want >= total:
        return TailText("\n".join([*history, *rows]), False)
    if want <= len(rows):
        picked = rows[len(rows) - want :] if want else []
    else:
        picked = list(islice(history, total - want, None))
        picked.extend(rows)
    return TailText("\n".join(picked), True)
