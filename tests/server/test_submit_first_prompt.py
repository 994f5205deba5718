"""Issue 11 item 9: ``pane submit`` works on the first prompt of an agent that sends no hook
before its first turn (OpenCode, Pi, Gemini): its own idle prompt, recognised by a bundled
screen rule, makes the pane ``idle`` (not ``unknown``), so the submit gate lets the prompt
through; then a turn runs."""

from __future__ import annotations

import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import wait_until
from tests.server.test_hooks_e2e import Agent

PI_FOOTER = "\r\n\r\n↑50 ↓12 0.0%/128k (auto)        mock-model\r\n"


def test_first_prompt_submitted_to_an_unhooked_agent_at_its_idle_prompt(daemon):
    a = Agent(daemon, [{"print": PI_FOOTER}, {"readline": True}, {"print": "\r\n⠸ Working...\r\n"},
                       {"sleep": 30}], name="pi")
    p = wait_until(lambda: a.get()["lifecycle"] == "idle" and a.get(), 15)
    assert (p["attention"], p["lifecycle_source"], p["hooked"]) == ("none", "screen", False)
    r = daemon.call("pane.submit", {"pane_id": a.id, "text": "hello"})
    assert (r["submitted"], r["outcome"]) == (True, "working")
    line = a.wait_entries(1)[0]
    assert "hello" in line["readline"]


def test_a_screen_without_the_idle_prompt_stays_unknown_and_submit_refuses(daemon):
    a = Agent(daemon, [{"print": "booting…\r\n"}, {"sleep": 30}], name="pi")
    wait_until(lambda: "booting" in daemon.call("pane.read", {"pane_id": a.id, "mode": "screen"})["text"], 15)
    # submit must not go through on an agent that never showed its prompt
    with pytest.raises(SignalttyError) as exc:
        daemon.call("pane.submit", {"pane_id": a.id, "text": "hello"})
    assert exc.value.code == "AGENT_NOT_READY"
    assert a.get()["lifecycle"] == "unknown"
