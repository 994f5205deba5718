"""Screen state: ``HardenedScreen``, pyte's ``Screen`` made safe for hostile output.

Layer rule: standard library, ``pyte`` and ``signaltty.core`` only; no I/O.
Spec: agents.md §7.6 (screen model), protocol.md §9 (history limit).
"""

from __future__ import annotations

import copy
import unicodedata
from typing import Any, Final

import pyte
from pyte import charsets as cs
from pyte import modes as mo
from pyte.screens import Char, Cursor, Margins, Savepoint, StaticDefaultDict

from signaltty.core.limits import HISTORY_LINES, MAX_OSC_PAYLOAD
from signaltty.term.screen.cells import (
    _ALIGNMENT,
    _BLANK,
    _CELL_CODEPOINTS,
    _LAT1,
    _MEMO_LIMIT,
    _NARROW,
    _NARROW_MAX,
    _WIDTH,
    GlyphTable,
    _count,
    _Glyphs,
    _Grid,
)
from signaltty.term.screen.scrollback import Scrollback
from signaltty.term.screen.sgr import _PARAM_MAX, _sgr_apply, _sgr_from_string

_ALT_MODES: Final = frozenset({47, 1047, 1049})
_ALT_KEYS: Final = frozenset(m << 5 for m in _ALT_MODES)  # pyte stores private modes << 5
_DECCOLM_PARAM: Final = 3
_DECCKM: Final = 1 << 5  # application cursor keys (private mode 1)

# Process-wide memo tables (bounded; cleared when full). Keys by ``id`` are safe because each
# entry keeps the object whose id it uses alive, so that id cannot be reused meanwhile.
_GLYPHS: Final = GlyphTable(max_sets=8192, max_glyphs=65536)  # ≤ ~6 MB of glyphs
_SGR_MEMO: Final[dict[tuple[int, str], tuple[Char, Char]]] = {}  # (id(attrs), params) -> new
_INTERNED: Final[dict[Char, Char]] = {}  # attrs by value, so equal attrs are one object
_BCE: Final[dict[str, Char]] = {}  # background colour -> erase blank


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
        self.history = Scrollback(history_lines)
        self.alt_active = False
        self.changed = True
        self.rows_dirty: set[int] = set()
        self.draw_progress = 0
        self._main: tuple[_Grid, Cursor] | None = None
        self._saved: Savepoint | None = None
        self._last_char = ""
        # The memo tables are shared by every screen of the process (values, not state):
        # each pane's own copy cost ~0.1-0.8 MB of RSS (issue 12).
        self._glyph_table = _GLYPHS
        self._glyphs = _Glyphs(_BLANK)
        self._sgr_memo = _SGR_MEMO
        self._interned = _INTERNED
        self._bce = _BCE
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
        glyphs = self._glyph_table.get(attrs)
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
                line.update(zip(range(x, end), map(glyphs.__getitem__, data), strict=False))
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
            line.update(zip(range(x, end), map(get_glyph, text[i : i + take]), strict=False))
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
