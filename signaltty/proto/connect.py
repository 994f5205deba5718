"""Connecting to the daemon's socket only once it is proven ours (stdlib only, and light).

The one place that orders the checks of :mod:`signaltty.proto.trust` around a connect: the
socket's directory before connecting, the listening process right after, nothing sent on
a refused socket. The blocking client (:class:`signaltty.proto.client.Client`) and the hook
reporter (``signaltty.cli.fastpath``) both connect through :func:`open_trusted`.

It imports ``_socket`` rather than ``socket``: ``socket`` loads ``enum`` and ``selectors``
(~3 ms), which every agent hook would pay (issue 12).

Spec: protocol.md §1–§3; issue 10 §1.
"""

from __future__ import annotations

import _socket
import errno
import os

from signaltty.proto import trust

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    S = TypeVar("S", bound=_socket.socket)


class ConnectError(OSError):
    """The daemon's socket could not be reached (no daemon, wrong path, refused)."""


class UntrustedServer(ConnectError):
    """The socket is not provably the user's own daemon; nothing was sent on it.

    ``strerror`` is one sentence saying why: the socket's directory is another user's or
    has group/other permission bits, the listening process runs as another uid, or (inside
    a pane) it is not the daemon ``$SIGNALTTY_DAEMON`` names.
    """


def check_socket_dir(path: str) -> None:
    """Refuse a socket whose directory is not ours with mode 0700 (before connecting).

    A socket path that does not exist reads as "no daemon" (``ConnectError``, ENOENT),
    whatever its directory: nothing could be sent to it anyway, and ``--socket /nonexistent``
    must say "no such file", not blame ``/`` for its mode.

    Raises:
        ConnectError: the socket or its directory does not exist or cannot be examined.
        UntrustedServer: it is someone else's or open to group/others.
    """
    try:
        os.lstat(path)
        problem = trust.socket_dir_problem(path)
    except OSError as exc:
        raise ConnectError(exc.errno, f"cannot connect to {path}: {exc.strerror}") from exc
    if problem is not None:
        raise UntrustedServer(errno.EACCES, f"not your signaltty daemon: {problem}")


def check_server(sock: _socket.socket, path: str) -> None:
    """Refuse a connected socket whose server runs as another uid, or, inside a pane
    (``$SIGNALTTY_DAEMON``), is not the daemon that started the pane (nothing sent yet).

    Raises:
        UntrustedServer: the peer's uid is not ours or cannot be known; the peer is not
            the pane's daemon, or ``$SIGNALTTY_DAEMON`` is malformed.
    """
    problem = trust.server_problem(sock, path) or trust.daemon_identity_problem(sock, path)
    if problem is not None:
        raise UntrustedServer(errno.EACCES, f"not your signaltty daemon: {problem}")


def open_trusted(path: str, timeout: float | None, factory: Callable[[int, int], S]) -> S:
    """Connect a Unix stream socket to ``path``: its directory is checked before the
    connect, the process listening on it right after (:func:`check_socket_dir`,
    :func:`check_server`).

    Args:
        path: the socket path.
        timeout: seconds for the connect; the returned socket blocks (no timeout).
        factory: makes the socket from ``(family, type)``: ``socket.socket`` for the
            client, ``_socket.socket`` for the hook reporter.

    Raises:
        ConnectError: the socket is missing or refuses the connection.
        UntrustedServer: the socket is not the user's own daemon (nothing was sent).
    """
    check_socket_dir(path)
    sock = factory(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        check_server(sock, path)
    except UntrustedServer:
        sock.close()
        raise
    except OSError as exc:
        sock.close()
        raise ConnectError(exc.errno, f"cannot connect to {path}: {exc.strerror}") from exc
    sock.settimeout(None)
    return sock
