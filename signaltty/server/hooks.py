"""``hook-event``, ``report-session``, ``decision.answer`` and ``permission.list``.

Routing (the reporter's ancestry; a named pane only when the reporter runs in it or names
it explicitly from outside every pane), the adapter call, the nested-session rule, native
permission routes (a waiter per ``permission_…`` decision) and answer delivery (route verdict
or Codex's typed channel), behind the self-approval guard and unambiguous decision ids. The
transition rules themselves are pure (``core.rules.on_hook``/``on_answer``). Spec: states.md
§3.1, §3.9; integrations.md §4; protocol.md §6; issue #10 items 3, 5, 6.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from signaltty.agents import hook_input, keyed, permission, resume
from signaltty.agents.adapters.base import Adapter
from signaltty.agents.adapters.overlay import resolve_adapter
from signaltty.agents.process_name import SHELLS
from signaltty.core import rules
from signaltty.core.ids import new_id
from signaltty.core.limits import MAX_HOOK_PAYLOAD
from signaltty.core.model import Decision, Pane
from signaltty.core.states import Attention, Lifecycle
from signaltty.core.verdicts import ALLOW_IDS, DENY_IDS
from signaltty.installer.command import MANAGED_SUFFIX
from signaltty.proto import params as P
from signaltty.proto.envelope import SignalttyError
from signaltty.server import ancestry
from signaltty.server.config import Config
from signaltty.server.pane_records import PaneRecords
from signaltty.server.ports import CatalogSource, OriginFacts, Runtimes
from signaltty.server.remote import RemoteHosts
from signaltty.server.sleep import SleepWatch
from signaltty.server.store import Store
from signaltty.system.procref import ProcessRef

log = structlog.get_logger("signaltty.hooks")

# Names a payload's ``agent``/``harness`` field may use for another known agent (step 6).
KNOWN_AGENTS = frozenset(
    {"claude", "codex", "opencode", "cursor", "pi", "gemini", "copilot", "grok"}
)
# The first line of a typed decision's prompt while its dialog was not on screen: the rest
# is only what a process reported (issue 10, attack 3, A10).
QUESTION_CHANGED = (
    "[the dialog on screen now asks something else; an answer is refused while it does]"
)
REPORTED_ONLY = "[reported by a process in the pane; the agent's dialog was not on screen yet]"
REFUSED_FROM_PANE = (
    "answer from your own terminal, the notification or D-Bus; "
    "processes inside signaltty panes cannot answer permissions"
)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sends a ``decision.answer`` (the self-approval guard, issue #10 item 3).

    Attributes:
        surface: ``socket``, ``dbus`` or ``daemon`` (a notification button: the daemon's own
            process, which is not inside any pane).
        pid: the calling process (``SO_PEERCRED`` / ``GetConnectionUnixProcessID``); None
            when unknown, which is refused for ``socket`` and ``dbus``.
        ref: what binds ``pid`` to the process that connected (a pidfd, its start time at
            accept, or the latest start time it can have; ``system.procref``): a pid reused
            since is refused (attack pass 3, A1/A2).
    """

    surface: str
    pid: int | None = None
    ref: ProcessRef | None = None


DAEMON_CALLER = Caller("daemon")


@dataclass(slots=True)
class Route:
    """A native permission waiter (integrations.md §4.1 step 3)."""

    decision_id: str
    pane_id: str
    process_instance: str
    kind: str
    agent_session_id: str | None
    deadline: float  # SleepWatch.awake() seconds: time asleep does not count (server/sleep.py)
    future: asyncio.Future[tuple[str, str | None]] = field(repr=False)
    # the waiting reporter's connection and the answer taking shape: a restart hands both
    # over, so the reporter gets its verdict from the new image (issue 15)
    client: Any = field(default=None, repr=False)
    result: dict[str, Any] = field(default_factory=dict, repr=False)


class HookService:
    """Hooks, sessions and answers for one daemon."""

    def __init__(
        self,
        *,
        store: Store,
        config: Config,
        runtimes: Runtimes,
        catalogs: CatalogSource,
        facts: OriginFacts,
        state_dir: Path | None = None,
        clock: SleepWatch | None = None,
    ) -> None:
        """``state_dir`` holds ``pane-processes.json`` (``pane_records``; None: not kept);
        ``clock`` measures native waits without the time asleep (a private one by default)."""
        self.store = store
        self.clock = clock if clock is not None else SleepWatch()
        self.clock.listeners.append(self._after_sleep)
        self.config = config
        self.runtimes = runtimes
        self.catalogs = catalogs
        self.facts = facts
        self.routes: dict[str, Route] = {}
        # watched hosts (server/remote.py): answers for their panes are forwarded there
        self.remote: RemoteHosts | None = None
        self.store.route_cancellers.append(self.cancel_route)
        # pane_id → pid of the agent process whose session the pane tracks
        self.agent_pids: dict[str, int] = {}
        # every pane process started in this run, kept after the pane exits or closes
        self.pane_procs = ancestry.PaneProcesses()
        # ... and of earlier runs, across a restart (attack pass 3, A7)
        self.records = PaneRecords(state_dir)
        # pane id → (its typed decision, the dialog's question as first seen on screen);
        # keyed by pane and checked by identity: decision ids are the reporter's (N4, below)
        self._questions: dict[str, tuple[Decision, str]] = {}
        self.store.bus.observers.append(self._on_event)
        # Hooks are applied in arrival order although the ancestry walk runs in a thread.
        self._hook_order = asyncio.Lock()

    def _on_event(self, seq: int, name: str, payload: dict[str, Any]) -> None:
        if name == "pane.created":
            # the runtime gets its process right after this event (spawning.py)
            asyncio.get_running_loop().call_soon(self._note_panes)

    def _note_panes(self) -> None:
        new = False
        for pane_id, rt in list(self.runtimes.items()):
            if rt.proc is not None:
                self.pane_procs.note(rt.proc.pid, pane_id)
                new = self.records.note_leader(rt.proc.pid) or new
        if new:  # a crash right after a spawn must not forget the pane
            asyncio.get_running_loop().run_in_executor(None, self.records.write)

    def record_adopted(
        self, adopted: frozenset[int], children: frozenset[int] | None = None
    ) -> None:
        """Persist this run's pane leaders and ``adopted`` orphans (blocking: the orphan
        scan's thread, ``subreaper.OrphanReaper``; ``children``: the daemon's unreaped
        children, see ``PaneRecords.write``). Terminals started for the person are not
        orphans of a pane and are left out."""
        people, ended = dict(self.facts.person_pids), dict(self.facts.person_ended)
        self.records.write(
            (pid for pid in adopted if not ancestry.person_process(pid, people, ended)),
            children,
        )

    # ---------------------------------------------------------------- restart (issue 15)

    def handover_state(self) -> dict[str, Any]:
        """The guard's process lists, frozen dialog questions and native waits (with the
        awake seconds each has left) for the image a restart starts."""
        awake = self.clock.awake()
        return {
            "agent_pids": dict(self.agent_pids),
            "pane_procs": self.pane_procs.export(),
            "questions": {pid: [dec.id, q] for pid, (dec, q) in self._questions.items()},
            "waits": {
                did: {
                    "pane_id": r.pane_id,
                    "process_instance": r.process_instance,
                    "kind": r.kind,
                    "agent_session_id": r.agent_session_id,
                    "left_s": max(0.0, r.deadline - awake),
                    "result": r.result,
                }
                for did, r in self.routes.items()
            },
        }

    def adopt_handover(self, state: dict[str, Any]) -> None:
        """Take over :meth:`handover_state` (waits are resumed one by one, ``resume_wait``);
        entries out of shape are skipped."""
        pids = state.get("agent_pids")
        if isinstance(pids, dict):
            for pane_id, pid in pids.items():
                if pane_id in self.store.panes and type(pid) is int and pid > 1:
                    self.agent_pids[pane_id] = pid
        self.pane_procs.adopt(state.get("pane_procs"))
        questions = state.get("questions")
        if isinstance(questions, dict):
            for pane_id, item in questions.items():
                pane = self.store.panes.get(pane_id)
                dec = pane.pending_decision if pane is not None else None
                if (
                    dec is not None
                    and isinstance(item, list)
                    and len(item) == 2
                    and item[0] == dec.id
                    and isinstance(item[1], str)
                ):
                    self._questions[pane_id] = (dec, item[1])

    def resume_wait(self, decision_id: str, wait: object) -> Route | None:
        """The route of a reporter handed over by a restart (its answer comes from
        :meth:`wait_on`); None when the wait no longer matches a pending decision of a live
        pane."""
        if not isinstance(wait, dict):
            return None
        pane = self.store.panes.get(wait.get("pane_id"))  # type: ignore[arg-type]
        left = wait.get("left_s")
        result = wait.get("result")
        session = wait.get("agent_session_id")
        if (
            pane is None
            or not pane.live
            or pane.pending_decision is None
            or pane.pending_decision.id != decision_id
            or wait.get("process_instance") != pane.process_instance
            or not isinstance(left, (int, float))
            or not isinstance(result, dict)
            or not isinstance(wait.get("kind"), str)
            or not (session is None or isinstance(session, str))
        ):
            return None
        route = Route(
            decision_id,
            pane.id,
            pane.process_instance,
            str(wait["kind"]),
            session,
            self.clock.awake() + min(float(left), 86_400.0),
            asyncio.get_running_loop().create_future(),
        )
        route.result = result
        self.routes[decision_id] = route
        return route

    def wait_on(self, route: Route, client: Any) -> Coroutine[Any, Any, dict[str, Any]]:
        """The call's answer for a route resumed on ``client`` (a later restart hands it
        over again)."""
        route.client = client
        return self._wait_verdict(route, route.result)

    # ---------------------------------------------------------------- routes

    def cancel_route(self, decision_id: str, reason: str) -> None:
        """End a waiter without a verdict (``reason`` is the reporter's ``cancelled``)."""
        route = self.routes.pop(decision_id, None)
        if route is not None and not route.future.done():
            route.future.set_result(("cancelled", _cancel_reason(reason)))

    def _after_sleep(self, _shift_s: float) -> None:
        """After a sleep, a pending native decision's wall-clock ``deadline`` (what clients
        show) moves with its wait, which did not count the time asleep (server/sleep.py)."""
        now = self.store.now()
        for route in self.routes.values():
            pane = self.store.panes.get(route.pane_id)
            dec = pane.pending_decision if pane is not None else None
            if dec is not None and dec.id == route.decision_id and dec.deadline is not None:
                dec.deadline = now + max(0.0, route.deadline - self.clock.awake())
                self.store.dirty = True

    def native_wait_s(self, kind: str, requested: float) -> float:
        """Seconds a native permission wait of agent ``kind`` lasts (issue 11 item 3).

        ``requested`` (the reporter's ``wait_timeout_s``, default 120) unless the agent hides
        its own dialog while waiting (``permission.HIDDEN_WHILE_WAITING``) and nobody can
        answer elsewhere (``answerable_elsewhere``): then at most ``[permissions]
        hidden_wait_s``, after which the wait ends without a verdict and the agent asks in
        its terminal. Decided once, when the request arrives.
        """
        if kind not in permission.HIDDEN_WHILE_WAITING or self.answerable_elsewhere():
            return requested
        return min(requested, self.config.permissions.hidden_wait_s)

    def answerable_elsewhere(self) -> bool:
        """Whether someone can answer a permission away from the agent's terminal now: the
        notification server shows action buttons, or a client subscribed to
        ``decision.created`` (``signaltty top``, ``subscribe``; not ``pane attach``, which
        only follows its pane's exit). D-Bus listeners cannot be seen (the bus keeps match
        rules to itself); docs/configuration.md says so."""
        notifier = self.facts.notifier
        if notifier is not None and notifier.can_answer:
            return True
        return self.store.bus.subscribed_to("decision.created")

    def forget_pane(self, pane_id: str) -> None:
        """A new process instance in the pane: its tracked agent process is gone."""
        self.agent_pids.pop(pane_id, None)

    def cancel_all(self, reason: str) -> None:
        for decision_id in list(self.routes):
            self.cancel_route(decision_id, reason)

    def check_routes(self, pane: Pane) -> None:
        """After a store change: end routes whose pane moved on (integrations.md §4.1 step 5)."""
        for route in [r for r in self.routes.values() if r.pane_id == pane.id]:
            dec = pane.pending_decision
            if (
                not pane.live
                or pane.process_instance != route.process_instance
                or pane.agent.kind != route.kind
                or (
                    route.agent_session_id and pane.agent.agent_session_id != route.agent_session_id
                )
                or dec is None
                or dec.id != route.decision_id
            ):
                self.cancel_route(route.decision_id, "moved_on")

    # ---------------------------------------------------------------- hook-event

    def _children(self) -> dict[int, str]:
        return {
            rt.proc.pid: pane_id
            for pane_id, rt in self.runtimes.items()
            if rt.proc is not None and rt.live
        }

    async def _pane_for(
        self, p: P.HookEvent, reporter_pid: int | None
    ) -> tuple[Pane | None, ancestry.Chain | None, str | None]:
        """The pane a hook belongs to: ``(pane, chain, drop reason)``.

        The reporter's ancestry decides whenever it runs in a pane: a hook is never applied
        to a pane its reporter does not run in (issue #10 item 6: a tmux server started in
        pane A keeps A's ``SIGNALTTY_PANE`` for an agent shown in pane B). A named pane is
        used as it is only when the reporter runs in no pane and named it explicitly
        (``--pane``, or a client with no process to trace); one inherited from the
        environment is then dropped (``outside_pane``).

        Raises:
            SignalttyError: ``NO_SUCH_PANE`` for a named pane that does not exist.
        """
        named: Pane | None = None
        if p.pane_id:
            named = self.store.panes.get(p.pane_id)
            if named is None:
                raise SignalttyError("NO_SUCH_PANE", f"no such pane: {p.pane_id}")
        if reporter_pid is None:
            return named, None, None
        children = self._children()
        # an explicit --pane may need the guard's trace too: both in one worker-thread trip
        # (under a busy loop each trip back waits behind the ready callbacks)
        tracer = (
            self._origin_tracer(reporter_pid, None)
            if named is not None and not p.pane_from_env
            else None
        )

        def walk() -> tuple[ancestry.Chain, ancestry.Origin | None]:
            found = ancestry.find_pane(reporter_pid, children)
            return found, (tracer() if tracer is not None and found.pane_id is None else None)

        chain, origin = await asyncio.to_thread(walk)
        if named is not None:  # it may have been closed during the walk
            named = self.store.panes.get(named.id)
            if named is None:
                raise SignalttyError("NO_SUCH_PANE", f"no such pane: {p.pane_id}")
        if chain.pane_id is not None:
            pane = self.store.panes.get(chain.pane_id)
            if named is not None and pane is not None and pane.id != named.id:
                log.warning(
                    "hook.rerouted", named=named.id, pane_id=pane.id, from_env=p.pane_from_env
                )
            return pane, chain, None
        if named is None:
            return None, chain, None
        if p.pane_from_env:
            log.warning("hook.outside_pane", named=named.id)
            return None, chain, "outside_pane"
        # an explicit --pane from no pane: obeyed only from a process that is outside every
        # pane by the guard's own measure, or traced to that same pane (its environment): a
        # `setsid -f` escape from pane Y must not write pane X's decisions or the text the
        # person approves
        if origin is None:
            origin = await self.origin(Caller(surface="hook", pid=reporter_pid))
        if origin.inside and origin.pane_id != named.id:
            log.warning(
                "hook.escaped_reporter", named=named.id, why=origin.why, caller_pane=origin.pane_id
            )
            return None, chain, "outside_pane"
        return named, None, None

    async def hook_event(
        self, p: P.HookEvent, peer_pid: int | None = None, client: Any = None
    ) -> dict[str, Any]:
        """Steps 1–15 of states.md §3.1, plus native waiting (integrations.md §4.1).

        ``peer_pid`` is the reporter as the kernel saw it connect (``SO_PEERCRED``); the
        request's ``client_pid`` is used only when it is unknown. Hooks are applied in
        arrival order.

        Raises:
            SignalttyError: ``BAD_PARAMS``, ``RATE_LIMITED`` (payload > 256 KiB),
                ``NO_SUCH_PANE``, ``PANE_EXITED`` (native waiting on an exited pane),
                ``FORBIDDEN`` (a decision answered by typing, not from the agent's own hook
                process: ``_check_typed_reporter``).
        """
        payload = p.payload
        if payload is not None and _payload_size(payload) > MAX_HOOK_PAYLOAD:
            raise SignalttyError(
                "RATE_LIMITED", "payload larger than 256 KiB", {"field": "payload"}
            )
        if payload is not None and not isinstance(payload, dict):
            raise SignalttyError(
                "BAD_PARAMS", "payload must be a JSON object or null", {"field": "payload"}
            )
        adapter = resolve_adapter(self.catalogs.catalog, p.agent)
        # 1. native permission synthesis
        decision: Decision | None = None
        now = self.store.now()
        native_ok = (
            p.decision is None
            and p.event == "PermissionRequest"
            and permission.meets_native_contract(adapter.kind if adapter else p.agent, payload)
        )
        if native_ok:
            decision = permission.native_decision(
                adapter.kind if adapter else p.agent, payload, now=now
            )
        elif p.wait_for_answer:
            raise SignalttyError(
                "BAD_PARAMS",
                "native waiting needs a PermissionRequest meeting the native contract"
                " and no explicit decision",
                {"field": "wait_for_answer"},
            )
        # 2. validate the explicit decision
        if p.decision is not None:
            decision = _explicit_decision(p.decision, adapter, now)
            if adapter is not None and adapter.answer_channel() is not None:
                # answered by the dialog's own fixed keys, never the reporter's options (A10)
                decision = keyed.typed_decision(decision)
        elif decision is None:  # a dialog answered by keys (Gemini CLI, issue 11)
            decision = keyed.decision_for(p.agent, p.event, payload, now=now)
        # 3. adapter
        if adapter is None:
            raise SignalttyError("BAD_PARAMS", f"unknown agent: {p.agent}", {"field": "agent"})
        async with self._hook_order:
            # 4–5. pane (the walk runs in a thread; the lock keeps hooks in arrival order)
            pane, chain, dropped = await self._pane_for(p, peer_pid or p.client_pid)
            if pane is not None and dropped is None and keyed.is_keyed(decision):
                # every decision answered by typing (Codex's reported ones, Gemini CLI's):
                # only the pane's own agent, only from its own hook process, and the person
                # is shown the dialog's own question (attack passes 3 and 6)
                assert decision is not None
                _check_keyed_agent(pane, decision)
                await self._check_typed_reporter(
                    chain, adapter, peer_pid or p.client_pid, decision.agent or adapter.kind
                )
                self._screen_question(pane, decision)
            # only the agent's own hook process may say it went past a permission request
            # (sixth attack pass, finding 3: a tool's child sent PostToolUse and the waiting
            # request read answered while the dialog still waited)
            # (an agent not recognizable in the chain, e.g. a renamed wrapper, is not judged)
            agent_hook = True
            if (
                pane is not None
                and dropped is None
                and chain is not None
                and (
                    pane.pending_decision is not None
                    or pane.attention == Attention.PERMISSION_REQUIRED
                )
                and ancestry.agent_process(chain, adapter.builtin_names) is not None
            ):
                agent_hook = await self._from_agent_hook(chain, adapter)
            result, route = self._apply_hook(
                p, adapter, decision, now, pane, chain, dropped, agent_hook=agent_hook
            )
        if route is None:
            return result
        route.client, route.result = client, result
        return await self._wait_verdict(route, result)

    async def _check_typed_reporter(
        self,
        chain: ancestry.Chain | None,
        adapter: Adapter,
        reporter_pid: int | None,
        agent_name: str,
    ) -> None:
        """A decision answered by typing is taken only from the agent's own hook process.

        Inside a pane, the reporter's parent must be the agent process
        (``ancestry.agent_process``), or a shell the agent started to run exactly our
        managed hook command (Gemini CLI runs its hooks with ``bash -c``; the shell's command
        line ends with ``installer.command.MANAGED_SUFFIX``): a background task or an MCP
        server the agent started is a deeper descendant and is refused. A reporter traced to
        no pane by ancestry must be outside every pane by the guard's measure (the person).
        Issue 10, attack passes 3 (A10) and 6.

        Raises:
            SignalttyError: ``FORBIDDEN`` (``details.field = "decision"``).
        """
        if chain is not None and chain.pane_id is not None:
            if await self._from_agent_hook(chain, adapter):
                return
        elif reporter_pid is not None:
            origin = await self.origin(Caller(surface="hook", pid=reporter_pid))
            if not origin.inside:
                return
        log.warning(
            "hook.typed_decision_refused",
            agent=agent_name,
            pid=reporter_pid,
            chain=list(zip(chain.pids, chain.names, strict=False))[:8] if chain else None,
        )
        raise SignalttyError(
            "FORBIDDEN",
            f"a {agent_name} decision is accepted only from the agent's own hook process"
            " (its parent must be the agent), not from a process the agent started",
            {"field": "decision"},
        )

    @staticmethod
    async def _from_agent_hook(chain: ancestry.Chain, adapter: Adapter) -> bool:
        """Whether the reporter is the agent's own hook process: its parent is the agent,
        or a shell the agent started to run exactly a managed hook command (Gemini CLI runs
        hooks with ``bash -c``; the shell's command line ends with ``MANAGED_SUFFIX``)."""
        agent = ancestry.agent_process(chain, adapter.builtin_names)
        if agent is None or len(chain.pids) < 2:
            return False
        if chain.pids[1] == agent:
            return True
        return (
            len(chain.pids) > 2
            and chain.pids[2] == agent
            and chain.names[1] in SHELLS
            and await asyncio.to_thread(_runs_managed_hook, chain.pids[1])
        )

    def _screen_question(self, pane: Pane, decision: Decision) -> None:
        """Show the dialog's own question when it is on screen, else say the prompt is only
        what a process reported (the person must not approve a reporter's wording)."""
        rt = self.runtimes.get(pane.id)
        shown = keyed.question(decision, rt.screen.screen_text()) if rt is not None else None
        decision.prompt = shown or f"{REPORTED_ONLY}\n{decision.prompt}"
        if shown:
            self._freeze(pane, decision, shown)

    def _freeze(self, pane: Pane, dec: Decision, question: str) -> None:
        """Keep ``question`` as what the person is shown and approves for ``dec``.

        Any same-uid process can write to a pane's tty and redraw its screen, so a question
        re-read from the screen later may be a forgery (issue 10, fourth attack pass, N4):
        the first one seen is kept, and an answer is typed only while the screen still asks
        it. Entries of panes gone from the store are dropped here (bounded by the panes).
        """
        for gone in [k for k in self._questions if k not in self.store.panes]:
            del self._questions[gone]
        self._questions[pane.id] = (dec, question)
        dec.prompt = question

    def _frozen(self, pane: Pane, dec: Decision) -> str | None:
        kept = self._questions.get(pane.id)
        return kept[1] if kept is not None and kept[0] is dec else None

    def _apply_hook(
        self,
        p: P.HookEvent,
        adapter: Adapter,
        decision: Decision | None,
        now: float,
        pane: Pane | None,
        chain: ancestry.Chain | None,
        dropped: str | None,
        *,
        agent_hook: bool = True,
    ) -> tuple[dict[str, Any], Route | None]:
        """Steps 6–15 once the pane is known (synchronous); the route to wait on, if any.

        ``agent_hook``: False when the reporter, traced to the pane, is not the agent's own
        hook process; such a hook cannot end a pending permission request."""
        payload = p.payload
        base = {"agent": p.agent, "event": p.event}
        if dropped is not None:
            # the reporter runs in no pane: the agent goes on by itself (no verdict, exit 0)
            return {
                **base,
                "accepted": False,
                "dropped": True,
                "reason": dropped,
                "pane_id": None,
                "lifecycle": None,
                "attention": None,
            }, None
        if pane is None:
            if p.wait_for_answer:
                raise SignalttyError("BAD_PARAMS", "native waiting requires a managed pane")
            return {
                **base,
                "accepted": True,
                "pane_id": None,
                "lifecycle": None,
                "attention": None,
            }, None
        if p.wait_for_answer and not pane.live:
            raise SignalttyError("PANE_EXITED", f"pane has exited: {pane.id}")
        foreign = _foreign_harness(payload, adapter.kind)
        session_id, rejected = adapter.session_identity(payload)
        if rejected is not None:  # never stored, never an argv operand (issue 10 item 4)
            log.warning(
                "hook.session_id_rejected",
                pane_id=pane.id,
                reason=resume.rejection(adapter, rejected),
            )
        if chain is not None and chain.pane_id != pane.id:
            chain = None
        # Nested agent sessions (e.g. `claude -p` run by a tool inside the pane's agent).
        if (
            chain is not None
            and session_id is not None
            and self._is_nested(pane, chain, adapter, session_id)
        ):
            return _dropped(base, pane, "nested_session"), None
        if adapter.is_auxiliary(p.event, payload, pane.agent.agent_session_id):
            # e.g. the notify of Codex's hidden title-generation thread
            return _dropped(base, pane, "unrecognized_hook"), None
        route: Route | None = None
        if p.wait_for_answer and decision is not None:
            loop = asyncio.get_running_loop()
            timeout = self.native_wait_s(adapter.kind, p.wait_timeout_s or 120.0)
            decision.deadline = now + timeout
            route = Route(
                decision.id,
                pane.id,
                pane.process_instance,
                adapter.kind,
                session_id,
                self.clock.awake() + timeout,
                loop.create_future(),
            )
            self.routes[decision.id] = route
        hook = hook_input.assemble(
            adapter,
            pane,
            p.event,
            payload,
            session_id=session_id,
            decision=decision,
            native_route=route is not None,
            notification_id=new_id("notif"),
            foreign_harness=foreign,
            message=p.message,
            body=p.body,
            title=p.title,
            severity=p.severity,
        )
        if not agent_hook and rules.went_past_request(pane, hook):
            log.warning(
                "hook.resolution_refused",
                pane_id=pane.id,
                hook=p.event,
                chain=list(zip(chain.pids, chain.names, strict=False))[:8] if chain else None,
            )
            if route is not None:
                self.routes.pop(route.decision_id, None)
            return _dropped(base, pane, "not_agent_hook"), None
        known_session = pane.agent.agent_session_id
        outcome = rules.on_hook(pane, hook, now=now)
        if not outcome.accepted:
            if route is not None:
                self.routes.pop(route.decision_id, None)
            return _dropped(base, pane, outcome.reason), None
        if chain is not None and session_id is not None:
            agent_pid = ancestry.agent_process(chain, adapter.builtin_names)
            if agent_pid is not None:
                self.agent_pids[pane.id] = agent_pid
        self.store.apply(outcome.effects)
        if session_id is not None and pane.agent.agent_session_id == session_id:
            self._note_session(
                pane, payload, adapter, chain, new_session=known_session != session_id
            )
        self.check_routes(pane)
        result: dict[str, Any] = {
            **base,
            "accepted": True,
            "pane_id": pane.id,
            "lifecycle": pane.lifecycle.value,
            "attention": pane.attention.value,
        }
        if outcome.decision_id is not None:
            result["decision_id"] = outcome.decision_id
        return result, route

    def _note_session(
        self,
        pane: Pane,
        payload: Any,
        adapter: Adapter,
        chain: ancestry.Chain | None,
        *,
        new_session: bool,
    ) -> None:
        """Record where the session runs and the launch options its resume keeps.

        ``session_cwd``: the payload's ``cwd`` of the first hook of a session that carries
        a usable one (``resume.usable_cwd``, an existing directory). A later hook of the same
        session does not move it (a ``cd`` in the agent's shell tool changes the ``cwd`` it
        reports; the agent keeps its sessions by the directory it started in); a new session
        id starts over. ``pane.resume`` runs there while it exists.

        ``launch_options``: at a new session, the kept options (``--model X``) of the agent
        process's command line when the pane's own argv is not the agent (an agent started
        from a shell in the pane); the resume command is recomputed with them.

        Spec: issue 11 item 11.
        """
        info = pane.agent
        changed: list[str] = []
        if new_session or info.session_cwd is None:
            raw = payload.get("cwd") if isinstance(payload, dict) else None
            cwd = resume.usable_cwd(raw)
            if cwd is not None and not os.path.isdir(cwd):
                cwd = None
            if raw is not None and cwd is None:
                log.info("hook.cwd_ignored", pane_id=pane.id, cwd=repr(raw)[:80])
            if (cwd is not None or new_session) and cwd != info.session_cwd:
                info.session_cwd = cwd
                changed.append("session_cwd")
        if new_session:
            options = self._agent_options(pane, adapter, chain)
            if options != info.launch_options:
                info.launch_options = options
                changed.append("launch_options")
                argv = resume.resolve(pane, adapter, info.agent_session_id)
                if argv is not None and argv != info.resume_argv:
                    info.resume_argv = argv
                    changed.append("resume_argv")
        if changed:
            self.store.apply(
                [rules.Emit("pane.updated", {"pane": pane.to_wire(), "changed": changed})]
            )

    @staticmethod
    def _agent_options(pane: Pane, adapter: Adapter, chain: ancestry.Chain | None) -> list[str]:
        template = adapter.resume_template()
        if not template or chain is None:
            return []
        program = os.path.basename(template[0])
        if pane.argv and os.path.basename(pane.argv[0]) == program:
            return []  # the pane started the agent: its own argv says (resume.kept_options)
        pid = ancestry.agent_process(chain, adapter.builtin_names)
        line = ancestry.cmdline(pid) if pid is not None else None
        return resume.options_of_process(line, program) if line else []

    def _is_nested(
        self, pane: Pane, chain: ancestry.Chain, adapter: Adapter, session_id: str
    ) -> bool:
        """A hook from a second agent process running *inside* the pane's tracked agent.

        The pane tracks the agent process that reported its session (recorded at the first
        accepted hook with a session id). A hook whose own agent process is a different,
        deeper process in the chain, while the tracked one is still alive and is its
        ancestor, belongs to a nested session and must not replace the pane's identity.
        """
        known = pane.agent.agent_session_id
        tracked = self.agent_pids.get(pane.id)
        if known is None or session_id == known or tracked is None:
            return False
        mine = ancestry.agent_process(chain, adapter.builtin_names)
        if mine is None or mine == tracked:
            return False
        return tracked in chain.pids and ancestry.is_alive(tracked)

    async def _wait_verdict(self, route: Route, result: dict[str, Any]) -> dict[str, Any]:
        kind: str
        value: str | None
        try:
            while True:
                left = route.deadline - self.clock.awake()
                if left <= 0:
                    kind, value = "cancelled", "timeout"
                    break
                try:
                    # while logind's sleep window is open the awake clock stands still:
                    # look again every half second rather than spin on a tiny `left`
                    wait = max(left, 0.5) if self.clock.asleep else left
                    kind, value = await asyncio.wait_for(asyncio.shield(route.future), wait)
                    break
                except TimeoutError:
                    continue  # asleep meanwhile: what is left of the wait is measured again
        except asyncio.CancelledError:
            # The reporter went away (EOF/another line) or the daemon shuts down.
            self._end_without_verdict(route, "native_cancelled")
            raise
        if kind == "verdict":
            assert value is not None
            result["native_verdict"] = permission.verdict_json(value)
            return result
        self._end_without_verdict(route, "native_cancelled", value)
        result["native_verdict"] = None
        result["cancelled"] = value
        pane = self.store.panes.get(route.pane_id)
        if pane is not None:
            result["lifecycle"] = pane.lifecycle.value
            result["attention"] = pane.attention.value
        return result

    def _end_without_verdict(self, route: Route, reason: str, cancelled: str | None = None) -> None:
        """Drop the route; clear its decision if still current. ``cancelled`` (the waiter's
        ending, e.g. ``timeout``) is added to the event, so the notifier can tell the person
        that the agent now asks in its terminal (issue 13 item 7)."""
        self.routes.pop(route.decision_id, None)
        if self.store.shutting_down:
            # The agent still shows its dialog: the decision stays in the snapshot and is
            # restored read-only (states.md restore, RS4), whatever the order of shutdown steps.
            return
        pane = self.store.panes.get(route.pane_id)
        if (
            pane is not None
            and pane.pending_decision is not None
            and pane.pending_decision.id == route.decision_id
        ):
            dec = pane.pending_decision
            pane.pending_decision = None
            payload = {"pane_id": pane.id, "decision_id": dec.id, "reason": reason}
            if cancelled is not None:
                payload["cancelled"] = cancelled
            self.store.apply([rules.Emit("decision.cleared", payload)])

    # ---------------------------------------------------------------- report-session

    async def report_session(
        self, p: P.ReportSession, caller: Caller | None = None
    ) -> dict[str, Any]:
        """``report-session`` (protocol.md §6), from inside the named pane or from outside
        every pane.

        ``caller`` is the kernel's word on the client (``SO_PEERCRED``). A process traced to
        another pane (ancestry, session, environment, a daemon-started escape; see
        ``check_caller``) is refused: one pane must not rewrite another's session (issue 10
        follow-up, item 1). A ``resume_argv`` is accepted only when it equals the agent's
        own resume template with the session id substituted (``resume.matches_template``);
        the stored command is always the template's.

        Raises:
            SignalttyError: ``NO_SUCH_PANE``, ``FORBIDDEN`` (caller in another pane),
                ``BAD_PARAMS`` (bad id, unknown agent, a ``resume_argv`` that is not the
                agent's resume command).
        """
        pane = self.store.panes.get(p.pane_id)
        if pane is None:
            raise SignalttyError("NO_SUCH_PANE", f"no such pane: {p.pane_id}")
        if caller is not None and caller.pid is not None:
            chain = await asyncio.to_thread(ancestry.find_pane, caller.pid, self._children())
            where = chain.pane_id
            if where is None:
                origin = await self.origin(caller)
                where = origin.pane_id if origin.inside else None
                if origin.inside and where is None:
                    where = "?"
            if where is not None and where != p.pane_id:
                log.warning("report_session.refused", pane_id=p.pane_id, caller_pane=where)
                raise SignalttyError(
                    "FORBIDDEN",
                    "report-session is accepted only from inside the pane it names"
                    " (or from outside every pane)",
                    {"pane_id": p.pane_id},
                )
            pane = self.store.panes.get(p.pane_id)
            if pane is None:
                raise SignalttyError("NO_SUCH_PANE", f"no such pane: {p.pane_id}")
        kind = p.agent or (pane.agent.kind if pane.agent.kind not in ("none",) else "generic")
        adapter = resolve_adapter(self.catalogs.catalog, kind)
        if adapter is None:
            raise SignalttyError("BAD_PARAMS", f"unknown agent: {kind}", {"field": "agent"})
        try:
            session_id = resume.validate_session_id(p.agent_session_id, adapter.session_id_grammar)
        except ValueError as exc:
            log.warning("report_session.session_id_rejected", pane_id=pane.id, reason=str(exc))
            raise SignalttyError("BAD_PARAMS", str(exc), {"field": "agent_session_id"}) from None
        argv = resume.resolve(pane, adapter, session_id)
        if p.resume_argv is not None:
            try:
                reported = resume.validate_reported_resume_argv(p.resume_argv)
            except ValueError as exc:
                raise SignalttyError("BAD_PARAMS", str(exc), {"field": "resume_argv"}) from None
            template = adapter.resume_template()
            expected = (
                resume.substitute(template, session_id, adapter.session_id_grammar)
                if template
                else None
            )
            if not (
                resume.matches_template(reported, expected)
                or resume.matches_template(reported, argv)
            ):
                log.warning("report_session.resume_argv_rejected", pane_id=pane.id)
                raise SignalttyError(
                    "BAD_PARAMS",
                    "resume_argv must be the agent's own resume command "
                    f"({' '.join(expected) if expected else 'this agent has none'}); "
                    "other commands are not accepted",
                    {"field": "resume_argv"},
                )
        effects, changed = rules.set_session(
            pane,
            adapter.kind,
            session_id,
            argv,
            resume_source="adapter",
            display_name=adapter.display_name,
        )
        if changed:
            effects.append(rules.Emit("pane.updated", {"pane": pane.to_wire(), "changed": changed}))
        self.store.apply(effects)
        self.check_routes(pane)
        return {"pane": pane.to_wire()}

    # ---------------------------------------------------------------- answers

    async def answer(self, p: P.DecisionAnswer, caller: Caller) -> dict[str, Any]:
        """``decision.answer`` (integrations.md §4.2); check-and-consume is synchronous.

        The caller is checked first (``check_caller``), before anything about the decision
        is looked at; then the decision is found (``_decision_pane``), checked and consumed
        without yielding to the loop.

        Raises:
            SignalttyError: ``FORBIDDEN`` (caller inside a pane), ``NO_SUCH_DECISION``,
                ``AMBIGUOUS`` (a bare id pending on several panes), ``BAD_PARAMS``,
                ``PANE_EXITED``, ``IO_ERROR``.
        """
        if (p.option_id is None) == (p.verdict is None):
            raise SignalttyError("BAD_PARAMS", "exactly one of option_id or verdict is required")
        await self.check_caller(caller)
        remote_pane = self._remote_pane(p)
        if remote_pane is not None and self.remote is not None:
            # the person's answer, checked above like any other, to the host that asks
            return await self.remote.answer(remote_pane, p.decision_id, p.option_id, p.verdict)
        pane = self._decision_pane(p)
        dec = pane.pending_decision
        assert dec is not None
        option = self._option(dec, p)
        if dec.native:
            route = self.routes.get(dec.id)
            if option not in ("once", "deny"):
                raise SignalttyError(
                    "BAD_PARAMS", "a native decision takes once or deny", {"field": "option_id"}
                )
            if (
                route is None
                or route.future.done()
                or not pane.live
                or not dec.answerable
                or route.pane_id != pane.id
                or route.kind != pane.agent.kind
                or (
                    route.agent_session_id and route.agent_session_id != pane.agent.agent_session_id
                )
                or self.clock.awake() > route.deadline
            ):
                raise SignalttyError("NO_SUCH_DECISION", f"decision is no longer pending: {dec.id}")
            del self.routes[dec.id]
            route.future.set_result(("verdict", "allow" if option == "once" else "deny"))
        else:
            # only a fixed dialog spec's keys are ever typed (agents/keyed.py): never keys
            # derived from a reporter's options (issue 10, attack 3, A10)
            keys = keyed.keys_for(dec, option)
            if not dec.answerable or keys is None:
                if not pane.live:
                    raise SignalttyError("PANE_EXITED", f"pane has exited: {pane.id}")
                raise SignalttyError("BAD_PARAMS", "no answer channel for this decision")
            if not pane.live:
                raise SignalttyError("PANE_EXITED", f"pane has exited: {pane.id}")
            rt = self.runtimes.get(pane.id)
            if rt is not None:
                await rt.settle()  # the screen as of now, not as of the last sweep
                if pane.pending_decision is not dec:
                    raise SignalttyError(
                        "NO_SUCH_DECISION", f"decision is no longer pending: {dec.id}"
                    )
            if rt is None or not keyed.dialog_shown(dec, rt.screen.screen_text()):
                # never type into a pane whose dialog is gone (answered at the terminal)
                self.store.apply(rules.clear_decision(pane, "moved_on"))
                raise SignalttyError(
                    "NO_SUCH_DECISION", f"the dialog is no longer on screen: {dec.id}"
                )
            self._check_question(pane, dec, rt.screen.screen_text())
            try:
                assert rt is not None
                await rt.write_input(keys, 5.0)
            except SignalttyError as exc:
                if pane.pending_decision is dec:
                    self.store.apply(rules.clear_decision(pane, "pane_exited"))
                raise SignalttyError(exc.code, exc.message, exc.details) from None
            if pane.pending_decision is not dec:
                raise SignalttyError("NO_SUCH_DECISION", f"decision is no longer pending: {dec.id}")
        self.store.apply(rules.on_answer(pane, dec.id, option, now=self.store.now()))
        if not dec.native and keyed.is_keyed(dec) and keyed.ends_turn(dec, option):
            # e.g. Gemini's "No" cancels the turn and no hook follows it
            self.store.apply(
                rules.set_lifecycle(pane, Lifecycle.IDLE, "answer", now=self.store.now())
            )
        return {
            "answered": True,
            "decision_id": dec.id,
            "option_id": option,
            "lifecycle": pane.lifecycle.value,
            "attention": pane.attention.value,
        }

    async def check_caller(self, caller: Caller) -> None:
        """The self-approval guard (issue #10 item 3).

        Refuses an answer whose calling process runs inside one of our panes — it descends
        from a live pane's process, is in the session of a pane's process (a background job
        left by a tool call), or was started with ``SIGNALTTY_PANE`` naming one of our
        panes — and one whose process cannot be traced (unknown pid, exited, pid reused).
        The daemon's own surfaces (notification buttons) pass; so does everyone when config
        ``permissions.answer_from_panes`` is true. ``/proc`` is read in a worker thread.

        Raises:
            SignalttyError: ``FORBIDDEN`` with ``REFUSED_FROM_PANE`` (details: ``surface``,
                ``why``, ``pane_id`` when traced to one, ``setting``).
        """
        if caller.surface == "daemon" or self.config.permissions.answer_from_panes:
            return
        origin = await self.origin(caller)
        if not origin.inside:
            return
        log.warning(
            "decision.answer_refused",
            surface=caller.surface,
            why=origin.why,
            caller_pane=origin.pane_id,
        )
        details: dict[str, Any] = {
            "surface": caller.surface,
            "why": origin.why,
            "setting": "permissions.answer_from_panes",
        }
        if origin.pane_id is not None:
            details["pane_id"] = origin.pane_id
        raise SignalttyError("FORBIDDEN", REFUSED_FROM_PANE, details)

    async def origin(self, caller: Caller) -> ancestry.Origin:
        """Trace ``caller`` to a pane (``ancestry.caller_origin``, in a worker thread).

        Also used for notification servers (``desktop.notify``): one inside a pane is refused.
        """
        if caller.pid is None:
            self._note_panes()
            return ancestry.Origin(True, "unknown")
        return await asyncio.to_thread(self._origin_tracer(caller.pid, caller.ref))

    def _origin_tracer(self, pid: int, ref: ProcessRef | None) -> Callable[[], ancestry.Origin]:
        """What ``origin`` runs in the worker thread, with the daemon's facts taken now."""
        self._note_panes()
        sessions, pane_ids = self.pane_procs.snapshot()
        records = self.records
        live_children = self._children()
        known = pane_ids | set(self.store.panes)
        extra = self.origin_extra()

        def trace() -> ancestry.Origin:
            # one trip to the worker thread: under a busy loop each trip back waits behind
            # the ready callbacks (bench/latency.py "osc")
            return ancestry.caller_origin(
                pid,
                live_children=live_children,
                sessions=sessions,
                pane_ids=known,
                ref=ref,
                before_restart=records.earlier(),  # reads a file once
                **extra,
            )

        return trace

    def origin_extra(self) -> dict[str, Any]:
        """The daemon-wide facts ``caller_origin`` also needs (its pid, people's terminals)."""
        return {
            "daemon_pid": os.getpid(),
            "person_pids": dict(self.facts.person_pids),
            "person_ended": dict(self.facts.person_ended),
            "daemon_cgroup": self.facts.unit_cgroup,
        }

    def _remote_pane(self, p: P.DecisionAnswer) -> str | None:
        """The watched host's pane ``p`` answers (``host/pane_…``), or None for ours.

        Raises:
            SignalttyError: ``AMBIGUOUS`` for a bare decision id pending on several panes,
                here and on watched hosts.
        """
        if self.remote is None:
            return None
        if p.pane_id is not None:
            return p.pane_id if self.remote.find(p.pane_id) is not None else None
        if p.decision_id is None:
            return None
        theirs = [
            pane.id
            for _, pane in self.remote.panes()
            if pane.pending_decision is not None and pane.pending_decision.id == p.decision_id
        ]
        if not theirs:
            return None
        ours = [
            pane.id
            for pane in self.store.panes.values()
            if pane.pending_decision is not None and pane.pending_decision.id == p.decision_id
        ]
        if ours or len(theirs) > 1:
            raise _ambiguous(p.decision_id, ours + theirs)
        return theirs[0]

    def _decision_pane(self, p: P.DecisionAnswer) -> Pane:
        """The pane whose pending decision ``p`` names (issue #10 item 5).

        ``{pane_id, decision_id}`` resolves exactly that pane's decision; a bare
        ``decision_id`` must be pending on exactly one pane; a bare ``pane_id`` takes the
        pane's pending decision.

        Raises:
            SignalttyError: ``BAD_PARAMS`` (neither given), ``NO_SUCH_DECISION``,
                ``AMBIGUOUS`` (details: ``decision_id``, ``pane_ids``).
        """
        if p.decision_id is None and p.pane_id is None:
            raise SignalttyError("BAD_PARAMS", "pane_id or decision_id is required")
        if p.decision_id is not None and p.pane_id is not None:
            pane = self.store.panes.get(p.pane_id)
            dec = pane.pending_decision if pane is not None else None
            if pane is None or dec is None or dec.id != p.decision_id:
                raise SignalttyError(
                    "NO_SUCH_DECISION", f"no such decision on {p.pane_id}: {p.decision_id}"
                )
            return pane
        if p.decision_id is not None:
            matches = [
                pane
                for pane in self.store.panes.values()
                if pane.pending_decision is not None and pane.pending_decision.id == p.decision_id
            ]
            if not matches:
                raise SignalttyError("NO_SUCH_DECISION", f"no such decision: {p.decision_id}")
            if len(matches) > 1:
                raise _ambiguous(p.decision_id, [pane.id for pane in matches])
            return matches[0]
        assert p.pane_id is not None
        pane = self.store.panes.get(p.pane_id)
        if pane is None or pane.pending_decision is None:
            message = f"no pending decision on {p.pane_id}"
            if pane is not None and pane.attention == Attention.PERMISSION_REQUIRED:
                # the wait for an answer ended (timed out, or the agent went on): only the
                # agent's own dialog can take it now (new-user pass)
                message += (
                    "; the request is no longer waiting for signaltty: answer it in the "
                    f"agent's terminal (signaltty pane attach {p.pane_id})"
                )
            raise SignalttyError("NO_SUCH_DECISION", message)
        return pane

    @staticmethod
    def _option(dec: Decision, p: P.DecisionAnswer) -> str:
        ids = [o["id"] for o in dec.options]
        if p.option_id is not None:
            if p.option_id not in ids:
                raise SignalttyError(
                    "BAD_PARAMS", f"unknown option: {p.option_id}", {"field": "option_id"}
                )
            return p.option_id
        if dec.native:
            return "once" if p.verdict == "allow" else "deny"
        wanted = ALLOW_IDS if p.verdict == "allow" else DENY_IDS
        for oid in ids:
            if oid.lower() in wanted:
                return oid
        raise SignalttyError(
            "BAD_PARAMS", "decision has no allow/deny option", {"field": "verdict"}
        )

    def _check_question(self, pane: Pane, dec: Decision, screen: str) -> None:
        """Refuse to type unless the screen still asks the question the person was shown.

        A decision whose question was never seen (its hook came before the dialog and no
        one listed it since) takes the current one: the person was shown only the
        reporter's text, marked as such. Compared without whitespace, so a rewrap after a
        resize is the same question.

        Raises:
            SignalttyError: ``FORBIDDEN`` (``details.reason = "dialog_changed"``); nothing
                is typed and the decision stays pending.
        """
        now = keyed.question(dec, screen)
        frozen = self._frozen(pane, dec)
        if frozen is None:
            if now:
                self._freeze(pane, dec, now)
            return
        if now is not None and _same_question(now, frozen):
            return
        log.warning("decision.dialog_changed", pane_id=pane.id, decision_id=dec.id)
        raise SignalttyError(
            "FORBIDDEN",
            f"the dialog on screen changed since its question was shown ({dec.id}): nothing"
            " was typed; another process may have drawn on the pane, so answer in the"
            " terminal after checking it",
            {"field": "decision", "reason": "dialog_changed", "decision_id": dec.id},
        )

    def _prompt_now(self, pane: Pane, dec: Decision) -> str:
        """A typed decision's question as first seen on screen (frozen then, N4: see
        :meth:`_freeze`), noting when the screen now asks something else; a decision not
        seen on screen yet is frozen now if its dialog is up, else its stored prompt."""
        rt = self.runtimes.get(pane.id)
        if rt is None or not keyed.is_keyed(dec):
            return dec.prompt
        now = keyed.question(dec, rt.screen.screen_text())
        frozen = self._frozen(pane, dec)
        if frozen is None:
            if now is None:
                return dec.prompt
            self._freeze(pane, dec, now)
            return now
        if now is not None and not _same_question(now, frozen):
            return f"{frozen}\n{QUESTION_CHANGED}"
        return frozen

    def permission_list(self, pane_id: str | None) -> dict[str, Any]:
        """Every pending decision, oldest first (protocol.md §6 ``permission.list``); a
        watched host's carry ``host`` and are answerable only while it is reachable."""
        out = []
        for pane in self.store.panes.values():
            dec = pane.pending_decision
            if dec is None or (pane_id is not None and pane.id != pane_id):
                continue
            out.append(_permission_item(pane, dec, self._prompt_now(pane, dec), dec.answerable))
        for link, pane in self.remote.panes() if self.remote is not None else ():
            dec = pane.pending_decision
            if dec is None or (pane_id is not None and pane.id != pane_id):
                continue
            item = _permission_item(pane, dec, dec.prompt, dec.answerable and link.reachable)
            out.append(item | {"host": link.name})
        out.sort(key=lambda x: x.pop("_order"))
        return {"permissions": out}


def _permission_item(pane: Pane, dec: Decision, prompt: str, answerable: bool) -> dict[str, Any]:
    """One ``permission.list`` item (``_order``: the sort key, removed before it is sent)."""
    wire = dec.to_wire()
    item: dict[str, Any] = {
        "decision_id": dec.id,
        "pane_id": pane.id,
        "workspace_id": pane.workspace_id,
        "pane_title": pane.title,
        "agent": dec.agent or pane.agent.kind,
        "agent_session_id": pane.agent.agent_session_id,
        "tool_name": dec.tool_name,
        "prompt": prompt,
        "options": [dict(o) for o in dec.options],
        "answerable": answerable,
        "native": dec.native,
        "received_at": wire["received_at"],
        "deadline": wire["deadline"],
        "_order": dec.received_at,
    }
    if pane.label is not None:
        item["label"] = pane.label
    return item


def _ambiguous(decision_id: str, pane_ids: list[str]) -> SignalttyError:
    """``AMBIGUOUS``: a bare decision id pending on several panes (details ``decision_id``,
    ``pane_ids``)."""
    return SignalttyError(
        "AMBIGUOUS",
        f"decision {decision_id} is pending on {len(pane_ids)} panes ({', '.join(pane_ids)}); "
        "name the pane too",
        {"decision_id": decision_id, "pane_ids": pane_ids},
    )


def _same_question(a: str, b: str) -> bool:
    return "".join(a.split()) == "".join(b.split())


def _dropped(base: dict[str, Any], pane: Pane, reason: str | None) -> dict[str, Any]:
    """Result of a hook that was received but changed nothing (protocol.md §6)."""
    return {
        **base,
        "accepted": False,
        "dropped": True,
        "reason": reason,
        "pane_id": pane.id,
        "lifecycle": pane.lifecycle.value,
        "attention": pane.attention.value,
    }


def _cancel_reason(reason: str) -> str:
    return {
        "superseded": "superseded",
        "pane_closed": "pane_closed",
        "shutdown": "shutdown",
        "timeout": "timeout",
    }.get(reason, "moved_on")


def _foreign_harness(payload: Any, kind: str) -> bool:
    if not isinstance(payload, dict):
        return False
    for key in ("agent", "harness"):
        value = payload.get(key)
        if isinstance(value, str) and value.lower() in KNOWN_AGENTS and value.lower() != kind:
            return True
    return False


def _explicit_decision(spec: P.DecisionSpec, adapter: Adapter | None, now: float) -> Decision:
    if not spec.prompt.strip():
        raise SignalttyError(
            "BAD_PARAMS", "decision prompt must not be blank", {"field": "decision.prompt"}
        )
    ids = [o.id for o in spec.options]
    if len(set(ids)) != len(ids):
        raise SignalttyError(
            "BAD_PARAMS", "decision option ids must be unique", {"field": "decision.options"}
        )
    if any(not o.id.strip() or not o.label.strip() for o in spec.options):
        raise SignalttyError(
            "BAD_PARAMS", "decision options need an id and a label", {"field": "decision.options"}
        )
    return Decision(
        id=spec.id,
        prompt=spec.prompt,
        options=[{"id": o.id, "label": o.label} for o in spec.options],
        received_at=now,
        native=False,
        agent=adapter.kind if adapter else None,
    )


__all__ = ["HookService", "Route"]


def _check_keyed_agent(pane: Pane, dec: Decision) -> None:
    """A decision answered by one agent's dialog keys is taken only in a pane running that
    agent (or one whose agent is not known yet): a hook naming ``--agent gemini`` from a
    Claude pane would otherwise have "Allow once" type Gemini's ``1`` into Claude's dialog
    (sixth attack pass, finding 1). ``_check_typed_reporter`` then wants the reporter's parent
    to be that agent's process.

    Raises:
        SignalttyError: ``FORBIDDEN`` (``details.field = "agent"``).
    """
    info = pane.agent
    if dec.agent in (info.kind, info.catalog_id):
        return
    if info.catalog_id is None and info.kind in ("generic", "none"):
        return  # not known yet (started from a shell): the reporter's parent decides below
    log.warning(
        "hook.keyed_agent_mismatch", pane_id=pane.id, agent=dec.agent, pane_kind=pane.agent.kind
    )
    raise SignalttyError(
        "FORBIDDEN",
        f"a {dec.agent} dialog decision is accepted only in a pane running {dec.agent}",
        {"field": "agent"},
    )


def _runs_managed_hook(pid: int) -> bool:
    """Whether ``pid`` is a shell running one of our managed hook commands (``sh -c '…
    hook-event … # signaltty hook-event (managed)'``), read from ``/proc``."""
    argv = ancestry.cmdline(pid)
    return bool(
        argv
        and len(argv) >= 3
        and argv[-2] == "-c"
        and argv[-1].rstrip().endswith(MANAGED_SUFFIX.strip())
    )


def _payload_size(payload: object) -> int:
    """A hook payload's size as the reporter measures it before sending (compact JSON in
    characters, ``cli/fastpath.py`` ``_size``): non-ASCII text is not counted six times over
    (sixth attack pass, finding 5). Nesting too deep to encode is too large."""
    try:
        return len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False))
    except RecursionError:
        return MAX_HOOK_PAYLOAD + 1
