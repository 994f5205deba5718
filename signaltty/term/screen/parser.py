"""Parser: ``TolerantStream``, a byte-exact ECMA-48 tokenizer in front of ``HardenedScreen``.

Layer rule: standard library, ``pyte`` and ``signaltty.core`` only; no I/O.
Spec: agents.md §7 (OSC payload cap), §7.6.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Generator
from typing import Final

import pyte

from signaltty.core.limits import MAX_OSC_PAYLOAD
from signaltty.term.screen.cells import _MEMO_LIMIT
from signaltty.term.screen.sgr import _PARAM_MAX
from signaltty.term.screen.state import HardenedScreen

_MEMO_PARAMS_MAX = 32  # longest parameter string ``_values`` remembers (``38;2;255;255;255`` is 16)

# Longest CSI parameter string that is parsed. Longer sequences are consumed and ignored, so a
# run of digits can neither allocate nor reach int()'s 4300-digit ValueError.
_CSI_PARAM_CHARS: Final = 256
# Longest run of intermediate bytes (0x20-0x2F) in an escape or CSI sequence.
_INTERMEDIATES: Final = 16

_ESC: Final = "\x1b"
_BEL: Final = "\x07"
_CAN_SUB: Final = frozenset("\x18\x1a")
_STRING_INTRODUCERS: Final = frozenset("PX^_")  # DCS, SOS, PM, APC

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
            # Only short strings are worth keeping (a repainting TUI's few hundred moves and
            # colours): 4 096 parameter strings of 256 characters held ~10 MB a pane
            # (attack pass, session 11).
            if len(params) <= _MEMO_PARAMS_MAX:
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
