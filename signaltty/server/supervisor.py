"""One owner for the daemon's long-lived tasks: an ``asyncio.TaskGroup`` with restart policies.

Every background loop of the daemon (flusher, process refresh, screen sweep, watchdog,
orphan reaper) and its one-shot jobs (login-shell PATH hydration, a SIGHUP reload) run as
*supervised tasks*: each has a name, a :class:`Policy`, and a runner inside the
supervisor's ``TaskGroup`` that applies the policy when the task raises. No task dies
silently: every failure is logged with its traceback as ``task.crashed``.

The policies (which task gets which is decided, with the reason, in
``signaltty/server/daemon.py``):

* ``RESTART``: run again after a back-off of 0.5 s doubling per consecutive failure up
  to 30 s. A run that lasted ``healthy_s`` (60 s) resets the back-off, so a task that
  fails once a day restarts at once, and a task that raises in a loop restarts at most
  about twice a minute — never a tight crash loop. A loop that *returns* counts as a
  failure too (a long-lived loop has no reason to end).
* ``FATAL``: log, mark ``failed``, set :attr:`Supervisor.exit_code` to
  :data:`EXIT_TASK_FAILED` and call ``on_fatal(name)``; the daemon then runs its normal
  ordered shutdown and exits with that code, so systemd's ``Restart=on-failure`` starts a
  fresh daemon (docs/service.md).
* ``ONESHOT``: allowed to finish (state ``done``); a failure is logged and leaves it
  ``failed``; it is never restarted by the supervisor (the daemon may start it again by
  name, e.g. ``agents.catalog {refresh: true}``).

Stopping (:meth:`Supervisor.stop`) cancels the tasks one at a time in the reverse order of
their first start and awaits each (at most ``stop_timeout_s``), so the ones started first
(the watchdog, the flusher) stop last.

Fault injection, for tests only: ``SIGNALTTY_FAULTS="flusher:2,screen-sweep:1"`` (read by
the daemon at start, :func:`parse_faults`) makes the named task raise
``RuntimeError("injected fault")`` at the start of its first N runs, and
``shutdown:<step>`` makes that step of the daemon's shutdown raise once. Unknown names or
malformed items are ignored with a warning: the variable can only crash our own tasks,
which the user running the daemon can do anyway.
"""

from __future__ import annotations

import asyncio
import enum
import re
from collections.abc import Callable, Collection, Coroutine
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final

import structlog

log = structlog.get_logger("signaltty.supervisor")

# sysexits.h EX_SOFTWARE: an internal error, not a usage or start-up problem (exit 1);
# non-zero, so systemd's Restart=on-failure applies.
EXIT_TASK_FAILED: Final = 70
BACKOFF_FIRST_S: Final = 0.5
BACKOFF_MAX_S: Final = 30.0
HEALTHY_S: Final = 60.0
STOP_TIMEOUT_S: Final = 2.0
# last_error is shown in server.status: bounded, one line.
_ERROR_MAX: Final = 300
# SIGNALTTY_FAULTS: a few short items; anything longer is not a test's value.
_FAULTS_MAX_CHARS: Final = 1024
_FAULT_COUNT_MAX: Final = 1000
_FAULT_ITEM = re.compile(r"([a-z][a-z0-9_-]{0,39}):([a-z0-9_-]{1,40})")
SHUTDOWN_PREFIX: Final = "shutdown"


class Policy(enum.Enum):
    """What the supervisor does when a task raises (see the module docstring)."""

    RESTART = "restart"
    FATAL = "fatal"
    ONESHOT = "oneshot"


class InjectedFault(RuntimeError):
    """Raised by fault injection (``SIGNALTTY_FAULTS``); ``str()`` is ``injected fault``."""

    def __init__(self) -> None:
        super().__init__("injected fault")


@dataclass
class Faults:
    """Remaining injected faults: task name → runs left to fail; shutdown steps to fail."""

    tasks: dict[str, int] = field(default_factory=dict)
    steps: set[str] = field(default_factory=set)

    def take_task(self, name: str) -> bool:
        """True (and one fewer left) when the next run of ``name`` must fail."""
        left = self.tasks.get(name, 0)
        if left <= 0:
            return False
        self.tasks[name] = left - 1
        return True

    def take_step(self, step: str) -> bool:
        """True (once) when shutdown step ``step`` must fail."""
        if step in self.steps:
            self.steps.discard(step)
            return True
        return False


def parse_faults(
    text: str | None, *, tasks: Collection[str], steps: Collection[str]
) -> tuple[Faults, list[str]]:
    """Parse ``SIGNALTTY_FAULTS``: comma-separated ``<task>:<N>`` and ``shutdown:<step>``.

    Args:
        text: the variable's value (None or empty: no faults).
        tasks: names of the supervised tasks a fault may name.
        steps: names of the shutdown steps a ``shutdown:`` item may name.

    Returns:
        ``(faults, warnings)``: the valid items, and one message per ignored item (unknown
        name, count not in 1–1000, malformed) or for a value over 1024 characters (then
        nothing is used). Never raises.
    """
    faults = Faults()
    warnings: list[str] = []
    if not text:
        return faults, warnings
    if len(text) > _FAULTS_MAX_CHARS:
        return faults, [f"SIGNALTTY_FAULTS ignored: longer than {_FAULTS_MAX_CHARS} characters"]
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        m = _FAULT_ITEM.fullmatch(item)
        if m is None:
            warnings.append(f"SIGNALTTY_FAULTS item ignored (expected name:count): {item[:60]!r}")
            continue
        name, arg = m.groups()
        if name == SHUTDOWN_PREFIX:
            if arg in steps:
                faults.steps.add(arg)
            else:
                warnings.append(f"SIGNALTTY_FAULTS: unknown shutdown step {arg!r} ignored")
        elif name not in tasks:
            warnings.append(f"SIGNALTTY_FAULTS: unknown task {name!r} ignored")
        elif not arg.isdigit() or not 1 <= int(arg) <= _FAULT_COUNT_MAX:
            warnings.append(f"SIGNALTTY_FAULTS: count for {name!r} must be 1–{_FAULT_COUNT_MAX}")
        else:
            faults.tasks[name] = int(arg)
    return faults, warnings


TaskFactory = Callable[[], Coroutine[Any, Any, None]]


@dataclass(eq=False)
class _Supervised:
    name: str
    policy: Policy
    factory: TaskFactory
    state: str = "running"  # running | backoff | stopped | failed | done
    restarts: int = 0
    last_error: str | None = None
    next_at: float | None = None  # loop time of the next start while in backoff
    task: asyncio.Task[None] | None = None


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return text if len(text) <= _ERROR_MAX else text[: _ERROR_MAX - 1] + "…"


class Supervisor:
    """Owns the daemon's supervised tasks inside one ``asyncio.TaskGroup``.

    Use as ``async with supervisor:`` around the daemon's serving body; :meth:`start`
    works only inside it. Leaving the block stops every task (:meth:`stop`) before the
    ``TaskGroup`` closes; an exception raised by the body propagates unchanged (not
    wrapped in an ``ExceptionGroup``).

    Args:
        on_fatal: called with the task's name after a ``FATAL`` task failed (once per
            failure); the default only logs. The daemon passes its shutdown request.
        backoff_first_s, backoff_max_s, healthy_s, stop_timeout_s: timing (seconds) of
            the restart back-off and of :meth:`stop`; only tests change them.
    """

    def __init__(
        self,
        *,
        on_fatal: Callable[[str], None] | None = None,
        backoff_first_s: float = BACKOFF_FIRST_S,
        backoff_max_s: float = BACKOFF_MAX_S,
        healthy_s: float = HEALTHY_S,
        stop_timeout_s: float = STOP_TIMEOUT_S,
    ) -> None:
        self.on_fatal = on_fatal
        self.faults = Faults()
        self.exit_code = 0
        self._backoff_first = backoff_first_s
        self._backoff_max = backoff_max_s
        self._healthy = healthy_s
        self._stop_timeout = stop_timeout_s
        self._tasks: dict[str, _Supervised] = {}  # insertion order = first start order
        self._tg: asyncio.TaskGroup | None = None
        self._closed = False

    async def __aenter__(self) -> Supervisor:
        if self._tg is not None or self._closed:
            raise RuntimeError("a Supervisor is entered once")
        tg = asyncio.TaskGroup()
        await tg.__aenter__()
        self._tg = tg
        return self

    async def __aexit__(
        self,
        et: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
        tg = self._tg
        assert tg is not None
        if et is not None and issubclass(et, Exception):
            # Every task is finished: the group has nothing left to cancel, and the body's
            # own exception (e.g. StartupError) reaches the caller unwrapped.
            await tg.__aexit__(None, None, None)
        else:
            await tg.__aexit__(et, exc, tb)

    # ---------------------------------------------------------------- tasks

    def start(self, name: str, factory: TaskFactory, policy: Policy) -> asyncio.Task[None] | None:
        """Run ``factory()`` as the supervised task ``name`` under ``policy``.

        A task of that name still running (or waiting to restart) is joined: its runner is
        returned and nothing new starts. A finished one (a one-shot) is started again,
        keeping its restart count and the order it stops in.

        Returns:
            The runner task (it never raises but ``CancelledError``), or None once the
            supervisor is stopping (logged at debug; nothing is started).

        Raises:
            RuntimeError: called outside ``async with supervisor``.
        """
        if self._tg is None:
            raise RuntimeError("Supervisor.start outside `async with`")
        if self._closed:
            log.debug("task.not_started", task=name, reason="stopping")
            return None
        entry = self._tasks.get(name)
        if entry is not None and entry.task is not None and not entry.task.done():
            return entry.task
        if entry is None:
            entry = _Supervised(name, policy, factory)
            self._tasks[name] = entry
        else:
            entry.policy, entry.factory = policy, factory
        entry.state = "running"
        entry.next_at = None
        entry.task = self._tg.create_task(self._runner(entry), name=f"supervised:{name}")
        return entry.task

    async def _runner(self, t: _Supervised) -> None:
        loop = asyncio.get_running_loop()
        delay = self._backoff_first
        while True:
            t.state = "running"
            t.next_at = None
            began = loop.time()
            try:
                if self.faults.take_task(t.name):
                    raise InjectedFault()
                await t.factory()
                if t.policy is Policy.ONESHOT:
                    t.state = "done"
                    return
                raise RuntimeError("task returned; a long-lived loop must not end")
            except asyncio.CancelledError:
                t.state = "stopped"
                raise
            except Exception as exc:  # noqa: BLE001 - applying the policy is the point
                t.last_error = _describe(exc)
                if t.policy is not Policy.RESTART:
                    log.exception(
                        "task.crashed", task=t.name, policy=t.policy.value, restarts=t.restarts
                    )
                    t.state = "failed"
                    if t.policy is Policy.FATAL:
                        self._fatal(t.name)
                    return
                if loop.time() - began >= self._healthy:
                    delay = self._backoff_first  # it ran well for a while: start over
                log.exception(
                    "task.crashed",
                    task=t.name,
                    policy=t.policy.value,
                    restarts=t.restarts,
                    next_in_s=round(delay, 3),
                )
            if self._closed:  # it ended while being stopped: nothing to restart
                t.state = "stopped"
                return
            t.state = "backoff"
            t.next_at = loop.time() + delay
            try:
                await asyncio.sleep(delay)
            except asyncio.CancelledError:
                t.state = "stopped"
                raise
            delay = min(delay * 2, self._backoff_max)
            t.restarts += 1
            log.info("task.restarted", task=t.name, restarts=t.restarts)

    def _fatal(self, name: str) -> None:
        self.exit_code = EXIT_TASK_FAILED
        log.error("task.fatal", task=name, exit_code=EXIT_TASK_FAILED)
        if self.on_fatal is not None:
            try:
                self.on_fatal(name)
            except Exception:  # noqa: BLE001 - a broken callback must not hide the failure
                log.exception("task.fatal_callback_failed", task=name)

    async def stop(self) -> None:
        """Cancel every task, last started first, awaiting each (≤ ``stop_timeout_s``).

        Idempotent; after it :meth:`start` starts nothing. A task that does not finish in
        time is logged (``task.stop_timeout``) and left cancelled; the next one is
        stopped anyway. Never raises but ``CancelledError`` of the caller.
        """
        self._closed = True
        for t in reversed(list(self._tasks.values())):
            task = t.task
            if task is None or task.done():
                continue
            task.cancel("supervisor stopping")
            # asyncio.wait does not raise the task's CancelledError into this caller
            done, _ = await asyncio.wait([task], timeout=self._stop_timeout)
            if not done:
                log.warning("task.stop_timeout", task=t.name, timeout_s=self._stop_timeout)
            if t.state in ("running", "backoff"):
                t.state = "stopped"

    # ---------------------------------------------------------------- status

    def status(self) -> list[dict[str, Any]]:
        """``server.status.tasks``: one entry per supervised task, in start order.

        Each is ``{name, policy: restart|fatal|oneshot, state:
        running|backoff|stopped|failed|done, restarts: int, last_error: str | null,
        next_in_s: float | null}`` (``next_in_s``: seconds to the next start while in
        ``backoff``).
        """
        now = asyncio.get_running_loop().time() if self._tg is not None else 0.0
        out: list[dict[str, Any]] = []
        for t in self._tasks.values():
            next_in = None
            if t.state == "backoff" and t.next_at is not None:
                next_in = round(max(0.0, t.next_at - now), 3)
            out.append(
                {
                    "name": t.name,
                    "policy": t.policy.value,
                    "state": t.state,
                    "restarts": t.restarts,
                    "last_error": t.last_error,
                    "next_in_s": next_in,
                }
            )
        return out
