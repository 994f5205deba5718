"""History: the line-printer fast-forward, which turns scrolled-off output into history text
without drawing it cell by cell.

Layer rule: standard library, ``pyte`` and ``signaltty.core`` only; no I/O.
Spec: agents.md §7.6 (history of rows scrolled off the main grid), protocol.md §9 (5000 lines).

Output that only prints lines (``cat``, build logs, test runners) spends most of pyte's time
drawing cells that scroll off a moment later, where only their text survives, in
``HardenedScreen.history``. For a run of *simple* lines the grid behaves like a line printer
whose effect can be computed exactly from the text alone:

* simple means: text of width-1 characters, SGR and OSC sequences (pyte's own regex forms)
  and lines ended by ``CR LF``; no other control or sequence;
* the screen has no scroll region, autowrap on, insert mode off and no charset translation;
* the cursor starts at column 0 of the bottom row, on a row with no text (a line feed there
  has just scrolled): each line is then written on a blank bottom row, wraps every ``columns``
  cells, and every wrap and line feed scrolls the top row into history.

So the rows that leave are the current rows then the lines' chunks, in order; what stays is
the last ``rows - 1`` of them over a blank bottom row. Their *attributes* are not computed:
the rows left behind carry only text ("placeholder rows"). That is exact because the plan
always leaves the last lines that scroll at least ``rows`` times to pyte, which pushes every
placeholder row into history (where only text counts) before anything can show one. The
cursor's attributes are the SGR sequences folded from the last absolute one (``CSI 0 m``...),
the title and icon are the last OSC 0/1/2, and REP's last character is the last one printed.
"""

from __future__ import annotations

import re
import sys
from typing import Final, NamedTuple

from pyte import modes as mo
from pyte.screens import StaticDefaultDict

from signaltty.core.limits import MAX_OSC_PAYLOAD
from signaltty.term.screen import native
from signaltty.term.screen.cells import _BLANK, _LAT1, _NARROW, _NARROW_MAX, _WIDTH, _TextGrid
from signaltty.term.screen.parser import TolerantStream
from signaltty.term.screen.sgr import absolute_sgr
from signaltty.term.screen.state import HardenedScreen

_SGR: Final = r"\x1b\[[0-?]{0,256}+m"
_OSC: Final = rf"\x1b\][^\x00-\x1f\x7f]{{0,{MAX_OSC_PAYLOAD}}}+(?:\x07|\x1b\\)"
# The longest prefix made only of simple elements: one C-speed match, no backtracking; ASCII
# text first (a positive range is the fastest class for sre). Controls pyte ignores (NUL, BEL,
# DEL, C1...) are not simple: they are rare, and pyte drawing their line costs little.
_SIMPLE_RUN: Final = re.compile(rf"(?:[ -~]++|{_SGR}|\r\n|[^\x00-\x1f\x7f-\x9f]++|{_OSC})*+")
# Stripping a simple run: every ESC in it starts an SGR or OSC sequence. A pattern that starts
# with a literal ESC is searched at memchr speed; without OSC, ``ESC [^m]* m`` is the same
# match (SGR parameters hold no "m") and about twice as fast again.
_STRIP_SEQ: Final = re.compile(f"\\x1b(?:{_SGR[4:]}|{_OSC[4:]})")
_STRIP_SGR: Final = re.compile("\\x1b[^m]*m")

_SGR_PARAMS: Final = re.compile(r"\x1b\[([0-?]{0,256}+)m")
_OSC_BODY: Final = re.compile(rf"\x1b\]([^\x00-\x1f\x7f]{{0,{MAX_OSC_PAYLOAD}}}+)(?:\x07|\x1b\\)")
# Where a search for the last absolute SGR starts: "CSI 0 m", "CSI m", "CSI 0 ; ...".
_RESET_PREFIXES: Final = ("\x1b[0m", "\x1b[m", "\x1b[0;")
_SGR_WINDOW: Final = 8192
_CRLF: Final = "\r\n"


class LinePlan(NamedTuple):
    """What ``plan`` found at a position of the text.

    Attributes:
        kind: ``"prelude"`` — pyte must draw ``text[pos:upto]`` first (the rest of the
            cursor's line; the cursor is not yet on a blank bottom row); ``"fold"`` —
            ``fold`` can skip ``text[pos:upto]``; ``"none"`` — nothing to skip here.
        upto: end of the prelude, or where the kept lines start (pyte draws on from there).
        simple_end: index of the first element that is not simple (``len(text)`` if none).
        lines: the lines ``fold`` turns into history text.
    """

    kind: str
    upto: int
    simple_end: int
    lines: list[str]


def applicable(screen: HardenedScreen) -> bool:
    """True when the screen modes let simple lines act as a line printer."""
    mode = screen.mode
    table = screen.g1_charset if screen.charset else screen.g0_charset
    return screen.margins is None and mo.DECAWM in mode and mo.IRM not in mode and table is _LAT1


def simple_end_re(text: str, pos: int) -> int:
    """Index of the first element at or after ``pos`` that is not simple (pure Python)."""
    m = _SIMPLE_RUN.match(text, pos)
    return m.end() if m is not None else pos


def strip_re(text: str, start: int, stop: int) -> str:
    """The characters the simple run ``text[start:stop]`` draws, with its CR LF pairs (pure
    Python)."""
    run = text[start:stop]
    if "\x1b" in run:
        run = (_STRIP_SEQ if "\x1b]" in run else _STRIP_SGR).sub("", run)
    return run


# The native forms (native.py) when built: the same results, without sre's work per element.
_NATIVE_SIMPLE_END: Final = native.simple_end
_strip: Final = strip_re if native.strip is None else native.strip


def simple_end(text: str, pos: int) -> int:
    """Index of the first element at or after ``pos`` that is not simple."""
    if _NATIVE_SIMPLE_END is not None:
        return _NATIVE_SIMPLE_END(text, pos, MAX_OSC_PAYLOAD)
    return simple_end_re(text, pos)


def _at_bottom(screen: HardenedScreen) -> bool:
    cursor = screen.cursor
    return cursor.x == 0 and cursor.y == screen.lines - 1 and not screen.render_row(cursor.y)


def _narrow_limit(text: str, start: int, stop: int, stripped: str) -> int:
    """``stop``, or the first index in ``text[start:stop]`` of a drawn character that is not
    one cell wide (wide, zero-width, unprintable)."""
    if stripped.isascii():
        return stop
    odd = set(stripped).difference(_NARROW)
    odd.discard("\r")
    odd.discard("\n")
    bad = []
    for char in odd:
        if _WIDTH[char] == 1:
            if len(_NARROW) < _NARROW_MAX:
                _NARROW.add(char)
        else:
            bad.append(char)
    if not bad:
        return stop
    firsts = [i for i in (text.find(c, start, stop) for c in bad) if i >= 0]
    return min(firsts) if firsts else stop


def plan(screen: HardenedScreen, text: str, pos: int) -> LinePlan:
    """Look at the simple lines at ``text[pos:]`` without changing anything.

    Args:
        screen: the model, standing at ``pos`` with its parser at ground and
            ``applicable(screen)`` true.
        text: decoded output.
        pos: start index.
    """
    end = simple_end(text, pos)
    if not _at_bottom(screen):
        nl = text.find(_CRLF, pos, end)
        return LinePlan("prelude" if nl >= 0 else "none", nl + 2 if nl >= 0 else pos, end, [])
    last = text.rfind(_CRLF, pos, end)
    if last < 0:
        return LinePlan("none", pos, end, [])
    stop = last + 2
    stripped = _strip(text, pos, stop)
    limit = _narrow_limit(text, pos, stop, stripped)
    if limit < stop:
        end = limit
        last = text.rfind(_CRLF, pos, limit)
        if last < 0:
            return LinePlan("none", pos, end, [])
        stop = last + 2
        stripped = _strip(text, pos, stop)
    lines = stripped.split(_CRLF)
    lines.pop()  # the text ends with CR LF
    columns = screen.columns
    rows = screen.lines
    # Keep the shortest suffix of lines that scrolls at least ``rows`` times.
    scrolls = 0
    keep = len(lines)
    while keep and scrolls < rows:
        keep -= 1
        width = len(lines[keep])
        scrolls += (width + columns - 1) // columns if width > columns else 1
    if scrolls < rows or keep == 0:
        return LinePlan("none", pos, end, [])
    # The kept lines start after the CR LF that ends line ``keep - 1``.
    kept_at = stop
    for _ in range(len(lines) - keep + 1):
        kept_at = text.rfind(_CRLF, pos, kept_at)
    del lines[keep:]
    return LinePlan("fold", kept_at + 2, end, lines)


def fold(
    screen: HardenedScreen, stream: TolerantStream, text: str, pos: int, found: LinePlan
) -> None:
    """Apply a ``"fold"`` plan: the effect of ``text[pos:found.upto]`` on history, the rows
    (placeholder rows with exact text), the cursor, its attributes, REP's last character and
    the title, without drawing a cell."""
    _fold(screen, stream, text, pos, found.upto, found.lines)


def _chunks(lines: list[str], columns: int, need: int) -> tuple[list[str], int]:
    """The last ``need`` rows the lines occupy (each line split every ``columns`` cells, an
    empty line is one empty row) and the total row count, without building every row."""
    if not lines or max(map(len, lines)) <= columns:
        return lines[-need:] if need else [], len(lines)
    total = 0
    out: list[str] = []
    for line in reversed(lines):
        width = len(line)
        if width <= columns:
            total += 1
            if len(out) < need:
                out.append(line)
            continue
        count = (width + columns - 1) // columns
        total += count
        for k in range(count - 1, -1, -1):
            if len(out) >= need:
                break
            out.append(line[k * columns : (k + 1) * columns])
    out.reverse()
    return out, total


def _fold(
    screen: HardenedScreen,
    stream: TolerantStream,
    text: str,
    start: int,
    stop: int,
    lines: list[str],
) -> None:
    """The effect of ``text[start:stop]`` (the simple ``lines``, cursor on a blank bottom row):
    history, placeholder rows, cursor attributes, last character, title and icon."""
    rows = screen.lines
    columns = screen.columns
    history = screen.history
    # An unbounded history (``history_lines=None``) keeps every row that leaves.
    maxlen = history.maxlen if history.maxlen is not None else sys.maxsize // 2
    # In scroll order the rows are: the rows above the cursor, then every chunk of every line.
    # The first ``total`` of them leave (into history), the last ``rows - 1`` stay.
    need = maxlen + rows - 1
    tail, total = _chunks(lines, columns, need)
    buffer = screen.buffer
    held = buffer.texts if isinstance(buffer, _TextGrid) else {}
    texts: dict[int, str] = {}
    grid = _TextGrid(buffer.fill, texts)
    if total <= need:  # ``tail`` is every chunk
        above = [screen.render_row(y) for y in range(rows - 1)]
        pushed = (above + tail)[max(0, total - maxlen) : total]
        # Rows above the cursor that stay keep their cells (text alone cannot rebuild a row
        # with wide or combining characters) or their held text; absent rows stay absent
        # (the fill).
        for y in range(total, rows - 1):
            if y in held:
                texts[y - total] = held[y]
                continue
            row = buffer.get(y)
            if row is not None:
                grid[y - total] = row
        stays = tail
        first = max(0, rows - 1 - total)
    else:  # only the newest chunks matter: every older row has left history again
        pushed = tail[:maxlen]
        stays = tail[maxlen:]
        first = 0
    if not screen.alt_active and maxlen:
        if total <= need and any("\n" in row for row in above):
            # Only a hostile snapshot puts a line feed in a cell (a fold's own lines never
            # hold one): such rows go in one by one.
            history.extend([row.rstrip(" ") for row in pushed])
        else:
            history.extend_lazily(pushed)
    # Placeholder rows (width-1 characters only): exact text, blank attributes; pyte pushes
    # them into history before anything can show their attributes (see the module doc).
    # They are held as text and get cells only if something asks for them (``_TextGrid``).
    for y, row_text in enumerate(
        stays[len(stays) - (rows - 1 - first) :] if rows - 1 - first else [], first
    ):
        if row_text:
            texts[y] = row_text
        elif grid.fill != _BLANK:
            grid[y] = StaticDefaultDict(_BLANK)
    grid[rows - 1] = StaticDefaultDict(_BLANK)
    screen.buffer = grid
    screen.cursor.x = 0
    screen.cursor.y = rows - 1
    for line in reversed(lines):
        if line:
            screen._last_char = line[-1]
            break
    fold_sgr(screen, text, start, stop)
    for body in _OSC_BODY.findall(text, start, stop):
        stream._dispatch_osc(body)
    screen.changed = True


def fold_sgr(screen: HardenedScreen, text: str, start: int, stop: int) -> None:
    """Apply to the cursor the SGR sequences of ``text[start:stop]`` that still matter: those
    from the last absolute one (whose result does not depend on the attributes before it) on.

    Every ``ESC`` in the range starts a sequence (OSC and string bodies hold no ``ESC``), so a
    match of ``CSI ... m`` there is always a real SGR sequence.
    """
    if text.find("\x1b", start, stop) < 0:
        return
    begin = start
    hi = stop
    while hi > start:
        lo = max(start, hi - _SGR_WINDOW)
        at = max(text.rfind(prefix, lo, hi) for prefix in _RESET_PREFIXES)
        if at < 0:
            hi = lo + 3  # a prefix may straddle the window edge
            if lo == start:
                break
            continue
        m = _SGR_PARAMS.match(text, at, stop)
        if m is not None and absolute_sgr(m[1]):
            begin = at
            break
        hi = at
    apply = screen.apply_sgr
    for params in _SGR_PARAMS.findall(text, begin, stop):
        apply(params)
