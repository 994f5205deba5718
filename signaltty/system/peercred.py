"""Peer credentials of a connected Unix socket (system layer: the listener's import point).

The implementation lives in :mod:`signaltty.proto.trust`, because the clients in
``signaltty.proto`` check the daemon's uid too and may not import this layer. Linux reads
``SO_PEERCRED``; macOS ``LOCAL_PEERCRED`` at level ``SOL_LOCAL`` (``struct xucred``), then
libc's ``getpeereid(3)`` through ctypes (also the path for other BSDs). The listener closes
any connection whose uid is not the server's.

Spec: protocol.md §1 "Socket security"; desktop-and-service.md §9.
"""

from __future__ import annotations

from signaltty.proto.trust import _getpeereid_uid, _local_peercred_uid, _xucred_uid, peer_uid

__all__ = ["_getpeereid_uid", "_local_peercred_uid", "_xucred_uid", "peer_uid"]
