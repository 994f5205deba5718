"""Authoritative state: workspaces, panes, notifications, seq; applies ``core.rules`` effects.

The store is the only place where rule effects become events: it assigns ``seq``, keeps the
replay ring and the per-pane transition seqs for ``wait``, keeps the newest notifications,
marks persistence dirty and publishes through the bus. Runs on the loop thread only.
Spec: README "Runtime picture", protocol.md §2 ``seq``, states.md §5.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import structlog

from signaltty.core import rules
from signaltty.core.limits import EVENT_RING, NOTIFICATIONS_KEPT
from signaltty.core.model import Notification, Pane, Workspace
from signaltty.core.rules import Effect
from signaltty.server.bus import Bus

log = structlog.get_logger("signaltty.store")

# Events that change only runtime evidence, never a persisted field (desktop-and-service §8.2).
_RUNTIME_ONLY_EVENTS = frozenset({"pane.progress", "pane.program_status", "agents.reloaded"})
# Persisted pane fields whose changes may wait for the periodic save (``dirty_later``) rather
# than cause one of their own: agents retitle their pane up to 10×/s (a spinner in the title),
# and a save every ``snapshot_debounce_s`` for that cost ~5–8 % of the daemon's CPU under 20
# replayed Codex turns (issue 12, bench/replay.py).
_LATER_FIELDS = frozenset({"title"})


class Store:
    """State of one daemon instance."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.workspaces: dict[str, Workspace] = {}
        self.panes: dict[str, Pane] = {}
        self.seqs: dict[str, dict[str, int]] = {}
        self.notifications: deque[Notification] = deque(maxlen=NOTIFICATIONS_KEPT)
        self.seq = 0
        self.ring: deque[tuple[int, str, dict[str, Any]]] = deque(maxlen=EVENT_RING)
        self.dirty = False
        # only ``_LATER_FIELDS`` changed since the last save: saved with the tails' cadence
        self.dirty_later = False
        self.dirty_tails: set[str] = set()
        self.shutting_down = False
        self.alert_sinks: list[Callable[[rules.Alert], None]] = []
        # Panes that printed (or whose program changed) since the screen sweep last looked;
        # with no event in between, the sweep visits only these (server/sweep.py).
        self.touched: set[str] = set()
        self.route_cancellers: list[Callable[[str, str], None]] = []

    # ---------------------------------------------------------------- lookups

    def now(self) -> float:
        """Wall-clock seconds, read once per input (rules never read a clock)."""
        return time.time()

    def pane_seqs(self, pane_id: str) -> dict[str, int]:
        return self.seqs.setdefault(pane_id, {})

    def find_workspace(self, ref: str) -> Workspace | None:
        """By id first, then by handle (protocol.md §3 "id-or-handle")."""
        ws = self.workspaces.get(ref)
        if ws is not None:
            return ws
        for ws in self.workspaces.values():
            if ws.handle == ref:
                return ws
        return None

    def ordered_panes(self) -> list[Pane]:
        """Panes by workspace ``created_at``, then workspace order (protocol.md §5, ``pane.list``).
        """
        out: list[Pane] = []
        for ws in sorted(self.workspaces.values(), key=lambda w: w.created_at):
            out += [self.panes[p] for p in ws.pane_ids if p in self.panes]
        return out

    # ---------------------------------------------------------------- events

    def emit(self, name: str, payload: dict[str, Any]) -> int:
        """Assign the next seq to a state event, record it and publish it."""
        self.seq += 1
        seq = self.seq
        self.ring.append((seq, name, payload))
        self._record_transition(seq, name, payload)
        if name not in _RUNTIME_ONLY_EVENTS:
            changed = payload.get("changed") if name == "pane.updated" else None
            if changed and _LATER_FIELDS.issuperset(changed):
                self.dirty_later = True
            else:
                self.dirty = True
        self.bus.publish(seq, name, payload)
        return seq

    def emit_mirrored(self, name: str, payload: dict[str, Any]) -> int:
        """Publish an event about another host's pane (``server/remote.py``): numbered and
        replayed like every event, but not a transition ``wait`` reads, and nothing to save."""
        self.seq += 1
        seq = self.seq
        self.ring.append((seq, name, payload))
        self.bus.publish(seq, name, payload)
        return seq

    def _record_transition(self, seq: int, name: str, payload: dict[str, Any]) -> None:
        pane_id = payload.get("pane_id")
        if not isinstance(pane_id, str):
            return
        seqs = self.pane_seqs(pane_id)
        if name.startswith("agent."):
            seqs["lifecycle"] = seq
            seqs[f"lifecycle:{payload['lifecycle']}"] = seq
        elif name in ("attention.created", "attention.updated"):
            seqs["attention"] = seq
            seqs[f"attention:{payload['attention']}"] = seq
        elif name == "attention.cleared":
            seqs["attention"] = seq
            seqs["attention:none"] = seq
        elif name == "pane.exited":
            seqs["exited"] = seq

    def apply(self, effects: Iterable[Effect]) -> None:
        """Apply rule effects in order."""
        for eff in effects:
            match eff:
                case rules.Emit(event=name, payload=payload):
                    self.emit(name, payload)
                case rules.AddNotification(notification=note):
                    self.notifications.append(note)
                    self.emit("notification.created", {"notification": note.to_wire()})
                case rules.MarkNotificationsRead(pane_id=pane_id, at=at):
                    for note in self.notifications:
                        if note.pane_id == pane_id and note.read_at is None:
                            note.read_at = at
                    self.dirty = True
                case rules.Alert():
                    for sink in self.alert_sinks:
                        try:
                            sink(eff)
                        except Exception:  # noqa: BLE001
                            log.exception("store.alert_sink_failed")
                case rules.CancelRoute(decision_id=did, reason=reason):
                    for cancel in self.route_cancellers:
                        cancel(did, reason)
                case rules.MarkDirty():
                    self.dirty = True

    def replay_after(self, from_seq: int) -> list[tuple[int, str, dict[str, Any]]] | None:
        """Events with seq > ``from_seq`` if all are retained, else ``None``."""
        if from_seq >= self.seq:
            return []
        if not self.ring or self.ring[0][0] > from_seq + 1:
            return None
        return [e for e in self.ring if e[0] > from_seq]

    def retained_after(self) -> int:
        """Seq after which every event is retained (oldest retained − 1)."""
        return self.ring[0][0] - 1 if self.ring else self.seq
