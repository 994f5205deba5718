"""``core.layer_rules.settle``: the agent's own screen says its turn is over (issue 11 items 1, 2)."""

from __future__ import annotations

from signaltty.core import layer_rules, rules
from signaltty.core.rules import CancelRoute, Emit
from signaltty.core.states import Attention, Lifecycle
from tests.unit.test_rules import NOW, decision, make_pane


def hooked(lifecycle: str, attention: str = "none", source: str = "hook"):
    pane = make_pane("claude", lifecycle, attention, live=True, hooked=True)
    pane.lifecycle_source = source
    return pane


def test_candidates():
    assert layer_rules.settle_candidate(hooked("working"))
    assert layer_rules.settle_candidate(hooked("working", source="program_status"))
    assert layer_rules.settle_candidate(hooked("blocked", "permission_required"))
    assert not layer_rules.settle_candidate(hooked("blocked", "input_required", source="screen"))
    assert not layer_rules.settle_candidate(hooked("done", "unread"))
    assert not layer_rules.settle_candidate(hooked("working", source="recovery"))
    unhooked = hooked("working")
    unhooked.hooked = False
    assert not layer_rules.settle_candidate(unhooked)


def test_esc_while_working_reads_idle_without_alert():
    pane = hooked("working", "unread")
    out = layer_rules.settle(pane, now=NOW)
    assert (pane.lifecycle, pane.attention) == (Lifecycle.IDLE, Attention.UNREAD)  # unread kept
    assert pane.lifecycle_source == "screen"
    assert pane.last_message == "turn interrupted"
    assert not any(isinstance(e, rules.Alert) for e in out)


def test_no_in_the_dialog_clears_the_decision_and_its_waiter():
    pane = hooked("blocked", "permission_required")
    pane.pending_decision = decision(native=True)
    pane.last_message = "Allow Bash?"
    out = layer_rules.settle(pane, now=NOW)
    assert (pane.lifecycle, pane.attention, pane.pending_decision) == (Lifecycle.IDLE, Attention.NONE, None)
    assert CancelRoute("permission_1", "moved_on") in out
    assert [e.event for e in out if isinstance(e, Emit)] == ["decision.cleared", "attention.cleared", "agent.idle"]
    assert pane.last_message == "Allow Bash?"


def test_manifest_key_is_for_idle_rules_and_claude_uses_it():
    from signaltty.agents.catalog import load_catalog
    from signaltty.agents.manifest import compile_screen_rules

    idle, busy = compile_screen_rules([
        {"id": "p", "state": "idle", "regex": ["❯"], "ends_turn": True},
        {"id": "w", "state": "working", "regex": ["…"], "ends_turn": True},
    ], "x.toml", "user")
    assert idle.ends_turn
    assert not busy.ends_turn
    _, claude = load_catalog(None).rules_for("claude", "claude")
    assert [r.id for r in claude if r.ends_turn] == ["live_prompt_box"]
