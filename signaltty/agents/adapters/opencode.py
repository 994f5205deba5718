"""OpenCode dialect: events forwarded by the managed plugin (pure; Spec: agents.md §2.3).

The plugin (integrations.md §1.3) normalizes V1/V2 shapes to ``{session_id, status,
message}`` and reports ``session.execution.failed`` as ``session.error`` and interruption as
idle; ``permission.asked`` becomes a waiting ``PermissionRequest`` (a native decision)
and ``permission.replied`` withdraws it (issue 11 item 6). Raw event properties are accepted too (``sessionID``, ``status.type``, nested
``error.data.message``), so the captured plugin events classify the same way.
"""

from __future__ import annotations

from signaltty.agents.adapters.base import Adapter, dig, text
from signaltty.core.hooks import UNRECOGNIZED, Classification, NotificationDraft
from signaltty.core.states import Attention, Lifecycle

_IDLE = Classification(
    lifecycle=Lifecycle.DONE, attention=Attention.UNREAD, message="session idle", cause="turn_done"
)
# Where an OpenCode error's text may sit (normalized first, then V1/V2 raw shapes).
_ERROR_PATHS = (
    "message",
    "error.data.message",
    "error.message",
    "properties.error.data.message",
    "properties.error.message",
)


def _status(p: dict[str, object]) -> str | None:
    for path in ("status", "properties.status"):
        value = dig(p, path)
        if isinstance(value, dict):
            value = value.get("type")
        if isinstance(value, str):
            return value
    return None


def _permission_message(p: dict[str, object]) -> str:
    """``bash: touch x`` from the plugin's ``{tool_name, tool_input: {command|filepath|patterns}}``."""
    tool = text(p, "tool_name") or "permission"
    detail = text(p, "tool_input.command", "tool_input.filepath")
    patterns = dig(p, "tool_input.patterns")
    if detail is None and isinstance(patterns, list):
        detail = ", ".join(x for x in patterns if isinstance(x, str)) or None
    return f"{tool}: {detail}" if detail else f"{tool} permission requested"


class OpenCodeAdapter(Adapter):
    """OpenCode (``opencode``): the managed JS plugin calls ``hook-event``."""

    kind = "opencode"
    display_name = "OpenCode"
    default_title = "OpenCode"
    builtin_names = ("opencode",)
    session_keys = ("session_id", "sessionID", "properties.sessionID", "properties.info.id")
    resume = ("opencode", "--session", "{id}")

    def _classify(self, event: str, p: dict[str, object]) -> Classification:
        match event:
            case "session.created":
                return Classification(lifecycle=Lifecycle.IDLE)
            case "session.status":
                status = _status(p)
                if status == "busy":
                    return Classification(lifecycle=Lifecycle.WORKING, attention=Attention.NONE)
                if status == "idle":
                    return _IDLE
            case "session.idle":
                return _IDLE
            case "PermissionRequest":
                # the plugin's report of `permission.asked` (issue 11 item 6)
                return Classification(
                    lifecycle=Lifecycle.BLOCKED,
                    attention=Attention.PERMISSION_REQUIRED,
                    message=_permission_message(p),
                    cause="permission",
                )
            case "permission.replied":
                # answered (in OpenCode's dialog or through signaltty): the tool runs, or on
                # "reject" the session goes idle next (session.idle ends the turn)
                return Classification(lifecycle=Lifecycle.WORKING, attention=Attention.NONE)
            case "session.error":
                return Classification(
                    lifecycle=Lifecycle.FAILED,
                    attention=Attention.ERROR,
                    message=text(p, *_ERROR_PATHS) or "session error",
                    cause="error",
                )
        return UNRECOGNIZED

    def _draft(self, event: str, p: dict[str, object]) -> NotificationDraft | None:
        if event == "PermissionRequest":
            return NotificationDraft("OpenCode needs approval", _permission_message(p), "warning")
        if event == "session.idle" or (event == "session.status" and _status(p) == "idle"):
            return NotificationDraft("OpenCode session idle", None, "info")
        if event == "session.error":
            return NotificationDraft("OpenCode session error", text(p, *_ERROR_PATHS), "error")
        return None
