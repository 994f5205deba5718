"""states.md §9.3 (exit), §9.4 (notify/BEL/OSC rules) and §1 axis rules, on the pure core."""

from __future__ import annotations

import pytest

from signaltty.core import rules
from signaltty.core.model import AgentInfo, Decision, Pane, iso, parse_iso
from signaltty.core.rules import Alert, Emit, NotificationInput
from signaltty.core.states import Attention, Lifecycle, RestoreState

NOW = 1_800_000_000.0


def make_pane(kind: str = "generic", lifecycle: str = "unknown", attention: str = "none", **kw) -> Pane:
    pane = Pane(
        id="pane_x",
        workspace_id="ws_x",
        argv=["prog"],
        cwd="/",
        launch_cwd="/",
        created_at=NOW,
        last_activity_at=NOW,
        agent=AgentInfo(kind=kind),
        lifecycle=Lifecycle(lifecycle),
        attention=Attention(attention),
        process_instance="pi_1",
        **kw,
    )
    return pane


def decision(native: bool = False) -> Decision:
    return Decision(
        id="permission_1" if native else "d1",
        prompt="Allow Bash?",
        options=[{"id": "once", "label": "Allow once"}, {"id": "deny", "label": "Deny"}],
        received_at=NOW,
        native=native,
    )


def events(effects: list[rules.Effect]) -> list[str]:
    return [e.event for e in effects if isinstance(e, Emit)]


def alerts(effects: list[rules.Effect]) -> list[str]:
    return [e.cause for e in effects if isinstance(e, Alert)]


# states.md §9.3
EXIT_TABLE = [
    ("E1", "generic", "unknown", "none", False, 0, "done", "unread"),
    ("E2", "generic", "working", "none", False, 3, "failed", "unread"),
    ("E3", "generic", "unknown", "none", False, 137, "failed", "unread"),
    ("E4", "generic", "unknown", "none", False, None, "exited", "unread"),
    ("E5", "claude", "working", "none", False, 0, "exited", "unread"),
    ("E6", "claude", "done", "none", False, 0, "done", "none"),
    ("E7", "claude", "done", "unread", False, 0, "done", "unread"),
    ("E8", "claude", "blocked", "permission_required", True, 1, "exited", "unread"),
    ("E9", "codex", "failed", "error", False, 0, "failed", "error"),
]


@pytest.mark.parametrize(("row", "kind", "lc", "att", "has_dec", "code", "lc2", "att2"), EXIT_TABLE)
def test_exit_table(row, kind, lc, att, has_dec, code, lc2, att2):
    pane = make_pane(kind, lc, att, pending_decision=decision(native=True) if has_dec else None)
    effects = rules.on_exit(pane, code, now=NOW, shutting_down=False)
    assert (pane.lifecycle.value, pane.attention.value) == (lc2, att2), row
    assert pane.live is False
    assert pane.exit_code == code
    assert pane.restore_state == RestoreState.EXITED
    names = events(effects)
    assert names[0] == "pane.exited"
    if att2 == "unread" and att != "unread":
        assert "exit" in alerts(effects)
    if row == "E6":
        assert alerts(effects) == []
        assert names == ["pane.exited"]
    if row == "E8":
        assert names == ["pane.exited", "agent.exited", "attention.cleared", "decision.cleared", "attention.created"]
        cleared = [e for e in effects if isinstance(e, Emit) and e.event == "attention.cleared"][0]
        assert cleared.payload["reason"] == "pane_exited"
        assert any(isinstance(e, rules.CancelRoute) for e in effects)
        assert pane.pending_decision is None


def test_exit_e10_during_shutdown_not_applied():
    pane = make_pane("generic", "working")
    assert rules.on_exit(pane, 0, now=NOW, shutting_down=True) == []
    assert pane.live
    assert pane.lifecycle == Lifecycle.WORKING


def test_exit_is_idempotent_per_instance():
    pane = make_pane()
    rules.on_exit(pane, 0, now=NOW, shutting_down=False)
    assert rules.on_exit(pane, 1, now=NOW, shutting_down=False) == []
    assert pane.exit_code == 0


def note(title=None, body=None, severity="info", source="osc9"):
    return NotificationInput(id="notif_1", title=title, body=body, severity=severity, source=source, attention_source="osc")


# states.md §9.4 (rule side; the byte side is in tests/term/test_osc.py)
def test_n1_osc9_raises_unread_and_sets_message():
    pane = make_pane(lifecycle="working")
    effects = rules.on_notification(pane, note(body="Build finished"), now=NOW)
    assert (pane.lifecycle, pane.attention) == (Lifecycle.WORKING, Attention.UNREAD)
    assert pane.last_message == "Build finished"
    assert events(effects) == ["attention.created"]
    assert alerts(effects) == ["message"]
    added = [e for e in effects if isinstance(e, rules.AddNotification)][0].notification
    assert added.source == "osc9"
    assert added.pane_id == "pane_x"
    assert added.body == "Build finished"


def test_n2_title_and_body_message():
    pane = make_pane(lifecycle="idle")
    rules.on_notification(pane, note("Deploy", "done", source="osc777"), now=NOW)
    assert pane.last_message == "Deploy: done"
    assert pane.attention == Attention.UNREAD


def test_n5_bell():
    pane = make_pane(lifecycle="working")
    effects = rules.on_bell(pane, now=NOW)
    assert pane.attention == Attention.UNREAD
    assert alerts(effects) == ["bell"]


def test_n7_raise_never_lowers_no_event_but_alert():
    pane = make_pane(lifecycle="blocked", attention="input_required")
    effects = rules.on_notification(pane, note("x", "y", severity="warning", source="cli"), now=NOW)
    assert pane.attention == Attention.INPUT_REQUIRED
    assert events(effects) == []
    assert alerts(effects) == ["warning"]


def test_n8_error_updates():
    pane = make_pane(lifecycle="done", attention="unread")
    effects = rules.on_notification(pane, note("boom", None, severity="error", source="cli"), now=NOW)
    assert pane.attention == Attention.ERROR
    assert events(effects) == ["attention.updated"]
    upd = [e for e in effects if isinstance(e, Emit)][0]
    assert upd.payload == {"pane_id": "pane_x", "attention": "error", "prev": "unread", "source": "osc", "cause": "error"}


def test_notify_without_pane_only_record_and_alert():
    effects = rules.on_notification(None, note("hello", None, source="cli"), now=NOW)
    assert [type(e).__name__ for e in effects] == ["AddNotification", "Alert"]


def test_title_change_and_same_title():
    pane = make_pane()
    assert events(rules.on_title(pane, "hi")) == ["pane.updated"]
    assert pane.title == "hi"
    assert rules.on_title(pane, "hi") == []
    assert rules.on_title(pane, "") == []
    assert pane.title == "hi"


def test_set_title_changes_the_title_without_an_event():
    """The pump coalesces title events (Codex's spinner): ``set_title`` applies the change
    as ``on_title`` does and only says whether there was one."""
    pane = make_pane()
    assert rules.set_title(pane, "hi\x1b[31m") is True
    assert (pane.title, pane.title_from_osc) == ("hi", True)
    assert rules.set_title(pane, "hi") is False
    assert rules.set_title(pane, "") is False
    assert rules.set_title(pane, "ho", sanitized=True) is True  # the scanner's Title.text
    assert pane.title == "ho"
    assert events(rules.title_updated(pane)) == ["pane.updated"]


@pytest.mark.parametrize(
    ("ts", "text"),
    [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (NOW, "2027-01-15T08:00:00.000Z"),
        (NOW + 0.9999, "2027-01-15T08:00:00.999Z"),  # truncated, never rounded up
        (NOW + 59.0005, "2027-01-15T08:00:59.000Z"),
    ],
)
def test_wire_times_are_rfc3339_utc_milliseconds(ts: float, text: str):
    assert iso(ts) == text
    assert parse_iso(text) == pytest.approx(ts, abs=0.001)
    assert iso(None) is None


def test_title_is_sanitized_and_capped():
    pane = make_pane()
    rules.on_title(pane, "a\x1b[31mred\u202e" + "x" * 300)
    assert "\x1b" not in pane.title
    assert "\u202e" not in pane.title
    assert len(pane.title) <= 200


def test_last_message_capped_at_300():
    pane = make_pane()
    rules.on_notification(pane, note(body="y" * 1000), now=NOW)
    assert len(pane.last_message) == 300
    assert pane.last_message.endswith("…")


def test_lifecycle_same_state_emits_nothing_and_last_run_recorded():
    pane = make_pane()
    assert events(rules.set_lifecycle(pane, Lifecycle.WORKING, "hook", now=NOW)) == ["agent.working"]
    assert rules.set_lifecycle(pane, Lifecycle.WORKING, "hook", now=NOW + 1) == []
    rules.set_lifecycle(pane, Lifecycle.DONE, "hook", now=NOW + 4.5)
    assert pane.last_run_secs == 4.5
    assert pane.last_lifecycle == Lifecycle.WORKING


def test_mark_seen_clears_unless_decision_pending():
    pane = make_pane(attention="unread")
    effects = rules.mark_seen(pane, "mark_seen", now=NOW)
    assert pane.attention == Attention.NONE
    assert pane.last_seen_at == NOW
    assert events(effects) == ["attention.cleared"]
    # D6: a pending decision keeps attention
    pane = make_pane(lifecycle="blocked", attention="permission_required", pending_decision=decision(True))
    effects = rules.mark_seen(pane, "mark_seen", now=NOW)
    assert pane.attention == Attention.PERMISSION_REQUIRED
    assert pane.last_seen_at == NOW
    assert events(effects) == []


def test_marker_set_only_on_changing_layer_raise_and_reset_by_other_raise():
    pane = make_pane(lifecycle="blocked")
    rules.raise_attention(pane, Attention.INPUT_REQUIRED, "screen", "input", now=NOW, marker="screen")
    assert pane.attention_marker == "screen"
    rules.raise_attention(pane, Attention.ERROR, "notify", "error", now=NOW)
    assert pane.attention_marker is None


@pytest.mark.parametrize(
    ("was_live", "resume", "state"),
    [(True, True, "RESUMABLE"), (True, False, "RESTORED"), (False, False, "EXITED")],
)
def test_restore_states(was_live, resume, state):
    pane = make_pane(lifecycle="idle", attention="unread")
    pane.live = was_live
    if resume:
        pane.agent.resume_argv = ["claude", "--resume", "S1"]
    rules.restore(pane, has_resume=resume)
    assert pane.restore_state.value == state
    assert not pane.live
    assert (pane.lifecycle, pane.attention) == (Lifecycle.IDLE, Attention.UNREAD)


def test_restore_native_decision_unanswerable():
    dec = decision(native=True)
    dec.answerable = True
    pane = make_pane(lifecycle="blocked", attention="permission_required", pending_decision=dec)
    rules.restore(pane, has_resume=False)
    assert pane.pending_decision is not None
    assert pane.pending_decision.answerable is False


def test_close_clears_decision_then_closed():
    pane = make_pane(pending_decision=decision())
    assert events(rules.on_close(pane)) == ["decision.cleared", "pane.closed"]


def test_an_answer_replaces_the_requests_message():
    """After allow or deny the pane no longer says "permission requested" (new-user pass)."""
    for option, said in (("once", "permission allowed"), ("deny", "permission denied"), ("later", "answered: later")):
        p = make_pane(lifecycle="blocked", attention="permission_required")
        p.last_message = "permission requested"
        rules.on_answer(p, "d1", option, now=1.0)
        assert p.last_message == said
