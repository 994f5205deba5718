"""The screen-rule prefilter (core/regex_literals.py): the runs it finds, and that it never
rules out a text the ``regex`` library (version 0) matches.

A prefilter that ruled out a matching text would silently turn a rule off, so the property
is checked three ways: named patterns, every code point for case folding, and generated
patterns and texts (hypothesis) built from the constructs where ``re`` and ``regex`` read a
pattern differently.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signaltty.core.regex_literals import RequiredText, fold, required_text
from signaltty.core.screen_rules import ScreenRule, ScreenView, compile_pattern, evaluate


@pytest.mark.parametrize(
    ("pattern", "runs", "folds"),
    [
        (r"Run a dynamic workflow\?", ("Run a dynamic workflow?",), False),
        (r"(?i)esc to cancel", ("esc to cancel",), True),
        (r"(?i)Esc TO", ("esc to",), True),
        (r'MCP server "[^"\n]{1,100}" requests', ('MCP server "', '" requests'), False),
        (r"(?m)^\s*/btw\b", ("/btw",), False),
        (r"(?s).*Allow\s+once", ("Allow", "once"), False),
        (r"esc\ to\ interrupt", ("esc to interrupt",), False),
        # a repeated character may be missing or doubled: it ends the run, unread
        (r"abcd+efg", ("abc", "efg"), False),
        (r"abcd{2,}efg", ("abc", "efg"), False),
        (r"abcd?efg", ("abc", "efg"), False),
        # groups, classes and zero-width items end a run
        (r"abc(?:x|y)def", ("abc", "def"), False),
        (r"abc[xy]def", ("abc", "def"), False),
        (r"abc\bdef", ("abc", "def"), False),
        # \n is a character; a flag group anywhere makes the whole pattern fold
        (r"abc\ndef", ("abc\ndef",), False),
        (r"foo(?i:bar)baz", ("foo", "baz"), True),
        # non-ASCII characters of a case-insensitive pattern are left out
        (r"(?i)─── Doing…", (" doing",), True),
        (r"─── Doing…", ("─── Doing…",), False),
        # a comment is nothing: a repeat after it repeats the character before it (attack
        # pass and new-user pass, session 20)
        (r"colou(?#british u optional)?r check", ("r check", "colo"), False),
        (r"abcd(?#x)*efg", ("abc", "efg"), False),
        (r"abc(?#x)def", ("abcdef",), False),
        (r"abcd(?#x)(?#y){0}efg", ("abc", "efg"), False),
        # only the longest two runs are kept
        (r"aaaa.bbb.ccccc", ("ccccc", "aaaa"), False),
    ],
)
def test_runs(pattern: str, runs: tuple[str, ...], folds: bool) -> None:
    re.compile(pattern)
    assert required_text(pattern) == RequiredText(runs, folds)


@pytest.mark.parametrize(
    "pattern",
    [
        r"abc|def",  # a top-level alternative: no run is required
        r"(?x)abc def",  # verbose: spaces and # mean something else
        r"abc(?x: d e f )",
        r"[[:alpha:]]abcdef",  # regex reads a POSIX class here, re a set and a "]"
        r"abcdef{e<=1}",  # regex reads a fuzzy constraint, re literal text
        r"ab\x41cdef",  # an escape with arguments: what follows is not read as literal
        r"\N{BULLET} Running",
        r"ab",  # runs too short to be worth a check
        r"a.b.c",
    ],
)
def test_no_prefilter(pattern: str) -> None:
    assert required_text(pattern) is None


def test_may_match() -> None:
    req = required_text(r"(?i)esc to cancel")
    assert req is not None
    assert req.may_match("  ESC TO CANCEL")
    assert not req.may_match("esc to close")
    plain = required_text(r"Allow once")
    assert plain is not None
    assert not plain.may_match("allow once")  # case matters without (?i)


def test_fold_covers_every_character_regex_matches_to_an_ascii_letter() -> None:
    """Every code point that ``(?i)[a-z]`` or ``(?i)[A-Z]`` matches (they differ: ``İ`` is
    only in the first, ``ı`` only in the second) folds to the ASCII letter it matches, in
    one case or the other."""
    lower = regex.compile(r"(?i)[a-z]", flags=regex.VERSION0)
    upper = regex.compile(r"(?i)[A-Z]", flags=regex.VERSION0)
    found = {}
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        if 0xD800 <= cp <= 0xDFFF or not (lower.fullmatch(ch) or upper.fullmatch(ch)):
            continue
        folded = fold(ch)
        assert len(folded) == 1, hex(cp)
        assert folded.isascii(), hex(cp)
        assert folded.isalpha(), hex(cp)
        assert regex.fullmatch(f"(?i){folded}", ch, flags=regex.VERSION0) or regex.fullmatch(
            f"(?i){folded.upper()}", ch, flags=regex.VERSION0
        ), hex(cp)
        if not ch.isascii():
            found[ch] = folded
    # the four the module names: İ, dotless ı, long s, Kelvin sign
    assert found == {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}
    # and each matches a literal letter of a pattern, not only a class
    for ch, letter in found.items():
        assert regex.search(f"(?i)x{letter}y|x{letter.upper()}y", f"x{ch}y", flags=regex.VERSION0)


def test_fold_keeps_runs_contiguous() -> None:
    assert "dir" in fold("D\u0130R")
    assert "ask" in fold("A\u017f\u212a")
    assert "this" in fold("th\u0131s")


def test_upper_case_i_in_a_pattern_matches_dotless_i() -> None:
    """``(?i)I`` matches ``ı`` in the ``regex`` library (attack pass, session 20)."""
    pattern = r"(?i)RUN THIS COMMAND"
    text = "Run th\u0131s command"
    assert regex.search(pattern, text, flags=regex.VERSION0)
    required = required_text(pattern)
    assert required is not None
    assert required.may_match(text)


# --- generated patterns and texts ---------------------------------------------------------

_LITERALS = list('abkisABKIS -"?.') + ["\u017f", "\u212a", "\u0130", "\u0131", "─", "é"]
_WORDS = ["abk", "Kis", "sik", "a b", '"k"']
_PIECES = [
    *_LITERALS,
    *_LITERALS,
    *_LITERALS,
    *_WORDS,
    *_WORDS,
    r"\?",
    r"\.",
    r"\ ",
    r"\n",
    r"\t",
    r"\b",
    r"\s",
    r"\d",
    r"\w",
    r"\x61",
    r"\141",
    "[ab]",
    "[^a]",
    "[]a]",
    "[a-k]",
    "(ab)",
    "(?:a|b)",
    "(?:ab|kis)",
    "(?=ab)",
    "(?!a)",
    "(?<=a)",
    "(?#c)",
    "(?i:ab)",
    "(?-i:ab)",
    "(a)\\1",
    "*",
    "+",
    "?",
    "*?",
    "+?",
    "{2}",
    "{1,3}",
    "{,2}",
    "{2,}",
    "{}",
    "{e<=1}",
    "|",
    ".",
    "^",
    "$",
    "]",
    "}",
]
_PREFIXES = ["", "", "(?i)", "(?m)", "(?s)", "(?im)", "(?x)", "(?a)", "(?ai)"]
_NOISE = [*_LITERALS, "\n", "c", "d", "1", "I\u0307", "i\u0307", "ss", "\u00df"]
# Text a piece may match, so that generated texts often match their pattern. A quantifier's
# text is "<" (drop what the piece before it matched) or "+" (repeat it).
_MATCHES = {
    r"\?": ["?"],
    r"\.": ["."],
    r"\ ": [" "],
    r"\n": ["\n"],
    r"\t": ["\t"],
    r"\b": [""],
    r"\s": [" ", "\n"],
    r"\d": ["1"],
    r"\w": ["a", "K"],
    r"\x61": ["a"],
    r"\141": ["a"],
    "[ab]": ["a", "b"],
    "[^a]": ["b", "K"],
    "[]a]": ["]", "a"],
    "[a-k]": ["b", "k"],
    "(ab)": ["ab"],
    "(?:a|b)": ["a", "b"],
    "(?:ab|kis)": ["ab", "kis"],
    "(?=ab)": [""],
    "(?!a)": [""],
    "(?<=a)": [""],
    "(?#c)": [""],
    "(?i:ab)": ["ab", "AB", "aB"],
    "(?-i:ab)": ["ab"],
    "(a)\\1": ["aa"],
    "{e<=1}": ["+", "<", ""],
    "|": [""],
    ".": ["a", " "],
    "^": ["", "\n"],
    "$": ["", "\n"],
    "{}": ["{}"],
}
_SWAPS = {"s": "\u017f", "k": "\u212a", "i": "\u0130", "K": "\u212a", "I": "\u0131", "S": "\u017f"}


@st.composite
def _pattern_and_text(draw: st.DrawFn) -> tuple[str, str]:
    pieces = draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12))
    pattern = draw(st.sampled_from(_PREFIXES)) + "".join(pieces)
    frags: list[str] = []
    for piece in pieces:
        options = _MATCHES.get(piece)
        if options is None:
            if piece[0] in "*+?{":
                options = ["<", "+", ""]
            else:  # a literal: itself, another case or a character regex folds to it
                options = [piece, piece.swapcase(), "".join(_SWAPS.get(c, c) for c in piece)]
        frag = draw(st.sampled_from(options))
        if frag == "<":
            if frags:
                frags.pop()
        elif frag == "+":
            if frags:
                frags.append(frags[-1])
        else:
            frags.append(frag)
        if draw(st.integers(0, 9)) == 0:
            frags.append(draw(st.sampled_from(_NOISE)))
    return pattern, "".join(frags)


@settings(
    max_examples=5_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(_pattern_and_text())
def _never_rules_out_a_match(case: tuple[str, str]) -> None:
    pattern, text = case
    try:
        re.compile(pattern)
        compiled = regex.compile(pattern, flags=regex.VERSION0)
    except (re.error, regex.error, ValueError, OverflowError):
        return  # the loader rejects what re rejects
    required = required_text(pattern)
    if required is None:
        return
    _seen["filtered"] += 1
    if compiled.search(text) is not None:
        _seen["matched"] += 1
        assert required.may_match(text), (pattern, text, required)


_seen = {"filtered": 0, "matched": 0}


def test_generated_patterns_never_rule_out_a_match() -> None:
    """A pattern with runs never has a matching text its runs rule out; enough generated
    patterns had runs and matched for that to say something."""
    _seen.update(filtered=0, matched=0)
    _never_rules_out_a_match()
    assert _seen["filtered"] > 1000
    assert _seen["matched"] > 200


# --- the screen rules' use -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        # flags given to compile(), not written in the pattern: read from ``Pattern.flags``
        (regex.compile("esc to cancel", flags=regex.IGNORECASE | regex.VERSION0), "ESC TO CANCEL"),
        (regex.compile("esc to cancel", flags=regex.VERBOSE | regex.VERSION0), "esctocancel"),
        (regex.compile("esc to cancel", flags=regex.VERSION1), "esc to cancel"),
        (compile_pattern("(?i)esc to cancel"), "Esc To Cancel"),
    ],
)
def test_rules_match_whatever_flags_their_patterns_have(pattern: Any, text: str) -> None:
    rule = ScreenRule("r", "working", region="screen", all=(pattern,))
    assert evaluate([rule], ScreenView([text])).winner == 0
    other = ScreenRule("r", "working", region="screen", all=(pattern,))
    assert evaluate([other], ScreenView(["something else"])).winner is None


def test_folding_counts_against_the_evaluation_budget() -> None:
    """200 case-insensitive rules, each over a different region of a screen of 200 lines of
    1 000 ``İ``: every rule is skipped by the prefilter, but folding 200 texts of up to
    200 000 characters takes seconds; the evaluation stops at its budget and reports the
    rules it did not get to (attack pass, session 20: 0.5 s loop stalls)."""
    pattern = compile_pattern("(?i)approve this")
    rules = [
        ScreenRule(f"r{n}", "blocked", region="bottom", lines=n, all=(pattern,))
        for n in range(1, 201)
    ]
    view = ScreenView(["\u0130" * 1000] * 200)
    result = evaluate(rules, view)
    assert result.winner is None
    assert result.timed_out, "the budget never stopped the evaluation"
