"""The daemon's side of ``desktop/host.py``: what the D-Bus service and the notifier may use.

Built from the daemon's collaborators (store, router, hook service, pane runtimes, config),
never the daemon itself, so ``signaltty/desktop/`` needs nothing from ``server/``. Methods
run through the router's entry points, so every check the socket applies applies here too.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import psutil

from signaltty.core.model import Decision
from signaltty.desktop import policy
from signaltty.desktop.host import (
    DESKTOP_METHODS,
    AlertSink,
    DesktopMethod,
    EventObserver,
    PaneCounts,
    PaneSnapshot,
    Unsubscribe,
)
from signaltty.proto.envelope import SignalttyError
from signaltty.server.hooks import Caller
from signaltty.system.procref import ProcessRef

if TYPE_CHECKING:
    from signaltty.server.config import Config
    from signaltty.server.hooks import HookService
    from signaltty.server.panes import PaneRuntime
    from signaltty.server.remote import RemoteHosts
    from signaltty.server.router import Router
    from signaltty.server.store import Store

# Terminals opened for the person that are remembered (oldest forgotten first): clicks are
# rare, and each entry is checked on every answer's ancestry walk (server/ancestry.py).
MAX_PERSON_PIDS: Final = 64

_T = TypeVar("_T")


def _subscribe(callbacks: list[_T], callback: _T) -> Unsubscribe:
    callbacks.append(callback)

    def unsubscribe() -> None:
        with contextlib.suppress(ValueError):
            callbacks.remove(callback)

    return unsubscribe


class DesktopPort:
    """Implements ``desktop.host.DbusHost`` and ``desktop.host.NotifierHost``.

    Args:
        store: the state store (panes, workspaces, the event bus, alert sinks).
        router: protocol methods (``call``, ``answer_as``, ``notify``).
        hooks: the hook service (the self-approval guard's process trace).
        runtimes: pane id → live runtime (viewers).
        person_pids: the daemon's map of processes started for the person → start time;
            the guard trusts what runs under them (``server/ancestry.py``).
        person_ended: the daemon's map of those seen to exit → when.
        socket_path: the daemon's socket.
        config: the daemon's configuration (``[notifications]``, ``[desktop]``).
        remote: the watched hosts (``server/remote.py``): their panes are notified too.
    """

    def __init__(
        self,
        *,
        store: Store,
        router: Router,
        hooks: HookService,
        runtimes: dict[str, PaneRuntime],
        person_pids: dict[int, float | None],
        socket_path: Path,
        config: Config,
        person_ended: dict[int, float] | None = None,
        remote: RemoteHosts | None = None,
    ) -> None:
        self._remote = remote
        self._person_ended = person_ended if person_ended is not None else {}
        self._store = store
        self._router = router
        self._hooks = hooks
        self._runtimes = runtimes
        self._person_pids = person_pids
        self._socket_path = str(socket_path)
        cfg = config.notifications
        self._settings = policy.Settings(
            mode=cfg.mode,
            settle_s=cfg.settle_ms / 1000.0,
            suppress_when_attached=cfg.suppress_when_attached,
            sound=cfg.sound,
        )
        self._terminal = config.desktop.terminal

    # ---------------------------------------------------------------- both surfaces

    @property
    def socket_path(self) -> str:
        return self._socket_path

    async def call(self, method: DesktopMethod, params: dict[str, Any]) -> dict[str, Any]:
        if method not in DESKTOP_METHODS:  # answers must say who answers (the guard)
            raise SignalttyError("UNKNOWN_METHOD", f"not a desktop method: {method}"[:200])
        return await self._router.call(None, method, params)

    def observe_events(self, observer: EventObserver) -> Unsubscribe:
        return _subscribe(self._store.bus.observers, observer)

    # ---------------------------------------------------------------- D-Bus

    async def answer_as_bus_caller(
        self, caller: ProcessRef | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        return await self._router.answer_as("dbus", caller, params)

    async def notify_as_bus_caller(
        self,
        caller: ProcessRef | None,
        pane_id: str | None,
        title: str,
        body: str | None,
        severity: str,
    ) -> dict[str, Any]:
        return await self._router.notify_as("dbus", caller, pane_id, title, body, severity)

    def pending_decision(self, pane_id: str, decision_id: str) -> Decision | None:
        pane = self._store.panes.get(pane_id)
        if pane is None and self._remote is not None:
            found = self._remote.find(pane_id)
            pane = found[1] if found is not None else None
        dec = pane.pending_decision if pane is not None else None
        return dec if dec is not None and dec.id == decision_id else None

    def counts(self) -> PaneCounts:
        panes = list(self._store.panes.values())
        if self._remote is not None:
            panes += [pane for _, pane in self._remote.panes()]
        return PaneCounts(
            live=sum(1 for p in panes if p.live),
            pending_permissions=sum(1 for p in panes if p.pending_decision is not None),
            attention=sum(1 for p in panes if p.attention.value != "none"),
        )

    # ---------------------------------------------------------------- notifier

    @property
    def notification_settings(self) -> policy.Settings:
        return self._settings

    @property
    def terminal_command(self) -> Sequence[str] | None:
        return self._terminal

    def observe_alerts(self, sink: AlertSink) -> Unsubscribe:
        return _subscribe(self._store.alert_sinks, sink)

    def pane(self, pane_id: str) -> PaneSnapshot | None:
        pane = self._store.panes.get(pane_id)
        if pane is None:
            found = self._remote.find(pane_id) if self._remote is not None else None
            if found is None:
                return None
            link, mirrored = found
            return PaneSnapshot(
                pane=mirrored,
                workspace_name=self._remote.workspace_name(link, mirrored)
                if self._remote is not None
                else None,
                attached=False,
                host=link.name,
                host_target=link.entry.target,
            )
        ws = self._store.workspaces.get(pane.workspace_id)
        rt = self._runtimes.get(pane_id)
        return PaneSnapshot(
            pane=pane,
            workspace_name=ws.name if ws is not None else None,
            attached=bool(rt is not None and rt.viewers),
        )

    async def answer_from_notification(self, params: dict[str, Any]) -> dict[str, Any]:
        # no connection: the router answers as the daemon's own process (DAEMON_CALLER)
        return await self._router.call(None, "decision.answer", params)

    async def inside_pane(self, caller: ProcessRef) -> str | None:
        origin = await self._hooks.origin(Caller("notification", caller.pid, caller))
        if not origin.inside:
            return None
        return origin.why + (f" {origin.pane_id}" if origin.pane_id else "")

    def add_person_process(self, pid: int) -> None:
        try:
            started = psutil.Process(pid).create_time()
        except psutil.Error:
            return
        self._person_pids[pid] = started
        self._person_ended.pop(pid, None)
        while len(self._person_pids) > MAX_PERSON_PIDS:
            oldest = next(iter(self._person_pids))
            del self._person_pids[oldest]
            self._person_ended.pop(oldest, None)

    def person_process_ended(self, pid: int) -> None:
        if pid in self._person_pids:
            self._person_ended[pid] = time.time()
