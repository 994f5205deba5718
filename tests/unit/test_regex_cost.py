"""core/regex_cost.py: a pattern's compile cost, read from its text without ``re._parser``."""

from __future__ import annotations

import re
import re._constants as sre_constants  # the oracle only: the package itself never imports it
import re._parser as sre_parser
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signaltty.core.regex_cost import CostError, CostLimits, expanded_size

LIMITS = CostLimits(max_repeat=1000, max_weight=10_000, max_nesting=100)


@pytest.mark.parametrize(
    ("pattern", "size"),
    [
        ("abc", 3),
        ("(?:ab){3}c", 7),
        ("a{2,5}", 5),
        ("a{3,}", 3),
        ("a{,4}", 4),
        ("a*b+c?", 3),
        ("[a-z{}]{10}", 10),
        (r"\{1000000\}", 9),  # escaped braces: literals
        ("a{x}", 4),  # not a repeat: "{", "x", "}" are literals
        ("(a|bc){2}", 6),
        ("(?P<n>ab)(?P=n){5}", 7),
        (r"\N{DIGIT ONE}{3}", 3),  # a named character is one item, then repeated
    ],
)
def test_sizes(pattern: str, size: int) -> None:
    assert expanded_size(pattern, LIMITS) == size


def test_verbose_whitespace_does_not_hide_a_repeat() -> None:
    # in verbose mode the space is skipped and each {100} repeats the group before it
    assert expanded_size("((a{100}) {100}) {10}", LIMITS) == 100 + 100 + 10
    with pytest.raises(CostError, match="more than 10000 items"):
        expanded_size("(?x)((a{100}) {100}) {10}", LIMITS)
    with pytest.raises(CostError, match="more than 10000 items"):
        expanded_size("(?x:(a{100}) {101})", LIMITS)
    # a verbose comment is not part of the pattern
    assert expanded_size("(?x)a # {5000}\n", LIMITS) == 1


def test_a_comment_group_leaves_the_previous_item_repeatable() -> None:
    with pytest.raises(CostError, match="more than 10000 items"):
        expanded_size("(a{100})(?#note){200}", LIMITS)
    # an escaped ")" does not end the comment: the (?x) inside it sets nothing
    assert expanded_size(r"(?#\)(?x))((a{100}) {100}) {10}", LIMITS) == 210


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("a{1001}", "counted repeat {1001} too large (max 1000)"),
        ("a{0,1000000}", "counted repeat {0,1000000} too large (max 1000)"),
        ("a{,1000000}", "counted repeat {0,1000000} too large (max 1000)"),
        ("a{5000,}", "counted repeat {5000,} too large (max 1000)"),
        ("(" * 101 + "a" + ")" * 101, "nested too deeply (max 100 levels)"),
        ("(?:(?:a{100}){100}){100}", "more than 10000 items"),
    ],
)
def test_limits(pattern: str, message: str) -> None:
    with pytest.raises(CostError) as ei:
        expanded_size(pattern, LIMITS)
    assert message in str(ei.value)


def _reference_size(sub: sre_parser.SubPattern) -> int:
    """Items of ``re``'s own parse tree with every repeat multiplied out (the oracle)."""
    repeats = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT}
    total = 0
    for op, av in sub:
        if op in repeats:
            lo, hi, item = av
            times = hi if hi != sre_constants.MAXREPEAT else lo
            total += max(times, 1) * _reference_size(item)
        else:
            children = _children(av)
            total += sum(_reference_size(c) for c in children) if children else 1
    return total


def _children(av: object) -> list[sre_parser.SubPattern]:
    if isinstance(av, sre_parser.SubPattern):
        return [av]
    if isinstance(av, (tuple, list)):
        return [c for item in av for c in _children(item)]
    return []


TOKENS = [
    "a", "b", " ", "\n", "#", "\\", "\\)", "\\{", "{", "}", ",", "1", "3", "12", "{2}", "{3,}",
    "{,4}", "{2,5}?", "{3}+", "*", "+?", "?", "|", "(", ")", "(?:", "(?x)", "(?x:", "(?-x:",
    "(?i)", "(?#", "(?P<g>", "(?P=g)", "(?=", "(?<=", "(?>", "[", "]", "^", "-", "(?(1)",
]  # fmt: skip
ATOMS = ["a", "bc", " ", "\\{", "\\)", "[a{]", "[]a]", "{", "x}", "\\N{DIGIT ONE}", "(?#c\\))"]
QUANTIFIERS = ["*", "+?", "?", "{2}", "{3,}", "{,4}", "{2,5}?", "{3}+"]
# between an item and its quantifier: nothing, or what verbose mode skips (an item otherwise)
GAPS = ["", " ", " # note\n"]


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(inner, min_size=1, max_size=4).map("".join),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(" + "|".join(xs) + ")"),
        st.tuples(st.sampled_from(["(", "(?:", "(?>", "(?=", "(?x:", "(?-x:"]), inner).map(
            lambda t: t[0] + t[1] + ")"
        ),
        st.tuples(inner, st.sampled_from(GAPS), st.sampled_from(QUANTIFIERS)).map(
            lambda t: "(?:" + t[0] + ")" + t[1] + t[2]
        ),
    )


# mostly valid patterns built from parts, and token soup for the odd corners
PATTERNS = st.one_of(
    st.tuples(
        st.sampled_from(["", "(?x)", "(?i)"]),
        st.recursive(st.sampled_from(ATOMS), _extend, max_leaves=12),
    ).map("".join),
    st.lists(st.sampled_from(TOKENS), min_size=1, max_size=25).map("".join),
)


@settings(max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
@given(PATTERNS)
def test_never_counts_fewer_items_than_re_parses(pattern: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            re.compile(pattern)
            tree = sre_parser.parse(pattern)
        except (re.error, OverflowError, RecursionError):
            return
    expected = _reference_size(tree)
    big = CostLimits(max_repeat=10**9, max_weight=10**12, max_nesting=10**3)
    assert expanded_size(pattern, big) >= expected
