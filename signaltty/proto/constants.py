"""Wire constants of ``signaltty/1``: methods, events, error codes (stdlib only; Spec: protocol.md).

``server.schema`` returns these lists and the router dispatches on ``METHODS``, so the two can
never drift apart.
"""

from __future__ import annotations

# ``typing`` costs ~6 ms to import, which every agent hook would pay (README "Dependency
# rules"); annotations are strings here (PEP 563), so the names are only needed by checkers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

PROTOCOL: Final = "signaltty/1"

# protocol.md §5 (tier 1) and the tier 2 methods implemented so far.
METHODS: Final[tuple[str, ...]] = (
    "server.status",
    "server.schema",
    "server.shutdown",
    "server.restart",
    "workspace.create",
    "workspace.list",
    "workspace.get",
    "workspace.rename",
    "workspace.close",
    "pane.spawn",
    "pane.split",
    "pane.list",
    "pane.get",
    "pane.input",
    "pane.resize",
    "pane.signal",
    "pane.read",
    "pane.wait_for_output",
    "pane.attach",
    "pane.detach",
    "pane.close",
    "pane.mark_seen",
    "notify",
    "subscribe",
    "wait",
    "focus.next_unread",
    "attention.pending",
    # protocol.md §6 (tier 2)
    "hook-event",
    "report-session",
    "decision.answer",
    "permission.list",
    "pane.resume",
    "pane.submit",
    "pane.explain",
    "agents.list",
    "agents.reload",
    "agents.catalog",
    # issue 16 item 3: hosts this daemon watches over ssh
    "hosts.list",
    "hosts.reload",
)

# Calls that hold the connection until they finish (protocol.md §3 "single-flight calls");
# ``hook-event`` only with ``wait_for_answer: true`` (see ``is_single_flight``).
SINGLE_FLIGHT: Final[frozenset[str]] = frozenset({"wait", "pane.wait_for_output", "pane.submit"})

# protocol.md §10: reserved for tier 3, answered with UNKNOWN_METHOD.
RESERVED_PREFIXES: Final[tuple[str, ...]] = ("worktree.", "tab.", "task.", "plugin.")
RESERVED_METHODS: Final[frozenset[str]] = frozenset(
    {
        "workspace.refresh_git",
        "workspace.diff",
        "workspace.file_diff",
        "layout.export",
        "layout.apply",
        "pane.swap",
        "pane.rename",
        "pane.move",
        "pane.clear",
    }
)

LIFECYCLE_EVENTS: Final[tuple[str, ...]] = (
    "agent.working",
    "agent.blocked",
    "agent.done",
    "agent.failed",
    "agent.idle",
    "agent.unknown",
    "agent.exited",
)

# protocol.md §7.
EVENTS: Final[tuple[str, ...]] = (
    "workspace.created",
    "workspace.updated",
    "workspace.closed",
    "pane.created",
    "pane.updated",
    "pane.resized",
    "pane.exited",
    "pane.closed",
    "pane.progress",
    "pane.program_status",
    *LIFECYCLE_EVENTS,
    "attention.created",
    "attention.updated",
    "attention.cleared",
    "decision.created",
    "decision.answered",
    "decision.cleared",
    "notification.created",
    "agents.reloaded",
    "server.will_shutdown",
    "server.restarting",
    "server.restarted",
    "host.updated",
    "host.removed",
    "pty.data",
)

# protocol.md §8.
CODES: Final[tuple[str, ...]] = (
    "BAD_PROTOCOL",
    "UNKNOWN_METHOD",
    "BAD_PARAMS",
    "NO_SUCH_WORKSPACE",
    "NO_SUCH_PANE",
    "NO_SUCH_DECISION",
    "AMBIGUOUS",  # a bare decision id pending on several panes (issue #10 item 5)
    "PANE_EXITED",
    "PANES_ALIVE",
    "RESTART_FAILED",  # server.restart: the installed code does not start (issue 15)
    "SPAWN_FAILED",
    "IO_ERROR",
    "TIMEOUT",
    "RATE_LIMITED",
    "IDENTITY_CHANGED",
    "AGENT_BUSY",
    "AGENT_NOT_READY",
    "FORBIDDEN",
    "INTERNAL",
    "REMOTE_UNREACHABLE",  # a watched host's link is down (issue 16)
    "REMOTE_ERROR",  # a watched host answered with an error code that is not ours
    "NO_SUCH_TAB",
    "NO_SUCH_TASK",
    "MERGE_CONFLICT",
)

CAPABILITIES: Final = {
    "wait_baseline": True,
    "wait_multiple_outcomes": True,
    "subscribe_replay": "memory",
    "osc_progress": True,
    "program_status": True,
}


def is_single_flight(method: str, params: dict[str, object]) -> bool:
    """True for calls under the single-flight rule of protocol.md §3."""
    return method in SINGLE_FLIGHT or (
        method == "hook-event" and params.get("wait_for_answer") is True
    )


def is_reserved(method: str) -> bool:
    """Return True for tier 3 names that must answer ``UNKNOWN_METHOD`` (protocol.md §10)."""
    return method in RESERVED_METHODS or method.startswith(RESERVED_PREFIXES)
