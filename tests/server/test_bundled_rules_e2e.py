"""The bundled screen rules through a real daemon, fed with screens captured from the real CLIs.

A driver in a real 120×40 PTY replays each ANSI capture (``capture-pane -e``) as a fresh
frame; the daemon's sweep classifies the unhooked pane with the bundled rules of its kind —
no user manifests. The captures are ``tests/fixtures/real-agents/`` (README of that folder).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DaemonProc, wait_until

PY = sys.executable
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-agents"

DRIVER = Path(__file__).resolve().parents[1] / "fixtures" / "screen_driver.py"

# (agent, capture sequence, lifecycle after each capture)
SCENARIOS = [
    ("claude", [("03_working", "working"), ("05_permission", "blocked"), ("03_working", "working"), ("04_idle_after_slow", "done")]),
    ("codex", [("03_working", "working"), ("05_permission", "blocked"), ("03_working", "working"), ("02_idle_after_hello", "done")]),
    ("opencode", [("03_working", "working"), ("05_permission", "blocked"), ("03_working", "working"), ("02_idle_after_hello", "done")]),
    ("pi", [("03_working", "working"), ("05_permission", "blocked"), ("03_working", "working"), ("02_idle_after_hello", "done")]),
]


@pytest.mark.parametrize(("agent", "steps"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_real_captures_drive_an_unhooked_pane(daemon: DaemonProc, agent: str, steps: list[tuple[str, str]]) -> None:
    if not REAL.is_dir():
        pytest.fail(f"real captures missing: {REAL}")
    ws = daemon.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pid = daemon.call(
        "pane.spawn",
        {"workspace_id": ws, "argv": [PY, str(DRIVER)], "agent_hint": agent, "cols": 120, "rows": 40},
    )["pane"]["id"]
    wait_until(lambda: "driver ready" in daemon.call("pane.read", {"pane_id": pid})["text"])
    for capture, lifecycle in steps:
        path = REAL / agent / f"{capture}_ansi.txt"
        if not path.exists():
            path = REAL / agent / f"{capture}.txt"
        data = (json.dumps({"file": str(path)}) + "\r").encode()
        daemon.call("pane.input", {"pane_id": pid, "data_b64": base64.b64encode(data).decode()})

        def reached(want: str = lifecycle) -> dict[str, Any] | None:
            p = daemon.call("pane.get", {"pane_id": pid})["pane"]
            return p if p["lifecycle"] == want else None

        try:
            p = wait_until(reached, timeout=10)
        except AssertionError:
            ex = daemon.call("pane.explain", {"pane_id": pid})
            raise AssertionError(f"{agent} {capture}: expected {lifecycle}, explain: {ex['matched']}") from None
        assert p["authority"] == "screen"
        assert p["lifecycle_source"] == "screen"
        if lifecycle == "blocked":
            assert p["attention"] == "input_required"
    ex = daemon.call("pane.explain", {"pane_id": pid})
    assert ex["source"] == "bundled"
    assert ex["rules"][-1]["id"] == "idle_fallback"
