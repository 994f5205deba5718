"""Regions and rule evaluation (agents.md §5.1–§5.3), as pure functions."""

from __future__ import annotations

import pytest

from signaltty.core.screen_rules import (
    PatternError,
    ScreenRule,
    ScreenView,
    compile_pattern,
    evaluate,
    is_prompt_line,
    is_rule_line,
    region_text,
)

RULE = "─" * 10

BOX = ScreenView(
    rows=["header", "", "history line", RULE, "❯ typed", "  second", RULE, "footer 1", "footer 2   ", ""],
    title="✳ Claude",
    osc_progress="4;1;-1",
)
CODEX = ScreenView(rows=["› first question", "• answer one", "", "› current", "  continuation", "status"])
CODEX_DONE = ScreenView(rows=["› question", "• answer"])


def rule(id: str, state: str = "idle", *, region: str = "bottom", lines: int | None = None, regex=(), all=(), not_=(), priority: int = 0) -> ScreenRule:
    c = lambda xs: tuple(compile_pattern(x) for x in xs)  # noqa: E731
    return ScreenRule(id, state, region, lines, c(regex), c(all), c(not_), priority)


@pytest.mark.parametrize(
    ("line", "expected"),
    [("───", True), ("  ───── title ──", True), ("─", True), ("──", True), ("──x", False),
     ("─ ─", False), ("x───", False), ("", False), ("╭───", False)],
)
def test_rule_line(line: str, expected: bool) -> None:
    assert is_rule_line(line) is expected


@pytest.mark.parametrize(("line", "expected"), [("›", True), ("  › hi", True), ("›hi", False), ("> hi", False)])
def test_prompt_line(line: str, expected: bool) -> None:
    assert is_prompt_line(line) is expected


@pytest.mark.parametrize(
    ("view", "region", "lines", "expected"),
    [
        (BOX, "bottom", None, f"header\nhistory line\n{RULE}\n❯ typed\n  second\n{RULE}\nfooter 1\nfooter 2"),
        (BOX, "bottom", 2, "footer 1\nfooter 2"),
        (BOX, "top", 2, "header\nhistory line"),
        (BOX, "screen", None, f"header\nhistory line\n{RULE}\n❯ typed\n  second\n{RULE}\nfooter 1\nfooter 2"),
        (BOX, "prompt_box", None, "❯ typed\n  second"),
        (BOX, "above_prompt_box", None, "header\nhistory line"),
        (BOX, "after_last_rule", None, "footer 1\nfooter 2"),
        (BOX, "title", None, "✳ Claude"),
        (BOX, "osc_progress", None, "4;1;-1"),
        (CODEX, "after_last_prompt", None, "  continuation\nstatus"),
        (CODEX, "before_current_prompt", None, "› first question\n• answer one"),
        (CODEX, "without_current_prompt", None, ""),
        (CODEX_DONE, "without_current_prompt", None, "› question\n• answer"),
        (CODEX_DONE, "before_current_prompt", None, "› question\n• answer"),
    ],
)
def test_regions(view: ScreenView, region: str, lines: int | None, expected: str) -> None:
    assert region_text(view, region, lines) == expected


def test_regions_without_markers_fall_back_to_the_whole_screen() -> None:
    plain = ScreenView(rows=["a", "b"])
    assert region_text(plain, "prompt_box") == ""
    assert region_text(plain, "above_prompt_box") == "a\nb"
    assert region_text(plain, "after_last_rule") == "a\nb"
    assert region_text(plain, "after_last_prompt") == "a\nb"
    assert region_text(plain, "title") is None
    assert region_text(plain, "osc_progress") is None


def test_region_text_is_capped() -> None:
    view = ScreenView(rows=["x" * 5000] * 300)
    text = region_text(view, "screen")
    assert text is not None
    assert len(text.split("\n")) == 200
    assert all(len(line) == 1000 for line in text.split("\n"))
    with pytest.raises(ValueError, match="^unknown region 'bottm'$"):
        region_text(view, "bottm")


def test_any_all_not_and_absent_regions() -> None:
    rules = [
        rule("any", regex=["nope", "footer 2"]),
        rule("all", all=["footer 1", "footer 2"]),
        rule("all_missing", all=["footer 1", "nope"]),
        rule("vetoed", regex=["footer"], not_=["footer 2"]),
        rule("empty_matches", region="prompt_box", regex=[""]),
        rule("absent_progress", region="osc_progress", regex=[""]),
        rule("absent_title", region="title", regex=[""]),
    ]
    ev = evaluate(rules, ScreenView(rows=["footer 1", "footer 2"]))
    assert ev.matched == (True, True, False, False, True, False, False)


def test_priority_wins_and_ties_go_to_the_earlier_rule() -> None:
    rules = [rule("low", "idle", regex=[""], priority=-1000), rule("a", "working", regex=["x"], priority=5),
             rule("b", "blocked", regex=["x"], priority=5), rule("hold", "hold", regex=["y"], priority=9)]
    assert evaluate(rules, ScreenView(rows=["x"])).winner == 1
    assert evaluate(rules, ScreenView(rows=["x y"])).winner == 3
    assert evaluate(rules, ScreenView(rows=["z"])).winner == 0
    assert evaluate([], ScreenView(rows=["z"])).winner is None


def test_fallback_and_labels() -> None:
    assert rule("idle_fallback", priority=0).is_fallback
    assert rule("x", priority=-1000).is_fallback
    assert not rule("x", priority=-999).is_fallback
    assert rule("x").label == "bottom(12)"
    assert rule("x", region="top", lines=20).label == "top(20)"
    assert rule("x", region="screen").label == "screen"
    assert rule("x", region="screen", lines=5).label == "screen(5)"


def test_a_runaway_search_times_out_and_disabled_rules_are_skipped() -> None:
    slow = rule("slow", "working", region="screen", regex=["(?:(?:a|aa)+)+c"])
    ok = rule("ok", "idle", regex=["b"])
    view = ScreenView(rows=["a" * 60 + "b"])
    ev = evaluate([slow, ok], view)
    assert ev.timed_out == (0,)
    assert ev.matched == (False, True)
    assert ev.winner == 1
    ev = evaluate([slow, ok], view, {id(slow)})
    assert ev.timed_out == ()
    assert ev.matched == (False, True)


@pytest.mark.parametrize("bad", ["(", "[a-", "(?P<x>a)(?P<x>b)", 3])
def test_bad_patterns_are_rejected(bad: object) -> None:
    with pytest.raises(PatternError):
        compile_pattern(bad)  # type: ignore[arg-type]


def test_winner_short_cut_agrees_with_a_full_evaluation() -> None:
    # every bundled rule set against every fixture screen of every agent
    from pathlib import Path

    from signaltty.agents.catalog import load_catalog
    from signaltty.core.screen_rules import priority_order, winner

    catalog = load_catalog(None)
    screens = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "screens").rglob("*.txt"))
    assert len(screens) > 100
    sets = [e.rules for e in catalog.entries() if e.rules]
    assert len(sets) >= 13
    for path in screens:
        view = ScreenView(rows=path.read_text(encoding="utf-8").split("\n"), title="⠙ x", osc_progress="4;1;50")
        for rules in sets:
            assert winner(rules, view, priority_order(rules))[0] == evaluate(rules, view).winner, path


def test_winner_with_a_memo_agrees_with_a_full_evaluation_over_changing_screens() -> None:
    # one memo per rule set carried across every fixture screen in a shuffled order, each
    # also seen again with one line changed and then unchanged (what the sweep's memo sees)
    import random
    from pathlib import Path

    from signaltty.agents.catalog import load_catalog
    from signaltty.core.screen_rules import priority_order, region_text, winner

    catalog = load_catalog(None)
    screens = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "screens").rglob("*.txt"))
    rng = random.Random(12)
    views: list[ScreenView] = []
    for path in rng.sample(screens, len(screens)):
        rows = path.read_text(encoding="utf-8").split("\n")
        title = rng.choice([None, "⠙ x", "✳ Claude Code"])
        views.append(ScreenView(rows=rows, title=title))
        changed = list(rows)
        changed[rng.randrange(len(changed))] = rng.choice(["", "✻ Doing… (3s · ↓ 12 tokens)", "─" * 40, "› "])
        views += [ScreenView(rows=changed, title=title)] * 2
    sets = [e.rules for e in catalog.entries() if e.rules]
    for rules in sets:
        order = priority_order(rules)
        memo: dict = {}
        for view in views:
            assert winner(rules, view, order, (), memo)[0] == evaluate(rules, view).winner
            for i, (text, _matched) in memo.items():
                if text == region_text(view, rules[i].region, rules[i].lines):
                    assert _matched == evaluate([rules[i]], view).matched[0]
        assert memo  # the rules it tried are on record


def test_a_memo_never_records_a_search_that_ran_out_of_time() -> None:
    from signaltty.core.screen_rules import priority_order, winner

    slow = rule("slow", "working", region="screen", regex=["(?:(?:a|aa)+)+c"], priority=1)
    ok = rule("ok", "idle", regex=["b"])
    view = ScreenView(rows=["a" * 60 + "b"])
    memo: dict = {}
    order = priority_order([slow, ok])
    assert winner([slow, ok], view, order, (), memo) == (1, (0,))
    assert 0 not in memo
    assert memo[1] == ("a" * 60 + "b", True)
    # the same screen again: the slow rule is searched (and times out) again
    assert winner([slow, ok], view, order, (), memo) == (1, (0,))
