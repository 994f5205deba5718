"""A screen's exact state as plain JSON data, for handing a live pane to a restarted daemon.

``export_state`` captures everything a later byte can observe — every cell with its
attributes, the cursor, modes, margins, tab stops, charsets, the saved cursor, the main grid
behind the alternate screen, history, title — once the parser rests between sequences;
``import_state`` builds a ``PyteScreen`` that answers every read and every later byte exactly
as the original would. The data crosses an ``exec`` of possibly newer code, so it is versioned
and validated field by field as hostile input: anything out of shape raises ``ValueError``
and the caller falls back to the pane's saved tail.

Layer rule: standard library, ``pyte`` and ``signaltty.core`` only; no I/O.
Spec: issue 15 item 1 (screens carry over a restart).
"""

from __future__ import annotations

from typing import Any, Final

from pyte import charsets as cs
from pyte.screens import Char, Cursor, Margins, Savepoint, StaticDefaultDict

from signaltty.core.limits import COLS_MAX, HISTORY_LINES, MAX_OSC_PAYLOAD, ROWS_MAX
from signaltty.term.screen.cells import _Grid
from signaltty.term.screen.engine import PyteScreen
from signaltty.term.screen.state import HardenedScreen

FORMAT: Final = 1
# A cell holds a base character and at most 7 marks (cells._CELL_CODEPOINTS); colours are
# names or 6-digit hex strings; anything longer is not ours.
_CELL_DATA_MAX: Final = 16
_COLOUR_MAX: Final = 16
_MODES_MAX: Final = 256
_LINE_MAX: Final = COLS_MAX * 16


def export_state(screen: PyteScreen) -> dict[str, Any] | None:
    """The screen's state as JSON-able data, every pending byte applied first.

    Returns:
        ``{"format": 1, ...}``, or ``None`` while the parser is inside an escape sequence or
        a split UTF-8 character (the caller reads on until it rests: the unfinished bytes live
        only in the parser and are not part of this format).
    """
    model = screen.model  # applies pending and lazily held bytes
    stream = screen._stream
    if not stream._taking_plain_text or stream.utf8_decoder.getstate()[0]:
        return None
    attrs: list[list[Any]] = []
    index: dict[Char, int] = {}

    def ref(char: Char) -> int:
        key = char._replace(data="")
        found = index.get(key)
        if found is None:
            found = index[key] = len(attrs)
            attrs.append(list(key[1:]))
        return found

    def cell(char: Char) -> list[Any]:
        return [char.data, ref(char)]

    def grid(g: _Grid) -> dict[str, Any]:
        # a row has its own blank (an erase in a background colour), not only its cells
        rows = {
            str(y): {
                "fill": cell(row.default),
                "cells": [[x, *cell(c)] for x, c in sorted(row.items())],
            }
            for y, row in sorted(g.items())
            if 0 <= y < model.lines
        }
        return {"fill": cell(g.fill), "rows": rows}

    def cursor(c: Cursor) -> dict[str, Any]:
        return {"x": c.x, "y": c.y, "attrs": cell(c.attrs), "hidden": bool(c.hidden)}

    saved = model._saved
    main = model._main
    return {
        "format": FORMAT,
        "columns": model.columns,
        "lines": model.lines,
        "grid": grid(model.buffer),
        "cursor": cursor(model.cursor),
        "mode": sorted(model.mode),
        "margins": list(model.margins) if model.margins is not None else None,
        "tabstops": sorted(model.tabstops),
        "charset": model.charset,
        "g0": model.g0_charset,
        "g1": model.g1_charset,
        "saved": None
        if saved is None
        else {
            "cursor": cursor(saved.cursor),
            "g0": saved.g0_charset,
            "g1": saved.g1_charset,
            "charset": saved.charset,
            "origin": bool(saved.origin),
            "wrap": bool(saved.wrap),
        },
        "main": None if main is None else {"grid": grid(main[0]), "cursor": cursor(main[1])},
        "alt_active": model.alt_active,
        "history": list(model.history),
        "title": model.title,
        "icon_name": model.icon_name,
        "last_char": model._last_char,
        "attrs": attrs,
    }


def import_state(data: object, *, history_lines: int = HISTORY_LINES) -> PyteScreen:
    """A screen in exactly the state ``export_state`` captured (``history_lines``: the
    history bound of the new screen, as the original was made).

    Raises:
        ValueError: ``data`` is not a format-1 state or any field is out of shape or bounds.
    """
    d = _obj(data, "state")
    if d.get("format") != FORMAT:
        raise ValueError(f"unknown screen state format {d.get('format')!r}")
    cols = _int(d.get("columns"), "columns", 1, COLS_MAX)
    rows = _int(d.get("lines"), "lines", 1, ROWS_MAX)
    attrs = [_attrs(a) for a in _list(d.get("attrs"), "attrs", 1 << 16)]

    def char(value: object) -> Char:
        pair = _list(value, "cell", 2)
        if len(pair) != 2:
            raise ValueError("cell is not [data, attrs]")
        text = _str(pair[0], "cell data", _CELL_DATA_MAX)
        at = _int(pair[1], "cell attrs", 0, len(attrs) - 1)
        return Char(text, *attrs[at])

    def grid(value: object) -> _Grid:
        g = _obj(value, "grid")
        out = _Grid(char(g.get("fill")))
        for key, value in _obj(g.get("rows"), "rows").items():
            y = _int(int(key) if key.isdigit() and len(key) < 4 else -1, "row", 0, rows - 1)
            r = _obj(value, "row")
            row = out[y] = StaticDefaultDict[int, Char](char(r.get("fill")))
            for item in _list(r.get("cells"), "row cells", cols):
                triple = _list(item, "cell", 3)
                if len(triple) != 3:
                    raise ValueError("cell is not [x, data, attrs]")
                row[_int(triple[0], "column", 0, cols - 1)] = char(triple[1:])
        return out

    def cursor(value: object) -> Cursor:
        c = _obj(value, "cursor")
        # x may sit one past the last column (a pending wrap)
        cur = Cursor(
            _int(c.get("x"), "cursor x", 0, cols), _int(c.get("y"), "cursor y", 0, rows - 1)
        )
        cur.attrs = char(c.get("attrs"))
        cur.hidden = _bool(c.get("hidden"), "cursor hidden")
        return cur

    pyte_screen = PyteScreen(cols, rows, history_lines=history_lines)
    model: HardenedScreen = pyte_screen.model
    model.buffer = grid(d.get("grid"))
    model.cursor = cursor(d.get("cursor"))
    model.mode = {_int(m, "mode", 0, 1 << 20) for m in _list(d.get("mode"), "mode", _MODES_MAX)}
    margins = d.get("margins")
    if margins is None:
        model.margins = None
    else:
        top, bottom = (_int(v, "margin", 0, rows - 1) for v in _list(margins, "margins", 2))
        if top >= bottom:
            raise ValueError("margins out of order")
        model.margins = Margins(top, bottom)
    model.tabstops = {
        _int(t, "tab stop", 0, cols - 1) for t in _list(d.get("tabstops"), "tabstops", cols)
    }
    model.charset = _int(d.get("charset"), "charset", 0, 1)
    model.g0_charset = _charset(d.get("g0"))
    model.g1_charset = _charset(d.get("g1"))
    saved = d.get("saved")
    if saved is None:
        model._saved = None
    else:
        s = _obj(saved, "saved")
        model._saved = Savepoint(
            cursor(s.get("cursor")),
            _charset(s.get("g0")),
            _charset(s.get("g1")),
            _int(s.get("charset"), "saved charset", 0, 1),
            _bool(s.get("origin"), "saved origin"),
            _bool(s.get("wrap"), "saved wrap"),
        )
    main = d.get("main")
    model.alt_active = _bool(d.get("alt_active"), "alt_active")
    if main is None:
        model._main = None
    else:
        m = _obj(main, "main")
        model._main = (grid(m.get("grid")), cursor(m.get("cursor")))
    if model.alt_active != (model._main is not None):
        raise ValueError("alternate screen without the main grid behind it")
    history = _list(d.get("history"), "history", max(history_lines, 0))
    model.history.clear()
    model.history.extend(_str(line, "history line", _LINE_MAX) for line in history)
    model.title = _str(d.get("title"), "title", MAX_OSC_PAYLOAD)
    model.icon_name = _str(d.get("icon_name"), "icon_name", MAX_OSC_PAYLOAD)
    model._last_char = _str(d.get("last_char"), "last_char", _CELL_DATA_MAX)
    model._glyph_set(model.cursor.attrs)
    model.changed = True
    model.dirty.update(range(rows))
    return pyte_screen


def _obj(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not an object")
    return value


def _list(value: object, what: str, limit: int) -> list[Any]:
    if not isinstance(value, list) or len(value) > limit:
        raise ValueError(f"{what} is not a list of at most {limit}")
    return value


def _int(value: object, what: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ValueError(f"{what} is not an integer in {low}..{high}")
    return value


def _bool(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{what} is not a boolean")
    return value


def _str(value: object, what: str, limit: int) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise ValueError(f"{what} is not a string of at most {limit} characters")
    return value


def _charset(value: object) -> str:
    # one of pyte's own translation tables, as the very object (the model compares them so)
    for table in cs.MAPS.values():
        if value == table:
            return table
    raise ValueError("charset is not one of the known tables")


def _attrs(value: object) -> tuple[Any, ...]:
    a = _list(value, "attrs", 8)
    if len(a) != 8:
        raise ValueError("attrs is not [fg, bg, bold, italics, underscore, strike, reverse, blink]")
    fg = _str(a[0], "fg", _COLOUR_MAX)
    bg = _str(a[1], "bg", _COLOUR_MAX)
    flags = tuple(_bool(v, "attribute flag") for v in a[2:])
    return (fg, bg, *flags)
