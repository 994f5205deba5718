"""One watched host's panes as this daemon shows them: the mirror a link keeps up to date.

``server/remote.py`` owns the ssh link; this module owns what arrives over it. A
``HostMirror`` holds the host's panes (``NAME/pane_…`` → a read-only ``Pane`` record cleaned
by ``core/mirror.py``) and workspace names, applies the remote's lists and events, publishes
each change on the local bus under the mirrored ids, and raises the local alerts: every
prompt that needs the person (also when a record brings it without its events, or a
pending decision's question changes under its id: then the old notification is withdrawn
first), within the host's alert budget. It runs nothing and answers nothing. Issue 16 item 3.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

import structlog

from signaltty.core import mirror, rules
from signaltty.core.model import Decision, Pane
from signaltty.core.sanitize import sanitize_text
from signaltty.core.states import Attention, Lifecycle
from signaltty.server.coalesce import Budget, Coalescer

log = structlog.get_logger("signaltty.remote")

MAX_PANES: Final = 512  # mirrored per host (a daemon's own cap on live panes)
MAX_WORKSPACES: Final = 512
UPDATE_WINDOW_S: Final = 0.25  # mirrored pane.updated per host: latest wins (protocol.md §7)
# a pane's transitions within this are followed by one pane.get: the events carry the change
# itself, not what came with it (last message, restore state, the remote's own source)
REFRESH_S: Final = 0.05
# a host's alerts: this many at once, then this many a second (permission and input prompts
# past it wait for a token; nothing else is kept): a hostile host cannot flood the desktop,
# a real one with 30 agents finishing together is not cut
ALERT_BURST: Final = 30.0
ALERT_RATE: Final = 2.0
# attention that comes with a pending decision when an agent's hook raised it
_DECIDED: Final = frozenset({Attention.PERMISSION_REQUIRED, Attention.INPUT_REQUIRED})
# attention that is announced when a host's panes are first read (not old unread turns)
_ANNOUNCED_ON_SYNC: Final = frozenset(
    {Attention.PERMISSION_REQUIRED, Attention.INPUT_REQUIRED, Attention.ERROR}
)

Then = Callable[[dict[str, Any]], None]


class MirrorOwner(Protocol):
    """Where a mirror's changes go (``remote.RemoteHosts``)."""

    def emit(self, name: str, payload: dict[str, Any]) -> None:
        """Publish an event on the local bus (``Store.emit_mirrored``)."""
        ...

    def alert(self, alert: rules.Alert) -> None:
        """Hand an alert to the local alert sinks (the notifier)."""
        ...

    def warn_once(self, host: str, what: str, **fields: Any) -> None:
        """Log ``remote.<what>`` once per host."""
        ...


class MirrorLink(Protocol):
    """What a mirror needs of its link (``remote.HostLink``)."""

    @property
    def reachable(self) -> bool: ...

    def send_nowait(self, method: str, params: dict[str, Any], then: Then) -> bool:
        """Send a read request; ``then(result)`` runs in order with the events when it is
        answered. False when the link is down (nothing sent)."""
        ...


class HostMirror:
    """The panes of host ``name`` (read only outside this class).

    Attributes:
        panes: local id (``NAME/pane_…``) → the mirrored record.
        workspaces: local workspace id → its name.
        synced: the current link's ``pane.list`` was applied (events apply from then on).
    """

    def __init__(self, name: str, owner: MirrorOwner, link: MirrorLink) -> None:
        self.name = name
        self._owner = owner
        self._link = link
        self.panes: dict[str, Pane] = {}
        self.workspaces: dict[str, str] = {}
        self.synced = False
        # mirrored pane.updated, latest wins: local pane id → changed fields not yet published
        self._updates: dict[str, set[str]] = {}
        self._coalescer: Coalescer | None = None
        # the alert budget (``_alert``) and the prompts waiting for a token
        self._alerts = Budget(ALERT_BURST, ALERT_RATE)
        self._deferred: dict[str, str] = {}
        self._deferred_handle: asyncio.TimerHandle | None = None
        # panes whose transitions came in: read back after REFRESH_S (``_refresh_stale``)
        self._stale: set[str] = set()
        self._refresh_handle: asyncio.TimerHandle | None = None

    def wire(self, pane: Pane) -> dict[str, Any]:
        """A mirrored pane as a protocol Pane, plus ``host``, ``reachable`` and its
        workspace's name (another host's workspaces are not in ``workspace.list``)."""
        out = pane.to_wire()
        out["host"] = self.name
        out["reachable"] = self._link.reachable
        out["authority"] = "none"
        out["workspace_name"] = self.workspaces.get(pane.workspace_id) or None
        return out

    def link_down(self) -> None:
        """The link ended: events no longer apply until the next list; nothing to read back."""
        self.synced = False
        if self._refresh_handle is not None:
            self._refresh_handle.cancel()
            self._refresh_handle = None
        self._stale.clear()

    def close(self) -> None:
        """The host is no longer watched: timers stop, every pane is withdrawn."""
        self.link_down()
        if self._coalescer is not None:
            self._coalescer.cancel()
        if self._deferred_handle is not None:
            self._deferred_handle.cancel()
            self._deferred_handle = None
        self._deferred.clear()
        for pane_id in list(self.panes):
            self.remove(pane_id)

    def sync_workspaces(self, result: dict[str, Any]) -> None:
        items = result.get("workspaces")
        names: dict[str, str] = {}
        for w in items[:MAX_WORKSPACES] if isinstance(items, list) else []:
            self._workspace(w, names)
        self.workspaces = names

    def _workspace(self, w: object, into: dict[str, str]) -> None:
        if not isinstance(w, dict):
            return
        try:
            wid = mirror.local_id(self.name, mirror.remote_id(w.get("id"), "workspace id"))
        except ValueError:
            return
        name = w.get("name")
        into[wid] = sanitize_text(name, 100) if isinstance(name, str) else ""

    def sync_panes(self, result: dict[str, Any]) -> None:
        items = result.get("panes")
        seen: set[str] = set()
        for d in items if isinstance(items, list) else []:
            pane = self._clean(d)
            if pane is None or pane.id in seen:
                continue
            if pane.id not in self.panes and len(self.panes) >= MAX_PANES:
                self._owner.warn_once(self.name, "too_many_panes")
                continue
            seen.add(pane.id)
            old = self.panes.get(pane.id)
            self.panes[pane.id] = pane
            self._owner.emit(
                "pane.created" if old is None else "pane.updated",
                {"pane": self.wire(pane)} | ({} if old is None else {"changed": ["sync"]}),
            )
            self._announce_record(old, pane)
        for pane_id in [p for p in self.panes if p not in seen]:
            self.remove(pane_id)
        self.synced = True

    def _clean(self, d: object) -> Pane | None:
        try:
            return mirror.clean_pane(self.name, d)
        except (ValueError, RecursionError) as exc:
            self._owner.warn_once(self.name, "bad_record", error=str(exc)[:200])
            return None

    def flush_updates(self, pane_id: str | None = None) -> None:
        """Publish the pending ``pane.updated`` of ``pane_id`` (None: of every pane)."""
        ids = list(self._updates) if pane_id is None else [pane_id]
        for pid in ids:
            changed = self._updates.pop(pid, None)
            pane = self.panes.get(pid)
            if changed is not None and pane is not None:
                self._owner.emit(
                    "pane.updated", {"pane": self.wire(pane), "changed": sorted(changed)}
                )

    def _announce_record(self, old: Pane | None, pane: Pane) -> None:
        """A whole record replaced ``old``: announce a prompt, an answer wanted or an error
        it brings (new, or a pending question changed under its id: ``_reasked``)."""
        reasked = self._reasked(old, pane)
        if pane.attention in _ANNOUNCED_ON_SYNC and (
            old is None
            or old.attention != pane.attention
            or _decision_id(old) != _decision_id(pane)
            or reasked
        ):
            self._alert(pane, _sync_cause(pane))

    def _reasked(self, old: Pane | None, new: Pane) -> bool:
        """Whether ``new`` keeps ``old``'s pending decision id but asks something else; if
        so the question shown for that id is withdrawn first (``_withdraw_question``).

        A button answers a decision by its id (the notification's, while it is the pending
        one). When the other end of the link changes — a pane process points the ssh alias
        elsewhere and kills the daemon's ssh, a daemon restarted and numbered a new request
        like the old one — or a record is simply replaced, the same ids may ask for another
        command: the notification the person read must not stay up with buttons that now
        answer a question nobody was shown (watched-host trust pass, F1).
        """
        if old is None or old.pending_decision is None or new.pending_decision is None:
            return False
        if old.pending_decision.id != new.pending_decision.id:
            return False
        if _same_question(old.pending_decision, new.pending_decision):
            return False
        self._withdraw_question(new.id, new.pending_decision.id)
        self._owner.emit(
            "decision.created",
            {
                "pane_id": new.id,
                "decision": new.pending_decision.to_wire(),
                "prev": new.pending_decision.id,
            },
        )
        return True

    def _withdraw_question(self, pane_id: str, decision_id: str) -> None:
        """The question shown for ``decision_id`` on ``pane_id`` is gone (its notification
        is withdrawn, ``desktop.policy.withdraws``): the same id now asks something else."""
        log.warning("remote.decision_changed", host=self.name, pane_id=pane_id)
        self._owner.emit(
            "decision.cleared",
            {"pane_id": pane_id, "decision_id": decision_id, "reason": "changed"},
        )

    def remove(self, pane_id: str) -> None:
        self._updates.pop(pane_id, None)
        if self.panes.pop(pane_id, None) is not None:
            self._owner.emit("pane.closed", {"pane_id": pane_id})

    def on_event(self, name: object, payload: object) -> None:
        if not isinstance(name, str) or not isinstance(payload, dict):
            return
        try:
            self._apply(name, payload)
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            # not event=: structlog's own first argument (the TypeError crashed the link task)
            self._owner.warn_once(
                self.name, "bad_event", remote_event=name[:60], error=str(exc)[:200]
            )

    def _apply(self, name: str, payload: dict[str, Any]) -> None:
        if name in ("workspace.created", "workspace.updated"):
            if len(self.workspaces) < MAX_WORKSPACES:
                self._workspace(payload.get("workspace"), self.workspaces)
            return
        if name == "workspace.closed":
            with contextlib.suppress(ValueError):
                wid = mirror.remote_id(payload.get("workspace_id"), "workspace id")
                self.workspaces.pop(mirror.local_id(self.name, wid), None)
            return
        if name in ("pane.created", "pane.updated", "pane.resized"):
            pane = self._clean(payload.get("pane"))
            if pane is None:
                return
            old = self.panes.get(pane.id)
            if old is None and len(self.panes) >= MAX_PANES:
                self._owner.warn_once(self.name, "too_many_panes")
                return
            self.panes[pane.id] = pane
            # a record that brings a prompt without its transition events is announced
            # like one read at (re)connect: a remote cannot show a decision silently
            self._announce_record(old, pane)
            if name == "pane.updated" and old is not None:
                # latest wins, published at most every UPDATE_WINDOW_S per host (as a local
                # pane's title changes are): a remote flooding updates costs the local
                # subscribers and D-Bus nothing (hostile-remote attack pass)
                changed = mirror.field_names(payload.get("changed"))
                self._updates.setdefault(pane.id, set()).update(changed)
                if self._coalescer is None:
                    self._coalescer = Coalescer(self.flush_updates, UPDATE_WINDOW_S)
                self._coalescer.poke()
                return
            self.flush_updates(pane.id)
            out: dict[str, Any] = {"pane": self.wire(pane)}
            if name == "pane.updated":
                out["changed"] = mirror.field_names(payload.get("changed"))
            self._owner.emit(
                name if old is not None or name == "pane.created" else "pane.created", out
            )
            return
        pane_id = mirror.local_id(self.name, mirror.remote_id(payload.get("pane_id"), "pane id"))
        self.flush_updates(pane_id)  # a transition comes after the record it follows
        if name == "pane.closed":
            self.remove(pane_id)
            return
        pane = self.panes.get(pane_id)
        if pane is None:
            return  # a pane the list did not name: its pane.created comes first
        if name.startswith(("agent.", "attention.", "decision.")) or name == "pane.exited":
            self._mark_stale(pane_id)
        if name.startswith("agent."):
            value = mirror.enum_value(Lifecycle, payload.get("lifecycle"))
            prev = pane.lifecycle
            if value == prev:
                return
            pane.last_lifecycle, pane.lifecycle = prev, value
            pane.lifecycle_since = time.time()
            pane.lifecycle_source = "remote"
            self._owner.emit(
                f"agent.{value.value}",
                {
                    "pane_id": pane_id,
                    "lifecycle": value.value,
                    "prev": prev.value,
                    "source": "remote",
                },
            )
        elif name in ("attention.created", "attention.updated"):
            value = mirror.enum_value(Attention, payload.get("attention"))
            prev_att = pane.attention
            cause = mirror.cause(payload.get("cause"))
            pane.attention = value
            pane.attention_since = time.time()
            self._owner.emit(
                "attention.created" if prev_att == Attention.NONE else "attention.updated",
                {
                    "pane_id": pane_id,
                    "attention": value.value,
                    "prev": prev_att.value,
                    "source": "remote",
                    "cause": cause,
                },
            )
            if value in _DECIDED and pane.pending_decision is None:
                # its decision.created follows in the same write (core/rules.py emits both in
                # one step) and announces it with the decision's buttons; announcing here as
                # well would show a notification without them first (with settle_ms = 0). Only
                # a prompt that has no decision (seen on the screen) is announced from here,
                # once the lines already read are applied
                asyncio.get_running_loop().call_soon(self._alert_undecided, pane_id, cause)
            elif value != Attention.NONE:
                self._alert(pane, cause)
        elif name == "attention.cleared":
            prev_att = pane.attention
            if prev_att == Attention.NONE:
                return
            pane.attention = Attention.NONE
            pane.attention_since = None
            reason = payload.get("reason")
            self._owner.emit(
                "attention.cleared",
                {
                    "pane_id": pane_id,
                    "prev": prev_att.value,
                    "reason": reason
                    if isinstance(reason, str) and reason.isidentifier()
                    else "remote",
                },
            )
        elif name == "decision.created":
            dec = mirror.clean_decision(payload.get("decision"))
            prev_id = _decision_id(pane)
            if prev_id == dec.id and not _same_question(pane.pending_decision, dec):
                self._withdraw_question(pane_id, dec.id)
            pane.pending_decision = dec
            self._owner.emit(
                "decision.created", {"pane_id": pane_id, "decision": dec.to_wire(), "prev": prev_id}
            )
            if pane.attention in (Attention.PERMISSION_REQUIRED, Attention.INPUT_REQUIRED):
                # the attention came first: announce again with the decision's id
                self._alert(pane, _sync_cause(pane))
        elif name in ("decision.answered", "decision.cleared"):
            did = mirror.remote_id(payload.get("decision_id"), "decision id")
            if _decision_id(pane) != did:
                return
            pane.pending_decision = None
            out = {"pane_id": pane_id, "decision_id": did}
            if name == "decision.answered":
                option = payload.get("option_id")
                out["option_id"] = sanitize_text(option, 64) if isinstance(option, str) else None
            else:
                reason = payload.get("reason")
                out["reason"] = (
                    reason if isinstance(reason, str) and reason.isidentifier() else "remote"
                )
            self._owner.emit(name, out)
        elif name == "pane.exited":
            code = payload.get("code")
            pane.live = False
            pane.exit_code = code if type(code) is int and -(2**31) <= code < 2**31 else None
            self._owner.emit("pane.exited", {"pane_id": pane_id, "code": pane.exit_code})

    def _mark_stale(self, pane_id: str) -> None:
        self._stale.add(pane_id)
        if self._refresh_handle is None:
            loop = asyncio.get_running_loop()
            self._refresh_handle = loop.call_later(REFRESH_S, self._refresh_stale)

    def _refresh_stale(self) -> None:
        """Read back the panes whose transitions came in (``pane.get``, answered in order on
        the link and applied as a record: ``_refreshed``)."""
        self._refresh_handle = None
        stale, self._stale = self._stale, set()
        if not self.synced:
            return  # a reconnect reads the whole list anyway
        for pane_id in stale:
            if pane_id in self.panes:
                rid = pane_id.partition(mirror.SEP)[2]
                then = functools.partial(self._refreshed, pane_id)
                if not self._link.send_nowait("pane.get", {"pane_id": rid}, then):
                    return

    def _refreshed(self, pane_id: str, result: dict[str, Any]) -> None:
        record = result.get("pane")
        pane = self._clean(record)
        old = self.panes.get(pane_id)
        if pane is None or old is None or pane.id != pane_id:
            return
        if pane.to_wire() == old.to_wire():
            return
        self.on_event("pane.updated", {"pane": record, "changed": ["refresh"]})

    def _alert_undecided(self, pane_id: str, cause: str) -> None:
        pane = self.panes.get(pane_id)
        if pane is not None and pane.attention in _DECIDED and pane.pending_decision is None:
            self._alert(pane, cause)

    def _alert(self, pane: Pane, cause: str) -> None:
        """Announce ``pane`` within the host's alert budget (``ALERT_BURST`` at once, then
        ``ALERT_RATE`` a second): one host cannot flood the desktop. Past the budget a
        permission or input prompt waits for the next token (latest per pane, re-checked
        then); any other alert is dropped."""
        if self._alerts.take():
            self._owner.alert(
                rules.Alert(
                    pane.id,
                    cause,
                    mirror.severity(pane.attention),
                    None,
                    None,
                    _decision_id(pane) if cause in ("permission", "input") else None,
                )
            )
            return
        self._owner.warn_once(self.name, "alerts_limited", burst=ALERT_BURST, rate=ALERT_RATE)
        if cause not in ("permission", "input"):
            return
        self._deferred[pane.id] = cause
        if self._deferred_handle is None:
            self._deferred_handle = asyncio.get_running_loop().call_later(
                self._alerts.wait_s(), self._alert_deferred
            )

    def _alert_deferred(self) -> None:
        self._deferred_handle = None
        pending, self._deferred = self._deferred, {}
        for pane_id, cause in pending.items():
            pane = self.panes.get(pane_id)
            if pane is not None and pane.attention in _DECIDED:
                self._alert(pane, cause)  # past the budget again: deferred again


def _same_question(a: Decision | None, b: Decision) -> bool:
    """Whether two mirrored decisions ask the same: what a notification shows and what its
    buttons approve (prompt, tool, agent, options), not times or deadlines."""
    if a is None:
        return False
    return (a.prompt, a.tool_name, a.agent, a.native, a.options) == (
        b.prompt,
        b.tool_name,
        b.agent,
        b.native,
        b.options,
    )


def _decision_id(pane: Pane) -> str | None:
    return pane.pending_decision.id if pane.pending_decision is not None else None


def _sync_cause(pane: Pane) -> str:
    if pane.attention == Attention.PERMISSION_REQUIRED:
        return "permission"
    if pane.attention == Attention.INPUT_REQUIRED:
        return "input"
    return "error"
