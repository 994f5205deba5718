"""Clients of the ``signaltty/1`` socket: a blocking one and an asyncio one (stdlib only).

The blocking client is what the CLI uses, so this module must not import anything outside the
standard library and ``signaltty.proto`` (the hook fast path connects through
:mod:`signaltty.proto.connect` alone). Both clients authenticate the daemon before sending a
byte (:mod:`signaltty.proto.trust`): the socket's directory must be the user's own with mode
0700 and the listening process must run as the user (inside a pane: be the pane's own daemon,
``$SIGNALTTY_DAEMON``), otherwise :class:`UntrustedServer` is raised and nothing is sent.

Either client also takes a :class:`signaltty.proto.sshlink.Remote` instead of a socket path:
the connection is then ``ssh HOST signaltty bridge``, whose bridge makes those checks on
that host (docs/remote.md); a link that ends abnormally raises
:class:`signaltty.proto.sshlink.LinkError` with ssh's reason. Lines from the server are
bounded (``MAX_SERVER_LINE``) either way: a longer one raises :class:`LineTooLong`.
Spec: protocol.md §1–§3; issue 10 §1; issue 16.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
from collections import deque

from signaltty.proto import envelope, trust
from signaltty.proto.connect import (
    ConnectError,
    UntrustedServer,
    check_server,
    check_socket_dir,
    open_trusted,
)
from signaltty.proto.envelope import SignalttyError

# asyncio (~50 ms) and typing (~6 ms) stay out of the hook fast path: annotations are
# strings here (PEP 563), so these names are only needed by type checkers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from typing import Any

    from signaltty.proto.sshlink import Link, Remote

    Target = str | Remote

_ids = itertools.count(1)
# A line from the server: twice the 16 MiB the daemon takes in (protocol.md §1/§9), because
# its answers have no cap of their own (a `pane.read` of 5000 wide lines); what the asyncio
# client always allowed. It bounds what a hostile daemon on another host can make us hold.
MAX_SERVER_LINE = 32 * 1024 * 1024


class LineTooLong(ConnectionError):
    """The server sent a line longer than ``MAX_SERVER_LINE`` (it is not read further)."""


def _too_long(limit: int = MAX_SERVER_LINE) -> LineTooLong:
    return LineTooLong(f"the server sent a line longer than {limit} bytes")


def default_socket(flag: str | None = None) -> str:
    """Resolve the socket path like the daemon does (desktop-and-service.md §1)."""
    from signaltty.proto import sockpath

    return sockpath.resolve(flag)


class Client:
    """Blocking JSONL client on one Unix-socket connection.

    Args:
        path: socket path, or a :class:`~signaltty.proto.sshlink.Remote` (through ssh).
        timeout: seconds for connect (a socket path only); ``None`` blocks forever on reads.

    Raises:
        ConnectError: the socket is missing or refuses the connection.
        UntrustedServer: the socket is not the user's own daemon (see the module doc).
        LinkError: ssh could not be started (a remote).
    """

    def __init__(self, path: Target, timeout: float | None = 5.0) -> None:
        self.path = path
        self._link: Link | None = None
        if isinstance(path, str):
            self._sock = open_trusted(path, timeout, socket.socket)
        else:
            self._link = path.open()
            self._sock = self._link.sock
        self._buf = bytearray()
        # reads of a line not yet complete: joined once its end arrives. Growing one buffer
        # read by read made glibc keep every outgrown copy (9x the line limit in RSS).
        self._parts: list[bytes] = []
        self._parts_len = 0
        self.events: deque[dict[str, Any]] = deque()

    def close(self) -> None:
        """Close the connection (idempotent; through ssh: ssh is reaped too)."""
        self._sock.close()
        if self._link is not None:
            self._link.close()

    def verdict_problem(self) -> str | None:
        """Why a verdict from this server must not be obeyed, or None when it may be
        (:func:`signaltty.proto.trust.verdict_source_problem`: ``$SIGNALTTY_DAEMON``, or else
        the server is one of this process's ancestors, still alive with that pid; never a
        server on another host). Raises nothing."""
        if not isinstance(self.path, str):
            return "the server is on another host"
        return trust.verdict_source_problem(self._sock, self.path)

    def _link_ended(self, exc: BaseException | None = None) -> None:
        """Raise the ssh link's failure when it ended badly (else return: a clean EOF)."""
        if self._link is not None:
            failure = self._link.ended_badly()
            if failure is not None:
                raise failure from exc

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def fileno(self) -> int:
        """The socket's fd (for ``select``)."""
        return self._sock.fileno()

    def send(self, method: str, params: dict[str, Any] | None = None) -> str:
        """Send a request without waiting; return its id."""
        req_id = f"c{os.getpid()}-{next(_ids)}"
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            self._sock.sendall(envelope.encode(envelope.request(req_id, method, clean)))
        except OSError as exc:
            self._link_ended(exc)
            raise
        return req_id

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return its ``result``; events read meanwhile go to ``events``.

        Raises:
            SignalttyError: the server answered ``ok: false``.
            ConnectionError: the server closed the connection before answering.
        """
        req_id = self.send(method, params)
        while True:
            msg = self.read_message()
            if msg is None:
                raise ConnectionError("server closed the connection")
            if msg.get("type") == "event":
                self.events.append(msg)
                continue
            if msg.get("id") not in (req_id, "?"):
                continue
            if msg.get("ok"):
                return dict(msg.get("result") or {})
            raise envelope.error_from_wire(msg.get("error") or {})

    def buffered(self) -> bool:
        """True when a whole message was already received (``select`` on the socket would not
        report it: it is in this client's buffer, not the kernel's)."""
        return b"\n" in self._buf

    def read_message(self, timeout: float | None = None) -> dict[str, Any] | None:
        """Read the next envelope; ``None`` on EOF.

        Raises:
            TimeoutError: nothing complete arrived within ``timeout`` seconds.
            LineTooLong: a line longer than ``MAX_SERVER_LINE``.
            LinkError: through ssh, the link ended abnormally.
        """
        while True:
            nl = self._buf.find(b"\n")
            if nl >= 0:
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 1]
                return dict(json.loads(line))
            if len(self._buf) + self._parts_len > MAX_SERVER_LINE:
                raise _too_long()
            self._sock.settimeout(timeout)
            try:
                chunk = self._sock.recv(1 << 16)
            except TimeoutError:
                raise TimeoutError("no message") from None
            except OSError as exc:
                self._link_ended(exc)
                raise
            finally:
                self._sock.settimeout(None)
            if not chunk:
                self._link_ended()
                return None
            if b"\n" in chunk:
                self._buf += b"".join([*self._parts, chunk])
                self._parts.clear()
                self._parts_len = 0
            else:
                self._parts.append(chunk)
                self._parts_len += len(chunk)

    def next_event(self, timeout: float | None = None) -> dict[str, Any] | None:
        """Return the next event envelope (queued ones first); ``None`` on EOF."""
        if self.events:
            return self.events.popleft()
        while True:
            msg = self.read_message(timeout)
            if msg is None or msg.get("type") == "event":
                return msg


class AsyncClient:
    """asyncio JSONL client; use ``await AsyncClient.connect(path)``."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        link: Link | None = None,
        limit: int = MAX_SERVER_LINE,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._link = link
        self._limit = limit
        self.events: deque[dict[str, Any]] = deque()

    @classmethod
    async def connect(cls, path: Target, limit: int = MAX_SERVER_LINE) -> AsyncClient:
        """Open a connection to ``path`` after authenticating the daemon (a
        :class:`~signaltty.proto.sshlink.Remote`: through ssh, see the module doc).
        ``limit``: the longest line read from it, bytes (a daemon watching a host it does
        not trust takes less than ``MAX_SERVER_LINE``).

        Raises:
            ConnectError: the socket is missing or refuses the connection.
            UntrustedServer: the socket is not the user's own daemon (see the module doc).
            LinkError: ssh could not be started (a remote).
        """
        import asyncio

        if not isinstance(path, str):
            link = path.open()
            try:
                reader, writer = await asyncio.open_unix_connection(sock=link.sock, limit=limit)
            except BaseException:
                link.close()
                raise
            return cls(reader, writer, link, limit)
        check_socket_dir(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(sock, path)
            check_server(sock, path)
        except UntrustedServer:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            raise ConnectError(exc.errno, f"cannot connect to {path}: {exc.strerror}") from exc
        except BaseException:
            sock.close()
            raise
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=limit)
        return cls(reader, writer, None, limit)

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        self._writer.close()
        # not contextlib.suppress: this module is on the hook fast path, contextlib is not
        try:  # noqa: SIM105
            await self._writer.wait_closed()
        except OSError:
            pass
        if self._link is not None:
            import asyncio

            await asyncio.to_thread(self._link.close)

    async def send(self, method: str, params: dict[str, Any] | None = None) -> str:
        """Send a request without waiting for its response; return its id."""
        req_id = f"a{os.getpid()}-{next(_ids)}"
        self._writer.write(envelope.encode(envelope.request(req_id, method, params)))
        await self._writer.drain()
        return req_id

    def write_nowait(self, data: bytes) -> None:
        """Queue raw bytes without waiting for the transport to drain (a long-lived
        connection's small requests, sent from a callback; the caller bounds how many)."""
        self._writer.write(data)

    async def send_raw(self, data: bytes) -> None:
        """Write raw bytes (tests of bad input)."""
        self._writer.write(data)
        await self._writer.drain()

    async def read_message(self) -> dict[str, Any] | None:
        """Read the next envelope; ``None`` on EOF.

        Raises:
            LineTooLong: a line longer than the client's limit (``MAX_SERVER_LINE``).
            LinkError: through ssh, the link ended abnormally.
        """
        import asyncio

        try:
            line = await self._reader.readline()
        except ValueError:  # asyncio's "separator … limit" for an over-long line
            raise _too_long(self._limit) from None
        if not line and self._link is not None:
            failure = await asyncio.to_thread(self._link.ended_badly)
            if failure is not None:
                raise failure
        if not line:
            return None
        return dict(json.loads(line))

    async def response(self, req_id: str) -> dict[str, Any]:
        """Read until the response for ``req_id`` (events are queued); raw envelope."""
        while True:
            msg = await self.read_message()
            if msg is None:
                raise ConnectionError("server closed the connection")
            if msg.get("type") == "event":
                self.events.append(msg)
                continue
            if msg.get("id") in (req_id, "?"):
                return msg

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Request and return ``result``.

        Raises:
            SignalttyError: ``ok: false``.
        """
        msg = await self.response(await self.send(method, params))
        if msg.get("ok"):
            return dict(msg.get("result") or {})
        raise envelope.error_from_wire(msg.get("error") or {})

    async def next_event(self) -> dict[str, Any] | None:
        """Next event envelope (queued first); ``None`` on EOF."""
        if self.events:
            return self.events.popleft()
        while True:
            msg = await self.read_message()
            if msg is None or msg.get("type") == "event":
                return msg


__all__ = [
    "AsyncClient",
    "Client",
    "ConnectError",
    "LineTooLong",
    "SignalttyError",
    "UntrustedServer",
    "default_socket",
]
