"""Fast-forward to full clears of the alternate screen.

Layer rule: standard library, ``pyte`` and ``signaltty.core`` only; no I/O.
Spec: agents.md §7.6.

A full-screen program on the alternate screen repaints from a clear (``CSI H CSI 2 J``) again
and again; whatever it drew on the alternate grid before the last clear is gone. Skipping that
output is exact when everything else it could have changed is known:

* the alternate grid and the cursor position: replaced by the clear and the absolute cursor
  move next to it (``CUP`` then ``ED 2``, or ``ED 2`` then ``CUP``);
* the main grid and history: untouched on the alternate screen (no line feed or scroll there
  reaches history), except ``ED 3``, which is replayed;
* modes, margins, charsets, the DECRC restore, DECSTR, DECALN, ``TBC 3``, SO/SI, titles: each
  such sequence is replayed through the parser's own dispatchers, in order;
* the cursor's attributes: the SGR sequences from the last absolute one on (``fold_sgr``);
* REP's last character: the last character drawn before the clear.

The scan refuses to skip past anything whose effect depends on the skipped drawing: a cursor
save (DECSC, ``CSI s``: the saved position), a tab stop set or cleared at the cursor, a switch
of screens, RIS (which leaves the alternate screen), and any ``ESC`` that pyte's tokenizer
might read differently from these regexes (a "pathology", e.g. a control inside a CSI). Those
are "blockers": the caller lets pyte draw through them and scans again after them.

Plain text, C0 controls and every grid-only sequence are skipped over by one possessive regex
(``_HARMLESS``), so the Python work is per event (mode change, clear), not per byte.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from pyte import charsets as cs

from signaltty.core.limits import MAX_OSC_PAYLOAD
from signaltty.term.screen import native
from signaltty.term.screen.cells import _WIDTH
from signaltty.term.screen.history import fold_sgr
from signaltty.term.screen.parser import _CSI_RE, _ESC_RE, _OSC_RE, _STRING_RE, TolerantStream
from signaltty.term.screen.state import _ALT_MODES, HardenedScreen

_ESC: Final = "\x1b"

# Runs pyte turns into grid/cursor changes only, or ignores (alternate screen: no history).
# Each alternative matches exactly the span pyte's fast path reads as one element.
_HARMLESS: Final = re.compile(
    r"(?:"
    r"[^\x00-\x1f\x7f-\x9f]++"  # text
    r"|[\x00-\x0d\x10-\x1a\x1c-\x1f\x7f-\x9f]"  # C0 but SO, SI, ESC; C1 (ignored)
    r"|\x1b\[[0-?]{0,256}+m"  # SGR (folded separately)
    r"|\x1b\[[0-9;]{0,256}+[@-IK-fi-km-qtv-~]"  # CSI but ED, TBC, SM, RM, DECSTBM, SCOSC, SCORC
    r"|\x1b\[(?!0*+[23](?:;|J))[0-9;]{0,256}+J"  # ED 0, 1 (2 is a clear, 3 erases history)
    r"|\x1b\[\?[0-9;]{0,256}+[@-IK-gi-km-~]"  # DEC private but DECSET, DECRST, DECSED
    r"|\x1b\[[<=>][0-?]{0,255}+[@-~]"  # other private markers: ignored
    r"|\x1b\[[0-?]{0,256}+(?!!p)[ -/]{1,16}+[@-~]"  # intermediates: ignored but DECSTR
    r"|\x1b[0-69-GI-OQ-WYZ\\`-bd-~]"  # ESC final: IND, NEL, RI, keypad...; not 7 8 H c
    r"|\x1b[PX^_][^\x18\x1a\x1b]*+\x1b\\"  # DCS, SOS, PM, APC: ignored
    r")*+"
)
# The same run read by the native loop (native.py), when built.
_NATIVE_HARMLESS: Final = native.harmless_end
# A sequence that has not ended yet at the end of the text (more output will complete it).
UNFINISHED: Final = re.compile(
    rf"\x1b(?:\[[0-?]{{0,256}}[ -/]{{0,16}}|\][^\x00-\x1f\x7f]{{0,{MAX_OSC_PAYLOAD}}}\x1b?"
    r"|[PX^_][^\x18\x1a\x1b]*\x1b?|[ -/]{0,16})\Z"
)
# A switch between the main and the alternate screen (DECSET/DECRST 47, 1047, 1049).
SCREEN_SWITCH: Final = re.compile(r"\x1b\[\?(?:[0-9;]*;)?(?:1049|1047|47)(?:;[0-9;]*)?[hl]")
_CUP_BEFORE: Final = re.compile(r"\x1b\[[0-9;]{0,16}[Hf]\Z")
_CUP_AT: Final = re.compile(r"\x1b\[[0-9;]{0,16}[Hf]")
# Every element that draws nothing, to find the characters drawn before a clear.
_NOT_DRAWN: Final = re.compile(
    rf"\x1b(?:\[[0-?]{{0,256}}[ -/]{{0,16}}[@-~]|\][^\x00-\x1f\x7f]{{0,{MAX_OSC_PAYLOAD}}}"
    r"(?:\x07|\x1b\\)|[PX^_][^\x18\x1a\x1b]*\x1b\\|[ -/]{0,16}[0-~])|[\x00-\x1f\x7f-\x9f]"
)
_LAST_CHAR_WINDOW: Final = 4096
# Any ED, whatever its parameters: text without one holds no clear to cut to.
_ANY_ED: Final = re.compile(r"\x1b\[[0-?]*[ -/]*J")


class Scan(NamedTuple):
    """Result of ``scan``.

    Attributes:
        events: replayable elements before ``cut`` (or before the blocker), in order:
            ``(kind, start, end)`` with kind ``"csi"``, ``"esc"``, ``"osc"`` or ``"c0"``.
        cut: ``(start, end)`` of the last clear (CUP + ED 2 or ED 2 + CUP) before the first
            blocker, or None.
        blocker: ``(reason, start, end)`` of the first element the scan cannot skip past, or
            None; for a pathology ``end`` is the next ``ESC`` (where pyte is sure to restart).
        end: where the scan stopped (``len(text)``, a blocker, or an unfinished sequence).
    """

    events: list[tuple[str, int, int]]
    cut: tuple[int, int] | None
    blocker: tuple[str, int, int] | None
    end: int


def may_clear(text: str, pos: int) -> bool:
    """False when ``text[pos:]`` holds no ED at all, so ``scan`` could find no cut in it (one
    C-speed search; a repaint-only TUI never clears, and its windows skip the scan)."""
    # An ED ends in "J", and its CSI starts at the last "ESC [" before that "J" (ESC is
    # neither a parameter nor an intermediate byte): a memchr-speed find per "J" instead of a
    # regex search that tries every "ESC [" of a window (17 % of a repaint-only TUI's ingest).
    i = text.find("J", pos)
    while i >= 0:
        j = text.rfind("\x1b[", pos, i)
        if j >= 0 and _ANY_ED.fullmatch(text, j, i + 1) is not None:
            return True
        i = text.find("J", i + 1)
    return False


def scan(text: str, pos: int) -> Scan:
    """Find the last clear of the alternate grid in ``text[pos:]`` that can be skipped to.

    Args:
        text: decoded output; the parser is at ground at ``pos`` and the screen is on the
            alternate grid.
        pos: start index.
    """
    events: list[tuple[str, int, int]] = []
    cut: tuple[int, int] | None = None
    cut_events = 0
    n = len(text)
    harmless = _HARMLESS.match
    native_harmless = _NATIVE_HARMLESS
    while True:
        if native_harmless is not None:
            p = native_harmless(text, pos)
        else:
            m = harmless(text, pos)
            assert m is not None  # ``(?:…)*+`` matches, if only the empty string, everywhere
            p = m.end()
        if p >= n:
            return Scan(events[:cut_events], cut, None, n)
        char = text[p]
        if char != _ESC:  # SO or SI
            events.append(("c0", p, p + 1))
            pos = p + 1
            continue
        kind = text[p + 1 : p + 2]
        if kind == "[":
            m = _CSI_RE.match(text, p)
            if m is None:
                break
            params, inter, final = m.groups()
            end = m.end()
            reason = csi_kind(params, inter, final)
            if reason == "clear":
                before = _CUP_BEFORE.search(text, max(pos, p - 20), p)
                if before is not None:
                    cut, cut_events = (before.start(), end), len(events)
                else:
                    after = _CUP_AT.match(text, end)
                    if after is not None:
                        cut, cut_events = (p, after.end()), len(events)
                        end = after.end()
            elif reason == "event":
                events.append(("csi", p, end))
            elif reason != "skip":
                return Scan(events[:cut_events], cut, (reason, p, end), p)
            pos = end
        elif kind == "]":
            m = _OSC_RE.match(text, p)
            if m is None:
                break
            events.append(("osc", p, m.end()))
            pos = m.end()
        elif kind and kind in "PX^_":
            m = _STRING_RE.match(text, p)
            if m is None:
                break
            pos = m.end()
        else:
            m = _ESC_RE.match(text, p)
            if m is None:
                break
            inter, final = m[1] or "", m[2] or m[3]
            if not inter:
                if final in "7Hc":
                    reason = {"7": "cursor-save", "H": "tab-stop", "c": "ris"}[final]
                    return Scan(events[:cut_events], cut, (reason, p, m.end()), p)
                if final == "8":
                    events.append(("esc", p, m.end()))
            elif (inter == "#" and final == "8") or inter in ("(", ")"):
                events.append(("esc", p, m.end()))
            pos = m.end()
    # An ESC the regexes do not read as pyte does, or the start of an unfinished sequence.
    if UNFINISHED.match(text, p):
        return Scan(events[:cut_events], cut, None, p)
    nxt = text.find(_ESC, p + 1)
    return Scan(events[:cut_events], cut, ("pathology", p, nxt if nxt >= 0 else n), p)


_KINDS: dict[tuple[str, str, str], str] = {}


def csi_kind(params: str, inter: str, final: str) -> str:
    """``"skip"`` (grid only or ignored), ``"event"`` (replayed), ``"clear"`` (ED 2) or the
    reason it blocks a cut; mirrors ``TolerantStream._dispatch_csi`` (memoized)."""
    key = (params, inter, final)
    kind = _KINDS.get(key)
    if kind is None:
        if len(_KINDS) >= 4096:
            _KINDS.clear()
        kind = _KINDS[key] = _classify_csi(params, inter, final)
    return kind


def _classify_csi(params: str, inter: str, final: str) -> str:
    if inter:
        return "event" if inter == "!" and final == "p" else "skip"
    if final == "m":
        return "skip"
    marker = params[:1]
    if marker in ("<", "=", ">", "?"):
        params = params[1:]
    else:
        marker = ""
    digits = params.replace(";", "")
    if digits and not (digits.isascii() and digits.isdigit()):
        return "skip"  # not numeric: pyte ignores it
    first = int(params.split(";", 1)[0] or 0)
    if marker:
        if marker != "?":
            return "skip"
        if final in "hl":
            modes = {int(v or 0) for v in params.split(";")}
            return "screen-switch" if modes & _ALT_MODES else "event"
        if final == "J":
            return "clear" if first == 2 else "event" if first == 3 else "skip"
        return "skip"
    if final in "su":
        if params:
            return "skip"
        return "cursor-save" if final == "s" else "event"
    if final in "hlr":
        return "event"
    if final == "g":
        return "event" if first == 3 else "tab-stop" if first == 0 else "skip"
    if final == "J":
        return "clear" if first == 2 else "event" if first == 3 else "skip"
    return "skip"


def last_drawn(text: str, start: int, stop: int) -> tuple[str, int]:
    """The last character ``text[start:stop]`` draws (what REP repeats), before charset
    translation, and its index; ``("", -1)`` when nothing is drawn there.

    Windows of a few KiB are stripped of sequences, newest first. Every ``ESC`` starts a
    sequence, so a window that starts at one is read exactly as pyte reads it.
    """
    hi = stop
    while hi > start:
        lo = start
        if hi - start > _LAST_CHAR_WINDOW:
            at = text.rfind(_ESC, start, hi - _LAST_CHAR_WINDOW)
            lo = at if at >= 0 else start
        runs: list[tuple[int, int]] = []
        at_end = lo
        for m in _NOT_DRAWN.finditer(text, lo, hi):
            if m.start() > at_end:
                runs.append((at_end, m.start()))
            at_end = m.end()
        if at_end < hi:
            runs.append((at_end, hi))
        for a, b in reversed(runs):
            for i in range(b - 1, a - 1, -1):
                if _WIDTH[text[i]] > 0:
                    return text[i], i
        if lo == start:
            break
        hi = lo
    return "", -1


def last_char(text: str, start: int, stop: int) -> str:
    """``last_drawn`` without the index (one regex substitution per window)."""
    hi = stop
    while hi > start:
        lo = start
        if hi - start > _LAST_CHAR_WINDOW:
            at = text.rfind(_ESC, start, hi - _LAST_CHAR_WINDOW)
            lo = at if at >= 0 else start
        drawn = _NOT_DRAWN.sub("", text[lo:hi])
        for i in range(len(drawn) - 1, -1, -1):
            if _WIDTH[drawn[i]] > 0:
                return drawn[i]
        if lo == start:
            break
        hi = lo
    return ""


def _table_at(
    screen: HardenedScreen, text: str, events: list[tuple[str, int, int]], where: int
) -> str:
    """The charset table in force at index ``where``: the screen's, then the replayable
    events before it (SO/SI, designations, DECRC, DECSTR) applied as pyte applies them."""
    g0, g1, shift, saved = screen.g0_charset, screen.g1_charset, screen.charset, screen._saved
    for kind, a, b in events:
        if a >= where:
            break
        if kind == "c0":
            shift = 1 if text[a] == "\x0e" else 0
        elif kind == "esc":
            if text[a + 1] in "()":
                table = cs.MAPS.get(text[b - 1])
                if table is not None:
                    if text[a + 1] == "(":
                        g0 = table
                    else:
                        g1 = table
            elif text[a + 1 : b] == "8" and saved is not None:
                g0, g1, shift = saved.g0_charset, saved.g1_charset, saved.charset
        elif kind == "csi":
            m = _CSI_RE.match(text, a)
            assert m is not None
            if m[2] == "!" and m[3] == "p":
                g0, g1, shift, saved = cs.LAT1_MAP, cs.VT100_MAP, 0, None
            elif m[3] == "u" and not m[1] and not m[2] and saved is not None:
                g0, g1, shift = saved.g0_charset, saved.g1_charset, saved.charset
    return g1 if shift else g0


def apply_cut(
    screen: HardenedScreen, stream: TolerantStream, text: str, pos: int, result: Scan
) -> bool:
    """Skip ``text[pos:cut start]`` and draw the clear: replay the events in order through
    the parser's own dispatchers, fold the SGR sequences, set REP's character.

    Returns:
        False, with the screen unchanged, when the cut is refused: the last drawn character
        translates to one of width 0 (what REP would repeat then needs the drawing).
    """
    assert result.cut is not None
    start, end = result.cut
    events = result.events
    # SO/SI, designations, DECRC and DECSTR change the charset the last character went through.
    charsets = any(
        kind == "c0"
        or (kind == "esc" and text[a + 1] in "()8")
        or (kind == "csi" and text[b - 1] in "pu")
        for kind, a, b in events
    )
    if charsets:
        last, where = last_drawn(text, pos, start)
        if last:
            last = last.translate(_table_at(screen, text, events, where))
            if _WIDTH[last] <= 0:
                return False
    else:  # the screen's charset throughout: only the character matters
        last = last_char(text, pos, start)
        if last:
            table = screen.g1_charset if screen.charset else screen.g0_charset
            last = last.translate(table)
            if _WIDTH[last] <= 0:
                return False
    # The attributes at the clear follow from the last DECRC (with a saved cursor) or DECSTR.
    attrs_from = pos
    for kind, a, b in events:
        if kind == "csi":
            m = _CSI_RE.match(text, a)
            assert m is not None
            if (m[2] == "!" and m[3] == "p") or (
                m[3] == "u" and not m[1] and not m[2] and screen._saved is not None
            ):
                attrs_from = b
            stream._dispatch_csi(m[1], m[2], m[3])
        elif kind == "esc":
            m = _ESC_RE.match(text, a)
            assert m is not None
            if not m[1] and m[3] == "8" and screen._saved is not None:
                attrs_from = b
            stream._dispatch_esc(m[1] or "", m[2] or m[3])
        elif kind == "c0":
            stream._execute(text[a])
        else:
            m = _OSC_RE.match(text, a)
            assert m is not None
            stream._dispatch_osc(m[1])
    fold_sgr(screen, text, attrs_from, start)
    if last:
        screen._last_char = last
    stream.feed_text(text[start:end])
    return True
