"""Issue 11 items 1 and 2: Claude sends no hook on Esc nor on "No" in its own dialog, so a
hooked pane settles from its screen — the bundled ``live_prompt_box`` rule (``ends_turn``)
held 1 s after the last hook — while a turn that still shows its spinner never does.

The screens are the real Claude Code 2.1.197 captures (tests/fixtures/real-agents/claude/),
shown by a driver program in a real 120×40 pane of a real daemon with the bundled rules.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DaemonProc, holds_for, wait_until
from tests.server.test_screen_sweep import DRIVER, PY, get

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "real-agents" / "claude"
IDLE = (SCREENS / "04_idle_after_slow.txt").read_text(encoding="utf-8")
# Esc while streaming: the turn is removed and the prompt text put back into the box
RESTORED = SCREENS / "08_after_interrupt.txt"
# Esc during the turn / "No" in the dialog: the "Interrupted" line above an empty prompt box
INTERRUPTED = IDLE.replace("✻ Crunched for 8s", "  ⎿  Interrupted · What should Claude do instead?")
BUDGET_S = 2.0


def spawn(d: DaemonProc) -> str:
    ws = d.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pane = d.call("pane.spawn", {"workspace_id": ws, "argv": [PY, str(DRIVER)], "agent_hint": "claude",
                                 "cols": 120, "rows": 40})["pane"]
    wait_until(lambda: "driver ready" in d.call("pane.read", {"pane_id": pane["id"]})["text"])
    return pane["id"]


def frame(d: DaemonProc, pane_id: str, path: Path) -> None:
    d.call("pane.input", {"pane_id": pane_id, "data_b64": _b64(json.dumps({"file": str(path)}) + "\r")})


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def hook(d: DaemonProc, pane_id: str, event: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    return d.call("hook-event", {"agent": "claude", "event": event, "pane_id": pane_id,
                                 "payload": {"session_id": "S1", **(payload or {})}})


def stays(d: DaemonProc, pane_id: str, lifecycle: str, seconds: float) -> None:
    """The behaviour is a span: the pane keeps ``lifecycle`` for ``seconds``."""
    holds_for(lambda: get(d, pane_id)["lifecycle"] == lifecycle, seconds, what=f"stays {lifecycle}")


def settles(d: DaemonProc, pane_id: str) -> tuple[dict[str, Any], float]:
    t0 = time.monotonic()
    p = wait_until(lambda: (q := get(d, pane_id))["lifecycle"] in ("idle", "done") and q, timeout=10)
    return p, time.monotonic() - t0


@pytest.mark.parametrize("after", ["restored", "interrupted"])
def test_esc_while_working_settles_within_two_seconds(daemon: DaemonProc, tmp_root: Path, after: str) -> None:
    pid = spawn(daemon)
    hook(daemon, pid, "UserPromptSubmit", {"prompt": "slow"})
    frame(daemon, pid, SCREENS / "03_working.txt")
    stays(daemon, pid, "working", 3.0)  # the spinner and "esc to interrupt": never done
    screen = RESTORED
    if after == "interrupted":
        screen = tmp_root / "interrupted.txt"
        screen.write_text(INTERRUPTED, encoding="utf-8")
    frame(daemon, pid, screen)
    p, took = settles(daemon, pid)
    assert took <= BUDGET_S + 0.5, f"settled after {took:.1f} s"
    assert (p["lifecycle"], p["attention"], p["lifecycle_source"]) == ("idle", "none", "screen")
    assert p["last_message"] == "turn interrupted"
    assert p["hooked"]
    hook(daemon, pid, "UserPromptSubmit")  # the next turn is hook-driven as before
    assert get(daemon, pid)["lifecycle"] == "working"


def test_a_hook_keeps_the_turn_running(daemon: DaemonProc) -> None:
    """The idle prompt must hold 1 s after the last hook: hooks every 0.4 s keep it working."""
    pid = spawn(daemon)
    hook(daemon, pid, "UserPromptSubmit")
    frame(daemon, pid, RESTORED)
    for _ in range(6):
        time.sleep(0.4)  # the hooks' pace is the behaviour (under the 1 s hold)
        hook(daemon, pid, "PreToolUse", {"tool_name": "Read"})
        assert get(daemon, pid)["lifecycle"] == "working"
    settles(daemon, pid)


def test_no_in_the_agents_dialog_resolves_the_decision(daemon: DaemonProc, tmp_root: Path) -> None:
    pid = spawn(daemon)
    hook(daemon, pid, "UserPromptSubmit")
    hook(daemon, pid, "PermissionRequest", {"tool_name": "Bash", "tool_input": {"command": "touch x"}})
    frame(daemon, pid, SCREENS / "05_permission.txt")
    stays(daemon, pid, "blocked", 2.5)  # the dialog is on screen
    assert get(daemon, pid)["pending_decision"] is not None
    screen = tmp_root / "interrupted.txt"
    screen.write_text(INTERRUPTED, encoding="utf-8")
    frame(daemon, pid, screen)
    p, took = settles(daemon, pid)
    assert took <= BUDGET_S + 0.5, f"settled after {took:.1f} s"
    assert (p["lifecycle"], p["attention"], p["pending_decision"]) == ("idle", "none", None)
    r = daemon.cli("permission", "answer", pid, "deny")
    assert r.returncode == 1
    assert "NO_SUCH_DECISION" in r.stderr
