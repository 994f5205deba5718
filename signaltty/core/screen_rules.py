"""Screen rules: the regions of a screen and the winning rule (pure; Spec: agents.md §5).

A ``ScreenRule`` is one compiled ``[[screen]]`` table. ``evaluate`` computes, for one
``ScreenView`` (the visible rows, the OSC title and the latest OSC 9;4 payload), which rules
match and which one wins; region texts are computed once per view and shared by every rule.
Patterns are compiled with the ``regex`` library (Python ``re`` syntax, version 0) and every
search runs under a time limit, so a catastrophic pattern in a user manifest costs at most
``MATCH_TIMEOUT_S`` per rule instead of freezing the daemon; a timed-out search counts as no
match and is reported in ``Evaluation.timed_out``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Final

import regex
from regex import Pattern

from signaltty.core.regex_cost import CostError, CostLimits, expanded_size
from signaltty.core.regex_literals import RequiredText, fold, required_text

STATES: Final = ("working", "blocked", "idle", "hold")
# Regions whose text is a list of screen lines (agents.md §5.2).
LINE_REGIONS: Final = frozenset(
    {
        "bottom",
        "top",
        "screen",
        "prompt_box",
        "above_prompt_box",
        "after_last_rule",
        "after_last_prompt",
        "before_current_prompt",
        "without_current_prompt",
    }
)
REGIONS: Final = LINE_REGIONS | {"title", "osc_progress"}
DEFAULT_LINES: Final = {"bottom": 12, "top": 12}
MAX_RULE_LINES: Final = 200
MAX_REGION_LINES: Final = 200
MAX_LINE_CHARS: Final = 1000
MATCH_TIMEOUT_S: Final = 0.02
# One evaluation of a whole rule set never takes longer than this: the rest of its searches
# count as timed out (a hostile screen against many slow user rules cannot hold the loop).
EVALUATION_BUDGET_S: Final = 0.1
FALLBACK_PRIORITY: Final = -1000
FALLBACK_ID: Final = "idle_fallback"

_RULE_CHAR: Final = "\u2500"  # ─
# A Codex response line starts with one of these; a prompt line followed by one is history.
_RESPONSE_MARKS: Final = ("•", "■", "✗", "✓")


class PatternError(ValueError):
    """A screen-rule pattern that does not compile; the message names the pattern."""


# Bounds on one pattern's compile cost. The ``regex`` library expands counted repeats while
# compiling (``a{1000000000}`` takes GBs and never finishes), so the pattern's text is measured
# first (core/regex_cost.py): no pattern longer than MAX_PATTERN_CHARS, no repeat bound above
# MAX_REPEAT_BOUND, no groups nested deeper than MAX_PATTERN_NESTING, and no more than
# MAX_PATTERN_WEIGHT items once nested repeats are multiplied out (about 5 ms of compile time).
# Real rules stay far below (the longest bundled pattern is ~160 characters).
MAX_PATTERN_CHARS: Final = 2000
MAX_REPEAT_BOUND: Final = 1000
MAX_PATTERN_WEIGHT: Final = 10_000
MAX_PATTERN_NESTING: Final = 100
_COST_LIMITS: Final = CostLimits(
    max_repeat=MAX_REPEAT_BOUND, max_weight=MAX_PATTERN_WEIGHT, max_nesting=MAX_PATTERN_NESTING
)


def compile_pattern(text: str) -> Pattern[str]:
    """Compile one rule pattern (Python ``re`` syntax, checked with ``re`` itself).

    Before the ``regex`` library compiles it (it expands counted repeats, so an unchecked
    ``a{1000000000}`` would take GBs), the pattern must be at most ``MAX_PATTERN_CHARS``
    characters, every repeat bound at most ``MAX_REPEAT_BOUND``, nesting at most
    ``MAX_PATTERN_NESTING`` levels and the expanded size at most ``MAX_PATTERN_WEIGHT``.

    Raises:
        PatternError: the pattern is not a string, breaks one of those limits (e.g.
            ``counted repeat {1000000000} too large (max 1000)``) or does not compile.
    """
    if not isinstance(text, str):
        raise PatternError(f"pattern must be a string, got {type(text).__name__}")
    shown = text if len(text) <= 80 else text[:77] + "..."
    if len(text) > MAX_PATTERN_CHARS:
        raise PatternError(
            f"bad pattern {shown!r}: too long ({len(text)} characters, max {MAX_PATTERN_CHARS})"
        )
    try:
        # The cost is measured from the text first (never expanding a repeat; escaped braces
        # are literals, not repeats, as for ``re``). The documented syntax is Python ``re``:
        # reject what ``re`` rejects even where the ``regex`` library (used for its time
        # limit) would be more lenient; ``re`` never expands repeats either.
        expanded_size(text, _COST_LIMITS)
        re.compile(text)
        return regex.compile(text, flags=regex.VERSION0)
    except CostError as exc:
        raise PatternError(f"bad pattern {shown!r}: {exc}") from None
    except (re.error, regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise PatternError(f"bad pattern {shown!r}: {exc}") from None


@dataclass(frozen=True, slots=True)
class ScreenRule:
    """One ``[[screen]]`` rule, compiled (agents.md §5.1).

    ``lines`` is None for "the region's default" (12 for ``bottom``/``top``, all lines
    otherwise). ``file`` and ``source`` (``bundled``/``user``) are shown by ``pane.explain``.
    """

    id: str
    state: str
    region: str = "bottom"
    lines: int | None = None
    regex: tuple[Pattern[str], ...] = ()
    all: tuple[Pattern[str], ...] = ()
    not_: tuple[Pattern[str], ...] = ()
    priority: int = 0
    file: str = ""
    source: str = "bundled"
    message: str | None = None  # a blocked rule's "what to do" (the pane's last message)
    ends_turn: bool = False  # an idle screen shown only once a turn is over (issue 11 item 1)
    # a blocked screen that also counts on a hooked pane: a dialog the agent's hooks do not
    # report (Cursor's "Run this command?", issue 11 item 11)
    when_hooked: bool = False

    @property
    def label(self) -> str:
        """Region label for ``pane.explain``: ``bottom(12)``, ``top(20)``, ``screen``, ``title``."""
        n = self.lines if self.lines is not None else DEFAULT_LINES.get(self.region)
        return f"{self.region}({n})" if n is not None else self.region

    @property
    def is_fallback(self) -> bool:
        """True for the catch-all idle rule, which is never recovery evidence (states.md §3.8)."""
        return self.priority <= FALLBACK_PRIORITY or self.id == FALLBACK_ID


@dataclass(frozen=True, slots=True)
class ScreenView:
    """What screen rules read from a pane.

    Args:
        rows: the visible rows of the active grid (alternate buffer when active), top first.
        title: the pane title set by the program (OSC 0/1/2), or None when it set none — the
            ``title`` region is then absent and its rules never match.
        osc_progress: the latest valid OSC 9;4 payload after ``9;`` (``4;1;-1``), or None —
            the ``osc_progress`` region is then absent (agents.md §5.2).
    """

    rows: Sequence[str]
    title: str | None = None
    osc_progress: str | None = None


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Result of ``evaluate``: ``matched[i]`` for ``rules[i]``; ``winner`` is an index or None."""

    matched: tuple[bool, ...]
    winner: int | None
    timed_out: tuple[int, ...] = ()


def is_rule_line(line: str) -> bool:
    """``─``-rule line: starts with at least three ``─`` or consists only of ``─`` (§5.2)."""
    s = line.strip()
    if not s.startswith(_RULE_CHAR):
        return False
    return s.startswith(_RULE_CHAR * 3) or s == _RULE_CHAR * len(s)


def is_prompt_line(line: str) -> bool:
    """Codex prompt line: after leading whitespace exactly ``›`` or starting with ``› ``."""
    s = line.lstrip()
    return s == "›" or s.startswith("› ")


def _current_prompt(lines: Sequence[str]) -> int | None:
    """Index of the last prompt line with no later response line (§5.2)."""
    seen_response = False
    for i in range(len(lines) - 1, -1, -1):
        s = lines[i].lstrip()
        if is_prompt_line(s):
            if not seen_response:
                return i
            # An earlier prompt followed by a response is history; keep looking upwards,
            # but any earlier prompt is followed by this response too.
            return None
        if s.startswith(_RESPONSE_MARKS):
            seen_response = True
    return None


@dataclass(slots=True)
class _Regions:
    """Region texts of one view, computed lazily and cached (one sweep, many rules)."""

    view: ScreenView
    deadline: float = field(default_factory=lambda: time.perf_counter() + EVALUATION_BUDGET_S)
    _lines: list[str] | None = None
    _cache: dict[tuple[str, int | None], str | None] = field(default_factory=dict)
    # the lines of each line region before its ``lines`` cut (several rules share a region)
    _slices: dict[str, list[str]] = field(default_factory=dict)
    # ``regex_literals.fold`` of each region text a case-insensitive prefilter looked at
    _folded: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        if self._lines is None:
            out = []
            for row in self.view.rows:
                row = row.rstrip()
                if row:
                    out.append(row[:MAX_LINE_CHARS])
            self._lines = out
        return self._lines

    def text(self, region: str, n: int | None) -> str | None:
        key = (region, n)
        if key not in self._cache:
            self._cache[key] = self._compute(region, n)
        return self._cache[key]

    def folded(self, text: str) -> str:
        """``regex_literals.fold(text)``, once per distinct region text."""
        out = self._folded.get(text)
        if out is None:
            out = self._folded[text] = fold(text)
        return out

    def _compute(self, region: str, n: int | None) -> str | None:
        if region == "title":
            t = self.view.title
            return None if t is None else t.replace("\n", " ")[:MAX_LINE_CHARS]
        if region == "osc_progress":
            return self.view.osc_progress
        lines = self.lines()
        if n is None:
            n = DEFAULT_LINES.get(region)
        if region == "top":
            return "\n".join(lines[: min(n or MAX_REGION_LINES, MAX_REGION_LINES)])
        picked = self._slices.get(region)
        if picked is None:
            picked = self._slices[region] = _slice(region, lines)
        keep = min(n, MAX_REGION_LINES) if n is not None else MAX_REGION_LINES
        return "\n".join(picked[-keep:] if keep else [])


def _slice(region: str, lines: list[str]) -> list[str]:
    if region in ("bottom", "screen"):
        return lines
    if region in ("prompt_box", "above_prompt_box", "after_last_rule"):
        rules = [i for i, line in enumerate(lines) if _RULE_CHAR in line and is_rule_line(line)]
        if region == "after_last_rule":
            return lines[rules[-1] + 1 :] if rules else lines
        if len(rules) < 2:
            return [] if region == "prompt_box" else lines
        if region == "prompt_box":
            return lines[rules[-2] + 1 : rules[-1]]
        return lines[: rules[-2]]
    if region == "after_last_prompt":
        prompts = [i for i, line in enumerate(lines) if is_prompt_line(line)]
        return lines[prompts[-1] + 1 :] if prompts else lines
    current = _current_prompt(lines)
    if region == "before_current_prompt":
        return lines if current is None else lines[:current]
    if region == "without_current_prompt":
        return lines if current is None else []
    raise ValueError(f"unknown region {region!r}")


# (pattern text, flags) → what every match contains (None: no prefilter); bounded, see _required
_REQUIRED: dict[tuple[str, int], RequiredText | None] = {}
_REQUIRED_MAX: Final = 4096
# Compile flags the prefilter does not read from a pattern's text: no prefilter with these.
_UNREAD_FLAGS: Final = regex.VERBOSE | regex.VERSION1


def _required(pattern: Pattern[str]) -> RequiredText | None:
    key = (pattern.pattern, pattern.flags)
    try:
        return _REQUIRED[key]
    except KeyError:
        if len(_REQUIRED) >= _REQUIRED_MAX:
            _REQUIRED.clear()  # manifests reloaded many times: start again
        found = None
        if not pattern.flags & _UNREAD_FLAGS:
            # ``flags`` holds the inline ones too; IGNORECASE may also come from compile()
            found = required_text(key[0], ignore_case=bool(pattern.flags & regex.IGNORECASE))
        _REQUIRED[key] = found
        return found


def _search(pattern: Pattern[str], text: str, regions: _Regions) -> bool:
    """Whether ``pattern`` matches ``text`` (a region text of ``regions``): skipped when a run
    every match needs is missing (``regex_literals``, a search's time limit costs 4× the
    search), else searched under what is left of the time limits."""
    # The budget first: folding a long non-ASCII region costs ms (attack pass, session 20).
    remaining = regions.deadline - time.perf_counter()
    if remaining <= 0:
        raise TimeoutError("evaluation budget used up")
    required = _required(pattern)
    if required is not None and not required.may_match(
        text, regions.folded(text) if required.fold else None
    ):
        return False
    remaining = regions.deadline - time.perf_counter()
    if remaining <= 0:
        raise TimeoutError("evaluation budget used up")
    return pattern.search(text, timeout=min(MATCH_TIMEOUT_S, remaining)) is not None


def rule_matches(rule: ScreenRule, regions: _Regions) -> bool:
    """Whether ``rule`` matches; raises ``TimeoutError`` when a search runs out of time (its
    own ``MATCH_TIMEOUT_S`` or what is left of the evaluation's ``EVALUATION_BUDGET_S``)."""
    text = regions.text(rule.region, rule.lines)
    if text is None:
        return False
    if rule.regex and not any(_search(p, text, regions) for p in rule.regex):
        return False
    if not all(_search(p, text, regions) for p in rule.all):
        return False
    return not any(_search(p, text, regions) for p in rule.not_)


def evaluate(
    rules: Sequence[ScreenRule], view: ScreenView, disabled: Collection[int] = ()
) -> Evaluation:
    """Match every rule against ``view``; the highest priority wins, ties go to the earlier rule.

    Args:
        rules: in file order, then declaration order (agents.md §5.1/§5.3).
        view: what the rules read.
        disabled: ``id()`` of rules to skip (counted as not matching) — the sweep disables a
            rule whose searches keep running out of time.

    Returns:
        ``Evaluation``; ``timed_out`` holds the indices of rules whose search ran out of time.
    """
    regions = _Regions(view)
    matched: list[bool] = []
    timed_out: list[int] = []
    winner: int | None = None
    for i, rule in enumerate(rules):
        ok = False
        if not disabled or id(rule) not in disabled:
            try:
                ok = rule_matches(rule, regions)
            except TimeoutError:
                timed_out.append(i)
        matched.append(ok)
        if ok and (winner is None or rule.priority > rules[winner].priority):
            winner = i
    return Evaluation(tuple(matched), winner, tuple(timed_out))


def priority_order(rules: Sequence[ScreenRule]) -> tuple[int, ...]:
    """Indices of ``rules`` from the highest priority down, ties in list order (for ``winner``)."""
    return tuple(sorted(range(len(rules)), key=lambda i: (-rules[i].priority, i)))


def winner(
    rules: Sequence[ScreenRule],
    view: ScreenView,
    order: Sequence[int],
    disabled: Collection[int] = (),
    memo: dict[int, tuple[str | None, bool]] | None = None,
) -> tuple[int | None, tuple[int, ...]]:
    """The winning rule's index without evaluating the rules that cannot win.

    Same result as ``evaluate(...).winner``: rules are tried in ``order`` (``priority_order``)
    and the first match wins. The sweep uses this; ``pane.explain`` uses ``evaluate``.

    Args:
        memo: the caller's record of earlier outcomes, ``{index: (region text, matched)}``,
            read and updated here. A rule whose region text equals the one recorded is not
            searched again: a match depends on the rule and that text only (a spinner's
            redraw changes the few regions that hold its line, issue 12). The caller clears
            it when ``rules`` change. A search that ran out of time is not recorded.

    Returns:
        ``(index or None, indices of rules whose search ran out of time)``.
    """
    regions = _Regions(view)
    timed_out: list[int] = []
    for i in order:
        rule = rules[i]
        if disabled and id(rule) in disabled:
            continue
        if memo is None:
            try:
                if rule_matches(rule, regions):
                    return i, tuple(timed_out)
            except TimeoutError:
                timed_out.append(i)
            continue
        text = regions.text(rule.region, rule.lines)
        known = memo.get(i)
        if known is not None and known[0] == text:
            matched = known[1]
        else:
            try:
                matched = rule_matches(rule, regions)
            except TimeoutError:
                timed_out.append(i)
                continue
            memo[i] = (text, matched)
        if matched:
            return i, tuple(timed_out)
    return None, tuple(timed_out)


def region_text(view: ScreenView, region: str, lines: int | None = None) -> str | None:
    """The text a rule with ``region``/``lines`` reads (None = region absent). For tests and
    ``pane.explain``-style diagnostics.

    Raises:
        ValueError: unknown region.
    """
    if region not in REGIONS:
        raise ValueError(f"unknown region {region!r}")
    return _Regions(view).text(region, lines)
