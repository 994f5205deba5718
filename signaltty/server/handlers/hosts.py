"""``hosts.list``, ``hosts.reload``: the hosts this daemon watches over ssh (issue 16 item 3;
protocol.md §6 "Watched hosts"; ``server/remote.py``)."""

from __future__ import annotations

from typing import Any

from signaltty.proto import params as P
from signaltty.server.handlers.common import Handler, OriginOf, refuse_inside_panes
from signaltty.server.ports import Client, Control
from signaltty.server.remote import RemoteHosts


class HostsHandlers:
    """The ``hosts.*`` namespace."""

    def __init__(self, *, remote: RemoteHosts, control: Control, origin: OriginOf) -> None:
        self.remote = remote
        self.control = control
        self._origin = origin

    def routes(self) -> dict[str, Handler]:
        return {"hosts.list": self.list_hosts, "hosts.reload": self.reload}

    async def list_hosts(self, conn: Client | None, p: P.Empty) -> dict[str, Any]:
        """``{hosts: [HostStatus], errors: [str]}``: each watched host's link state and
        counts; ``errors`` names the ``[hosts]`` entries of the config that were left out."""
        return {"hosts": self.remote.status(), "errors": list(self.remote.errors)}

    async def reload(self, conn: Client | None, p: P.Empty) -> dict[str, Any]:
        """Read ``[hosts]`` from the config file again and watch exactly those hosts (what
        ``signaltty hosts add/remove`` call after editing the file).

        Raises:
            SignalttyError: ``FORBIDDEN`` for a caller inside a pane (each reload starts an
                ssh per host: a pane process could make the daemon run ssh at its pace);
                ``IO_ERROR`` when the file cannot be read or is not valid TOML (the hosts
                watched now are kept).
        """
        await refuse_inside_panes(self._origin, conn, "make the daemon re-read [hosts]")
        await self.control.reload_hosts()
        return await self.list_hosts(conn, p)
