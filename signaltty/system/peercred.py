"""Peer credentials of a connected Unix socket (system layer: I/O edge, stdlib only).

Linux reads ``SO_PEERCRED`` (``struct ucred {pid_t pid; uid_t uid; gid_t gid;}``). macOS
has no ``SO_PEERCRED``: it reads ``LOCAL_PEERCRED`` at level ``SOL_LOCAL`` (``struct
xucred``, whose uid is the peer's effective uid) and, should that fail, calls libc's
``getpeereid(3)`` through ctypes (also the path for other BSDs). The listener closes any
connection whose uid is not the server's, and also one whose uid is unknown (None).

Spec: protocol.md §1 "Socket security"; desktop-and-service.md §9.
"""

from __future__ import annotations

import socket
import struct
import sys
from typing import Final

# Linux <sys/socket.h>: struct ucred {pid_t pid; uid_t uid; gid_t gid;}; uid_t is unsigned.
_UCRED: Final = struct.Struct("iII")
# Linux fills ucred with uid (uid_t)-1 when there is no peer: an unconnected socket or a
# socket of another family (TCP).
_NO_UID: Final = 0xFFFFFFFF
# macOS <sys/un.h> and <sys/ucred.h>.
_SOL_LOCAL: Final = 0
_LOCAL_PEERCRED: Final = getattr(socket, "LOCAL_PEERCRED", 0x001)
_XUCRED_VERSION: Final = 0
# struct xucred {u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16];}
_XUCRED: Final = struct.Struct("IIh16I")


def peer_uid(sock: socket.socket) -> int | None:
    """Return the uid of the process on the other end of a connected ``AF_UNIX`` socket.

    Args:
        sock: an accepted (or connected / socketpair) Unix stream socket.

    Returns:
        The peer's uid (the effective uid on macOS), or None when the platform offers no
        mechanism, the socket is not a connected Unix socket (Linux then reports uid
        ``(uid_t)-1``), or the call fails.

    Raises:
        Nothing.

    Spec: protocol.md §1 "Socket security" (Linux ``SO_PEERCRED``, macOS
    ``LOCAL_PEERCRED``/``getpeereid``).
    """
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is not None:
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, so_peercred, _UCRED.size)
        except OSError:
            return None
        if len(raw) != _UCRED.size:
            return None
        _pid, uid, _gid = _UCRED.unpack(raw)
        return None if uid == _NO_UID else int(uid)
    if sys.platform == "darwin":
        uid = _local_peercred_uid(sock)
        if uid is not None:
            return uid
    return _getpeereid_uid(sock)


def _local_peercred_uid(sock: socket.socket) -> int | None:
    """Read the peer uid with ``getsockopt(SOL_LOCAL, LOCAL_PEERCRED)`` (macOS)."""
    try:
        raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, _XUCRED.size)
    except OSError:
        return None
    return _xucred_uid(raw)


def _xucred_uid(raw: bytes) -> int | None:
    """Return ``cr_uid`` of a packed ``struct xucred``, or None for a short or unknown layout."""
    if len(raw) < _XUCRED.size:
        return None
    version, uid, *_groups = _XUCRED.unpack_from(raw)
    if version != _XUCRED_VERSION:
        return None
    return int(uid)


def _getpeereid_uid(sock: socket.socket) -> int | None:
    """Call libc ``getpeereid(fd, &euid, &egid)`` through ctypes; None if libc lacks it."""
    try:
        import ctypes
    except ImportError:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        getpeereid = getattr(libc, "getpeereid", None)
        if getpeereid is None:
            return None
        euid = ctypes.c_uint32()
        egid = ctypes.c_uint32()
        if getpeereid(sock.fileno(), ctypes.byref(euid), ctypes.byref(egid)) != 0:
            return None
    except OSError:
        return None
    return None if euid.value == _NO_UID else int(euid.value)
