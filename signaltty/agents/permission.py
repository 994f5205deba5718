"""Native permission contract, decision prompt and verdict JSON (pure; Spec: integrations.md §4.1).

A Claude/Codex ``PermissionRequest`` whose payload meets the contract becomes a native
decision with options ``once``/``deny``; a delivered answer goes back to the waiting
reporter as hook output, never as keystrokes. signaltty never grants on timeout or
cancellation, and offers no "Always".
"""

from __future__ import annotations

import json
from typing import Final, Literal

from signaltty.core.ids import new_id
from signaltty.core.model import Decision
from signaltty.core.subject import INVALID_TOOL_NAME, valid_tool_name

# OpenCode: its plugin reports `permission.asked` as a PermissionRequest and sends the verdict
# through OpenCode's reply API (issue 11 item 6); Pi: the managed extension does the same for
# extension confirmation dialogs and closes the dialog with the verdict.
NATIVE_AGENTS: Final = frozenset({"claude", "codex", "opencode", "pi"})
# Agents that show no dialog of their own while their PermissionRequest hook waits (Codex
# 0.171 draws "Running hook" until the hook ends): a person at that terminal cannot answer
# then, so their wait is bounded by ``[permissions] hidden_wait_s`` when nobody can answer
# elsewhere (issue 11 item 3; Claude shows its dialog during the wait).
HIDDEN_WHILE_WAITING: Final = frozenset({"codex"})
# protocol.md §4 Decision: prompt ≤ 8 KiB.
MAX_PROMPT_BYTES: Final = 8 * 1024
NATIVE_OPTIONS: Final = (("once", "Allow once"), ("deny", "Deny"))
DENY_MESSAGE: Final = "Denied in signaltty"
HOOK_EVENT: Final = "PermissionRequest"


def _non_blank(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def meets_native_contract(agent: str, payload: object) -> bool:
    """True when a ``PermissionRequest`` can become a native decision.

    Args:
        agent: adapter kind the hook was reported for.
        payload: hook JSON of any type.

    Returns:
        True for an agent of ``NATIVE_AGENTS`` with a payload object holding a non-blank string
        ``session_id`` and ``tool_name`` and an object ``tool_input``.

    Spec: states.md §3.1 step 1; integrations.md §4.1 step 2.
    """
    return (
        agent in NATIVE_AGENTS
        and isinstance(payload, dict)
        and _non_blank(payload.get("session_id"))
        and _non_blank(payload.get("tool_name"))
        and isinstance(payload.get("tool_input"), dict)
    )


def _truncate_utf8(value: str, limit: int) -> str:
    data = value.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return value
    return data[:limit].decode("utf-8", "ignore")


def native_prompt(tool_name: str, tool_input: object) -> str:
    """Return ``Allow <tool_name>?`` + newline + pretty JSON of ``tool_input``, ≤ 8 KiB.

    Args:
        tool_name: the tool the agent wants to run (``Bash``).
        tool_input: its input object, shown with 2-space indentation, keys in payload order.

    Returns:
        The prompt, cut to at most 8192 UTF-8 bytes on a character boundary.

    Spec: protocol.md §4 Decision ``prompt``; states.md §9.1 H4.
    """
    pretty = json.dumps(tool_input, indent=2, ensure_ascii=False, default=str)
    return _truncate_utf8(f"Allow {tool_name}?\n{pretty}", MAX_PROMPT_BYTES)


def tool_label(name: object) -> str:
    """``name`` when it is a valid agent tool name, else :data:`INVALID_TOOL_NAME`."""
    return name if isinstance(name, str) and valid_tool_name(name) else INVALID_TOOL_NAME


def native_options() -> list[dict[str, str]]:
    """Return fresh option records ``[{id: once, label: Allow once}, {id: deny, label: Deny}]``."""
    return [{"id": oid, "label": label} for oid, label in NATIVE_OPTIONS]


def native_decision(agent: str, payload: object, *, now: float) -> Decision:
    """Build the synthesized native decision of a ``PermissionRequest``.

    Args:
        agent: ``claude`` or ``codex``.
        payload: hook JSON meeting the native contract.
        now: wall-clock seconds; becomes ``received_at``.

    Returns:
        ``Decision(id=permission_<32 hex>, native=True, answerable=False, agent, tool_name)``;
        the router makes it answerable when it registers a live route. A ``tool_name``
        outside the agent tool-name grammar (``core.subject.valid_tool_name``: newlines,
        space runs, controls, over 160 characters) is replaced by
        ``core.subject.INVALID_TOOL_NAME`` here, where it enters; the notification then
        offers "Deny" only (issue 10, third attack pass, A3 related).

    Raises:
        ValueError: the payload does not meet the native contract.

    Spec: states.md §3.1 step 1; protocol.md §4 Decision.
    """
    if not meets_native_contract(agent, payload):
        raise ValueError("payload does not meet the native permission contract")
    assert isinstance(payload, dict)
    tool_name = tool_label(payload["tool_name"])
    return Decision(
        id=new_id("permission"),
        prompt=native_prompt(tool_name, payload["tool_input"]),
        options=native_options(),
        received_at=now,
        answerable=False,
        native=True,
        agent=agent,
        tool_name=tool_name,
    )


def _behavior(verdict: str) -> Literal["allow", "deny"]:
    if verdict in ("allow", "once"):
        return "allow"
    if verdict == "deny":
        return "deny"
    raise ValueError(f"unknown verdict {verdict!r} (expected allow, once or deny)")


def verdict_json(verdict: str) -> dict[str, object]:
    """Return the hook output object the waiting reporter prints for a verdict.

    Args:
        verdict: ``allow`` (or option ``once``) or ``deny``.

    Returns:
        ``{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision":
        {"behavior": "allow"}}}``, or with ``{"behavior": "deny", "message":
        "Denied in signaltty"}``.

    Raises:
        ValueError: any other verdict.

    Spec: integrations.md §4.1 step 6.
    """
    decision: dict[str, str] = {"behavior": _behavior(verdict)}
    if decision["behavior"] == "deny":
        decision["message"] = DENY_MESSAGE
    return {"hookSpecificOutput": {"hookEventName": HOOK_EVENT, "decision": decision}}


def verdict_line(verdict: str) -> str:
    """Return ``verdict_json`` as the one compact JSON line printed on stdout (no newline).

    Spec: integrations.md §4.1 step 6.
    """
    return json.dumps(verdict_json(verdict), separators=(",", ":"))
