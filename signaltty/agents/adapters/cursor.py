"""Cursor Agent hook dialect, camelCase events (pure; Spec: agents.md §2.4).

Cursor Desktop shares ``~/.cursor/hooks.json``; its hooks are not descendants of any pane
and the router accepts them with ``pane_id: null`` before this adapter matters.
``preCompact``/``postCompact`` are tool hooks as "Cursor spellings" (states.md §3.1 step 9).
"""

from __future__ import annotations

from signaltty.agents.adapters.base import Adapter
from signaltty.core.hooks import UNRECOGNIZED, Classification, NotificationDraft
from signaltty.core.states import Attention, Lifecycle


class CursorAdapter(Adapter):
    """Cursor Agent (``cursor``, program ``cursor-agent``)."""

    kind = "cursor"
    display_name = "Cursor Agent"
    default_title = "Cursor Agent"
    builtin_names = ("cursor-agent",)
    session_keys = ("session_id", "sessionId", "conversation_id", "chatId")
    tool_events = frozenset({"preToolUse", "postToolUse", "preCompact", "postCompact"})
    resume = ("cursor-agent", "--resume", "{id}")

    def _classify(self, event: str, p: dict[str, object]) -> Classification:
        match event:
            case "sessionStart":
                return Classification(lifecycle=Lifecycle.IDLE)
            case "beforeSubmitPrompt":
                return Classification(lifecycle=Lifecycle.WORKING, attention=Attention.NONE)
            case "stop":
                return Classification(
                    lifecycle=Lifecycle.DONE,
                    attention=Attention.UNREAD,
                    message="turn complete",
                    cause="turn_done",
                )
            case "sessionEnd":
                return Classification(
                    lifecycle=Lifecycle.DONE,
                    attention=Attention.UNREAD,
                    message="session ended",
                    cause="session_end",
                )
        return UNRECOGNIZED

    def _draft(self, event: str, p: dict[str, object]) -> NotificationDraft | None:
        if event == "stop":
            return NotificationDraft("Cursor turn complete", None, "info")
        return None
