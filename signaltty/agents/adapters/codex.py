"""Codex hook dialect: ``hooks.json`` hooks plus the ``notify`` payload (pure; Spec: agents.md §2.2).

Decisions beyond the table (facts from research/real-agents.md §4):

* **Hidden title thread.** On the first prompt the Codex TUI runs a hidden title-generation
  thread that fires ``notify`` (``agent-turn-complete``) with its *own* ``thread-id`` and
  ``input-messages`` starting with the title instruction. Two guards keep it from clobbering
  the pane:

  1. *Content* (adapter alone): a notify payload whose first ``input-messages`` entry starts
     with ``TITLE_PROMPT_PREFIX`` classifies as nothing, yields no session id and no draft,
     so the rules drop it as ``unrecognized_hook``. This also protects a pane that has no
     known session yet (``notify`` configured without hooks).
  2. *Thread* (needs pane state): ``is_auxiliary(event, payload, known_session_id)`` is also
     true for an ``agent-turn-complete`` payload whose ``thread-id`` differs from the pane's
     known session id. With hooks installed, ``SessionStart`` (which carries the real
     ``session_id``) always precedes the turn's notify, so the main thread's notify matches.
     Cost: with ``notify`` as the only channel, a new conversation in the same TUI keeps the
     first id until ``report-session`` or a ``SessionStart`` replaces it.

* **Interrupt** (Esc while streaming, or Esc in the approval dialog, which fires ``notify``
  then ``Interrupt`` and no ``Stop``): the user ended the turn at the keyboard, so the pane
  is at rest and owes nothing → ``idle`` with attention ``none`` (clear), message
  "turn interrupted", no draft. Clearing attention also clears a pending decision
  (states.md §3.1 step 12), which a bare ``done``/``idle`` would keep as "turn end".
"""

from __future__ import annotations

from typing import Final

from signaltty.agents.adapters.base import Adapter, text
from signaltty.core.hooks import UNRECOGNIZED, Classification, NotificationDraft
from signaltty.core.states import Attention, Lifecycle

NOTIFY_EVENT: Final = "agent-turn-complete"
# First words of the hidden title thread's instruction (codex-cli 0.171.0 fixture).
TITLE_PROMPT_PREFIX: Final = "Generate a concise, single-line task title"


def _assistant_message(p: dict[str, object]) -> str | None:
    return text(p, "last_assistant_message", "last-assistant-message")


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


class CodexAdapter(Adapter):
    """Codex CLI (``codex``); answers explicit decisions by typing the option number."""

    kind = "codex"
    display_name = "Codex"
    default_title = "Codex"
    builtin_names = ("codex",)
    session_keys = ("session_id", "thread-id")
    tool_events = frozenset({"PreToolUse", "PostToolUse", "PreCompact", "PostCompact"})
    resume = ("codex", "resume", "{id}")
    answer = "typed_text"

    def _classify(self, event: str, p: dict[str, object]) -> Classification:
        match event:
            case "SessionStart":
                return Classification(lifecycle=Lifecycle.IDLE, message="session started")
            case "UserPromptSubmit":
                return Classification(lifecycle=Lifecycle.WORKING, attention=Attention.NONE)
            case "PermissionRequest":
                return Classification(
                    lifecycle=Lifecycle.BLOCKED,
                    attention=Attention.PERMISSION_REQUIRED,
                    message="approval requested",
                    cause="permission",
                )
            case "Stop" | "agent-turn-complete" if not is_title_thread(p):
                return Classification(
                    lifecycle=Lifecycle.DONE,
                    attention=Attention.UNREAD,
                    message=_assistant_message(p) or "turn complete",
                    cause="turn_done",
                )
            case "SessionEnd":
                return Classification(
                    lifecycle=Lifecycle.DONE,
                    attention=Attention.UNREAD,
                    message="session ended",
                    cause="session_end",
                )
            case "Interrupt":
                return Classification(
                    lifecycle=Lifecycle.IDLE, attention=Attention.NONE, message="turn interrupted"
                )
        return UNRECOGNIZED

    def ignores_identity(self, payload: object) -> bool:
        """The hidden title thread's notify carries an id that is never the pane's session.

        Spec: agents.md §2.2 "Session id" (``session_id``, else the notify ``thread-id``).
        """
        return is_title_thread(payload)

    def _draft(self, event: str, p: dict[str, object]) -> NotificationDraft | None:
        match event:
            case "PermissionRequest":
                body = text(p, "tool_name", "description", "tool_input.description")
                return NotificationDraft("Codex needs approval", body, "warning")
            case "Stop" | "agent-turn-complete" if not is_title_thread(p):
                return NotificationDraft("Codex turn complete", _assistant_message(p), "info")
        return None

    def is_auxiliary(self, event: str, payload: object, known_session_id: str | None) -> bool:
        """True for the hidden title thread's notify, by content or by a foreign ``thread-id``.

        Args:
            event: hook name (the notify arrives as ``agent-turn-complete``).
            payload: hook JSON of any type.
            known_session_id: the pane's current ``agent_session_id``, if any.

        Spec: research/real-agents.md §4; module docstring of ``codex.py``.
        """
        if event != NOTIFY_EVENT or not isinstance(payload, dict):
            return False
        if is_title_thread(payload):
            return True
        if "session_id" in payload or known_session_id is None:
            return False
        thread = payload.get("thread-id")
        return isinstance(thread, str) and thread != known_session_id
