"""Bundled screen rules against their hand-written fixture screens (agents.md §5, §6).

Layout of ``tests/fixtures/screens/<id>/``: ``<rule_id>.match[-N].txt`` is a screen on which
rule ``<rule_id>`` of manifest ``<id>`` must match, ``<rule_id>.nomatch[-N].txt`` one on which
it must not (a near miss). An optional sidecar ``<same stem>.json`` holds ``title`` and
``osc_progress`` (absent = the region is absent) and ``winner``, the id of the rule that must
win the whole set on that screen. Rules are read through the catalog loader, exactly as the
daemon gets them.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path

import pytest

from signaltty.agents.catalog import load_catalog
from signaltty.core.screen_rules import (
    FALLBACK_ID,
    FALLBACK_PRIORITY,
    ScreenRule,
    ScreenView,
    evaluate,
)

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"
RULE_IDS = (
    "claude",
    "codex",
    "opencode",
    "cursor",
    "pi",
    "gemini",
    "copilot",
    "droid",
    "kilo",
    "qodercli",
    "muse",
    "antigravity",
    "grok",
)
# Generic entries whose rules came with issue 11 item 12; their catalog rows are checked in
# tests/agents/test_manifest.py, their rules here.
RULE_ONLY_IDS = ("kimi", "cline", "amp", "kiro", "hermes")
ALL_RULE_IDS = RULE_IDS + RULE_ONLY_IDS
BUILTIN = {"claude", "codex", "opencode", "cursor", "pi"}
ORDER = {
    "claude": 10,
    "codex": 20,
    "opencode": 30,
    "cursor": 40,
    "pi": 50,
    "gemini": 60,
    "copilot": 70,
    "droid": 80,
    "grok": 95,
    "kilo": 90,
    "qodercli": 100,
    "muse": 110,
    "antigravity": 120,
}
COLS, ROWS = 120, 40

CATALOG = load_catalog(None)


def rules_of(entry_id: str) -> tuple[ScreenRule, ...]:
    entry = CATALOG.entry(entry_id)
    assert entry is not None, f"bundled entry {entry_id!r} missing (failures: {CATALOG.failures})"
    return entry.rules


def screen_view(txt: Path) -> tuple[ScreenView, dict]:
    """The fixture as the sweep sees it: at most 40 rows, the sidecar's title/progress."""
    rows = txt.read_text(encoding="utf-8").split("\n")[:ROWS]
    side = txt.with_suffix(".json")
    meta = json.loads(side.read_text(encoding="utf-8")) if side.exists() else {}
    return ScreenView(rows, meta.get("title"), meta.get("osc_progress")), meta


def fixtures() -> list[Path]:
    return sorted(SCREENS.glob("*/*.txt"))


def parse_name(txt: Path) -> tuple[str, str, bool]:
    """``(entry id, rule id, expect match)`` from ``<id>/<rule>.match[-N].txt``."""
    rule_id, kind = txt.stem.split(".", 1)
    assert re.fullmatch(r"(?:no)?match(?:-\d+)?", kind), f"bad fixture name {txt.name}"
    return txt.parent.name, rule_id, not kind.startswith("no")


def test_no_catalog_failures() -> None:
    assert CATALOG.failures == []


@pytest.mark.parametrize("entry_id", RULE_IDS)
def test_catalog_fields(entry_id: str) -> None:
    """The §4.6 row: kind, order, and binaries covering every detect name."""
    e = CATALOG.entry(entry_id)
    assert e is not None
    assert e.source == "bundled"
    assert e.kind == (entry_id if entry_id in BUILTIN else "generic")
    assert e.order == ORDER[entry_id]
    assert e.display_name
    assert e.binaries
    assert set(e.launch.detect) <= set(e.binaries)
    assert e.file.endswith(f"{entry_id}.toml")


# id -> (detect, prompt (mode, flag, separator), bypass_args, continue_args, resume), agents.md §4.6
LAUNCH = {
    "claude": (
        ("claude",),
        ("argv", None, None),
        ("--dangerously-skip-permissions",),
        ("--continue",),
        ("claude", "--resume", "{id}"),
    ),
    "codex": (
        ("codex",),
        ("argv", None, None),
        ("--dangerously-bypass-approvals-and-sandbox",),
        ("resume", "--last"),
        ("codex", "resume", "{id}"),
    ),
    "opencode": (
        ("opencode",),
        ("flag", "--prompt", None),
        (),
        ("--continue",),
        ("opencode", "--session", "{id}"),
    ),
    "cursor": (
        ("cursor-agent",),
        ("argv", None, None),
        ("--yolo",),
        ("--continue",),
        ("cursor-agent", "--resume", "{id}"),
    ),
    "pi": (("pi",), ("argv", None, None), (), ("--continue",), ("pi", "--session", "{id}")),
    "gemini": (("gemini",), ("flag", "--prompt-interactive", None), ("--yolo",), (), ("gemini", "--resume", "{id}")),
    "copilot": (("copilot",), ("flag", "-i", None), ("--yolo",), (), None),
    "droid": (("droid",), ("argv", None, None), ("--auto", "high"), (), None),
    "kilo": (("kilo",), ("after-start", None, None), (), (), None),
    "qodercli": (("qodercli", "qoder"), ("flag", "--prompt-interactive", None), (), (), None),
    "muse": (("muse",), ("after-start", None, None), (), (), None),
    "antigravity": (
        ("agy",),
        ("flag", "-i", None),
        ("--dangerously-skip-permissions", "--mode", "accept-edits"),
        ("--continue",),
        ("agy", "--conversation", "{id}"),
    ),
    "grok": (("grok",), ("argv", None, "--"), ("--yolo",), (), None),
}
BINARIES = {
    "copilot": ("copilot", "github-copilot", "ghcs"),
    "kilo": ("kilo", "kilo-code"),
    "qodercli": ("qodercli", "qoder", "qoderclicn", "qodercn"),
    "muse": ("muse", "muse-code", "muse-cli", "muse-bin-*"),
    "antigravity": ("agy", "antigravity", "antigravity-cli"),
    "grok": ("grok", "grok-build"),
}


@pytest.mark.parametrize("entry_id", RULE_IDS)
def test_launch_fields(entry_id: str) -> None:
    e = CATALOG.entry(entry_id)
    assert e is not None
    launch = e.launch
    detect, prompt, bypass, cont, resume = LAUNCH[entry_id]
    assert launch.detect == detect
    assert launch.command == detect[0]
    assert (launch.prompt.mode, launch.prompt.flag, launch.prompt.separator) == prompt
    assert launch.prompt.delay_ms == 3000
    assert launch.args == ()
    assert launch.bypass_env == {}
    assert (launch.bypass_args, launch.continue_args, e.resume) == (bypass, cont, resume)
    assert e.binaries == BINARIES.get(entry_id, detect)
    assert (e.homepage is None) == (entry_id == "muse")
    assert e.install_url == ("https://x.ai/cli" if entry_id == "grok" else None)


@pytest.mark.parametrize("entry_id", ALL_RULE_IDS)
def test_rule_set_shape(entry_id: str) -> None:
    """Unique ids, ends with ``idle_fallback``, only that rule is a fallback (§5.4)."""
    rules = rules_of(entry_id)
    ids = [r.id for r in rules]
    assert len(ids) == len(set(ids)), ids
    last = rules[-1]
    assert (last.id, last.state, last.priority) == (FALLBACK_ID, "idle", FALLBACK_PRIORITY)
    assert [p.pattern for p in last.regex] == [""]
    assert all(not r.is_fallback for r in rules[:-1])


def test_grok_title_status() -> None:
    """Grok's ``[title_status] blocked`` becomes the 1200 title rule (agents.md §4.1, §4.6)."""
    rule = next(r for r in rules_of("grok") if r.id == "title_blocked")
    assert (rule.state, rule.region, rule.priority) == ("blocked", "title", 1200)
    assert [p.pattern for p in rule.regex] == ["Action Required"]


# Constructs CPython 3.11's ``re`` rejects; the patterns must stay portable.
_NON_PORTABLE = re.compile(r"\(\?>|[*+?}]\+|\\[pPXKG]")


@pytest.mark.parametrize("entry_id", ALL_RULE_IDS)
def test_patterns_are_portable(entry_id: str) -> None:
    for rule in rules_of(entry_id):
        for pat in (*rule.regex, *rule.all, *rule.not_):
            assert not _NON_PORTABLE.search(pat.pattern), (rule.id, pat.pattern)
            re.compile(pat.pattern)  # the same text is valid Python ``re`` syntax


@pytest.mark.parametrize("entry_id", ALL_RULE_IDS)
def test_every_rule_has_fixtures(entry_id: str) -> None:
    """A matching and a non-matching screen per rule (the fallback matches everything)."""
    have: dict[str, set[bool]] = {}
    for txt in (SCREENS / entry_id).glob("*.txt"):
        _, rule_id, want = parse_name(txt)
        have.setdefault(rule_id, set()).add(want)
    ids = {r.id for r in rules_of(entry_id)}
    assert set(have) <= ids, f"fixtures for unknown rules: {set(have) - ids}"
    for rule_id in ids:
        need = {True} if rule_id == FALLBACK_ID else {True, False}
        assert have.get(rule_id, set()) >= need, (
            f"{entry_id}/{rule_id}: fixtures {have.get(rule_id)}"
        )


@pytest.mark.parametrize("txt", fixtures(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fixture(txt: Path) -> None:
    entry_id, rule_id, want = parse_name(txt)
    rules = rules_of(entry_id)
    index = next(i for i, r in enumerate(rules) if r.id == rule_id)
    view, meta = screen_view(txt)
    ev = evaluate(rules, view)
    assert ev.timed_out == ()
    matched = [r.id for r, m in zip(rules, ev.matched, strict=True) if m]
    assert ev.matched[index] is want, (
        f"{rule_id} matched={ev.matched[index]}; all matched: {matched}"
    )
    if "winner" in meta:
        assert ev.winner is not None
        assert rules[ev.winner].id == meta["winner"], f"matched: {matched}"


def _worst_case_screen() -> ScreenView:
    # Full 120x40 screen of text that starts the expensive alternatives (prompt marks, spinners,
    # timers, dialog words) without completing them.
    row = "› ⠋ Working (1s • do you want to proceed esc to ── ❯ ⬢ allow " * 3
    return ScreenView([row[:COLS]] * ROWS, "⠋ Action title", "4;0;0")


@pytest.mark.parametrize("entry_id", ALL_RULE_IDS)
def test_evaluation_is_cheap(entry_id: str) -> None:
    """One evaluation of a bundled set on a full 120x40 screen stays well under a millisecond
    budget per rule (the sweep runs it for every changed pane every 500 ms; agents.md §5)."""
    rules = rules_of(entry_id)
    view = _worst_case_screen()
    times = []
    for _ in range(30):
        t0 = time.perf_counter()
        ev = evaluate(rules, view)
        times.append(time.perf_counter() - t0)
        assert ev.timed_out == ()
    assert statistics.median(times) < 0.002 * len(rules) + 0.005
