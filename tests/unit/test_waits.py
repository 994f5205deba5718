"""states.md §5 and the pure parts of §9.9 (wait outcomes, baselines, predicates)."""

from __future__ import annotations

import pytest

from signaltty.core import waits
from signaltty.core.states import Attention, Lifecycle
from tests.unit.test_rules import make_pane


def test_parse_until():
    assert waits.parse_until("done") == ["done"]
    assert waits.parse_until(["done", "blocked"]) == ["done", "blocked"]
    for bad in ("bogus", [], ["done", 3], None, {"a": 1}):  # W9
        with pytest.raises(waits.WaitError) as exc:
            waits.parse_until(bad)
        assert exc.value.code == "BAD_PARAMS"


def test_w2_current_state_matches_without_baseline():
    pane = make_pane(lifecycle="done", attention="unread")
    seqs = {"lifecycle": 3, "lifecycle:done": 3}
    assert waits.evaluate(pane, seqs, ["done"], None, None) == waits.Satisfied("done", 3)


def test_w3_w4_baseline_needs_newer_transition():
    pane = make_pane(lifecycle="done")
    seqs = {"lifecycle": 3, "lifecycle:done": 3, "attention": 0}
    base = waits.baseline(pane, seqs)
    lseq, aseq = waits.check_baseline(pane, seqs, base)
    assert waits.evaluate(pane, seqs, ["done"], lseq, aseq) is None  # W3
    # working → done → working: the brief done still matches (W4)
    seqs.update({"lifecycle:working": 5, "lifecycle:done": 6, "lifecycle": 7})
    pane.lifecycle = Lifecycle.WORKING
    assert waits.evaluate(pane, seqs, ["done"], lseq, aseq) == waits.Satisfied("done", 6)


def test_w6_first_listed_outcome_wins():
    pane = make_pane(lifecycle="blocked")
    seqs = {"lifecycle:blocked": 2}
    assert waits.evaluate(pane, seqs, ["done", "blocked"], None, None).outcome == "blocked"


def test_seen_alias_and_exited():
    pane = make_pane(lifecycle="working", attention="none")
    assert waits.evaluate(pane, {}, ["seen"], None, None).outcome == "seen"
    assert waits.evaluate(pane, {}, ["exited"], None, None) is None
    assert waits.evaluate(pane, {"exited": 9}, ["exited"], 0, 0) == waits.Satisfied("exited", 9)


def test_baseline_errors():
    pane = make_pane()
    seqs = {"lifecycle": 2, "attention": 1}
    good = waits.baseline(pane, seqs)
    for bad, code in [
        (dict(good, pane_id="pane_other"), "BAD_PARAMS"),
        (dict(good, process_instance=""), "BAD_PARAMS"),
        (dict(good, lifecycle_seq=99), "BAD_PARAMS"),
        (dict(good, process_instance="pi_other"), "IDENTITY_CHANGED"),  # W5
        (dict(good, session_generation=4), "IDENTITY_CHANGED"),
        (dict(good, agent_session_id="S9"), "IDENTITY_CHANGED"),
        ("nope", "BAD_PARAMS"),
    ]:
        with pytest.raises(waits.WaitError) as exc:
            waits.check_baseline(pane, seqs, bad)
        assert exc.value.code == code, bad
    # first discovery of a session id is allowed
    pane.agent.agent_session_id = "S1"
    assert waits.check_baseline(pane, seqs, good) == (2, 1)
    assert pane.attention == Attention.NONE


def test_exited_matches_a_restored_pane_whose_program_ended():
    # After a daemon restart the pane keeps the lifecycle its exit gave it (done) and this
    # daemon has no exit seq for it: it has still exited (no baseline); a live pane has not.
    pane = make_pane(lifecycle="done", attention="unread")
    pane.live = False
    assert waits.evaluate(pane, {}, ["exited"], None, None) == waits.Satisfied("exited", 0)
    pane.live = True
    assert waits.evaluate(pane, {}, ["exited"], None, None) is None
