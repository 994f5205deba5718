"""Cells and grids of the pyte model: the row dict, the width memo, glyph memo and row text.

Layer rule: standard library, ``pyte`` and ``signaltty.core`` only; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any, Final

from pyte import charsets as cs
from pyte.screens import Char, StaticDefaultDict, wcwidth

# Code points kept in one cell (base + combining marks); pyte re-normalized an unbounded string
# per mark, which is quadratic.
_CELL_CODEPOINTS: Final = 8
# Size bound of the per-screen memo tables (SGR transitions, glyphs, parameter tuples).
_MEMO_LIMIT: Final = 4096

_BLANK: Final = Char(" ")
_ALIGNMENT: Final = Char("E")
_DATA: Final = itemgetter(0)
_LAT1: Final = cs.LAT1_MAP


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


def _after_build_all(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of ``dict``, called on a ``_TextGrid`` once all its held rows are built."""

    def after_build_all(self: _TextGrid, *args: Any, **kwargs: Any) -> Any:
        self._build_all()
        return method(self, *args, **kwargs)

    after_build_all.__name__ = method.__name__
    return after_build_all


class _TextGrid(_Grid):
    """A grid some of whose rows are held as text (``texts``: row index → its characters,
    all one cell wide, in blank cells from column 0) and made into cells only when asked for.

    The line printer (``history._fold``) leaves up to ``lines - 1`` such rows after each run
    of folded lines; while output floods, the next fold reads only their text, so most are
    never built (issue 12, flood kind a: building and rendering them was a third of the
    fold). A row index is never both held as text and stored as a row. One row's access
    (``grid[y]``, ``get``, ``text``, ``in``, storing or dropping it) builds at most that row;
    ``len`` counts both kinds and ``clear`` drops both; any other access to several rows
    (iteration, ``items``, ``values``, ``update``, ``copy``, equality) builds every held row
    first, so the grid then acts as a plain ``_Grid``.
    """

    __slots__ = ("texts",)

    def __init__(self, fill: Char, texts: dict[int, str]) -> None:
        super().__init__(fill)
        self.texts = texts

    def _build(self, y: int) -> StaticDefaultDict[int, Char] | None:
        text = self.texts.pop(y, None)
        if text is None:
            return None
        glyphs = _BLANK_GLYPHS
        row = StaticDefaultDict[int, Char](_BLANK)
        row.update(zip(_prefix(len(text)), map(glyphs.__getitem__, text), strict=False))
        dict.__setitem__(self, y, row)
        return row

    def _build_all(self) -> None:
        for y in list(self.texts):
            self._build(y)

    def __missing__(self, y: int) -> StaticDefaultDict[int, Char]:
        row = self._build(y)
        return super().__missing__(y) if row is None else row

    def get(self, y: int, default: Any = None) -> Any:
        row = dict.get(self, y)
        if row is None and self.texts:
            row = self._build(y)
        return default if row is None else row

    def text(self, y: int, columns: int) -> str:
        held = self.texts.get(y)
        return super().text(y, columns) if held is None else held.rstrip(" ")

    def __contains__(self, y: object) -> bool:
        return dict.__contains__(self, y) or y in self.texts

    def __setitem__(self, y: int, row: StaticDefaultDict[int, Char]) -> None:
        self.texts.pop(y, None)
        dict.__setitem__(self, y, row)

    def __delitem__(self, y: int) -> None:
        if self.texts.pop(y, None) is None:
            dict.__delitem__(self, y)
        else:
            dict.pop(self, y, None)

    def pop(self, y: int, *default: Any) -> Any:
        self._build(y)
        return dict.pop(self, y, *default)

    def clear(self) -> None:
        self.texts.clear()
        dict.clear(self)

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.texts)

    # Accesses to several rows: every held row is built first, then dict's own method runs.
    __iter__ = _after_build_all(dict.__iter__)
    keys = _after_build_all(dict.keys)
    values = _after_build_all(dict.values)
    items = _after_build_all(dict.items)
    update = _after_build_all(dict.update)
    popitem = _after_build_all(dict.popitem)
    copy = _after_build_all(dict.copy)
    __eq__ = _after_build_all(dict.__eq__)

    def setdefault(self, y: int, default: Any = None) -> Any:
        self._build(y)
        return dict.setdefault(self, y, default)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> Any:
        self._build_all()
        return (_Grid, (self.fill,), None, None, iter(dict.items(self)))


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


class _Glyphs(dict[str, Char]):
    """Memo ``char -> Char`` for one attribute set, so drawing does not ``_replace`` per cell.

    ``table``: the :class:`GlyphTable` that holds this set and counts its glyphs, or ``None``.
    """

    __slots__ = ("attrs", "_rest", "table")

    def __init__(self, attrs: Char, table: GlyphTable | None = None) -> None:
        super().__init__()
        self.attrs = attrs
        self._rest = tuple(attrs[1:])
        self.table = table

    def __missing__(self, char: str) -> Char:
        table = self.table
        if len(self) >= _MEMO_LIMIT:
            if table is not None:
                table.glyphs -= len(self)
            self.clear()
        if table is not None:
            table.glyphs += 1
            if table.glyphs > table.max_glyphs:
                table.clear()  # this set too: it goes on serving its screen, uncounted
        # ``attrs._replace(data=char)`` without its per-call field mapping (a new colour set
        # draws every character through here once).
        glyph: Char = tuple.__new__(Char, (char, *self._rest))
        self[char] = glyph
        return glyph


# The glyphs of text in blank cells (``_TextGrid`` rows); bounded like every ``_Glyphs``.
_BLANK_GLYPHS: Final = _Glyphs(_BLANK)


class GlyphTable:
    """Glyph sets by attribute set, shared by every screen of the process, bounded by its
    sets and by its glyphs (``max_sets``, ``max_glyphs``) and cleared whole at either.

    The glyph bound is the one that matters: SGR-heavy output shows thousands of attribute
    sets of a few characters each. A clear makes later draws allocate new glyphs equal to the
    ones the grids hold, so a table cycling through more sets than it keeps costs every
    screen its own copy (176 KB a pane under bench/panes.py's mixed output when the table kept
    1 024 sets; issue 12, "RSS per pane").
    """

    __slots__ = ("sets", "glyphs", "max_sets", "max_glyphs")

    def __init__(self, max_sets: int, max_glyphs: int) -> None:
        self.sets: dict[int, _Glyphs] = {}  # id(attrs) -> its glyphs
        self.glyphs = 0  # entries of every set in ``sets``
        self.max_sets = max_sets
        self.max_glyphs = max_glyphs

    def get(self, attrs: Char) -> _Glyphs:
        """The glyph set of ``attrs`` (made, and the table cleared first if full)."""
        # Keyed by id: the set keeps ``attrs`` alive, so the id cannot be reused while the
        # entry exists; equal attributes in distinct objects just get two sets.
        glyphs = self.sets.get(id(attrs))
        if glyphs is None:
            if len(self.sets) >= self.max_sets:
                self.clear()
            glyphs = self.sets[id(attrs)] = _Glyphs(attrs, self)
        return glyphs

    def clear(self) -> None:
        for dropped in self.sets.values():
            dropped.table = None
        self.sets.clear()
        self.glyphs = 0
