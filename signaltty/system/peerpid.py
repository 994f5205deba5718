"""The pid on the other end of a connected Unix socket (system layer: I/O edge, stdlib only).

The self-approval guard (issue #10 item 3) traces the process that answers a permission
back to a pane; the pid the kernel recorded is the only one a client cannot lie about (a
``client_pid`` in the request is a claim). Linux: ``SO_PEERCRED`` (``struct ucred {pid_t pid;
uid_t uid; gid_t gid;}``), fixed when the client called ``connect``. macOS: ``LOCAL_PEERPID``
at level ``SOL_LOCAL``. Elsewhere: unknown.
"""

from __future__ import annotations

import socket
import struct
import sys
from typing import Final

_UCRED: Final = struct.Struct("iII")
_SOL_LOCAL: Final = 0
_LOCAL_PEERPID: Final = getattr(socket, "LOCAL_PEERPID", 0x002)
_PID: Final = struct.Struct("i")


def peer_pid(sock: socket.socket) -> int | None:
    """Return the pid of the process that connected ``sock`` (an accepted ``AF_UNIX`` socket).

    Returns:
        The pid (> 0), or None when the platform offers no mechanism, the socket is not a
        connected Unix socket, or the call fails. Raises nothing.
    """
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    try:
        if so_peercred is not None:
            raw = sock.getsockopt(socket.SOL_SOCKET, so_peercred, _UCRED.size)
            if len(raw) != _UCRED.size:
                return None
            pid = _UCRED.unpack(raw)[0]
        elif sys.platform == "darwin":
            raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID, _PID.size)
            if len(raw) != _PID.size:
                return None
            pid = _PID.unpack(raw)[0]
        else:
            return None
    except OSError:
        return None
    return int(pid) if pid > 0 else None
