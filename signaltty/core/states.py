"""Lifecycle and attention axes with their rank tables (pure; Spec: states.md §1, §2)."""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Lifecycle(StrEnum):
    """What the pane's process is doing (states.md §1)."""

    UNKNOWN = "unknown"
    WORKING = "working"
    BLOCKED = "blocked"
    DONE = "done"
    IDLE = "idle"
    FAILED = "failed"
    EXITED = "exited"


class Attention(StrEnum):
    """What the user owes the pane, ordered by ``ATTENTION_RANK`` (states.md §1)."""

    NONE = "none"
    UNREAD = "unread"
    WARNING = "warning"
    INPUT_REQUIRED = "input_required"
    PERMISSION_REQUIRED = "permission_required"
    ERROR = "error"


class RestoreState(StrEnum):
    """How a pane relates to a running process after a restart (states.md §4)."""

    LIVE = "LIVE"
    RESTORED = "RESTORED"
    RESUMABLE = "RESUMABLE"
    EXITED = "EXITED"


class Authority(StrEnum):
    """Which layer currently classifies a live pane's lifecycle (states.md §2)."""

    HOOK = "hook"
    PROGRAM_STATUS = "program_status"
    SCREEN = "screen"
    NONE = "none"


ATTENTION_RANK: Final[dict[Attention, int]] = {
    Attention.NONE: 0,
    Attention.UNREAD: 1,
    Attention.WARNING: 2,
    Attention.INPUT_REQUIRED: 3,
    Attention.PERMISSION_REQUIRED: 4,
    Attention.ERROR: 5,
}

# Urgency roll-up for summaries (states.md §1): higher is more urgent.
LIFECYCLE_URGENCY: Final[dict[Lifecycle, int]] = {
    Lifecycle.BLOCKED: 5,
    Lifecycle.FAILED: 4,
    Lifecycle.WORKING: 3,
    Lifecycle.DONE: 2,
    Lifecycle.IDLE: 1,
    Lifecycle.UNKNOWN: 0,
    Lifecycle.EXITED: 0,
}

# Signal layers, strongest first (states.md §2, seed 000 "Priority stack").
SIGNAL_LAYERS: Final[tuple[str, ...]] = (
    "native_api",
    "hook",
    "program_status",
    "notification",
    "process",
    "terminal",
    "screen",
)

# notify severity → attention (states.md §1).
SEVERITY_ATTENTION: Final[dict[str, Attention]] = {
    "info": Attention.UNREAD,
    "warning": Attention.WARNING,
    "error": Attention.ERROR,
}

# Severity → alert cause for notify (states.md §3.2).
SEVERITY_CAUSE: Final[dict[str, str]] = {
    "info": "message",
    "warning": "warning",
    "error": "error",
}


def attention_max(a: Attention, b: Attention) -> Attention:
    """Return the more severe of two attention values (raising never lowers)."""
    return a if ATTENTION_RANK[a] >= ATTENTION_RANK[b] else b


# Alert causes (protocol.md §7 "cause"; desktop-and-service.md §Modes): what an agent's hook
# rule may name (agents/manifest_fields.py), then the ones only the terminal raises.
HOOK_CAUSES: Final[tuple[str, ...]] = (
    "permission",
    "input",
    "idle_prompt",
    "error",
    "warning",
    "turn_done",
    "session_end",
    "message",
)
ALERT_CAUSES: Final[tuple[str, ...]] = (*HOOK_CAUSES, "bell", "exit")
