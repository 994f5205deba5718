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
NO_PI_GEMINI_INSTALLER = "issue 11 'Pi and Gemini have no installer today'"

# (agent, checkpoint) → what fails today and why (observed with the pinned versions).
KNOWN: dict[tuple[str, str], str] = {
    ("codex", "hooks_review"): "issue 11 item 4: Codex 'Hooks need review' dialog reads unknown/none (authority screen)",
    ("codex", "terminal_dialog"): "issue 11 item 3: Codex shows 'Working (Ns • esc to interrupt) · Running hook' "
                                  "and no dialog while our PermissionRequest hook waits (120 s)",
    ("codex", "terminal_allow"): "issue 11 item 3: no dialog to answer at the terminal (answered from signaltty "
                                 "after 20 s so the scenario goes on)",
    ("codex", "terminal_resolved"): "issue 11 item 3: no dialog to answer at the terminal",
    ("claude", "terminal_resolved"): "issue 11 item 2: after 'Yes' in Claude's own dialog the command ran and the "
                                     "turn ended, but the pane reads done/permission_required, permission list "
                                     "still shows Bash, and answering deny afterwards reports success",
    ("claude", "esc"): "issue 11 item 1: no hook on Esc; the prompt is back ('Interrupted · What should Claude do "
                       "instead?') but the pane reads working/none (authority hook)",
    ("codex", "esc"): "issue 11 item 1: Codex fires Interrupt, not installed; '■ Conversation interrupted' on "
                      "screen, pane reads working/none (authority hook)",
    ("claude", "reminder"): "issue 11 item 8: Claude's idle reminder (Notification idle_prompt) turns the idle, "
                            "answered pane blocked/input_required",
    ("opencode", "start"): "issue 11 item 9: OpenCode's idle prompt reads unknown/none",
    ("opencode", "blocked"): "issue 11 item 6: OpenCode's permission dialog is invisible (working/none, no decision)",
    ("opencode", "allow_signaltty"): "issue 11 item 6: no decision to answer (NO_SUCH_DECISION)",
    ("opencode", "deny_signaltty"): "issue 11 item 6: no decision to answer (NO_SUCH_DECISION)",
    ("pi", "start"): "issue 11 item 9: Pi's idle prompt reads unknown/none",
    ("pi", "allow_signaltty"): f"{NO_PI_GEMINI_INSTALLER}: no decision to answer (NO_SUCH_DECISION)",
    ("pi", "deny_signaltty"): f"{NO_PI_GEMINI_INSTALLER}: no decision to answer (NO_SUCH_DECISION)",
    ("pi", "after_allow"): "issue 11 item 7: a turn that showed a dialog ends idle/none, not done/unread",
    ("pi", "after_deny"): "issue 11 item 7: a turn that showed a dialog ends idle/none, not done/unread",
    ("pi", "terminal_resolved"): "issue 11 item 7: a turn that showed a dialog ends idle/none, not done/unread",
    ("gemini", "start"): "issue 11 item 9: Gemini's idle prompt reads unknown/none",
    ("gemini", "blocked"): f"{NO_PI_GEMINI_INSTALLER}: its permission dialog reads blocked/input_required "
                           "(screen rule), not permission_required",
    ("gemini", "allow_signaltty"): f"{NO_PI_GEMINI_INSTALLER}: no decision to answer (NO_SUCH_DECISION)",
    ("gemini", "deny_signaltty"): f"{NO_PI_GEMINI_INSTALLER}: no decision to answer (NO_SUCH_DECISION)",
}
# Failing only sometimes today, so not strict (a strict mark would make the run flaky).
GEMINI_ITEM_7 = ("issue 11 item 7: after its dialog Gemini shows 'Thinking… (esc to cancel)' for a moment; when "
                 "the screen sweep misses it the finished turn reads idle/none, not done/unread (about half the runs)")
FLAKY: dict[tuple[str, str], str] = {
    ("gemini", "after_allow"): GEMINI_ITEM_7,
    ("gemini", "terminal_resolved"): GEMINI_ITEM_7,
    ("codex", "start"): "issue 11 item 5: after the hook-trust dialog Codex sets a spinner title and an OSC 7501 "
                        "idle report; about half the launches read done/unread (authority program_status) "
                        "before any turn",
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
    for step in ("allow_sig", "deny_sig", "allow_tty"):
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


def _dialog_after(scenario: Scenario) -> float:
    return scenario.run_to("allow_tty").facts["dialog_after_s"]


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


@checkpoint("quit")
def test_quit_reads_exited(scenario: Scenario) -> None:
    scenario.check("quit", "exited")
    scenario.check("quit", "resolved")
