"""The task supervisor (issue 14 item 1 and its "Bad input"): policies, back-off, unwinding.

Part 1 drives ``Supervisor`` with real asyncio tasks; part 2 starts real daemons with
``SIGNALTTY_FAULTS`` and reads the policy's effect from ``server.status.tasks``, the exit
code and the log file; part 3 injects faults into shutdown steps and checks that the
unwinding still stops the children and saves the snapshot.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest
from structlog.testing import capture_logs

from signaltty.server.supervisor import (
    EXIT_TASK_FAILED,
    InjectedFault,
    Policy,
    Supervisor,
    parse_faults,
)
from tests.conftest import DaemonProc
from tests.waiting import wait_until

Factory = Callable[[], Coroutine[Any, Any, None]]


def _fast(**kw: Any) -> Supervisor:
    """A supervisor with short back-off, so tests see several restarts quickly."""
    args: dict[str, Any] = {"backoff_first_s": 0.05, "backoff_max_s": 0.4, "healthy_s": 60.0}
    args.update(kw)
    return Supervisor(**args)


def _crashes(logs: Sequence[Mapping[str, Any]], task: str) -> list[Mapping[str, Any]]:
    return [e for e in logs if e["event"] == "task.crashed" and e["task"] == task]


def _entry(sup: Supervisor, name: str) -> dict[str, Any]:
    return next(t for t in sup.status() if t["name"] == name)


# ---------------------------------------------------------------- 1. the supervisor itself


async def test_restart_task_is_restarted_with_doubling_backoff() -> None:
    loop = asyncio.get_running_loop()
    starts: list[float] = []
    healthy = asyncio.Event()

    async def flaky() -> None:
        starts.append(loop.time())
        if len(starts) <= 4:
            raise RuntimeError(f"boom {len(starts)}")
        healthy.set()
        await asyncio.Event().wait()

    with capture_logs() as logs:
        async with _fast() as sup:
            sup.start("flaky", flaky, Policy.RESTART)
            await asyncio.wait_for(healthy.wait(), 10)
            entry = _entry(sup, "flaky")
    crashes = _crashes(logs, "flaky")
    # the back-off the supervisor announced doubles from the first delay, up to the cap
    assert [c["next_in_s"] for c in crashes] == [0.05, 0.1, 0.2, 0.4]
    assert [c["restarts"] for c in crashes] == [0, 1, 2, 3]
    assert all(c["exc_info"] is True and c["log_level"] == "error" for c in crashes)
    # and it waited at least that long before each restart (lower bounds only: load may add)
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert all(gap >= want * 0.9 for gap, want in zip(gaps, [0.05, 0.1, 0.2, 0.4], strict=True))
    assert entry["state"] == "running"
    assert entry["restarts"] == 4
    assert entry["last_error"] == "RuntimeError: boom 4"
    assert _entry(sup, "flaky")["state"] == "stopped"


async def test_task_raising_in_a_loop_does_not_spin() -> None:
    runs = 0

    async def always_fails() -> None:
        nonlocal runs
        runs += 1
        raise ValueError("always")

    async def returns_at_once() -> None:
        return None  # a long-lived loop that ends is a failure too

    async with _fast(backoff_max_s=0.2) as sup:
        sup.start("bad", always_fails, Policy.RESTART)
        sup.start("ends", returns_at_once, Policy.RESTART)
        await asyncio.sleep(1.0)  # the behaviour under test is a span of time
        bad, ends = _entry(sup, "bad"), _entry(sup, "ends")
    # delays 0.05 + 0.1 + 0.2 + 0.2 … : about 6 runs a second; a spin would be thousands
    assert 2 <= runs <= 10, runs
    assert bad["restarts"] == runs - 1
    assert bad["state"] in ("backoff", "running")
    assert 2 <= ends["restarts"] <= 10
    assert "must not end" in (ends["last_error"] or "")


async def test_backoff_resets_after_a_healthy_run() -> None:
    runs = 0
    fifth = asyncio.Event()

    async def fails_twice_then_runs_a_while() -> None:
        nonlocal runs
        runs += 1
        if runs in (3, 4):
            await asyncio.sleep(0.25)  # longer than healthy_s
        if runs <= 4:
            raise RuntimeError(f"run {runs}")
        fifth.set()
        await asyncio.Event().wait()

    with capture_logs() as logs:
        async with _fast(healthy_s=0.2) as sup:
            sup.start("t", fails_twice_then_runs_a_while, Policy.RESTART)
            await asyncio.wait_for(fifth.wait(), 10)
    assert [c["next_in_s"] for c in _crashes(logs, "t")] == [0.05, 0.1, 0.05, 0.05]


async def test_fatal_task_stops_the_supervisor_with_nonzero_exit() -> None:
    fatal = asyncio.Event()
    named: list[str] = []

    def on_fatal(name: str) -> None:
        named.append(name)
        fatal.set()

    async def healthy() -> None:
        await asyncio.Event().wait()

    async def broken() -> None:
        await asyncio.sleep(0)
        raise OSError("watchdog socket gone")

    with capture_logs() as logs:
        sup = _fast(on_fatal=on_fatal)
        async with sup:
            sup.start("healthy", healthy, Policy.RESTART)
            sup.start("broken", broken, Policy.FATAL)
            await asyncio.wait_for(fatal.wait(), 10)
    assert named == ["broken"]
    assert sup.exit_code == EXIT_TASK_FAILED  # 70: non-zero, systemd restarts us
    states = {t["name"]: (t["state"], t["restarts"]) for t in sup.status()}
    assert states == {"healthy": ("stopped", 0), "broken": ("failed", 0)}
    (crash,) = _crashes(logs, "broken")
    assert crash["policy"] == "fatal"
    assert crash["exc_info"] is True
    assert any(e["event"] == "task.fatal" and e["exit_code"] == EXIT_TASK_FAILED for e in logs)


async def test_stop_unwinds_in_reverse_start_order_and_awaits_each() -> None:
    stopped: list[str] = []
    running: set[str] = set()
    all_up = asyncio.Event()

    def loop_named(name: str) -> Factory:
        async def body() -> None:
            running.add(name)
            if len(running) == 3:
                all_up.set()
            try:
                await asyncio.Event().wait()
            finally:
                # the task stopped before this one must be completely finished already
                stopped.append(f"{name}:{sorted(running)}")
                running.discard(name)

        return body

    async def one_shot() -> None:
        return None

    sup = _fast()
    async with sup:
        for name in ("watchdog", "flusher", "sweep"):
            sup.start(name, loop_named(name), Policy.RESTART)
        hydrate = sup.start("hydrate", one_shot, Policy.ONESHOT)
        assert hydrate is not None
        await asyncio.wait_for(all_up.wait(), 10)
        await asyncio.wait([hydrate])
    assert stopped == [
        "sweep:['flusher', 'sweep', 'watchdog']",
        "flusher:['flusher', 'watchdog']",
        "watchdog:['watchdog']",
    ]
    assert [t["state"] for t in sup.status()] == ["stopped", "stopped", "stopped", "done"]
    assert sup.start("late", one_shot, Policy.ONESHOT) is None  # nothing starts after stop


async def test_a_task_ignoring_cancellation_does_not_hold_the_unwinding() -> None:
    order: list[str] = []

    async def stubborn() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.5)  # ignores the cancel for a while
            order.append("stubborn")

    async def polite() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            order.append("polite")

    with capture_logs() as logs:
        async with _fast(stop_timeout_s=0.1) as sup:
            sup.start("polite", polite, Policy.RESTART)
            sup.start("stubborn", stubborn, Policy.RESTART)
            await asyncio.sleep(0)
    # the next task was stopped without waiting for the stubborn one; the group still
    # awaited the stubborn one before closing
    assert order == ["polite", "stubborn"]
    assert any(e["event"] == "task.stop_timeout" and e["task"] == "stubborn" for e in logs)


async def test_oneshot_finishes_fails_once_and_can_be_started_again() -> None:
    calls = 0
    gate = asyncio.Event()

    async def job() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("first run fails")
        await gate.wait()

    with capture_logs() as logs:
        async with _fast() as sup:
            first = sup.start("job", job, Policy.ONESHOT)
            assert first is not None
            await asyncio.wait([first])
            assert _entry(sup, "job")["state"] == "failed"
            await asyncio.sleep(0.2)  # longer than the back-off: a one-shot is not restarted
            assert calls == 1
            second = sup.start("job", job, Policy.ONESHOT)
            assert second is not None
            assert sup.start("job", job, Policy.ONESHOT) is second
            gate.set()
            await asyncio.wait([second])
            entry = _entry(sup, "job")
    assert calls == 2
    assert entry["state"] == "done"
    assert entry["restarts"] == 0
    assert entry["last_error"] == "RuntimeError: first run fails"
    assert len(_crashes(logs, "job")) == 1


async def test_exception_of_the_body_propagates_unwrapped_after_stopping_tasks() -> None:
    cancelled = asyncio.Event()

    async def loop() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    sup = _fast()

    async def serve() -> None:
        async with sup:
            sup.start("loop", loop, Policy.RESTART)
            await asyncio.sleep(0)
            raise LookupError("start-up failed")

    with pytest.raises(LookupError, match="start-up failed"):
        await serve()
    assert cancelled.is_set()
    with pytest.raises(RuntimeError, match="outside"):
        Supervisor().start("x", loop, Policy.RESTART)


async def test_injected_faults_fail_the_first_runs_only() -> None:
    calls = 0
    up = asyncio.Event()

    async def work() -> None:
        nonlocal calls
        calls += 1
        up.set()
        await asyncio.Event().wait()

    faults, warnings = parse_faults("work:2", tasks=["work"], steps=[])
    assert not warnings
    with capture_logs() as logs:
        async with _fast() as sup:
            sup.faults = faults
            sup.start("work", work, Policy.RESTART)
            await asyncio.wait_for(up.wait(), 10)
            entry = _entry(sup, "work")
    assert calls == 1  # the factory is not even called for an injected failure
    assert entry["restarts"] == 2
    assert entry["last_error"] == "InjectedFault: injected fault"
    assert len(_crashes(logs, "work")) == 2


def test_parse_faults_ignores_hostile_values_with_a_warning() -> None:
    tasks, steps = ["flusher", "screen-sweep"], ["snapshot", "tasks"]
    faults, warnings = parse_faults(
        "flusher:2, screen-sweep:1,shutdown:tasks,,nosuch:3,flusher:-1,flusher:0,"
        "screen-sweep:99999,shutdown:nosuch,\x1b[2J:1,flusher,:",
        tasks=tasks,
        steps=steps,
    )
    assert faults.tasks == {"flusher": 2, "screen-sweep": 1}
    assert faults.steps == {"tasks"}
    assert len(warnings) == 8, warnings
    assert all("\x1b" not in w for w in warnings)  # quoted with repr, never raw
    assert parse_faults("flusher:1," * 200, tasks=tasks, steps=steps)[0].tasks == {}
    assert parse_faults(None, tasks=tasks, steps=steps) == parse_faults(
        "", tasks=tasks, steps=steps
    )
    # the daemon's names are all injectable
    from signaltty.server.daemon import SHUTDOWN_STEPS, TASK_NAMES

    everything = ",".join(
        [*(f"{t}:1" for t in TASK_NAMES), *(f"shutdown:{s}" for s in SHUTDOWN_STEPS)]
    )
    faults, warnings = parse_faults(everything, tasks=TASK_NAMES, steps=SHUTDOWN_STEPS)
    assert not warnings
    assert set(faults.tasks) == set(TASK_NAMES)
    assert faults.take_step("snapshot")
    assert not faults.take_step("snapshot")  # once
    assert str(InjectedFault()) == "injected fault"


# ---------------------------------------------------------------- 2. real daemons


def _log_events(d: DaemonProc) -> list[dict[str, Any]]:
    path = d.state_dir / "signaltty.log"
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _tasks(d: DaemonProc) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in d.call("server.status")["tasks"]}


def _fake_login_shell(root: Path) -> Path:
    # prints the hydration markers at once: the probe is fast and needs no rc files
    sh = root / "fakesh"
    sh.write_text(
        "#!/bin/sh\nprintf '%s%s%s' __SIGNALTTY_PATH_BEGIN__ /usr/bin:/bin __SIGNALTTY_PATH_END__\n"
    )
    sh.chmod(0o755)
    return sh


def test_daemon_restarts_each_restart_task_and_logs_the_traceback(tmp_root: Path) -> None:
    faults = (
        "flusher:2,proc-refresh:1,screen-sweep:1,orphan-reaper:1,socket-watch:1,"
        "path-hydration:1,"
        "nosuch:1,flusher:x"  # hostile items: ignored with a warning
    )
    d = DaemonProc(
        tmp_root,
        {
            "SIGNALTTY_FAULTS": faults,
            "SIGNALTTY_SHELL_PATH": "1",
            "SHELL": str(_fake_login_shell(tmp_root)),
        },
    )
    d.start()
    try:
        want = {
            "flusher": 2,
            "proc-refresh": 1,
            "screen-sweep": 1,
            "orphan-reaper": 1,
            "socket-watch": 1,
        }

        def all_back() -> dict[str, dict[str, Any]] | None:
            tasks = _tasks(d)
            ok = all(
                tasks[n]["restarts"] >= k and tasks[n]["state"] == "running"
                for n, k in want.items()
            )
            return tasks if ok else None

        tasks = wait_until(all_back, timeout=30, what="every RESTART task running again")
        assert tasks is not None
        for name in want:
            assert tasks[name]["policy"] == "restart"
            assert tasks[name]["last_error"] == "InjectedFault: injected fault"
        # the one-shot is not restarted: failed, and PATH hydration is not left "pending"
        assert tasks["path-hydration"]["policy"] == "oneshot"
        assert tasks["path-hydration"]["state"] == "failed"
        assert tasks["path-hydration"]["restarts"] == 0
        assert d.call("server.status")["path_hydration"]["state"] == "failed"
        # the restarted flusher does its job: a new workspace reaches the snapshot
        d.call("workspace.create", {"name": "after-restart", "cwd": str(tmp_root)})
        snap = d.state_dir / "snapshot.json"
        wait_until(lambda: snap.exists() and "after-restart" in snap.read_text(), timeout=20)
        # asked again, the one-shot runs (the fault was for its first run only) and finishes
        with d.client(timeout=20) as c:
            c.call("agents.catalog", {"refresh": True})
        wait_until(lambda: _tasks(d)["path-hydration"]["state"] == "done", timeout=10)
        assert d.call("server.status")["path_hydration"]["state"] == "done"
        events = _log_events(d)
        for name in [*want, "path-hydration"]:
            crashed = [
                e for e in events if e.get("event") == "task.crashed" and e.get("task") == name
            ]
            assert len(crashed) == want.get(name, 1), name
            assert "Traceback" in crashed[0]["exception"]
            assert "InjectedFault: injected fault" in crashed[0]["exception"]
        flusher = [
            e for e in events if e.get("event") == "task.crashed" and e.get("task") == "flusher"
        ]
        assert [e["next_in_s"] for e in flusher] == [0.5, 1.0]
        ignored = [e["warning"] for e in events if e.get("event") == "faults.ignored"]
        assert len(ignored) == 2
        assert any("nosuch" in w for w in ignored)
    finally:
        assert d.stop() == 0
        assert not d.kill_leftovers()


def test_watchdog_failure_stops_the_daemon_in_order_with_nonzero_exit(tmp_root: Path) -> None:
    d = DaemonProc(
        tmp_root,
        # a watchdog period (sdnotify pings go nowhere without NOTIFY_SOCKET)
        {"SIGNALTTY_FAULTS": "watchdog:1", "WATCHDOG_USEC": "4000000"},
    )
    # not DaemonProc.start: the daemon may stop before a readiness probe gets an answer
    with open(tmp_root / "daemon.stderr", "ab") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "signaltty", "daemon", "--state-dir", str(d.state_dir)],
            env=d.env,
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            cwd=str(tmp_root),
        )
    try:
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == EXIT_TASK_FAILED, d.stderr()
    events = _log_events(d)
    names = [e.get("event") for e in events]
    (crash,) = [e for e in events if e.get("event") == "task.crashed"]
    assert crash["task"] == "watchdog"
    assert crash["policy"] == "fatal"
    assert "Traceback" in crash["exception"]
    assert "injected fault" in crash["exception"]
    # the ordered shutdown ran: snapshot written, socket removed, lock released
    assert (
        names.index("task.crashed")
        < names.index("shutdown.started")
        < names.index("shutdown.complete")
    )
    assert "shutdown.step_failed" not in names
    assert (d.state_dir / "snapshot.json").is_file()
    assert not os.path.exists(d.socket)
    again = DaemonProc(tmp_root)
    again.start()  # the state dir lock was released
    assert again.stop() == 0


# ---------------------------------------------------------------- 3. faults during shutdown


def test_faults_in_shutdown_steps_do_not_skip_the_rest(tmp_root: Path) -> None:
    failing = ["hooks", "will_shutdown", "stop_accepting", "tasks"]
    d = DaemonProc(tmp_root, {"SIGNALTTY_FAULTS": ",".join(f"shutdown:{s}" for s in failing)})
    d.start()
    try:
        ws = d.call("workspace.create", {"name": "kept-by-snapshot", "cwd": str(tmp_root)})
        pane = d.call(
            "pane.spawn",
            {
                "workspace_id": ws["workspace"]["id"],
                "argv": ["sh", "-c", "echo up; exec sleep 300"],
            },
        )["pane"]
        wait_until(lambda: "up" in d.call("pane.read", {"pane_id": pane["id"]})["text"], timeout=10)
        (child,) = psutil.Process(d.proc.pid if d.proc else 0).children()
    finally:
        code = d.stop()
    assert code == 0, d.stderr()
    assert not d.kill_leftovers()
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    snap = json.loads((d.state_dir / "snapshot.json").read_text())
    assert [w["name"] for w in snap["workspaces"]] == ["kept-by-snapshot"]
    assert [p["id"] for p in snap["panes"]] == [pane["id"]]
    assert not os.path.exists(d.socket)
    events = _log_events(d)
    failed = [e for e in events if e.get("event") == "shutdown.step_failed"]
    assert [e["step"] for e in failed] == failing
    assert all("injected fault" in e["exception"] for e in failed)
    names = [e.get("event") for e in events]
    assert names.index("shutdown.started") < names.index("shutdown.complete")
    # the tasks skipped by the failed step were still stopped when the supervisor closed
    assert "task.crashed" not in names
