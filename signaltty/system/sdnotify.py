"""systemd notify-protocol client over ``$NOTIFY_SOCKET`` (system layer: I/O edge, stdlib only).

Every function is a no-op returning False outside a ``Type=notify`` service, and no error
ever reaches the caller: a lost datagram must not stop the daemon.

Spec: desktop-and-service.md §3.2.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Final

# What the service manager sets for the daemon itself (sd_notify, watchdog, socket
# activation, journal): a program the daemon starts must not inherit it, or it would talk
# to systemd in the daemon's name (protocol.md §5 "Pane environment").
SERVICE_MANAGER_ENV: Final = frozenset(
    {
        "NOTIFY_SOCKET",
        "WATCHDOG_PID",
        "WATCHDOG_USEC",
        "LISTEN_FDS",
        "LISTEN_PID",
        "LISTEN_FDNAMES",
        "INVOCATION_ID",
        "JOURNAL_STREAM",
    }
)

# Bound on a blocking send (seconds): the caller is the event loop thread, and systemd
# normally drains its socket at once.
_SEND_TIMEOUT_S: Final = 1.0


def notify(*messages: str) -> bool:
    """Send ``messages`` as one datagram (newline-joined ``KEY=VALUE`` lines).

    Args:
        messages: assignments such as ``"READY=1"`` or ``"STATUS=listening on /run/…"``.

    Returns:
        True when the datagram was sent; False when ``$NOTIFY_SOCKET`` is unset or empty,
        is neither an absolute path nor ``@abstract``, there is nothing to send, or the
        send failed.

    Raises:
        Nothing.

    Spec: desktop-and-service.md §3.2 (a leading ``@`` means the abstract namespace).
    """
    address = _address()
    if not messages or address is None:
        return False
    try:
        payload = "\n".join(messages).encode("utf-8")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.settimeout(_SEND_TIMEOUT_S)
            sock.sendto(payload, address)
    except (OSError, ValueError):
        return False
    return True


def store_fd(fd: int, name: str) -> bool:
    """``FDSTORE=1`` with ``FDNAME=<name>``: systemd keeps a duplicate of ``fd`` and hands it
    back at the service's next start (``listen_fds``), also after a crash (issue 15 item 2).

    Args:
        name: printable ASCII, no ``:``, at most 255 characters (sd_pid_notify_with_fds(3)).

    Returns:
        As :func:`notify`; False as well for a name out of shape.
    """
    if not name or len(name) > 255 or ":" in name or not name.isascii() or not name.isprintable():
        return False
    return _send(f"FDSTORE=1\nFDNAME={name}".encode(), [fd])


def remove_fd(name: str) -> bool:
    """``FDSTOREREMOVE=1`` with ``FDNAME=<name>``: systemd closes what it keeps under it."""
    if not name or len(name) > 255 or ":" in name or not name.isascii() or not name.isprintable():
        return False
    return _send(f"FDSTOREREMOVE=1\nFDNAME={name}".encode(), [])


def _address() -> str | None:
    """``$NOTIFY_SOCKET`` as a socket address: a path, or ``@name`` in the abstract
    namespace; None when unset or neither."""
    target = os.environ.get("NOTIFY_SOCKET", "")
    if target.startswith("@"):
        return "\0" + target[1:]
    if target.startswith("/"):
        return target
    return None


def _send(payload: bytes, fds: list[int]) -> bool:
    address = _address()
    if address is None:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.settimeout(_SEND_TIMEOUT_S)
            sock.connect(address)
            if fds:
                socket.send_fds(sock, [payload], fds)
            else:
                sock.send(payload)
    except (OSError, ValueError):
        return False
    return True


# the first fd systemd passes (sd_listen_fds(3))
_LISTEN_FDS_START: Final = 3


def listen_fds() -> list[tuple[str, int]]:
    """The fds systemd passed to this process (``LISTEN_PID``/``LISTEN_FDS``/
    ``LISTEN_FDNAMES``): ``[(name, fd)]``, each made close-on-exec; the variables are removed.
    Empty when they are absent, for another pid, or malformed."""
    pid = os.environ.pop("LISTEN_PID", "")
    count = os.environ.pop("LISTEN_FDS", "")
    names = os.environ.pop("LISTEN_FDNAMES", "").split(":")
    if not pid.isdigit() or int(pid) != os.getpid() or not count.isdigit():
        return []
    n = min(int(count), 4096)
    out = []
    for i in range(n):
        fd = _LISTEN_FDS_START + i
        try:
            os.set_inheritable(fd, False)
        except OSError:
            continue
        out.append((names[i] if i < len(names) else "unknown", fd))
    return out


def _one_line(text: str) -> str:
    """Flatten ``text`` so it cannot inject further assignments into the datagram."""
    return " ".join(text.splitlines())


def ready(status: str | None = None) -> bool:
    """Send ``READY=1``, plus ``STATUS=<status>`` in the same datagram when given.

    Args:
        status: e.g. ``"listening on /run/user/1000/signaltty/signaltty.sock"``.

    Returns:
        As :func:`notify`.

    Spec: desktop-and-service.md §2.1 step 8, §3.2.
    """
    if status is None:
        return notify("READY=1")
    return notify("READY=1", "STATUS=" + _one_line(status))


def reloading() -> bool:
    """Send ``RELOADING=1`` with ``MONOTONIC_USEC`` before ``signaltty restart`` replaces the
    image; the new image's ``READY=1`` ends the reload (sd_notify(3), ``Type=notify-reload``
    semantics; the main pid does not change).

    Returns:
        As :func:`notify`.
    """
    usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    return notify("RELOADING=1", f"MONOTONIC_USEC={usec}", "STATUS=restarting")


def stopping(status: str | None = None) -> bool:
    """Send ``STOPPING=1``, plus ``STATUS=<status>`` in the same datagram when given.

    Returns:
        As :func:`notify`.

    Spec: desktop-and-service.md §2.2 (first shutdown step), §3.2.
    """
    if status is None:
        return notify("STOPPING=1")
    return notify("STOPPING=1", "STATUS=" + _one_line(status))


def watchdog() -> bool:
    """Send ``WATCHDOG=1`` (call every :func:`watchdog_interval_s` seconds from a loop timer).

    Returns:
        As :func:`notify`.

    Spec: desktop-and-service.md §3.2.
    """
    return notify("WATCHDOG=1")


def status(text: str) -> bool:
    """Send ``STATUS=<text>`` (newlines in ``text`` become spaces).

    Returns:
        As :func:`notify`.

    Spec: desktop-and-service.md §3.2.
    """
    return notify("STATUS=" + _one_line(text))


def watchdog_interval_s() -> float | None:
    """Return how often to send ``WATCHDOG=1``, in seconds.

    Returns:
        ``WATCHDOG_USEC / 2`` converted to seconds (e.g. 15.0 for ``WatchdogSec=30``), or
        None when ``WATCHDOG_USEC`` is unset, empty, not a positive integer, or
        ``WATCHDOG_PID`` is set to something other than our pid.

    Spec: desktop-and-service.md §3.2.
    """
    pid = os.environ.get("WATCHDOG_PID", "")
    if pid:
        try:
            if int(pid) != os.getpid():
                return None
        except ValueError:
            return None
    try:
        usec = int(os.environ.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    if usec <= 0:
        return None
    return usec / 2 / 1_000_000
