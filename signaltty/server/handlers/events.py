"""``notify``, ``subscribe``, ``wait``, ``focus.next_unread``, ``attention.pending``: events,
notifications and attention (protocol.md §5; states.md §6)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from signaltty.core import limits, rules, waits
from signaltty.core.ids import new_id
from signaltty.core.model import Pane, iso
from signaltty.core.rules import NotificationInput
from signaltty.core.sanitize import sanitize_text
from signaltty.core.states import ATTENTION_RANK, Attention
from signaltty.proto import params as P
from signaltty.proto.envelope import SignalttyError
from signaltty.server.bus import glob_match
from signaltty.server.handlers.common import Handler, OriginOf, Panes
from signaltty.server.hooks import Caller
from signaltty.server.ports import Client


# The self-approval guard's pane-origin walk (``HookService.origin``).
class EventHandlers:
    """Notifications, subscriptions, waits and attention ranking."""

    def __init__(self, *, panes: Panes, origin: OriginOf | None = None) -> None:
        self.panes = panes
        self.store = panes.store
        self._origin = origin

    def routes(self) -> dict[str, Handler]:
        return {
            "notify": self.handle_notify,
            "subscribe": self.subscribe,
            "wait": self.wait,
            "focus.next_unread": self.focus_next_unread,
            "attention.pending": self.attention_pending,
        }

    async def handle_notify(self, conn: Client | None, p: P.Notify) -> dict[str, Any]:
        """``notify`` on the socket. A caller inside a pane (the self-approval guard's origin
        walk) speaks only for its own pane: no ``pane_id`` means its own, another pane's id
        is ``FORBIDDEN`` — a pane must not post "claude/… needs approval" under another
        pane's name (issue 10, third attack pass, A13). A caller inside a pane that cannot be
        told (an escaped process) is refused too. Outside every pane: any pane or none.

        Raises:
            SignalttyError: ``FORBIDDEN`` (details ``pane_id``, ``caller_pane``), and those
                of :meth:`notify`.
        """
        pane_id = p.pane_id
        if conn is not None:
            pane_id = await self.speaks_for(Caller("socket", conn.peer_pid, conn.peer_ref), pane_id)
        return self.notify(pane_id, p.title, p.body, p.severity or "info", "cli")

    async def speaks_for(self, caller: Caller, pane_id: str | None) -> str | None:
        """The pane a notification from ``caller`` may name: ``pane_id`` for a caller outside
        every pane, the caller's own pane for one inside (A13; see :meth:`handle_notify`).

        Raises:
            SignalttyError: ``FORBIDDEN`` (details ``pane_id``, ``caller_pane``, ``why``).
        """
        if self._origin is None:
            return pane_id
        origin = await self._origin(caller)
        if not origin.inside:
            return pane_id
        own = origin.pane_id
        if own is None or (pane_id is not None and pane_id != own):
            raise SignalttyError(
                "FORBIDDEN",
                "a process inside a pane may notify only for its own pane",
                {"pane_id": pane_id, "caller_pane": own, "why": origin.why},
            )
        return own

    def notify(
        self, pane_id: str | None, title: str, body: str | None, severity: str, source: str
    ) -> dict[str, Any]:
        """``notify`` for the socket and other surfaces (source ``cli``/``dbus``).

        Raises:
            SignalttyError: ``BAD_PARAMS`` (empty title, body too long), ``NO_SUCH_PANE``.
        """
        clean_title = sanitize_text(title, limits.MAX_NOTIFICATION_TITLE)
        if not clean_title:
            raise SignalttyError("BAD_PARAMS", "title must not be empty", {"field": "title"})
        if len(title) > limits.MAX_NOTIFICATION_TITLE:
            raise SignalttyError(
                "BAD_PARAMS", "title longer than 200 characters", {"field": "title"}
            )
        if body is not None and len(body) > limits.MAX_NOTIFICATION_BODY:
            raise SignalttyError(
                "BAD_PARAMS", "body longer than 2000 characters", {"field": "body"}
            )
        clean_body = (
            sanitize_text(body, limits.MAX_NOTIFICATION_BODY, multiline=True) or None
            if body is not None
            else None
        )
        pane = self.panes.pane(pane_id) if pane_id else None
        note = NotificationInput(
            id=new_id("notif"),
            title=clean_title,
            body=clean_body,
            severity=severity,
            source=source,
            attention_source="notify",
        )
        self.store.apply(rules.on_notification(pane, note, now=self.store.now()))
        record = self.store.notifications[-1]
        return {"notification": record.to_wire()}

    async def subscribe(self, conn: Client | None, p: P.Subscribe) -> dict[str, Any]:
        if conn is None:
            raise SignalttyError("BAD_PARAMS", "subscribe needs a connection")
        patterns = list(p.events or ["*"])
        for pat in patterns:
            if pat != "*" and not pat.endswith(".*") and "*" in pat:
                raise SignalttyError("BAD_PARAMS", f"bad event glob: {pat}", {"field": "events"})
        result: dict[str, Any] = {"subscribed": True, "seq": self.store.seq}
        if p.from_seq is not None:
            if p.from_seq > self.store.seq:
                conn.close_after_response = True
                return {
                    "subscribed": False,
                    "seq": self.store.seq,
                    "replay": {
                        "status": "cursor_ahead",
                        "retained_after": self.store.retained_after(),
                        "recovery": "snapshot_then_resubscribe",
                    },
                }
            events = self.store.replay_after(p.from_seq)
            if events is None:
                conn.close_after_response = True
                return {
                    "subscribed": False,
                    "seq": self.store.seq,
                    "replay": {
                        "status": "history_lost",
                        "retained_after": self.store.retained_after(),
                        "recovery": "snapshot_then_resubscribe",
                    },
                }
            chosen = [e for e in events if any(glob_match(g, e[1]) for g in patterns)]
            result["replay"] = {"status": "complete", "returned": len(chosen)}
            conn.pending_replay = chosen
        conn.subscribe(patterns)
        return result

    async def wait(self, conn: Client | None, p: P.Wait) -> dict[str, Any]:
        pane = self.panes.pane(p.pane_id)
        try:
            outcomes = waits.parse_until(p.until)
            seqs = self.store.pane_seqs(pane.id)
            if p.after is not None:
                lseq, aseq = waits.check_baseline(pane, seqs, p.after)
                base: tuple[int | None, int | None] = (lseq, aseq)
            else:
                base = (None, None)
        except waits.WaitError as exc:
            field = "after" if p.after is not None and "baseline" in exc.message else "until"
            raise SignalttyError(
                exc.code, exc.message, {"field": field} if exc.code == "BAD_PARAMS" else None
            ) from None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (p.timeout_s or limits.WAIT_TIMEOUT_DEFAULT_S)
        instance = pane.process_instance
        ev = self.store.bus.waiter(pane.id)
        try:
            while True:
                ev.clear()
                current = self.store.panes.get(pane.id)
                if current is None:
                    raise SignalttyError("NO_SUCH_PANE", f"pane closed while waiting: {pane.id}")
                if current.process_instance != instance:
                    raise SignalttyError(
                        "IDENTITY_CHANGED", "the pane runs another process instance"
                    )
                hit = waits.evaluate(current, seqs, outcomes, *base)
                if hit is not None:
                    return {
                        "satisfied": True,
                        "outcome": hit.outcome,
                        "transition_seq": hit.transition_seq,
                        "lifecycle": current.lifecycle.value,
                        "attention": current.attention.value,
                    }
                if base == (None, None):
                    # Not satisfied now: from here on only a later transition counts.
                    base = (seqs.get("lifecycle", 0), seqs.get("attention", 0))
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise SignalttyError("TIMEOUT", f"timed out waiting for {', '.join(outcomes)}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ev.wait(), min(remaining, 0.5))
        finally:
            self.store.bus.drop_waiter(pane.id, ev)

    async def focus_next_unread(self, conn: Client | None, p: P.Empty) -> dict[str, Any]:
        best: Pane | None = None
        for pane in self.store.panes.values():
            if pane.attention == Attention.NONE:
                continue
            if best is None or _focus_key(pane) > _focus_key(best):
                best = pane
        return {"pane_id": best.id if best else None}

    async def attention_pending(self, conn: Client | None, p: P.AttentionPending) -> dict[str, Any]:
        """Panes with attention, this daemon's and every watched host's (``host`` set on
        those), highest attention first, then the most recent."""
        hosts: dict[str, str] = {}
        panes = [x for x in self.store.panes.values() if x.attention != Attention.NONE]
        for link, x in self.panes.remote.panes():
            if x.attention != Attention.NONE:
                panes.append(x)
                hosts[x.id] = link.name
        panes.sort(
            key=lambda x: (ATTENTION_RANK[x.attention], x.attention_since or 0.0), reverse=True
        )
        out = []
        for pane in panes[: p.limit or 50]:
            item: dict[str, Any] = {
                "pane_id": pane.id,
                "workspace_id": pane.workspace_id,
                "title": pane.title,
                "kind": pane.agent.kind,
                "lifecycle": pane.lifecycle.value,
                "attention": pane.attention.value,
            }
            if pane.label is not None:
                item["label"] = pane.label
            if pane.last_message is not None:
                item["last_message"] = pane.last_message
            if pane.attention_since is not None:
                item["attention_since"] = iso(pane.attention_since)
            if pane.pending_decision is not None:
                item["decision_id"] = pane.pending_decision.id
            if pane.id in hosts:
                item["host"] = hosts[pane.id]
            out.append(item)
        return {"panes": out}


def _focus_key(pane: Pane) -> tuple[int, float, str]:
    # Highest attention, then most recent activity, then pane id (states.md §6).
    return (ATTENTION_RANK[pane.attention], pane.last_activity_at, pane.id)
