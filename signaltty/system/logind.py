"""logind's delay inhibitor lock: the daemon saves its state before the machine sleeps or stops.

A *delay* lock (``org.freedesktop.login1.Manager.Inhibit("shutdown:sleep", who, why,
"delay")``, which returns a file descriptor) makes logind announce a shutdown or a suspend
with ``PrepareForShutdown(true)`` / ``PrepareForSleep(true)`` and wait — at most its
``InhibitDelayMaxSec``, 5 s by default — until every such descriptor is closed. On
``PrepareForSleep(false)`` (resumed) or ``PrepareForShutdown(false)`` (cancelled) a new lock
is taken. Source of the rules: the freedesktop logind D-Bus API and its "Inhibitor Locks"
page (systemd documentation).

Everything here is blocking and runs in one dedicated thread (:meth:`Inhibitor.serve`):
jeepney's asyncio connection cannot receive file descriptors, its blocking one can
(``enable_fds=True``). The caller's ``on_prepare(kind, active)`` runs in that thread and
must block until the action is done (the daemon hands it to its event loop and waits).
Spec: desktop-and-service.md §3.4.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from typing import Any, Final

import structlog
from jeepney import DBusAddress, HeaderFields, MatchRule, MessageType, new_method_call
from jeepney.bus import get_bus
from jeepney.fds import FileDescriptor, fds_buf_size
from jeepney.io.blocking import DBusConnection, prep_socket
from jeepney.low_level import Parser

log = structlog.get_logger("signaltty.logind")

LOGIND: Final = "org.freedesktop.login1"
LOGIND_PATH: Final = "/org/freedesktop/login1"
MANAGER: Final = "org.freedesktop.login1.Manager"
WHAT: Final = "shutdown:sleep"
WHY: Final = "save pane state"
SIGNALS: Final = {"PrepareForSleep": "sleep", "PrepareForShutdown": "shutdown"}
# How often the serving thread looks at its stop flag (seconds).
RECEIVE_S: Final = 0.5
CALL_TIMEOUT_S: Final = 5.0
_REASON_MAX: Final = 200
_BUS = DBusAddress(
    "/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus"
)
_MANAGER = DBusAddress(LOGIND_PATH, bus_name=LOGIND, interface=MANAGER)

PrepareCallback = Callable[[str, bool], None]


class _CloexecConnection(DBusConnection):  # type: ignore[misc]  # jeepney is untyped
    """jeepney's blocking connection, receiving descriptors close-on-exec.

    A pane spawned (``posix_spawn``, which keeps inheritable descriptors) between the
    receipt of the lock and a later ``set_inheritable(False)`` would inherit it, and logind
    would wait for that program too: ``MSG_CMSG_CLOEXEC`` leaves no such moment. Overrides
    jeepney 0.8/0.9's ``_read_with_fds`` (the project pins ``jeepney<1``).
    """

    parser: Parser
    sock: socket.socket

    def _read_with_fds(self) -> tuple[bytes, list[FileDescriptor]]:
        nbytes = self.parser.bytes_desired()
        data, ancdata, flags, _ = self.sock.recvmsg(
            nbytes, fds_buf_size(), socket.MSG_CMSG_CLOEXEC
        )
        if flags & socket.MSG_CTRUNC:
            self.close()
            raise RuntimeError("unable to receive all file descriptors")
        if not data:
            raise ConnectionResetError("the system bus closed the connection")
        return data, FileDescriptor.from_ancdata(ancdata)


def _connect() -> DBusConnection:
    sock = prep_socket(get_bus("SYSTEM"), enable_fds=True, timeout=CALL_TIMEOUT_S)
    return _CloexecConnection(sock, enable_fds=True)


class Unavailable(Exception):
    """No lock can be had: no system bus, no logind on it, or logind refused.

    ``str()`` is the reason shown in ``server.status.logind.reason`` (one line, ≤ 200 chars).
    """


def _short(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= _REASON_MAX else text[: _REASON_MAX - 1] + "…"


class Inhibitor:
    """One connection to logind holding (at most) one delay lock.

    Args:
        on_prepare: called in the serving thread with ``("sleep" | "shutdown", active)``
            for every genuine signal (sent by the owner of ``org.freedesktop.login1``),
            before the lock is closed (``active``) or re-taken (not ``active``). An
            exception it raises is logged; the lock is closed anyway.
        who: the ``who`` string logind shows in ``systemd-inhibit --list``.
    """

    def __init__(self, on_prepare: PrepareCallback, *, who: str = "signaltty") -> None:
        self.on_prepare = on_prepare
        self.who = who
        self.state = "starting"  # starting | inhibiting | released | unavailable | stopped
        self.reason: str | None = None
        self.locks_taken = 0
        self.last_signal: str | None = None
        self._fd: int | None = None
        self._owner: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def status(self) -> dict[str, Any]:
        """``{state, reason: str | null, locks_taken: int, last_signal: str | null}``."""
        with self._lock:
            return {
                "state": self.state,
                "reason": self.reason,
                "locks_taken": self.locks_taken,
                "last_signal": self.last_signal,
            }

    def stop(self) -> None:
        """Ask :meth:`serve` to return (within ``RECEIVE_S``); the lock is closed then."""
        self._stop.set()

    def serve(self) -> None:
        """Connect, take the lock and follow logind's signals until :meth:`stop` (blocking).

        The system bus is ``$DBUS_SYSTEM_BUS_ADDRESS`` or ``/run/dbus/system_bus_socket``.

        Raises:
            Unavailable: no system bus, no logind, or the first ``Inhibit`` refused (also
                when a lock cannot be taken again after a resume).
            OSError, EOFError, TimeoutError: the connection failed after a lock was taken.
        """
        try:
            conn = _connect()
        except Exception as exc:  # noqa: BLE001 - jeepney raises several types; all mean "no bus"
            self._set("unavailable", _short(f"no system bus: {type(exc).__name__}: {exc}"))
            raise Unavailable(self.reason) from None
        try:
            with conn:
                rule = MatchRule(type="signal", interface=MANAGER, path=LOGIND_PATH)
                for member in SIGNALS:
                    rule_text = MatchRule(
                        type="signal", sender=LOGIND, interface=MANAGER, member=member
                    ).serialise()
                    self._call(conn, new_method_call(_BUS, "AddMatch", "s", (rule_text,)))
                with conn.filter(rule, bufsize=64) as queue:
                    self._take(conn)
                    while not self._stop.is_set():
                        try:
                            msg = conn.recv_until_filtered(queue, timeout=RECEIVE_S)
                        except TimeoutError:
                            continue
                        self._handle(conn, msg)
        finally:
            self._close_lock()
            with self._lock:
                if self.state in ("inhibiting", "released", "starting"):
                    self.state = "stopped"

    # ------------------------------------------------------------ internals

    def _set(self, state: str, reason: str | None = None) -> None:
        with self._lock:
            self.state, self.reason = state, reason

    def _call(self, conn: DBusConnection, msg: Any) -> Any:
        reply = conn.send_and_get_reply(msg, timeout=CALL_TIMEOUT_S)
        if reply.header.message_type == MessageType.error:
            name = reply.header.fields.get(HeaderFields.error_name, "?")
            text = reply.body[0] if reply.body and isinstance(reply.body[0], str) else ""
            if name == "org.freedesktop.DBus.Error.ServiceUnknown":
                why = f"{LOGIND} is not on the system bus"
            else:
                why = f"refused: {name}: {text}"
            self._set("unavailable", _short(why))
            raise Unavailable(self.reason)
        return reply

    def _take(self, conn: DBusConnection) -> None:
        call = new_method_call(_MANAGER, "Inhibit", "ssss", (WHAT, self.who, WHY, "delay"))
        reply = self._call(conn, call)
        if reply.header.fields.get(HeaderFields.signature) != "h":
            self._set("unavailable", "Inhibit answered without a file descriptor")
            raise Unavailable(self.reason)
        fd = reply.body[0].to_raw_fd()
        os.set_inheritable(fd, False)  # already so (MSG_CMSG_CLOEXEC); stated for the reader
        owner = self._call(conn, new_method_call(_BUS, "GetNameOwner", "s", (LOGIND,)))
        with self._lock:
            self._close_lock_locked()
            self._fd = fd
            self._owner = owner.body[0] if owner.body else None
            self.locks_taken += 1
            self.state, self.reason = "inhibiting", None
        log.info("logind.inhibiting", what=WHAT, locks_taken=self.locks_taken)

    def _handle(self, conn: DBusConnection, msg: Any) -> None:
        h = msg.header
        kind = SIGNALS.get(h.fields.get(HeaderFields.member, ""))
        if kind is None or h.fields.get(HeaderFields.signature) != "b":
            return
        # a unicast signal from any process on the bus reaches us whatever our match rules
        # say: only logind's own connection may make us release the lock
        if h.fields.get(HeaderFields.sender) != self._owner:
            log.warning("logind.foreign_signal", sender=str(h.fields.get(HeaderFields.sender)))
            return
        active = bool(msg.body[0])
        member = h.fields[HeaderFields.member]
        with self._lock:
            self.last_signal = f"{member}({'true' if active else 'false'})"
        log.info("logind.signal", signal=member, active=active)
        try:
            self.on_prepare(kind, active)
        except Exception:  # noqa: BLE001 - the lock must be released whatever happened
            log.exception("logind.prepare_failed", kind=kind, active=active)
        if active:
            self._close_lock()
            self._set("released")
        elif self._fd is None:
            self._take(conn)

    def _close_lock(self) -> None:
        with self._lock:
            self._close_lock_locked()

    def _close_lock_locked(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
