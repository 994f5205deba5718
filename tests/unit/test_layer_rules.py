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
    p.turn_input = True  # the tables describe a pane that was given a prompt
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
    ("row", "before", "state", "after", "alert"),
    [
        ("S1", ("unknown", "none", None), "working", ("working", "none"), []),
        ("S2", ("working", "none", None), "idle", ("done", "unread"), ["turn_done"]),
        ("S3", ("working", "none", None), "blocked", ("blocked", "input_required"), ["input"]),
        ("S4", ("blocked", "input_required", "screen"), "working", ("working", "none"), []),
        # S5 for a dialog not preceded by work in this turn (issue 11 item 7: see below)
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


def test_s5_dialog_in_a_turn_seen_working_ends_the_turn_done_unread() -> None:
    # issue 11 item 7: Pi/Gemini show a dialog mid-turn, and the end of the turn after it
    # (the prompt back, the dialog gone) must read like any finished turn
    p = pane("working")
    L.on_screen_state(p, "blocked", now=1.0)
    effects = L.on_screen_state(p, "idle", now=2.0)
    assert (p.lifecycle, p.attention, p.attention_marker) == (Lifecycle.DONE, Attention.UNREAD, None)
    assert alerts(effects) == ["turn_done"]
    assert events(effects) == ["attention.cleared", "agent.done", "attention.created"]


def test_s5_dialog_right_after_typed_input_ends_the_turn_done_unread() -> None:
    # the sweep missed the short "working" between the prompt and the dialog (Pi): input
    # given after the last state still puts the dialog inside a turn
    p = pane("done", source="screen")
    p.lifecycle_since = 5.0
    p.turn_input = True
    p.input_at = 6.0
    L.on_screen_state(p, "blocked", now=7.0)
    effects = L.on_screen_state(p, "idle", now=9.0)
    assert (p.lifecycle, p.attention) == (Lifecycle.DONE, Attention.UNREAD)
    assert alerts(effects) == ["turn_done"]
    # the next dialog, with no input since that turn ended, is not inside a turn
    L.on_screen_state(p, "blocked", now=10.0)
    L.on_screen_state(p, "idle", now=11.0)
    assert (p.lifecycle, p.attention) == (Lifecycle.IDLE, Attention.NONE)


def test_s5_dialog_without_work_before_it_ends_idle_none() -> None:
    p = pane("idle")
    L.on_screen_state(p, "blocked", now=1.0)
    effects = L.on_screen_state(p, "idle", now=2.0)
    assert (p.lifecycle, p.attention) == (Lifecycle.IDLE, Attention.NONE)
    assert alerts(effects) == []


def test_s7_idle_prompt_makes_unknown_idle_but_the_fallback_does_not() -> None:
    # issue 11 item 9: an agent's own idle prompt at start-up reads idle (pane submit works)
    p = pane("unknown")
    assert L.on_screen_state(p, "idle", now=1.0, fallback=True) == []
    assert p.lifecycle == Lifecycle.UNKNOWN
    effects = L.on_screen_state(p, "idle", now=2.0)
    assert (p.lifecycle, p.attention, p.lifecycle_source) == (Lifecycle.IDLE, Attention.NONE, "screen")
    assert events(effects) == ["agent.idle"]
    assert alerts(effects) == []


def test_s3_marker_screen_and_s4_withdrawal_reason() -> None:
    p = pane("working")
    L.on_screen_state(p, "blocked", now=1.0)
    assert p.attention_marker == "screen"
    effects = L.on_screen_state(p, "working", now=2.0)
    cleared = [e for e in effects if isinstance(e, rules.Emit) and e.event == "attention.cleared"]
    assert cleared
    assert cleared[0].payload["reason"] == "screen"


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
    ("row", "before", "report", "after", "alert"),
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
    assert p.attention_marker == "program_status"
    assert p.lifecycle_source == "program_status"
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
    assert p.lifecycle == Lifecycle.IDLE
    assert events(effects) == ["agent.idle"]
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
    ("row", "evidence_since", "last_signal", "n", "now", "due"),
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
    assert p.hooked
    assert p.authority == Authority.HOOK
    assert p.last_message == "turn ended without a stop signal"
    assert alerts(effects) == ["turn_done"]


# ---------------------------------------------------------------- issue 11 item 5

@pytest.mark.parametrize("via", ["screen", "program_status"])
def test_agent_without_input_never_reads_done(via) -> None:
    """Start-up working (a spinner title, a redraw after a resize) then idle, before anyone
    gave the agent input: idle/none, no alert; after input the same sequence is a turn."""
    for given, after, alert in ((False, ("idle", "none"), []), (True, ("done", "unread"), ["turn_done"])):
        p = pane("unknown")
        p.agent.kind = "codex"
        p.turn_input = given
        if via == "screen":
            L.on_screen_state(p, "working", now=1.0)
            effects = L.on_screen_state(p, "idle", now=2.0)
        else:
            L.on_program_status(p, "working", None, None, now=1.0)
            effects = L.on_program_status(p, "idle", None, None, now=2.0)
        assert (p.lifecycle.value, p.attention.value) == after, given
        assert alerts(effects) == alert


def test_plain_program_status_without_input_still_reads_done() -> None:
    """A program that is no agent (OSC 7501 from a build tool) runs by itself: done."""
    p = pane("unknown")
    p.agent.kind = "none"
    p.turn_input = False
    L.on_program_status(p, "working", None, None, now=1.0)
    L.on_program_status(p, "idle", None, None, now=2.0)
    assert (p.lifecycle.value, p.attention.value) == ("done", "unread")


def test_recovery_after_a_hook_turn_reads_done_without_input() -> None:
    """A hook said working (a launch prompt given in argv): recovery still finishes it."""
    p = pane("working", source="hook")
    p.turn_input = False
    L.recover(p, now=5.0)
    assert (p.lifecycle.value, p.attention.value) == ("done", "unread")


def test_program_status_withdraws_what_the_screen_raised() -> None:
    """Codex's "Hooks need review" dialog (screen: blocked/input_required), then its first
    idle report: the dialog is over, idle/none (issue 11 item 4)."""
    p = pane("unknown")
    p.agent.kind = "codex"
    L.on_screen_state(p, "blocked", now=1.0, message="choose 2")
    assert (p.lifecycle.value, p.attention.value, p.last_message) == ("blocked", "input_required", "choose 2")
    L.on_program_status(p, "idle", None, None, now=2.0)
    assert (p.lifecycle.value, p.attention.value) == ("idle", "none")
    # a blocked report keeps it; a requirement some other layer raised is not touched
    q = pane("blocked", "input_required", "screen")
    L.on_program_status(q, "blocked", None, None, now=2.0)
    assert q.attention.value == "input_required"
    r = pane("done", "unread")
    L.on_program_status(r, "idle", None, None, now=2.0)
    assert r.attention.value == "unread"


def test_keys_answering_a_startup_dialog_start_no_turn() -> None:
    """Codex 0.171.0 after "2. Trust all and continue" in its start-up "Hooks need review"
    dialog: OSC 7501 idle, working (~30 ms), idle. The keys answered a dialog the screen saw
    before any turn, so the blip reads idle/none; a prompt typed afterwards starts a turn."""
    p = pane("unknown")
    p.agent.kind = "codex"
    p.turn_input = False
    L.on_screen_state(p, "blocked", now=1.0)  # the dialog, before any input
    assert not L.input_starts_turn(p)
    L.on_program_status(p, "idle", None, None, now=2.0)
    assert L.input_starts_turn(p)  # the dialog is gone: typing now is a prompt
    L.on_program_status(p, "working", None, None, now=2.03)
    effects = L.on_program_status(p, "idle", None, None, now=2.06)
    assert (p.lifecycle, p.attention) == (Lifecycle.IDLE, Attention.NONE)
    assert alerts(effects) == []


def test_keys_answering_a_dialog_inside_a_turn_are_turn_input() -> None:
    p = pane("working", source="hook")
    p.turn_input = False  # e.g. resumed: the turn is the agent's own
    L.on_screen_state(p, "blocked", now=1.0)
    assert p.dialog_in_turn
    assert L.input_starts_turn(p)
    q = pane("idle", source="hook")
    q.turn_input = False
    q.lifecycle = Lifecycle.BLOCKED
    q.lifecycle_source = "hook"  # a permission the agent's hook reported: its answer counts
    assert L.input_starts_turn(q)


def test_a_second_dialog_sets_its_own_message() -> None:
    """Codex: the folder-trust dialog, answered, then "Hooks need review" while the pane is
    still blocked: the last message is the second dialog's hint (new-user pass)."""
    p = pane("unknown")
    L.on_screen_state(p, "blocked", now=1.0, message=None)
    assert p.last_message is None
    effects = L.on_screen_state(p, "blocked", now=2.0, message="choose 2. Trust all and continue")
    assert p.last_message == "choose 2. Trust all and continue"
    assert isinstance(effects[0], rules.MarkDirty)
    assert alerts(effects) == []  # the same requirement: no second alert


def test_dialog_between_turns_leaves_the_pane_idle() -> None:
    """A hooked pane between turns (Gemini CLI's sign-in after ``SessionStart``) is a dialog
    candidate; the dialog gone, it is idle again, while one inside a turn goes on working."""
    p = pane("idle", source="hook")
    p.hooked = True
    assert L.dialog_candidate(p)
    p.pending_decision = Decision(id="d1", prompt="Bash: ls", options=[], received_at=0.0)
    assert not L.dialog_candidate(p)  # a hook-reported request: the hooks say what it is
    p.pending_decision = None
    L.on_screen_state(p, "blocked", now=1.0)
    assert L.dialog_candidate(p)
    L.dialog_left(p, now=2.0)
    assert (p.lifecycle, p.attention) == (Lifecycle.IDLE, Attention.NONE)
    q = pane("working", source="hook")
    q.hooked = True
    L.on_screen_state(q, "blocked", now=1.0)
    L.dialog_left(q, now=2.0)
    assert q.lifecycle == Lifecycle.WORKING
