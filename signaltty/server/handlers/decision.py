"""``hook-event``, ``report-session``, ``decision.answer``, ``permission.list``: the socket
side of ``server.hooks.HookService`` (protocol.md §6; issue #10 items 3, 6)."""

from __future__ import annotations

from typing import Any

from signaltty.proto import params as P
from signaltty.server.handlers.common import Handler, Panes
from signaltty.server.hooks import DAEMON_CALLER, Caller, HookService
from signaltty.server.ports import Client
from signaltty.server.remote import RemoteHosts


class DecisionHandlers:
    """Agent reports and permission answers."""

    def __init__(self, *, panes: Panes, hooks: HookService, remote: RemoteHosts) -> None:
        self.panes = panes
        self.hooks = hooks
        self.remote = remote

    def routes(self) -> dict[str, Handler]:
        return {
            "hook-event": self.hook_event,
            "report-session": self.report_session,
            "decision.answer": self.answer,
            "permission.list": self.permission_list,
        }

    async def hook_event(self, conn: Client | None, p: P.HookEvent) -> dict[str, Any]:
        # the kernel's word on who reports, not the client_pid it claims (issue #10 item 6)
        return await self.hooks.hook_event(p, conn.peer_pid if conn is not None else None, conn)

    async def report_session(self, conn: Client | None, p: P.ReportSession) -> dict[str, Any]:
        caller = Caller("socket", conn.peer_pid, conn.peer_ref) if conn is not None else None
        return await self.hooks.report_session(p, caller)

    async def answer(self, conn: Client | None, p: P.DecisionAnswer) -> dict[str, Any]:
        # No connection: the daemon's own process (a notification button). D-Bus answers
        # come through ``Router.answer_as`` with the bus caller's pid.
        if conn is None:
            return await self.hooks.answer(p, DAEMON_CALLER)
        return await self.hooks.answer(p, Caller("socket", conn.peer_pid, conn.peer_ref))

    async def permission_list(self, conn: Client | None, p: P.PermissionList) -> dict[str, Any]:
        if p.pane_id is not None and self.remote.find(p.pane_id) is None:
            self.panes.pane(p.pane_id)
        return self.hooks.permission_list(p.pane_id)
