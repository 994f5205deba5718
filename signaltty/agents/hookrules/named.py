"""Named Python hooks: what a manifest's hook map cannot say as data (pure; Spec: issue 14 item 4).

A manifest refers to these by name (docs/manifests.md "Named Python hooks"):

* ``[hooks] adapter = "<name>"`` picks an :class:`AdapterHook` from ``ADAPTER_HOOKS``: a guard
  that needs the payload's structure or the pane's known session id.
* ``message_fn``/``body_fn = "<name>"`` in a ``[[hooks.rule]]`` picks a text function from
  ``TEXT_FUNCTIONS``: a message composed from several payload fields.

Each entry exists because one real agent needs it; the schema refuses unknown names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from signaltty.agents.hookrules.payload import dig, text

# --------------------------------------------------------------------------- codex_title

NOTIFY_EVENT: Final = "agent-turn-complete"
# First words of the hidden title thread's instruction (codex-cli 0.171.0 fixture).
TITLE_PROMPT_PREFIX: Final = "Generate a concise, single-line task title"
# The events that carry a turn's end: the hidden thread's notify must not end the pane's turn.
_TURN_END_EVENTS: Final = frozenset({"Stop", NOTIFY_EVENT})


def is_title_thread(payload: object) -> bool:
    """True when a ``notify`` payload comes from Codex's hidden title-generation thread.

    Args:
        payload: the notify JSON (``{"type", "thread-id", "input-messages", …}``).

    Spec: research/real-agents.md §4 "Side request" (filter notify by thread-id or content).
    """
    if not isinstance(payload, dict):
        return False
    messages = payload.get("input-messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[0], str):
        return False
    return messages[0].lstrip().startswith(TITLE_PROMPT_PREFIX)


class AdapterHook:
    """A procedural guard an adapter consults besides its hook map (no guard: all ``False``)."""

    def drops(self, event: str, payload: dict[str, object]) -> bool:
        """True when the hook means nothing to the pane: no classification, no draft."""
        return False

    def ignores_identity(self, payload: object) -> bool:
        """True when the payload's id fields never name the pane's session."""
        return False

    def is_auxiliary(self, event: str, payload: object, known_session_id: str | None) -> bool:
        """True when the hook belongs to a hidden side thread, not the pane's session."""
        return False


class CodexTitleThread(AdapterHook):
    """``codex_title``: Codex's hidden title-generation thread (research/real-agents.md §4).

    On the first prompt the Codex TUI runs a hidden thread that fires ``notify``
    (``agent-turn-complete``) with its *own* ``thread-id`` and ``input-messages`` starting
    with the title instruction. Two guards keep it from clobbering the pane:

    1. *Content*: a ``Stop``/``agent-turn-complete`` payload whose first ``input-messages``
       entry starts with ``TITLE_PROMPT_PREFIX`` classifies as nothing and has no draft, and
       no payload of that thread yields a session id. This also protects a pane that has no
       known session yet (``notify`` configured without hooks).
    2. *Thread* (needs pane state): an ``agent-turn-complete`` payload without ``session_id``
       whose ``thread-id`` differs from the pane's known session id is auxiliary. With hooks
       installed, ``SessionStart`` (which carries the real ``session_id``) always precedes
       the turn's notify, so the main thread's notify matches. Cost: with ``notify`` as the
       only channel, a new conversation in the same TUI keeps the first id until
       ``report-session`` or a ``SessionStart`` replaces it.
    """

    def drops(self, event: str, payload: dict[str, object]) -> bool:
        return event in _TURN_END_EVENTS and is_title_thread(payload)

    def ignores_identity(self, payload: object) -> bool:
        return is_title_thread(payload)

    def is_auxiliary(self, event: str, payload: object, known_session_id: str | None) -> bool:
        if event != NOTIFY_EVENT or not isinstance(payload, dict):
            return False
        if is_title_thread(payload):
            return True
        if "session_id" in payload or known_session_id is None:
            return False
        thread = payload.get("thread-id")
        return isinstance(thread, str) and thread != known_session_id


NO_HOOK: Final = AdapterHook()
ADAPTER_HOOKS: Final[dict[str, AdapterHook]] = {"codex_title": CodexTitleThread()}

# --------------------------------------------------------------------------- text functions


def opencode_permission(p: dict[str, object]) -> str:
    """``bash: touch x`` from the OpenCode plugin's permission payload.

    The payload is ``{tool_name, tool_input: {command | filepath | patterns}}``.

    The detail is ``tool_input.command``, else ``tool_input.filepath``, else the string
    entries of ``tool_input.patterns`` joined by ``, ``; without one the text is
    ``<tool> permission requested`` (tool defaults to ``permission``).
    Spec: agents.md §2.3; issue 11 item 6.
    """
    tool = text(p, "tool_name") or "permission"
    detail = text(p, "tool_input.command", "tool_input.filepath")
    patterns = dig(p, "tool_input.patterns")
    if detail is None and isinstance(patterns, list):
        detail = ", ".join(x for x in patterns if isinstance(x, str)) or None
    return f"{tool}: {detail}" if detail else f"{tool} permission requested"


TEXT_FUNCTIONS: Final[dict[str, Callable[[dict[str, object]], str | None]]] = {
    "opencode_permission": opencode_permission,
}
