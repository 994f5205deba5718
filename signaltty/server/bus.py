"""Event fan-out: subscribed connections, waiters and the persistence dirty flag.

The store calls ``publish`` for every state event after assigning its seq; each sink is
guarded so one failing consumer cannot stop the others. Spec: README "Runtime picture",
protocol.md §3 "events", §5 ``subscribe``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

import structlog

log = structlog.get_logger("signaltty.bus")


def glob_match(pattern: str, name: str) -> bool:
    """Event filter: ``*``, ``prefix.*`` (names starting with ``prefix.``) or an exact name."""
    if pattern == "*":
        return True
    if pattern.endswith(".*"):
        return name.startswith(pattern[:-1])
    return pattern == name


class EventSink(Protocol):
    """A connection that may receive state events."""

    def deliver_event(self, seq: int, name: str, payload: dict[str, Any]) -> None: ...


class Bus:
    """Publish/subscribe hub for state events (never ``pty.data``)."""

    def __init__(self) -> None:
        self._sinks: set[EventSink] = set()
        self._pane_waiters: dict[str, set[asyncio.Event]] = {}
        self._any_waiters: set[asyncio.Event] = set()
        # waiters that also wake on new output (``poke_output``): a pane in a flood is read
        # ~250 times per MB, and waking a state waiter (``wait until=exited``) at each read
        # cost the loop a task and a timer every time (issue 12, bench/flood.py)
        self._output_waiters: dict[str, set[asyncio.Event]] = {}
        self.observers: list[Callable[[int, str, dict[str, Any]], None]] = []

    def subscribed_to(self, name: str) -> bool:
        """Whether some subscribed connection receives state event ``name`` (a sink without
        ``wants`` receives everything)."""
        return any(getattr(sink, "wants", lambda _name: True)(name) for sink in self._sinks)

    def add_sink(self, sink: EventSink) -> None:
        self._sinks.add(sink)

    def remove_sink(self, sink: EventSink) -> None:
        self._sinks.discard(sink)

    def waiter(self, pane_id: str | None, *, output: bool = False) -> asyncio.Event:
        """An event set on every state event of ``pane_id`` (any pane for ``None``), and
        with ``output=True`` also when the pane's output or screen moves (``poke_output``)."""
        ev = asyncio.Event()
        if pane_id is None:
            self._any_waiters.add(ev)
        else:
            table = self._output_waiters if output else self._pane_waiters
            table.setdefault(pane_id, set()).add(ev)
        return ev

    def drop_waiter(self, pane_id: str | None, ev: asyncio.Event) -> None:
        if pane_id is None:
            self._any_waiters.discard(ev)
            return
        for table in (self._pane_waiters, self._output_waiters):
            group = table.get(pane_id)
            if group is not None:
                group.discard(ev)
                if not group:
                    del table[pane_id]

    def poke(self, pane_id: str | None) -> None:
        """Wake every waiter of a pane (and the any-pane waiters): its state changed."""
        key = pane_id or ""
        for ev in self._pane_waiters.get(key, ()):
            ev.set()
        for ev in self._output_waiters.get(key, ()):
            ev.set()
        for ev in self._any_waiters:
            ev.set()

    def has_output_waiters(self, pane_id: str) -> bool:
        """Whether someone waits for this pane's output (the pump then reads it promptly)."""
        return pane_id in self._output_waiters

    def poke_output(self, pane_id: str) -> None:
        """Wake the output waiters of a pane: it printed, or its screen took in what it
        printed. State waiters sleep on (their conditions change only with state events)."""
        group = self._output_waiters.get(pane_id)
        if group:
            for ev in group:
                ev.set()

    def publish(self, seq: int, name: str, payload: dict[str, Any]) -> None:
        """Deliver one state event to every sink, waiter and observer."""
        for sink in list(self._sinks):
            try:
                sink.deliver_event(seq, name, payload)
            except Exception:  # noqa: BLE001 - one broken sink must not stop the rest
                log.exception("bus.sink_failed", event=name)
        pane_id = payload.get("pane_id")
        if pane_id is None and isinstance(payload.get("pane"), dict):
            pane_id = payload["pane"].get("id")
        self.poke(pane_id)
        for observer in self.observers:
            try:
                observer(seq, name, payload)
            except Exception:  # noqa: BLE001
                log.exception("bus.observer_failed", event=name)
