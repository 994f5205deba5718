"""The D-Bus interface against clients nobody here wrote (gdbus, busctl, dbus-send) and a
jeepney client: methods, properties, Peer, errors, access, signals
(desktop-and-service.md §7)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest
from jeepney import DBusAddress, MatchRule, MessageType, message_bus, new_method_call
from jeepney.io.blocking import open_dbus_connection

from tests.conftest import wait_until
from tests.desktop.conftest import require

NAME, PATH, IFACE = (
    "dev.signaltty.Signaltty",
    "/dev/signaltty/Signaltty",
    "dev.signaltty.Signaltty1",
)
OBJ = DBusAddress(PATH, bus_name=NAME, interface=IFACE)


def owned(d) -> None:
    wait_until(lambda: d.call("server.status")["dbus"]["name_owned"])


def call(bus, member: str, sig: str = "", body: tuple = (), iface: str = IFACE, path: str = PATH):
    """Call with jeepney; returns the reply message (method_return or error)."""
    with open_dbus_connection(bus=bus.address) as conn:
        msg = new_method_call(
            DBusAddress(path, bus_name=NAME, interface=iface), member, sig or None, body
        )
        return (
            conn.send_and_get_reply(msg, timeout=10, unwrap=False)
            if _has_unwrap()
            else conn.send_and_get_reply(msg, timeout=10)
        )


def _has_unwrap() -> bool:
    import inspect

    from jeepney.io.blocking import DBusConnection

    return "unwrap" in inspect.signature(DBusConnection.send_and_get_reply).parameters


def err_name(reply) -> str | None:
    from jeepney import HeaderFields

    if reply.header.message_type == MessageType.error:
        return reply.header.fields[HeaderFields.error_name]
    return None


def gdbus(bus, *args: str) -> subprocess.CompletedProcess[str]:
    require("gdbus")
    return subprocess.run(
        ["gdbus", *args, "--address", bus.address],
        check=False,
        capture_output=True,
        text=True,
        timeout=20,
    )


def test_introspection_with_gdbus_and_busctl(ddaemon, bus):
    owned(ddaemon)
    r = gdbus(bus, "introspect", "--dest", NAME, "--object-path", PATH)
    assert r.returncode == 0, r.stderr
    for member in (
        "Status(out a{sv} ",
        "ListPanes(out a(sssssss) ",
        "AnswerPermission(in  s target,",
        "LifecycleChanged(s pane_id,",
        "readonly u LivePanes",
        "org.freedesktop.DBus.Peer",
        "org.freedesktop.DBus.Properties",
    ):
        assert member in r.stdout, (member, r.stdout)
    r = gdbus(bus, "introspect", "--dest", NAME, "--object-path", "/", "--recurse")
    assert r.returncode == 0, r.stderr
    assert "dev.signaltty.Signaltty1" in r.stdout, r.stderr
    if shutil.which("busctl"):
        r = subprocess.run(
            ["busctl", f"--address={bus.address}", "introspect", NAME, PATH],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert r.returncode == 0, r.stderr
        assert ".AnswerPermission" in r.stdout, r.stderr
        assert "PermissionRequested" in r.stdout, r.stderr
        r = subprocess.run(
            ["busctl", f"--address={bus.address}", "call", NAME, PATH, IFACE, "FocusNextUnread"],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == 's ""', r.stderr


def test_methods(ddaemon, bus):
    owned(ddaemon)
    ws = ddaemon.call("workspace.create", {"name": "w"})["workspace"]
    pane = ddaemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "30"]})["pane"]
    reply = call(bus, "Status")
    st = reply.body[0]
    assert st["panes"] == ("u", 1)
    assert st["live_panes"] == ("u", 1)
    assert st["protocol"] == ("s", "signaltty/1")
    assert st["notifications_available"][0] == "b"
    assert st["pid"][0] == "u"
    assert st["uptime_s"][0] == "t"
    assert set(st) == {
        "version",
        "protocol",
        "instance_id",
        "pid",
        "uptime_s",
        "socket",
        "workspaces",
        "panes",
        "live_panes",
        "attention_panes",
        "pending_permissions",
        "notifications_mode",
        "notifications_available",
    }
    rows = call(bus, "ListPanes").body[0]
    assert rows == [
        (pane["id"], ws["id"], pane["title"], pane["agent"]["kind"], pane["lifecycle"], "none", "")
    ]
    got = json.loads(call(bus, "GetPane", "s", (pane["id"],)).body[0])
    assert got["id"] == pane["id"]
    assert got["workspace_id"] == ws["id"]
    assert err_name(call(bus, "GetPane", "s", ("pane_nope",))) == "dev.signaltty.Error.NO_SUCH_PANE"
    assert call(bus, "ListPermissions").body == ([],)
    nid = call(bus, "Notify", "ssss", (pane["id"], "Build", "finished", "warning")).body[0]
    assert nid.startswith("notif_")
    notes = [n for n in _notifications(ddaemon) if n["id"] == nid]
    assert notes
    assert notes[0]["source"] == "dbus"
    assert ddaemon.call("pane.get", {"pane_id": pane["id"]})["pane"]["attention"] == "warning"
    assert call(bus, "FocusNextUnread").body == (pane["id"],)
    assert call(bus, "MarkSeen", "s", (pane["id"],)).body == ("none",)
    assert call(bus, "FocusNextUnread").body == ("",)
    assert call(bus, "Notify", "ssss", ("", "No pane", "", "")).body[0].startswith("notif_")
    assert (
        err_name(call(bus, "Notify", "ssss", ("", "", "", ""))) == "dev.signaltty.Error.BAD_PARAMS"
    )
    assert (
        err_name(call(bus, "Notify", "ssss", ("", "t", "", "bogus")))
        == "dev.signaltty.Error.BAD_PARAMS"
    )
    assert (
        err_name(call(bus, "AnswerPermission", "ss", (pane["id"], "allow")))
        == "dev.signaltty.Error.NO_SUCH_DECISION"
    )


def _notifications(d) -> list[dict]:
    """Every notification record so far, from the replayed ``notification.created`` events."""
    with d.client() as cl:
        cl.call("subscribe", {"events": ["notification.created"], "from_seq": 0})
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and not cl.events:
            cl.call("server.status")
        cl.call("server.status")
        return [
            e["data"]["notification"] if "data" in e else e["payload"]["notification"]
            for e in cl.events
        ]


def test_properties_peer_and_errors(ddaemon, bus):
    owned(ddaemon)
    props = "org.freedesktop.DBus.Properties"
    assert call(bus, "Get", "ss", (IFACE, "Protocol"), iface=props).body == (("s", "signaltty/1"),)
    assert call(bus, "Get", "ss", (IFACE, "LivePanes"), iface=props).body == (("u", 0),)
    allp = call(bus, "GetAll", "s", (IFACE,), iface=props).body[0]
    assert set(allp) == {
        "Version",
        "Protocol",
        "SocketPath",
        "LivePanes",
        "PendingPermissions",
        "AttentionPanes",
    }
    assert allp["SocketPath"] == ("s", ddaemon.socket)
    assert (
        err_name(call(bus, "Set", "ssv", (IFACE, "LivePanes", ("u", 3)), iface=props))
        == "org.freedesktop.DBus.Error.PropertyReadOnly"
    )
    assert (
        err_name(call(bus, "Get", "ss", (IFACE, "Nope"), iface=props))
        == "org.freedesktop.DBus.Error.UnknownProperty"
    )
    peer = "org.freedesktop.DBus.Peer"
    assert err_name(call(bus, "Ping", iface=peer)) is None
    mid = call(bus, "GetMachineId", iface=peer).body[0]
    assert isinstance(mid, str)
    assert err_name(call(bus, "Frobnicate")) == "org.freedesktop.DBus.Error.UnknownMethod"
    assert (
        err_name(call(bus, "Status", path="/dev/nowhere"))
        == "org.freedesktop.DBus.Error.UnknownObject"
    )
    assert err_name(call(bus, "GetPane", "u", (3,))) == "org.freedesktop.DBus.Error.InvalidArgs"
    assert err_name(call(bus, "GetPane")) == "org.freedesktop.DBus.Error.InvalidArgs"
    assert err_name(call(bus, "Status", "s", ("x",))) == "org.freedesktop.DBus.Error.InvalidArgs"
    r = subprocess.run(
        [
            "dbus-send",
            f"--bus={bus.address}",
            "--print-reply",
            f"--dest={NAME}",
            PATH,
            f"{IFACE}.AnswerPermission",
            "string:x",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert r.returncode != 0
    assert "InvalidArgs" in r.stderr
    # the daemon is still fine
    assert call(bus, "FocusNextUnread").body == ("",)


def test_caller_of_another_uid_is_denied(ddaemon, bus):
    owned(ddaemon)
    if (
        not shutil.which("setpriv")
        or subprocess.run(["id", "-u"], check=False, capture_output=True, text=True).stdout.strip()
        != "0"
    ):
        pytest.skip("needs root and setpriv to act as another uid")
    base = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "dbus-send",
        f"--bus={bus.address}",
        "--print-reply",
        f"--dest={NAME}",
        PATH,
    ]
    r = subprocess.run(
        [*base, f"{IFACE}.FocusNextUnread"], check=False, capture_output=True, text=True, timeout=20
    )
    assert r.returncode != 0, (r.stdout, r.stderr)
    assert "org.freedesktop.DBus.Error.AccessDenied" in r.stderr, (r.stdout, r.stderr)
    # introspection and Peer need no check
    r = subprocess.run(
        [*base, "org.freedesktop.DBus.Peer.Ping"],
        check=False,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert r.returncode == 0, r.stderr


def test_signals_and_coalesced_properties_changed(ddaemon, bus):
    owned(ddaemon)
    with open_dbus_connection(bus=bus.address) as conn:
        rule = MatchRule(type="signal", path=PATH)
        conn.send_and_get_reply(
            new_method_call(message_bus, "AddMatch", "s", (rule.serialise(),)), timeout=5
        )
        ws = ddaemon.call("workspace.create", {"name": "sig"})["workspace"]
        pane = ddaemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "30"]})[
            "pane"
        ]
        for i in range(30):
            ddaemon.call(
                "notify",
                {
                    "pane_id": pane["id"],
                    "title": f"t{i}",
                    "severity": "warning" if i % 2 else "info",
                },
            )
        ddaemon.call("pane.mark_seen", {"pane_id": pane["id"]})
        got: list = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                msg = conn.receive(timeout=0.5)
            except TimeoutError:
                if any(m[1] == "AttentionChanged" and m[2][1] == "none" for m in got) and sum(
                    1 for m in got if m[1] == "PropertiesChanged"
                ):
                    break
                continue
            if msg.header.message_type == MessageType.signal:
                from jeepney import HeaderFields

                got.append(
                    (
                        msg.header.fields[HeaderFields.interface],
                        msg.header.fields[HeaderFields.member],
                        msg.body,
                    )
                )
    created = [b for _, m, b in got if m == "NotificationCreated"]
    assert [b[2] for b in created] == [f"t{i}" for i in range(30)]  # in order, none dropped
    assert created[0][1] == pane["id"]
    assert created[1][4] == "warning"
    att = [b for _, m, b in got if m == "AttentionChanged"]
    assert att[0][:3] == (pane["id"], "unread", "none")
    assert att[-1][1:3] == ("none", "warning")
    assert att[-1][3] == "mark_seen"
    props = [b for _, m, b in got if m == "PropertiesChanged"]
    assert 1 <= len(props) <= 4
    assert all(p[0] == IFACE for p in props)
    assert any("LivePanes" in p[1] for p in props)


def test_permission_signals_and_list(ddaemon, bus, tmp_root):
    from jeepney import HeaderFields

    from tests.server.test_hooks_e2e import _permission_agent

    owned(ddaemon)
    with open_dbus_connection(bus=bus.address) as conn:
        rule = MatchRule(type="signal", path=PATH, interface=IFACE)
        conn.send_and_get_reply(
            new_method_call(message_bus, "AddMatch", "s", (rule.serialise(),)), timeout=5
        )
        a, _ = _permission_agent(ddaemon, tmp_root)
        rows = call(bus, "ListPermissions").body[0]
        did = a.get()["pending_decision"]["id"]
        assert len(rows) == 1
        assert rows[0][:2] == (did, a.id)
        assert rows[0][4] == "Bash"
        assert rows[0][6] is True
        assert rows[0][7] > 0
        assert call(bus, "AnswerPermission", "ss", (did, "allow")).body == ("working", "none")
        got = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                msg = conn.receive(timeout=0.5)
            except TimeoutError:
                continue
            if msg.header.message_type == MessageType.signal:
                got.append((msg.header.fields[HeaderFields.member], msg.body))
                if got[-1][0] == "PermissionResolved":
                    break
    requested = [b for m, b in got if m == "PermissionRequested"]
    assert requested
    assert requested[0][:4] == (did, a.id, "claude", "Bash")
    assert requested[0][5] is True
    assert requested[0][6] == rows[0][7]
    assert ("PermissionResolved", (did, a.id, "allow")) in got
    lifecycle = [b for m, b in got if m == "LifecycleChanged"]
    assert "blocked" in [b[1] for b in lifecycle if b[0] == a.id]
    assert any(m == "AttentionChanged" and b[1] == "permission_required" and b[3] for m, b in got)
