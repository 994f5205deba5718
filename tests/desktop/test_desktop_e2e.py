"""Desktop surface end to end on a private bus: notifications with buttons, the D-Bus
interface through clients nobody here wrote (dbus-send, gdbus), shutdown withdrawal
(issue #6; desktop-and-service.md §6, §7)."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import wait_until
from tests.desktop.conftest import require
from tests.server.test_hooks_e2e import _permission_agent

DEST = ["dev.signaltty.Signaltty", "/dev/signaltty/Signaltty"]


def dbus_send(bus, member: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        [
            "dbus-send",
            f"--bus={bus.address}",
            "--print-reply",
            f"--dest={DEST[0]}",
            DEST[1],
            f"dev.signaltty.Signaltty1.{member}",
            *args,
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=20,
    )
    if check:
        assert r.returncode == 0, r.stderr
    return r


def gdbus(bus, *args: str) -> subprocess.CompletedProcess[str]:
    require("gdbus")
    return subprocess.run(
        ["gdbus", *args, "--address", bus.address],
        check=False,
        capture_output=True,
        text=True,
        timeout=20,
    )


def status(d) -> dict:
    return d.call("server.status")


def test_status_reports_dbus_and_notifications(ddaemon):
    st = wait_until(
        lambda: (
            (s := status(ddaemon))["dbus"]["name_owned"] and s["notifications"]["available"] and s
        )
    )
    assert st["dbus"] == {"enabled": True, "name_owned": True}
    assert st["notifications"]["available"] is True


def test_permission_allow_once_button(ddaemon, tmp_root, notif_server):
    wait_until(lambda: status(ddaemon)["dbus"]["name_owned"])
    a, _ = _permission_agent(ddaemon, tmp_root)
    nid, info = notif_server.wait_shown(lambda i: "needs approval" in i["summary"])
    assert info["app"] == "signaltty"
    assert info["summary"].endswith("· Claude Code needs approval")
    assert info["body"].startswith("Allow Bash?")
    labels = info["actions"][1::2]
    assert "Allow once" in labels
    assert "Deny" in labels
    assert info["timeout"] == 0  # permission notifications do not expire
    notif_server.press(nid, "Allow once")
    entries = a.wait_entries(3)
    assert json.loads(entries[2]["stdout"]) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }
    p = wait_until(lambda: (x := a.get())["lifecycle"] == "working" and x)
    assert (p["attention"], p["pending_decision"]) == ("none", None)


def test_answer_permission_over_dbus_send_withdraws(ddaemon, tmp_root, notif_server, bus):
    wait_until(lambda: status(ddaemon)["dbus"]["name_owned"])
    a, _ = _permission_agent(ddaemon, tmp_root)
    nid, _info = notif_server.wait_shown(lambda i: "needs approval" in i["summary"])
    r = dbus_send(bus, "AnswerPermission", f"string:{a.id}", "string:deny")
    assert '"working"' in r.stdout
    assert '"none"' in r.stdout
    entries = a.wait_entries(3)
    assert json.loads(entries[2]["stdout"])["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    wait_until(
        lambda: [(args,) for args in notif_server.calls("CloseNotification") if args[0] == nid]
    )
    assert nid not in notif_server.shown
    r = dbus_send(bus, "AnswerPermission", f"string:{a.id}", "string:deny", check=False)
    assert r.returncode != 0
    assert "dev.signaltty.Error.NO_SUCH_DECISION" in r.stderr


def test_answer_permission_over_gdbus_and_cli(ddaemon, tmp_root, notif_server, bus):
    wait_until(lambda: status(ddaemon)["dbus"]["name_owned"])
    a, _ = _permission_agent(ddaemon, tmp_root)
    nid, _ = notif_server.wait_shown(lambda i: "needs approval" in i["summary"])
    r = gdbus(
        bus,
        "call",
        "--dest",
        DEST[0],
        "--object-path",
        DEST[1],
        "--method",
        "dev.signaltty.Signaltty1.ListPermissions",
    )
    assert r.returncode == 0, r.stderr
    assert a.id in r.stdout, r.stderr
    assert "'Bash'" in r.stdout, r.stderr
    did = a.get()["pending_decision"]["id"]
    r = gdbus(
        bus,
        "call",
        "--dest",
        DEST[0],
        "--object-path",
        DEST[1],
        "--method",
        "dev.signaltty.Signaltty1.AnswerPermission",
        did,
        "allow",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "('working', 'none')", r.stderr
    wait_until(lambda: nid not in notif_server.shown)
    # the CLI answers a second request the same way, and the notification goes away
    b, _ = _permission_agent(ddaemon, tmp_root)
    nid2, _ = notif_server.wait_shown(lambda i: "needs approval" in i["summary"])
    r = ddaemon.cli("permission", "answer", b.id, "allow")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: nid2 not in notif_server.shown)


def test_permission_wins_over_a_message_in_the_same_settle(ddaemon, tmp_root, notif_server):
    wait_until(lambda: status(ddaemon)["dbus"]["name_owned"])
    a, _ = _permission_agent(ddaemon, tmp_root)
    ddaemon.call("notify", {"pane_id": a.id, "title": "Claude needs your permission"})
    nid, info = notif_server.wait_shown()
    assert "needs approval" in info["summary"]
    assert "Allow once" in info["actions"][1::2]
    notif_server.press(nid, "Deny")
    entries = a.wait_entries(3)
    assert json.loads(entries[2]["stdout"])["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    assert len(notif_server.calls("Notify")) == 1
