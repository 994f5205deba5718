"""``workspace.*`` (protocol.md §5)."""

from __future__ import annotations

import os
from typing import Any

from signaltty.core import limits
from signaltty.core.ids import new_id, unique_handle
from signaltty.core.model import Workspace
from signaltty.core.sanitize import sanitize_text
from signaltty.proto import params as P
from signaltty.proto.envelope import SignalttyError
from signaltty.server.handlers.common import Handler, Panes, parse_signal
from signaltty.server.ports import Client


class WorkspaceHandlers:
    """The ``workspace.*`` namespace."""

    def __init__(self, *, panes: Panes) -> None:
        self.panes = panes
        self.store = panes.store

    def routes(self) -> dict[str, Handler]:
        return {
            "workspace.create": self.create,
            "workspace.list": self.list_all,
            "workspace.get": self.get,
            "workspace.rename": self.rename,
            "workspace.close": self.close,
        }

    async def create(self, conn: Client | None, p: P.WorkspaceCreate) -> dict[str, Any]:
        ws = self.create_workspace(p.name, p.cwd)
        return {"workspace": ws.to_wire()}

    def create_workspace(self, name: str | None, cwd: str | None) -> Workspace:
        """Create and announce a workspace (``workspace.created``).

        Raises:
            SignalttyError: ``BAD_PARAMS`` for an empty name or a cwd that is not an existing
                absolute directory.
        """
        clean = sanitize_text(name if name is not None else "workspace", limits.MAX_WORKSPACE_NAME)
        if not clean:
            raise SignalttyError("BAD_PARAMS", "name must not be empty", {"field": "name"})
        if cwd is None:
            home = os.environ.get("HOME") or ""
            cwd = home if os.path.isabs(home) and os.path.isdir(home) else "/tmp"
        elif not (os.path.isabs(cwd) and os.path.isdir(cwd)):
            raise SignalttyError(
                "BAD_PARAMS", f"cwd must be an existing absolute directory: {cwd}", {"field": "cwd"}
            )
        now = self.store.now()
        handle = unique_handle(clean, {w.handle for w in self.store.workspaces.values()})
        ws = Workspace(new_id("ws"), clean, handle, os.path.normpath(cwd), [], now, now)
        self.store.workspaces[ws.id] = ws
        self.store.emit("workspace.created", {"workspace": ws.to_wire()})
        return ws

    async def list_all(self, conn: Client | None, p: P.Empty) -> dict[str, Any]:
        wss = sorted(self.store.workspaces.values(), key=lambda w: w.created_at)
        return {"workspaces": [w.to_wire() for w in wss]}

    async def get(self, conn: Client | None, p: P.WorkspaceRef) -> dict[str, Any]:
        ws = self.panes.workspace(p.workspace_id)
        panes = [self.store.panes[x].to_wire() for x in ws.pane_ids if x in self.store.panes]
        return {"workspace": ws.to_wire(), "panes": panes}

    async def rename(self, conn: Client | None, p: P.WorkspaceRename) -> dict[str, Any]:
        ws = self.panes.workspace(p.workspace_id)
        clean = sanitize_text(p.name, limits.MAX_WORKSPACE_NAME)
        if not clean:
            raise SignalttyError("BAD_PARAMS", "name must not be empty", {"field": "name"})
        if clean != ws.name:
            ws.name = clean
            self.panes.ws_updated(ws)
        return {"workspace": ws.to_wire()}

    async def close(self, conn: Client | None, p: P.WorkspaceClose) -> dict[str, Any]:
        ws = self.panes.workspace(p.workspace_id)
        sig = parse_signal(p.signal)
        for pane_id in list(ws.pane_ids):
            if pane_id in self.store.panes:
                self.panes.close_pane(pane_id, sig, announce_workspace=False)
        del self.store.workspaces[ws.id]
        self.store.emit("workspace.closed", {"workspace_id": ws.id})
        return {"closed": True}
