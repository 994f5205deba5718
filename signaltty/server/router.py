"""Method dispatch: validated params → the handler of the method's namespace → result dicts.

Every surface (socket, CLI, D-Bus and notification buttons) goes through ``Router.call`` so
behaviour and errors are identical. Only this module and the listener translate errors:
``pydantic.ValidationError`` → ``BAD_PARAMS`` with ``details.field``; ``SignalttyError`` passes
through; anything else becomes ``INTERNAL`` in the listener. The handlers live in
``server/handlers/``, one module per namespace, each given only the collaborators it uses.
Spec: protocol.md §5, §6, §8.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from signaltty.agents import launch
from signaltty.core import mirror
from signaltty.core.ids import prefix_matches
from signaltty.proto import constants
from signaltty.proto import params as P
from signaltty.proto.envelope import SignalttyError
from signaltty.server.config import Config
from signaltty.server.handlers.agents import AgentHandlers
from signaltty.server.handlers.common import Handler, Namespace, Panes
from signaltty.server.handlers.decision import DecisionHandlers
from signaltty.server.handlers.events import EventHandlers
from signaltty.server.handlers.hosts import HostsHandlers
from signaltty.server.handlers.output import OutputHandlers
from signaltty.server.handlers.pane import PaneHandlers
from signaltty.server.handlers.server import ServerHandlers
from signaltty.server.handlers.spawn import SpawnHandlers
from signaltty.server.handlers.workspace import WorkspaceHandlers
from signaltty.server.hooks import Caller, HookService
from signaltty.server.ports import (
    CatalogSource,
    Client,
    Control,
    Hydration,
    Runtimes,
    StatusFacts,
)
from signaltty.server.remote import RemoteHosts
from signaltty.server.spawning import Spawner
from signaltty.server.store import Store
from signaltty.server.sweep import ScreenSweep
from signaltty.system.procref import ProcessRef

# Request fields naming a pane, which may be a unique prefix (issue 13 item 9).
_PANE_FIELDS = ("pane_id", "parent_pane_id")
# Reports written by agents' hooks from $SIGNALTTY_PANE: always a full id, and routing them
# must never guess (issue 10 item 6).
_FULL_IDS_ONLY = frozenset({"hook-event", "report-session"})
_AMBIGUOUS_SHOWN = 10  # ids listed in an AMBIGUOUS message


class Router:
    """Dispatches ``signaltty/1`` methods for one daemon.

    Raises ``RuntimeError`` at construction when the handlers and ``constants.METHODS``
    disagree (a method without a handler, or a handler for no method).
    """

    def __init__(
        self,
        *,
        store: Store,
        config: Config,
        runtimes: Runtimes,
        control: Control,
        catalogs: CatalogSource,
        hydration: Hydration,
        facts: StatusFacts,
        spawner: Spawner,
        hooks: HookService,
        sweep: ScreenSweep,
        remote: RemoteHosts,
    ) -> None:
        self.store = store
        self.hooks = hooks
        self.remote = remote
        panes = Panes(store=store, runtimes=runtimes, control=control, remote=remote)
        detection = launch.DetectionCache()  # agents.catalog; cleared by refresh
        self.events = EventHandlers(panes=panes, origin=hooks.origin)
        namespaces: tuple[Namespace, ...] = (
            ServerHandlers(
                store=store,
                config=config,
                facts=facts,
                control=control,
                sweep=sweep,
                remote=remote,
            ),
            WorkspaceHandlers(panes=panes),
            SpawnHandlers(
                panes=panes,
                spawner=spawner,
                config=config,
                catalogs=catalogs,
                hydration=hydration,
                detection=detection,
            ),
            PaneHandlers(panes=panes, sweep=sweep, remote=remote, origin=hooks.origin),
            OutputHandlers(panes=panes, config=config),
            self.events,
            DecisionHandlers(panes=panes, hooks=hooks, remote=remote),
            HostsHandlers(remote=remote, control=control, origin=hooks.origin),
            AgentHandlers(
                catalogs=catalogs, hydration=hydration, control=control, detection=detection
            ),
        )
        self._handlers: dict[str, Handler] = {}
        for ns in namespaces:
            self._handlers.update(ns.routes())
        differ = set(self._handlers) ^ set(constants.METHODS)
        if differ:
            raise RuntimeError(f"handlers and METHODS differ: {sorted(differ)}")

    async def call(self, conn: Client | None, method: str, raw: dict[str, Any]) -> dict[str, Any]:
        """Validate ``raw`` for ``method`` and run it.

        Raises:
            SignalttyError: every protocol error (``UNKNOWN_METHOD``, ``BAD_PARAMS``, …).
        """
        handler = self._handlers.get(method)
        if handler is None:
            raise SignalttyError("UNKNOWN_METHOD", f"unknown method: {method}")
        return await handler(conn, self._validate(method, raw))

    async def answer_as(
        self, surface: str, caller: ProcessRef | None, raw: dict[str, Any]
    ) -> dict[str, Any]:
        """``decision.answer`` for a surface that knows its caller (``dbus``: the sender's pid
        and what binds it to the process, None when the bus could not tell — refused).

        Same validation, guard and errors as the socket method (``HookService.answer``).
        """
        who = Caller(surface, caller.pid, caller) if caller is not None else Caller(surface)
        return await self.hooks.answer(self._validate("decision.answer", raw), who)

    async def notify_as(
        self,
        surface: str,
        caller: ProcessRef | None,
        pane_id: str | None,
        title: str,
        body: str | None,
        severity: str,
    ) -> dict[str, Any]:
        """``notify`` for a surface that knows its caller (``dbus``): a caller inside a pane
        speaks only for its own pane, one the bus could not tell (None) is refused like an
        answer (``EventHandlers.speaks_for``; issue 10, attack pass 3, A13).

        Raises:
            SignalttyError: ``FORBIDDEN``, ``BAD_PARAMS`` (empty title, body too long),
                ``NO_SUCH_PANE``.
        """
        who = Caller(surface, caller.pid, caller) if caller is not None else Caller(surface)
        return self.events.notify(
            await self.events.speaks_for(who, pane_id), title, body, severity, surface
        )

    def _validate(self, method: str, raw: dict[str, Any]) -> Any:
        """``raw`` as the pydantic model of ``method``; ``BAD_PARAMS`` with ``details.field``.

        Pane id fields given as a unique prefix are replaced by the full id here, once for
        every surface (socket, D-Bus, notification buttons): :meth:`resolve_pane_id`.
        """
        model = P.MODELS[method]
        try:
            params = model.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or None
            msg = f"{field}: {err['msg']}" if field else err["msg"]
            raise SignalttyError("BAD_PARAMS", msg, {"field": field}) from None
        if method in _FULL_IDS_ONLY:
            return params
        update = {}
        for name in _PANE_FIELDS:
            ref = getattr(params, name, None)
            if isinstance(ref, str) and ref not in self.store.panes:
                full = self.resolve_pane_id(ref, name)
                if full != ref:
                    update[name] = full
        # workspace ids abbreviate the same way (``ws_3f``); handles never hold ``_``
        ref = getattr(params, "workspace_id", None)
        if isinstance(ref, str) and ref not in self.store.workspaces:
            matches = prefix_matches(ref, self.store.workspaces, kind="ws_")
            if len(matches) == 1:
                update["workspace_id"] = matches[0]
            elif matches:
                shown = ", ".join(matches[:_AMBIGUOUS_SHOWN])
                raise SignalttyError(
                    "AMBIGUOUS",
                    f"workspace id prefix {ref} matches {len(matches)} workspaces: {shown};"
                    " type more of the id",
                    {"field": "workspace_id", "prefix": ref, "workspace_ids": matches[:20]},
                )
        return params.model_copy(update=update) if update else params

    def resolve_pane_id(self, ref: str, field: str = "pane_id") -> str:
        """The pane id ``ref`` names: itself when it is an id, else the one id it is a prefix
        of (``pane_`` plus at least one character, like git's and docker's short ids).

        Returns ``ref`` unchanged when it names no pane, so each method keeps its own
        error for an unknown pane (``NO_SUCH_PANE``, or ``NO_SUCH_DECISION`` for answers).

        Raises:
            SignalttyError: ``AMBIGUOUS`` when the prefix starts several ids; ``details``:
                ``field``, ``prefix``, ``pane_ids`` (sorted, at most 20).
        """
        if ref in self.store.panes:
            return ref
        if mirror.split_id(ref) is not None:  # another host's pane (``host/pane_…``)
            found = self.remote.resolve(ref)
            if isinstance(found, str):
                return found
            matches = found
        else:
            matches = prefix_matches(ref, self.store.panes)
        if len(matches) == 1:
            return matches[0]
        if not matches:
            return ref
        shown = ", ".join(matches[:_AMBIGUOUS_SHOWN]) + (
            f" and {len(matches) - _AMBIGUOUS_SHOWN} more"
            if len(matches) > _AMBIGUOUS_SHOWN
            else ""
        )
        raise SignalttyError(
            "AMBIGUOUS",
            f"pane id prefix {ref} matches {len(matches)} panes: {shown}; type more of the id",
            {"field": field, "prefix": ref, "pane_ids": matches[:20]},
        )
