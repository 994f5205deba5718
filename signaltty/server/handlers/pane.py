"""``pane.*`` queries and control: list, get, input, resize, signal, close, mark_seen,
explain, submit (protocol.md §5, §6). Output and attachment: ``handlers.output``;
spawning: ``handlers.spawn``."""

from __future__ import annotations

import base64
import binascii
from typing import Any, Protocol

from signaltty.core import limits, mirror, rules, waits
from signaltty.core.model import Pane
from signaltty.proto import params as P
from signaltty.proto.envelope import SignalttyError
from signaltty.server.handlers import submit
from signaltty.server.handlers.common import (
    Handler,
    OriginOf,
    Panes,
    clamp_size,
    parse_signal,
    refuse_inside_panes,
)
from signaltty.server.panes import PaneRuntime
from signaltty.server.ports import Client
from signaltty.server.remote import RemoteHosts


class Explainer(Protocol):
    """``pane.explain``'s source (``server.sweep.ScreenSweep``)."""

    def explain(self, pane: Pane, rt: PaneRuntime | None) -> dict[str, Any]: ...


class PaneHandlers:
    """The ``pane.*`` methods that neither start processes nor read output."""

    def __init__(
        self, *, panes: Panes, sweep: Explainer, remote: RemoteHosts, origin: OriginOf
    ) -> None:
        self._origin = origin
        self.panes = panes
        self.store = panes.store
        self.sweep = sweep
        self.remote = remote

    def routes(self) -> dict[str, Handler]:
        return {
            "pane.list": self.list_panes,
            "pane.get": self.get,
            "pane.input": self.input,
            "pane.resize": self.resize,
            "pane.signal": self.signal,
            "pane.close": self.close,
            "pane.mark_seen": self.mark_seen,
            "pane.explain": self.explain,
            "pane.submit": self.submit,
        }

    async def list_panes(self, conn: Client | None, p: P.PaneList) -> dict[str, Any]:
        """This daemon's panes, then every watched host's (``host`` and ``reachable`` set,
        ids ``host/…``; ``server/remote.py``)."""
        remote_ws = p.workspace_id is not None and mirror.split_id(p.workspace_id) is not None
        panes = [] if remote_ws else self.store.ordered_panes()
        if p.workspace_id is not None and not remote_ws:
            ws = self.panes.workspace(p.workspace_id)
            panes = [x for x in panes if x.workspace_id == ws.id]
        if p.live is not None:
            panes = [x for x in panes if x.live == p.live]
        out = [x.to_wire() for x in panes]
        if p.workspace_id is None or remote_ws:
            for link, pane in self.remote.panes():
                if (p.live is None or pane.live == p.live) and (
                    not remote_ws or pane.workspace_id == p.workspace_id
                ):
                    out.append(link.wire(pane))
        return {"panes": out}

    async def get(self, conn: Client | None, p: P.PaneRef) -> dict[str, Any]:
        found = self.remote.find(p.pane_id)
        if found is not None:
            return {"pane": found[0].wire(found[1])}
        pane = self.panes.pane(p.pane_id)
        return {
            "pane": pane.to_wire(),
            "wait_baseline": waits.baseline(pane, self.store.pane_seqs(pane.id)),
        }

    async def input(self, conn: Client | None, p: P.PaneInput) -> dict[str, Any]:
        if len(p.data_b64) > limits.MAX_INPUT_B64:
            raise SignalttyError("RATE_LIMITED", "input too large")
        try:
            data = base64.b64decode(p.data_b64, validate=True)
        except (binascii.Error, ValueError):
            raise SignalttyError(
                "BAD_PARAMS", "data_b64 is not valid base64", {"field": "data_b64"}
            ) from None
        rt = self.panes.live_runtime(p.pane_id)
        written = await rt.write_input(data, limits.INPUT_BUDGET_S)
        return {"written": written}

    async def resize(self, conn: Client | None, p: P.PaneResize) -> dict[str, Any]:
        rt = self.panes.live_runtime(p.pane_id)
        cols, rows = clamp_size(p.cols, p.rows, (rt.pane.cols, rt.pane.rows))
        rt.resize(cols, rows)
        self.store.dirty = True
        self.store.emit("pane.resized", {"pane": rt.pane.to_wire()})
        return {"pane": rt.pane.to_wire()}

    async def signal(self, conn: Client | None, p: P.PaneSignal) -> dict[str, Any]:
        sig = parse_signal(p.signal)
        rt = self.panes.live_runtime(p.pane_id)
        try:
            rt.send_signal(sig, group=bool(p.group))
        except ProcessLookupError:
            raise SignalttyError("PANE_EXITED", f"pane has exited: {p.pane_id}") from None
        except PermissionError as exc:
            raise SignalttyError("IO_ERROR", f"cannot signal: {exc.strerror}") from exc
        return {"sent": True}

    async def close(self, conn: Client | None, p: P.PaneClose) -> dict[str, Any]:
        self.panes.pane(p.pane_id)
        self.panes.close_pane(p.pane_id, parse_signal(p.signal))
        return {"closed": True}

    async def mark_seen(self, conn: Client | None, p: P.PaneRef) -> dict[str, Any]:
        if self.remote.find(p.pane_id) is not None:
            # the remote takes it as the person's (an ssh login): a pane process must not
            # clear another host's alerts for them (watched-host trust pass, F3)
            await refuse_inside_panes(self._origin, conn, "mark another host's pane seen")
            return await self.remote.mark_seen(p.pane_id)
        pane = self.panes.pane(p.pane_id)
        self.store.apply(rules.mark_seen(pane, "mark_seen", now=self.store.now()))
        return {"pane": pane.to_wire()}

    async def explain(self, conn: Client | None, p: P.PaneRef) -> dict[str, Any]:
        """Why the pane is classified as it is (protocol.md §6 ``pane.explain``)."""
        pane = self.panes.pane(p.pane_id)
        rt = self.panes.runtimes.get(p.pane_id)
        if rt is not None:
            await rt.settle()
        return self.sweep.explain(pane, rt)

    async def submit(self, conn: Client | None, p: P.PaneSubmit) -> dict[str, Any]:
        return await submit.submit(self.panes, p)
