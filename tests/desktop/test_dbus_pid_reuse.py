"""D-Bus ``AnswerPermission`` through a reused pid is refused (attack pass 3, A1).

A pane process A opens a bus connection (the bus records A's pid), forks B which keeps the
connection, and exits. A process outside every pane then gets A's number. B calls
``AnswerPermission``: ``GetConnectionUnixProcessID`` says A's pid, whose process now started
after B's connection appeared on the bus, so it is not the caller (``namebirths``). B first
forges a ``NameOwnerChanged`` for its own name, to make the connection look new: only the
bus's own signal counts. Real private dbus-daemon, real daemon; the pid is placed with
``ns_last_pid`` (root; see tests/server/test_trust_pid_reuse.py).
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import psutil

from signaltty.system.procref import boot_ticks_now
from tests.conftest import REPO, DaemonProc, wait_until
from tests.desktop.busfix import NotificationServer, PrivateBus
from tests.desktop.test_dbus_interface import IFACE, NAME, PATH, call, err_name, owned
from tests.desktop.test_notify_trust import env, log_events  # noqa: F401
from tests.server.test_hooks_e2e import _permission_agent
from tests.server.test_trust_answers import _refusals, _shell_pane
from tests.server.test_trust_pid_reuse import need_root, process_at

ATTACK = r"""
import os, signal, sys, time
from jeepney import DBusAddress, HeaderFields, new_method_call, new_signal
from jeepney.io.blocking import open_dbus_connection
work, target, bus = sys.argv[1:4]
conn = open_dbus_connection(bus=bus)
if os.fork():
    open(work + "/A.pid", "w").write(str(os.getpid()))
    os._exit(0)                       # pid A is freed; B keeps the connection
signal.signal(signal.SIGHUP, signal.SIG_IGN)
while not os.path.exists(work + "/go"):
    time.sleep(0.01)  # the attacker's own polling
owner = conn.send_and_get_reply(new_method_call(
    DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus",
                interface="org.freedesktop.DBus"), "GetNameOwner", "s", ("%(name)s",))).body[0]
forged = new_signal(DBusAddress("/org/freedesktop/DBus", interface="org.freedesktop.DBus"),
                    "NameOwnerChanged", "sss", (conn.unique_name, "", conn.unique_name))
forged.header.fields[HeaderFields.destination] = owner
conn.send(forged)
msg = new_method_call(DBusAddress("%(path)s", bus_name="%(name)s", interface="%(iface)s"),
                      "AnswerPermission", "ss", (target, "allow"))
reply = conn.send_and_get_reply(msg, timeout=10)
open(work + "/reply", "w").write(repr((reply.header.message_type.name,
    reply.header.fields.get(HeaderFields.error_name), reply.body)))
"""


def test_dbus_answer_through_a_reused_pid_is_refused(
    ddaemon: DaemonProc, bus: PrivateBus, tmp_root: Path
) -> None:
    need_root()
    owned(ddaemon)
    a, _ = _permission_agent(ddaemon, tmp_root)
    work = tmp_root / "w"
    work.mkdir()
    script = tmp_root / "atk.py"
    script.write_text(ATTACK % {"name": NAME, "path": PATH, "iface": IFACE})
    _shell_pane(
        ddaemon,
        f"{sys.executable} {script} {work} {a.id} {bus.address} 2>{work}/err; exec sleep 600",
    )
    apid = int(wait_until(lambda: (work / "A.pid").exists() and (work / "A.pid").read_text(), 30))
    wait_until(lambda: not Path(f"/proc/{apid}").exists(), 10)
    # start times have clock-tick resolution: let the clock move past the tick in which
    # the connection appeared (the window docs/security.md states)
    seen = boot_ticks_now()
    wait_until(lambda: boot_ticks_now() > seen + 1, 5)
    with process_at(apid):
        (work / "go").write_text("1")
        reply = wait_until(lambda: (work / "reply").exists() and (work / "reply").read_text(), 20)
    assert "dev.signaltty.Error.FORBIDDEN" in reply, (reply, (work / "err").read_text())
    assert a.get()["pending_decision"] is not None
    assert len(a.entries()) == 2
    assert "reused" in {r["why"] for r in _refusals(ddaemon)}
    # the person's D-Bus client, outside every pane, is still obeyed
    ok = call(bus, "AnswerPermission", "ss", (a.id, "allow"))
    assert err_name(ok) is None
    verdict = json.loads(a.wait_entries(3)[2]["stdout"])["hookSpecificOutput"]["decision"]
    assert verdict == {"behavior": "allow"}


# The pane's program claims org.freedesktop.Notifications, forks a child that keeps the
# connection (and so the name), and exits: the bus still reports the opener's pid.
SERVER = r"""
import os, signal, sys, time
from tests.desktop.busfix import NotificationServer
address, work = sys.argv[1:3]
server = NotificationServer(address)
if os.fork():
    open(work + "/A.pid", "w").write(str(os.getpid()))
    os._exit(0)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
while True:
    time.sleep(1)  # holds the connection; the test kills it
"""


def test_notification_server_through_a_reused_pid_is_not_vouched_for(
    env: tuple[PrivateBus, NotificationServer, DaemonProc], tmp_root: Path  # noqa: F811
) -> None:
    need_root()
    bus, server, d = env
    _permission_agent(d, tmp_root)
    server.wait_shown(lambda i: "needs approval" in i["summary"])  # the daemon is watching
    server.close()  # the real server goes away (killed by the attacker)
    work = tmp_root / "n"
    work.mkdir()
    script = tmp_root / "evil.py"
    script.write_text(SERVER)
    # (under `sh`: the pane's own process leads its session, and a session id is not reused)
    _shell_pane(d, f"PYTHONPATH={REPO} {sys.executable} {script} {bus.address} {work}; "
                "exec sleep 600", "evil")
    apid = int(wait_until(lambda: (work / "A.pid").exists() and (work / "A.pid").read_text(), 30))
    wait_until(lambda: not Path(f"/proc/{apid}").exists(), 10)
    holder = [
        p for p in psutil.process_iter(["cmdline"]) if str(script) in (p.info["cmdline"] or [])
    ]
    seen = boot_ticks_now()
    wait_until(lambda: boot_ticks_now() > seen + 1, 5)
    try:
        with process_at(apid):
            # a new request: the daemon resolves the server's owner and traces its pid
            b, _ = _permission_agent(d, tmp_root)
            refused = wait_until(lambda: log_events(d, "notify.server_refused"), 20)
        assert refused[0]["why"].startswith("reused"), refused
        assert b.get()["pending_decision"] is not None
    finally:
        for proc in holder:
            with contextlib.suppress(psutil.Error):
                proc.kill()
