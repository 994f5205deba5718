"""Frame elision: skip the writes a repainting TUI overwrites before anything reads them.

Layer rule: standard library, ``pyte`` and ``signaltty.core`` only; no I/O.
Spec: agents.md §7.6; design and figures: docs/decisions.md, "Screen engine" (issue 12).

A TUI that repaints rows in place (ratatui/Codex, Claude Code's redraws: ``CUP`` to a row,
text and SGR, ``EL``) and never clears rewrites the same cells frame after frame. Within a
*segment* of output where no row moves, a cell's final value is the last write to it, so a
write whose cells are all written again later in the segment is *dead*: the model ends the
same without it, provided nothing in between reads cells. ``scan`` follows the segment element
by element with an exact copy of the model's cursor rules (no cell is drawn), ``plan`` marks
each write dead or live from the right, and ``apply_skip`` replaces a stretch of elements
without a live write by its effect on the state that is not cells:

* the cursor position (also a pending wrap), from the simulation;
* the cursor's attributes: the stretch's SGR sequences from the last absolute one on;
* REP's last character: the last character drawn in the stretch;
* modes (``SM``/``RM``, DECSET/DECRST), ``ED 3``, titles and a G1 designation made while
  G0 is in use: replayed in order through the parser's own dispatchers.

Live writes and the elements around them are drawn by pyte as usual.

What the segment allows (anything else ends it: a *barrier*, which pyte draws):

* text of width-1 characters that fits on the cursor's row (no wrap), under no charset
  translation, insert mode off, origin mode off, on a screen of at least two rows;
* cursor moves (``CUP``, ``HVP``, ``CHA``, ``VPA``, ``CUU``/``CUD``/``CUF``/``CUB``, ``CNL``,
  ``CPL``, CR, BS, HT, a line feed or ``IND``/``NEL``/``RI`` that does not scroll);
* erases ``EL``, ``ECH``, ``ED 0/1/2`` (a full ``ED 2`` is always drawn: it sets the grid's
  fill), REP, SGR, OSC, modes other than IRM, LNM, DECOM and the screen switches, and every
  sequence pyte ignores.

Barriers: anything that moves rows (a scrolling line feed, ``IL``/``DL``/``SU``/``SD``,
``ICH``/``DCH``), a wrap, wide or zero-width characters, a cursor save or restore, tab stops,
margins, a change of the drawing charset, DECSTR, DECALN, RIS, and any ``ESC`` the tokenizer
might read differently from the parser ("pathologies"). A row holding the right half of a wide
character when the segment starts keeps all its writes (a write next to it would split the
character).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from operator import itemgetter
from typing import Any, Final, NamedTuple

from pyte import charsets as cs
from pyte import modes as mo

from signaltty.core.limits import MAX_OSC_PAYLOAD
from signaltty.term.screen import native
from signaltty.term.screen.cells import _BLANK, _DATA, _LAT1, _NARROW, _NARROW_MAX, _WIDTH
from signaltty.term.screen.fastforward import UNFINISHED
from signaltty.term.screen.history import fold_sgr
from signaltty.term.screen.parser import TolerantStream
from signaltty.term.screen.sgr import _PARAM_MAX
from signaltty.term.screen.state import _ALT_MODES, HardenedScreen

# The ranges TUIs draw with that are all one cell wide (ASCII, Latin-1, dashes and dots,
# quotes and primes (Codex's prompt ›), arrows, media controls (Claude Code's ⏵), box
# drawing, blocks and geometric shapes (●), dingbats (Claude Code's spinner ✢✳✶✻✽, ❯),
# braille; tests/term checks each against ``_WIDTH``): text within them needs no width
# lookup per character, only C-speed regex classes and the native loop.
NARROW_RANGES: Final = (
    (0x20, 0x7E), (0xA0, 0xFF), (0x2010, 0x2027), (0x2030, 0x205E), (0x2190, 0x21FF),
    (0x23F4, 0x23FF), (0x2500, 0x25FC), (0x2722, 0x2727), (0x2729, 0x274B), (0x2758, 0x2794),
    (0x2800, 0x28FF),
)  # fmt: skip
_NARROW_CLASS: Final = "".join(f"{chr(a)}-{chr(b)}" for a, b in NARROW_RANGES)
# One element as the parser reads it: its regex forms, alternative by alternative.
# 1-4: the usual row repaint as one element (CUP, then optionally a paint and EL 0);
# 5: a run of text and SGR sequences ("paint"); 6-8: any other CSI; 9: a control but ESC;
# 10: OSC body; (no group): DCS/SOS/PM/APC; 11-12: ESC with intermediates; 13: ESC final.
_PAINT: Final = r"(?:[^\x00-\x1f\x7f-\x9f]++|\x1b\[[0-?]{0,256}+m)++"
# The paint right after a CUP takes only characters of the narrow ranges, so that its width
# is its length less its SGR sequences: a character outside them ends it, and the paint
# element (5) that follows checks its width.
_NARROW_PAINT: Final = rf"(?:[{_NARROW_CLASS}]++|\x1b\[[0-?]{{0,256}}+m)++"
_ELEMENT: Final = re.compile(
    rf"\x1b\[([0-9]{{0,4}}+)(?:;([0-9]{{0,4}}+))?+[Hf]({_NARROW_PAINT})?+(\x1b\[0?K)?+"
    rf"|({_PAINT})"
    r"|\x1b\[([0-?]{0,256})([ -/]{0,16})([@-~])"
    r"|([\x00-\x1a\x1c-\x1f\x7f-\x9f])"
    rf"|\x1b\]([^\x00-\x1f\x7f]{{0,{MAX_OSC_PAYLOAD}}})(?:\x07|\x1b\\)"
    r"|\x1b[PX^_][^\x18\x1a\x1b]*\x1b\\"
    r"|\x1b(?:([ -/]{1,16})([0-~])|([0-OQ-WYZ\\`-~]))"
)
_STRIP_SGR: Final = re.compile("\x1b[^m]*m")
# The native strip (native.py): on a paint, where every ESC starts an SGR sequence, the same
# result as ``_STRIP_SGR.sub("", run)``, read straight from the text without slicing it.
_NATIVE_STRIP: Final = native.strip
# The native loop over the common elements (row repaints, narrow paints, memoized free CSIs
# and mode events): the same records and state as the loop below, which goes on where it stops.
_NATIVE_ROWS: Final = native.scan_rows
_NATIVE_PLAN: Final = native.plan_live
_ROW: Final = itemgetter(1)
# An SGR with a parameter that sets a background colour (40-48, 100-107); a 256-colour index
# of that value also matches, which only keeps an erase live.
_BG_SGR: Final = re.compile(r"\x1b\[(?:[0-9:;]*[;:])?(?:4[0-8]|10[0-7])(?:[;:][0-9:;]*)?m")
# A character outside the narrow ranges: one search instead of a set lookup per character.
_ODD: Final = re.compile(f"[^{_NARROW_CLASS}]")
_INT_PARAMS: Final = re.compile("[0-9;]*")
_ESC: Final = "\x1b"
_AT: Final = itemgetter(0)

# Kinds of writes.
WRITE: Final = 1
PINNED: Final = 2  # always drawn: a full ED 2 also sets the grid's fill

# Mode keys (pyte's: private modes << 5) whose change a segment cannot follow.
_BARRIER_MODES: Final = frozenset({mo.IRM, mo.LNM, mo.DECOM}) | frozenset(
    m << 5 for m in _ALT_MODES
)


class Segment(NamedTuple):
    """Result of ``scan``.

    Attributes:
        start: where the segment starts.
        writes: ``(start, end, kind, x, y, last)`` per element that writes cells (kind
            ``WRITE`` or ``PINNED``): its span in the text and the cursor column
            (``columns`` for a pending wrap), row and REP's character *before* it.
        spans: ``(write, row, first, stop)`` per written range of cells, in order; an erase
            of a whole row has ``stop = columns + 1`` (it also resets the row's default cell).
        events: ``(start, event)`` per replayable element, in order: ``("csi", params,
            inter, final)``, ``("esc", inter, final)`` or ``("osc", body)``.
        blocker: ``(reason, start, end)`` of the element that ended the segment, or None.
        end: where the segment ends (a blocker, an unfinished sequence, or the text's end).
        state: ``(x, y, last)`` at ``end``.
        bg_free: no SGR between ``start`` and ``end`` may set a background colour, so every
            erase in the segment blanks with the background the cursor has at ``start``.
    """

    start: int
    writes: list[tuple[int, int, int, int, int, str]]
    spans: list[tuple[int, int, int, int]]
    events: list[tuple[int, tuple[str, ...]]]
    blocker: tuple[str, int, int] | None
    end: int
    state: tuple[int, int, str]
    bg_free: bool = False


def applicable(screen: HardenedScreen) -> bool:
    """True when the screen's modes let a segment be followed without drawing."""
    mode = screen.mode
    table = screen.g1_charset if screen.charset else screen.g0_charset
    return (
        table is _LAT1
        and mo.IRM not in mode
        and mo.DECOM not in mode
        and screen.lines > 1
        and screen.columns > 1
    )


# Operation codes of CSI sequences (memoized per sequence text in ``_OPS``).
_FREE_OP: Final = 0
_CUP: Final = 1
_CHA: Final = 2
_VPA: Final = 3
_CUU: Final = 4
_CUD: Final = 5
_CUF: Final = 6
_CUB: Final = 7
_EL: Final = 8
_ECH: Final = 9
_ED: Final = 10
_REP: Final = 11
_EVENT_OP: Final = 12
_CLEAR_WRAP: Final = 13
_BARRIER: Final = 14
_OPS: dict[str, tuple[int, int, int, str]] = {}
_OPS_MAX: Final = 4096
# Spans one segment may record before it ends at the next element. Every erase of the display
# records a span per row: ``CSI J`` (3 bytes) repeated over a 128K-char window at 200 rows made
# 8.7 M spans, ~0.8 GB at once (attack pass, session 11). With the bound a segment holds about
# 1.6 MB of spans and the element that would exceed it is drawn as a barrier.
_SPANS_MAX: Final = 16384
# CUP parameters → (y, x) per screen size: a repainting TUI moves to the same few hundred places.
_CUPS: dict[tuple[int, int], dict[tuple[Any, ...], tuple[int, int]]] = {}


def _values(params: str) -> tuple[int, ...]:
    """``TolerantStream._values``: numeric parameters, empty → 0, clamped; ``()`` if not."""
    if not _INT_PARAMS.fullmatch(params):
        return ()
    return tuple(min(int(p), _PARAM_MAX) if p else 0 for p in params.split(";"))


def _count(value: int, limit: int) -> int:
    return min(value, limit) if value > 0 else 1


def _csi_op(params: str, inter: str, final: str) -> tuple[int, int, int, str]:
    """``(code, a, b, detail)`` for ``CSI params inter final``, mirroring
    ``TolerantStream._dispatch_csi`` and the ``HardenedScreen`` handler it calls."""
    if inter:
        return (_BARRIER, 0, 0, "decstr") if inter == "!" and final == "p" else (_FREE_OP, 0, 0, "")
    if final == "m":
        return (_FREE_OP, 0, 0, "")  # SGR: folded
    marker = params[:1]
    if marker in ("<", "=", ">", "?"):
        params = params[1:]
    else:
        marker = ""
    values = _values(params)
    if not values:
        return (_FREE_OP, 0, 0, "")
    if marker == "?" and final in "JK":
        marker = ""  # DECSED/DECSEL: erase_in_display/line(private=True) act alike
    if marker:
        if marker == "?" and final in "hl":
            if {v << 5 for v in values} & _BARRIER_MODES:
                return (_BARRIER, 0, 0, "mode")
            return (_EVENT_OP, 0, 0, "")
        return (_FREE_OP, 0, 0, "")
    if (final in "su" and params) or (final == "T" and len(values) > 1):
        return (_FREE_OP, 0, 0, "")  # DECSLRM, mouse highlight tracking
    v = values[0]
    if final in "Hf":
        return (_CUP, v, values[1] if len(values) > 1 else 0, "")
    simple = {
        "G": _CHA, "`": _CHA, "d": _VPA, "A": _CUU, "F": _CUU, "B": _CUD, "e": _CUD,
        "E": _CUD, "C": _CUF, "a": _CUF, "D": _CUB, "X": _ECH, "b": _REP,
    }  # fmt: skip
    code = simple.get(final)
    if code is not None:
        return (code, v, 1 if final in "EF" else 0, "")
    if final == "K":
        return (_EL, v, 0, "") if v <= 2 else (_CLEAR_WRAP, 0, 0, "")
    if final == "J":
        if v <= 2:
            return (_ED, v, 0, "")
        return (_EVENT_OP, 1, 0, "") if v == 3 else (_CLEAR_WRAP, 0, 0, "")
    if final in "hl":
        if set(values) & _BARRIER_MODES:
            return (_BARRIER, 0, 0, "mode")
        return (_EVENT_OP, 0, 0, "")
    if final in "@PLMST":
        return (_BARRIER, 0, 0, "rows")
    if final in "rsug":
        return (_BARRIER, 0, 0, "state")
    return (_FREE_OP, 0, 0, "")  # DSR, DA, window ops...: nothing on the screen


def _narrow(vis: str) -> bool:
    """True when every character of ``vis`` is one cell wide."""
    if _ODD.search(vis) is None or _NARROW.issuperset(vis):
        return True
    for char in set(vis).difference(_NARROW):
        if _WIDTH[char] != 1:
            return False
        if len(_NARROW) < _NARROW_MAX:
            _NARROW.add(char)
    return True


def scan(screen: HardenedScreen, text: str, pos: int) -> Segment:  # noqa: C901, PLR0912, PLR0915
    """Follow ``text[pos:]`` from the screen's state up to the first barrier, drawing nothing.

    Args:
        screen: the model standing at ``pos`` (parser at ground), ``applicable(screen)``.
        text: decoded output.
        pos: start index.
    """
    columns = screen.columns
    lines = screen.lines
    margins = screen.margins
    top, bottom = (margins.top, margins.bottom) if margins else (0, lines - 1)
    lnm = mo.LNM in screen.mode
    stops = sorted(screen.tabstops)
    g0, g1, shifted = screen.g0_charset, screen.g1_charset, screen.charset
    cursor = screen.cursor
    x = cursor.x
    y = cursor.y
    last = screen._last_char
    writes: list[tuple[int, int, int, int, int, str]] = []
    spans: list[tuple[int, int, int, int]] = []
    events: list[tuple[int, tuple[str, ...]]] = []
    put = spans.append
    # An erase of a whole row replaces the row (its default cell too, which a wider screen
    # shows): its span takes one more column past the edge, which only another such erase
    # covers.
    reset = columns + 1
    match = _ELEMENT.match
    ops = _OPS
    strip = _STRIP_SGR.sub
    c_strip = _NATIVE_STRIP
    cups = _CUPS.get((lines, columns))
    if cups is None or len(cups) >= _OPS_MAX:
        if len(_CUPS) >= 8:
            _CUPS.clear()
        cups = _CUPS[lines, columns] = {}
    n = len(text)
    p = pos
    blocker: tuple[str, int, int] | None = None
    rows = _NATIVE_ROWS if max(columns, lines) <= native.SIDE_MAX else None
    while p < n:
        if rows is not None:
            p, x, y, last = rows(
                text, p, columns, lines, x, y, last, writes, spans, events, ops, _SPANS_MAX
            )
            if p >= n:
                break
        m = match(text, p)
        if m is None:
            if UNFINISHED.match(text, p) is None:
                nxt = text.find(_ESC, p + 1)
                blocker = ("pathology", p, nxt if nxt >= 0 else n)
            break
        e = m.end()
        if len(spans) > _SPANS_MAX:
            blocker = ("spans", p, e)
            break
        k = m.lastindex
        if k is not None and k <= 4:  # CUP [narrow paint] [EL]
            key = m.group(1, 2)
            yx = cups.get(key)
            if yx is None:
                row, col = key
                yx = cups[key] = (
                    min(max(int(row or 1) - 1, 0), lines - 1),
                    min(max(int(col or 1) - 1, 0), columns - 1),
                )
            y, x = yx
            run, erase = m.group(3, 4)
            if run is not None:
                if c_strip is not None:
                    vis = c_strip(text, m.start(3), m.end(3))
                else:
                    vis = strip("", run) if _ESC in run else run
                if vis:
                    width = len(vis)
                    if x + width > columns:
                        # Let the general path find the barrier inside.
                        e = m.start(3)
                        erase = None
                    elif erase is None:
                        put((len(writes), y, x, x + width))
                        writes.append((m.start(3), e, WRITE, x, y, last))
                        x += width
                        last = vis[-1]
                    else:  # the paint and EL 0 write the row from x on: one write
                        put((len(writes), y, x, columns))
                        writes.append((m.start(3), e, WRITE, x, y, last))
                        x = min(x + width, columns - 1)
                        last = vis[-1]
                        erase = None
            if erase is not None:
                if x >= columns:
                    x = columns - 1
                put((len(writes), y, x, columns if x else reset))
                writes.append((m.start(4), e, WRITE, x, y, last))
        elif k == 5:
            if c_strip is not None:
                vis = c_strip(text, p, e)
            else:
                run = m[5]
                vis = strip("", run) if _ESC in run else run
            if vis:
                width = len(vis)
                if x + width > columns:
                    blocker = ("wrap", p, e)
                    break
                if not _narrow(vis):
                    blocker = ("wide", p, e)
                    break
                put((len(writes), y, x, x + width))
                writes.append((p, e, WRITE, x, y, last))
                x += width
                last = vis[-1]
        elif k == 8:
            op = ops.get(m[0])
            if op is None:
                if len(ops) >= _OPS_MAX:
                    ops.clear()
                op = ops[m[0]] = _csi_op(m[6], m[7], m[8])
            code, v, w, detail = op
            if code == _CUP:
                y = min(max((v or 1) - 1, 0), lines - 1)
                x = min(max((w or 1) - 1, 0), columns - 1)
            elif code == _EVENT_OP:
                if v:  # ED 3 ends a pending wrap too
                    x = min(x, columns - 1)
                events.append((p, ("csi", m[6], m[7], m[8])))
            elif code == _EL:
                if x >= columns:
                    x = columns - 1
                first = 0 if v else x
                stop = columns if v != 1 else x + 1
                put((len(writes), y, first, reset if not first and stop == columns else stop))
                writes.append((p, e, WRITE, x, y, last))
            elif code == _CHA:
                x = min(max((v or 1) - 1, 0), columns - 1)
            elif code == _FREE_OP:
                pass
            elif code == _CUU:
                y = max(y - _count(v, lines), top if y >= top else 0)
                x = 0 if w else min(x, columns - 1)
            elif code == _CUD:
                y = min(y + _count(v, lines), bottom if y <= bottom else lines - 1)
                x = 0 if w else min(x, columns - 1)
            elif code == _CUF:
                x = min(x + _count(v, columns), columns - 1)
            elif code == _CUB:
                x = max(min(x, columns - 1) - _count(v, columns), 0)
            elif code == _VPA:
                y = min(max((v or 1) - 1, 0), lines - 1)
                x = min(x, columns - 1)
            elif code == _ECH:
                if x >= columns:
                    x = columns - 1
                stop = min(x + _count(v, columns), columns)
                put((len(writes), y, x, reset if not x and stop == columns else stop))
                writes.append((p, e, WRITE, x, y, last))
            elif code == _ED:
                if x >= columns:
                    x = columns - 1
                i = len(writes)
                if v == 0:
                    put((i, y, x, columns if x else reset))
                    for row in range(y + 1, lines):
                        put((i, row, 0, reset))
                elif v == 1:
                    for row in range(y):
                        put((i, row, 0, reset))
                    put((i, y, 0, x + 1 if x + 1 < columns else reset))
                else:
                    for row in range(lines):
                        put((i, row, 0, reset))
                writes.append((p, e, PINNED if v == 2 else WRITE, x, y, last))
            elif code == _REP:
                if last:
                    if x >= columns or _WIDTH[last] != 1:
                        blocker = ("wrap", p, e)
                        break
                    count = _count(v, max(columns - x, 1))
                    put((len(writes), y, x, x + count))
                    writes.append((p, e, WRITE, x, y, last))
                    x += count
            elif code == _CLEAR_WRAP:
                x = min(x, columns - 1)
            else:
                blocker = (detail, p, e)
                break
        elif k == 9:
            char = m[9]
            if char == "\r":
                x = 0
            elif char == "\n" or char == "\x0b" or char == "\x0c":
                if y == bottom:
                    blocker = ("scroll", p, e)
                    break
                if y < lines - 1:
                    y += 1
                if lnm:
                    x = 0
            elif char == "\x08":
                x = max(min(x, columns - 1) - 1, 0)
            elif char == "\t":
                at = bisect_right(stops, x)
                x = min(stops[at] if at < len(stops) else columns - 1, columns - 1)
            elif char == "\x0e" or char == "\x0f":
                blocker = ("charset", p, e)
                break
        elif k == 10:
            events.append((p, ("osc", m[10])))
        elif k == 12:
            inter, final = m[11], m[12]
            if inter == "(" or inter == ")":
                # A designation that changes nothing (``ESC ( B`` again) is free; one of
                # G1 while G0 is shifted in is replayed; any other is a barrier.
                table = cs.MAPS.get(final)
                if table is not None and table is not (g0 if inter == "(" else g1):
                    if inter == "(" or shifted:
                        blocker = ("charset", p, e)
                        break
                    events.append((p, ("esc", inter, final)))
                    g1 = table
            elif inter == "#" and final == "8":
                blocker = ("state", p, e)
                break
        elif k == 13:
            final = m[13]
            if final == "D" or final == "E":
                if y == bottom:
                    blocker = ("scroll", p, e)
                    break
                if y < lines - 1:
                    y += 1
                if final == "E":
                    x = 0
            elif final == "M":
                if y == top:
                    blocker = ("scroll", p, e)
                    break
                if y > 0:
                    y -= 1
            elif final in "78Hc":
                blocker = ("state", p, e)
                break
        p = e
    bg_free = _BG_SGR.search(text, pos, p) is None
    return Segment(pos, writes, spans, events, blocker, p, (x, y, last), bg_free)


def plan(screen: HardenedScreen, segment: Segment) -> bytearray:
    """Mark each write of ``segment`` live (1) or dead (0).

    A write is dead when every cell it writes is written again later in the segment; a
    pinned write is always live.
    """
    writes = segment.writes
    buffer = screen.buffer
    # A row with a wide character's right half: a write next to it splits the character, so
    # its writes are kept (the segment's own characters are all one cell wide).
    stubby = set()
    used = set(map(_ROW, segment.spans))
    has_stub = native.has_stub
    for y in used:
        row = buffer.get(y)
        if row is None:
            continue
        if has_stub(row) if has_stub is not None else "" in map(_DATA, row.values()):
            stubby.add(y)
    # An erase of a whole row (``stop`` past the edge) also sets the row's default cell: it
    # can show only if that differs from what the row has, which it cannot while every erase
    # blanks with the plain background and the row's default is the plain blank already.
    columns = screen.columns
    plain = segment.bg_free and screen.cursor.attrs.bg == "default"
    lines = screen.lines
    if _NATIVE_PLAN is not None and max(columns, lines) <= native.SIDE_MAX:
        rows_plain = bytearray(lines)
        if plain:
            for y in used:
                row = buffer.get(y)
                if (buffer.fill if row is None else row.default) == _BLANK:
                    rows_plain[y] = 1
        rows_stubby = bytearray(lines)
        for y in stubby:
            rows_stubby[y] = 1
        return _NATIVE_PLAN(writes, segment.spans, lines, columns, rows_plain, rows_stubby)
    live = bytearray(len(writes))
    cover: dict[int, int] = {}
    get = cover.get
    for index, y, first, stop in reversed(segment.spans):
        if stop > columns and plain:
            row = buffer.get(y)
            if (buffer.fill if row is None else row.default) == _BLANK:
                stop = columns
        if stop <= first:
            continue
        bits = (1 << stop) - (1 << first)
        have = get(y, 0)
        if have & bits != bits or y in stubby:
            live[index] = 1
        cover[y] = have | bits
    for index, write in enumerate(writes):
        if write[2] == PINNED:
            live[index] = 1
    return live


def apply_skip(
    screen: HardenedScreen,
    stream: TolerantStream,
    text: str,
    segment: Segment,
    a: int,
    b: int,
    state: tuple[int, int, str],
) -> None:
    """Skip ``text[a:b]`` (elements of ``segment`` with no live write): replay its events,
    fold its SGR sequences, and set the cursor and REP's character to ``state``.

    Of identical CSI events (modes, ``ED 3``) only the last is replayed: each sets state that
    the last one sets again (a mode's membership, the cursor's visibility, an empty history;
    nothing scrolls inside a segment), so the earlier ones cannot show. A TUI that brackets
    every frame with ``?2026h``/``?2026l`` and ``?25l``/``?25h`` leaves four per frame."""
    events = segment.events
    first = bisect_left(events, a, key=_AT)
    chosen = events[first : bisect_left(events, b, first, key=_AT)]
    if len(chosen) > 2:
        seen: set[tuple[str, ...]] = set()
        kept = []
        for item in reversed(chosen):
            event = item[1]
            if event[0] == "csi":
                if event in seen:
                    continue
                seen.add(event)
            kept.append(item)
        kept.reverse()
        chosen = kept
    for _at, event in chosen:
        if event[0] == "osc":
            stream._dispatch_osc(event[1])
        elif event[0] == "esc":
            stream._dispatch_esc(event[1], event[2])
        else:
            stream._dispatch_csi(event[1], event[2], event[3])
    fold_sgr(screen, text, a, b)
    x, y, last = state
    cursor = screen.cursor
    cursor.x = x
    cursor.y = y
    if last:
        screen._last_char = last
