"""Claude Code hook dialect (pure; Spec: agents.md §2.1, states.md §3.1 alert causes).

Facts from the real CLI (research/real-agents.md §3) that shape this table:

* No hook fires on an Esc interrupt or when the user answers "No" in the permission dialog,
  so nothing here can end ``working``/``blocked`` for those; the screen rules and stuck
  recovery do (states.md §3.7, §3.8).
* ``Notification`` with ``notification_type: "permission_prompt"`` arrives ~6 s after
  ``PermissionRequest`` while the dialog is still open; it classifies exactly like the
  request (blocked/permission_required), so it restates rather than changes the pane.
* ``Notification`` with ``notification_type: "idle_prompt"`` is a reminder ~60 s after a
  finished turn: an alert only (cause ``idle_prompt``, shown in mode ``all``), never
  ``blocked`` (issue 11 item 8).
* ``/clear`` fires ``SessionEnd`` then ``SessionStart`` with a new ``session_id``; the
  rules bump ``session_generation``.
* ``MessageDisplay``, ``PostToolBatch`` and the other newer events are not in the table:
  they are unrecognized (they still carry ``session_id``, which the rules record).

``PostCompact`` is treated as a tool hook too (states.md §3.1 step 9 lists it generally).
"""

from __future__ import annotations

from signaltty.agents.adapters.base import Adapter, text
from signaltty.core.hooks import UNRECOGNIZED, Classification, NotificationDraft
from signaltty.core.states import Attention, Lifecycle

_APPROVAL = "Claude needs approval"


def _is_permission(p: dict[str, object]) -> bool:
    kind = p.get("notification_type")
    return isinstance(kind, str) and "permission" in kind


class ClaudeAdapter(Adapter):
    """Claude Code (``claude``): ``settings.json`` command hooks."""

    kind = "claude"
    display_name = "Claude Code"
    default_title = "Claude Code"
    builtin_names = ("claude",)
    session_keys = ("session_id",)
    tool_events = frozenset(
        {"PreToolUse", "PostToolUse", "PreCompact", "PostCompact", "SubagentStop"}
    )
    resume = ("claude", "--resume", "{id}")

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
                    message=text(p, "prompt", "message") or "permission requested",
                    cause="permission",
                )
            case "Notification":
                if _is_permission(p):
                    attention, cause = Attention.PERMISSION_REQUIRED, "permission"
                elif p.get("notification_type") == "idle_prompt":
                    # a reminder ~60 s after a finished turn, not a question: an idle pane
                    # stays as it is; the alert goes out in notification mode `all` only
                    return Classification(cause="idle_prompt", notice=True)
                else:
                    attention, cause = Attention.INPUT_REQUIRED, "input"
                return Classification(
                    lifecycle=Lifecycle.BLOCKED,
                    attention=attention,
                    message=text(p, "message"),
                    cause=cause,
                )
            case "Stop":
                return Classification(
                    lifecycle=Lifecycle.DONE,
                    attention=Attention.UNREAD,
                    message=text(p, "last_assistant_message") or "turn complete",
                    cause="turn_done",
                )
            case "SessionEnd":
                return Classification(
                    lifecycle=Lifecycle.DONE,
                    attention=Attention.UNREAD,
                    message="session ended",
                    cause="session_end",
                )
        return UNRECOGNIZED

    def _draft(self, event: str, p: dict[str, object]) -> NotificationDraft | None:
        match event:
            case "PermissionRequest":
                return NotificationDraft(_APPROVAL, text(p, "tool_name"), "warning")
            case "Notification" if _is_permission(p):
                return NotificationDraft(_APPROVAL, text(p, "message"), "warning")
            case "Notification":
                return NotificationDraft("Claude needs input", text(p, "message"), "info")
            case "Stop":
                return NotificationDraft(
                    "Claude turn complete", text(p, "last_assistant_message"), "info"
                )
        return None
