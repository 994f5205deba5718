"""A hook's ``tool_name`` is checked where it enters (the native decision): the agent
tool-name grammar, else a placeholder, and the notification offers "Deny" only (issue 10,
third attack pass, A3 related). Pure: no daemon."""

from __future__ import annotations

import pytest

from signaltty.agents.permission import native_decision
from signaltty.core.subject import INVALID_TOOL_NAME, valid_tool_name
from signaltty.desktop import policy

GOOD = ["Bash", "Read", "mcp__shell__exec", "mcp__my-server__run.v2", "shell", "webfetch",
        "fs.read", "ns:tool", "A" * 160]
BAD = [
    "Read?\n/home/me/notes.txt\n(answer here or in the terminal)\n\nBash",
    "Read" + " " * 150 + "Bash",
    "Bash\u202e",
    "Bash ",
    " Bash",
    "Bash\t",
    "Allow once",
    "-rf",
    "_x",
    "A" * 161,
    "Bash\u3164",
    "B\x1b[2Jash",
    "Bash;rm",
]


@pytest.mark.parametrize("name", GOOD)
def test_agent_tool_names_pass(name: str) -> None:
    assert valid_tool_name(name)
    dec = native_decision("claude", _payload(name), now=0.0)
    assert dec.tool_name == name
    assert dec.prompt.startswith(f"Allow {name}?\n")


@pytest.mark.parametrize("name", BAD)
def test_other_tool_names_become_the_placeholder_with_deny_only(name: str) -> None:
    assert not valid_tool_name(name)
    dec = native_decision("claude", _payload(name), now=0.0)
    assert dec.tool_name == INVALID_TOOL_NAME
    assert dec.prompt.startswith(f"Allow {INVALID_TOOL_NAME}?\n")
    assert name not in dec.prompt
    view = policy.PaneView(
        "pane_1", "n", "Claude Code", "permission_required",
        decision=policy.DecisionView(dec.id, True, dec.tool_name, dec.prompt),
    )
    c = policy.render("permission", None, None, view, policy.Settings(), actions=True)
    assert c.buttons, c.body
    assert not c.allow_button, c.body
    assert c.body.startswith(f"Allow {INVALID_TOOL_NAME}?\nls\n"), c.body


def test_a_keyed_dialog_title_is_not_held_to_the_grammar() -> None:
    # Gemini's dialog title (agents/keyed.py) is screen text, not a hook's tool name
    view = policy.PaneView(
        "pane_1", "n", "Gemini", "permission_required",
        decision=policy.DecisionView("permission_k", True, "Shell   Command", "Allow ls?"),
    )
    c = policy.render("permission", None, None, view, policy.Settings(), actions=True)
    assert c.body.startswith("Allow Shell Command?\n")
    assert c.allow_button


def _payload(name: str) -> dict[str, object]:
    return {"session_id": "S1", "tool_name": name, "tool_input": {"command": "ls"}}
