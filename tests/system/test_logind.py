"""Issue 15 item 3: logind's delay inhibitor lock, against a private system bus.

What is real: a ``dbus-daemon`` serving as the system bus (``DBUS_SYSTEM_BUS_ADDRESS``), a
small ``org.freedesktop.login1`` on it (:class:`FakeLogind`, a thread) whose ``Inhibit``
hands the daemon a real file descriptor (the write end of a pipe: the fake sees EOF on the
read end once every copy is closed, as logind sees it), the real daemon, real panes, a real
``signaltty hook-event`` reporter waiting for a permission answer, the real snapshot file.

What is simulated: the suspend itself — a test cannot suspend the machine, and
``CLOCK_MONOTONIC``, which stops during a real suspend, runs on here. The time between
``PrepareForSleep(true)`` and ``PrepareForSleep(false)`` stands in for it: the daemon counts
that window as asleep (``SleepWatch``, server/sleep.py), the same way it counts it during a
real suspend, where the window also contains the frozen time.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest
from jeepney import (
    DBusAddress,
    HeaderFields,
    MessageType,
    new_error,
    new_method_call,
    new_method_return,
    new_signal,
)
from jeepney.io.blocking import open_dbus_connection

from tests.conftest import DaemonProc, holds_for, wait_until
from tests.desktop.busfix import PrivateBus
from tests.server.test_hooks_e2e import _permission_agent
from tests.server.test_screen_sweep import IDLE_BOX, MANIFEST, hook, show, spawn_driver, wait_state

LOGIND = "org.freedesktop.login1"
PATH = "/org/freedesktop/login1"
MANAGER = "org.freedesktop.login1.Manager"
WAIT_S = 5  # the permission wait (awake seconds)
ASLEEP_S = 6.5  # the simulated sleep: longer than the whole wait
_DBUS = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus",
                    interface="org.freedesktop.DBus")


class FakeLogind:
    """``org.freedesktop.login1.Manager.Inhibit`` on a bus, in a thread; emits the signals.

    ``refuse``: Inhibit answers ``AccessDenied``. ``locks``: read ends of the pipes handed
    out, one per Inhibit; ``callers``: the unique name of each Inhibit caller.
    """

    def __init__(self, address: str, refuse: bool = False) -> None:
        self.refuse = refuse
        self.locks: list[int] = []
        self.calls: list[tuple[Any, ...]] = []
        self.callers: list[str] = []
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self.conn = open_dbus_connection(bus=address, enable_fds=True)
        reply = self.conn.send_and_get_reply(
            new_method_call(_DBUS, "RequestName", "su", (LOGIND, 4)), timeout=5
        )
        assert reply.body[0] == 1, reply.body
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                msg = self.conn.receive(timeout=0.2)
            except TimeoutError:
                continue
            except Exception:  # noqa: BLE001 - closed at teardown
                return
            if msg.header.message_type != MessageType.method_call:
                continue
            member = msg.header.fields.get(HeaderFields.member)
            if member != "Inhibit":
                self._send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod"))
                continue
            with self._lock:
                self.calls.append(tuple(msg.body))
                self.callers.append(msg.header.fields[HeaderFields.sender])
            if self.refuse:
                self._send(new_error(msg, "org.freedesktop.DBus.Error.AccessDenied", "s",
                                     ("inhibitors are not allowed here",)))
                continue
            r, w = os.pipe()
            self._send(new_method_return(msg, "h", (w,)))
            os.close(w)  # the daemon holds the only write end now
            with self._lock:
                self.locks.append(r)

    def _send(self, msg: Any) -> None:
        with self._send_lock:
            self.conn.send(msg)

    def emit(self, member: str, active: bool) -> None:
        self._send(new_signal(DBusAddress(PATH, interface=MANAGER), member, "b", (active,)))

    def count(self) -> int:
        with self._lock:
            return len(self.locks)

    def released(self, i: int) -> bool:
        """The daemon closed lock ``i`` (EOF on our read end)."""
        r = self.locks[i]
        ready, _, _ = select.select([r], [], [], 0)
        return bool(ready) and os.read(r, 1) == b""

    def close(self) -> None:
        self._stop = True
        self.thread.join(2)
        self.conn.close()
        for r in self.locks:
            os.close(r)


def _need_dbus() -> None:
    if shutil.which("dbus-daemon") is None:
        if os.environ.get("CI"):
            pytest.fail("dbus-daemon is missing (install Debian package dbus)")
        pytest.skip("dbus-daemon is missing")


@pytest.fixture
def bus() -> Iterator[PrivateBus]:
    _need_dbus()
    b = PrivateBus()  # serves as the system bus: only the address variable differs
    try:
        yield b
    finally:
        b.stop()


def _daemon(root: Path, address: str, config: str = "") -> DaemonProc:
    d = DaemonProc(root, {"DBUS_SYSTEM_BUS_ADDRESS": address, "SIGNALTTY_LOGIND": "1"})
    if config:
        d.write_config(config)
    d.start()
    return d


def _logind(d: DaemonProc) -> dict[str, Any]:
    return d.call("server.status")["logind"]


def _stop(d: DaemonProc) -> None:
    d.stop()
    assert not d.kill_leftovers()


def _holders(d: DaemonProc, lock_fd: int) -> list[int]:
    """Processes under the daemon (panes) holding the pipe of ``lock_fd``."""
    inode = f"pipe:[{os.fstat(lock_fd).st_ino}]"
    found = []
    assert d.proc is not None
    for child in psutil.Process(d.proc.pid).children(recursive=True):
        try:
            links = [os.readlink(f"/proc/{child.pid}/fd/{n}") for n in os.listdir(f"/proc/{child.pid}/fd")]
        except OSError:
            continue
        if inode in links:
            found.append(child.pid)
    return found


def test_lock_sleep_and_shutdown(bus: PrivateBus, tmp_root: Path) -> None:
    """The lock is taken at start and never inherited by panes; a sleep saves, releases,
    stops the permission wait's clock and re-takes the lock; a shutdown saves what was
    just created and releases; a signal from another connection is ignored."""
    fake = FakeLogind(bus.address)
    # the flusher waits a minute: only the logind path can have written the snapshot
    d = _daemon(tmp_root, bus.address, "[server]\nsnapshot_debounce_s = 60\n")
    try:
        wait_until(lambda: fake.count() == 1, what="the first Inhibit")
        assert fake.calls[0] == ("shutdown:sleep", "signaltty", "save pane state", "delay")
        st = wait_until(lambda: (s := _logind(d))["state"] == "inhibiting" and s)
        assert st["locks_taken"] == 1
        tasks = {t["name"]: t for t in d.call("server.status")["tasks"]}
        assert (tasks["logind"]["policy"], tasks["logind"]["state"]) == ("restart", "running")

        # --- a signal sent to the daemon by another connection does not release the lock
        other = open_dbus_connection(bus=bus.address)
        try:
            sig = new_signal(DBusAddress(PATH, interface=MANAGER), "PrepareForShutdown", "b", (True,))
            sig.header.fields[HeaderFields.destination] = fake.callers[0]
            other.send(sig)
            holds_for(lambda: not fake.released(0) and _logind(d)["saves"] == 0, 1.0,
                      what="lock kept against a foreign signal")
        finally:
            other.close()

        # --- sleep: a pending permission whose wait is shorter than the sleep
        a, gate = _permission_agent(d, tmp_root, timeout=WAIT_S)
        assert not _holders(d, fake.locks[0]), "a pane inherited the inhibitor lock"
        before = a.get()["pending_decision"]
        fake.emit("PrepareForSleep", True)
        wait_until(lambda: fake.released(0), what="lock released before sleep")
        st = _logind(d)
        assert (st["state"], st["last_signal"], st["saves"], st["asleep"]) == (
            "released", "PrepareForSleep(true)", 1, True)
        # asleep past the whole wait: no timeout, the reporter still waits
        holds_for(lambda: len(a.entries()) == 2 and a.get()["pending_decision"] is not None,
                  ASLEEP_S, what="decision still pending while asleep")
        fake.emit("PrepareForSleep", False)
        wait_until(lambda: fake.count() == 2, what="the lock taken again after resume")
        st = wait_until(lambda: (s := _logind(d))["state"] == "inhibiting" and s)
        assert st["locks_taken"] == 2
        assert st["asleep"] is False
        assert st["asleep_s"] >= ASLEEP_S - 0.5
        # the deadline shown moved by the time asleep
        after = a.get()["pending_decision"]
        moved = (datetime.fromisoformat(after["deadline"])
                 - datetime.fromisoformat(before["deadline"])).total_seconds()
        assert moved >= ASLEEP_S - 0.5, moved
        r = d.cli("permission", "answer", a.id, "allow")
        assert r.returncode == 0, r.stderr
        verdict = json.loads(a.wait_entries(3)[2]["stdout"])
        assert verdict["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
        gate.touch()

        # --- shutdown: what was created just before is in the snapshot, then the lock goes
        ws = d.call("workspace.create", {"name": "made-before-shutdown", "cwd": str(tmp_root)})
        pane = d.call("pane.spawn", {"workspace_id": ws["workspace"]["id"], "argv": ["sleep", "30"]})
        pane_id = pane["pane"]["id"]
        assert not _holders(d, fake.locks[1]), "a pane inherited the inhibitor lock"
        fake.emit("PrepareForShutdown", True)
        wait_until(lambda: fake.released(1), what="lock released before shutdown")
        snap = json.loads((d.state_dir / "snapshot.json").read_text())
        assert pane_id in json.dumps(snap)
        assert "made-before-shutdown" in json.dumps(snap)
        st = _logind(d)
        assert (st["state"], st["last_signal"], st["saves"]) == (
            "released", "PrepareForShutdown(true)", 2)
        # a cancelled shutdown: the lock is taken again, the daemon serves on
        fake.emit("PrepareForShutdown", False)
        wait_until(lambda: fake.count() == 3, what="the lock taken again after a cancel")
        assert d.call("pane.get", {"pane_id": pane_id})["pane"]["live"]["state"] == "live"
    finally:
        _stop(d)
        fake.close()


def test_stuck_recovery_does_not_count_the_sleep(bus: PrivateBus, tmp_root: Path) -> None:
    """A hooked working pane showing its idle prompt recovers after ``stuck_recovery_s`` of
    awake time (states.md §3.8): a sleep longer than that, begun just after the evidence
    appeared, must not make it fire at once; it fires after the resume, when the rest of the
    period has passed."""
    fake = FakeLogind(bus.address)
    agents = tmp_root / "config" / "signaltty" / "agents"
    agents.mkdir(parents=True)
    (agents / "stub-claude.toml").write_text(MANIFEST, encoding="utf-8")
    d = _daemon(tmp_root, bus.address, "[server]\nstuck_recovery_s = 3\nscreen_sweep_ms = 200\n")
    try:
        wait_until(lambda: fake.count() == 1, what="the first Inhibit")
        pid = spawn_driver(d)
        hook(d, pid, "UserPromptSubmit")
        wait_state(d, pid, "working")
        show(d, pid, IDLE_BOX)
        wait_until(lambda: (d.call("pane.explain", {"pane_id": pid})["recovery"] or {}).get("evidence"))
        fake.emit("PrepareForSleep", True)
        wait_until(lambda: fake.released(0), what="lock released before sleep")
        holds_for(lambda: d.call("pane.get", {"pane_id": pid})["pane"]["lifecycle"] == "working",
                  ASLEEP_S, what="no recovery while asleep")
        fake.emit("PrepareForSleep", False)
        wait_until(lambda: fake.count() == 2, what="the lock taken again after resume")
        p = wait_state(d, pid, "done", "unread", timeout=10)
        assert p["lifecycle_source"] == "recovery"
    finally:
        _stop(d)
        fake.close()


def test_a_crashed_task_is_restarted_and_locks_again(bus: PrivateBus, tmp_root: Path) -> None:
    """Supervised (policy restart): an injected crash of ``logind`` is logged, the task runs
    again after its back-off and takes the lock."""
    fake = FakeLogind(bus.address)
    d = DaemonProc(tmp_root, {"DBUS_SYSTEM_BUS_ADDRESS": bus.address, "SIGNALTTY_LOGIND": "1",
                              "SIGNALTTY_FAULTS": "logind:1"})
    d.start()
    try:
        wait_until(lambda: fake.count() == 1, what="Inhibit after the restart")
        task = next(t for t in d.call("server.status")["tasks"] if t["name"] == "logind")
        assert (task["restarts"], task["last_error"]) == (1, "InjectedFault: injected fault")
        assert wait_until(lambda: _logind(d)["state"] == "inhibiting")
    finally:
        _stop(d)
        fake.close()


def test_no_logind_on_the_bus(bus: PrivateBus, tmp_root: Path) -> None:
    """A system bus without logind: said once in status, everything else as usual."""
    d = _daemon(tmp_root, bus.address)
    try:
        st = wait_until(lambda: (s := _logind(d))["state"] == "unavailable" and s)
        assert st["reason"] == "org.freedesktop.login1 is not on the system bus"
        ws = d.call("workspace.create", {"name": "w", "cwd": str(tmp_root)})
        d.call("pane.spawn", {"workspace_id": ws["workspace"]["id"], "argv": ["sleep", "30"]})
        tasks = {t["name"]: t for t in d.call("server.status")["tasks"]}
        assert tasks["logind"]["state"] == "running"  # waiting to try again
        assert tasks["logind"]["restarts"] == 0
    finally:
        _stop(d)
    assert (d.state_dir / "signaltty.log").read_text().count("logind.unavailable") == 1


def test_no_system_bus(tmp_root: Path) -> None:
    d = _daemon(tmp_root, f"unix:path={tmp_root}/no-such-bus")
    try:
        st = wait_until(lambda: (s := _logind(d))["state"] == "unavailable" and s)
        assert st["reason"].startswith("no system bus:")
        assert d.call("server.status")["live_panes"] == 0
    finally:
        _stop(d)


def test_refused(bus: PrivateBus, tmp_root: Path) -> None:
    fake = FakeLogind(bus.address, refuse=True)
    d = _daemon(tmp_root, bus.address)
    try:
        st = wait_until(lambda: (s := _logind(d))["state"] == "unavailable" and s)
        assert st["reason"].startswith("refused: org.freedesktop.DBus.Error.AccessDenied")
        assert fake.count() == 0
    finally:
        _stop(d)
        fake.close()


def test_off_by_variable(tmp_root: Path) -> None:
    """The test suite's own daemons (``SIGNALTTY_LOGIND=0``) never reach a real logind."""
    d = DaemonProc(tmp_root)
    d.start()
    try:
        st = _logind(d)
        assert (st["state"], st["locks_taken"]) == ("off", 0)
        assert "logind" not in {t["name"] for t in d.call("server.status")["tasks"]}
    finally:
        _stop(d)
