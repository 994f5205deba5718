"""``peer_pid``: the pid the kernel recorded for the other end of a Unix socket."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from signaltty.system.peerpid import peer_pid


def test_socketpair_peer_is_this_process() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        assert peer_pid(a) == peer_pid(b) == os.getpid()


def test_accepted_connection_names_the_connecting_process_not_a_claim() -> None:
    with tempfile.TemporaryDirectory(prefix="pp-", dir="/tmp") as d:
        path = str(Path(d) / "s")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with srv:
            srv.bind(path)
            srv.listen(1)
            # the client claims another pid in what it sends; the kernel's word differs
            child = subprocess.Popen(
                [sys.executable, "-c",
                 "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
                 "s.sendall(b'client_pid=1\\n'); s.recv(1)", path],
            )
            try:
                conn, _ = srv.accept()
                with conn:
                    assert conn.recv(64) == b"client_pid=1\n"
                    assert peer_pid(conn) == child.pid
                    conn.sendall(b"x")
            finally:
                child.wait(10)


def test_unconnected_socket_has_no_peer() -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with s:
        assert peer_pid(s) is None
