"""The D-Bus service's connection loop is a supervised task (issue 14 item 1): a fault in it
is logged with its traceback and shown in ``server.status.tasks``, and the daemon goes on
without D-Bus. Real private bus, real daemon, the fault injected with SIGNALTTY_FAULTS."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import wait_until
from tests.desktop.busfix import PrivateBus
from tests.desktop.conftest import desktop_daemon
from tests.desktop.test_dbus_interface import NAME


def _dbus_task(d) -> dict:
    return next(t for t in d.call("server.status")["tasks"] if t["name"] == "dbus")


def test_a_crashed_dbus_loop_is_logged_and_shown(tmp_root: Path, bus: PrivateBus) -> None:
    d = desktop_daemon(tmp_root, bus, SIGNALTTY_FAULTS="dbus:1")
    try:
        task = wait_until(lambda: (t := _dbus_task(d))["state"] == "failed" and t, 10)
        assert task["policy"] == "oneshot"
        assert "injected fault" in task["last_error"]
        log = d.state_dir / "signaltty.log"
        wait_until(lambda: "task.crashed" in log.read_text(), 10, what="the crash in the log")
        assert "Traceback" in log.read_text() or "InjectedFault" in log.read_text()
        assert d.call("server.status")["dbus"]["name_owned"] is False
        # the rest of the daemon answers
        assert d.call("pane.list")["panes"] == []
    finally:
        d.stop()


def test_the_dbus_loop_runs_supervised(tmp_root: Path, bus: PrivateBus) -> None:
    d = desktop_daemon(tmp_root, bus)
    try:
        wait_until(lambda: d.call("server.status")["dbus"]["name_owned"], 10, what=NAME)
        assert _dbus_task(d)["state"] == "running"
    finally:
        d.stop()
