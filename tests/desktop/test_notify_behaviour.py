"""Notifier behaviour on a real bus: degradation (no server, hanging server, no actions,
no bus), floods, clicks, stale answers, shutdown withdrawal and bus reconnection
(desktop-and-service.md §6.3, §7; issue #6 "Bad input")."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time

from jeepney import message_bus, new_method_call
from jeepney.io.blocking import open_dbus_connection

from tests.conftest import holds_for, wait_until
from tests.desktop.busfix import PrivateBus
from tests.desktop.conftest import desktop_daemon
from tests.server.test_hooks_e2e import _permission_agent

NAME = "dev.signaltty.Signaltty"


def bus_call(address: str, member: str, sig: str = "", body: tuple = ()):
    with open_dbus_connection(bus=address) as conn:
        return conn.send_and_get_reply(
            new_method_call(message_bus, member, sig or None, body), timeout=5
        ).body


def connections_of(address: str, pid: int) -> int:
    names = [n for n in bus_call(address, "ListNames")[0] if n.startswith(":")]
    count = 0
    for n in names:
        with contextlib.suppress(Exception):  # the name went away meanwhile
            if bus_call(address, "GetConnectionUnixProcessID", "s", (n,))[0] == pid:
                count += 1
    return count


def spawn(d, argv: list[str]) -> dict:
    ws = d.call("workspace.create", {"name": "n"})["workspace"]
    return d.call("pane.spawn", {"workspace_id": ws["id"], "argv": argv})["pane"]


def test_no_notification_server_degrades(tmp_root):
    bus = PrivateBus()  # a bus without org.freedesktop.Notifications
    d = desktop_daemon(tmp_root, bus, config="[notifications]\nsettle_ms = 100\n")
    try:
        st = wait_until(lambda: (s := d.call("server.status"))["dbus"]["name_owned"] and s)
        assert st["notifications"]["available"] is False
        pane = spawn(d, ["sleep", "30"])
        log_file = d.state_dir / "signaltty.log"
        wait_until(lambda: "desktop notifications unavailable" in log_file.read_text(),
                   what="the start-up probe found no server")
        for _ in range(3):
            d.call("notify", {"pane_id": pane["id"], "title": "x", "severity": "error"})
        # A send without a server leaves no event to wait for (it is retried in 300 s): the
        # behaviour is that for longer than the 100 ms settle nothing connects or comes back.
        holds_for(
            lambda: d.call("server.status")["notifications"]["available"] is False
            and connections_of(bus.address, d.proc.pid) == 1,  # only the D-Bus service
            0.5,
            what="still unavailable, nothing leaked",
        )
        log = log_file.read_text()
        assert log.count("desktop notifications unavailable") == 1
    finally:
        d.stop()
        bus.stop()


def test_no_session_bus_at_all(tmp_root):
    d = desktop_daemon(
        tmp_root, PrivateBusStub(), DBUS_SESSION_BUS_ADDRESS=f"unix:path={tmp_root}/nobus"
    )
    try:
        log = d.state_dir / "signaltty.log"
        wait_until(
            lambda: '"dbus.unavailable"' in (t := log.read_text()) and '"notify.unavailable"' in t,
            what="both D-Bus users gave up on the missing bus",
        )
        st = d.call("server.status")
        assert st["dbus"]["name_owned"] is False
        assert st["notifications"]["available"] is False
        spawn(d, ["true"])
    finally:
        assert d.stop() == 0


class PrivateBusStub:
    def env(self) -> dict[str, str]:
        return {}


def test_hanging_server_times_out_and_daemon_stays_responsive(tmp_root, bus, notif_server):
    notif_server.reset("hang")
    d = desktop_daemon(tmp_root, bus, config="[notifications]\nsettle_ms = 0\n")
    try:
        wait_until(lambda: d.call("server.status")["dbus"]["name_owned"])
        pane = spawn(d, ["sleep", "30"])
        d.call("notify", {"pane_id": pane["id"], "title": "hang", "severity": "error"})
        wait_until(lambda: notif_server.calls("Notify"))
        # Answered while the Notify call still hangs: the notifier marks the server
        # unavailable only when its 3 s call timeout fires, so every answer saying
        # "available" came from a loop that was not waiting for the server.
        during = [d.call("server.status")["notifications"]["available"] for _ in range(5)]
        assert during == [True] * 5, during
        wait_until(
            lambda: d.call("server.status")["notifications"]["available"] is False, timeout=10
        )
        assert connections_of(bus.address, d.proc.pid) == 1
    finally:
        d.stop()
        notif_server.reset()


def test_no_actions_capability(tmp_root, bus, notif_server):
    notif_server.reset("no-actions")
    d = desktop_daemon(tmp_root, bus)
    try:
        a, _ = _permission_agent(d, tmp_root)
        _, info = notif_server.wait_shown(lambda i: "needs approval" in i["summary"])
        assert info["actions"][1::2] in ([], [""])  # no buttons (a body-click action at most)
        did = a.get()["pending_decision"]["id"]  # named: a superseding request cannot take it
        assert info["body"].endswith(
            f"(answer: signaltty permission answer --pane {a.id} {did} allow|deny, or in the terminal)")
    finally:
        d.stop()
        notif_server.reset()


def test_flood_of_alerts_is_coalesced(tmp_root, bus, notif_server):
    notif_server.reset()
    d = desktop_daemon(tmp_root, bus, config='[notifications]\nmode = "all"\nsettle_ms = 200\n')
    try:
        wait_until(lambda: d.call("server.status")["notifications"]["available"])
        code = "import sys\nfor i in range(10000): sys.stdout.write(f'\\x1b]777;notify;T{i};b\\x1b\\\\')\nsys.stdout.flush()\nimport time; time.sleep(30)"
        t0 = time.monotonic()
        pane = spawn(d, [sys.executable, "-c", code])
        wait_until(
            lambda: (
                d.call("pane.get", {"pane_id": pane["id"]})["pane"]["last_message"] == "T9999: b"
            ),
            timeout=30,
        )
        # the last intent is due ≤ 2 s after the previous notification; latest wins
        wait_until(lambda: (c := notif_server.calls("Notify")) and c[-1][3].endswith("· T9999"))
        # nothing follows the latest: a window, as the coalescing is a matter of time
        shown = holds_for(
            lambda: (c := notif_server.calls("Notify")) and c[-1][3].endswith("· T9999") and c,
            0.5,
            what="no notification after the latest",
        )
        # at most one notification per 2 s for the pane and cause (however long the flood lasts)
        assert 1 <= len(shown) <= (time.monotonic() - t0) / 2 + 2, len(shown)
        assert shown[-1][3].endswith("· T9999")
    finally:
        d.stop()


def test_body_click_marks_seen(tmp_root, bus, notif_server):
    notif_server.reset()
    d = desktop_daemon(tmp_root, bus, config="[notifications]\nsettle_ms = 100\n")
    try:
        wait_until(lambda: d.call("server.status")["notifications"]["available"])
        pane = spawn(d, ["sleep", "30"])
        d.call("notify", {"pane_id": pane["id"], "title": "Build", "body": "done"})
        nid, info = notif_server.wait_shown(lambda i: i["summary"].endswith("· Build"))
        assert info["body"] == "done"
        notif_server.press(nid, "default")
        wait_until(
            lambda: d.call("pane.get", {"pane_id": pane["id"]})["pane"]["attention"] == "none"
        )
    finally:
        d.stop()


def test_shutdown_withdraws_and_releases_name(tmp_root, bus, notif_server):
    notif_server.reset()
    d = desktop_daemon(tmp_root, bus, config="[notifications]\nsettle_ms = 100\n")
    wait_until(lambda: d.call("server.status")["notifications"]["available"])
    pane = spawn(d, ["sleep", "30"])
    d.call("notify", {"pane_id": pane["id"], "title": "Stay", "severity": "error"})
    nid, _ = notif_server.wait_shown()
    assert bus_call(bus.address, "NameHasOwner", "s", (NAME,)) == (True,)
    assert d.stop() == 0
    assert nid not in notif_server.shown
    assert any(args == (nid,) for args in notif_server.calls("CloseNotification"))
    assert bus_call(bus.address, "NameHasOwner", "s", (NAME,)) == (False,)


def test_disabled_by_environment(daemon, bus):
    # the default test daemon runs with SIGNALTTY_DBUS=0 and SIGNALTTY_NOTIFY=0
    st = daemon.call("server.status")
    assert st["dbus"] == {"enabled": False, "name_owned": False}
    assert st["notifications"]["enabled"] is False
    assert st["notifications"]["available"] is False


def test_bus_restart_reconnects_and_requests_the_name_again(tmp_root):
    bus = PrivateBus()
    d = desktop_daemon(tmp_root, bus, SIGNALTTY_NOTIFY="0")
    try:
        wait_until(lambda: d.call("server.status")["dbus"]["name_owned"])
        bus.proc.terminate()
        bus.proc.wait(5)
        wait_until(lambda: not d.call("server.status")["dbus"]["name_owned"])
        bus.socket.unlink(missing_ok=True)
        bus.proc = subprocess.Popen(
            ["dbus-daemon", "--nofork", f"--config-file={bus.dir / 'bus.conf'}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(lambda: bus.socket.exists())
        wait_until(lambda: d.call("server.status")["dbus"]["name_owned"], timeout=20)
        assert bus_call(bus.address, "NameHasOwner", "s", (NAME,)) == (True,)
    finally:
        d.stop()
        bus.stop()


def test_name_owned_by_another_process(tmp_root, bus, notif_server):
    notif_server.reset()
    with open_dbus_connection(bus=bus.address) as other:
        reply = other.send_and_get_reply(
            new_method_call(message_bus, "RequestName", "su", (NAME, 4)), timeout=5
        )
        assert reply.body == (1,)
        d = desktop_daemon(tmp_root, bus, SIGNALTTY_NOTIFY="0")
        try:
            log = d.state_dir / "signaltty.log"
            wait_until(lambda: "dbus.name_taken" in log.read_text())
            st = d.call("server.status")
            assert st["dbus"] == {"enabled": True, "name_owned": False}
            spawn(d, ["true"])
            assert log.read_text().count("dbus.name_taken") == 1
        finally:
            assert d.stop() == 0


def test_expired_notification_then_clear_and_replace(tmp_root, bus, notif_server):
    notif_server.reset()
    d = desktop_daemon(tmp_root, bus, config="[notifications]\nsettle_ms = 100\n")
    try:
        wait_until(lambda: d.call("server.status")["notifications"]["available"])
        pane = spawn(d, ["sleep", "30"])
        d.call("notify", {"pane_id": pane["id"], "title": "One", "severity": "error"})
        nid, info = notif_server.wait_shown(lambda i: i["summary"].endswith("· One"))
        notif_server.expire(nid)
        notif_server.sync(info["sender"])  # the daemon has handled NotificationClosed
        # withdraws a notification already gone; the withdrawal is queued before the reply,
        # ahead of the next notification's send (they take the same lock)
        d.call("pane.mark_seen", {"pane_id": pane["id"]})
        d.call("notify", {"pane_id": pane["id"], "title": "Two", "severity": "warning"})
        notif_server.wait_shown(lambda i: i["summary"].endswith("· Two"))
        d.call("notify", {"pane_id": pane["id"], "title": "Three", "severity": "error"})
        notif_server.wait_shown(lambda i: i["summary"].endswith("· Three"))
        assert d.call("server.status")["notifications"]["available"] is True
    finally:
        d.stop()
