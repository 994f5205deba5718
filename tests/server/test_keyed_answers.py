"""Gemini CLI permissions answered by keys typed into its own dialog (issue 11; agents/keyed.py):
a decision from its ``Notification(ToolPermission)`` hook, answered only while the screen
shows the dialog."""

from __future__ import annotations

import pytest

from signaltty.agents import keyed
from signaltty.proto.envelope import SignalttyError
from tests.conftest import wait_until
from tests.server.test_hooks_e2e import Agent, hook

ASK = {"session_id": "g1", "hook_event_name": "Notification", "notification_type": "ToolPermission",
       "message": "Tool Confirm Shell Command requires execution",
       "details": {"type": "exec", "title": "Confirm Shell Command", "command": "touch x", "rootCommand": "touch"}}
DIALOG = "\r\n? Shell touch x\r\nAllow execution of [Shell]?\r\n● 1. Allow once\r\n  2. Allow for this session\r\n"


def test_decision_only_from_gemini_tool_permission() -> None:
    dec = keyed.decision_for("gemini", "Notification", ASK, now=1.0)
    assert dec is not None
    assert not dec.native
    assert dec.tool_name == "Confirm Shell Command"
    assert [o["id"] for o in dec.options] == ["once", "deny"]
    assert dec.prompt.startswith("Tool Confirm Shell Command requires execution\n{")
    assert keyed.keys_for(dec, "once") == b"1"
    assert keyed.keys_for(dec, "deny") == b"\x1b"
    assert keyed.ends_turn(dec, "deny")
    assert not keyed.ends_turn(dec, "once")
    assert keyed.dialog_shown(dec, DIALOG)
    assert not keyed.dialog_shown(dec, "> Type your message")
    for agent, event, payload in [("claude", "Notification", ASK), ("gemini", "AfterTool", ASK),
                                  ("gemini", "Notification", {**ASK, "notification_type": "Other"}),
                                  ("gemini", "Notification", None), ("gemini", "Notification", [ASK])]:
        assert keyed.decision_for(agent, event, payload, now=1.0) is None
    huge = keyed.decision_for("gemini", "Notification", {**ASK, "details": {"command": "é" * 10000}}, now=1.0)
    assert huge is not None
    assert len(huge.prompt.encode()) <= keyed.MAX_PROMPT_BYTES


def _blocked(daemon, plan_tail: list[dict]) -> Agent:
    a = Agent(daemon, [hook("Notification", ASK, agent="gemini"), *plan_tail, {"sleep": 30}], name="gemini")
    wait_until(lambda: (a.get()["lifecycle"], a.get()["attention"]) == ("blocked", "permission_required"), 15)
    (dec,) = daemon.call("permission.list", {"pane_id": a.id})["permissions"]
    assert (dec["native"], dec["answerable"], dec["agent"]) == (False, True, "gemini")
    return a


def _screen(daemon, a: Agent) -> str:
    return daemon.call("pane.read", {"pane_id": a.id, "mode": "screen"})["text"]


def test_allow_types_1_and_deny_types_esc_into_the_dialog(daemon):
    a = _blocked(daemon, [{"print": DIALOG}])
    wait_until(lambda: "Allow execution of" in _screen(daemon, a), 15)
    r = daemon.call("decision.answer", {"pane_id": a.id, "verdict": "allow"})
    assert (r["answered"], r["option_id"], r["lifecycle"]) == (True, "once", "working")
    wait_until(lambda: _screen(daemon, a).rstrip().endswith("1"), 15)  # the tty echoes what was typed

    b = _blocked(daemon, [{"print": DIALOG}])
    wait_until(lambda: "Allow execution of" in _screen(daemon, b), 15)
    r = daemon.call("decision.answer", {"pane_id": b.id, "verdict": "deny"})
    # Gemini's "No" cancels the turn and sends no hook: the pane is idle at once
    assert (r["option_id"], r["lifecycle"], r["attention"]) == ("deny", "idle", "none")
    wait_until(lambda: _screen(daemon, b).rstrip().endswith("^["), 15)


def test_nothing_is_typed_when_the_dialog_is_not_on_screen(daemon):
    a = _blocked(daemon, [{"print": "\r\n> Type your message\r\n"}])
    wait_until(lambda: "Type your message" in _screen(daemon, a), 15)
    before = _screen(daemon, a)
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"pane_id": a.id, "verdict": "allow"})
    assert exc.value.code == "NO_SUCH_DECISION"
    assert daemon.call("permission.list", {"pane_id": a.id})["permissions"] == []
    assert _screen(daemon, a) == before
