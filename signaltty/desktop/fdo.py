"""Linux desktop notifications: an ``org.freedesktop.Notifications`` client (jeepney) that
obeys a button only from the notification server it sent the notification to.

Trust rule (issue 10 §2). Any connection on the session bus can emit ``ActionInvoked``, and
on a shared bus another user can own ``org.freedesktop.Notifications``. So:

1. Before every ``Notify`` the owner of the well-known name is resolved to its unique name
   (``GetNameOwner``; ``StartServiceByName`` first when nobody owns it, as a call to the
   well-known name would activate it) and that connection's uid is read from the bus
   daemon (``GetConnectionUnixUser``, cached per unique name). A server of another uid is
   refused: it is sent nothing (:class:`ServerRefused`).
1b. With a ``vouch`` (the daemon passes its self-approval check), the owner's pid
   (``GetConnectionUnixProcessID``) must come from outside every signaltty pane: a pane
   process of our own uid that killed the real server and claimed the name is sent nothing,
   and a press is checked the same way again before it runs (issue 10 follow-up, item 2).
2. ``Notify`` (and ``CloseNotification``) are addressed to that unique name, never to the
   well-known name, so no other connection can take the notification in between.
3. The id the server returns is recorded with that unique name. ``ActionInvoked`` and
   ``NotificationClosed`` for the id count only when their sender field — filled in by the
   bus daemon, not by the sender — is that unique name. Unique names are never reused on a
   bus and a connection's uid never changes, so the uid checked in step 1 is the uid of
   whoever pressed. Anything else is ignored and logged (``notify.action_ignored``).

The signal match rule deliberately names no sender: the check is per notification id (a
match rule cannot say "the server that took *this* id"), unicast signals bypass match rules
anyway, and seeing a forgery lets us log it. desktop-notifier's D-Bus backend hides the
sender of a signal and the reply's sender of ``Notify``, so it cannot apply this rule.

4. Action keys are per notification and unguessable: ``allow-<32 hex>`` (128 random bits)
   instead of ``allow``, mapped back on a press. A program that replaces our notification
   by id (``replaces_id``; GNOME Shell and others accept that from any sender) cannot offer
   a button that answers ours without knowing the key (issue 10, third attack pass, A12).
5. Tamper detection: a second connection watches ``Notify`` calls on the bus
   (``BecomeMonitor``, else an ``eavesdrop='true'`` match; dbus-daemon allows both to the
   bus's own uid). A ``Notify`` from any other sender whose ``replaces_id`` is one of our
   live ids marks that notification tampered, whatever its interface (a call may omit
   it), path or destination (the server's unique name, or another name it owns) say
   (issue 10, fourth attack pass, N3): its presses run nothing, it is logged
   (``notify.tampered``) and ``on_tampered(id)`` lets the notifier withdraw it and post a
   fresh one. A bus that allows neither is logged once (``notify.tamper_detection_off``).
   The watch and our replies come on two connections, so a replacement sent as soon as
   our ``Notify`` shows on the bus (its id predicted: servers count up) can be seen
   before we have read the id it replaces (fifth attack pass, H2). A foreign ``Notify``
   naming an id we do not know yet is therefore kept for ``EARLY_S`` seconds (at most
   ``MAX_EARLY``, the oldest go first), and an id our reply brings that such a call
   already named is tampered from the start. ``on_tampered`` runs only once
   :meth:`FdoNotifications.notify` has returned the id, so the caller knows it. The
   first ``Notify`` waits (up to ``WATCH_WAIT_S``) until the watch is on or known off:
   one sent before would not be watched at all.
   Limit: a same-uid monitor can read the keys of our own ``Notify``, so detection, not
   the keys' secrecy, is what guards a replaced notification; that program could also
   drive the person's session in other ways (docs/security.md).

Replies and signals are handled in arrival order by one reader: the id of a ``Notify`` is
recorded when its reply is read, before any later signal is looked at.

A notification whose action ran is withdrawn (``CloseNotification``) unless the server
reported it closed first. The specification lets a server keep a notification after an
action, and dunst does for actions chosen from its context menu: a critical permission
prompt then stayed on screen for good (issue 13 item 7). Its id stays known until the
server confirms the close, so the withdrawal reaches the right server; a second press of
it runs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
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
)
from jeepney.io.asyncio import DBusConnection

from signaltty.desktop.namebirths import MATCH_APPEARED, NameBirths
from signaltty.system.procref import ProcessRef

log = structlog.get_logger("signaltty.notify")

NAME: Final = "org.freedesktop.Notifications"
PATH: Final = "/org/freedesktop/Notifications"
_DBUS: Final = DBusAddress(
    "/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus"
)
_MATCH: Final = f"type='signal',interface='{NAME}',path='{PATH}'"
# Notify calls of every client, for the tamper watch (module docstring, step 5). No
# interface, destination or path in the rule: a call may omit the interface (servers that
# dispatch on the member still run it) and may name the server's unique name or another
# name it owns (issue 10, fourth attack pass, N3).
_WATCH: Final = "type='method_call',member='Notify'"
_MONITORING: Final = DBusAddress(
    "/org/freedesktop/DBus", bus_name="org.freedesktop.DBus",
    interface="org.freedesktop.DBus.Monitoring",
)
PLAIN_KEYS: Final = frozenset({"default"})  # spec-defined keys servers treat specially
CALL_TIMEOUT_S: Final = 3.0
MAX_LOGGED_PER_SENDER: Final = 10  # ignored signals logged per sender (a flood is counted)
MAX_TRACKED_SENDERS: Final = 256
MAX_UID_CACHE: Final = 64
MAX_SENT: Final = 512  # notifications remembered for their buttons (the oldest go first)
# foreign Notify calls naming an id not (yet) ours, kept for a reply read later (step 5, H2)
EARLY_S: Final = 30.0
MAX_EARLY: Final = 1024
WATCH_WAIT_S: Final = 1.0  # the first Notify waits this long for the watch to be on

URGENCY: Final = {"low": 0, "normal": 1, "critical": 2}
SOUND_NAME: Final = "message-new-instant"  # freedesktop sound naming spec


class ServerRefused(Exception):
    """No notification server we may use: none on the bus, or one of another user."""


class CallFailed(Exception):
    """The server or the bus daemon answered a call with a D-Bus error."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name


@dataclass(frozen=True, slots=True)
class Target:
    """The verified notification server for one send.

    Attributes:
        unique_name: its unique bus name (``:1.42``), which owned ``org.freedesktop.
            Notifications`` and runs as our uid.
        capabilities: its ``GetCapabilities`` list (``actions``, ``body-markup``, …).
        server_name: the first field of ``GetServerInformation``.
    """

    unique_name: str
    capabilities: frozenset[str]
    server_name: str

    @property
    def actions(self) -> bool:
        return "actions" in self.capabilities

    @property
    def markup(self) -> bool:
        return "body-markup" in self.capabilities


_OnReply = Callable[[Message], None]
# a notification server's process → None when it may be sent to (the person's), else why not
Vouch = Callable[[ProcessRef], Awaitable[str | None]]


@dataclass(slots=True)
class _Sent:
    server: str  # unique name the Notify call went to
    on_action: Callable[[str], None]
    acted: bool = False  # an action ran; only the withdrawal is left
    keys: dict[str, str] | None = None  # key on the wire → key the caller offered
    tampered: bool = False  # another program replaced it by id: presses run nothing
    returned: bool = False  # notify() gave the id to its caller: on_tampered may name it


def wire_key(key: str) -> str:
    """The key a notification offers for ``key``: ``default`` as it is, any other
    ``<key>-<32 hex>`` (128 random bits; module docstring, step 4)."""
    return key if key in PLAIN_KEYS else f"{key}-{secrets.token_hex(16)}"


class FdoNotifications:
    """One session-bus connection to the notification server (see the module docstring).

    Attributes:
        alive: the connection is up (a lost bus ends it; make a new instance then).
    """

    def __init__(self, uid: int | None = None, vouch: Vouch | None = None) -> None:
        self.uid = os.getuid() if uid is None else uid
        # pid → None (the person's process) or why not (a pane's); step 1b of the docstring
        self._vouch = vouch
        self._vouched: dict[str, str | None] = {}
        # when each connection appeared: binds the server's pid (attack pass 3, A1)
        self._births = NameBirths()
        self.alive = False
        self._conn: DBusConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        # serial → (reply future, hook run by the reader when the reply arrives)
        self._pending: dict[int, tuple[asyncio.Future[Message], _OnReply | None]] = {}
        self._sent: dict[int, _Sent] = {}
        self._uids: dict[str, int] = {}
        self._targets: dict[str, Target] = {}  # unique name → capabilities read once
        self._ignored: dict[str, int] = {}
        self._closing: set[asyncio.Task[None]] = set()  # withdrawals after an action
        # tamper watch (module docstring, step 5): a live id of ours replaced by another
        # sender → on_tampered(id), set by the notifier
        self.on_tampered: Callable[[int], None] | None = None
        # replaces_id → (sender, monotonic s) of foreign Notify calls naming an id we had
        # not recorded when the watch read them (module docstring, step 5, H2)
        self._early: dict[int, tuple[str, float]] = {}
        self.watching: str | None = None  # "monitor", "eavesdrop" or None (off)
        self._watch_conn: DBusConnection | None = None
        self._watch_reader: asyncio.Task[None] | None = None
        # set once the watch is on (or known to be off): a Notify sent before would go
        # unwatched, and a replacement sent at once would be missed (fifth attack pass, H2)
        self._watch_settled = asyncio.Event()

    # ---------------------------------------------------------------- connection

    async def open(self) -> None:
        """Connect to the session bus and subscribe to the server's signals.

        Raises:
            dbus.NoSessionBus: no session bus address. OSError, EOFError, ConnectionError:
            the bus is unreachable. TimeoutError: the bus does not answer.
        """
        from signaltty.desktop.dbus import _open_session_bus

        conn = await _open_session_bus()
        self._conn = conn
        self.alive = True
        self._reader = asyncio.get_running_loop().create_task(
            self._read(conn), name="notify-reader"
        )
        await self._call(_DBUS, "AddMatch", "s", (_MATCH,))
        await self._call(_DBUS, "AddMatch", "s", (MATCH_APPEARED,))
        self._births.start()
        # in the background: sending never waits for (or fails with) the watch
        self._watch_reader = asyncio.get_running_loop().create_task(
            self._start_watch(), name="notify-watch"
        )

    async def _start_watch(self) -> None:
        """Open the tamper watch (module docstring, step 5) and read it; log once when the
        bus refuses. Runs as the ``notify-watch`` task until :meth:`disconnect`."""
        from signaltty.desktop.dbus import _open_session_bus

        try:
            async with asyncio.timeout(CALL_TIMEOUT_S):
                conn = await _open_session_bus()
        except Exception as exc:  # noqa: BLE001 - the notifications still work without it
            _tamper_detection_off(f"no second bus connection: {type(exc).__name__}")
            self._watch_settled.set()
            return
        self._watch_conn = conn
        try:
            mode = await self._become_watcher(conn)
            self._watch_settled.set()
            if mode is None:
                return
            self.watching = mode
            log.info("notify.tamper_watch", mode=mode)
            await self._watch(conn)
        finally:
            self._watch_settled.set()
            self.watching = None
            with contextlib.suppress(Exception):
                conn.writer.close()

    async def _become_watcher(self, conn: DBusConnection) -> str | None:
        """``monitor`` or ``eavesdrop``, whichever the bus grants first; else None (logged)."""
        why = "no reply"
        for mode in ("monitor", "eavesdrop"):
            if mode == "monitor":
                call = new_method_call(_MONITORING, "BecomeMonitor", "asu", ([_WATCH], 0))
            else:
                call = new_method_call(_DBUS, "AddMatch", "s", (f"eavesdrop='true',{_WATCH}",))
            serial = next(conn.outgoing_serial)
            try:
                conn.writer.write(call.serialise(serial))
                async with asyncio.timeout(CALL_TIMEOUT_S):
                    while True:
                        reply = await conn.receive()
                        if reply.header.fields.get(HeaderFields.reply_serial) == serial:
                            break
            except Exception as exc:  # noqa: BLE001
                why = type(exc).__name__
                break
            if reply.header.message_type == MessageType.method_return:
                return mode
            why = str(reply.header.fields.get(HeaderFields.error_name))
        _tamper_detection_off(f"the bus allows neither monitoring nor eavesdropping ({why})")
        return None

    async def _watch(self, conn: DBusConnection) -> None:
        """Read the watched ``Notify`` calls; never answers them (they are not ours)."""
        try:
            while True:
                msg = await conn.receive()
                if msg.header.message_type == MessageType.method_call:
                    self._on_watched(msg)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the bus went away
            log.info("notify.watch_closed", reason=f"{type(exc).__name__}"[:100])

    def _on_watched(self, msg: Message) -> None:
        fields = msg.header.fields
        # interface, destination and path are not checked (a server may dispatch on the
        # member alone, and may be reached by its unique name or another name it owns):
        # any other sender's Notify naming a live id of ours is a replacement (N3). A
        # call meant for another server that happens to name the same id only costs a
        # withdrawal and a fresh notification.
        if (
            fields.get(HeaderFields.member) != "Notify"
            or fields.get(HeaderFields.signature) != "susssasa{sv}i"
        ):
            return
        sender = str(fields.get(HeaderFields.sender) or "")
        ours = getattr(self._conn, "unique_name", None)
        replaces = msg.body[1]
        if not isinstance(replaces, int) or not replaces or sender == ours:
            return
        sent = self._sent.get(replaces)
        if sent is None:
            # maybe an id whose reply we have not read yet (H2): kept for the reply
            self._early.pop(replaces, None)
            if len(self._early) >= MAX_EARLY:
                del self._early[next(iter(self._early))]
            self._early[replaces] = (sender, asyncio.get_running_loop().time())
            return
        self._mark_tampered(replaces, sent, sender)

    def _mark_tampered(self, nid: int, sent: _Sent, sender: str) -> None:
        """``nid`` was replaced by ``sender``: presses run nothing; logged; the caller is
        told once it knows the id (``sent.returned``), else by :meth:`notify`."""
        if sent.tampered or sent.acted:
            return
        sent.tampered = True
        log.warning("notify.tampered", notification_id=nid, sender=sender[:64],
                    server=sent.server)
        if sent.returned:
            self._tell_tampered(nid)

    def _tell_tampered(self, nid: int) -> None:
        if self.on_tampered is not None:
            try:
                self.on_tampered(nid)
            except Exception:  # noqa: BLE001 - a callback must not end the watch
                log.exception("notify.tamper_callback_failed", notification_id=nid)

    def _early_sender(self, nid: int) -> str | None:
        """Who named ``nid`` in a ``Notify`` before we knew it was ours, within ``EARLY_S``
        seconds (the entry is used up); else None."""
        now = asyncio.get_running_loop().time()
        while self._early:  # oldest first: drop the expired
            first = next(iter(self._early))
            if now - self._early[first][1] <= EARLY_S:
                break
            del self._early[first]
        seen = self._early.pop(nid, None)
        return None if seen is None else seen[0]

    def disconnect(self) -> None:
        """Close the connection (idempotent); pending calls fail, ids are forgotten."""
        self.alive = False
        conn, self._conn = self._conn, None
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        self._fail_pending(ConnectionError("notification bus connection closed"))
        self._sent.clear()
        self._early.clear()
        for task in list(self._closing):
            task.cancel()
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.writer.close()
        watch, self._watch_conn = self._watch_conn, None
        if self._watch_reader is not None:
            self._watch_reader.cancel()
            self._watch_reader = None
        if watch is not None:
            with contextlib.suppress(Exception):
                watch.writer.close()

    def _fail_pending(self, exc: BaseException) -> None:
        pending, self._pending = self._pending, {}
        for fut, _ in pending.values():
            if not fut.done():
                fut.set_exception(exc)

    async def _call(
        self,
        addr: DBusAddress,
        member: str,
        sig: str | None,
        body: tuple[Any, ...],
        on_reply: Callable[[Message], None] | None = None,
    ) -> Message:
        """Send a method call and wait for its reply (:data:`CALL_TIMEOUT_S`).

        ``on_reply`` runs in the reader when the reply arrives, before the next message.

        Raises:
            ConnectionError: not connected. TimeoutError: no reply in time.
            CallFailed: an error reply.
        """
        conn = self._conn
        if conn is None or conn.writer.is_closing():
            raise ConnectionError("not connected to the session bus")
        serial = next(conn.outgoing_serial)
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[serial] = (fut, on_reply)
        try:
            conn.writer.write(new_method_call(addr, member, sig, body).serialise(serial))
            async with asyncio.timeout(CALL_TIMEOUT_S):
                reply = await fut
        finally:
            self._pending.pop(serial, None)
        if reply.header.message_type == MessageType.error:
            text = str(reply.body[0]) if reply.body else ""
            raise CallFailed(str(reply.header.fields.get(HeaderFields.error_name)), text[:200])
        return reply

    async def _read(self, conn: DBusConnection) -> None:
        try:
            while True:
                msg = await conn.receive()
                mtype = msg.header.message_type
                if mtype in (MessageType.method_return, MessageType.error):
                    entry = self._pending.get(msg.header.fields.get(HeaderFields.reply_serial, -1))
                    if entry is not None and not entry[0].done():
                        if entry[1] is not None:
                            entry[1](msg)
                        entry[0].set_result(msg)
                elif mtype == MessageType.signal:
                    self._on_signal(msg)
                elif mtype == MessageType.method_call:
                    self._answer_call(conn, msg)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the bus went away
            log.info("notify.bus_closed", reason=f"{type(exc).__name__}: {exc}"[:200])
        finally:
            self.alive = False
            self._fail_pending(ConnectionError("notification bus connection closed"))

    def _answer_call(self, conn: DBusConnection, msg: Message) -> None:
        """We export nothing: ``Peer.Ping`` is answered (servers use it to see that we are
        alive), every other call gets ``UnknownMethod`` so no caller waits for us."""
        if msg.header.flags & 1:  # NO_REPLY_EXPECTED
            return
        fields = msg.header.fields
        if fields.get(HeaderFields.interface) == "org.freedesktop.DBus.Peer" and fields.get(
            HeaderFields.member
        ) == "Ping":
            reply = new_method_return(msg)
        else:
            reply = new_error(
                msg, "org.freedesktop.DBus.Error.UnknownMethod", "s", ("nothing is exported here",)
            )
        with contextlib.suppress(Exception):
            conn.writer.write(reply.serialise(next(conn.outgoing_serial)))

    # ---------------------------------------------------------------- the server

    async def target(self) -> Target:
        """The server to send the next notification to, verified (module docstring, step 1).

        Raises:
            ServerRefused: nobody provides ``org.freedesktop.Notifications``, or its owner
                runs as another uid. ConnectionError, TimeoutError, CallFailed: bus failures.
        """
        owner = await self._owner()
        uid = self._uids.get(owner)
        if uid is None:
            reply = await self._call(_DBUS, "GetConnectionUnixUser", "s", (owner,))
            uid = int(reply.body[0])
            if len(self._uids) >= MAX_UID_CACHE:
                self._uids.clear()
            self._uids[owner] = uid
        if uid != self.uid:
            raise ServerRefused(
                f"the notification server ({owner}) runs as uid {uid}, not as this user "
                f"(uid {self.uid}); nothing is sent to it"
            )
        if self._vouch is not None:
            why = self._vouched.get(owner)
            if owner not in self._vouched:
                why = await self._vouch_for(owner)
                if len(self._vouched) >= MAX_UID_CACHE:
                    self._vouched.clear()
                self._vouched[owner] = why
            if why is not None:
                log.warning("notify.server_refused", server=owner, why=why)
                raise ServerRefused(
                    f"the notification server ({owner}) runs inside a signaltty pane ({why}); "
                    "nothing is sent to it"
                )
        found = self._targets.get(owner)
        if found is None:
            addr = _server(owner)
            caps = await self._call(addr, "GetCapabilities", None, ())
            info = await self._call(addr, "GetServerInformation", None, ())
            found = Target(
                unique_name=owner,
                capabilities=frozenset(str(c) for c in caps.body[0]),
                server_name=str(info.body[0]) if info.body else "",
            )
            self._targets = {owner: found}  # an older server is gone for good
        return found

    async def _vouch_for(self, unique_name: str) -> str | None:
        """None when the connection's process is vouched for, else why not (never raises)."""
        assert self._vouch is not None
        try:
            reply = await self._call(_DBUS, "GetConnectionUnixProcessID", "s", (unique_name,))
            pid = int(reply.body[0])
        except Exception as exc:  # noqa: BLE001 - an untraceable server is refused
            return f"its process cannot be traced: {type(exc).__name__}"
        try:
            return await self._vouch(ProcessRef(pid, born_by=self._births.born_by(unique_name)))
        except Exception as exc:  # noqa: BLE001
            return f"its process cannot be traced: {type(exc).__name__}"

    async def _owner(self) -> str:
        try:
            reply = await self._call(_DBUS, "GetNameOwner", "s", (NAME,))
        except CallFailed:
            # not running: start it the way a call to the well-known name would (activation)
            try:
                await self._call(_DBUS, "StartServiceByName", "su", (NAME, 0))
                reply = await self._call(_DBUS, "GetNameOwner", "s", (NAME,))
            except CallFailed:
                raise ServerRefused(f"no {NAME} on the session bus") from None
        return str(reply.body[0])

    async def notify(
        self,
        target: Target,
        *,
        summary: str,
        body: str,
        actions: list[tuple[str, str]],
        urgency: str,
        expire_ms: int,
        sound: bool,
        on_action: Callable[[str], None],
    ) -> int:
        """Show a notification on ``target``; ``on_action(key)`` runs at most once, for a
        press from ``target`` only, of a key offered here, on a notification nobody else
        replaced (module docstring, steps 3–5).

        Args:
            target: from :meth:`target`.
            summary: plain-text title. body: text as the server should receive it
                (already escaped for ``body-markup`` servers).
            actions: ``(key, label)`` pairs (``default`` = body click). On the wire each
                key but ``default`` gets a fresh random suffix (:func:`wire_key`);
                ``on_action`` receives the key given here.
            urgency: ``low``, ``normal`` or ``critical``.
            expire_ms: 0 never expires, -1 the server's default, else milliseconds.
            sound: ask for the standard message sound.
            on_action: called with the action key.

        Returns:
            The server's notification id.

        Raises:
            ConnectionError, TimeoutError, CallFailed: the send failed.
        """
        hints: dict[str, tuple[str, Any]] = {"urgency": ("y", URGENCY.get(urgency, 1))}
        if sound:
            hints["sound-name"] = ("s", SOUND_NAME)
        keys = {wire_key(key): key for key, _label in actions}
        wired = dict(zip(keys.values(), keys.keys(), strict=True))  # key → its wire key
        flat = [part for key, label in actions for part in (wired[key], label)]
        server = target.unique_name
        if not self._watch_settled.is_set():  # the first send after open(): see __init__
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(WATCH_WAIT_S):
                    await self._watch_settled.wait()

        def register(msg: Message) -> None:
            if (
                msg.header.message_type == MessageType.method_return
                and msg.header.fields.get(HeaderFields.sender) == server
                and len(msg.body) == 1
                and isinstance(msg.body[0], int)
            ):
                if len(self._sent) >= MAX_SENT:  # servers that never report a close
                    del self._sent[next(iter(self._sent))]
                nid = msg.body[0]
                sent = self._sent[nid] = _Sent(server, on_action, keys=keys)
                early = self._early_sender(nid)
                if early is not None:  # replaced before we read its id (step 5, H2)
                    self._mark_tampered(nid, sent, early)

        reply = await self._call(
            _server(server),
            "Notify",
            "susssasa{sv}i",
            ("signaltty", 0, "", summary, body, flat, hints, expire_ms),
            on_reply=register,
        )
        nid = int(reply.body[0])
        sent = self._sent.get(nid)
        if sent is None:  # a reply from elsewhere cannot happen on a real bus
            raise ConnectionError("the Notify reply did not come from the notification server")
        sent.returned = True
        if sent.tampered:  # after our caller has recorded the id it is given now
            asyncio.get_running_loop().call_soon(self._tell_tampered, nid)
        return nid

    async def close_notification(self, nid: int) -> None:
        """Withdraw ``nid`` from the server that shows it; nothing when it is already closed.

        The id is forgotten only after the server answered: a press that raced the
        withdrawal is still delivered (it then answers a decision no longer pending).

        Raises:
            ConnectionError, TimeoutError: the bus failed.
        """
        sent = self._sent.get(nid)
        if sent is None:
            return
        try:
            await self._call(_server(sent.server), "CloseNotification", "u", (nid,))
        except CallFailed:
            pass  # already closed, or the server is gone: either way nothing is shown
        finally:
            self._sent.pop(nid, None)

    # ---------------------------------------------------------------- signals

    def _on_signal(self, msg: Message) -> None:
        fields = msg.header.fields
        member = fields.get(HeaderFields.member)
        sender = fields.get(HeaderFields.sender)
        if member == "NameOwnerChanged" and sender == "org.freedesktop.DBus":  # not a client's
            self._births.observe(tuple(msg.body))
            return
        if (
            fields.get(HeaderFields.interface) != NAME
            or fields.get(HeaderFields.path) != PATH
            or member not in ("ActionInvoked", "NotificationClosed")
        ):
            return
        want = "us" if member == "ActionInvoked" else "uu"
        if fields.get(HeaderFields.signature) != want:
            return
        nid, arg = msg.body
        sent = self._sent.get(nid)
        if sent is None:
            return  # another application's notification, or one of ours already gone
        sender = str(fields.get(HeaderFields.sender) or "")
        if sender != sent.server:
            self._log_ignored(sender, sent.server, member, nid)
            return
        if member == "NotificationClosed":
            del self._sent[nid]
            return
        if sent.acted:
            return  # a second press of a notification the server kept: runs nothing
        if sent.tampered:
            # another program's text is on it now: whatever was pressed, the person did not
            # read our request (A12); the notifier withdraws it and posts a fresh one
            log.warning("notify.action_ignored", reason="the notification was replaced by "
                        "another program", signal=member, notification_id=nid,
                        sender=sender, server=sent.server)
            return
        sent.acted = True
        if self._vouch is not None:
            # checked again at the press, fresh: the server may have moved into a pane's
            # reach since the send (e.g. re-parented to the daemon)
            task = asyncio.get_running_loop().create_task(self._press(sender, nid, sent, str(arg)))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
            return
        self._run_action(nid, sent, str(arg))

    async def _press(self, sender: str, nid: int, sent: _Sent, key: str) -> None:
        why = await self._vouch_for(sender)
        if why is not None:
            self._vouched[sender] = why
            log.warning("notify.action_ignored", sender=sender, member="ActionInvoked",
                        notification_id=nid, why=why)
            return
        if sent.tampered:  # replaced while the press was being checked
            log.warning("notify.action_ignored", reason="the notification was replaced by "
                        "another program", notification_id=nid, sender=sender)
            return
        self._run_action(nid, sent, key)

    def _run_action(self, nid: int, sent: _Sent, wire: str) -> None:
        key = sent.keys.get(wire) if sent.keys is not None else wire
        try:
            if key is None:  # not a key this notification offered (a guessed "allow")
                log.warning("notify.action_not_offered", key=wire[:40], notification_id=nid)
            else:
                sent.on_action(key)
        except Exception:  # noqa: BLE001 - a callback must not end the reader
            log.exception("notify.action_failed", notification_id=nid)
        # Withdraw it: the server may keep it after the action (module docstring). When it
        # closes it itself, its NotificationClosed usually arrives first and this is a no-op.
        task = asyncio.get_running_loop().create_task(self._withdraw_after_action(nid))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _withdraw_after_action(self, nid: int) -> None:
        try:
            await self.close_notification(nid)
        except Exception as exc:  # noqa: BLE001 - the bus went away: nothing is shown then
            log.info("notify.withdraw_failed", notification_id=nid, error=type(exc).__name__)

    def _log_ignored(self, sender: str, server: str, member: str, nid: int) -> None:
        if sender not in self._ignored and len(self._ignored) >= MAX_TRACKED_SENDERS:
            self._ignored.clear()
        count = self._ignored.get(sender, 0) + 1
        self._ignored[sender] = count
        if count <= MAX_LOGGED_PER_SENDER:
            log.warning(
                "notify.action_ignored",
                reason="not sent by the notification server this notification went to",
                signal=member,
                notification_id=nid,
                sender=sender,
                server=server,
                count=count,
            )


_off_logged: list[str] = []  # the tamper watch is off: logged once per daemon


def _tamper_detection_off(reason: str) -> None:
    if not _off_logged:
        _off_logged.append(reason)
        log.warning("notify.tamper_detection_off", reason=reason[:200])


def _server(unique_name: str) -> DBusAddress:
    return DBusAddress(PATH, bus_name=unique_name, interface=NAME)
