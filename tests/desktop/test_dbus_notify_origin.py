"""D-Bus ``Notify`` follows the socket's rule (issue 10, third attack pass, A13): a process
inside a pane may post a notification only for its own pane. Real private bus, ``dbus-send``
run in a real pane, the real daemon asking the bus for the caller's pid."""

from __future__ import annotations

import time
from pathlib import Path

from tests.conftest import DaemonProc, wait_until
from tests.desktop.conftest import require
from tests.desktop.test_dbus_interface import IFACE, NAME, PATH, call, err_name, owned
from tests.server.test_trust_answers import _shell_pane


def _notify_from_pane(d: DaemonProc, bus, pane_arg: str) -> dict:
    require("dbus-send")
    out = d.root / f"dbus-notify-{time.monotonic_ns()}"
    cmd = (
        f"dbus-send --bus={bus.address} --print-reply --dest={NAME} {PATH} "
        f"{IFACE}.Notify string:{pane_arg} string:'Claude Code needs approval' "
        f"string:'Allow Bash?' string:warning"
    )
    pane = _shell_pane(d, f"{cmd} >{out}.out 2>{out}.err; echo $? >{out}.rc; exec sleep 60", "nt")
    rc_file = Path(f"{out}.rc")
    rc = wait_until(lambda: (rc_file.exists() and rc_file.read_text().strip()) or None, 30)
    return {
        "pane": pane,
        "rc": int(rc),
        "stdout": Path(f"{out}.out").read_text(),
        "stderr": Path(f"{out}.err").read_text(),
    }


def test_a_pane_cannot_notify_for_another_pane_over_dbus(ddaemon, bus):
    owned(ddaemon)
    victim = _shell_pane(ddaemon, "exec sleep 600", "claude")
    r = _notify_from_pane(ddaemon, bus, victim)
    assert r["rc"] != 0, r
    assert "dev.signaltty.Error.FORBIDDEN" in r["stderr"], r
    assert ddaemon.call("pane.get", {"pane_id": victim})["pane"]["attention"] == "none"


def test_a_pane_notifies_for_itself_over_dbus(ddaemon, bus):
    owned(ddaemon)
    r = _notify_from_pane(ddaemon, bus, "")  # no pane named: the caller's own
    assert r["rc"] == 0, r
    pane = ddaemon.call("pane.get", {"pane_id": r["pane"]})["pane"]
    assert pane["attention"] == "warning", pane  # the severity sent


def test_the_person_may_notify_for_any_pane_over_dbus(ddaemon, bus):
    owned(ddaemon)
    victim = _shell_pane(ddaemon, "exec sleep 600", "claude")
    reply = call(bus, "Notify", "ssss", (victim, "look at this", "", "info"))
    assert err_name(reply) is None, reply.body
    assert ddaemon.call("pane.get", {"pane_id": victim})["pane"]["attention"] == "unread"
