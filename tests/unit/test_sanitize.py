"""core.sanitize: strip_ansi, sanitize_text and cut (Spec: agents.md §7.7)."""

from __future__ import annotations

import json
import random

import pytest

from signaltty.core.limits import MAX_NOTIFICATION_BODY, MAX_TITLE
from signaltty.core.sanitize import (
    cut,
    escape_json_unsafe,
    for_terminal,
    sanitize_text,
    strip_ansi,
)

STRIP_CASES = [
    ("plain", "hello", "hello"),
    ("sgr", "\x1b[1;31mred\x1b[0m", "red"),
    ("csi-private", "a\x1b[?25lb", "ab"),
    ("csi-c1", "a\x9b31mb", "ab"),
    ("osc-bel", "a\x1b]0;title\x07b", "ab"),
    ("osc-st", "a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),
    ("osc-c1", "a\x9d0;t\x9cb", "ab"),
    ("osc-unterminated", "a\x1b]0;title", "a"),
    ("dcs", "a\x1bPq#0\x1b\\b", "ab"),
    ("apc", "a\x1b_Gx\x1b\\b", "ab"),
    ("charset", "\x1b(Bab\x1b)0", "ab"),
    ("keypad-ris", "\x1b=a\x1bcb\x1b7", "ab"),
    ("esc-multibyte", "\x1béx", "éx"),
    ("esc-at-end", "ab\x1b", "ab"),
    ("keeps-controls", "a\nb\tc\x01", "a\nb\tc\x01"),
    ("keeps-bidi", "a\u202eb", "a\u202eb"),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in STRIP_CASES], ids=[c[0] for c in STRIP_CASES]
)
def test_strip_ansi(text: str, expected: str) -> None:
    assert strip_ansi(text) == expected


SANITIZE_CASES = [
    ("plain", "hello", "hello"),
    ("trim-collapse", "  a \t b\n\nc  ", "a b c"),
    ("ansi", "\x1b[31merror\x1b[0m: x", "error: x"),
    ("bidi-override", "abc\u202edcba", "abcdcba"),
    ("bidi-all", "a\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069b", "ab"),
    ("marks", "a\u200e\u200fb\u061c", "ab"),
    ("zero-width", "a\u200b\u200c\u200db\ufeff", "ab"),
    ("word-joiner", "a\u2060b\u00adc", "abc"),
    ("tags", "hi\U000e0049\U000e0067\U000e007f", "hi"),
    # §7.7 "titles: replaced by a space": a control never glues two words together
    ("c0", "a\x00b\x01c\x7fd", "a b c d"),
    ("c0-title", "a\x01b", "a b"),
    ("c1", "a\x80b\x85c\x9ad", "a b c d"),
    ("c1-apc-string", "a\x9fxyz\x9cb", "ab"),
    ("c1-csi", "a\x9b2Jb", "ab"),
    ("cr", "a\rb", "a b"),
    ("nbsp-collapse", "a\u00a0\u00a0b", "a b"),
    ("line-separator", "a\u2028b", "a b"),
    ("lone-surrogate", "a\ud800b", "ab"),
    ("emoji-kept", "done ✅ ➜", "done ✅ ➜"),
    ("only-controls", "\x1b[0m\x07\u202e ", ""),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in SANITIZE_CASES], ids=[c[0] for c in SANITIZE_CASES]
)
def test_sanitize_one_line(text: str, expected: str) -> None:
    assert sanitize_text(text, MAX_TITLE) == expected


MULTILINE_CASES = [
    ("keeps-newline-tab", "a\n\tb", "a\n\tb"),
    ("drops-c0", "a\x01b\x07c", "abc"),
    ("crlf", "a\r\nb", "a\nb"),
    ("vt-ff-nel", "a\x0bb\x0cc\x85d", "a\nb\nc\nd"),
    ("trim", "\n  a  \n", "a"),
    ("ansi-bidi", "\x1b[1mA\x1b[0m\u202e\nB", "A\nB"),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in MULTILINE_CASES], ids=[c[0] for c in MULTILINE_CASES]
)
def test_sanitize_multiline(text: str, expected: str) -> None:
    assert sanitize_text(text, MAX_NOTIFICATION_BODY, multiline=True) == expected


@pytest.mark.parametrize("limit", [1, 5, MAX_TITLE, MAX_NOTIFICATION_BODY])
def test_exactly_at_limit_is_not_cut(limit: int) -> None:
    text = "x" * limit
    assert sanitize_text(text, limit) == text


@pytest.mark.parametrize("limit", [1, 5, MAX_TITLE, MAX_NOTIFICATION_BODY])
def test_one_over_limit_is_cut_with_ellipsis(limit: int) -> None:
    out = sanitize_text("x" * (limit + 1), limit)
    assert len(out) == limit
    assert out == "x" * (limit - 1) + "…"


def test_cut_counts_after_sanitizing() -> None:
    # Escapes and spoofing characters do not count towards the limit.
    assert sanitize_text("\x1b[31m" + "y" * 5 + "\u202e", 5) == "yyyyy"


def test_cut_trims_before_ellipsis() -> None:
    assert cut("ab   cdef", 5) == "ab…"


def test_cut_rejects_bad_limit() -> None:
    with pytest.raises(ValueError, match="limit"):
        cut("abc", 0)


def test_fuzz_output_is_clean_and_bounded() -> None:
    rng = random.Random(11)
    pool = "\x1b[]\\;\x07\x9b\x9d\x9c\n\t\r \u202e\u2066\u200b\ufeff\U000e0041aé➜0m"
    banned = {chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]} | set(
        "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200b\u200e\u200f\ufeff"
    )
    for _ in range(2000):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(60)))
        limit = rng.randrange(1, 30)
        one = sanitize_text(text, limit)
        assert len(one) <= limit
        assert not set(one) & banned
        assert one == one.strip()
        multi = sanitize_text(text, limit, multiline=True)
        assert len(multi) <= limit
        assert not set(multi) & (banned - {"\n", "\t"})


TERMINAL_CASES = [
    # (id, text, one-line, multi-line)
    ("plain-kept-verbatim", "  indented  x ", "  indented  x ", "  indented  x "),
    ("osc-title-and-clear", "ok\x1b]0;pwned\x07\x1b[2J\x1b[H!", "ok!", "ok!"),
    ("c1-csi", "a\x9b2Jb", "ab", "ab"),
    ("bell-backspace", "a\x07b\x08c", "a b c", "abc"),
    ("row-break", "Bash\nfake row", "Bash fake row", "Bash\nfake row"),
    ("cr-overwrite", "safe\rrm -rf ~", "safe rm -rf ~", "saferm -rf ~"),
    ("bidi-hidden", "ls \u202eexe.hs\u202c", "ls exe.hs", "ls exe.hs"),
    ("osc8-link", "\x1b]8;;http://x\x1b\\click\x1b]8;;\x1b\\", "click", "click"),
]


@pytest.mark.parametrize(
    ("text", "one", "multi"), [c[1:] for c in TERMINAL_CASES], ids=[c[0] for c in TERMINAL_CASES]
)
def test_for_terminal(text: str, one: str, multi: str) -> None:
    assert for_terminal(text) == one
    assert for_terminal(text, multiline=True) == multi


def test_for_terminal_fuzz_prints_nothing_a_terminal_acts_on() -> None:
    rng = random.Random(7)
    pool = "\x1b[]\\;\x07\x9b\x9d\x9c\x90\n\t\r \u202e\u2066\u200b\ufeff\U000e0041aé➜0m\x00\x7f"
    banned = {chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
    for _ in range(2000):
        text = "".join(rng.choice(pool) for _ in range(rng.randrange(60)))
        assert not set(for_terminal(text)) & banned
        assert not set(for_terminal(text, multiline=True)) & (banned - {"\n", "\t"})


@pytest.mark.parametrize(
    "value",
    [
        "plain ✅",
        "csi \x9b2J and osc \x9d0;t\x9c",
        "bidi \u202e and isolate \u2066 and zwsp \u200b",
        "tag \U000e0041 and line sep \u2028",
        "lone \ud800 surrogate",
        "esc \x1b[31m and bel \x07",
    ],
)
def test_escape_json_unsafe_keeps_the_value(value: str) -> None:
    encoded = escape_json_unsafe(json.dumps({"v": value}, ensure_ascii=False))
    assert json.loads(encoded) == {"v": value}
    assert encoded.isascii() or all(ch.isprintable() for ch in encoded)
    assert not any(0x7F <= ord(ch) <= 0x9F or 0xD800 <= ord(ch) <= 0xDFFF for ch in encoded)
    assert "\u202e" not in encoded
    assert "\U000e0041" not in encoded
    encoded.encode("utf-8")  # printable: no lone surrogate left
