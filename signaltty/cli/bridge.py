"""``signaltty bridge``: this host's daemon on stdin/stdout, so that ``ssh HOST signaltty
bridge`` is a ``signaltty/1`` connection to HOST's daemon (issue 16 item 1; docs/remote.md).

The bridge is an ordinary client of the daemon: it connects through
:func:`signaltty.proto.connect.open_trusted` (socket directory ours and 0700, server's uid
ours, inside a pane the pane's own daemon), so the daemon sees it with its real pid and
applies its rules to it unchanged. Bytes are relayed as they come, in both directions,
with no framing of their own (an EOF from the client is passed on as a half-close); only
the length of the line being relayed is counted, so a line longer than the protocol's limit
ends the bridge (exit 1) instead of being held.

No daemon listening: it is started the way ``signaltty daemon --detach`` starts one, then
the connection is made — except with ``--no-start`` (what a watching daemon's link runs,
server/remote.py: watching a host must not bring back a daemon the person shut down), which
exits 1 saying no daemon runs. The bridge is started for every ssh connection, so it loads what
the hook reporter loads and ``select`` (no ``socket``, ``json``, ``typing``, ``subprocess``
unless a daemon must be started).

Exit status: 0 when either side closed the connection, 1 on an error (one line on stderr,
which ssh carries back to the client).
"""

from __future__ import annotations

import _socket
import os
import select
import sys

from signaltty.proto import connect, sockpath

# core.limits.MAX_LINE_BYTES (protocol.md §1/§9), not imported: core.limits loads typing;
# the daemon's answers may be longer (proto.client.MAX_SERVER_LINE, which clients enforce)
MAX_LINE_BYTES = 16 * 1024 * 1024
MAX_SERVER_LINE = 32 * 1024 * 1024
CHUNK = 1 << 16
CONNECT_TIMEOUT_S = 5.0
USAGE = (
    "usage: signaltty bridge [--socket PATH] [--no-start]\n"
    "Relay signaltty/1 between stdin/stdout and this host's daemon (started if needed);\n"
    "what `signaltty --host HOST …` runs on HOST through ssh (docs/remote.md).\n"
)


class BridgeError(Exception):
    """Why the bridge stops with exit status 1 (one sentence)."""


def _err(msg: str) -> None:
    sys.stderr.write(f"signaltty bridge: {msg}\n")
    sys.stderr.flush()


class NoDaemon(Exception):
    """``--no-start`` and no daemon listens (exit status 1)."""


def _parse(argv: list[str]) -> tuple[str | None, bool]:
    """``(the --socket value or None, --no-start given)`` from ``argv`` (global options
    included).

    Raises:
        BridgeError: an unknown argument or a missing value.
    """
    flag: str | None = None
    start = True
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--socket" and i + 1 < len(argv):
            flag = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--host"):
            raise BridgeError("--host does not apply to `bridge`: it serves the host it runs on")
        if arg.startswith("--socket="):
            flag = arg.partition("=")[2]
        elif arg == "--no-start":
            start = False
        elif arg != "--json":  # a global option the bridge has no use for
            raise BridgeError(f"unexpected argument {arg!r}")
        i += 1
    return flag, start


def _start_daemon(path: str | None) -> None:
    """Start the daemon in the background as ``signaltty daemon --detach`` does (its output
    goes to our stderr: stdout is the protocol stream), without the variables sshd set for
    this login (``SSH_*``): the daemon and its panes outlive the login, and a forwarded
    ``SSH_AUTH_SOCK`` would hand every pane the person's keys while it lasts.

    Args:
        path: the socket (absolute) when ``--socket`` named it, else None (the default).

    Raises:
        BridgeError: it did not start (its reason is already on stderr).
    """
    import subprocess

    cmd = [sys.executable, "-m", "signaltty", "daemon", "--detach"]
    if path:
        cmd += ["--socket", path]
    # from "/": `python -m` puts the current directory first on sys.path, and a checkout
    # there would shadow the installed package (as `daemon --detach` does for the daemon)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SSH_")}
    code = subprocess.run(
        cmd, stdin=subprocess.DEVNULL, stdout=2, stderr=2, cwd="/", env=env, check=False
    ).returncode
    if code != 0:
        raise BridgeError(f"the daemon did not start (exit status {code})")


def _connect(flag: str | None, start: bool = True) -> _socket.socket:
    """A trusted connection to the daemon, started first when nothing listens (``start``).

    Raises:
        connect.UntrustedServer: the socket is not this user's daemon (never started over).
        connect.ConnectError: still no daemon after starting one.
        BridgeError: the daemon could not be started, or none runs and ``start`` is False.
    """
    path = sockpath.resolve(flag)
    try:
        return connect.open_trusted(path, CONNECT_TIMEOUT_S, _socket.socket)
    except connect.UntrustedServer:
        raise
    except connect.ConnectError:
        if not start:
            raise BridgeError(
                "no signaltty daemon is running on this host (a watching host does not start "
                "one: `signaltty --host HOST status` or the user service does)"
            ) from None
    _start_daemon(path if flag else None)
    return connect.open_trusted(path, CONNECT_TIMEOUT_S, _socket.socket)


class _LineCount:
    """Length of the line being relayed in one direction (no bytes are kept)."""

    def __init__(self, what: str, limit: int) -> None:
        self.what = what
        self.limit = limit
        self.run = 0

    def feed(self, data: bytes) -> None:
        """Account for ``data``.

        Raises:
            BridgeError: a line exceeds the limit.
        """
        first = data.find(b"\n")
        if first < 0:
            self.run += len(data)
        else:
            # lines wholly inside one chunk are shorter than a chunk, far under the limit
            if self.run + first > self.limit:
                self.run += first
            else:
                self.run = len(data) - data.rfind(b"\n") - 1
        if self.run > self.limit:
            raise BridgeError(f"a line from {self.what} exceeds {self.limit} bytes")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def relay(sock: _socket.socket, fd_in: int, fd_out: int) -> None:
    """Copy ``fd_in`` → ``sock`` and ``sock`` → ``fd_out`` until the daemon's side ends
    (an EOF on ``fd_in`` is passed on as a half-close).

    Writes block (the daemon bounds what it queues for a slow reader, and ssh's flow
    control reaches the client), so memory stays at one chunk per direction.

    Raises:
        BridgeError: a line over the limit in either direction.
        OSError: a read or write failed (the other end went away).
    """
    inbound = _LineCount("the client", MAX_LINE_BYTES)
    outbound = _LineCount("the daemon", MAX_SERVER_LINE)
    poller = select.poll()
    sock_fd = sock.fileno()
    poller.register(fd_in, select.POLLIN)
    poller.register(sock_fd, select.POLLIN)
    while True:
        for fd, _events in poller.poll():
            if fd == fd_in:
                data = os.read(fd_in, CHUNK)
                if not data:
                    # the client has asked all it will: pass the EOF on and relay the
                    # answers still coming until the daemon closes (as it does on EOF)
                    poller.unregister(fd_in)
                    sock.shutdown(_socket.SHUT_WR)
                    continue
                inbound.feed(data)
                sock.sendall(data)
            else:
                data = sock.recv(CHUNK)
                if not data:
                    return  # the daemon closed the connection (shutdown, idle, dropped)
                outbound.feed(data)
                _write_all(fd_out, data)


def main(argv: list[str]) -> int:
    """Run the bridge on fds 0 and 1; returns the exit status (see the module doc)."""
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    try:
        sock = _connect(*_parse(argv))
    except (BridgeError, connect.ConnectError) as exc:
        _err(exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
        return 1
    try:
        relay(sock, 0, 1)
    except BridgeError as exc:
        _err(str(exc))
        return 1
    except OSError:
        return 0  # one side went away mid-write: the connection is over, as on EOF
    finally:
        sock.close()
    return 0
