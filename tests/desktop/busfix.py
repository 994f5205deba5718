"""Test doubles on a real bus: a private ``dbus-daemon`` and a notification server.

``PrivateBus`` runs ``dbus-daemon --nofork --print-address`` with a minimal session config
in a temp dir. ``NotificationServer`` is a small jeepney service owning
``org.freedesktop.Notifications`` on that bus (Notify, CloseNotification, GetCapabilities,
GetServerInformation, Introspect) that records what it was sent and can "press" a button
by emitting ``ActionInvoked`` + ``NotificationClosed`` (or, with ``keep_after_action``, only
``ActionInvoked``: the notification stays shown, as dunst does for an action chosen from its
context menu).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

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

_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""

NOTIF_PATH = "/org/freedesktop/Notifications"
NOTIF_NAME = "org.freedesktop.Notifications"
HOLD_MAX_S = 10.0  # hold_reply: the longest a Notify reply is held back
HOLD_AFTER_S = 0.3  # hold_reply: the held reply follows the replacement's by this much
PINGS = 2  # round trips to a Notify caller before wait_shown() reports the notification

_NOTIF_XML = """<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<node>
  <interface name="org.freedesktop.Notifications">
    <method name="Notify">
      <arg name="app_name" type="s" direction="in"/><arg name="replaces_id" type="u" direction="in"/>
      <arg name="app_icon" type="s" direction="in"/><arg name="summary" type="s" direction="in"/>
      <arg name="body" type="s" direction="in"/><arg name="actions" type="as" direction="in"/>
      <arg name="hints" type="a{sv}" direction="in"/><arg name="expire_timeout" type="i" direction="in"/>
      <arg name="id" type="u" direction="out"/>
    </method>
    <method name="CloseNotification"><arg name="id" type="u" direction="in"/></method>
    <method name="GetCapabilities"><arg name="capabilities" type="as" direction="out"/></method>
    <method name="GetServerInformation">
      <arg name="name" type="s" direction="out"/><arg name="vendor" type="s" direction="out"/>
      <arg name="version" type="s" direction="out"/><arg name="spec_version" type="s" direction="out"/>
    </method>
    <signal name="NotificationClosed"><arg name="id" type="u"/><arg name="reason" type="u"/></signal>
    <signal name="ActionInvoked"><arg name="id" type="u"/><arg name="action_key" type="s"/></signal>
  </interface>
  <interface name="org.freedesktop.DBus.Introspectable">
    <method name="Introspect"><arg name="data" type="s" direction="out"/></method>
  </interface>
</node>
"""


def have_dbus() -> bool:
    return shutil.which("dbus-daemon") is not None


class PrivateBus:
    """A ``dbus-daemon`` on a socket in a temp dir (reachable by every local uid)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="stbus-", dir="/tmp"))
        os.chmod(self.dir, 0o755)
        self.socket = self.dir / "bus"
        config = self.dir / "bus.conf"
        config.write_text(_CONFIG.format(socket=self.socket))
        self.proc = subprocess.Popen(
            ["dbus-daemon", "--nofork", "--print-address", f"--config-file={config}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        self.address = self.proc.stdout.readline().strip()
        if not self.address:
            raise RuntimeError("dbus-daemon did not start")

    def env(self) -> dict[str, str]:
        return {"DBUS_SESSION_BUS_ADDRESS": self.address}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class NotificationServer:
    """A scriptable ``org.freedesktop.Notifications`` on a bus, in a thread.

    Attributes:
        shown: id → {"summary", "body", "actions", "hints", "timeout", "app", "icon",
            "sender" (unique name of the Notify caller)} of open ones.
        log: every (member, args) received, in order.
        mode: "ok" (actions, body-markup, body-hyperlinks); "hang" (Notify is never
            answered); "no-actions" (no actions capability); "no-markup" (actions, plain
            bodies).
        keep_after_action: a press leaves the notification shown and sends no
            ``NotificationClosed`` (dunst's context menu); reset to False by :meth:`reset`.
        replace_any_sender: a ``Notify`` whose ``replaces_id`` names a shown notification
            replaces it in place, whoever sends it (GNOME Shell's ``NotifyAsync`` does no
            sender check); False (the default): every ``Notify`` gets a new id. Reset to
            False by :meth:`reset`.
        hold_reply: the reply to each new (not replacing) ``Notify`` is held back until
            another ``Notify`` replaced that id (then sent ``HOLD_AFTER_S`` later), or for
            ``HOLD_MAX_S``: a replacement by a predicted id then surely lands before the
            caller reads its own id (fifth attack pass, H2). Reset to False by :meth:`reset`.
    """

    def __init__(self, address: str) -> None:
        self.address = address
        self.shown: dict[int, dict[str, Any]] = {}
        self.last_seen: dict[int, dict[str, Any]] = {}
        self.log: list[tuple[str, tuple[Any, ...]]] = []
        self.received_at: list[tuple[str, float]] = []  # (member, monotonic) per call
        self.mode = "ok"
        self.close_delay = 0.0  # seconds before CloseNotification is carried out and answered
        # dunst's context menu: after ActionInvoked the notification stays shown (the spec
        # allows it); only a CloseNotification from the client removes it
        self.keep_after_action = False
        self.replace_any_sender = False
        self.hold_reply = False
        self._held: dict[int, Any] = {}  # id → our Notify call whose reply is held back
        # id → button label: the user presses it just as the daemon withdraws the notification
        # (ActionInvoked reaches the daemon before the CloseNotification reply)
        self.press_on_close: dict[int, str] = {}
        self.presses: list[tuple[int, str, bool]] = []  # (id, action key, was still shown)
        self._ready: set[int] = set()  # ids the caller has surely registered (see _ping)
        self._pings: dict[int, tuple[str, int, int]] = {}  # serial → (peer, id, pings left)
        self._syncs: dict[int, threading.Event] = {}  # serial → set when sync()'s Ping returns
        self._next = 1
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self.conn = open_dbus_connection(bus=address)
        reply = self.conn.send_and_get_reply(
            new_method_call(
                DBusAddress(
                    "/org/freedesktop/DBus",
                    bus_name="org.freedesktop.DBus",
                    interface="org.freedesktop.DBus",
                ),
                "RequestName",
                "su",
                (NOTIF_NAME, 4),
            ),
            timeout=5,
        )
        assert reply.body[0] == 1, reply.body
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def reset(self, mode: str = "ok") -> None:
        with self._lock:
            self.shown.clear()
            self.log.clear()
            self.received_at.clear()
            self.mode = mode
            self.close_delay = 0.0
            self.keep_after_action = False
            self.replace_any_sender = False
            self.hold_reply = False
            self.press_on_close.clear()
            self.presses.clear()

    def calls(self, member: str) -> list[tuple[Any, ...]]:
        with self._lock:
            return [args for m, args in self.log if m == member]

    def _send(self, msg: Any) -> None:
        with self._send_lock:
            self.conn.send(msg)

    def _serve(self) -> None:
        while not self._stop:
            try:
                msg = self.conn.receive(timeout=0.2)
            except TimeoutError:
                continue
            except Exception:  # noqa: BLE001 - connection closed at teardown
                return
            if msg.header.message_type in (MessageType.method_return, MessageType.error):
                self._pinged(msg.header.fields.get(HeaderFields.reply_serial))
                continue
            if msg.header.message_type != MessageType.method_call:
                continue
            member = msg.header.fields.get(HeaderFields.member)
            with self._lock:
                self.log.append((member, tuple(msg.body)))
                self.received_at.append((member, time.monotonic()))
                mode = self.mode
            if member == "Notify":
                if mode == "hang":
                    continue
                app, replaces, icon, summary, body, actions, hints, timeout = msg.body
                with self._lock:  # registered and answered together (see press())
                    held = None
                    if self.replace_any_sender and replaces and replaces in self.shown:
                        nid = replaces
                        held = self._held.pop(nid, None)
                    else:
                        nid = self._next
                        self._next += 1
                    self.shown[nid] = {
                        "app": app,
                        "icon": icon,
                        "sender": msg.header.fields.get(HeaderFields.sender),
                        "summary": summary,
                        "body": body,
                        "actions": list(actions),
                        "hints": hints,
                        "timeout": timeout,
                    }
                    self.last_seen[nid] = self.shown[nid]
                    # hold_reply: the held reply goes out once the replacement is answered,
                    # or after HOLD_MAX_S (whichever comes first; the other finds nothing)
                    if held is not None:
                        self._later(HOLD_AFTER_S, nid, held)
                    elif self.hold_reply and nid != replaces:
                        self._held[nid] = msg
                        self._later(HOLD_MAX_S, nid, None)
                        continue
                    self._send(new_method_return(msg, "u", (nid,)))
                    self._ping(msg.header.fields.get(HeaderFields.sender), nid, PINGS)
            elif member == "CloseNotification":
                if self.close_delay:
                    threading.Timer(self.close_delay, self._close, (msg,)).start()
                else:
                    self._close(msg)
            elif member == "GetCapabilities":
                caps = {
                    "no-actions": ["body"],
                    "no-markup": ["actions", "body", "persistence"],
                }.get(mode, ["actions", "body", "body-markup", "body-hyperlinks", "persistence"])
                self._send(new_method_return(msg, "as", (caps,)))
            elif member == "GetServerInformation":
                self._send(
                    new_method_return(
                        msg, "ssss", ("fake-notifyd", "signaltty-tests", "1.0", "1.2")
                    )
                )
            elif member == "Introspect":
                self._send(new_method_return(msg, "s", (_NOTIF_XML,)))
            else:
                self._send(
                    new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "s", (str(member),))
                )

    def _later(self, delay: float, nid: int, msg: Any) -> None:
        timer = threading.Timer(delay, self._release, (nid, msg))
        timer.daemon = True  # a hold that outlives the test must not keep it running
        timer.start()

    def _release(self, nid: int, msg: Any) -> None:
        """Send the held reply to ``msg`` (None: whatever is still held for ``nid``)."""
        with self._lock:
            if msg is None:
                msg = self._held.pop(nid, None)
                if msg is None:
                    return
            if self._stop:
                return
            self._send(new_method_return(msg, "u", (nid,)))
            self._ping(msg.header.fields.get(HeaderFields.sender), nid, PINGS)

    def _ping(self, peer: str | None, nid: int, left: int) -> None:
        """Ping ``peer`` (the Notify caller); ``nid`` becomes visible to :meth:`wait_shown`
        after ``left`` round trips. The caller's connection has then read our Notify reply and
        run what it scheduled on reading it: desktop-notifier maps the server's id to its
        notification only in the coroutine resumed by that reply, and a press that arrived
        before would be dropped (a click no person is fast enough for, but a test is)."""
        if peer is None or left == 0:
            self._ready.add(nid)
            return
        serial = next(self.conn.outgoing_serial)
        self._pings[serial] = (peer, nid, left - 1)
        addr = DBusAddress("/", bus_name=peer, interface="org.freedesktop.DBus.Peer")
        with self._send_lock:
            self.conn.send(new_method_call(addr, "Ping"), serial=serial)

    def _pinged(self, serial: int | None) -> None:
        with self._lock:
            pending = self._pings.pop(serial, None) if serial is not None else None
            if pending is not None:
                self._ping(*pending)
            synced = self._syncs.pop(serial, None) if serial is not None else None
        if synced is not None:
            synced.set()

    def sync(self, peer: str, timeout: float = 10.0) -> None:
        """One ``Peer.Ping`` round trip to ``peer`` (a unique name, e.g. ``shown[id]["sender"]``).

        The bus keeps the order of messages between two connections, and the daemon's
        notification reader handles signals in the order it reads them, before it answers a
        later Ping: when this returns, every signal sent to ``peer`` before has been handled.
        """
        done = threading.Event()
        serial = next(self.conn.outgoing_serial)
        with self._lock:
            self._syncs[serial] = done
        addr = DBusAddress("/", bus_name=peer, interface="org.freedesktop.DBus.Peer")
        with self._send_lock:
            self.conn.send(new_method_call(addr, "Ping"), serial=serial)
        if not done.wait(timeout):
            raise AssertionError(f"{peer} did not answer a Ping within {timeout} s")

    def _close(self, msg: Any) -> None:
        (nid,) = msg.body
        with self._lock:  # ordered against press(): see there
            label = self.press_on_close.pop(nid, None)
            if label is not None and nid in self.shown:
                self._press_locked(nid, label)
            existed = self.shown.pop(nid, None) is not None
            self._send(new_method_return(msg))
            if existed:
                self._signal("NotificationClosed", "uu", (nid, 3))

    def _signal(self, member: str, sig: str, body: tuple[Any, ...]) -> None:
        addr = DBusAddress(NOTIF_PATH, interface=NOTIF_NAME)
        self._send(new_signal(addr, member, sig, body))

    def wait_shown(self, pred: Any = None, timeout: float = 10.0) -> tuple[int, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                for nid, info in self.shown.items():
                    if nid in self._ready and (pred is None or pred(info)):
                        return nid, dict(info)
            time.sleep(0.02)
        raise AssertionError(f"no notification shown; log={self.log!r}")

    def press(self, nid: int, label: str) -> bool:
        """Press the button labelled ``label`` (or "default" for a body click).

        Returns whether ``nid`` was still shown. A press on a notification that is already
        closed still emits the signals (a stale press, as from a server that lost a race).
        The signals are sent under the same lock as a CloseNotification reply, so a press
        of a notification that was still shown reaches the daemon before the reply to any
        withdrawal of it.
        """
        with self._lock:
            return self._press_locked(nid, label)

    def _press_locked(self, nid: int, label: str) -> bool:
        info = self.shown.get(nid) if self.keep_after_action else self.shown.pop(nid, None)
        shown = info is not None
        info = info or self.last_seen[nid]
        actions = info["actions"]
        pairs = dict(zip(actions[1::2], actions[0::2], strict=True))  # label → key
        key = "default" if label == "default" else pairs[label]
        self.presses.append((nid, key, shown))
        self._signal("ActionInvoked", "us", (nid, key))
        if not self.keep_after_action:
            self._signal("NotificationClosed", "uu", (nid, 2))
        return shown

    def expire(self, nid: int) -> None:
        """Close ``nid`` on the server's side (expired), as a real server does."""
        with self._lock:
            self.shown.pop(nid, None)
        self._signal("NotificationClosed", "uu", (nid, 1))

    def close(self) -> None:
        self._stop = True
        self.thread.join(2)
        self.conn.close()
