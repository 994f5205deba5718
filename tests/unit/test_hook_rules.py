"""states.md §9.1 (Claude), §9.2 (Codex, OpenCode, Cursor) and §9.8 rule rows, through the real
builtin adapters, the assembly ``server/hooks.py`` uses (``agents.hook_input.assemble``) and the
pure ``core.rules.on_hook``/``on_answer``."""

from __future__ import annotations

from typing import Any

import pytest

from signaltty.agents import hook_input, permission
from signaltty.agents.adapters.overlay import resolve_adapter
from signaltty.core import rules
from signaltty.core.model import Decision
from signaltty.core.rules import Alert, Emit
from signaltty.core.states import Attention
from tests.unit.test_rules import NOW, make_pane


def run_hook(
    pane,
    agent: str,
    event: str,
    payload: dict[str, Any] | None = None,
    *,
    decision: Decision | None = None,
    native_route: bool = False,
    now: float | None = None,
    **options: Any,
):
    """One hook as ``HookService._apply_hook`` feeds it to the rules, minus routing and I/O.

    ``options`` are the request's ``foreign_harness``, ``message``, ``body``, ``title`` and
    ``severity``. A PermissionRequest meeting the native contract carries a native decision
    (step 1 of ``hook_event``) unless ``decision`` is given.
    """
    adapter = resolve_adapter(None, agent)
    assert adapter is not None
    if decision is None and event == "PermissionRequest" and permission.meets_native_contract(agent, payload):
        decision = permission.native_decision(agent, payload, now=NOW)
    session_id, rejected = adapter.session_identity(payload)
    assert rejected is None
    hook = hook_input.assemble(
        adapter,
        pane,
        event,
        payload,
        session_id=session_id,
        decision=decision,
        native_route=native_route,
        notification_id="notif_1",
        **options,
    )
    return rules.on_hook(pane, hook, now=NOW if now is None else now)


def names(outcome) -> list[str]:
    return [e.event for e in outcome.effects if isinstance(e, Emit)]


def alerts(outcome) -> list[str]:
    return [e.cause for e in outcome.effects if isinstance(e, Alert)]


def notes(outcome) -> list:
    return [e.notification for e in outcome.effects if isinstance(e, rules.AddNotification)]


def state(pane) -> tuple[str, str]:
    return pane.lifecycle.value, pane.attention.value


def native_dec() -> Decision:
    return permission.native_decision("claude", {"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "ls"}}, now=NOW)


def test_h1_session_start():
    pane = make_pane("claude")
    out = run_hook(pane, "claude", "SessionStart", {"session_id": "S1", "source": "startup"})
    assert state(pane) == ("idle", "none")
    assert out.accepted
    assert pane.agent.agent_session_id == "S1"
    assert pane.agent.resume_argv == ["claude", "--resume", "S1"]
    assert pane.hooked
    assert "agent.idle" in names(out)
    assert "pane.updated" in names(out)


def test_h2_prompt_submit():
    pane = make_pane("claude", "idle")
    run_hook(pane, "claude", "UserPromptSubmit", {"session_id": "S1", "prompt": "fix"})
    assert state(pane) == ("working", "none")


def test_h3_tool_hook_no_events():
    pane = make_pane("claude", "working")
    pane.hooked = True
    out = run_hook(pane, "claude", "PreToolUse", {"tool_name": "Bash"})
    assert out.accepted
    assert names(out) == []
    assert state(pane) == ("working", "none")


def test_h4_permission_request_not_waiting():
    pane = make_pane("claude", "working")
    out = run_hook(pane, "claude", "PermissionRequest", {"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "ls"}})
    assert state(pane) == ("blocked", "permission_required")
    dec = pane.pending_decision
    assert dec.id.startswith("permission_")
    assert dec.answerable is False
    assert dec.native
    assert dec.prompt == 'Allow Bash?\n{\n  "command": "ls"\n}'
    assert [(n.title, n.severity, n.body) for n in notes(out)] == [("Claude needs approval", "warning", "Bash")]
    assert alerts(out) == ["permission"]
    assert out.decision_id == dec.id


BASH = {"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "ls"}}


def cleared(out) -> list[tuple[str, str | None]]:
    return [(e.event, e.payload.get("reason")) for e in out.effects if isinstance(e, Emit) and "cleared" in e.event]


def test_h5_other_tool_ending_keeps_the_request():
    pane = make_pane("claude", "working")
    run_hook(pane, "claude", "PermissionRequest", BASH, native_route=True)
    out = run_hook(pane, "claude", "PostToolUse", {"session_id": "S1", "tool_name": "Read"})  # H5
    assert state(pane) == ("blocked", "permission_required")
    assert names(out) == []
    assert pane.pending_decision is not None


def test_answered_in_dialog_resolves_on_post_tool_use():
    """Issue 11 item 2: 'Yes' in Claude's own dialog while our hook still waits."""
    pane = make_pane("claude", "working")
    run_hook(pane, "claude", "PermissionRequest", BASH, native_route=True)
    dec = pane.pending_decision
    out = run_hook(pane, "claude", "PostToolUse", {"session_id": "S1", "tool_name": "Bash"})
    assert state(pane) == ("working", "none")
    assert pane.pending_decision is None
    assert rules.CancelRoute(dec.id, "moved_on") in out.effects
    assert ("decision.cleared", "moved_on") in cleared(out)
    assert ("attention.cleared", "hook") in cleared(out)
    out = run_hook(pane, "claude", "Stop", {"last_assistant_message": "ok"})
    assert state(pane) == ("done", "unread")
    assert alerts(out) == ["turn_done"]


def test_stop_while_waiting_for_verdict_keeps_needs_approval():
    """Issue 11 item 11: a Stop while the decision is still answerable here never reads finished."""
    pane = make_pane("claude", "working")
    run_hook(pane, "claude", "PermissionRequest", BASH, native_route=True)
    out = run_hook(pane, "claude", "Stop", {"last_assistant_message": "ok"})
    assert state(pane) == ("blocked", "permission_required")
    assert pane.pending_decision is not None
    assert alerts(out) == []
    assert notes(out) == []
    assert pane.last_message != "ok"


def test_stop_after_native_wait_ended_resolves():
    """Issue 11 item 2: the wait timed out (no decision left), the person answered in the
    terminal; PostToolUse is a tool hook on a blocked pane, yet it ends the request."""
    pane = make_pane("claude", "working")
    run_hook(pane, "claude", "PermissionRequest", BASH, native_route=True)
    pane.pending_decision = None  # what the timed-out waiter leaves (server/hooks.py)
    out = run_hook(pane, "claude", "PostToolUse", {"session_id": "S1", "tool_name": "Bash"})
    assert state(pane) == ("working", "none")
    assert ("attention.cleared", "hook") in cleared(out)
    run_hook(pane, "claude", "Stop", {"last_assistant_message": "ok"})
    assert state(pane) == ("done", "unread")


def test_stop_with_unanswerable_decision_resolves():
    """A decision restored from a snapshot is not answerable: a Stop of that session ends it."""
    pane = make_pane("claude", "working")
    run_hook(pane, "claude", "PermissionRequest", BASH)  # no live route: not answerable
    out = run_hook(pane, "claude", "Stop", {"last_assistant_message": "ok"})
    assert state(pane) == ("done", "unread")
    assert pane.pending_decision is None
    assert ("decision.cleared", "moved_on") in cleared(out)
    assert alerts(out) == ["turn_done"]


def test_h7_user_prompt_submit_resolves():
    pane = make_pane("claude", "working")
    run_hook(pane, "claude", "PermissionRequest", BASH, native_route=True)
    out = run_hook(pane, "claude", "UserPromptSubmit", {})  # H7
    assert state(pane) == ("working", "none")
    assert pane.pending_decision is None
    assert ("decision.cleared", "moved_on") in cleared(out)
    assert ("attention.cleared", "hook") in cleared(out)


def test_late_permission_notification_does_not_realert():
    """Issue 11 item 11: Notification(permission_prompt) ~8 s after the request restates it."""
    pane = make_pane("claude", "working")
    first = run_hook(pane, "claude", "PermissionRequest", BASH, native_route=True)
    assert alerts(first) == ["permission"]
    out = run_hook(pane, "claude", "Notification", {"session_id": "S1", "notification_type": "permission_prompt",
                                                    "message": "Claude needs your permission to use Bash"})
    assert alerts(out) == []
    assert notes(out) == []
    assert names(out) == []
    assert state(pane) == ("blocked", "permission_required")
    assert pane.pending_decision is not None


@pytest.mark.parametrize("answered", ["terminal", "signaltty"])
def test_a_permission_notification_after_the_answer_changes_nothing(answered):
    """Sixth attack pass, finding 4: the person answered (in the dialog, PostToolUse; or with
    signaltty) before Claude's Notification(permission_prompt) came: it restates a request
    that is over — not blocked again, no second alert. Long after, it is a request again."""
    pane = make_pane("claude", "working")
    run_hook(pane, "claude", "PermissionRequest", BASH, native_route=True)
    if answered == "terminal":
        run_hook(pane, "claude", "PostToolUse", {"session_id": "S1", "tool_name": "Bash"}, now=NOW + 2)
    else:
        rules.on_answer(pane, pane.pending_decision.id, "once", now=NOW + 2)
    assert state(pane) == ("working", "none")
    note = {"session_id": "S1", "notification_type": "permission_prompt",
            "message": "Claude needs your permission to use Bash"}
    out = run_hook(pane, "claude", "Notification", note, now=NOW + 8)
    assert (state(pane), alerts(out)) == (("working", "none"), [])
    out = run_hook(pane, "claude", "Notification", note, now=NOW + 3 + rules.LATE_RESTATEMENT_S)
    assert (state(pane), alerts(out)) == (("blocked", "permission_required"), ["permission"])


def test_h8_permission_notification():
    pane = make_pane("claude", "working")
    run_hook(pane, "claude", "Notification", {"notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"})
    assert state(pane) == ("blocked", "permission_required")
    assert pane.last_message == "Claude needs your permission to use Bash"


@pytest.mark.parametrize("before", [("done", "unread"), ("idle", "none"), ("done", "none")])
def test_h9_idle_prompt_is_an_alert_only(before):
    """Issue 11 item 8: the idle reminder never turns an idle pane blocked."""
    pane = make_pane("claude", *before)
    pane.last_message = "All tests pass."
    out = run_hook(pane, "claude", "Notification", {"notification_type": "idle_prompt", "message": "Claude is waiting for your input"})
    assert out.accepted
    assert state(pane) == before
    assert alerts(out) == ["idle_prompt"]
    assert notes(out) == []
    assert names(out) == []
    assert pane.last_message == "All tests pass."


def test_h10_stop():
    pane = make_pane("claude", "working")
    out = run_hook(pane, "claude", "Stop", {"last_assistant_message": "All tests pass."})
    assert state(pane) == ("done", "unread")
    assert pane.last_message == "All tests pass."
    assert alerts(out) == ["turn_done"]


@pytest.mark.parametrize(("before", "after"), [(("done", "none"), ("done", "none")), (("failed", "error"), ("failed", "error"))])
def test_h11_h12_session_end_restatement(before, after):
    pane = make_pane("claude", *before)
    pane.last_message = "kept"
    out = run_hook(pane, "claude", "SessionEnd", {"reason": "other"})
    assert state(pane) == after
    assert pane.last_message == "kept"
    assert [n for n in names(out) if n.startswith(("agent.", "attention."))] == []


def test_h13_session_end_while_working():
    pane = make_pane("claude", "working")
    out = run_hook(pane, "claude", "SessionEnd", {"reason": "prompt_input_exit"})
    assert state(pane) == ("done", "unread")
    assert pane.last_message == "session ended"
    assert alerts(out) == ["session_end"]


def test_h14_resume_changes_session_and_generation():
    pane = make_pane("claude", "idle")
    run_hook(pane, "claude", "SessionStart", {"session_id": "S1"})
    assert pane.agent.session_generation == 0
    run_hook(pane, "claude", "SessionStart", {"session_id": "S2", "source": "resume"})
    assert pane.agent.agent_session_id == "S2"
    assert pane.agent.session_generation == 1
    assert pane.agent.resume_argv == ["claude", "--resume", "S2"]
    assert state(pane) == ("idle", "none")


def test_h15_generic_promoted():
    pane = make_pane("generic")
    run_hook(pane, "claude", "UserPromptSubmit", {})
    assert pane.agent.kind == "claude"
    assert state(pane) == ("working", "none")


def test_specific_kind_not_switched_without_id():
    pane = make_pane("codex", "idle")
    run_hook(pane, "claude", "UserPromptSubmit", {})
    assert pane.agent.kind == "codex"


def test_h16_first_hook_withdraws_screen_marker():
    pane = make_pane("claude", "blocked", "input_required")
    pane.attention_marker = "screen"
    out = run_hook(pane, "claude", "PreToolUse", {"tool_name": "Bash"})
    assert state(pane) == ("blocked", "none")
    assert pane.hooked
    assert ("attention.cleared", "hook") in [(e.event, e.payload.get("reason")) for e in out.effects if isinstance(e, Emit)]


def test_h19_harness_mismatch():
    pane = make_pane("claude", "working")
    out = run_hook(pane, "claude", "Stop", {"agent": "codex"}, foreign_harness=True)
    assert (out.accepted, out.dropped, out.reason) == (False, True, "harness_mismatch")
    assert state(pane) == ("working", "none")
    assert out.effects == []


def test_h20_unrecognized():
    pane = make_pane("codex", "working")
    out = run_hook(pane, "codex", "SubagentStop", {})
    assert (out.accepted, out.reason) == (False, "unrecognized_hook")
    assert not pane.hooked


def test_h21_hooks_apply_to_exited_panes():
    pane = make_pane("claude", "working")
    rules.on_exit(pane, 0, now=NOW, shutting_down=False)
    assert state(pane) == ("exited", "unread")
    run_hook(pane, "claude", "SessionEnd", {"session_id": "S3"})
    assert state(pane) == ("done", "unread")
    assert pane.agent.agent_session_id == "S3"


def test_c1_codex_permission():
    pane = make_pane("codex", "working")
    out = run_hook(pane, "codex", "PermissionRequest", {"session_id": "T", "tool_name": "shell", "tool_input": {"command": ["ls"]}})
    assert state(pane) == ("blocked", "permission_required")
    assert pane.pending_decision.native
    assert [(n.title, n.severity, n.body) for n in notes(out)] == [("Codex needs approval", "warning", "shell")]


@pytest.mark.parametrize(("event", "payload"), [("Stop", {"last_assistant_message": "done"}), ("agent-turn-complete", {"type": "agent-turn-complete", "last-assistant-message": "done"})])
def test_c2_c3_codex_turn_done(event, payload):
    pane = make_pane("codex", "working")
    out = run_hook(pane, "codex", event, payload)
    assert state(pane) == ("done", "unread")
    assert [n.title for n in notes(out)] == ["Codex turn complete"]


def test_c4_codex_explicit_decision_typed_channel():
    pane = make_pane("codex", "working")
    dec = Decision(id="d1", prompt="Run?", options=[{"id": "1", "label": "Yes"}, {"id": "2", "label": "No"}], received_at=NOW)
    out = run_hook(pane, "codex", "Notification", {}, decision=dec, message="Run?", severity="info")
    assert pane.pending_decision is dec
    assert dec.answerable is True
    assert "decision.created" in names(out)


def test_c4_attention_input_required_with_decision():
    pane = make_pane("codex", "working")
    pane.attention = Attention.INPUT_REQUIRED
    dec = Decision(id="d1", prompt="Run?", options=[{"id": "1", "label": "Yes"}, {"id": "2", "label": "No"}], received_at=NOW)
    run_hook(pane, "codex", "Notification", {}, decision=dec, message="Run?")
    assert pane.attention == Attention.INPUT_REQUIRED
    assert pane.pending_decision.answerable


@pytest.mark.parametrize(
    ("row", "before", "event", "payload", "after"),
    [
        ("O1", ("idle", "none"), "session.status", {"status": "busy"}, ("working", "none")),
        ("O2", ("working", "none"), "session.status", {"status": {"type": "idle"}}, ("done", "unread")),
        ("O3", ("working", "none"), "session.error", {"message": "rate limited"}, ("failed", "error")),
        ("O4", ("unknown", "none"), "session.created", {"properties": {"info": {"id": "ses_1"}}}, ("idle", "none")),
    ],
)
def test_opencode(row, before, event, payload, after):
    pane = make_pane("opencode", *before)
    out = run_hook(pane, "opencode", event, payload)
    assert state(pane) == after, row
    if row == "O3":
        assert [(n.title, n.body) for n in notes(out)] == [("OpenCode session error", "rate limited")]
    if row == "O4":
        assert pane.agent.agent_session_id == "ses_1"
        assert pane.agent.resume_argv == ["opencode", "--session", "ses_1"]


@pytest.mark.parametrize(("row", "before", "event", "after", "title"), [("U1", "idle", "beforeSubmitPrompt", ("working", "none"), None), ("U2", "working", "stop", ("done", "unread"), "Cursor turn complete")])
def test_cursor(row, before, event, after, title):
    pane = make_pane("cursor", before)
    out = run_hook(pane, "cursor", event, {})
    assert state(pane) == after
    assert [n.title for n in notes(out)] == ([title] if title else [])


def test_explicit_message_notification():
    pane = make_pane("generic", "idle")
    out = run_hook(pane, "generic", "custom", {}, message="hello there", severity="warning")
    assert out.accepted
    assert pane.attention == Attention.WARNING
    (note,) = notes(out)
    assert note.source == "hook:generic:custom"
    assert note.body == "hello there"


def test_d_answer_resumes_blocked_pane():
    pane = make_pane("claude", "working")
    dec = native_dec()
    run_hook(pane, "claude", "PermissionRequest", {"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "ls"}}, decision=dec, native_route=True)
    assert dec.answerable is True
    effects = rules.on_answer(pane, dec.id, "once", now=NOW)
    assert state(pane) == ("working", "none")
    assert pane.pending_decision is None
    evs = [(e.event, e.payload.get("option_id") or e.payload.get("reason")) for e in effects if isinstance(e, Emit)]
    assert evs[:2] == [("decision.answered", "once"), ("attention.cleared", "decision_answer")]


def test_superseded_native_decision_cancels_old_route():
    pane = make_pane("claude", "working")
    first = native_dec()
    run_hook(pane, "claude", "PermissionRequest", {"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "ls"}}, decision=first, native_route=True)
    out = run_hook(pane, "claude", "PermissionRequest", {"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "pwd"}}, native_route=True)
    cancels = [e for e in out.effects if isinstance(e, rules.CancelRoute)]
    assert cancels == [rules.CancelRoute(first.id, "superseded")]
    created = [e for e in out.effects if isinstance(e, Emit) and e.event == "decision.created"][0]
    assert created.payload["prev"] == first.id


def test_session_replacement_clears_decision_moved_on():
    pane = make_pane("claude", "working")
    run_hook(pane, "claude", "SessionStart", {"session_id": "S1"})
    run_hook(pane, "claude", "PermissionRequest", {"session_id": "S1", "tool_name": "Bash", "tool_input": {}}, native_route=True)
    effects, changed = rules.set_session(pane, "claude", "S2", ["claude", "--resume", "S2"])
    assert "agent_session_id" in changed
    assert pane.pending_decision is None
    assert any(isinstance(e, rules.CancelRoute) and e.reason == "moved_on" for e in effects)


def test_resume_rule():
    pane = make_pane("claude", "working", "unread", pending_decision=native_dec())
    pane.live = False
    pane.hooked = True
    effects = rules.on_resume(pane, "pi_2", now=NOW)
    assert pane.live
    assert pane.process_instance == "pi_2"
    assert not pane.hooked
    assert state(pane) == ("unknown", "unread")
    assert pane.lifecycle_source == "resume"
    assert pane.pending_decision is None
    assert ("decision.cleared", "moved_on") in [(e.event, e.payload.get("reason")) for e in effects if isinstance(e, Emit)]


def test_restart_and_resume_then_next_hook_resolves():
    """Issue 11 item 2: a daemon restart + resume leaves "needs approval" with no decision;
    the resumed agent's first hook of the session withdraws it."""
    pane = make_pane("claude", "working")
    run_hook(pane, "claude", "PermissionRequest", BASH, native_route=True)
    rules.restore(pane, has_resume=True)
    assert pane.pending_decision is not None
    assert not pane.pending_decision.answerable
    rules.on_resume(pane, "proc_2", now=NOW)
    assert pane.pending_decision is None
    assert pane.attention == Attention.PERMISSION_REQUIRED
    out = run_hook(pane, "claude", "SessionStart", {"session_id": "S1", "source": "resume"})
    assert state(pane) == ("idle", "none")
    assert ("attention.cleared", "hook") in cleared(out)
