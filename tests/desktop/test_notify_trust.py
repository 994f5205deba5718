"""Notification buttons are obeyed only from the notification server the notification was
sent to, running as our uid (issue 10 §2), end to end with real processes on a private bus:
a second local user and a same-uid process that does not own
``org.freedesktop.Notifications`` forge ``ActionInvoked`` (with ``dbus-send``, broadcast and
addressed to the daemon) for our notification id and its real action key; another user's
notification server (owning the name from the start, or taking it over) gets nothing and
presses nothing. The server we sent to still works.

Each forged signal is waited for in the daemon's log (``notify.action_ignored`` is written
in the same step that drops it), never with a sleep.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import DaemonProc, wait_until
from tests.desktop.busfix import NotificationServer, PrivateBus, have_dbus
from tests.desktop.conftest import desktop_daemon
from tests.desktop.otheruser import ForeignServer, User
from tests.server.test_hooks_e2e import _permission_agent

NOTIF = ["/org/freedesktop/Notifications", "org.freedesktop.Notifications"]
CONFIG = "[notifications]\nsettle_ms = 100\n"


@pytest.fixture
def env(tmp_root) -> Iterator[tuple[PrivateBus, NotificationServer, DaemonProc]]:
    if not have_dbus():
        pytest.fail("dbus-daemon is missing (install Debian package dbus)")
    bus = PrivateBus()
    server = NotificationServer(bus.address)
    d = desktop_daemon(tmp_root, bus, config=CONFIG)
    try:
        yield bus, server, d
    finally:
        d.stop()
        leftovers = d.kill_leftovers()
        server.close()
        bus.stop()
        assert not leftovers, leftovers


def log_events(d: DaemonProc, event: str) -> list[dict[str, Any]]:
    out = []
    for line in (d.state_dir / "signaltty.log").read_text().splitlines():
        if line.startswith("{") and f'"{event}"' in line:
            rec = json.loads(line)
            if rec.get("event") == event:
                out.append(rec)
    return out


def forge(bus: PrivateBus, member: str, nid: int, arg: str, *, user: User | None, dest: str | None):
    """Emit ``member`` on the notifications interface with ``dbus-send`` (as ``user``)."""
    argv = ["dbus-send", f"--bus={bus.address}", "--type=signal"]
    if dest is not None:
        argv.append(f"--dest={dest}")
    sig = "string" if member == "ActionInvoked" else "uint32"
    argv += [NOTIF[0], f"{NOTIF[1]}.{member}", f"uint32:{nid}", f"{sig}:{arg}"]
    r = user.run(argv, timeout=20) if user is not None else subprocess.run(
        argv, capture_output=True, text=True, timeout=20
    )
    assert r.returncode == 0, r.stderr


def allow_key(info: dict) -> str:
    return dict(zip(info["actions"][1::2], info["actions"][0::2], strict=True))["Allow once"]


def assert_still_pending(a, decision_id: str) -> None:
    assert len(a.entries()) == 2, a.entries()  # the reporter printed no verdict
    p = a.get()
    assert (p["lifecycle"], p["attention"]) == ("blocked", "permission_required")
    assert p["pending_decision"]["id"] == decision_id


def test_forged_presses_grant_nothing_and_the_server_press_still_works(env, tmp_root, other_user):
    bus, server, d = env
    a, _ = _permission_agent(d, tmp_root)
    nid, info = server.wait_shown(lambda i: "needs approval" in i["summary"])
    key, daemon_conn = allow_key(info), info["sender"]
    decision = a.get()["pending_decision"]["id"]
    forgeries = [
        (other_user, None, "ActionInvoked", key),  # another uid, broadcast
        (other_user, daemon_conn, "ActionInvoked", key),  # another uid, to the daemon
        (None, None, "ActionInvoked", key),  # our uid, not the name's owner, broadcast
        (None, daemon_conn, "ActionInvoked", key),  # the same, to the daemon
        (other_user, daemon_conn, "NotificationClosed", "2"),  # "dismissed", forged
    ]
    for n, (user, dest, member, arg) in enumerate(forgeries, 1):
        forge(bus, member, nid, arg, user=user, dest=dest)
        ignored = wait_until(
            lambda n=n: len(x := log_events(d, "notify.action_ignored")) >= n and x
        )
        assert len(ignored) == n
        assert_still_pending(a, decision)
    for rec in ignored:
        assert rec["server"] == server.conn.unique_name
        assert rec["notification_id"] == nid
        assert rec["sender"] != server.conn.unique_name
    assert [r["signal"] for r in ignored] == [f[2] for f in forgeries]
    assert nid in server.shown  # a forged NotificationClosed made nobody forget it
    # the server we sent to: its press answers
    server.press(nid, "Allow once")
    entries = a.wait_entries(3)
    verdict = json.loads(entries[2]["stdout"])["hookSpecificOutput"]["decision"]
    assert verdict == {"behavior": "allow"}
    assert len(log_events(d, "notify.action_ignored")) == len(forgeries)


def test_another_users_notification_server_is_sent_nothing(tmp_root, other_user):
    bus = PrivateBus()
    foreign = ForeignServer(other_user, bus.address)  # owns org.freedesktop.Notifications
    d = desktop_daemon(tmp_root, bus, config=CONFIG)
    try:
        a, _ = _permission_agent(d, tmp_root)
        decision = a.get()["pending_decision"]["id"]
        warned = wait_until(lambda: log_events(d, "notify.unavailable"))
        assert f"runs as uid {other_user.uid}" in warned[0]["reason"], warned
        assert d.call("server.status")["notifications"]["available"] is False
        assert "Notify" not in foreign.calls()  # no prompt text ever went to that user
        # it "presses" every id it could guess: nothing is answered (the daemon holds no
        # notification of it, and dropped its connection to a server it may not use)
        for nid in range(1, 4):
            assert foreign.command(f"signal ActionInvoked {nid} allow") == "sent"
        assert_still_pending(a, decision)
        r = d.cli("permission", "answer", a.id, "deny")
        assert r.returncode == 0, r.stderr
    finally:
        d.stop()
        foreign.stop()
        bus.stop()


def test_a_server_that_took_the_name_over_cannot_press(tmp_root, other_user):
    bus = PrivateBus()
    server = NotificationServer(bus.address)
    d = desktop_daemon(tmp_root, bus, config=CONFIG)
    foreign = None
    try:
        a, _ = _permission_agent(d, tmp_root)
        decision = a.get()["pending_decision"]["id"]
        nid, info = server.wait_shown(lambda i: "needs approval" in i["summary"])
        server.close()  # our server goes away; another user's takes the name
        foreign = ForeignServer(other_user, bus.address)
        assert foreign.command(f"signal ActionInvoked {nid} {allow_key(info)}") == "sent"
        ignored = wait_until(lambda: log_events(d, "notify.action_ignored"))
        assert ignored[0]["sender"] == foreign.unique_name
        assert_still_pending(a, decision)
        # the next notification is not sent to the new owner
        ws = d.call("workspace.create", {"name": "w"})["workspace"]
        other = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
        d.call("notify", {"pane_id": other["id"], "title": "after takeover", "severity": "error"})
        wait_until(
            lambda: any(
                f"runs as uid {other_user.uid}" in r["reason"]
                for r in log_events(d, "notify.unavailable")
            )
        )
        assert "Notify" not in foreign.calls()
        assert_still_pending(a, decision)
    finally:
        d.stop()
        if foreign is not None:
            foreign.stop()
        server.close()
        bus.stop()
