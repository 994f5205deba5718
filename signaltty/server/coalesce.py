"""Rate limiting of per-pane runtime events (protocol.md §7: "at most one per 250 ms, latest wins").

``pane.progress`` and ``pane.program_status`` can change many times a second; a ``Coalescer``
calls its ``flush`` at once when the window has passed, else once at the end of the window
with whatever is latest then. A ``Budget`` lets a burst through and then a steady rate (a
token bucket): a pane's OSC notifications. Needs a running event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

WINDOW_S = 0.25


class Coalescer:
    """Calls ``flush()`` at most once per ``window_s`` seconds after ``poke()`` calls."""

    def __init__(self, flush: Callable[[], None], window_s: float = WINDOW_S) -> None:
        self._flush = flush
        self._window = window_s
        self._loop = asyncio.get_running_loop()
        self._handle: asyncio.TimerHandle | None = None
        self._last = float("-inf")

    def poke(self) -> None:
        """Something changed: flush now if the window has passed, else at its end."""
        if self._handle is not None:
            return
        wait = self._last + self._window - self._loop.time()
        if wait <= 0:
            self._run()
        else:
            self._handle = self._loop.call_later(wait, self._run)

    def cancel(self) -> None:
        """Drop a pending flush (exit, reset)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _run(self) -> None:
        self._handle = None
        self._last = self._loop.time()
        self._flush()


class Budget:
    """A token bucket: ``burst`` at once, then ``rate`` a second.

    ``take()`` spends a token when one is there; ``wait_s()`` says how long until the next.
    Pure arithmetic on ``time.monotonic`` (no loop needed).
    """

    def __init__(self, burst: float, rate: float) -> None:
        self._burst = burst
        self._rate = rate
        self._tokens = burst
        self._at = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
        self._at = now

    def take(self) -> bool:
        """Spend one token; False (nothing spent) when the budget is used up."""
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def wait_s(self) -> float:
        """Seconds until ``take()`` can succeed (0 when it can now)."""
        self._refill()
        return max(0.0, (1.0 - self._tokens) / self._rate)
