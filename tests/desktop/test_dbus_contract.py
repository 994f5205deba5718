"""What D-Bus clients rely on beyond the method list (issue 13 item 12): constant properties
annotated ``EmitsChangedSignal=const``, every argument named, ``BAD_PARAMS`` naming the
argument and what it allows, and a clear line — no ``KeyError`` — without a session bus
(with the ``$XDG_RUNTIME_DIR/bus`` fallback other D-Bus libraries use)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from jeepney import HeaderFields, MessageType

from tests.conftest import DaemonProc, wait_until
from tests.desktop.busfix import PrivateBus
from tests.desktop.conftest import require
from tests.desktop.test_dbus_interface import IFACE, NAME, PATH, call, gdbus, owned

EMITS = "org.freedesktop.DBus.Property.EmitsChangedSignal"


def _error(reply) -> tuple[str, str]:
    assert reply.header.message_type == MessageType.error, reply.body
    return reply.header.fields[HeaderFields.error_name], reply.body[0]


def _interface(bus) -> ET.Element:
    xml = call(bus, "Introspect", iface="org.freedesktop.DBus.Introspectable").body[0]
    root = ET.fromstring(xml)
    (iface,) = [i for i in root.findall("interface") if i.get("name") == IFACE]
    return iface


def test_every_argument_is_named_and_constants_are_annotated(ddaemon, bus):
    owned(ddaemon)
    iface = _interface(bus)
    for member in iface.findall("method") + iface.findall("signal"):
        for arg in member.findall("arg"):
            assert arg.get("name"), (member.get("name"), arg.attrib)
    props = {
        p.get("name"): {a.get("name"): a.get("value") for a in p.findall("annotation")}
        for p in iface.findall("property")
    }
    for const in ("Version", "Protocol", "SocketPath"):
        assert props[const] == {EMITS: "const"}, props
    for changing in ("LivePanes", "PendingPermissions", "AttentionPanes"):
        assert props[changing].get(EMITS, "true") == "true", props  # they do send changes
    # what a person sees in gdbus
    require("gdbus")
    r = gdbus(bus, "introspect", "--dest", NAME, "--object-path", PATH)
    assert r.returncode == 0, r.stderr
    assert '@org.freedesktop.DBus.Property.EmitsChangedSignal("const")' in r.stdout
    assert "Status(out a{sv} status);" in r.stdout
    assert "Notify(in  s pane_id,\n" in r.stdout
    assert "out s notification_id);" in r.stdout


def test_bad_params_name_the_argument_and_what_it_allows(ddaemon, bus):
    owned(ddaemon)
    ws = ddaemon.call("workspace.create", {"name": "w"})["workspace"]
    pane = ddaemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "30"]})["pane"]
    name, msg = _error(call(bus, "Notify", "ssss", ("", "t", "", "bogus")))
    assert name == "dev.signaltty.Error.BAD_PARAMS"
    assert msg == "severity: must be info, warning, error or empty, got 'bogus'"
    name, msg = _error(call(bus, "AnswerPermission", "ss", (pane["id"], "maybe")))
    assert name == "dev.signaltty.Error.BAD_PARAMS"
    assert msg.startswith("verdict:"), msg
    assert "'allow'" in msg, msg
    assert "'deny'" in msg, msg
    name, msg = _error(call(bus, "MarkSeen", "s", ("",)))
    assert name == "dev.signaltty.Error.BAD_PARAMS", msg
    assert msg.startswith("pane_id:"), msg
    name, msg = _error(call(bus, "Notify", "ssss", ("", "", "", "")))
    assert name == "dev.signaltty.Error.BAD_PARAMS", msg
    assert "title" in msg, msg
    # nothing of this is an internal error
    log = (ddaemon.state_dir / "signaltty.log").read_text()
    assert "dbus.method_failed" not in log
    assert "Traceback" not in log


def _log_events(d: DaemonProc) -> list[dict]:
    text = (d.state_dir / "signaltty.log").read_text()
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_no_session_bus_is_one_clear_line_without_keyerror(tmp_root):
    d = DaemonProc(tmp_root, {"SIGNALTTY_DBUS": "1", "SIGNALTTY_NOTIFY": "1"})
    d.env.pop("DBUS_SESSION_BUS_ADDRESS", None)  # XDG_RUNTIME_DIR (temp) has no bus either
    d.start()
    try:
        def both() -> list[dict] | None:
            ev = _log_events(d)
            names = {e["event"] for e in ev}
            return ev if {"dbus.unavailable", "notify.unavailable"} <= names else None

        events = wait_until(both)
        ws = d.call("workspace.create", {"name": "n"})["workspace"]
        pane = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "30"]})["pane"]
        d.call("notify", {"pane_id": pane["id"], "title": "x", "severity": "error"})
        st = d.call("server.status")
        assert st["dbus"]["name_owned"] is False
        assert st["notifications"]["available"] is False
        dbus_lines = [e for e in events if e["event"] == "dbus.unavailable"]
        assert len(dbus_lines) == 1
        assert dbus_lines[0]["reason"] == (
            f"no session bus: DBUS_SESSION_BUS_ADDRESS is not set and {tmp_root}/run/bus "
            "is not a socket"
        )
        (notify_line,) = [e for e in events if e["event"] == "notify.unavailable"]
        assert "DBUS_SESSION_BUS_ADDRESS is not set" in notify_line["reason"]
    finally:
        assert d.stop() == 0
    everything = (d.state_dir / "signaltty.log").read_text() + d.stderr()
    assert "KeyError" not in everything
    assert "Traceback" not in everything


def test_session_bus_found_at_xdg_runtime_dir_bus(tmp_root):
    bus = PrivateBus()  # listens on <its dir>/bus, like a systemd user session's bus
    d = DaemonProc(
        tmp_root, {"SIGNALTTY_DBUS": "1", "SIGNALTTY_NOTIFY": "0", "XDG_RUNTIME_DIR": str(bus.dir)}
    )
    d.env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    try:
        d.start()
        owned(d)
    finally:
        d.stop()
        bus.stop()
