"""The blocking client keeps what one ``recv`` brought beyond the first message; ``buffered``
tells a ``select`` loop (``pane attach``) not to wait for the socket then."""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

from signaltty.proto.client import Client


def test_two_messages_in_one_read_are_both_seen_without_the_socket():
    with tempfile.TemporaryDirectory(prefix="cb-", dir="/tmp") as d:
        path = str(Path(d) / "s.sock")
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen(1)
        client = Client(path, timeout=5)
        conn, _ = server.accept()
        try:
            conn.sendall(b'{"type":"event","event":"pty.data"}\n{"type":"event","event":"pane.exited"}\n')
            assert client.read_message(timeout=5)["event"] == "pty.data"
            assert client.buffered()
            assert client.read_message(timeout=0.1)["event"] == "pane.exited"
            assert not client.buffered()
        finally:
            client.close()
            conn.close()
            server.close()
