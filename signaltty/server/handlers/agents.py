"""``agents.list``, ``agents.reload``, ``agents.catalog`` (protocol.md §6; agents.md §4)."""

from __future__ import annotations

import os
from typing import Any

from signaltty.agents import launch
from signaltty.proto import params as P
from signaltty.server.handlers.common import Handler
from signaltty.server.ports import CatalogSource, Client, Control, Hydration


class AgentHandlers:
    """The ``agents.*`` namespace."""

    def __init__(
        self,
        *,
        catalogs: CatalogSource,
        hydration: Hydration,
        control: Control,
        detection: launch.DetectionCache,
    ) -> None:
        self.catalogs = catalogs
        self.hydration = hydration
        self.control = control
        self.detection = detection  # shared with catalog launches (handlers.spawn)

    def routes(self) -> dict[str, Handler]:
        return {
            "agents.list": self.list_agents,
            "agents.reload": self.reload,
            "agents.catalog": self.catalog,
        }

    async def list_agents(self, conn: Client | None, p: P.Empty) -> dict[str, Any]:
        """``agents.list`` (protocol.md §6): the active catalog's manifests and failures."""
        return self.catalogs.catalog.listing()

    async def reload(self, conn: Client | None, p: P.Empty) -> dict[str, Any]:
        """``agents.reload`` (protocol.md §6). Raises ``IO_ERROR`` (dir unlistable; set kept)."""
        return await self.control.reload_agents()

    async def catalog(self, conn: Client | None, p: P.AgentsCatalog) -> dict[str, Any]:
        """protocol.md §6 ``agents.catalog``: installed/available entries on the hydrated PATH;
        ``refresh`` re-runs PATH hydration (≤ 5 s) and forgets cached detection."""
        if p.refresh:
            await self.hydration.refresh_path_hydration()
            self.detection.clear()
        else:
            await self.hydration.wait_hydration()
        entries = self.catalogs.catalog.entries()
        hydration = self.hydration.path_hydration
        return {
            "path_hydration": {
                "state": hydration.get("state"),
                "added": list(hydration.get("added", [])),
            },
            "agents": launch.catalog_rows(
                entries, os.environ.get("PATH", os.defpath), self.detection
            ),
        }
