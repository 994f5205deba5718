"""Suspend and shutdown: the time the daemon spent asleep, and its link to logind.

Which clock each timer uses (the decision is recorded in docs/decisions.md, "Sleep"):

* Deadlines on the event loop's clock (``loop.time()``, i.e. ``CLOCK_MONOTONIC`` on Linux
  for asyncio and uvloop alike) do not advance while the machine is suspended: the process
  refresh and screen sweep periods, the listener's idle timeout, ``pane.wait*`` timeouts.
  After a resume each simply goes on with what was left of it: no burst.
* Native permission waits (``HookService``) are measured on :meth:`SleepWatch.awake`:
  ``CLOCK_MONOTONIC`` minus the time between logind's ``PrepareForSleep(true)`` and
  ``PrepareForSleep(false)``. The agent waiting on the same hook measures its own hook
  timeout on a monotonic clock too (Node's timers, Rust's ``Instant``) and is frozen
  during the suspend, so both stop together; the window logind announces adds only the
  seconds around the suspend, which can only make our wait end a little after the
  agent's (the agent then ends the reporter, and the wait ends without a verdict).
* Timers kept in wall-clock seconds (``Store.now()``, ``time.time()``, which jumps by the
  time asleep): the screen sweep's holds and stuck-working recovery, and the deadline a
  decision shows on the wire. They are shifted forward by what :meth:`SleepWatch.poll`
  reports: kernel suspend time (``CLOCK_BOOTTIME - CLOCK_MONOTONIC``, which grows by
  exactly the time suspended) plus logind's window. The sweep polls at the start of every
  tick, so a tick that runs right after a resume — before logind's signal arrives — sees
  the shift first.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

import structlog

from signaltty.system import logind

log = structlog.get_logger("signaltty.sleep")

# A sleep window logind opened and never closed stops counting after this long (seconds of
# awake time): a lost signal must not stop permission deadlines for good.
WINDOW_MAX_S: Final = 60.0
# Shifts below this are the jitter of reading two clocks, not a sleep.
_SHIFT_MIN_S: Final = 0.01
# Seconds the logind thread waits for the snapshot before releasing the lock anyway
# (logind itself waits at most InhibitDelayMaxSec, 5 s by default).
SAVE_WAIT_S: Final = 8.0
# Retry of a bus without logind (rarely appears later), and of a lost connection.
UNAVAILABLE_RETRY_S: Final = 300.0
LOST_RETRY_S: Final = 5.0


def kernel_suspended_s() -> float:
    """Seconds this machine spent suspended since boot (Linux; 0.0 elsewhere).

    ``CLOCK_BOOTTIME`` counts suspend, ``CLOCK_MONOTONIC`` does not (clock_gettime(2)).
    """
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    if boottime is None:
        return 0.0
    return time.clock_gettime(boottime) - time.clock_gettime(time.CLOCK_MONOTONIC)


class SleepWatch:
    """The daemon's measure of time spent asleep, and who is told after a sleep.

    ``listeners`` are called with the seconds to shift wall-clock timers by (> 0), from
    :meth:`poll` on the event loop.
    """

    def __init__(self, suspended: Callable[[], float] = kernel_suspended_s) -> None:
        self._suspended = suspended
        self._kernel_base = suspended()
        self._windows = 0.0  # closed logind windows, monotonic seconds
        self._window_start: float | None = None
        self._reported = 0.0
        self.listeners: list[Callable[[float], None]] = []

    @property
    def asleep(self) -> bool:
        """Between ``PrepareForSleep(true)`` and ``(false)`` (bounded by ``WINDOW_MAX_S``)."""
        return self._window_start is not None and self._open_s() < WINDOW_MAX_S

    def _open_s(self) -> float:
        if self._window_start is None:
            return 0.0
        return min(time.monotonic() - self._window_start, WINDOW_MAX_S)

    def begin(self) -> None:
        """logind announced a sleep: awake time stops here."""
        if self._window_start is None:
            self._window_start = time.monotonic()

    def end(self) -> None:
        """The sleep ended (or its announcement will never end): close the window and poll."""
        if self._window_start is not None:
            self._windows += self._open_s()
            self._window_start = None
        self.poll()

    def awake(self) -> float:
        """Monotonic seconds minus logind's sleep windows: the clock of native waits."""
        return time.monotonic() - self._windows - self._open_s()

    def asleep_s(self) -> float:
        """Seconds asleep since the daemon started: kernel suspend plus logind's windows."""
        return self._suspended() - self._kernel_base + self._windows + self._open_s()

    def poll(self) -> None:
        """Tell the listeners how far wall-clock timers must move since the last poll."""
        shift = self.asleep_s() - self._reported
        if shift < _SHIFT_MIN_S:
            return
        self._reported += shift
        log.info("sleep.shift", seconds=round(shift, 3))
        for listener in list(self.listeners):
            try:
                listener(shift)
            except Exception:  # noqa: BLE001 - one listener must not stop the others
                log.exception("sleep.listener_failed")


class LogindLink:
    """The supervised task that holds logind's delay lock (``server.status.logind``).

    Args:
        clock: opened and closed on ``PrepareForSleep(true)`` / ``(false)``.
        save: writes the snapshot (``Daemon.save``); awaited before the lock is released.
        enabled: False (``SIGNALTTY_LOGIND=0``) or not Linux: :meth:`run` is not started.
    """

    def __init__(
        self, clock: SleepWatch, save: Callable[[], Awaitable[object]], *, enabled: bool
    ) -> None:
        self.clock = clock
        self.save = save
        self.inhibitor: logind.Inhibitor | None = None
        self.saves = 0
        self._off: str | None
        if not sys.platform.startswith("linux"):
            self._off = "logind exists on Linux only"
        elif not enabled:
            self._off = "off (SIGNALTTY_LOGIND=0)"
        else:
            self._off = None

    @property
    def enabled(self) -> bool:
        return self._off is None

    def status(self) -> dict[str, Any]:
        """``{state: starting|inhibiting|released|unavailable|stopped|off, reason,
        locks_taken, last_signal, saves, asleep, asleep_s}``."""
        if self._off is not None:
            base: dict[str, Any] = {
                "state": "off" if "SIGNALTTY_LOGIND" in self._off else "unavailable",
                "reason": self._off,
                "locks_taken": 0,
                "last_signal": None,
            }
        elif self.inhibitor is None:
            base = {"state": "starting", "reason": None, "locks_taken": 0, "last_signal": None}
        else:
            base = self.inhibitor.status()
        return {
            **base,
            "saves": self.saves,
            "asleep": self.clock.asleep,
            "asleep_s": round(self.clock.asleep_s(), 3),
        }

    async def run(self) -> None:
        """Hold the lock for the daemon's lifetime; never returns (cancelled at shutdown)."""
        loop = asyncio.get_running_loop()
        logged: str | None = None
        locks = 0
        while True:
            inhibitor = logind.Inhibitor(functools.partial(self._prepare_from_thread, loop))
            inhibitor.locks_taken = locks
            self.inhibitor = inhibitor
            ended: asyncio.Future[BaseException | None] = loop.create_future()
            thread = threading.Thread(
                target=self._serve, args=(inhibitor, loop, ended), name="logind", daemon=True
            )
            thread.start()
            try:
                outcome = await ended
            except asyncio.CancelledError:
                inhibitor.stop()  # the thread closes the lock within RECEIVE_S
                raise
            finally:
                # a window whose PrepareForSleep(false) can no longer arrive
                self.clock.end()
            locks = inhibitor.locks_taken
            if isinstance(outcome, logind.Unavailable):
                if str(outcome) != logged:
                    logged = str(outcome)
                    log.warning("logind.unavailable", reason=logged)
                await asyncio.sleep(UNAVAILABLE_RETRY_S)
            else:
                logged = None
                log.warning("logind.lost", error=repr(outcome))
                await asyncio.sleep(LOST_RETRY_S)

    @staticmethod
    def _serve(
        inhibitor: logind.Inhibitor,
        loop: asyncio.AbstractEventLoop,
        ended: asyncio.Future[BaseException | None],
    ) -> None:
        outcome: BaseException | None = None
        try:
            inhibitor.serve()
        except Exception as exc:  # noqa: BLE001 - handed to the task, which decides
            outcome = exc

        def report() -> None:
            if not ended.done():
                ended.set_result(outcome)

        with contextlib.suppress(RuntimeError):  # the loop is closed: the daemon has ended
            loop.call_soon_threadsafe(report)

    def _prepare_from_thread(
        self, loop: asyncio.AbstractEventLoop, kind: str, active: bool
    ) -> None:
        try:
            done = asyncio.run_coroutine_threadsafe(self._prepare(kind, active), loop)
        except RuntimeError:  # the loop is closed
            return
        try:
            done.result(SAVE_WAIT_S)
        except TimeoutError:
            log.warning("logind.save_slow", kind=kind, waited_s=SAVE_WAIT_S)
        except Exception:  # noqa: BLE001 - logged; the lock is released anyway
            log.exception("logind.prepare_failed", kind=kind)

    async def _prepare(self, kind: str, active: bool) -> None:
        if kind == "sleep" and active:
            self.clock.begin()  # before the save: nothing times out while it runs
        if active:
            ok = await self.save()
            self.saves += 1
            log.info("logind.saved", kind=kind, ok=ok)
        elif kind == "sleep":
            self.clock.end()
