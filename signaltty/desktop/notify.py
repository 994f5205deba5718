"""Desktop notifications: alerts → intents → notifications, buttons → the router.

Alerts from the store become intents; after the settle delay ``policy`` decides whether and
what to show. Buttons and body clicks go back to the daemon through its ``host.NotifierHost``
(the protocol methods) with opaque ids only; a body click also opens the person's terminal
on the pane (``terminal.py``).
The server is reached through ``fdo.FdoNotifications`` on Linux (which obeys a button only
from the verified server the notification went to; issue 10 §2) and ``desktop-notifier``
(``macos.LibraryNotifications``) on macOS. Every call runs under a timeout; a failed
connection is discarded and the server is retried at most every 300 s, when a new intent
arrives. Spec: desktop-and-service.md §6; states.md §7.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from dataclasses import dataclass
from typing import Any, Final

import structlog

from signaltty.core import rules, verdicts
from signaltty.core.model import Decision
from signaltty.desktop import policy
from signaltty.desktop.fdo import ServerRefused, Target
from signaltty.desktop.host import NotifierHost, Unsubscribe
from signaltty.proto.envelope import SignalttyError
from signaltty.system.procref import ProcessRef

log = structlog.get_logger("signaltty.notify")

CALL_TIMEOUT_S: Final = 3.0  # every call into the library (connect, capabilities, send, clear)
MAX_UNPANED_LIVE: Final = 20  # pane-less notifications remembered for withdrawal at shutdown


@dataclass(slots=True)
class _Intent:
    """A pane's pending alerts, newest per cause, delivered together after the settle."""

    alerts: dict[str, rules.Alert]
    due: float  # monotonic
    handle: asyncio.TimerHandle | None = None


@dataclass(slots=True)
class _Live:
    identifier: int | str  # the server's id (Linux) or the library's (macOS)
    decision_id: str | None
    cause: str
    sent_at: float  # monotonic
    body: str = ""  # as rendered, before escaping: reused by the "asks in its terminal" notice


class Notifier:
    """The desktop notification surface of one daemon.

    Attributes:
        available: whether the last contact with the notification server worked
            (``server.status.notifications.available``).
    """

    def __init__(self, host: NotifierHost) -> None:
        self.host = host
        self.terminal = host.terminal_command  # None: $TERMINAL and the fallbacks
        self.settings = host.notification_settings
        self.available = False
        self._actions = False  # the server's "actions" capability, as last read
        self.reason: str | None = None
        self.sent = 0
        self._server: Any = None  # fdo.FdoNotifications | macos.LibraryNotifications
        self._last_attempt: float | None = None
        self._warned = False
        self._intents: dict[str | None, _Intent] = {}
        self._live: dict[str, _Live] = {}
        self._unpaned: list[int | str] = []
        self._last_sent: dict[tuple[str | None, str], float] = {}
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._unsubscribe: list[Unsubscribe] = []

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Hook into the store (alerts, state events) and probe the server in the background."""
        self._unsubscribe = [
            self.host.observe_alerts(self.on_alert),
            self.host.observe_events(self._on_event),
        ]
        self._spawn(self._probe())

    async def _probe(self) -> None:
        async with self._lock:
            await self._ensure()

    async def close(self) -> None:
        """Withdraw every notification and drop the connection (shutdown; idempotent)."""
        self._closed = True
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        for intent in self._intents.values():
            if intent.handle is not None:
                intent.handle.cancel()
        self._intents.clear()
        for task in list(self._tasks):
            task.cancel()
        if self._server is not None:
            ids = [live.identifier for live in self._live.values()] + self._unpaned
            for identifier in ids:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(1.0):
                        await self._server.close_notification(identifier)
        self._live.clear()
        self._unpaned.clear()
        self._discard()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._reap)

    def _reap(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("notify.task_failed", error=repr(task.exception()))

    # ---------------------------------------------------------------- server

    def _discard(self) -> None:
        """Forget the server connection and close it."""
        server, self._server = self._server, None
        if server is not None:
            with contextlib.suppress(Exception):
                server.disconnect()

    def _unavailable(self, reason: str) -> None:
        self._discard()
        self._last_attempt = time.monotonic()  # next try ≥ 300 s from now (§6.3)
        self.available = False
        self.reason = reason
        if not self._warned:
            self._warned = True
            log.warning("notify.unavailable", reason=f"desktop notifications unavailable: {reason}")

    async def _ensure(self) -> bool:
        """A connected, verified server (connected on demand, retried at most every 300 s)."""
        if self._server is not None and self._server.alive:
            return True
        if self._server is not None:  # the bus went away since the last send
            self._discard()
        now = time.monotonic()
        if self._last_attempt is not None and now - self._last_attempt < policy.RETRY_S:
            return False
        self._last_attempt = now
        try:
            if sys.platform == "darwin":
                from signaltty.desktop.macos import LibraryNotifications

                self._server = LibraryNotifications()
            else:
                from signaltty.desktop.fdo import FdoNotifications

                self._server = FdoNotifications(vouch=self._vouch)
                self._server.on_tampered = self._tampered
            async with asyncio.timeout(CALL_TIMEOUT_S):
                await self._server.open()
                self._actions = (await self._server.target()).actions
        except Exception as exc:  # noqa: BLE001 - no server is a normal condition
            self._unavailable(_reason(exc))
            return False
        self.available = True
        self.reason = None
        if self._warned:
            log.info("notify.available")
        self._warned = False
        return True

    async def _vouch(self, server: ProcessRef) -> str | None:
        """A notification server's process → None when it runs outside every pane, else why.

        The self-approval guard's check (``NotifierHost.inside_pane``), never skipped by
        ``permissions.answer_from_panes``: a server in a pane could press its own buttons.
        """
        return await self.host.inside_pane(server)

    async def _target(self) -> Target | None:
        """The server for the next send, checked again (its owner may have changed)."""
        try:
            async with asyncio.timeout(CALL_TIMEOUT_S):
                target: Target = await self._server.target()
        except Exception as exc:  # noqa: BLE001
            self._unavailable(_reason(exc))
            return None
        self._actions = target.actions
        return target

    @property
    def can_answer(self) -> bool:
        """The last server we reached shows buttons, so a permission can be answered from
        the notification (issue 11 item 3: ``HookService.native_wait_s``)."""
        return self.available and self._actions

    # ---------------------------------------------------------------- intents

    def on_alert(self, alert: rules.Alert) -> None:
        """Alert sink: keep the newest alert per pane and cause, and arm the settle timer.

        A repeat of a pending alert (same cause and decision) only replaces its content and
        keeps the due time, so a continuous stream still notifies; a new cause or decision
        re-arms the timer (states.md §7; desktop-and-service.md §6.1 filter 1).
        """
        if self._closed or not policy.mode_allows(self.settings.mode, alert.cause):
            return
        old = self._intents.get(alert.pane_id)
        prev = old.alerts.get(alert.cause) if old is not None else None
        if old is not None:
            old.alerts[alert.cause] = alert
            if prev is not None and policy.same_intent(
                prev.cause, prev.decision_id, alert.cause, alert.decision_id
            ):
                return
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        delay = policy.send_delay(
            self.settings,
            now=now,
            last_sent_same_cause=self._last_sent.get((alert.pane_id, alert.cause)),
        )
        if old is not None and old.handle is not None:
            old.handle.cancel()
        intent = old if old is not None else _Intent({alert.cause: alert}, now)
        intent.due = now + delay
        intent.handle = loop.call_later(delay, self._fire, alert.pane_id, intent)
        self._intents[alert.pane_id] = intent

    def _fire(self, key: str | None, intent: _Intent) -> None:
        if self._intents.get(key) is intent:
            del self._intents[key]
            now = time.monotonic()  # the 2 s window starts now, not when the send completes
            for cause in intent.alerts:
                self._last_sent[(key, cause)] = now
            self._spawn(self._deliver(list(intent.alerts.values())))

    def _view(self, pane_id: str | None) -> policy.PaneView | None:
        if pane_id is None:
            return None
        snap = self.host.pane(pane_id)
        if snap is None:
            return None
        pane = snap.pane
        dec = pane.pending_decision
        name = policy.pane_name(pane.label, snap.workspace_name, pane.title)
        return policy.PaneView(
            pane_id=pane.id,
            # another host's pane says where it runs: "devbox/api · Claude needs approval"
            name=f"{snap.host}/{name}" if snap.host is not None else name,
            display_name=pane.agent.display_name or "Terminal",
            attention=pane.attention.value,
            attached=snap.attached,
            last_message=pane.last_message,
            exit_code=pane.exit_code,
            decision=policy.DecisionView(
                id=dec.id,
                answerable=dec.answerable and _answerable_by_button(dec),
                tool_name=dec.tool_name,
                preview=dec.prompt or None,
                terminal_after_s=_terminal_after(dec),
            )
            if dec is not None
            else None,
        )

    async def _deliver(self, alerts: list[rules.Alert]) -> None:
        """Show the most urgent of a pane's pending alerts that is still wanted."""
        async with self._lock:
            chosen: rules.Alert | None = None
            for cause in policy.by_priority([a.cause for a in alerts]):
                alert = next(a for a in alerts if a.cause == cause)
                view = self._view(alert.pane_id)
                reason = policy.drop_reason(
                    alert.cause, alert.decision_id, view, alert.pane_id is not None, self.settings
                )
                if reason is None:
                    chosen = alert
                    break
                log.debug("notify.dropped", pane_id=alert.pane_id, cause=alert.cause, reason=reason)
            if chosen is None:
                return
            alert = chosen
            if not await self._ensure():
                return
            target = await self._target()
            if target is None:
                return
            content = policy.render(
                alert.cause, alert.title, alert.body, view, self.settings, actions=target.actions
            )
            await self._show(content, target)

    async def _show(self, content: policy.Content, target: Target | None = None) -> None:
        if content.pane_id is not None:
            await self._withdraw(content.pane_id)
        if self._server is None:
            return
        if target is None:
            target = await self._target()
            if target is None:
                return
        pane_id, decision_id = content.pane_id, content.decision_id
        actions: list[tuple[str, str]] = []
        # the body click; xfce4-notifyd would show an empty button for it
        if pane_id is not None and target.actions and target.server_name != "Xfce Notify Daemon":
            actions.append(("default", ""))
        if content.buttons and pane_id is not None and decision_id is not None:
            if content.allow_button:  # not under a preview cut short (policy._shows_all)
                actions.append(("allow", "Allow once"))
            actions.append(("deny", "Deny"))

        offered = {key for key, _ in actions}

        def on_action(key: str) -> None:  # opaque ids only; the router re-checks everything
            if key not in offered:  # a server may only invoke what this notification offered
                log.warning("notify.action_not_offered", key=key[:40])
            elif key == "default" and pane_id is not None:
                self._spawn(self._clicked(pane_id))
            elif key in ("allow", "deny") and pane_id is not None and decision_id is not None:
                self._spawn(self._answer(pane_id, decision_id, key))

        try:
            async with asyncio.timeout(CALL_TIMEOUT_S):
                identifier = await self._server.notify(
                    target,
                    summary=content.title,
                    body=policy.wire_body(content.body, markup=target.markup),
                    actions=actions,
                    urgency=content.urgency,
                    expire_ms=0
                    if not content.expires
                    else (policy.STALE_EXPIRY_S * 1000 if content.cause == "stale" else -1),
                    sound=content.sound,
                    on_action=on_action,
                )
        except Exception as exc:  # noqa: BLE001
            self._unavailable(_reason(exc))
            return
        self.sent += 1
        now = time.monotonic()
        self._last_sent[(pane_id, content.cause)] = now
        if pane_id is not None:
            self._live[pane_id] = _Live(identifier, decision_id, content.cause, now, content.body)
        else:
            self._unpaned = [*self._unpaned[-(MAX_UNPANED_LIVE - 1) :], identifier]

    async def _withdraw(self, pane_id: str) -> None:
        live = self._live.pop(pane_id, None)
        if live is None or self._server is None:
            return
        try:
            async with asyncio.timeout(CALL_TIMEOUT_S):
                await self._server.close_notification(live.identifier)
        except Exception as exc:  # noqa: BLE001
            self._unavailable(_reason(exc))

    def _on_event(self, seq: int, name: str, payload: dict[str, Any]) -> None:
        """Bus observer: withdraw a pane's live notification (§6.3 "Withdrawal"); after a
        native wait timed out, tell the person the agent now asks in its terminal."""
        if name not in (
            "attention.cleared",
            "pane.closed",
            "decision.answered",
            "decision.cleared",
        ):
            return
        timed_out = policy.native_timed_out(name, payload)
        body = None
        for pane_id, live in list(self._live.items()):
            if policy.withdraws(name, payload, pane_id, live.decision_id):
                if timed_out and live.decision_id is not None:
                    body = live.body
                self._spawn(self._withdraw_locked(pane_id))
        asked = payload.get("pane_id")
        if timed_out and isinstance(asked, str) and not self._closed:
            self.on_alert(rules.Alert(asked, policy.TERMINAL_PROMPT, "warning", body=body or None))

    def _tampered(self, identifier: int) -> None:
        """fdo's tamper watch: another program replaced our notification ``identifier`` by
        id (A12). Its presses already run nothing; withdraw it and post a fresh one."""
        for pane_id, live in list(self._live.items()):
            if live.identifier == identifier:
                self._spawn(self._repost(pane_id, live))

    async def _repost(self, pane_id: str, live: _Live) -> None:
        async with self._lock:
            if self._live.get(pane_id) is not live:
                return  # already withdrawn or replaced by a newer notification of ours
            await self._withdraw(pane_id)
            view = self._view(pane_id)
            if (
                self._server is None
                or policy.drop_reason(live.cause, live.decision_id, view, True, self.settings)
                is not None
            ):
                return
            target = await self._target()
            if target is None:
                return
            content = policy.render(
                live.cause, None, live.body, view, self.settings, actions=target.actions
            )
            await self._show(policy.tampered(content), target)

    async def _withdraw_locked(self, pane_id: str) -> None:
        async with self._lock:
            await self._withdraw(pane_id)

    # ---------------------------------------------------------------- actions

    async def _answer(self, pane_id: str, decision_id: str, verdict: str) -> None:
        """A button: ``decision.answer`` as the daemon's own process (every check applies)."""
        live = self._live.get(pane_id)
        if live is not None and live.decision_id == decision_id:
            self._live.pop(pane_id)  # fdo withdraws a notification whose action ran
        try:
            # both ids: a bare decision id may be pending on several panes (AMBIGUOUS)
            await self.host.answer_from_notification(
                {"pane_id": pane_id, "decision_id": decision_id, "verdict": verdict}
            )
        except SignalttyError as exc:
            log.info("notify.answer_rejected", pane_id=pane_id, code=exc.code)
            if exc.code == "NO_SUCH_DECISION":
                view = self._view(pane_id)
                name = view.name if view is not None else pane_id
                async with self._lock:
                    if await self._ensure():
                        await self._show(policy.stale_content(name, None))
            return
        log.info("notify.answered", pane_id=pane_id, verdict=verdict)

    async def _clicked(self, pane_id: str) -> None:
        """Body click: ``pane.mark_seen``, then the person's terminal attached to the pane.

        Marking seen comes first, so a terminal that cannot start still leaves the pane
        seen. With a decision pending, ``mark_seen`` keeps the attention (states.md §3.10).
        """
        self._live.pop(pane_id, None)
        snap = self.host.pane(pane_id)
        if snap is None:
            return
        with contextlib.suppress(SignalttyError):
            await self.host.call("pane.mark_seen", {"pane_id": pane_id})
        from signaltty.desktop import terminal

        try:
            if snap.host_target is not None:  # a watched host's pane: attach through ssh
                rid = pane_id.partition("/")[2]
                proc = await terminal.open_terminal(
                    rid, self.host.socket_path, self.terminal, host=snap.host_target
                )
            else:
                proc = await terminal.open_terminal(pane_id, self.host.socket_path, self.terminal)
        except (ValueError, terminal.NoTerminal, terminal.TerminalFailed) as exc:
            log.warning(
                "desktop.terminal_failed",
                pane_id=pane_id,
                reason=f"{type(exc).__name__}: {exc}"[:300],
            )
            return
        if snap.host_target is None:
            # the person's terminal: what runs in it may answer (the self-approval guard)
            self.host.add_person_process(proc.pid)
        # A watched host's pane is attached through ``signaltty --host TARGET``: it talks to
        # that host only, and what it runs (the target from config.toml, ssh obeying
        # ~/.ssh/config: ProxyCommand, LocalCommand, Match exec) is a pane process's to
        # write. It stays the daemon's child here (``why = daemon``), never the person's
        # (watched-host trust pass, F2).
        self._spawn(self._watch_terminal(proc, pane_id))

    async def _watch_terminal(self, proc: Any, pane_id: str) -> None:
        from signaltty.desktop import terminal

        try:
            await terminal.watch_terminal(proc, pane_id)
        finally:
            self.host.person_process_ended(proc.pid)


def _terminal_after(dec: Decision) -> float | None:
    """Seconds from the request until an agent that hides its dialog while its native wait
    runs asks in its terminal (the wait's length); None when its terminal can answer now."""
    from signaltty.agents.permission import HIDDEN_WHILE_WAITING

    if not dec.native or dec.agent not in HIDDEN_WHILE_WAITING or dec.deadline is None:
        return None
    return max(0.0, dec.deadline - dec.received_at)


def _answerable_by_button(dec: Decision) -> bool:
    """Native decisions, or options that map to allow and deny (§6.2 "buttons")."""
    if dec.native:
        return True
    return verdicts.maps_allow_and_deny(str(o.get("id", "")) for o in dec.options)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "the notification server did not answer"
    if isinstance(exc, ServerRefused):
        return str(exc)[:200]
    from signaltty.desktop.dbus import NoSessionBus

    if isinstance(exc, NoSessionBus):
        return str(exc)[:200]
    return f"{type(exc).__name__}: {exc}"[:200]
