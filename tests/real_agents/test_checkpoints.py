"""Issue 11, "The real-agent tier": the real CLIs in signaltty panes against the fake model.

Each test is one checkpoint of the scenario (scenario.py) for one agent: what signaltty says
(lifecycle/attention via the daemon's ``wait``/``pane.get``, within 2 s of the screen showing
it) and what the agent did (the permitted command ran, the denied one did not).

``KNOWN`` lists the checkpoints that fail today, each with what was observed, as strict
xfails (only an ``AssertionError`` counts: a CLI that cannot be driven is a real failure).
When a fix makes one pass, the strict mark fails the run: delete that line.
"""

from __future__ import annotations

import math

import pytest

from tests.real_agents.scenario import HIDDEN_DIALOG_LIMIT_S, Scenario

pytestmark = pytest.mark.realagents

ALL = ("claude", "codex", "opencode", "pi", "gemini")

# (agent, checkpoint) → what fails today and why (observed with the pinned versions).
KNOWN: dict[tuple[str, str], str] = {
}
# Failing only sometimes today, so not strict (a strict mark would make the run flaky).
FLAKY: dict[tuple[str, str], str] = {
}


def agents(checkpoint: str, only: tuple[str, ...] = ALL) -> list[object]:
    """Parameters for the ``scenario`` fixture, with today's xfail marks for this checkpoint."""
    out: list[object] = []
    for name in only:
        marks = []
        if (name, checkpoint) in KNOWN:
            marks.append(pytest.mark.xfail(strict=True, raises=AssertionError, reason=KNOWN[name, checkpoint]))
        elif (name, checkpoint) in FLAKY:
            marks.append(pytest.mark.xfail(strict=False, raises=AssertionError, reason=FLAKY[name, checkpoint]))
        out.append(pytest.param(name, marks=marks, id=name))
    return out


def checkpoint(name: str, only: tuple[str, ...] = ALL) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("scenario", agents(name, only), indirect=True)


@checkpoint("hooks_review", only=("codex",))
def test_hooks_review_dialog_reads_blocked(scenario: Scenario) -> None:
    scenario.check("start", "hooks_review")


@checkpoint("start")
def test_start_reads_idle(scenario: Scenario) -> None:
    scenario.check("start", "idle")


@checkpoint("answer")
def test_answer_reads_done(scenario: Scenario) -> None:
    scenario.check("answer", "done")


@checkpoint("prompt")
def test_prompt_reads_working(scenario: Scenario) -> None:
    scenario.check("stream", "working")


@checkpoint("stream")
def test_stream_reads_working_throughout(scenario: Scenario) -> None:
    scenario.check("stream", "throughout")


@checkpoint("stream_end")
def test_stream_end_reads_done(scenario: Scenario) -> None:
    scenario.check("stream", "done")


@checkpoint("blocked")
def test_permission_prompt_reads_blocked(scenario: Scenario) -> None:
    # Pi has no permissions of its own: the dialog is the user's extension's ctx.ui.confirm,
    # so "needs input" is as right as "needs permission" there.
    wanted = ("permission_required", "input_required") if scenario.a.name == "pi" else ("permission_required",)
    bad = []
    for step in ("allow_sig", "deny_sig", "allow_dbus", "allow_tty", "allow_resumed"):
        obs = scenario.observation(step, "blocked")
        if not (obs.lifecycle == "blocked" and obs.attention in wanted):
            bad.append(f"{step}: {obs.message()}")
    assert not bad, "\n".join(bad)


def _answered(scenario: Scenario, step: str) -> None:
    st = scenario.run_to(step)
    code, out = st.facts["answer"]
    assert st.facts["listed"], f"permission list showed nothing while the dialog was on screen; answer: {out}"
    assert code == 0, f"signaltty permission answer failed: {out}"


@checkpoint("allow_signaltty")
def test_allow_via_signaltty_runs_command(scenario: Scenario) -> None:
    _answered(scenario, "allow_sig")
    assert scenario.run_to("allow_sig").facts["ran"], "allowed, but the command did not run (no marker file)"


@checkpoint("after_allow")
def test_after_allow_reads_done(scenario: Scenario) -> None:
    scenario.check("allow_sig", "done")
    scenario.check("allow_sig", "resolved")


@checkpoint("deny_signaltty")
def test_deny_via_signaltty_blocks_command(scenario: Scenario) -> None:
    _answered(scenario, "deny_sig")
    assert not scenario.run_to("deny_sig").facts["ran"], "denied, but the command ran (marker file exists)"


@checkpoint("after_deny")
def test_after_deny_reads_done(scenario: Scenario) -> None:
    scenario.check("deny_sig", "done")
    scenario.check("deny_sig", "resolved")


@checkpoint("allow_dbus")
def test_allow_via_dbus_runs_command(scenario: Scenario) -> None:
    _answered(scenario, "allow_dbus")
    assert scenario.run_to("allow_dbus").facts["ran"], "allowed over D-Bus, but the command did not run"


@checkpoint("after_dbus")
def test_after_dbus_allow_reads_done(scenario: Scenario) -> None:
    scenario.check("allow_dbus", "done")
    scenario.check("allow_dbus", "resolved")


def _dialog_after(scenario: Scenario, step: str = "allow_tty") -> float:
    return scenario.run_to(step).facts["dialog_after_s"]


@checkpoint("terminal_dialog")
def test_permission_dialog_answerable_at_terminal(scenario: Scenario) -> None:
    shown = _dialog_after(scenario)
    assert shown <= HIDDEN_DIALOG_LIMIT_S, (
        f"the agent's own dialog was not on screen within {HIDDEN_DIALOG_LIMIT_S:.0f} s while signaltty held the "
        f"request; screen:\n{scenario.observation('allow_tty', 'blocked').screen}")


@checkpoint("terminal_allow")
def test_terminal_allow_runs_command(scenario: Scenario) -> None:
    assert math.isfinite(_dialog_after(scenario)), "no dialog was shown to answer at the terminal"
    assert scenario.run_to("allow_tty").facts["ran"], "allowed in the dialog, but the command did not run"


@checkpoint("terminal_resolved")
def test_terminal_allow_resolves_decision(scenario: Scenario) -> None:
    assert math.isfinite(_dialog_after(scenario)), "no dialog was shown to answer at the terminal"
    scenario.check("allow_tty", "done")
    scenario.check("allow_tty", "resolved")


@checkpoint("esc_working")
def test_turn_before_esc_reads_working(scenario: Scenario) -> None:
    scenario.check("esc", "working")


@checkpoint("esc")
def test_esc_reads_done_or_idle(scenario: Scenario) -> None:
    scenario.check("esc", "stopped")


@checkpoint("reminder", only=("claude",))
def test_idle_reminder_keeps_done(scenario: Scenario) -> None:
    scenario.check("reminder", "answered")
    scenario.check("reminder", "done")


@checkpoint("restart")
def test_restart_resumes_the_same_session(scenario: Scenario) -> None:
    facts = scenario.run_to("restart").facts
    assert facts["leftovers"] == [], f"pane programs outlived the daemon: {facts['leftovers']}"
    assert facts["restored"] == ("RESUMABLE", "exited"), facts["restored"]
    sid = facts["session_id"]
    assert sid, "no agent session id was known before the restart"
    assert facts["argv"] == facts["resume_argv"], ("resumed with", facts["argv"], "shown before", facts["resume_argv"])
    assert sid in facts["argv"], f"resume ran {facts['argv']}, not session {sid}"
    scenario.check("restart", "idle")


@checkpoint("resumed_terminal")
def test_resumed_terminal_allow_resolves(scenario: Scenario) -> None:
    shown = _dialog_after(scenario, "allow_resumed")
    assert shown <= HIDDEN_DIALOG_LIMIT_S, "no dialog to answer at the terminal after the restart"
    assert scenario.run_to("allow_resumed").facts["ran"], "allowed in the dialog, but the command did not run"
    scenario.check("allow_resumed", "done")
    scenario.check("allow_resumed", "resolved")
    before, after = scenario.run_to("restart").facts["session_id"], scenario.run_to("allow_resumed").facts["session_after"]
    assert after == before, f"the resumed agent's hooks report session {after}, not {before}"


@checkpoint("quit")
def test_quit_reads_exited(scenario: Scenario) -> None:
    scenario.check("quit", "exited")
    scenario.check("quit", "resolved")
