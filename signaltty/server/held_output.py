"""Small reads of panes nobody is looking at, processed together a moment later (issue 12).

An agent's TUI writes a frame in many small writes (Codex: ~570 writes of ~190 bytes per
turn). Each read that goes through the whole pump (OSC scan, raw ring, screen queue, events)
costs ~40 µs of interpreter work with the caches cold from the switch from the writing
program, ~8× the read itself. A pane without viewers, output listeners or waiters, whose read
holds no query and ends outside an escape sequence, keeps such reads back
(``PaneRuntime._may_hold``); one timer per event loop then processes every pane's held reads in
one pump pass each, at most ``HOLD_S`` after the first. Anything that looks at the pane
(its screen, raw ring, a settle, an exit, a restart) processes them first, in order.

Measured with 20 replayed Codex turns: the daemon's CPU −15 to −20 % (docs/benchmarks.md,
"session 8").
"""

from __future__ import annotations

import asyncio
import re
import weakref
from typing import Final, Protocol

import structlog

log = structlog.get_logger("signaltty.panes")

# How long a held read waits at most (s): under a screen's repaint cadence that a person could
# see (none is looking: viewers turn holding off) and far under the sweep's 500 ms.
HOLD_S: Final = 0.05


# What must reach the pump at once: an OSC that may be a query (10, 11, 7501) or a string
# (DCS, SOS, PM, APC), a CSI that may be a query (DA1 ``c``, DSR ``n``; controls inside a
# sequence are executed and it goes on), and a read that ends inside an OSC or an escape
# sequence (the rest of a query may follow). Wider than the scanner on purpose: a read taken for
# a query is only processed sooner. Titles, notifications and progress may wait.
_NOW: Final = re.compile(
    rb"\x1b\](?:1[01]|7501)(?![0-9])|\x1b[PX^_]|\x1b\[[^@-~]*[cn]"
    rb"|\x1b\][^\x07\x18\x1a\x1b]*\Z|\x1b\[?[^@-~]*\Z"
)


def needs_pump_now(data: bytes) -> bool:
    """True when ``data`` (one read) may hold or start a query the daemon answers
    (``term.osc`` ``QUERY_*``: CSI c / 0 c / 5 n / 6 n, OSC 10/11/7501), or ends inside an
    escape sequence: such a read is never held back, so answers go out at once."""
    return _NOW.search(data) is not None


class Holder(Protocol):
    """A pane runtime with reads held back."""

    def flush_held(self) -> None: ...


class HeldOutput:
    """The panes of one event loop with held reads, and the one timer that flushes them.

    Args:
        loop: the daemon's event loop.
        hold_s: the longest a held read waits.
    """

    _by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HeldOutput] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, hold_s: float = HOLD_S) -> None:
        self._loop = loop
        self._hold_s = hold_s
        self._holders: dict[Holder, None] = {}
        self._handle: asyncio.TimerHandle | None = None

    @classmethod
    def for_loop(cls, loop: asyncio.AbstractEventLoop) -> HeldOutput:
        """The instance shared by every pane of ``loop``."""
        found = cls._by_loop.get(loop)
        if found is None:
            found = cls._by_loop[loop] = cls(loop)
        return found

    def add(self, holder: Holder) -> None:
        """``holder`` now holds reads: flush it at the next tick (armed if idle)."""
        self._holders[holder] = None
        if self._handle is None:
            self._handle = self._loop.call_later(self._hold_s, self._flush)

    def discard(self, holder: Holder) -> None:
        """``holder`` flushed on its own."""
        self._holders.pop(holder, None)

    def _flush(self) -> None:
        self._handle = None
        holders = list(self._holders)
        self._holders.clear()
        for holder in holders:
            try:
                holder.flush_held()
            except Exception:  # noqa: BLE001 - one pane's fault must not keep the others' output
                log.exception("pump.held_flush_failed")
