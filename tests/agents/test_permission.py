"""Native permission contract, prompt and verdict JSON (states.md §3.1 step 1, integrations.md §4.1)."""

from __future__ import annotations

import json
import re

import pytest

from signaltty.agents.permission import (
    MAX_PROMPT_BYTES,
    meets_native_contract,
    native_decision,
    native_options,
    native_prompt,
    verdict_json,
    verdict_line,
)

OK = {"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "ls"}}


@pytest.mark.parametrize(
    ("agent", "payload", "expected"),
    [
        ("claude", OK, True),
        ("codex", OK, True),
        ("codex", {**OK, "tool_input": {}}, True),
        ("opencode", OK, True),  # issue 11 item 6: its plugin reports permission.asked
        ("generic", OK, False),
        ("gemini", OK, False),
        ("claude", None, False),
        ("claude", [OK], False),
        ("claude", {**OK, "session_id": ""}, False),
        ("claude", {**OK, "session_id": "  "}, False),
        ("claude", {**OK, "session_id": 1}, False),
        ("claude", {k: v for k, v in OK.items() if k != "session_id"}, False),
        ("claude", {**OK, "tool_name": "\t"}, False),
        ("claude", {**OK, "tool_name": None}, False),
        ("claude", {**OK, "tool_input": ["ls"]}, False),
        ("claude", {**OK, "tool_input": "ls"}, False),
        ("claude", {**OK, "tool_input": None}, False),
        ("claude", {k: v for k, v in OK.items() if k != "tool_input"}, False),
    ],
)
def test_native_contract(agent, payload, expected):
    assert meets_native_contract(agent, payload) is expected


def test_prompt_h4():
    assert native_prompt("Bash", {"command": "ls"}) == 'Allow Bash?\n{\n  "command": "ls"\n}'


def test_prompt_keeps_payload_order_and_unicode():
    prompt = native_prompt("Edit", {"z": 1, "a": ["é", {"b": None}]})
    assert (
        prompt
        == 'Allow Edit?\n{\n  "z": 1,\n  "a": [\n    "é",\n    {\n      "b": null\n    }\n  ]\n}'
    )


def test_prompt_empty_input():
    assert native_prompt("shell", {}) == "Allow shell?\n{}"


@pytest.mark.parametrize("char", ["x", "é", "😀"])
def test_prompt_truncated_to_8_kib(char):
    prompt = native_prompt("Bash", {"command": char * 10_000})
    size = len(prompt.encode())
    assert size <= MAX_PROMPT_BYTES == 8192
    assert size > MAX_PROMPT_BYTES - 4  # cut on the last whole character
    assert prompt.startswith('Allow Bash?\n{\n  "command": "')


def test_prompt_at_limit_not_truncated():
    head = len('Allow B?\n{\n  "c": ""\n}')
    prompt = native_prompt("B", {"c": "x" * (MAX_PROMPT_BYTES - head)})
    assert len(prompt.encode()) == MAX_PROMPT_BYTES
    assert prompt.endswith('"\n}')
    longer = native_prompt("B", {"c": "x" * (MAX_PROMPT_BYTES - head + 1)})
    assert len(longer.encode()) == MAX_PROMPT_BYTES
    assert not longer.endswith("}")


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_native_decision(agent):
    dec = native_decision(agent, OK, now=12.5)
    assert re.fullmatch(r"permission_[0-9a-f]{32}", dec.id)
    assert dec.prompt == 'Allow Bash?\n{\n  "command": "ls"\n}'
    assert dec.options == [{"id": "once", "label": "Allow once"}, {"id": "deny", "label": "Deny"}]
    assert (dec.native, dec.answerable, dec.agent, dec.tool_name) == (True, False, agent, "Bash")
    assert dec.received_at == 12.5
    assert dec.deadline is None
    assert native_decision(agent, OK, now=0).id != dec.id


def test_native_decision_rejects_bad_payload():
    with pytest.raises(ValueError, match="native permission contract"):
        native_decision("claude", {"tool_name": "Bash"}, now=0)
    with pytest.raises(ValueError, match="native permission contract"):
        native_decision("cursor", OK, now=0)


def test_native_options_are_fresh():
    first = native_options()
    first[0]["label"] = "changed"
    assert native_options()[0]["label"] == "Allow once"


@pytest.mark.parametrize(
    ("verdict", "line"),
    [
        (
            "allow",
            '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}',
        ),
        (
            "once",
            '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}',
        ),
        (
            "deny",
            '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"Denied in signaltty"}}}',
        ),
    ],
)
def test_verdict_output(verdict, line):
    assert verdict_line(verdict) == line
    assert verdict_json(verdict) == json.loads(line)
    assert "\n" not in verdict_line(verdict)


@pytest.mark.parametrize("verdict", ["always", "", "Allow", "yes", "timeout"])
def test_unknown_verdict(verdict):
    with pytest.raises(ValueError, match="unknown verdict"):
        verdict_json(verdict)
