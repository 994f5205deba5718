"""Other tools' own detection samples, read by our bundled screen rules (issue 11 item 12).

``tests/fixtures/screens/third_party/<tool>/`` holds the screens other agent dashboards test
their own detectors with, each labelled by that tool's authors; ``manifest.json`` names the
source (repository, commit, file and test) and maps each label to our lifecycle (and the
attention a screen state raises). A sample's text is the screen tail as the tool fed it; it is
classified like a pane: the agent's bundled rule set through the catalog, the last 40 rows,
no title, no OSC progress. A sample no rule decides reads ``unknown``.

Every sample must read as its label says, unless the manifest records ``ours`` (what we read)
and ``why`` (the reason we disagree on purpose: their sample is free text our UI-anchored
rules do not trust, or their label is theirs alone); such a sample may read ``ours`` or come
round to the label, nothing else. ``test_agreement_ratio`` prints the share of samples we
read as labelled and keeps it from falling.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from signaltty.agents.catalog import load_catalog
from signaltty.core.screen_rules import ScreenView, evaluate
from tests.conftest import DaemonProc, wait_until

THIRD_PARTY = Path(__file__).resolve().parents[1] / "fixtures" / "screens" / "third_party"
ROWS = 40
STATES = {"working", "blocked", "idle", "unknown", "hold"}
LABELS = {"working", "blocked", "idle", "not working", "not blocked"}
# Agreement of the bundled rules before issue 11 item 12: 204/335 = 0.609 (203/269 = 0.755
# over the agents that had rules then); after: 286/335 = 0.854.
AGREEMENT_FLOOR = 0.85

CATALOG = load_catalog(None)
DRIVER = Path(__file__).resolve().parents[1] / "fixtures" / "screen_driver.py"


@dataclass(frozen=True, slots=True)
class Sample:
    tool: str
    id: str
    agent: str
    lifecycle: str
    ours: str | None
    why: str | None

    @property
    def path(self) -> Path:
        return THIRD_PARTY / self.tool / f"{self.id}.txt"


def load_samples() -> list[Sample]:
    out: list[Sample] = []
    for manifest in sorted(THIRD_PARTY.glob("*/manifest.json")):
        data = json.loads(manifest.read_text(encoding="utf-8"))
        for row in data["samples"]:
            out.append(
                Sample(
                    tool=manifest.parent.name,
                    id=row["id"],
                    agent=row["agent"],
                    lifecycle=row["lifecycle"],
                    ours=row.get("ours"),
                    why=row.get("why"),
                )
            )
    return out


SAMPLES = load_samples()


def classify(agent: str, text: str) -> str:
    """The winning bundled rule's state, or ``unknown`` when no rule decides."""
    entry = CATALOG.entry(agent)
    assert entry is not None, agent
    rules = entry.rules
    ev = evaluate(rules, ScreenView(text.split("\n")[-ROWS:]))
    assert ev.timed_out == ()
    return "unknown" if ev.winner is None else rules[ev.winner].state


def reads_as_labelled(state: str, label: str) -> bool:
    if label.startswith("not "):
        return state != label.removeprefix("not ")
    return state == label


def test_manifests_and_files_agree() -> None:
    assert SAMPLES, f"no samples under {THIRD_PARTY}"
    for manifest in sorted(THIRD_PARTY.glob("*/manifest.json")):
        data = json.loads(manifest.read_text(encoding="utf-8"))
        # where the samples come from: repository, commit, and per sample its file and test
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", data["repo"]), manifest
        assert re.fullmatch(r"[0-9a-f]{40}", data["commit"]), manifest
        for row in data["samples"]:
            assert row["path"], row
            assert row["test"], row
            assert row["label"], row
    for tool_dir in sorted(p for p in THIRD_PARTY.iterdir() if p.is_dir()):
        listed = {s.id for s in SAMPLES if s.tool == tool_dir.name}
        files = {p.stem for p in tool_dir.glob("*.txt")}
        assert files == listed, (tool_dir.name, sorted(files ^ listed))
    for s in SAMPLES:
        assert s.lifecycle in LABELS, s
        # a recorded disagreement says what we read and why, and really disagrees
        assert (s.ours is None) == (s.why is None), s
        if s.ours is not None:
            assert s.ours in STATES, s
            assert not reads_as_labelled(s.ours, s.lifecycle), s


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: f"{s.tool}/{s.id}")
def test_sample(sample: Sample) -> None:
    state = classify(sample.agent, sample.path.read_text(encoding="utf-8"))
    if sample.ours is None:
        assert reads_as_labelled(state, sample.lifecycle), (state, sample.lifecycle)
    else:
        # a recorded disagreement may come round to the label (the ratio then rises)
        assert state == sample.ours or reads_as_labelled(state, sample.lifecycle), (
            state,
            sample.ours,
            sample.why,
        )


def test_agreement_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    per_tool: dict[str, list[int]] = {}
    for s in SAMPLES:
        state = classify(s.agent, s.path.read_text(encoding="utf-8"))
        counts = per_tool.setdefault(s.tool, [0, 0])
        counts[0] += reads_as_labelled(state, s.lifecycle)
        counts[1] += 1
    agree = sum(c[0] for c in per_tool.values())
    total = sum(c[1] for c in per_tool.values())
    ratio = agree / total
    with capsys.disabled():
        detail = ", ".join(f"{t} {a}/{n}" for t, (a, n) in sorted(per_tool.items()))
        print(f"\nthird-party screen agreement: {agree}/{total} = {ratio:.3f} ({detail})")
    assert ratio >= AGREEMENT_FLOOR


# The examples issue 11 item 12 names, drawn by a driver in a real 120x40 PTY and classified
# by a real daemon's sweep for an unhooked pane of the agent's kind: (screen under
# tests/fixtures/screens/, lifecycle after). Text typed or pasted into the input reads idle first (an unknown pane becomes idle on the
# agent's own prompt), never working; a dialog seen inside a turn ends it done.
LIVE = {
    "claude": [
        ("claude/live_turn_working.nomatch-2", "idle"),
        ("third_party/herdr/claude-shell_still_running_status_line_is_working", "working"),
        (
            "third_party/ccmanager/"
            "claude-should_detect_waiting_input_for_claude_in_chrome_permission_prompt_all",
            "blocked",
        ),
        ("claude/live_turn_working.nomatch-2", "done"),
    ],
    "codex": [
        (
            "third_party/herdr/"
            "codex-codex_pasted_transcript_in_current_prompt_does_not_trigger_working",
            "idle",
        ),
        ("third_party/herdr/codex-codex_queued_follow_up_keeps_active_working_status-1", "working"),
        (
            "third_party/ccmanager/"
            "codex-should_detect_waiting_input_for_mcp_tool_permission_prompt_with_enter_",
            "blocked",
        ),
        ("third_party/herdr/codex-codex_idle", "done"),
    ],
}


@pytest.mark.parametrize("agent", sorted(LIVE))
def test_named_examples_through_a_daemon(daemon: DaemonProc, agent: str) -> None:
    ws = daemon.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pid = daemon.call(
        "pane.spawn",
        {
            "workspace_id": ws,
            "argv": [sys.executable, str(DRIVER)],
            "agent_hint": agent,
            "cols": 120,
            "rows": 40,
        },
    )["pane"]["id"]
    wait_until(lambda: "driver ready" in daemon.call("pane.read", {"pane_id": pid})["text"])
    seen: list[str] = []
    for sample, lifecycle in LIVE[agent]:
        path = THIRD_PARTY.parent / f"{sample}.txt"
        data = (json.dumps({"file": str(path)}) + "\r").encode()
        daemon.call("pane.input", {"pane_id": pid, "data_b64": base64.b64encode(data).decode()})

        def reached(want: str = lifecycle) -> dict[str, Any] | None:
            p: dict[str, Any] = daemon.call("pane.get", {"pane_id": pid})["pane"]
            seen.append(p["lifecycle"])
            return p if p["lifecycle"] == want else None

        try:
            p = wait_until(reached, timeout=10)
        except AssertionError:
            ex = daemon.call("pane.explain", {"pane_id": pid})
            raise AssertionError(f"{sample}: want {lifecycle}, explain {ex['matched']}") from None
        assert p["lifecycle_source"] == "screen"
        if lifecycle == "blocked":
            assert p["attention"] == "input_required"
        if lifecycle == "idle":
            # typed or pasted text never made the pane read working on the way
            assert "working" not in seen, seen
