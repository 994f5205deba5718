"""The D-Bus service ``dev.signaltty.Signaltty`` on the session bus (jeepney, daemon loop).

Every method goes through the daemon's protocol methods (``host.DbusHost``: ``call``,
``answer_as_bus_caller`` with the caller's pid, ``notify`` with source ``dbus``), so D-Bus
answers are checked exactly like socket answers. Failures are logged once and never
stop the daemon; a lost bus is reconnected and the name requested again.
Spec: desktop-and-service.md §7 (methods, signals, properties, errors, access, XML), §2.2
(name released at shutdown), §9 (per-call uid check).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
from collections.abc import Awaitable, Callable
from typing import Any, Final

import structlog
from jeepney import (
    DBusAddress,
    HeaderFields,
    Message,
    MessageType,
    new_error,
    new_method_call,
    new_method_return,
    new_signal,
)
from jeepney.auth import BEGIN, Authenticator
from jeepney.bus import get_bus
from jeepney.io.asyncio import DBusConnection

from signaltty import __version__
from signaltty.desktop.host import DbusHost, Unsubscribe
from signaltty.desktop.namebirths import NameBirths
from signaltty.proto import constants
from signaltty.proto.envelope import SignalttyError
from signaltty.system.procref import ProcessRef

# ``spawn(name, factory)``: runs ``factory()`` as a long-lived task its caller owns
Spawn = Callable[[str, Callable[[], Awaitable[None]]], object]

log = structlog.get_logger("signaltty.dbus")

BUS_NAME: Final = "dev.signaltty.Signaltty"
OBJECT_PATH: Final = "/dev/signaltty/Signaltty"
INTERFACE: Final = "dev.signaltty.Signaltty1"
ERROR_PREFIX: Final = "dev.signaltty.Error."

_DBUS = DBusAddress(
    "/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus"
)
_INTROSPECTABLE: Final = "org.freedesktop.DBus.Introspectable"
_PROPERTIES: Final = "org.freedesktop.DBus.Properties"
_PEER: Final = "org.freedesktop.DBus.Peer"
_E: Final = "org.freedesktop.DBus.Error."

CALL_TIMEOUT_S: Final = 5.0  # every call to the bus daemon
CONNECT_TIMEOUT_S: Final = 5.0
RECONNECT_MAX_S: Final = 30.0
PROPS_COALESCE_S: Final = 0.25  # §7.3: at most one PropertiesChanged per 250 ms
MAX_WRITE_BUFFER: Final = 8 * 1024 * 1024  # signals are dropped above this (slow bus)

_Args = list[tuple[str, str]]  # (name, D-Bus type) per argument

# name → (in arguments, out arguments); the order of §7.5. Out arguments are named too, so
# gdbus/busctl/d-feet show what each value is (issue 13 item 12; docs/desktop.md tables).
METHOD_ARGS: Final[dict[str, tuple[_Args, _Args]]] = {
    "Status": ([], [("status", "a{sv}")]),
    "ListPanes": ([], [("panes", "a(sssssss)")]),
    "GetPane": ([("pane_id", "s")], [("pane_json", "s")]),
    "ListPermissions": ([], [("permissions", "a(ssssssbx)")]),
    "AnswerPermission": (
        [("target", "s"), ("verdict", "s")],
        [("lifecycle", "s"), ("attention", "s")],
    ),
    "MarkSeen": ([("pane_id", "s")], [("attention", "s")]),
    "FocusNextUnread": ([], [("pane_id", "s")]),
    "Notify": (
        [("pane_id", "s"), ("title", "s"), ("body", "s"), ("severity", "s")],
        [("notification_id", "s")],
    ),
}
# name → (in signature, out signature)
METHODS: Final[dict[str, tuple[str, str]]] = {
    name: ("".join(t for _, t in ins), "".join(t for _, t in outs))
    for name, (ins, outs) in METHOD_ARGS.items()
}

_SIGNAL_ARGS: Final[dict[str, list[tuple[str, str]]]] = {
    "LifecycleChanged": [("pane_id", "s"), ("lifecycle", "s"), ("prev", "s"), ("source", "s")],
    "AttentionChanged": [("pane_id", "s"), ("attention", "s"), ("prev", "s"), ("reason", "s")],
    "PermissionRequested": [
        ("decision_id", "s"),
        ("pane_id", "s"),
        ("agent", "s"),
        ("tool_name", "s"),
        ("prompt", "s"),
        ("answerable", "b"),
        ("deadline_unix_ms", "x"),
    ],
    "PermissionResolved": [("decision_id", "s"), ("pane_id", "s"), ("outcome", "s")],
    "NotificationCreated": [
        ("notification_id", "s"),
        ("pane_id", "s"),
        ("title", "s"),
        ("body", "s"),
        ("severity", "s"),
    ],
}

_PROPS: Final = (
    "Version",
    "Protocol",
    "SocketPath",
    "LivePanes",
    "PendingPermissions",
    "AttentionPanes",
)
_PROP_TYPES: Final = {"Version": "s", "Protocol": "s", "SocketPath": "s"}  # others: u
# Fixed for the daemon's life: no PropertiesChanged is ever sent for them, and the
# introspection says so (org.freedesktop.DBus.Property.EmitsChangedSignal = const), so
# proxies (GDBus, sd-bus, Qt) cache them instead of waiting for a change signal.
CONST_PROPS: Final = frozenset({"Version", "Protocol", "SocketPath"})
_EMITS: Final = "org.freedesktop.DBus.Property.EmitsChangedSignal"

_STANDARD_XML: Final = """  <interface name="org.freedesktop.DBus.Introspectable">
    <method name="Introspect"><arg name="xml_data" direction="out" type="s"/></method>
  </interface>
  <interface name="org.freedesktop.DBus.Properties">
    <method name="Get"><arg name="interface_name" direction="in" type="s"/><arg name="property_name" direction="in" type="s"/><arg name="value" direction="out" type="v"/></method>
    <method name="GetAll"><arg name="interface_name" direction="in" type="s"/><arg name="properties" direction="out" type="a{sv}"/></method>
    <method name="Set"><arg name="interface_name" direction="in" type="s"/><arg name="property_name" direction="in" type="s"/><arg name="value" direction="in" type="v"/></method>
    <signal name="PropertiesChanged"><arg name="interface_name" type="s"/><arg name="changed_properties" type="a{sv}"/><arg name="invalidated_properties" type="as"/></signal>
  </interface>
  <interface name="org.freedesktop.DBus.Peer">
    <method name="Ping"/>
    <method name="GetMachineId"><arg name="machine_uuid" direction="out" type="s"/></method>
  </interface>
"""  # noqa: E501 - the standard interfaces, one element a line


def introspection_xml() -> str:
    """The XML of §7.5 with every argument named (methods: :data:`METHOD_ARGS`, signals as
    in §7.2), constant properties annotated, plus the standard interfaces."""
    lines = [
        '<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"',
        ' "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">',
        f'<node name="{OBJECT_PATH}">',
        f'  <interface name="{INTERFACE}">',
    ]
    for name, (ins, outs) in METHOD_ARGS.items():
        args = [(n, t, "in") for n, t in ins] + [(n, t, "out") for n, t in outs]
        inner = "".join(f'<arg name="{n}" direction="{d}" type="{t}"/>' for n, t, d in args)
        lines.append(f'    <method name="{name}">{inner}</method>')
    for name, sargs in _SIGNAL_ARGS.items():
        inner = "".join(f'<arg name="{n}" type="{t}"/>' for n, t in sargs)
        lines.append(f'    <signal name="{name}">{inner}</signal>')
    for prop in _PROPS:
        head = f'    <property name="{prop}" type="{_PROP_TYPES.get(prop, "u")}" access="read"'
        if prop in CONST_PROPS:
            lines.append(f'{head}><annotation name="{_EMITS}" value="const"/></property>')
        else:
            lines.append(f"{head}/>")
    lines.append("  </interface>")
    return "\n".join(lines) + "\n" + _STANDARD_XML + "</node>\n"


def _parent_xml(path: str) -> str:
    """Introspection of an ancestor of the object path: just the next child node."""
    rest = OBJECT_PATH[len(path) :].lstrip("/") if path != "/" else OBJECT_PATH.lstrip("/")
    child = rest.split("/")[0]
    return f'<node name="{path}">\n{_STANDARD_XML}  <node name="{child}"/>\n</node>\n'


def _machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            with open(path) as fh:
                value = fh.read().strip()
            if value:
                return value
    return ""


class _Reply(Exception):
    """A D-Bus error reply: ``name`` and a message."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


class DbusService:
    """Owns the session-bus connection, the well-known name, methods and signals.

    ``name_owned`` is reported by ``server.status``. ``start()`` returns at once; the
    connection loop runs in the background and reconnects when the bus goes away.
    """

    def __init__(self, host: DbusHost) -> None:
        self.host = host
        self.uid = os.getuid()
        self.name_owned = False
        self.unavailable_reason: str | None = None
        self._conn: DBusConnection | None = None
        self._pending: dict[int, asyncio.Future[Message]] = {}
        self._uids: dict[str, int] = {}
        # when each caller's connection appeared: binds its pid (attack pass 3, A1)
        self._births = NameBirths()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._runner: asyncio.Task[None] | None = None
        self._closing = False
        self._props_handle: asyncio.TimerHandle | None = None
        self._props_last: dict[str, int] = {}
        self._props_sent_at = 0.0
        self._logged: set[str] = set()
        self.dropped_signals = 0
        self._unsubscribe: Unsubscribe | None = None
        self._started = False

    # ---------------------------------------------------------------- lifecycle

    def start(self, spawn: Spawn | None = None) -> None:
        """Start the connection loop and observe state events (idempotent).

        ``spawn("dbus", loop)`` runs the loop as a task its caller owns (the daemon's task
        supervisor, which logs and shows a crash); without it, as a task of our own.
        The loop ends by itself only when the bus name belongs to another process.
        """
        if self._started:
            return
        self._started = True
        self._unsubscribe = self.host.observe_events(self._on_event)
        if spawn is not None:
            spawn("dbus", self._run)
        else:
            self._runner = asyncio.get_running_loop().create_task(self._run(), name="dbus")

    async def close(self) -> None:
        """Release the name and close the connection (shutdown; idempotent)."""
        self._closing = True
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._props_handle is not None:
            self._props_handle.cancel()
        if self._runner is not None:
            self._runner.cancel("shutdown")
            with contextlib.suppress(BaseException):
                await self._runner
        conn = self._conn
        if conn is not None and self.name_owned:
            with contextlib.suppress(Exception):
                self._write(new_method_call(_DBUS, "ReleaseName", "s", (BUS_NAME,)), conn)
                async with asyncio.timeout(1.0):
                    await conn.writer.drain()
        self.name_owned = False
        await self._drop_connection()
        for task in list(self._tasks):
            task.cancel()

    def _log_once(self, key: str, event: str, **kw: Any) -> None:
        if key not in self._logged:
            self._logged.add(key)
            log.warning(event, **kw)

    async def _run(self) -> None:
        delay = 1.0
        while not self._closing:
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    conn = await _open_session_bus()
            except Exception as exc:  # noqa: BLE001 - no bus is a normal condition
                self.unavailable_reason = (
                    str(exc) if isinstance(exc, NoSessionBus) else f"{type(exc).__name__}: {exc}"
                )
                self._log_once("connect", "dbus.unavailable", reason=self.unavailable_reason)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RECONNECT_MAX_S)
                continue
            self._conn = conn
            reader = asyncio.get_running_loop().create_task(self._receive_loop(conn))
            try:
                owned = await self._acquire()
            except Exception as exc:  # noqa: BLE001
                owned = False
                self._log_once("acquire", "dbus.unavailable", reason=f"{type(exc).__name__}: {exc}")
            if not owned:
                reader.cancel()
                await self._drop_connection()
                return  # the name belongs to someone else: continue without D-Bus (§7)
            self.name_owned = True
            self._logged.discard("connect")
            log.info("dbus.name_acquired", name=BUS_NAME, unique_name=conn.unique_name)
            delay = 1.0
            with contextlib.suppress(Exception):
                await reader
            if self._closing:
                return
            self.name_owned = False
            log.warning("dbus.name_lost", reason="bus connection closed")
            await self._drop_connection()
            await asyncio.sleep(delay)

    async def _acquire(self) -> bool:
        match_rule = (
            "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
            "member='NameOwnerChanged',path='/org/freedesktop/DBus'"
        )
        await self._call_bus("AddMatch", "s", (match_rule,))
        self._births.start()  # every NameOwnerChanged reaches us from here on
        reply = await self._call_bus("RequestName", "su", (BUS_NAME, 4))  # DO_NOT_QUEUE
        code = reply.body[0]
        if code in (1, 4):  # PRIMARY_OWNER, ALREADY_OWNER
            return True
        self._log_once("taken", "dbus.name_taken", name=BUS_NAME, code=code)
        self.unavailable_reason = "name owned by another process"
        return False

    async def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        self._uids.clear()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("bus connection closed"))
        self._pending.clear()
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.writer.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await conn.writer.wait_closed()

    # ---------------------------------------------------------------- wire

    def _write(self, msg: Message, conn: DBusConnection | None = None) -> int | None:
        """Serialise and queue one message without awaiting; returns its serial."""
        conn = conn or self._conn
        if conn is None or conn.writer.is_closing():
            return None
        serial = int(next(conn.outgoing_serial))
        conn.writer.write(msg.serialise(serial))
        return serial

    async def _call_bus(self, member: str, sig: str, body: tuple[Any, ...]) -> Message:
        """Call a method of the bus daemon and wait for its reply (5 s).

        Raises:
            ConnectionError: not connected. TimeoutError: no reply within 5 s.
            _Reply: the bus answered with an error.
        """
        serial = self._write(new_method_call(_DBUS, member, sig, body))
        if serial is None:
            raise ConnectionError("not connected to the bus")
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[serial] = fut
        try:
            async with asyncio.timeout(CALL_TIMEOUT_S):
                reply = await fut
        finally:
            self._pending.pop(serial, None)
        if reply.header.message_type == MessageType.error:
            raise _Reply(str(reply.header.fields.get(HeaderFields.error_name)), str(reply.body[:1]))
        return reply

    async def _receive_loop(self, conn: DBusConnection) -> None:
        while True:
            msg = await conn.receive()
            mtype = msg.header.message_type
            if mtype in (MessageType.method_return, MessageType.error):
                fut = self._pending.get(msg.header.fields.get(HeaderFields.reply_serial, -1))
                if fut is not None and not fut.done():
                    fut.set_result(msg)
            elif mtype == MessageType.signal:
                if (
                    msg.header.fields.get(HeaderFields.member) == "NameOwnerChanged"
                    and len(msg.body) == 3
                ):
                    name, _old, new = msg.body
                    # the bus's own signal only: any client may send us one by that name
                    if msg.header.fields.get(HeaderFields.sender) == "org.freedesktop.DBus":
                        self._births.observe(tuple(msg.body))
                    if not new:
                        self._uids.pop(name, None)
            elif mtype == MessageType.method_call:
                task = asyncio.get_running_loop().create_task(self._handle(msg))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    # ---------------------------------------------------------------- dispatch

    async def _handle(self, msg: Message) -> None:
        fields = msg.header.fields
        try:
            sig, body = await self._dispatch(msg)
            reply = new_method_return(msg, sig, body)
        except _Reply as exc:
            reply = new_error(msg, exc.name, "s", (exc.message,))
        except SignalttyError as exc:
            reply = new_error(msg, ERROR_PREFIX + exc.code, "s", (exc.message,))
        except Exception as exc:
            log.exception("dbus.method_failed", member=fields.get(HeaderFields.member))
            reply = new_error(
                msg, ERROR_PREFIX + "INTERNAL", "s", (f"internal error: {type(exc).__name__}",)
            )
        if msg.header.flags & 1:  # NO_REPLY_EXPECTED
            return
        try:
            self._write(reply)
        except Exception:
            log.exception("dbus.reply_failed")

    async def _dispatch(self, msg: Message) -> tuple[str, tuple[Any, ...]]:
        fields = msg.header.fields
        path = fields.get(HeaderFields.path, "")
        iface = fields.get(HeaderFields.interface)
        member = fields.get(HeaderFields.member, "")
        sig = fields.get(HeaderFields.signature, "")
        if iface == _PEER:
            return self._peer(member, sig)
        known_parent = path == "/" or (OBJECT_PATH.startswith(path + "/") and path != OBJECT_PATH)
        if path != OBJECT_PATH and not known_parent:
            raise _Reply(_E + "UnknownObject", f"no object at path {path}")
        if iface == _INTROSPECTABLE or (iface is None and member == "Introspect"):
            if member != "Introspect":
                raise _Reply(_E + "UnknownMethod", f"unknown method {member}")
            _check_sig(sig, "")
            return "s", (introspection_xml() if path == OBJECT_PATH else _parent_xml(path),)
        if known_parent:
            raise _Reply(_E + "UnknownMethod", f"no interface {iface} at path {path}")
        if iface == _PROPERTIES:
            return self._properties(member, sig, msg.body)
        if iface not in (INTERFACE, None):
            raise _Reply(_E + "UnknownInterface", f"unknown interface {iface}")
        spec = METHODS.get(member)
        if spec is None:
            raise _Reply(_E + "UnknownMethod", f"unknown method {member}")
        _check_sig(sig, spec[0])
        sender = fields.get(HeaderFields.sender)
        await self._check_caller(sender)
        handler: Callable[..., Awaitable[tuple[Any, ...]]] = getattr(self, "_m_" + member)
        if member in ("AnswerPermission", "Notify"):
            return spec[1], await handler(sender, *msg.body)  # the guard needs the caller
        return spec[1], await handler(*msg.body)

    def _peer(self, member: str, sig: str) -> tuple[str, tuple[Any, ...]]:
        _check_sig(sig, "")
        if member == "Ping":
            return "", ()
        if member == "GetMachineId":
            return "s", (_machine_id(),)
        raise _Reply(_E + "UnknownMethod", f"unknown method {member}")

    async def _check_caller(self, sender: str | None) -> None:
        if not sender:
            raise _Reply(_E + "AccessDenied", "caller unknown")
        uid = self._uids.get(sender)
        if uid is None:
            try:
                reply = await self._call_bus("GetConnectionUnixUser", "s", (sender,))
            except Exception as exc:  # noqa: BLE001
                raise _Reply(_E + "AccessDenied", f"cannot verify caller: {exc}") from None
            uid = int(reply.body[0])
            self._uids[sender] = uid
        if uid != self.uid:
            raise _Reply(_E + "AccessDenied", "caller belongs to another user")

    # ---------------------------------------------------------------- properties

    def _prop_values(self) -> dict[str, Any]:
        counts = self.host.counts()
        return {
            "Version": __version__,
            "Protocol": constants.PROTOCOL,
            "SocketPath": self.host.socket_path,
            "LivePanes": counts.live,
            "PendingPermissions": counts.pending_permissions,
            "AttentionPanes": counts.attention,
        }

    def _properties(
        self, member: str, sig: str, body: tuple[Any, ...]
    ) -> tuple[str, tuple[Any, ...]]:
        if member == "Get":
            _check_sig(sig, "ss")
            iface, name = body
            if iface not in (INTERFACE, "") or name not in _PROPS:
                raise _Reply(_E + "UnknownProperty", f"unknown property {iface}.{name}")
            value = self._prop_values()[name]
            return "v", ((_PROP_TYPES.get(name, "u"), value),)
        if member == "GetAll":
            _check_sig(sig, "s")
            if body[0] not in (INTERFACE, ""):
                return "a{sv}", ({},)
            return "a{sv}", (
                {k: (_PROP_TYPES.get(k, "u"), v) for k, v in self._prop_values().items()},
            )
        if member == "Set":
            _check_sig(sig, "ssv")
            raise _Reply(_E + "PropertyReadOnly", f"property {body[1]} is read-only")
        raise _Reply(_E + "UnknownMethod", f"unknown method {member}")

    def _schedule_props(self) -> None:
        if self._props_handle is not None or not self.name_owned:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, self._props_sent_at + PROPS_COALESCE_S - loop.time())
        self._props_handle = loop.call_later(delay, self._flush_props)

    def _flush_props(self) -> None:
        self._props_handle = None
        self._props_sent_at = asyncio.get_running_loop().time()
        values = self._prop_values()
        changed = {
            k: ("u", values[k])
            for k in ("LivePanes", "PendingPermissions", "AttentionPanes")
            if self._props_last.get(k) != values[k]
        }
        if not changed:
            return
        self._props_last.update({k: v[1] for k, v in changed.items()})
        self._emit(_PROPERTIES, "PropertiesChanged", "sa{sv}as", (INTERFACE, changed, []))

    # ---------------------------------------------------------------- signals

    def _emit(self, iface: str, member: str, sig: str, body: tuple[Any, ...]) -> None:
        conn = self._conn
        if conn is None or not self.name_owned:
            return
        if conn.writer.transport.get_write_buffer_size() > MAX_WRITE_BUFFER:
            self.dropped_signals += 1
            self._log_once("slow", "dbus.signals_dropped", reason="bus is not reading")
            return
        try:
            self._write(new_signal(DBusAddress(OBJECT_PATH, interface=iface), member, sig, body))
        except Exception:  # noqa: BLE001
            self._log_once("emit", "dbus.signal_failed", member=member)

    def _on_event(self, seq: int, name: str, payload: dict[str, Any]) -> None:
        """Bus observer: state events → D-Bus signals (§7.2) and property changes (§7.3)."""
        if self._conn is None or not self.name_owned:
            return
        sig = _signal_for(name, payload)
        if sig is not None:
            self._emit(INTERFACE, sig[0], "".join(t for _, t in _SIGNAL_ARGS[sig[0]]), sig[1])
        if name.startswith(("agent.", "attention.", "decision.", "pane.")):
            self._schedule_props()

    # ---------------------------------------------------------------- methods

    async def _m_Status(self) -> tuple[Any, ...]:
        st = await self.host.call("server.status", {})
        counts = self.host.counts()
        values = {
            "version": ("s", st["version"]),
            "protocol": ("s", st["protocol"]),
            "instance_id": ("s", st["instance_id"]),
            "pid": ("u", st["pid"]),
            "uptime_s": ("t", int(st["uptime_s"])),
            "socket": ("s", st["socket"]),
            "workspaces": ("u", st["workspaces"]),
            "panes": ("u", st["panes"]),
            "live_panes": ("u", st["live_panes"]),
            "attention_panes": ("u", counts.attention),
            "pending_permissions": ("u", counts.pending_permissions),
            "notifications_mode": ("s", st["notifications"]["mode"]),
            "notifications_available": ("b", bool(st["notifications"]["available"])),
        }
        return (values,)

    async def _m_ListPanes(self) -> tuple[Any, ...]:
        res = await self.host.call("pane.list", {})
        rows = [
            (
                p["id"],
                p["workspace_id"],
                p.get("title") or "",
                (p.get("agent") or {}).get("kind") or "",
                p["lifecycle"],
                p["attention"],
                p.get("last_message") or "",
            )
            for p in res["panes"]
        ]
        return (rows,)

    async def _m_GetPane(self, pane_id: str) -> tuple[Any, ...]:
        res = await self.host.call("pane.get", {"pane_id": pane_id})
        return (json.dumps(res["pane"], separators=(",", ":"), ensure_ascii=False),)

    async def _m_ListPermissions(self) -> tuple[Any, ...]:
        res = await self.host.call("permission.list", {})
        rows = []
        for item in res["permissions"]:
            dec = self.host.pending_decision(item["pane_id"], item["decision_id"])
            deadline = int(dec.deadline * 1000) if dec is not None and dec.deadline else 0
            rows.append(
                (
                    item["decision_id"],
                    item["pane_id"],
                    item.get("pane_title") or "",
                    item.get("agent") or "",
                    item.get("tool_name") or "",
                    item.get("prompt") or "",
                    bool(item["answerable"]),
                    deadline,
                )
            )
        return (rows,)

    async def _m_AnswerPermission(self, sender: str, target: str, verdict: str) -> tuple[Any, ...]:
        """Answer with the caller's pid, so the self-approval guard
        (issue #10 item 3) sees who is calling: a process inside a pane gets
        ``dev.signaltty.Error.FORBIDDEN``; a caller whose pid the bus cannot tell too."""
        # a pane id here, or a watched host's (``devbox/pane_…``); else a decision id
        pane_ref = target.startswith("pane_") or "/pane_" in target
        key = "pane_id" if pane_ref else "decision_id"
        raw = {key: target, "verdict": verdict}
        res = await self.host.answer_as_bus_caller(await self._caller(sender), raw)
        return (res["lifecycle"], res["attention"])

    async def _caller(self, sender: str) -> ProcessRef | None:
        """``GetConnectionUnixProcessID`` of ``sender``, bound by when its connection
        appeared (``namebirths``); None when the bus cannot tell.

        Asked at every answer, never cached: a unique name is one connection, but the
        process holding it may hand it on (fork) and exit; the guard then sees a gone pid,
        or a reused one started after the connection appeared (attack pass 3, A1).
        """
        try:
            reply = await self._call_bus("GetConnectionUnixProcessID", "s", (sender,))
            pid = int(reply.body[0])
        except Exception as exc:  # noqa: BLE001 - any failure: unknown caller, refused
            log.warning("dbus.caller_pid_unknown", error=type(exc).__name__)
            return None
        return ProcessRef(pid, born_by=self._births.born_by(sender)) if pid > 0 else None

    async def _m_MarkSeen(self, pane_id: str) -> tuple[Any, ...]:
        res = await self.host.call("pane.mark_seen", {"pane_id": pane_id})
        return (res["pane"]["attention"],)

    async def _m_FocusNextUnread(self) -> tuple[Any, ...]:
        res = await self.host.call("focus.next_unread", {})
        return (res.get("pane_id") or "",)

    async def _m_Notify(
        self, sender: str, pane_id: str, title: str, body: str, severity: str
    ) -> tuple[Any, ...]:
        from signaltty.proto import params as P  # pydantic stays out of module import time

        raw: dict[str, Any] = {
            "pane_id": pane_id or None,
            "title": title,
            "body": body or None,
            "severity": severity or None,
        }
        try:
            p = P.Notify.model_validate(raw)
        except Exception as exc:  # noqa: BLE001 - pydantic.ValidationError
            raise SignalttyError(
                *_bad_params(exc, {"severity": "info, warning, error or empty"})
            ) from None
        res = await self.host.notify_as_bus_caller(
            await self._caller(sender), p.pane_id, p.title, p.body, p.severity or "info"
        )
        return (res["notification"]["id"],)


class NoSessionBus(ConnectionError):
    """No usable session bus address (the message says why, for the log)."""


def session_bus_socket(env: dict[str, str] | None = None) -> str:
    """The session bus socket to connect to.

    ``DBUS_SESSION_BUS_ADDRESS`` when set; otherwise ``$XDG_RUNTIME_DIR/bus`` when that is
    a socket, as libdbus, sd-bus and GDBus do (a systemd user session always has it).

    Raises:
        NoSessionBus: neither is there, or the address has no Unix socket we can use.
    """
    env = dict(os.environ) if env is None else env
    address = env.get("DBUS_SESSION_BUS_ADDRESS", "").strip()
    if not address:
        runtime = env.get("XDG_RUNTIME_DIR", "")
        candidate = os.path.join(runtime, "bus") if runtime else ""
        with contextlib.suppress(OSError):
            if candidate and stat.S_ISSOCK(os.stat(candidate).st_mode):
                return candidate
        raise NoSessionBus(
            "no session bus: DBUS_SESSION_BUS_ADDRESS is not set"
            + (f" and {candidate} is not a socket" if candidate else " (nor XDG_RUNTIME_DIR)")
        )
    try:
        return str(get_bus(address))
    except (ValueError, RuntimeError, StopIteration) as exc:
        raise NoSessionBus(f"unusable DBUS_SESSION_BUS_ADDRESS ({exc})"[:300]) from None


async def _open_session_bus() -> DBusConnection:
    """Connect, authenticate and say Hello; the socket is closed again on any failure or
    cancellation (jeepney's own helper leaves it open then).

    Raises:
        NoSessionBus: no session bus address (:func:`session_bus_socket`). OSError,
        EOFError: bus unreachable.
    """
    reader, writer = await asyncio.open_unix_connection(session_bus_socket())
    try:
        auth = Authenticator()
        for request in auth:
            writer.write(request)
            await writer.drain()
            data = await reader.read(1024)
            if not data:
                raise EOFError("the bus closed the connection during authentication")
            auth.feed(data)
        writer.write(BEGIN)
        conn = DBusConnection(reader, writer)
        serial = next(conn.outgoing_serial)
        writer.write(new_method_call(_DBUS, "Hello").serialise(serial))
        await writer.drain()
        while True:
            msg = await conn.receive()
            if msg.header.fields.get(HeaderFields.reply_serial) == serial:
                break
        if msg.header.message_type == MessageType.error:
            raise ConnectionError("the bus refused Hello")
        conn.unique_name = msg.body[0]
        return conn
    except BaseException:
        writer.close()
        raise


def _bad_params(exc: Exception, allowed: dict[str, str]) -> tuple[str, str, dict[str, Any]]:
    """``(code, message, details)`` of a ``BAD_PARAMS`` for a pydantic error: the message
    names the argument, what it allows (``allowed`` overrides the library's wording, for
    D-Bus arguments where an empty string means "not given") and the value received."""
    errors: list[dict[str, Any]] = getattr(exc, "errors", lambda: [])()
    if not errors:
        return "BAD_PARAMS", str(exc)[:200], {}
    err = errors[0]
    field = ".".join(str(p) for p in err["loc"]) or "params"
    rule = f"must be {allowed[field]}" if field in allowed else str(err["msg"])
    got = repr(err.get("input"))
    got = got if len(got) <= 60 else got[:59] + "…"
    return "BAD_PARAMS", f"{field}: {rule}, got {got}", {"field": field}


def _check_sig(got: str, want: str) -> None:
    if got != want:
        raise _Reply(_E + "InvalidArgs", f"expected signature '{want}', got '{got}'")


def _signal_for(name: str, payload: dict[str, Any]) -> tuple[str, tuple[Any, ...]] | None:
    """Map one state event to ``(signal, args)`` (§7.2), or ``None``."""
    pane_id = payload.get("pane_id") or ""
    if name.startswith("agent."):
        return "LifecycleChanged", (
            pane_id,
            str(payload.get("lifecycle", "")),
            str(payload.get("prev") or ""),
            str(payload.get("source") or ""),
        )
    if name in ("attention.created", "attention.updated"):
        return "AttentionChanged", (
            pane_id,
            str(payload.get("attention", "")),
            str(payload.get("prev") or ""),
            str(payload.get("cause") or ""),
        )
    if name == "attention.cleared":
        return "AttentionChanged", (
            pane_id,
            "none",
            str(payload.get("prev") or ""),
            str(payload.get("reason") or ""),
        )
    if name == "decision.created":
        dec = payload.get("decision") or {}
        return "PermissionRequested", (
            str(dec.get("id", "")),
            pane_id,
            str(dec.get("agent") or ""),
            str(dec.get("tool_name") or ""),
            str(dec.get("prompt") or ""),
            bool(dec.get("answerable")),
            _unix_ms(dec.get("deadline")),
        )
    if name == "decision.answered":
        option = str(payload.get("option_id") or "")
        outcome = {"once": "allow", "allow": "allow", "deny": "deny"}.get(
            option, f"option:{option}"
        )
        return "PermissionResolved", (str(payload.get("decision_id", "")), pane_id, outcome)
    if name == "decision.cleared":
        return "PermissionResolved", (
            str(payload.get("decision_id", "")),
            pane_id,
            f"cleared:{payload.get('reason') or ''}",
        )
    if name == "notification.created":
        note = payload.get("notification") or {}
        return "NotificationCreated", (
            str(note.get("id", "")),
            str(note.get("pane_id") or ""),
            str(note.get("title") or ""),
            str(note.get("body") or ""),
            str(note.get("severity") or ""),
        )
    return None


def _unix_ms(value: Any) -> int:
    """ISO-8601 timestamp (or None) → Unix milliseconds (0 for none)."""
    if not value:
        return 0
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(str(value)).timestamp() * 1000)
    except ValueError:
        return 0
