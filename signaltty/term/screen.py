"""Terminal screen models: a backend-neutral interface and a hardened pyte backend.

Layer rule: ``term`` imports only the standard library, ``pyte`` and ``signaltty.core``; no I/O.

Spec: agents.md §7.6 (screen model), protocol.md §5 (``pane.read``, ``pane.attach``), §9 (limits).

The pyte backend keeps pyte's data model (``Char`` cells in a sparse ``buffer``, ``Cursor``,
``margins``, ``mode``) but replaces its parser and the handlers that can fail or be abused:

* ``TolerantStream`` is a byte-exact ECMA-48 tokenizer (CSI private markers and intermediates,
  colon sub-parameters, OSC with a length cap, DCS/SOS/PM/APC swallowed, ``ESC`` inside a
  sequence restarts it) with regex fast paths for whole sequences. pyte 0.8.2 draws the tail of
  sequences it does not understand (``CSI < 1 u`` shows ``1u``), draws DCS payloads as text,
  raises ``ValueError`` on parameters longer than 4300 digits, and drops the rest of a feed on
  any handler exception.
* ``HardenedScreen`` accepts ``*args, **kwargs`` in every handler, bounds every count by the
  screen size, keeps history in a bounded deque, implements the alternate screen, and fixes the
  pyte faults listed in the ``HardenedScreen`` docstring.
* ``PyteScreen`` is the ``VirtualScreen`` the daemon uses: cheap ``feed``, sliced ``drain``,
  renderers, ``snapshot_bytes`` and a fault counter as the last line of defence.
"""

from __future__ import annotations

import abc
import copy
import re
import unicodedata
from collections import Counter, deque
from collections.abc import Callable, Generator, Iterable
from itertools import islice
from operator import itemgetter
from typing import Any, Final, NamedTuple

import pyte
from pyte import charsets as cs
from pyte import graphics as g
from pyte import modes as mo
from pyte.screens import Char, Cursor, Margins, Savepoint, StaticDefaultDict, wcwidth

from signaltty.core.limits import (
    COLS_DEFAULT,
    HISTORY_LINES,
    MAX_OSC_PAYLOAD,
    ROWS_DEFAULT,
    SCREEN_SLICE_BYTES,
)

__all__ = [
    "HardenedScreen",
    "PendingBytes",
    "PyteScreen",
    "TailText",
    "TolerantStream",
    "VirtualScreen",
]

# --- limits of the parser and the cell model (all bound work per byte of input) ---------------

# pyte's clamp for one numeric CSI parameter; every count is further bounded by the screen size.
_PARAM_MAX: Final = 9999
# Longest CSI parameter string that is parsed. Longer sequences are consumed and ignored, so a
# run of digits can neither allocate nor reach int()'s 4300-digit ValueError.
_CSI_PARAM_CHARS: Final = 256
# Longest run of intermediate bytes (0x20-0x2F) in an escape or CSI sequence.
_INTERMEDIATES: Final = 16
# Code points kept in one cell (base + combining marks); pyte re-normalized an unbounded string
# per mark, which is quadratic.
_CELL_CODEPOINTS: Final = 8
# Size bound of the per-screen memo tables (SGR transitions, glyphs, parameter tuples).
_MEMO_LIMIT: Final = 4096

_ESC: Final = "\x1b"
_BEL: Final = "\x07"
_CAN_SUB: Final = frozenset("\x18\x1a")
_STRING_INTRODUCERS: Final = frozenset("PX^_")  # DCS, SOS, PM, APC
_ALT_MODES: Final = frozenset({47, 1047, 1049})
_ALT_KEYS: Final = frozenset(m << 5 for m in _ALT_MODES)  # pyte stores private modes << 5
_DECCOLM_PARAM: Final = 3
_DECCKM: Final = 1 << 5  # application cursor keys (private mode 1)
# Private modes that change what the viewer's terminal sends (keys, mouse, paste, focus); the
# snapshot replays them so an attached terminal behaves like the one the program set up.
_INPUT_MODES: Final = (1, 66, 1000, 1002, 1003, 1004, 1005, 1006, 1015, 2004)

# Plain text: anything but C0, DEL and C1. C1 code points decoded from UTF-8 are ignored (as tmux
# does, and as the OSC scanner does); pyte 0.8.2 treats U+009B/U+009D as CSI/OSC.
_TEXT_RE: Final = re.compile("[^\x00-\x1f\x7f-\x9f]+")
_CSI_RE: Final = re.compile(
    rf"\x1b\[([0-?]{{0,{_CSI_PARAM_CHARS}}})([ -/]{{0,{_INTERMEDIATES}}})([@-~])"
)
_OSC_RE: Final = re.compile(rf"\x1b\]([^\x00-\x1f\x7f]{{0,{MAX_OSC_PAYLOAD}}})(?:\x07|\x1b\\)")
_STRING_RE: Final = re.compile(r"\x1b[PX^_][^\x18\x1a\x1b]*\x1b\\")
# ESC + intermediates + final, or ESC + a final that does not introduce CSI/OSC/DCS/SOS/PM/APC.
_ESC_RE: Final = re.compile(rf"\x1b(?:([ -/]{{1,{_INTERMEDIATES}}})([0-~])|([0-OQ-WYZ\\`-~]))")
_INT_PARAMS_RE: Final = re.compile("[0-9;]*")
_SGR_PARAMS_RE: Final = re.compile("[0-9;:]*")
_HEX6_RE: Final = re.compile("[0-9a-f]{6}")

_BLANK: Final = Char(" ")
_ALIGNMENT: Final = Char("E")
_DATA: Final = itemgetter(0)
_LAT1: Final = cs.LAT1_MAP

# SGR tables in pyte's vocabulary, with 105 spelled correctly (pyte 0.8.2: "bfightmagenta").
_FG_NAMES: Final[dict[int, str]] = {**g.FG_ANSI, **g.FG_AIXTERM}
_BG_NAMES: Final[dict[int, str]] = {**g.BG_ANSI, **g.BG_AIXTERM, 105: "brightmagenta"}
_TEXT_ATTRS: Final[dict[int, tuple[str, bool]]] = {
    code: (name[1:], name[0] == "+") for code, name in g.TEXT.items()
}
_SGR_RESET: Final[dict[str, Any]] = {
    "fg": "default",
    "bg": "default",
    "bold": False,
    "italics": False,
    "underscore": False,
    "strikethrough": False,
    "reverse": False,
    "blink": False,
}


class _Grid(dict[int, StaticDefaultDict[int, Char]]):
    """Rows by index (pyte's ``buffer``). An absent row is a row of ``fill`` cells, so a full
    clear, a coloured clear or DECALN is O(1) instead of O(rows) or O(cells)."""

    __slots__ = ("fill",)

    def __init__(self, fill: Char = _BLANK) -> None:
        super().__init__()
        self.fill = fill

    def __missing__(self, y: int) -> StaticDefaultDict[int, Char]:
        row = self[y] = StaticDefaultDict[int, Char](self.fill)
        return row

    def text(self, y: int, columns: int) -> str:
        """Row ``y`` rendered and right-trimmed (see ``_render_row``)."""
        row = self.get(y)
        if row is None:
            return (self.fill.data * columns).rstrip(" ")
        return _render_row(row, columns)


class _Widths(dict[str, int]):
    """Memo of ``wcwidth`` per code point (cells: -1 unprintable, 0 combining, 1, 2)."""

    def __missing__(self, char: str) -> int:
        if len(self) >= 65536:  # bounded: adversarial input cannot grow it without limit
            self.clear()
        width: int = wcwidth(char)
        self[char] = width
        return width


_WIDTH: Final = _Widths()
# Printable characters known to be one cell wide (grows as text is drawn): a run made only of
# these takes the narrow path without a per-character loop in Python (spinner and status
# lines mix ASCII with braille, box drawing, "…" and "·").
_NARROW: Final[set[str]] = {chr(c) for c in range(0x20, 0x7F)}
_NARROW_MAX: Final = 65536


_PREFIXES: dict[int, list[int]] = {}


def _prefix(n: int) -> list[int]:
    """``list(range(n))``, memoized (n is at most the widest row seen)."""
    keys = _PREFIXES.get(n)
    if keys is None:
        keys = _PREFIXES[n] = list(range(n))
    return keys


def _render_row(line: StaticDefaultDict[int, Char], columns: int) -> str:
    """Render one row as text, right-trimmed of spaces.

    Args:
        line: the row's cells; absent cells are ``line.default``.
        columns: screen width in cells; cells at or beyond it are ignored.

    Returns:
        The row text. Wide-character stubs (``""``) contribute nothing, so an orphan stub left
        by overwriting the left half of a wide character is skipped instead of raising the
        ``IndexError`` that pyte 0.8.2's ``display`` raises.
    """
    fill = line.default.data
    if not line:
        return (fill * columns).rstrip(" ")
    n = len(line)
    if fill == " " and n <= columns and list(line) == _prefix(n):
        # Written left to right from column 0 (the usual case): the values are the row.
        return "".join(map(_DATA, line.values())).rstrip(" ")
    parts = [fill] * columns
    for x, cell in line.items():
        if 0 <= x < columns:
            parts[x] = cell.data
    return "".join(parts).rstrip(" ")


def _count(value: Any, limit: int) -> int:
    """A CSI count: 0 or missing means 1, and never more than ``limit`` (cells or rows)."""
    return min(value, limit) if isinstance(value, int) and value > 0 else 1


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
        """Queue raw PTY output; O(1) apart from copying a mutable buffer.

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


class _Glyphs(dict[str, Char]):
    """Memo ``char -> Char`` for one attribute set, so drawing does not ``_replace`` per cell."""

    __slots__ = ("attrs",)

    def __init__(self, attrs: Char) -> None:
        super().__init__()
        self.attrs = attrs

    def __missing__(self, char: str) -> Char:
        if len(self) >= _MEMO_LIMIT:
            self.clear()
        glyph = self.attrs._replace(data=char)
        self[char] = glyph
        return glyph


class HardenedScreen(pyte.Screen):
    """A ``pyte.Screen`` that never raises on terminal input and bounds the work per byte.

    Faults of pyte 0.8.2 fixed here (each has a regression test in tests/term/):

    * Handlers with fixed signatures raise ``TypeError`` on extra or private parameters
      (``CSI ? 1 r``, ``CSI ? 6 n``, ``CSI ? 2 A``, ``CSI 1;2;3 H``, ``CSI 1;2;3 r``). Every
      handler here takes ``*args, **kwargs``; private forms of non-mode sequences are ignored.
    * ``erase_in_display``/``erase_in_line`` raise ``UnboundLocalError`` for an unknown mode
      (``CSI 4 J``); ``cursor_to_line`` and DSR assert margins under DECOM without margins.
    * ``display`` raises ``IndexError`` on an orphan wide-character stub (``中x`` then ``\\ra``).
      Drawing over half of a wide character now blanks the other half, as xterm does, and the
      renderer skips any stub.
    * ``draw`` stops at the first character of width 0 that is not a combining mark or of width
      -1 and drops the rest of the run: ``❤️ ok`` showed only ``❤`` (VS16), ``a\\u200db`` only
      ``a`` (ZWJ), ``ab\\x01cd`` only ``ab``. Zero-width characters now join the previous cell;
      unprintable ones are skipped. Marks per cell are capped (pyte's re-normalization of an
      ever-growing cell is quadratic).
    * Denial of service: ``ESC # 8`` rewrote every cell (48 s per 16 KiB at 120x40), DECSCNM
      toggles rewrote every cell (17 s per 10 KiB), ``CSI 2 J`` touched every written cell,
      ``ESC 7`` grew an unbounded save stack. A full clear and DECALN now empty the grid and
      set its fill cell (O(1)), DECSCNM is only recorded (the snapshot replays it), and there
      is one DECSC slot (xterm semantics). REP is clamped to the end of the row (tmux).
    * DECCOLM (``CSI ? 3 h``) resized the model to 132 columns behind the PTY's back; ignored
      (xterm ignores it by default too).
    * Tab stops were not extended when the screen grew and stale stops beyond a shrunk width
      moved the cursor off the grid; erases painted bold/underline/reverse of the cursor onto
      blanks (now: background colour erase only); ED 3 cleared the screen (now: the history,
      as in xterm); NEL did not return to column 0; moves from outside the scroll region were
      clamped into it; ``CSI r`` did not home the cursor; DL kept the cursor row when the rows
      below had never been written; at a pending wrap EL/ECH/DCH/ICH erased nothing (xterm
      and ghostty act on the last column and end the pending wrap).

    Additions: alternate screen (``?47``/``?1047``/``?1049``: entering saves the main grid and
    cursor and starts a blank grid, leaving restores them; agents.md §7.6), bounded history of
    rows scrolled off the top (``history``), SU/SD (``CSI S``/``CSI T``), REP (``CSI b``),
    DECSTR (``CSI ! p``), SCOSC/SCORC (``CSI s``/``CSI u``), and a ``changed`` flag for the
    sweep. Resizing to fewer rows first drops blank rows below the cursor, then pushes rows
    from the top into history, keeping the cursor on its text (tmux behaviour); pyte cut rows
    from the top without moving the cursor.

    Attributes:
        history: rendered, right-trimmed rows scrolled off the top of the main grid; the
            oldest rows fall off after ``maxlen`` (HISTORY_LINES, protocol.md §9).
        alt_active: True while the alternate grid is shown.
        changed: set by every operation that may change cells anywhere on the grid (scrolls,
            erases of whole rows, mode and buffer switches); cleared by the owner.
        rows_dirty: rows changed by row-local operations (a draw that fits on its row, EL,
            ECH, REP) since the owner last cleared it — a spinner redraw dirties one row.
        draw_progress: index in the string passed to the last ``draw`` call being processed;
            lets the stream resume after the faulting character if ``draw`` ever raises.
    """

    def __init__(self, columns: int, lines: int, history_lines: int = HISTORY_LINES) -> None:
        if columns < 1 or lines < 1:
            raise ValueError(f"screen size must be at least 1x1, got {columns}x{lines}")
        # Set before pyte's __init__, which calls reset().
        self.history: deque[str] = deque(maxlen=history_lines)
        self.alt_active = False
        self.changed = True
        self.rows_dirty: set[int] = set()
        self.draw_progress = 0
        self._main: tuple[_Grid, Cursor] | None = None
        self._saved: Savepoint | None = None
        self._last_char = ""
        self._glyph_sets: dict[int, _Glyphs] = {}
        self._glyphs = _Glyphs(_BLANK)
        self._sgr_memo: dict[tuple[int, str], tuple[Char, Char]] = {}
        self._interned: dict[Char, Char] = {}
        self._bce: dict[str, Char] = {}
        super().__init__(columns, lines)

    # --- model helpers ------------------------------------------------------------------------

    @property
    def default_char(self) -> Char:
        """Blank cell. DECSCNM is a flag here, so blanks never carry ``reverse``."""
        return _BLANK

    buffer: _Grid

    def cell(self, y: int, x: int) -> Char:
        """Cell at row ``y``, column ``x`` of the active grid, without materializing the row."""
        row = self.buffer.get(y)
        return self.buffer.fill if row is None else row[x]

    def render_row(self, y: int) -> str:
        """Row ``y`` of the active grid as right-trimmed text."""
        return self.buffer.text(y, self.columns)

    @property
    def display(self) -> list[str]:
        """All rows of the active grid, padded to the width like pyte's ``display``."""
        return [self.render_row(y).ljust(self.columns) for y in range(self.lines)]

    @property
    def main_grid(self) -> _Grid:
        """The main grid, also while the alternate grid is shown."""
        return self._main[0] if self._main is not None else self.buffer

    def _glyph_set(self, attrs: Char) -> _Glyphs:
        # Keyed by id: the _Glyphs entry keeps ``attrs`` alive, so the id cannot be reused
        # while the entry exists; equal attributes in distinct objects just get two sets.
        glyphs = self._glyph_sets.get(id(attrs))
        if glyphs is None:
            if len(self._glyph_sets) >= 256:
                self._glyph_sets.clear()
            glyphs = self._glyph_sets[id(attrs)] = _Glyphs(attrs)
        self._glyphs = glyphs
        return glyphs

    def _erase_blank(self) -> Char:
        """Blank written by erases and scrolls: background colour erase, nothing else."""
        bg = self.cursor.attrs.bg
        if bg == "default":
            return _BLANK
        blank = self._bce.get(bg)
        if blank is None:
            if len(self._bce) >= 256:
                self._bce.clear()
            blank = self._bce[bg] = _BLANK._replace(bg=bg)
        return blank

    def _blank_row(self, blank: Char) -> StaticDefaultDict[int, Char]:
        return StaticDefaultDict[int, Char](blank)

    def _clear_wrap(self) -> None:
        # A cursor movement ends a pending wrap: the cursor sits on the last column.
        if self.cursor.x >= self.columns:
            self.cursor.x = self.columns - 1

    @staticmethod
    def _split_wide_left(line: StaticDefaultDict[int, Char], x: int) -> None:
        """Cell ``x`` is about to change: if it is the right half of a wide character, the
        left half at ``x - 1`` becomes a blank with its attributes."""
        if x > 0:
            cell = line.get(x)
            if cell is not None and not cell.data:
                left = line.get(x - 1)
                if left is not None and left.data:
                    line[x - 1] = left._replace(data=" ")

    @staticmethod
    def _split_wide_right(line: StaticDefaultDict[int, Char], x: int) -> None:
        """Cell ``x - 1`` has changed: a stub left at ``x`` is an orphan and becomes a blank."""
        cell = line.get(x)
        if cell is not None and not cell.data:
            line[x] = cell._replace(data=" ")

    def _fix_last_column(self, line: StaticDefaultDict[int, Char], columns: int) -> None:
        # A wide character on the last column has lost its right half.
        last = line.get(columns - 1)
        if last is not None and last.data and _WIDTH[last.data[0]] == 2:
            line[columns - 1] = last._replace(data=" ")

    # --- drawing --------------------------------------------------------------------------------

    def draw(self, data: str, *_args: Any, **_kwargs: Any) -> None:
        """Write text at the cursor (Spec: agents.md §7.6).

        Args:
            data: decoded text; controls inside it are skipped, never stop the run.
        """
        self.draw_progress = 0
        if not data:
            return
        table = self.g1_charset if self.charset else self.g0_charset
        if table is not _LAT1:
            data = data.translate(table)
        if data.isascii() and data.isprintable():
            cursor = self.cursor
            x = cursor.x
            end = x + len(data)
            if end <= self.columns and mo.IRM not in self.mode:
                # Hot path: the run fits on the row, one dict update.
                attrs = cursor.attrs
                glyphs = self._glyphs if self._glyphs.attrs is attrs else self._glyph_set(attrs)
                line = self.buffer[cursor.y]
                if x and x in line:
                    self._split_wide_left(line, x)
                line.update(zip(range(x, end), map(glyphs.__getitem__, data)))
                if end in line:
                    self._split_wide_right(line, end)
                cursor.x = end
                self._last_char = data[-1]
                self.rows_dirty.add(cursor.y)
                return
        # Wrapping moves down row by row; a scroll on the way sets ``changed`` itself.
        first = self.cursor.y
        if (data.isascii() and data.isprintable()) or _NARROW.issuperset(data):
            self._put_narrow(data, 0)
            self._last_char = data[-1]
        else:
            self._put_mixed(data)
        last = self.cursor.y
        self.rows_dirty.update(range(min(first, last), max(first, last) + 1))

    def _put_narrow(self, text: str, base: int) -> None:
        """Write a run of width-1 characters, wrapping at the right edge (hot path)."""
        cursor = self.cursor
        columns = self.columns
        glyphs = (
            self._glyphs if self._glyphs.attrs is cursor.attrs else self._glyph_set(cursor.attrs)
        )
        get_glyph = glyphs.__getitem__
        i = 0
        n = len(text)
        while i < n:
            self.draw_progress = base + i
            x = cursor.x
            if x >= columns:
                if mo.DECAWM in self.mode:
                    cursor.x = 0
                    self.index()
                    x = 0
                else:
                    # Without autowrap each further character overwrites the last column.
                    i = n - 1
                    x = columns - 1
            take = min(columns - x, n - i)
            end = x + take
            line = self.buffer[cursor.y]
            if mo.IRM in self.mode:
                self._insert_blanks(line, x, take)
            self._split_wide_left(line, x)
            line.update(zip(range(x, end), map(get_glyph, text[i : i + take])))
            self._split_wide_right(line, end)
            cursor.x = end
            i += take

    def _put_mixed(self, data: str) -> None:
        """Write text with wide, zero-width or unprintable characters."""
        width = _WIDTH
        narrow = _NARROW
        start = -1  # start of a pending run of width-1 characters
        for i, char in enumerate(data):
            w = width[char]
            if w == 1:
                if len(narrow) < _NARROW_MAX:
                    narrow.add(char)
                if start < 0:
                    start = i
                continue
            if start >= 0:
                self._put_narrow(data[start:i], start)
                start = -1
            self.draw_progress = i
            if w == 2:
                self._put_wide(char)
            elif w == 0:
                self._put_zero_width(char)
            # w < 0: unprintable; skipped like a terminal does (pyte dropped the rest of the run).
        if start >= 0:
            self._put_narrow(data[start:], start)
        for char in reversed(data):
            if width[char] > 0:
                self._last_char = char
                break

    def _put_wide(self, char: str) -> None:
        cursor = self.cursor
        columns = self.columns
        if columns < 2:
            return
        x = cursor.x
        if x + 2 > columns:
            if mo.DECAWM in self.mode:
                # Does not fit: wrap first (xterm); pyte put it on the last column.
                cursor.x = 0
                self.index()
                x = 0
            else:
                x = columns - 2
        glyphs = (
            self._glyphs if self._glyphs.attrs is cursor.attrs else self._glyph_set(cursor.attrs)
        )
        line = self.buffer[cursor.y]
        if mo.IRM in self.mode:
            self._insert_blanks(line, x, 2)
        self._split_wide_left(line, x)
        line[x] = glyphs[char]
        line[x + 1] = glyphs[""]
        self._split_wide_right(line, x + 2)
        cursor.x = x + 2

    def _put_zero_width(self, char: str) -> None:
        # Combining marks, ZWJ and variation selectors join the previous cell (the wide
        # character when the previous cell is its stub). At column 0 there is nothing to join.
        x = min(self.cursor.x, self.columns)
        if x == 0:
            return
        line = self.buffer[self.cursor.y]
        px = x - 1
        cell = line.get(px)
        if cell is not None and not cell.data and px > 0:
            px -= 1
        cell = line[px]
        if len(cell.data) >= _CELL_CODEPOINTS or not cell.data:
            return
        line[px] = cell._replace(data=unicodedata.normalize("NFC", cell.data + char))

    def repeat_last(self, count: int | None = None, *_args: Any, **_kwargs: Any) -> None:
        """REP ``CSI n b``: draw the last graphic character ``n`` times, at most up to the end
        of the row (as tmux clamps it), so one 8-byte sequence cannot draw a whole screen."""
        char = self._last_char
        if not char or _kwargs.get("private"):
            return
        cursor = self.cursor
        x = cursor.x
        n = _count(count, max(self.columns - x, 1))
        if x >= self.columns or _WIDTH[char] != 1 or mo.IRM in self.mode:
            self.draw(char * n)
            return
        # One C-level fill instead of n glyph lookups.
        attrs = cursor.attrs
        glyphs = self._glyphs if self._glyphs.attrs is attrs else self._glyph_set(attrs)
        line = self.buffer[cursor.y]
        self._split_wide_left(line, x)
        line.update(dict.fromkeys(range(x, x + n), glyphs[char]))
        self._split_wide_right(line, x + n)
        cursor.x = x + n
        self.rows_dirty.add(cursor.y)

    # --- scrolling ------------------------------------------------------------------------------

    def _scroll_up(self, top: int, bottom: int, count: int, *, keep_history: bool) -> None:
        """Move rows ``top..bottom`` up by ``count``; rows leaving at ``top`` go to history when
        ``keep_history`` and the region starts at row 0 of the main grid."""
        count = min(count, bottom - top + 1)
        buf = self.buffer
        if keep_history and top == 0 and not self.alt_active:
            push = self.history.append
            columns = self.columns
            for y in range(count):
                push(buf.text(y, columns))
        if top == 0 and bottom == self.lines - 1:
            moved = {y - count: line for y, line in buf.items() if y >= count}
        else:
            moved = {
                (y - count if top <= y <= bottom else y): line
                for y, line in buf.items()
                if y < top or y >= top + count
            }
        buf.clear()
        buf.update(moved)
        blank = self._erase_blank()
        if blank != buf.fill:
            for y in range(bottom - count + 1, bottom + 1):
                buf[y] = self._blank_row(blank)
        self.changed = True

    def _scroll_down(self, top: int, bottom: int, count: int) -> None:
        """Move rows ``top..bottom`` down by ``count``; rows pushed past ``bottom`` are lost."""
        count = min(count, bottom - top + 1)
        buf = self.buffer
        moved = {
            (y + count if top <= y <= bottom else y): line
            for y, line in buf.items()
            if y < top or y > bottom or y + count <= bottom
        }
        buf.clear()
        buf.update(moved)
        blank = self._erase_blank()
        if blank != buf.fill:
            for y in range(top, top + count):
                buf[y] = self._blank_row(blank)
        self.changed = True

    def _region(self) -> tuple[int, int]:
        margins = self.margins
        return (margins.top, margins.bottom) if margins else (0, self.lines - 1)

    def index(self, *_args: Any, **_kwargs: Any) -> None:
        """IND / LF: down one row, scrolling the region at its bottom margin. Below the region
        the cursor moves down to the last row (pyte pulled it back up to the margin)."""
        top, bottom = self._region()
        y = self.cursor.y
        if y == bottom:
            self._scroll_up(top, bottom, 1, keep_history=True)
        elif y < self.lines - 1:
            self.cursor.y = y + 1

    def reverse_index(self, *_args: Any, **_kwargs: Any) -> None:
        """RI: up one row, scrolling the region down at its top margin."""
        top, bottom = self._region()
        y = self.cursor.y
        if y == top:
            self._scroll_down(top, bottom, 1)
        elif y > 0:
            self.cursor.y = y - 1

    def linefeed(self, *_args: Any, **_kwargs: Any) -> None:
        self.index()
        if mo.LNM in self.mode:
            self.carriage_return()

    def next_line(self, *_args: Any, **_kwargs: Any) -> None:
        """NEL ``ESC E``: column 0 of the next row (pyte only did a line feed)."""
        self.carriage_return()
        self.index()

    def scroll_up(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        """SU ``CSI n S``: scroll the region up; rows leave into history like line feeds."""
        if kwargs.get("private"):
            return
        top, bottom = self._region()
        self._scroll_up(top, bottom, _count(count, self.lines), keep_history=True)

    def scroll_down(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        """SD ``CSI n T``: scroll the region down."""
        if kwargs.get("private"):
            return
        top, bottom = self._region()
        self._scroll_down(top, bottom, _count(count, self.lines))

    def insert_lines(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        if kwargs.get("private"):
            return
        top, bottom = self._region()
        if top <= self.cursor.y <= bottom:
            self._scroll_down(self.cursor.y, bottom, _count(count, self.lines))
            self.cursor.x = 0

    def delete_lines(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        if kwargs.get("private"):
            return
        top, bottom = self._region()
        if top <= self.cursor.y <= bottom:
            self._scroll_up(self.cursor.y, bottom, _count(count, self.lines), keep_history=False)
            self.cursor.x = 0

    # --- erasing and character insert/delete ----------------------------------------------------

    def _erase_rows(self, first: int, stop: int) -> None:
        buf = self.buffer
        blank = self._erase_blank()
        if first <= 0 and stop >= self.lines:
            buf.clear()
            buf.fill = blank
        elif blank == buf.fill:
            for y in range(first, stop):
                buf.pop(y, None)
        else:
            for y in range(first, stop):
                buf[y] = self._blank_row(blank)
        self.changed = True

    def _erase_span(self, y: int, start: int, stop: int) -> None:
        start = max(start, 0)
        stop = min(stop, self.columns)
        if start >= stop:
            return
        if start == 0 and stop == self.columns:
            self._erase_rows(y, y + 1)
            return
        blank = self._erase_blank()
        line = self.buffer[y]
        self._split_wide_left(line, start)
        if blank == line.default:
            for x in [x for x in line if start <= x < stop]:
                del line[x]
        else:
            line.update(dict.fromkeys(range(start, stop), blank))
        self._split_wide_right(line, stop)
        self.rows_dirty.add(y)

    def erase_in_display(self, how: int = 0, *_args: Any, **_kwargs: Any) -> None:
        """ED (and DECSED ``CSI ? J``, treated alike: no cell is protected).

        Args:
            how: 0 cursor to end, 1 start to cursor, 2 whole grid, 3 history (xterm's "erase
                saved lines"; pyte cleared the grid); other values are ignored.
        """
        self._clear_wrap()
        y = self.cursor.y
        x = self.cursor.x
        if how == 0:
            self._erase_span(y, x, self.columns)
            self._erase_rows(y + 1, self.lines)
        elif how == 1:
            self._erase_rows(0, y)
            self._erase_span(y, 0, x + 1)
        elif how == 2:
            self._erase_rows(0, self.lines)
        elif how == 3:
            self.history.clear()

    def erase_in_line(self, how: int = 0, *_args: Any, **_kwargs: Any) -> None:
        """EL (and DECSEL): 0 cursor to end, 1 start to cursor, 2 whole row; others ignored.

        Like every erase, insert and delete here, EL ends a pending wrap: at the right edge it
        erases the last column (xterm, ghostty); pyte erased nothing and wrapped later.
        """
        self._clear_wrap()
        y = self.cursor.y
        x = self.cursor.x
        if how == 0:
            self._erase_span(y, x, self.columns)
        elif how == 1:
            self._erase_span(y, 0, x + 1)
        elif how == 2:
            self._erase_span(y, 0, self.columns)

    def erase_characters(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        if kwargs.get("private"):
            return
        self._clear_wrap()
        x = self.cursor.x
        self._erase_span(self.cursor.y, x, x + _count(count, self.columns))

    def _insert_blanks(self, line: StaticDefaultDict[int, Char], x: int, count: int) -> None:
        columns = self.columns
        count = min(count, columns - x)
        self._split_wide_left(line, x)
        kept = {
            (k + count if k >= x else k): cell
            for k, cell in line.items()
            if k < x or k + count < columns
        }
        line.clear()
        line.update(kept)
        blank = self._erase_blank()
        if blank != line.default:
            line.update(dict.fromkeys(range(x, x + count), blank))
        self._fix_last_column(line, columns)
        self.changed = True

    def insert_characters(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        """ICH: insert blanks at the cursor, shifting the rest of the row right."""
        if kwargs.get("private"):
            return
        self._clear_wrap()
        self._insert_blanks(self.buffer[self.cursor.y], self.cursor.x, _count(count, self.columns))

    def delete_characters(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        """DCH: delete cells at the cursor, shifting the rest of the row left."""
        if kwargs.get("private"):
            return
        self._clear_wrap()
        columns = self.columns
        x = self.cursor.x
        count = min(_count(count, columns), columns - x)
        line = self.buffer[self.cursor.y]
        self._split_wide_left(line, x)
        self._split_wide_right(line, x + count)
        kept = {
            (k - count if k >= x else k): cell
            for k, cell in line.items()
            if k < x or x + count <= k < columns
        }
        line.clear()
        line.update(kept)
        blank = self._erase_blank()
        if blank != line.default:
            line.update(dict.fromkeys(range(columns - count, columns), blank))
        self.changed = True

    def alignment_display(self, *_args: Any, **_kwargs: Any) -> None:
        """DECALN ``ESC # 8``: fill the grid with ``E``, reset margins, home the cursor (VT510).

        The grid becomes empty with ``E`` as its fill: O(1) per sequence instead of pyte's
        O(cells) rewrite (48 s per 16 KiB flood at 120x40).
        """
        self.margins = None
        self.buffer.clear()
        self.buffer.fill = _ALIGNMENT
        self.cursor.x = self.cursor.y = 0
        self.changed = True

    # --- cursor movement ------------------------------------------------------------------------

    def cursor_up(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        """CUU: stops at the top margin when starting at or below it, else at row 0."""
        if kwargs.get("private"):
            return
        top, _bottom = self._region()
        floor = top if self.cursor.y >= top else 0
        self.cursor.y = max(self.cursor.y - _count(count, self.lines), floor)
        self._clear_wrap()

    def cursor_down(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        """CUD: stops at the bottom margin when starting at or above it, else at the last row."""
        if kwargs.get("private"):
            return
        _top, bottom = self._region()
        ceiling = bottom if self.cursor.y <= bottom else self.lines - 1
        self.cursor.y = min(self.cursor.y + _count(count, self.lines), ceiling)
        self._clear_wrap()

    def cursor_up1(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        if not kwargs.get("private"):
            self.cursor_up(count)
            self.cursor.x = 0

    def cursor_down1(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        if not kwargs.get("private"):
            self.cursor_down(count)
            self.cursor.x = 0

    def cursor_forward(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        if not kwargs.get("private"):
            self.cursor.x = min(self.cursor.x + _count(count, self.columns), self.columns - 1)

    def cursor_back(self, count: int | None = None, *_args: Any, **kwargs: Any) -> None:
        if not kwargs.get("private"):
            x = min(self.cursor.x, self.columns - 1)
            self.cursor.x = max(x - _count(count, self.columns), 0)

    def backspace(self, *_args: Any, **_kwargs: Any) -> None:
        self.cursor_back()

    def carriage_return(self, *_args: Any, **_kwargs: Any) -> None:
        self.cursor.x = 0

    def cursor_position(
        self, line: int | None = None, column: int | None = None, *_args: Any, **kwargs: Any
    ) -> None:
        """CUP/HVP (1-based); under DECOM rows are relative to and clamped into the region."""
        if kwargs.get("private"):
            return
        row = (line or 1) - 1
        col = (column or 1) - 1
        if self.margins is not None and mo.DECOM in self.mode:
            row = min(row + self.margins.top, self.margins.bottom)
        self.cursor.y = min(max(row, 0), self.lines - 1)
        self.cursor.x = min(max(col, 0), self.columns - 1)

    def cursor_to_column(self, column: int | None = None, *_args: Any, **kwargs: Any) -> None:
        if not kwargs.get("private"):
            self.cursor.x = min(max((column or 1) - 1, 0), self.columns - 1)

    def cursor_to_line(self, line: int | None = None, *_args: Any, **kwargs: Any) -> None:
        """VPA; pyte asserted margins under DECOM and crashed when none were set."""
        if kwargs.get("private"):
            return
        row = (line or 1) - 1
        if self.margins is not None and mo.DECOM in self.mode:
            row = min(row + self.margins.top, self.margins.bottom)
        self.cursor.y = min(max(row, 0), self.lines - 1)
        self._clear_wrap()

    def tab(self, *_args: Any, **_kwargs: Any) -> None:
        x = self.cursor.x
        self.cursor.x = min((stop for stop in self.tabstops if stop > x), default=self.columns - 1)
        self._clear_wrap()

    def set_tab_stop(self, *_args: Any, **_kwargs: Any) -> None:
        if self.cursor.x < self.columns:
            self.tabstops.add(self.cursor.x)

    def clear_tab_stop(self, how: int = 0, *_args: Any, **kwargs: Any) -> None:
        if kwargs.get("private"):
            return
        if how == 0:
            self.tabstops.discard(self.cursor.x)
        elif how == 3:
            self.tabstops = set()

    def set_margins(
        self, top: int | None = None, bottom: int | None = None, *_args: Any, **kwargs: Any
    ) -> None:
        """DECSTBM (1-based, inclusive). A valid region homes the cursor; the full screen is
        stored as ``None``. ``CSI ? r`` (XTRESTORE) is ignored."""
        if kwargs.get("private"):
            return
        last = self.lines - 1
        first_row = min(max((top or 1) - 1, 0), last)
        last_row = min(max((bottom or self.lines) - 1, 0), last)
        if last_row - first_row < 1:
            return
        self.margins = None if first_row == 0 and last_row == last else Margins(first_row, last_row)
        self.cursor_position()

    def save_cursor(self, *_args: Any, **_kwargs: Any) -> None:
        """DECSC: one slot, overwritten by each save (xterm); pyte's stack grew without bound."""
        self._saved = Savepoint(
            copy.copy(self.cursor),
            self.g0_charset,
            self.g1_charset,
            self.charset,
            mo.DECOM in self.mode,
            mo.DECAWM in self.mode,
        )

    def restore_cursor(self, *_args: Any, **_kwargs: Any) -> None:
        """DECRC: restore the slot (it stays, so it can be restored again); without a save,
        home the cursor and leave origin mode. Cursor visibility is a mode and is kept."""
        saved = self._saved
        if saved is None:
            self.mode.discard(mo.DECOM)
            self.cursor.x = self.cursor.y = 0
            return
        self.g0_charset = saved.g0_charset
        self.g1_charset = saved.g1_charset
        self.charset = saved.charset
        for key, on in ((mo.DECOM, saved.origin), (mo.DECAWM, saved.wrap)):
            if on:
                self.mode.add(key)
            else:
                self.mode.discard(key)
        cursor = copy.copy(saved.cursor)
        cursor.hidden = self.cursor.hidden
        cursor.x = min(cursor.x, self.columns - 1)
        cursor.y = min(cursor.y, self.lines - 1)
        self.cursor = cursor

    # --- modes, attributes, reset ---------------------------------------------------------------

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        """SM / DECSET. Alternate-screen modes switch grids; DECCOLM is ignored."""
        private = bool(kwargs.get("private"))
        for mode in modes:
            if private:
                if mode in _ALT_MODES:
                    self._enter_alt()
                if mode == _DECCOLM_PARAM:
                    continue
                key = mode << 5
            else:
                key = mode
            self.mode.add(key)
            if key == mo.DECOM:
                self.cursor_position()
            elif key == mo.DECTCEM:
                self.cursor.hidden = False
            elif key == mo.DECSCNM:
                self.changed = True

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        """RM / DECRST."""
        private = bool(kwargs.get("private"))
        for mode in modes:
            if private:
                if mode in _ALT_MODES:
                    self._leave_alt()
                    continue
                if mode == _DECCOLM_PARAM:
                    continue
                key = mode << 5
            else:
                key = mode
            self.mode.discard(key)
            if key == mo.DECOM:
                self.cursor_position()
            elif key == mo.DECTCEM:
                self.cursor.hidden = True
            elif key == mo.DECSCNM:
                self.changed = True

    def _enter_alt(self) -> None:
        if self.alt_active:
            return
        self._main = (self.buffer, copy.copy(self.cursor))
        self.buffer = _Grid()
        self.alt_active = True
        self.changed = True

    def _leave_alt(self) -> None:
        self.mode.difference_update(_ALT_KEYS)
        if self._main is None:
            return
        buffer, cursor = self._main
        self._main = None
        cursor.hidden = self.cursor.hidden
        cursor.x = min(cursor.x, self.columns - 1)
        cursor.y = min(cursor.y, self.lines - 1)
        self.buffer = buffer
        self.cursor = cursor
        self.alt_active = False
        self.changed = True

    def select_graphic_rendition(self, *attrs: int, **kwargs: Any) -> None:
        """SGR from integer parameters (pyte's signature); private forms are ignored."""
        if kwargs.get("private"):
            return
        groups: list[tuple[int, ...]] = [(min(max(int(a), 0), _PARAM_MAX),) for a in attrs]
        groups = groups or [(0,)]
        self.cursor.attrs = _sgr_apply(self.cursor.attrs, groups)

    def apply_sgr(self, params: str) -> None:
        """SGR from the raw parameter string, memoized per (attributes, parameters).

        Args:
            params: text between ``CSI`` and ``m``: digits, ``;`` and ``:`` (ITU T.416
                sub-parameters such as ``38:2::255:0:0`` or ``4:3``). Anything else (``CSI > 4;2
                m`` is xterm's modifyOtherKeys, not an underline) leaves attributes unchanged.
        """
        attrs = self.cursor.attrs
        key = (id(attrs), params)
        entry = self._sgr_memo.get(key)
        if entry is None or entry[0] is not attrs:  # the entry pins attrs, so ids stay unique
            if len(self._sgr_memo) >= _MEMO_LIMIT:
                self._sgr_memo.clear()
            new = _sgr_from_string(attrs, params)
            # Intern by value so equal attributes are one object and the id-keyed memos hit.
            if len(self._interned) >= _MEMO_LIMIT:
                self._interned.clear()
            new = self._interned.setdefault(new, new)
            entry = self._sgr_memo[key] = (attrs, new)
        self.cursor.attrs = entry[1]

    def soft_reset(self, *_args: Any, **_kwargs: Any) -> None:
        """DECSTR ``CSI ! p``: modes, margins, attributes, charsets and the DECSC slot."""
        self.mode.difference_update({mo.IRM, mo.DECOM, _DECCKM})
        self.mode.add(mo.DECTCEM)
        self.cursor.hidden = False
        self.margins = None
        self.cursor.attrs = _BLANK
        self.g0_charset = cs.LAT1_MAP
        self.g1_charset = cs.VT100_MAP
        self.charset = 0
        self._saved = None

    def reset(self, *_args: Any, **_kwargs: Any) -> None:
        """RIS: blank main grid, default modes; history is kept (xterm keeps saved lines)."""
        super().reset()
        self.buffer = _Grid()
        self.alt_active = False
        self._main = None
        self._saved = None
        self.changed = True

    def define_charset(self, code: str, mode: str, *_args: Any, **_kwargs: Any) -> None:
        super().define_charset(code, mode)

    def shift_in(self, *_args: Any, **_kwargs: Any) -> None:
        self.charset = 0

    def shift_out(self, *_args: Any, **_kwargs: Any) -> None:
        self.charset = 1

    def set_title(self, param: str, *_args: Any, **_kwargs: Any) -> None:
        self.title = param[:MAX_OSC_PAYLOAD]

    def set_icon_name(self, param: str, *_args: Any, **_kwargs: Any) -> None:
        self.icon_name = param[:MAX_OSC_PAYLOAD]

    def bell(self, *_args: Any, **_kwargs: Any) -> None:
        """BEL is handled by the OSC scanner on the raw stream (agents.md §7.1)."""

    def report_device_attributes(self, *_args: Any, **_kwargs: Any) -> None:
        """DA: replies come only from term/replies.py (agents.md §7.5)."""

    def report_device_status(self, *_args: Any, **_kwargs: Any) -> None:
        """DSR: replies come only from term/replies.py (agents.md §7.5)."""

    def write_process_input(self, data: str) -> None:
        """No-op: the screen never writes to the PTY; replies come from term/replies.py."""

    def debug(self, *_args: Any, **_kwargs: Any) -> None:
        """Unrecognized sequences are ignored."""

    # --- geometry -------------------------------------------------------------------------------

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        """Resize both grids (pyte's argument order: rows, then columns).

        Fewer rows: blank rows below the cursor go first, then rows leave at the top (into
        history for the main grid) and the cursor moves up with its text. More rows: blank rows
        are added at the bottom. Columns are clipped or added on the right (no reflow). Margins
        are reset, tab stops follow the width.

        Raises:
            ValueError: a dimension is < 1.
        """
        lines = lines or self.lines
        columns = columns or self.columns
        if lines < 1 or columns < 1:
            raise ValueError(f"screen size must be at least 1x1, got {columns}x{lines}")
        if lines == self.lines and columns == self.columns:
            return
        grids = [(self.buffer, self.cursor, not self.alt_active)]
        if self._main is not None:
            grids.append((self._main[0], self._main[1], True))
        for buf, cursor, is_main in grids:
            if lines < self.lines:
                self._drop_rows(buf, cursor, self.lines - lines, to_history=is_main)
            if columns < self.columns:
                for line in buf.values():
                    for x in [x for x in line if x >= columns]:
                        del line[x]
                    self._fix_last_column(line, columns)
            cursor.y = min(cursor.y, lines - 1)
            cursor.x = min(cursor.x, columns - 1)
            if buf.fill != _BLANK:
                for y in range(self.lines, lines):  # rows added at the bottom are blank
                    buf[y] = self._blank_row(_BLANK)
        old_columns = self.columns
        self.lines, self.columns = lines, columns
        if columns > old_columns:
            self.tabstops.update(range(8 * (old_columns // 8 + 1), columns, 8))
        else:
            self.tabstops = {stop for stop in self.tabstops if stop < columns}
        self.margins = None
        self.changed = True

    def _drop_rows(self, buf: _Grid, cursor: Cursor, count: int, *, to_history: bool) -> None:
        old = self.lines
        trimmed = 0
        for y in range(old - 1, cursor.y, -1):
            if trimmed == count or buf.text(y, self.columns):
                break
            trimmed += 1
        for y in range(old - trimmed, old):
            buf.pop(y, None)
        shift = count - trimmed
        if not shift:
            return
        if to_history:
            for y in range(shift):
                self.history.append(buf.text(y, self.columns))
        moved = {y - shift: line for y, line in buf.items() if y >= shift}
        buf.clear()
        buf.update(moved)
        cursor.y = max(cursor.y - shift, 0)


def _extended_color(sub: tuple[int, ...]) -> str | None:
    """Colour from the parameters after 38/48 in colon form: ``5:n`` or ``2:[cs:]r:g:b``."""
    if sub[0] == 5 and len(sub) >= 2:
        return g.FG_BG_256[sub[1]] if sub[1] < 256 else None
    if sub[0] == 2 and len(sub) >= 4:
        rgb = sub[1:4] if len(sub) == 4 else sub[2:5]
        if max(rgb) < 256:
            return "{:02x}{:02x}{:02x}".format(*rgb)
    return None


def _sgr_apply(attrs: Char, groups: list[tuple[int, ...]]) -> Char:
    """Apply SGR parameter groups (one tuple per ``;`` field, split at ``:``) to ``attrs``.

    Colours use pyte's vocabulary: names for 30-37/90-97 (and backgrounds), ``"rrggbb"`` for
    256-colour and truecolor. Out-of-range colours are ignored instead of producing pyte's
    malformed hex strings.
    """
    changes: dict[str, Any] = {}
    n = len(groups)
    i = 0
    while i < n:
        group = groups[i]
        i += 1
        code = group[0]
        if len(group) > 1:  # colon sub-parameters
            if code in (38, 48):
                color = _extended_color(group[1:])
                if color is not None:
                    changes["fg" if code == 38 else "bg"] = color
            elif code == 4:
                changes["underscore"] = group[1] != 0
            elif code in _TEXT_ATTRS:
                name, on = _TEXT_ATTRS[code]
                changes[name] = on
            continue
        if code == 0:
            changes.update(_SGR_RESET)
        elif code in _TEXT_ATTRS:
            name, on = _TEXT_ATTRS[code]
            changes[name] = on
        elif code in _FG_NAMES:
            changes["fg"] = _FG_NAMES[code]
        elif code in _BG_NAMES:
            changes["bg"] = _BG_NAMES[code]
        elif code in (38, 48) and i < n:
            key = "fg" if code == 38 else "bg"
            kind = groups[i][0]
            i += 1
            if kind == 5 and i < n:
                index = groups[i][0]
                i += 1
                if index < 256:
                    changes[key] = g.FG_BG_256[index]
            elif kind == 2:
                rgb = [group[0] for group in groups[i : i + 3]]
                i += len(rgb)
                if len(rgb) == 3 and max(rgb) < 256:
                    changes[key] = "{:02x}{:02x}{:02x}".format(*rgb)
    return attrs._replace(**changes) if changes else attrs


def _sgr_from_string(attrs: Char, params: str) -> Char:
    if not _SGR_PARAMS_RE.fullmatch(params):
        return attrs
    groups = [
        tuple(min(int(v), _PARAM_MAX) if v else 0 for v in field.split(":"))
        for field in params.split(";")
    ]
    return _sgr_apply(attrs, groups)


_Parser = Generator[bool, str, None]
_SubParser = Generator[bool, str, "str | None"]


class TolerantStream(pyte.ByteStream):
    """ECMA-48 tokenizer feeding a ``HardenedScreen`` through a per-pane UTF-8 decoder.

    Plain text, C0 controls and complete sequences are handled in ``_feed_from`` with compiled
    regexes; a sequence split across feeds, or one with embedded controls, goes through the
    character-level state machine ``_parser_fsm``. Both paths call the same dispatchers, so any
    chunking gives the same screen.

    Faults of pyte 0.8.2's ``Stream`` fixed here: a private marker other than ``?`` or an
    intermediate byte ended the sequence and the rest was drawn (``CSI < 1 u`` → ``1u``,
    ``CSI 38:2::255:0:0 m`` → ``2::255:0:0m``); ``CSI > 4;2 m`` set underline; DCS/SOS/PM/APC
    payloads were drawn as text; parameters over 4300 digits raised ``ValueError``; the OSC
    buffer was unbounded; ``ESC % @`` switched later feeds to Latin-1 (UTF-8 is now pinned);
    NEL did not return to column 0; and any handler exception dropped the rest of the feed.

    Not dispatched: DA/DSR and other queries (term/replies.py answers them), window ops,
    keyboard-protocol and mouse-report sequences other than the modes recorded by SM/RM.

    Attributes:
        faults: unexpected exceptions caught while feeding (each one also reset the parser).
        fault_classes: exception class name -> count.
        last_fault: ``"Class: message"`` of the latest fault, for diagnostics.
    """

    listener: HardenedScreen

    def __init__(self, screen: HardenedScreen) -> None:
        self.faults = 0
        self.fault_classes: Counter[str] = Counter()
        self.last_fault = ""
        self._osc_pending: str | None = None
        self._values_memo: dict[str, tuple[int, ...]] = {}
        super().__init__(screen)

    def attach(self, screen: pyte.Screen) -> None:
        assert isinstance(screen, HardenedScreen)
        self._bind(screen)
        super().attach(screen)

    def _bind(self, s: HardenedScreen) -> None:
        self._c0: dict[str, Callable[[], None]] = {
            "\x07": s.bell,
            "\x08": s.backspace,
            "\t": s.tab,
            "\n": s.linefeed,
            "\x0b": s.linefeed,
            "\x0c": s.linefeed,
            "\r": s.carriage_return,
            "\x0e": s.shift_out,
            "\x0f": s.shift_in,
        }
        self._csi: dict[str, Callable[..., None]] = {
            "@": s.insert_characters,
            "A": s.cursor_up,
            "B": s.cursor_down,
            "C": s.cursor_forward,
            "D": s.cursor_back,
            "E": s.cursor_down1,
            "F": s.cursor_up1,
            "G": s.cursor_to_column,
            "H": s.cursor_position,
            "J": s.erase_in_display,
            "K": s.erase_in_line,
            "L": s.insert_lines,
            "M": s.delete_lines,
            "P": s.delete_characters,
            "S": s.scroll_up,
            "T": s.scroll_down,
            "X": s.erase_characters,
            "`": s.cursor_to_column,
            "a": s.cursor_forward,
            "b": s.repeat_last,
            "d": s.cursor_to_line,
            "e": s.cursor_down,
            "f": s.cursor_position,
            "g": s.clear_tab_stop,
            "h": s.set_mode,
            "l": s.reset_mode,
            "r": s.set_margins,
            "s": s.save_cursor,
            "u": s.restore_cursor,
        }
        self._csi_private: dict[str, Callable[..., None]] = {
            "h": s.set_mode,
            "l": s.reset_mode,
            "J": s.erase_in_display,
            "K": s.erase_in_line,
        }
        self._esc: dict[str, Callable[[], None]] = {
            "c": s.reset,
            "D": s.index,
            "E": s.next_line,
            "H": s.set_tab_stop,
            "M": s.reverse_index,
            "7": s.save_cursor,
            "8": s.restore_cursor,
        }

    def select_other_charset(self, code: str) -> None:
        """``ESC % @`` would switch pyte to Latin-1 decoding; signaltty pins UTF-8."""

    def _initialize_parser(self) -> None:
        self._osc_pending = None
        super()._initialize_parser()

    # --- feeding --------------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:  # type: ignore[override]
        """Decode ``data`` with the incremental decoder (invalid UTF-8 → U+FFFD, a split
        character waits for its next bytes) and apply it."""
        self.feed_text(self.utf8_decoder.decode(data))

    def feed_text(self, data: str) -> None:
        """Apply decoded text. Never raises: a fault is counted, the parser is reset and the
        text after the faulting element is still applied."""
        pos = 0
        n = len(data)
        while pos < n:
            pos = self._feed_from(data, pos)

    def _record_fault(self, exc: BaseException) -> None:
        self.faults += 1
        name = type(exc).__name__
        self.fault_classes[name] += 1
        self.last_fault = f"{name}: {exc}"[:200]

    def _feed_from(self, data: str, pos: int) -> int:
        """Apply ``data[pos:]``; return ``len(data)``, or where to resume after a fault."""
        n = len(data)
        screen = self.listener
        draw = screen.draw
        c0 = self._c0
        text_match = _TEXT_RE.match
        csi_match = _CSI_RE.match
        dispatch_csi = self._dispatch_csi
        apply_sgr = screen.apply_sgr
        assert self._parser is not None
        send = self._parser.send
        ground = self._taking_plain_text
        resume = pos
        run = -1
        try:
            while pos < n:
                if not ground:
                    resume = pos + 1
                    ground = send(data[pos])
                    pos += 1
                    continue
                char = data[pos]
                if char == _ESC:
                    kind = data[pos + 1 : pos + 2]
                    if kind == "[":
                        m = csi_match(data, pos)
                        if m is not None:
                            pos = resume = m.end()
                            if m[3] == "m" and not m[2]:
                                apply_sgr(m[1])  # SGR dominates escape-heavy output
                            else:
                                dispatch_csi(m[1], m[2], m[3])
                            continue
                    elif kind == "]":
                        m = _OSC_RE.match(data, pos)
                        if m is not None:
                            pos = resume = m.end()
                            self._dispatch_osc(m[1])
                            continue
                    elif kind in _STRING_INTRODUCERS:
                        m = _STRING_RE.match(data, pos)
                        if m is not None:
                            pos = resume = m.end()
                            continue
                    elif kind:
                        m = _ESC_RE.match(data, pos)
                        if m is not None:
                            pos = resume = m.end()
                            self._dispatch_esc(m[1] or "", m[2] or m[3])
                            continue
                    resume = pos + 1
                    ground = send(char)
                    pos += 1
                    continue
                handler = c0.get(char)
                if handler is not None:
                    pos = resume = pos + 1
                    handler()
                    continue
                m = text_match(data, pos)
                if m is None:  # NUL, other C0, DEL, C1: ignored
                    pos = resume = pos + 1
                    continue
                end = m.end()
                run = pos
                resume = end
                draw(data[pos:end])
                run = -1
                pos = end
            self._taking_plain_text = ground
            return n
        except Exception as exc:  # noqa: BLE001 - last line of defence: keep the rest of the output
            self._record_fault(exc)
            self._initialize_parser()
            if run >= 0:
                resume = run + min(max(screen.draw_progress, 0), end - run - 1) + 1
            return resume

    # --- dispatchers shared by the fast path and the state machine ------------------------------

    def _values(self, params: str) -> tuple[int, ...]:
        """Numeric parameters (empty field → 0, clamped to 9999); ``()`` when not numeric."""
        values = self._values_memo.get(params)
        if values is None:
            if _INT_PARAMS_RE.fullmatch(params):
                values = tuple(min(int(p), _PARAM_MAX) if p else 0 for p in params.split(";"))
            else:
                values = ()
            if len(self._values_memo) >= _MEMO_LIMIT:
                self._values_memo.clear()
            self._values_memo[params] = values
        return values

    def _dispatch_csi(self, params: str, inter: str, final: str) -> None:
        if inter:
            if inter == "!" and final == "p":
                self.listener.soft_reset()
            return  # DECSCUSR, DECRQM, ...: no effect on the grid
        if final == "m":
            self.listener.apply_sgr(params)
            return
        marker = params[:1]
        if marker in ("<", "=", ">", "?"):
            params = params[1:]
        else:
            marker = ""
        values = self._values(params)
        if not values:
            return
        if marker:
            if marker == "?":
                handler = self._csi_private.get(final)
                if handler is not None:
                    handler(*values, private=True)
            return
        if (final in "su" and params) or (final == "T" and len(values) > 1):
            return  # DECSLRM, and xterm mouse highlight tracking; not SCOSC/SCORC/SD
        handler = self._csi.get(final)
        if handler is not None:
            handler(*values)

    def _dispatch_esc(self, inter: str, final: str) -> None:
        if not inter:
            handler = self._esc.get(final)
            if handler is not None:
                handler()
        elif inter == "#":
            if final == "8":
                self.listener.alignment_display()
        elif inter in ("(", ")"):
            self.listener.define_charset(final, inter)
        # "%" (charset switch, UTF-8 pinned), G2/G3, S7C1T, ...: ignored.

    def _dispatch_osc(self, body: str) -> None:
        code, sep, text = body.partition(";")
        if not sep:
            return
        if code in ("0", "1"):
            self.listener.set_icon_name(text)
        if code in ("0", "2"):
            self.listener.set_title(text)

    def _execute(self, char: str) -> None:
        handler = self._c0.get(char)
        if handler is not None:
            handler()

    # --- character-level state machine ----------------------------------------------------------

    def _parser_fsm(self) -> _Parser:
        """Yields True at ground (the feed loop may take plain text itself), False inside a
        sequence. Sub-machines return a character to re-process, or None."""
        char = yield True
        while True:
            if char == _ESC:
                again = yield from self._fsm_escape()
                char = again if again is not None else (yield True)
                continue
            handler = self._c0.get(char)
            if handler is not None:
                handler()
            elif _TEXT_RE.match(char):
                self.listener.draw(char)
            char = yield True

    def _fsm_escape(self) -> _SubParser:
        pending, self._osc_pending = self._osc_pending, None
        inter = ""
        overflow = False
        while True:
            char = yield False
            code = ord(char)
            if char == _ESC:
                return _ESC
            if char in _CAN_SUB:
                return None
            if code < 0x20:
                self._execute(char)
                continue
            if code == 0x7F:
                continue
            if code <= 0x2F:
                if len(inter) < _INTERMEDIATES:
                    inter += char
                else:
                    overflow = True
                continue
            if code >= 0x80:
                return char  # not a sequence after all: ESC is dropped, the text is drawn
            if not inter:
                if char == "[":
                    return (yield from self._fsm_csi())
                if char == "]":
                    return (yield from self._fsm_osc())
                if char in _STRING_INTRODUCERS:
                    return (yield from self._fsm_string())
                if char == "\\" and pending is not None:
                    self._dispatch_osc(pending)  # OSC terminated by ST split from its body
                    return None
            if not overflow:
                self._dispatch_esc(inter, char)
            return None

    def _fsm_csi(self) -> _SubParser:
        params = ""
        inter = ""
        bad = False
        while True:
            char = yield False
            code = ord(char)
            if 0x30 <= code <= 0x3F:
                if inter or len(params) >= _CSI_PARAM_CHARS:
                    bad = True
                else:
                    params += char
            elif 0x20 <= code <= 0x2F:
                if len(inter) >= _INTERMEDIATES:
                    bad = True
                else:
                    inter += char
            elif 0x40 <= code <= 0x7E:
                if not bad:
                    self._dispatch_csi(params, inter, char)
                return None
            elif char == _ESC:
                return _ESC
            elif char in _CAN_SUB:
                return None
            elif code < 0x20:
                self._execute(char)  # C0 inside CSI is executed (VT500 parser)
            elif code >= 0x80:
                return char

    def _fsm_osc(self) -> _SubParser:
        body: list[str] = []
        over = False
        while True:
            char = yield False
            if char == _BEL:
                if not over:
                    self._dispatch_osc("".join(body))
                return None
            if char == _ESC:
                # ST is ESC \; any other ESC ends the string and starts a new sequence.
                self._osc_pending = None if over else "".join(body)
                return _ESC
            if char in _CAN_SUB:
                return None
            code = ord(char)
            if code < 0x20 or code == 0x7F:
                continue
            if len(body) < MAX_OSC_PAYLOAD:
                body.append(char)
            else:
                over = True  # agents.md §7: over the cap the sequence is aborted

    def _fsm_string(self) -> _SubParser:
        # DCS/SOS/PM/APC payloads are never drawn; ESC ends them (ST or a new sequence).
        while True:
            char = yield False
            if char == _ESC:
                return _ESC
            if char in _CAN_SUB:
                return None


# --- snapshot rendering -----------------------------------------------------------------------

_FG_CODES: Final[dict[str, int]] = {
    name: code for code, name in _FG_NAMES.items() if name != "default"
}
_BG_CODES: Final[dict[str, int]] = {
    **{name: code for code, name in _BG_NAMES.items() if name != "default"},
    "bfightmagenta": 105,  # pyte 0.8.2's own SGR writes this spelling
}
_FLAG_CODES: Final = (
    ("bold", "1"),
    ("italics", "3"),
    ("underscore", "4"),
    ("blink", "5"),
    ("reverse", "7"),
    ("strikethrough", "9"),
)


def _color_param(value: str, names: dict[str, int], base: int) -> str | None:
    code = names.get(value)
    if code is not None:
        return str(code)
    if _HEX6_RE.fullmatch(value):
        r, g_, b = (int(value[i : i + 2], 16) for i in (0, 2, 4))
        return f"{base};2;{r};{g_};{b}"
    return None  # "default" or a value pyte could not have produced from valid input


def _sgr_sequence(cell: Char) -> str:
    """``CSI 0;...m`` selecting exactly the attributes of ``cell``."""
    parts = ["0"]
    parts.extend(code for name, code in _FLAG_CODES if getattr(cell, name))
    fg = _color_param(cell.fg, _FG_CODES, 38)
    if fg:
        parts.append(fg)
    bg = _color_param(cell.bg, _BG_CODES, 48)
    if bg:
        parts.append(bg)
    return "\x1b[" + ";".join(parts) + "m"


def _attrs_key(cell: Char) -> tuple[Any, ...]:
    return tuple(cell[1:])


def _paint_row(line: StaticDefaultDict[int, Char], y: int, columns: int, out: list[str]) -> None:
    cells = [line[x] for x in range(columns)]
    end = columns
    while end and cells[end - 1] == _BLANK:
        end -= 1
    if not end:
        return
    out.append(f"\x1b[{y + 1}H")
    current: tuple[Any, ...] | None = None
    x = 0
    while x < end:
        cell = cells[x]
        key = _attrs_key(cell)
        if key != current:
            out.append(_sgr_sequence(cell))
            current = key
        if not cell.data:  # orphan stub: keep the column
            out.append(" ")
            x += 1
            continue
        out.append(cell.data)
        wide = x + 1 < columns and not cells[x + 1].data and _WIDTH[cell.data[0]] == 2
        x += 2 if wide else 1


def _snapshot(screen: HardenedScreen) -> bytes:
    """Render ``screen`` as terminal output (see ``VirtualScreen.snapshot_bytes``)."""
    columns, rows = screen.columns, screen.lines
    mode = screen.mode
    out = [
        "\x1b[?25l",  # hidden while painting; the final state is set at the end
        "\x1b[0m\x1b[r\x1b[?6l\x1b[?7h\x1b[4l\x1b[20l\x1b[?5l\x1b(B\x0f",
    ]
    if screen.alt_active:
        out.append("\x1b[?1049h")
    out.append("\x1b[H\x1b[2J")
    buf = screen.buffer
    for y in range(rows):
        line = buf.get(y)
        if line is None:
            line = StaticDefaultDict[int, Char](buf.fill)
        if line or line.default != _BLANK:
            _paint_row(line, y, columns, out)
    margins = screen.margins
    if margins is not None:
        out.append(f"\x1b[{margins.top + 1};{margins.bottom + 1}r")
    origin = margins is not None and mo.DECOM in mode
    if origin:
        out.append("\x1b[?6h")
    cursor = screen.cursor
    top = 0
    row = cursor.y
    if origin and margins is not None:
        # Rows are relative to the region; a cursor outside it (only DECRC puts it there)
        # cannot be placed again, so it is clamped into the region.
        top = margins.top
        row = min(max(row, margins.top), margins.bottom)
    if cursor.x >= columns and row == cursor.y:
        # Pending wrap: redraw the last cell so the terminal is left in the same state.
        x = columns - 1
        if not screen.cell(row, x).data and x > 0 and screen.cell(row, x - 1).data:
            x -= 1
        cell = screen.cell(row, x)
        out.append(f"\x1b[{row - top + 1};{x + 1}H{_sgr_sequence(cell)}{cell.data or ' '}")
    else:
        out.append(f"\x1b[{row - top + 1};{min(cursor.x, columns - 1) + 1}H")
    if mo.DECAWM not in mode:
        out.append("\x1b[?7l")
    if mo.IRM in mode:
        out.append("\x1b[4h")
    if mo.LNM in mode:
        out.append("\x1b[20h")
    if mo.DECSCNM in mode:
        out.append("\x1b[?5h")
    out.extend(f"\x1b[?{m}h" for m in _INPUT_MODES if (m << 5) in mode)
    for intro, table in (("(", screen.g0_charset), (")", screen.g1_charset)):
        for code, charmap in cs.MAPS.items():
            if charmap is table:
                out.append(f"\x1b{intro}{code}")
                break
    if screen.charset:
        out.append("\x0e")
    out.append(_sgr_sequence(cursor.attrs))
    out.append("\x1b[?25l" if cursor.hidden else "\x1b[?25h")
    return "".join(out).encode("utf-8", "replace")


class PyteScreen(VirtualScreen):
    """``VirtualScreen`` backed by ``HardenedScreen`` + ``TolerantStream``.

    Args:
        cols: width in cells (default ``COLS_DEFAULT``).
        rows: height in rows (default ``ROWS_DEFAULT``).
        history_lines: rendered rows kept above the main grid (``HISTORY_LINES``).

    Spec: agents.md §7.6; protocol.md §5 ``pane.read``, ``pane.attach``; §9 history 5000.
    """

    def __init__(
        self,
        cols: int = COLS_DEFAULT,
        rows: int = ROWS_DEFAULT,
        *,
        history_lines: int = HISTORY_LINES,
    ) -> None:
        self._screen = HardenedScreen(cols, rows, history_lines)
        self._stream = TolerantStream(self._screen)
        self._pending = PendingBytes()
        self._outer_faults = 0

    @property
    def model(self) -> HardenedScreen:
        """The underlying pyte screen, fully drained (tests and diagnostics)."""
        self._apply_all()
        return self._screen

    # --- input --------------------------------------------------------------------------------

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._pending.append(data)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def drain(self, max_bytes: int = SCREEN_SLICE_BYTES) -> int:
        chunk = self._pending.take(max_bytes)
        if chunk:
            try:
                self._stream.feed(chunk)
            except Exception as exc:  # noqa: BLE001 - the stream catches per element; bug guard
                self._outer_faults += 1
                self._stream._record_fault(exc)
                self._stream._initialize_parser()
        return len(chunk)

    def _apply_all(self) -> None:
        while self._pending:
            self.drain(SCREEN_SLICE_BYTES)

    @property
    def faults(self) -> int:
        return self._stream.faults

    @property
    def fault_classes(self) -> dict[str, int]:
        """Exception class name → count of caught faults."""
        return dict(self._stream.fault_classes)

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
        screen = self._screen
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
        screen = self._screen
        if ys is None:
            ys = range(screen.lines)
        return [screen.render_row(y) for y in ys]

    def reset(self) -> None:
        self._pending.clear()
        self._stream.utf8_decoder.reset()
        self._stream._initialize_parser()
        self._screen.reset()
        self._screen.history.clear()
