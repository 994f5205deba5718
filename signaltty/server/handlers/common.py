"""What several handler modules share: pane/workspace lookups with the protocol's errors,
closing a pane, and small parsers (protocol.md §4–§6)."""

from __future__ import annotations

import signal as signal_mod
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from signaltty.core import limits, mirror, rules
from signaltty.core.model import Pane, Workspace
from signaltty.proto.envelope import SignalttyError
from signaltty.server.ancestry import Origin
from signaltty.server.hooks import Caller
from signaltty.server.panes import PaneRuntime
from signaltty.server.ports import Client, Control, Runtimes
from signaltty.server.remote import RemoteHosts
from signaltty.server.store import Store

# One method: (the calling connection or None, validated params) → result dict.
Handler = Callable[[Client | None, Any], Awaitable[dict[str, Any]]]
# Where a caller runs: the self-approval guard's trace (``HookService.origin``).
OriginOf = Callable[[Caller], Awaitable[Origin]]


async def refuse_inside_panes(origin: OriginOf, conn: Client | None, what: str) -> None:
    """Refuse a socket caller that runs inside one of our panes (``conn`` None: the
    daemon's own surfaces, allowed).

    Raises:
        SignalttyError: ``FORBIDDEN`` (details ``why``, ``caller_pane``), the message
            saying ``what`` is refused and to run it from the person's own terminal.
    """
    if conn is None:
        return
    found = await origin(Caller("socket", conn.peer_pid, conn.peer_ref))
    if found.inside:
        raise SignalttyError(
            "FORBIDDEN",
            f"processes inside signaltty panes cannot {what}: run it from your own terminal",
            {"why": found.why, "caller_pane": found.pane_id},
        )


class Namespace(Protocol):
    """A handler module's class: its methods by protocol name."""

    def routes(self) -> dict[str, Handler]: ...


_SIGNALS = {"INT", "TERM", "KILL", "HUP", "QUIT", "WINCH", "USR1", "USR2"}


def parse_signal(name: str | None, default: str = "TERM") -> int:
    """``INT``/``sigint``/``SIGTERM`` … → signal number (protocol.md ``pane.signal``).

    Raises:
        SignalttyError: ``BAD_PARAMS`` for any other name.
    """
    text = (name or default).upper()
    if text.startswith("SIG"):
        text = text[3:]
    if text not in _SIGNALS:
        raise SignalttyError("BAD_PARAMS", f"signal not allowed: {name}", {"field": "signal"})
    return int(getattr(signal_mod, "SIG" + text))


def clamp_size(cols: int | None, rows: int | None, default: tuple[int, int]) -> tuple[int, int]:
    """Clamp to 20–500 columns and 5–200 rows (protocol.md §4 ``pty_size``)."""
    c = default[0] if cols is None else cols
    r = default[1] if rows is None else rows
    return (
        max(limits.COLS_MIN, min(limits.COLS_MAX, c)),
        max(limits.ROWS_MIN, min(limits.ROWS_MAX, r)),
    )


def spawn_result(pane: Pane) -> dict[str, Any]:
    """``{pane, integration?}`` for pane.spawn/split/resume (integrations.md §3 "result")."""
    out: dict[str, Any] = {"pane": pane.to_wire()}
    if pane.integration is not None:
        out["integration"] = pane.integration
    return out


class Panes:
    """Pane and workspace lookups raising the protocol's errors, and ``close_pane``."""

    def __init__(
        self, *, store: Store, runtimes: Runtimes, control: Control, remote: RemoteHosts
    ) -> None:
        self.store = store
        self.runtimes = runtimes
        self._control = control
        self.remote = remote

    def pane(self, pane_id: str) -> Pane:
        """Raises ``NO_SUCH_PANE`` (for another host's pane: what to run instead)."""
        pane = self.store.panes.get(pane_id)
        if pane is None:
            link = self.remote.host_of(pane_id) if mirror.split_id(pane_id) else None
            if link is not None and pane_id in link.panes:
                rid = pane_id.partition(mirror.SEP)[2]
                raise SignalttyError(
                    "NO_SUCH_PANE",
                    f"{pane_id} is a pane of host {link.name}, watched read-only here: add "
                    f"`--host {link.entry.target}` and give the pane as {rid} (e.g. "
                    f"`signaltty --host {link.entry.target} pane attach {rid}`)",
                    {"host": link.name, "remote_pane_id": rid},
                )
            raise SignalttyError("NO_SUCH_PANE", f"no such pane: {pane_id}")
        return pane

    def runtime(self, pane_id: str) -> PaneRuntime:
        """Raises ``NO_SUCH_PANE``."""
        self.pane(pane_id)
        return self.runtimes[pane_id]

    def live_runtime(self, pane_id: str) -> PaneRuntime:
        """Raises ``NO_SUCH_PANE``, ``PANE_EXITED``."""
        rt = self.runtime(pane_id)
        if not rt.live:
            raise SignalttyError("PANE_EXITED", f"pane has exited: {pane_id}")
        return rt

    def workspace(self, ref: str) -> Workspace:
        """By id, handle or name (``Store.find_workspace``). Raises ``NO_SUCH_WORKSPACE``."""
        ws = self.store.find_workspace(ref)
        if ws is None:
            raise SignalttyError("NO_SUCH_WORKSPACE", f"no such workspace: {ref}")
        return ws

    def ws_updated(self, ws: Workspace) -> None:
        ws.updated_at = self.store.now()
        self.store.emit("workspace.updated", {"workspace": ws.to_wire()})

    def close_pane(self, pane_id: str, sig: int, *, announce_workspace: bool = True) -> None:
        """Remove a pane now; a live child gets ``sig`` (its group), SIGKILL after 5 s."""
        pane = self.store.panes[pane_id]
        rt = self.runtimes.pop(pane_id, None)
        if rt is not None:
            for viewer in list(rt.viewers):
                viewer.detached(pane_id)
            # Exited panes too: a grandchild may still hold the PTY in the child's group.
            rt.terminate(sig)
            if rt.proc is not None:
                self._control.reap_later(rt)
            rt.close()
            self._control.release_memory_later()
        self.store.apply(rules.on_close(pane))
        del self.store.panes[pane_id]
        self.store.seqs.pop(pane_id, None)
        self.store.dirty_tails.discard(pane_id)
        ws = self.store.workspaces.get(pane.workspace_id)
        if ws is not None and pane_id in ws.pane_ids:
            ws.pane_ids.remove(pane_id)
            if announce_workspace:
                self.ws_updated(ws)
        self.store.bus.poke(pane_id)
