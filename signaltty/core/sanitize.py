"""Text sanitizer and ANSI stripper (pure, stdlib only; Spec: agents.md §7.7).

Layer rule: ``core`` does no I/O and imports only the standard library.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

ELLIPSIS: Final = "…"

# Escape sequences in already-decoded text, tried in this order (agents.md §7.7):
#   OSC   ESC ] … (BEL | ESC \ | U+009C), or unterminated up to the next ESC / the end
#   DCS/SOS/PM/APC   ESC P|X|^|_ … (ESC \ | U+009C), or unterminated likewise
#   CSI   ESC [ params intermediates final (the final is optional when malformed)
#   other ESC [intermediates] final (charset ``ESC ( B``, ``ESC 7``, RIS ``ESC c``, stray ST)
#   a lone ESC (e.g. followed by a multi-byte character): only the ESC goes, the
#   character after it stays, so no text is eaten.
# The single-code-point C1 forms (U+009B CSI, U+009D OSC, U+0090/98/9E/9F strings) are
# code points here, not bytes of a UTF-8 character, so recognising them is safe.
_ANSI_RE: Final = re.compile(
    r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
_ANSI_START: Final = re.compile(r"[\x1b\x90\x98\x9b\x9d\x9e\x9f]")

# Invisible format characters that can spoof what a reader sees (agents.md §7.7 lists
# U+200B–U+200F, U+202A–U+202E, U+2066–U+2069 and U+FEFF; the rest are the same kind:
# Arabic letter mark, Mongolian vowel separator, soft hyphen, word joiner and invisible
# operators, deprecated format controls, interlinear annotations, tag characters used for
# "ASCII smuggling"), plus lone surrogates, which cannot be encoded as UTF-8 on the wire.
_INVISIBLE_RANGES: Final = (
    (0x00AD, 0x00AD),
    (0x061C, 0x061C),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0xD800, 0xDFFF),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0xE0000, 0xE007F),
    # Blank-rendering letters and selectors that are not whitespace to ``str.split`` (issue
    # 10, third attack pass, A3b): HANGUL CHOSEONG/JUNGSEONG FILLER, HANGUL FILLER,
    # HALFWIDTH HANGUL FILLER, BRAILLE PATTERN BLANK and the variation selectors. Runs of
    # them pushed a command's tail out of a one-line banner.
    (0x115F, 0x1160),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
)
# Printable code points of the ranges above: ``str.isprintable`` is True for them, so the
# fast paths must look for them explicitly.
_PRINTABLE_INVISIBLE: Final = re.compile(
    "[\u115f\u1160\u2800\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]"
)
# Combining marks kept after one base character; more stack into an overlay that strikes
# through or covers neighbouring text (U+0336 runs; A3b). Three keep every real script
# (Vietnamese needs two, Indic clusters rarely more).
MAX_COMBINING: Final = 3
# Whitespace-like controls: a space in one-line text, a newline in multi-line text.
_LINE_BREAKS: Final = "\n\x0b\x0c\r\x85\u2028\u2029"


_CONTROLS: Final = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))


def _table(*, multiline: bool) -> dict[int, str | None]:
    """Build a ``str.translate`` table: controls and invisible characters → kept/space/None.

    One-line text (titles) gets a space for every C0/C1 control, so ``a\x01b`` reads
    ``a b``, not ``ab`` (agents.md §7.7 "titles: replaced by a space"); multi-line text drops
    them except ``\n`` and ``\t``. Invisible format characters are always dropped.
    """
    table: dict[int, str | None] = {}
    for cp in _CONTROLS:
        table[cp] = None if multiline else " "
    for lo, hi in _INVISIBLE_RANGES:
        for cp in range(lo, hi + 1):
            table[cp] = None
    if multiline:
        del table[ord("\n")]
        del table[ord("\t")]
        for ch in "\x0b\x0c\x85\u2028\u2029":
            table[ord(ch)] = "\n"
        # "\r\n" and a lone "\r" both lose the CR (a lone CR is a carriage return, not a line).
        table[ord("\r")] = None
    else:
        for ch in _LINE_BREAKS + "\t":
            table[ord(ch)] = " "
    return table


_ONE_LINE: Final = _table(multiline=False)
_MULTI_LINE: Final = _table(multiline=True)


def _needs_work(text: str) -> bool:
    """False for text with no control, format or filler character and no combining mark
    (every ASCII printable text): the translate pass would change nothing."""
    if text.isascii():
        return not text.isprintable()
    return not text.isprintable() or _PRINTABLE_INVISIBLE.search(text) is not None or any(
        unicodedata.combining(ch) for ch in text
    )


def _cap_combining(text: str) -> str:
    """Drop combining marks beyond :data:`MAX_COMBINING` in a row (after one base)."""
    if text.isascii():
        return text
    out: list[str] = []
    run = 0
    for ch in text:
        if unicodedata.combining(ch):
            run += 1
            if run > MAX_COMBINING:
                continue
        else:
            run = 0
        out.append(ch)
    return "".join(out)


def _clean(text: str, *, multiline: bool) -> str:
    return _cap_combining(strip_ansi(text).translate(_MULTI_LINE if multiline else _ONE_LINE))

# Code points a JSON encoder without ``ensure_ascii`` leaves raw although a terminal may act
# on them or hide text with them: DEL, C1 controls, line/paragraph separators, the invisible
# format characters above and lone surrogates (json.dumps already escapes C0 itself).
UNSAFE_IN_JSON: Final = re.compile(
    "[\x7f-\x9f\u2028\u2029"
    + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in _INVISIBLE_RANGES)
    + "]"
)


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences from decoded text, keeping everything else.

    Args:
        text: decoded text, possibly holding CSI/OSC/DCS/charset sequences.

    Returns:
        ``text`` without escape sequences; other control characters are kept.

    Raises:
        Nothing.

    Spec: agents.md §7.7 (``strip_ansi`` for reads).
    """
    if _ANSI_START.search(text) is None:
        return text
    return _ANSI_RE.sub("", text)


def cut(text: str, limit: int) -> str:
    """Cap ``text`` to ``limit`` characters, ending with "…" when something was cut.

    Args:
        text: text to cap.
        limit: maximum length in characters (code points), at least 1.

    Returns:
        ``text`` itself when ``len(text) <= limit``, else a prefix plus "…" whose total
        length is at most ``limit``.

    Raises:
        ValueError: ``limit`` < 1 (a programming error, never a wire error).

    Spec: agents.md §7.7 ("cap … with …").
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + ELLIPSIS


def sanitize_text(text: str, limit: int, *, multiline: bool = False) -> str:
    """Make untrusted text safe to show: no escapes, controls or spoofing characters.

    Steps: strip escape sequences; drop C0/C1 controls and invisible format characters
    (bidi overrides/isolates, zero-width characters, BOM, tag characters); in one-line
    text turn newlines/tabs into spaces and collapse whitespace runs, in multi-line text
    keep ``\\n`` and ``\\t`` (``\\r`` is dropped); trim; cap with :func:`cut`.

    Args:
        text: decoded, untrusted text.
        limit: maximum length in characters, at least 1 (use ``core.limits``).
        multiline: keep line breaks and tabs (notification bodies, messages).

    Returns:
        The sanitized text, ``len <= limit``; may be empty.

    Raises:
        ValueError: ``limit`` < 1.

    Spec: agents.md §7.7; states.md §3.2.
    """
    if _needs_work(text):  # fast path: nothing to remove
        text = _clean(text, multiline=multiline)
    text = text.strip() if multiline else " ".join(text.split())
    return cut(text, limit)


def for_terminal(text: str, *, multiline: bool = False) -> str:
    """Make untrusted text safe to print on a terminal, changing nothing else.

    Like :func:`sanitize_text` without trimming, collapsing or capping, so a pane's lines
    keep their indentation: escape sequences, C0/C1 controls and invisible format
    characters are removed; ``multiline`` keeps ``\\n`` and ``\\t`` (``\\r`` is dropped),
    one-line text gets a space for every control and line break (a field in a table row
    can never start a new row).

    Args:
        text: decoded, untrusted text (pane output, payload values, manifest strings).
        multiline: keep line breaks and tabs.

    Returns:
        The text without anything a terminal would act on or that hides other text.

    Raises:
        Nothing.

    Spec: agents.md §7.7; issue 10 §7 (every CLI output of text from panes, payloads or
    manifests goes through the sanitizer).
    """
    if not _needs_work(text):
        return text
    return _clean(text, multiline=multiline)


def escape_json_unsafe(encoded: str) -> str:
    """Escape, inside already-encoded JSON text, the code points of :data:`UNSAFE_IN_JSON`.

    The result decodes to the same value (``\\\\uXXXX`` escapes, surrogate pairs above the
    BMP) but prints nothing a terminal acts on or hides text with.

    Args:
        encoded: output of ``json.dumps(..., ensure_ascii=False)``.

    Returns:
        The same JSON with those code points escaped.

    Spec: issue 10 §7 (``--json`` output of payload text on a terminal).
    """

    def esc(m: re.Match[str]) -> str:
        cp = ord(m.group())
        if cp > 0xFFFF:
            cp -= 0x10000
            return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"
        return f"\\u{cp:04x}"

    return UNSAFE_IN_JSON.sub(esc, encoded)
