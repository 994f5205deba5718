"""Peer credentials over real Unix sockets (Spec: protocol.md §1 "Socket security")."""

from __future__ import annotations

import os
import socket
import struct
import sys
from pathlib import Path

import pytest

from signaltty.proto import trust
from signaltty.system import peercred


def test_socketpair_reports_own_uid() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        assert peercred.peer_uid(left) == os.getuid()
        assert peercred.peer_uid(right) == os.getuid()


def test_accepted_connection_reports_own_uid(tmp_path: Path) -> None:
    path = os.fspath(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen(1)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(path)
            accepted, _ = server.accept()
            with accepted:
                assert peercred.peer_uid(accepted) == os.getuid()


def test_unconnected_socket_has_no_peer() -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        assert peercred.peer_uid(sock) is None


def test_tcp_socket_has_no_peer_uid() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname()) as client:
            accepted, _ = server.accept()
            with accepted:
                assert peercred.peer_uid(accepted) is None
                assert peercred.peer_uid(client) is None


def test_closed_socket_is_none() -> None:
    left, right = socket.socketpair()
    right.close()
    left.close()
    assert peercred.peer_uid(left) is None


def test_xucred_layout() -> None:
    """The macOS LOCAL_PEERCRED parser: version 0, uid, ngroups, 16 groups (76 bytes)."""
    raw = struct.pack("IIh16I", 0, 501, 2, 20, 12, *([0] * 14))
    assert len(raw) == 76
    assert peercred._xucred_uid(raw) == 501
    assert peercred._xucred_uid(raw[:40]) is None
    assert peercred._xucred_uid(struct.pack("IIh16I", 1, 501, 0, *([0] * 16))) is None


def test_no_mechanism_means_none(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    if hasattr(ctypes.CDLL(None), "getpeereid"):
        pytest.skip("this libc has getpeereid")
    # the module peer_uid reads its constants from (_socket: the hook fast path's import)
    monkeypatch.delattr(trust.socket, "SO_PEERCRED", raising=False)
    monkeypatch.setattr(sys, "platform", "unknown-os")
    left, right = socket.socketpair()
    with left, right:
        assert peercred.peer_uid(left) is None
