"""``server.status``, ``server.schema``, ``server.shutdown`` (protocol.md §5)."""

from __future__ import annotations

import os
import time
from typing import Any

from signaltty import __version__
from signaltty.proto import constants
from signaltty.proto import params as P
from signaltty.proto.envelope import SignalttyError
from signaltty.server.config import Config
from signaltty.server.handlers.common import Handler
from signaltty.server.ports import Client, Control, Stats, StatusFacts
from signaltty.server.remote import RemoteHosts
from signaltty.server.store import Store
from signaltty.system import hardening


class ServerHandlers:
    """The ``server.*`` namespace."""

    def __init__(
        self,
        *,
        store: Store,
        config: Config,
        facts: StatusFacts,
        control: Control,
        sweep: Stats,
        remote: RemoteHosts,
    ) -> None:
        self.remote = remote
        self.store = store
        self.config = config
        self.facts = facts
        self.control = control
        self.sweep = sweep

    def routes(self) -> dict[str, Handler]:
        return {
            "server.status": self.status,
            "server.schema": self.schema,
            "server.shutdown": self.shutdown,
            "server.restart": self.restart,
        }

    async def status(self, conn: Client | None, p: P.Empty) -> dict[str, Any]:
        d = self.facts
        cfg = self.config
        panes = self.store.panes.values()
        result: dict[str, Any] = {
            "version": __version__,
            "protocol": constants.PROTOCOL,
            "instance_id": d.instance_id,
            "restarts": d.restarts,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - d.started_mono, 3),
            "socket": str(d.socket_path),
            "state_dir": str(d.state_dir),
            "workspaces": len(self.store.workspaces),
            "panes": len(self.store.panes),
            "live_panes": sum(1 for x in panes if x.live),
            "seq": self.store.seq,
            "path_hydration": d.path_hydration,
            "notifications": {
                "enabled": cfg.notifications.enabled,
                "mode": cfg.notifications.mode,
                "available": bool(d.notifier is not None and d.notifier.available),
                # why not, in the notifier's words (no session bus, no server, refused …)
                "reason": d.notifier.reason if d.notifier is not None else None,
            },
            "dbus": {
                "enabled": cfg.dbus.enabled,
                "name_owned": bool(d.dbus_service is not None and d.dbus_service.name_owned),
            },
            "connections": d.listener.stats() if d.listener else {},
            "sweep": self.sweep.stats(),
            "tasks": d.task_status(),
            # logind's delay lock: {state, reason, …} (desktop-and-service.md §3.4)
            "logind": d.logind_status(),
            # {dumpable, ptrace_scope}: can pane processes ptrace us (issue 10 third pass, A6)
            "hardening": hardening.status(),
            # watched hosts: [{name, target, state, since, error, panes, …}] (issue 16)
            "hosts": self.remote.status(),
        }
        if d.config_error:
            result["config_error"] = d.config_error
        return result

    async def schema(self, conn: Client | None, p: P.Empty) -> dict[str, Any]:
        return {
            "protocol": constants.PROTOCOL,
            "version": __version__,
            "methods": list(constants.METHODS),
            "events": list(constants.EVENTS),
            "codes": list(constants.CODES),
            "capabilities": dict(constants.CAPABILITIES),
        }

    async def restart(self, conn: Client | None, p: P.Empty) -> dict[str, Any]:
        """Answered by the restarted image on this connection: ``{restarted: true, pid,
        version, previous_version, panes_kept, handover, restarts}`` (issue 15 item 5)."""
        return await self.control.restart(conn)

    async def shutdown(self, conn: Client | None, p: P.ServerShutdown) -> dict[str, Any]:
        live = sum(1 for x in self.store.panes.values() if x.live)
        if live and not p.force:
            raise SignalttyError("PANES_ALIVE", f"{live} live panes; use force=true")
        if conn is not None:
            conn.after_response = self.control.request_shutdown
        else:
            self.control.request_shutdown()
        return {"stopped": True}
