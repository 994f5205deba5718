"""Screen-rule, OSC 7501 and recovery transitions as pure rules (states.md §9.5–§9.7)."""

from __future__ import annotations

import pytest

from signaltty.core import layer_rules as L
from signaltty.core import rules
from signaltty.core.model import Decision, Pane
from signaltty.core.states import Attention, Authority, Lifecycle


def pane(lifecycle: str = "unknown", attention: str = "none", marker: str | None = None, source: str | None = None) -> Pane:
    p = Pane(id="pane_1", workspace_id="ws_1", argv=["claude"], cwd="/", launch_cwd="/", created_at=0.0,
             last_activity_at=0.0)
    p.agent.kind = "claude"
    p.lifecycle = Lifecycle(lifecycle)
    p.attention = Attention(attention)
    p.attention_marker = marker
    p.lifecycle_source = source
    return p


def events(effects: list[rules.Effect]) -> list[str]:
    return [e.event for e in effects if isinstance(e, rules.Emit)]


def alerts(effects: list[rules.Effect]) -> list[str]:
    return [e.cause for e in effects if isinstance(e, rules.Alert)]


# ---------------------------------------------------------------- §9.5 screen rules

@pytest.mark.parametrize(
    "row,before,state,after,alert",
    [
        ("S1", ("unknown", "none", None), "working", ("working", "none"), []),
        ("S2", ("working", "none", None), "idle", ("done", "unread"), ["turn_done"]),
        ("S3", ("working", "none", None), "blocked", ("blocked", "input_required"), ["input"]),
        ("S4", ("blocked", "input_required", "screen"), "working", ("working", "none"), []),
        ("S5", ("blocked", "input_required", "screen"), "idle", ("idle", "none"), []),
        ("S6", ("idle", "none", None), "idle", ("idle", "none"), []),
        ("S8", ("working", "none", None), "hold", ("working", "none"), []),
        ("S9", ("working", "none", None), None, ("working", "none"), []),
    ],
)
def test_screen_table(row, before, state, after, alert) -> None:
    p = pane(*before)
    effects = L.on_screen_state(p, state, now=10.0)
    assert (p.lifecycle.value, p.attention.value) == after, row
    assert alerts(effects) == alert, row
    if state in ("working", "blocked", "idle") and p.lifecycle.value != before[0]:
        assert p.lifecycle_source == "screen"


def test_s3_marker_screen_and_s4_withdrawal_reason() -> None:
    p = pane("working")
    L.on_screen_state(p, "blocked", now=1.0)
    assert p.attention_marker == "screen"
    effects = L.on_screen_state(p, "working", now=2.0)
    cleared = [e for e in effects if isinstance(e, rules.Emit) and e.event == "attention.cleared"]
    assert cleared and cleared[0].payload["reason"] == "screen"


def test_screen_never_raises_permission_and_repeated_blocked_does_not_realert() -> None:
    p = pane("working")
    L.on_screen_state(p, "blocked", now=1.0)
    assert p.attention == Attention.INPUT_REQUIRED
    assert L.on_screen_state(p, "blocked", now=2.0) == []


def test_s10_error_raise_resets_marker_nothing_withdrawn() -> None:
    p = pane("blocked", "input_required", "screen")
    rules.raise_attention(p, Attention.ERROR, "notify", "error", now=1.0)
    assert p.attention_marker is None
    L.on_screen_state(p, "working", now=2.0)
    assert (p.lifecycle, p.attention) == (Lifecycle.WORKING, Attention.ERROR)


def test_authority_screen_only_with_rules_and_without_hooks() -> None:
    p = pane()
    assert p.authority == Authority.NONE
    p.screen_rules = True
    assert p.authority == Authority.SCREEN
    p.program_status = {"state": "working"}
    assert p.authority == Authority.PROGRAM_STATUS
    p.hooked = True
    assert p.authority == Authority.HOOK


# ---------------------------------------------------------------- §9.6 OSC 7501

@pytest.mark.parametrize(
    "row,before,report,after,alert",
    [
        ("P2", ("unknown", "none", None), ("working", None), ("working", "none"), []),
        ("P3", ("working", "none", None), ("blocked", "permission"), ("blocked", "permission_required"), ["permission"]),
        ("P4", ("blocked", "permission_required", "program_status"), ("working", None), ("working", "none"), []),
        ("P5", ("working", "none", None), ("blocked", "question"), ("blocked", "input_required"), ["input"]),
        ("P6", ("working", "none", None), ("idle", None), ("done", "unread"), ["turn_done"]),
        ("P7", ("working", "none", None), ("done", None), ("done", "unread"), ["turn_done"]),
        ("P8", ("working", "none", None), ("error", None), ("failed", "error"), ["error"]),
        ("idle<-blocked", ("blocked", "input_required", "program_status"), ("idle", None), ("idle", "none"), []),
        ("idle<-unknown", ("unknown", "none", None), ("idle", None), ("idle", "none"), []),
        ("idle<-done", ("done", "none", None), ("idle", None), ("done", "none"), []),
        ("idle<-failed", ("failed", "none", None), ("idle", None), ("failed", "none"), []),
        ("done<-done", ("done", "none", None), ("done", None), ("done", "none"), []),
        ("error<-failed", ("failed", "none", None), ("error", None), ("failed", "none"), []),
    ],
)
def test_program_status_table(row, before, report, after, alert) -> None:
    p = pane(*before)
    effects = L.on_program_status(p, report[0], report[1], None, now=5.0)
    assert (p.lifecycle.value, p.attention.value) == after, row
    assert alerts(effects) == alert, row


def test_p3_marker_and_p4_cleared_reason() -> None:
    p = pane("working")
    L.on_program_status(p, "blocked", "permission", None, now=1.0)
    assert p.attention_marker == "program_status" and p.lifecycle_source == "program_status"
    effects = L.on_program_status(p, "working", None, None, now=2.0)
    cleared = [e for e in effects if isinstance(e, rules.Emit) and e.event == "attention.cleared"]
    assert cleared[0].payload["reason"] == "program_status"


def test_p7_message_from_msg_only_when_it_drives_a_change() -> None:
    p = pane("working")
    L.on_program_status(p, "done", None, "Tests passed", now=1.0)
    assert p.last_message == "Tests passed"
    assert L.on_program_status(p, "done", None, "Another", now=2.0) == []
    assert p.last_message == "Tests passed"


def test_p13_repeated_working_changes_nothing() -> None:
    p = pane("working", source="program_status")
    assert L.on_program_status(p, "working", None, "x", now=1.0) == []


def test_p12_end_of_authority_returns_live_states_to_idle() -> None:
    p = pane("working", source="program_status")
    effects = L.end_program_status(p, now=1.0)
    assert p.lifecycle == Lifecycle.IDLE and events(effects) == ["agent.idle"]
    p = pane("blocked", "input_required", "program_status", source="program_status")
    L.end_program_status(p, now=1.0)
    assert (p.lifecycle, p.attention) == (Lifecycle.IDLE, Attention.NONE)
    p = pane("done", "unread", source="program_status")
    assert L.end_program_status(p, now=1.0) == []
    p = pane("working", source="hook")
    L.end_program_status(p, now=1.0)
    assert p.lifecycle == Lifecycle.WORKING


# ---------------------------------------------------------------- §9.7 recovery

def test_recovery_candidates() -> None:
    assert L.recovery_candidate(pane("working", source="hook"))
    assert L.recovery_candidate(pane("working", source="program_status"))
    assert not L.recovery_candidate(pane("working", source="screen"))  # R6
    assert not L.recovery_candidate(pane("blocked", source="hook"))
    p = pane("working", source="hook")
    p.pending_decision = Decision(id="d", prompt="?", options=[{"id": "a", "label": "A"}], received_at=0.0)
    assert not L.recovery_candidate(p)
    p = pane("working", source="hook")
    p.live = False
    assert not L.recovery_candidate(p)


@pytest.mark.parametrize(
    "row,evidence_since,last_signal,n,now,due",
    [
        ("R1 early", 5.0, 0.0, 20, 24.9, False),
        ("R1", 5.0, 0.0, 20, 25.0, True),
        ("R2 restarted", 15.0, 15.0, 20, 34.0, False),
        ("R2", 15.0, 15.0, 20, 35.0, True),
        ("R4 disabled", 5.0, 0.0, 0, 1000.0, False),
        ("no evidence", None, 0.0, 20, 1000.0, False),
        ("R5", 2.0, 2.0, 20, 22.0, True),
    ],
)
def test_recovery_due(row, evidence_since, last_signal, n, now, due) -> None:
    assert L.recovery_due(evidence_since, last_signal, n, now) is due, row


def test_recover_keeps_hooked_and_sets_message() -> None:
    p = pane("working", source="hook")
    p.hooked = True
    effects = L.recover(p, now=30.0)
    assert (p.lifecycle, p.attention, p.lifecycle_source) == (Lifecycle.DONE, Attention.UNREAD, "recovery")
    assert p.hooked and p.authority == Authority.HOOK
    assert p.last_message == "turn ended without a stop signal"
    assert alerts(effects) == ["turn_done"]
