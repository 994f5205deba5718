"""Snapshots: the visible grid rendered as terminal output (``pane.attach`` ``snapshot_b64``).

Spec: protocol.md §5 ``pane.attach``.
"""

from __future__ import annotations

import re
from typing import Any, Final

from pyte import charsets as cs
from pyte import modes as mo
from pyte.screens import Char, StaticDefaultDict

from signaltty.term.screen.cells import _BLANK, _WIDTH
from signaltty.term.screen.sgr import _BG_NAMES, _FG_NAMES
from signaltty.term.screen.state import HardenedScreen

# Private modes that change what the viewer's terminal sends (keys, mouse, paste, focus); the
# snapshot replays them so an attached terminal behaves like the one the program set up.
_INPUT_MODES: Final = (1, 66, 1000, 1002, 1003, 1004, 1005, 1006, 1015, 2004)
_HEX6_RE: Final = re.compile("[0-9a-f]{6}")

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
