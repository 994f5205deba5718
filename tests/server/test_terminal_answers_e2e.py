"""Issue 11 items 2, 8 and 11 end to end: a fake agent in a real pane calls the real
``signaltty hook-event`` as Claude Code does when a person answers in its own dialog, when
its idle reminder fires, and with a permission request larger than 256 KiB."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.conftest import DaemonProc, wait_until
from tests.server.test_hooks_e2e import Agent, hook

BASH = {"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "touch marker"}}


def _state(a: Agent) -> tuple[str, str]:
    p = a.get()
    return p["lifecycle"], p["attention"]


def _listed(d: DaemonProc) -> list[dict]:
    return json.loads(d.cli("--json", "permission", "list").stdout)["permissions"]


def _assert_resolved(d: DaemonProc, a: Agent) -> None:
    assert _listed(d) == []
    r = d.cli("permission", "answer", a.id, "deny")
    assert r.returncode == 1, r
    assert "NO_SUCH_DECISION" in r.stderr, r


def _gate(tmp: Path) -> Path:
    return tmp / f"gate-{time.monotonic_ns()}"


def test_yes_in_the_agents_dialog_resolves_on_post_tool_use(daemon, tmp_root):
    """Claude shows its dialog while our hook waits; 'Yes' there runs the tool: the
    PostToolUse ends the decision (its waiter gets no verdict), Stop reads finished."""
    gate = _gate(tmp_root)
    a = Agent(daemon, [
        hook("SessionStart", {"session_id": "S1"}),
        hook("UserPromptSubmit", {"session_id": "S1"}),
        {**hook("PermissionRequest", BASH, args=["--wait-for-answer", "--wait-timeout", "60"]), "bg": True},
        {"wait_file": str(gate)},
        hook("PostToolUse", {"session_id": "S1", "tool_name": "Bash", "tool_response": {"stdout": "hi"}}),
        hook("Stop", {"session_id": "S1", "last_assistant_message": "The command ran."}),
        {"join": True},
    ])
    wait_until(lambda: a.get()["pending_decision"] is not None)
    assert _state(a) == ("blocked", "permission_required")
    assert len(_listed(daemon)) == 1
    gate.touch()
    entries = a.wait_entries(5)
    by_hook = {e["hook"]: e for e in entries}
    assert by_hook["PermissionRequest"]["rc"] == 0
    assert by_hook["PermissionRequest"]["stdout"] == ""
    assert _state(a) == ("done", "unread")
    _assert_resolved(daemon, a)
    assert daemon.cli("pane", "mark-seen", a.id).returncode == 0
    assert _state(a) == ("done", "none")


def test_answer_after_the_native_wait_timed_out(daemon, tmp_root):
    """The wait ended (no verdict), the person answered at the terminal: the next hooks of
    the session withdraw "needs approval" and the turn reads finished."""
    gate = _gate(tmp_root)
    a = Agent(daemon, [
        hook("SessionStart", {"session_id": "S1"}),
        hook("UserPromptSubmit", {"session_id": "S1"}),
        hook("PermissionRequest", BASH, args=["--wait-for-answer", "--wait-timeout", "1"]),
        {"wait_file": str(gate)},
        hook("PostToolUse", {"session_id": "S1", "tool_name": "Bash"}),
        hook("Stop", {"session_id": "S1", "last_assistant_message": "ok"}),
    ])
    a.wait_entries(3)
    assert _state(a) == ("blocked", "permission_required")  # the agent asks in its terminal now
    gate.touch()
    a.wait_entries(5)
    assert _state(a) == ("done", "unread")
    _assert_resolved(daemon, a)


def test_stop_while_the_decision_waits_keeps_needs_approval(daemon, tmp_root):
    gate = _gate(tmp_root)
    a = Agent(daemon, [
        hook("SessionStart", {"session_id": "S1"}),
        hook("UserPromptSubmit", {"session_id": "S1"}),
        {**hook("PermissionRequest", BASH, args=["--wait-for-answer", "--wait-timeout", "60"]), "bg": True},
        {"wait_file": str(gate)},
        hook("Notification", {"session_id": "S1", "notification_type": "permission_prompt",
                              "message": "Claude needs your permission to use Bash"}),
        hook("Stop", {"session_id": "S1", "last_assistant_message": "ok"}),
        {"join": True},
    ])
    wait_until(lambda: a.get()["pending_decision"] is not None)
    with daemon.client(timeout=None) as sub:
        sub.call("subscribe", {"events": ["notification.created"]})
        gate.touch()
        a.wait_entries(2 + 2)
        daemon.call("notify", {"pane_id": a.id, "title": "sentinel"})
        ev = sub.next_event(timeout=10)
    # neither "needs approval" again nor "turn complete": the next record is our sentinel
    assert ev is not None
    assert ev["payload"]["notification"]["title"] == "sentinel"
    assert _state(a) == ("blocked", "permission_required")
    assert len(_listed(daemon)) == 1
    r = daemon.cli("permission", "answer", a.id, "allow")
    assert r.returncode == 0, r
    joined = a.wait_entries(5)[-1]
    assert joined["hook"] == "PermissionRequest"
    assert '"allow"' in joined["stdout"]


def test_idle_reminder_keeps_an_idle_pane_idle(daemon):
    a = Agent(daemon, [
        hook("SessionStart", {"session_id": "S1"}),
        hook("UserPromptSubmit", {"session_id": "S1"}),
        hook("Stop", {"session_id": "S1", "last_assistant_message": "All done."}),
        {"sleep": 0.3},
        hook("Notification", {"session_id": "S1", "notification_type": "idle_prompt",
                              "message": "Claude is waiting for your input"}),
    ])
    a.wait_entries(3)
    assert daemon.cli("pane", "mark-seen", a.id).returncode == 0
    entries = a.wait_entries(4)
    assert entries[3]["rc"] == 0
    p = a.get()
    assert (p["lifecycle"], p["attention"], p["last_message"]) == ("done", "none", "All done.")


def test_permission_request_over_256_kib_still_blocks(daemon, tmp_root):
    """A Write of a large file: the payload is cut for display, the decision still works."""
    payload = {"session_id": "S1", "tool_name": "Write",
               "tool_input": {"file_path": "/tmp/big.txt", "content": "x" * (1024 * 1024)}}
    big = tmp_root / "big.json"
    big.write_text(json.dumps(payload))
    a = Agent(daemon, [
        hook("SessionStart", {"session_id": "S1"}),
        hook("UserPromptSubmit", {"session_id": "S1"}),
        {"hook": "PermissionRequest", "agent": "claude", "payload_file": str(big),
         "args": ["--wait-for-answer", "--wait-timeout", "60"]},
    ])
    wait_until(lambda: a.get()["pending_decision"] is not None)
    assert _state(a) == ("blocked", "permission_required")
    listed = _listed(daemon)
    assert [x["tool_name"] for x in listed] == ["Write"]
    assert listed[0]["prompt"].startswith("Allow Write?")
    assert len(listed[0]["prompt"]) <= 8 * 1024
    r = daemon.cli("permission", "answer", a.id, "allow")
    assert r.returncode == 0, r
    entry = a.wait_entries(3)[2]
    assert entry["rc"] == 0
    assert json.loads(entry["stdout"])["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


def test_nested_claude_p_under_a_nix_wrapper_is_dropped(daemon, tmp_root):
    """Nix installs Claude as ``bin/.claude-unwrapped`` behind a ``claude`` wrapper: a nested
    ``claude -p`` run by a tool of the pane's agent is dropped like the plain one."""
    from tests.server.test_hooks_e2e import agent_bin

    nested = agent_bin(tmp_root, ".claude-unwrapped")
    inner_plan = json.dumps([
        hook("SessionStart", {"session_id": "NESTED", "source": "startup"}),
        hook("Stop", {"session_id": "NESTED", "last_assistant_message": "nested done"}),
    ])
    a = Agent(daemon, [
        hook("SessionStart", {"session_id": "OUTER"}),
        hook("UserPromptSubmit", {"session_id": "OUTER"}),
        {"spawn": ["sh", "-c", f"SIGNALTTY_FAKE_LINGER=0 {nested} '{inner_plan}'"]},
    ], name=".claude-unwrapped")
    entries = a.wait_entries(5)
    inner = [e for e in entries if e.get("hook") in ("SessionStart", "Stop")][1:]
    assert len(inner) == 2, inner
    assert all("nested_session" in e["stderr"] for e in inner), inner
    p = a.get()
    assert p["agent"]["agent_session_id"] == "OUTER"
    assert p["agent"]["session_generation"] == 0
    assert p["lifecycle"] == "working"
