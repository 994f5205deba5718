"""What ``--host`` hands to ssh (issue 16): host strings as ssh takes them, the ones it must
never get, ``SIGNALTTY_SSH_COMMAND`` / ``SIGNALTTY_REMOTE_COMMAND``; a link whose ssh
fails says why; a hostile server's endless line is not held (the blocking and asyncio
clients)."""

from __future__ import annotations

import asyncio
import socket
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from signaltty.proto.client import MAX_SERVER_LINE, AsyncClient, Client
from signaltty.proto.sshlink import BadHost, LinkError, Remote, parse_host


@pytest.mark.parametrize(
    ("host", "target", "port"),
    [
        ("devbox", "devbox", None),
        ("me@devbox", "me@devbox", None),
        ("me@devbox.example.org", "me@devbox.example.org", None),
        ("ssh://devbox", "devbox", None),
        ("ssh://me@devbox:2222", "me@devbox", 2222),
        ("ssh://me@devbox:2222/", "me@devbox", 2222),
        ("ssh://[::1]:2200", "::1", 2200),
        ("ssh://me@[fe80::1]", "me@fe80::1", None),
        ("me@devbox:2222", "me@devbox", 2222),
        ("devbox:22", "devbox", 22),
        ("::1", "::1", None),  # a bare IPv6 address is not host:port
        ("fe80::1:22", "fe80::1:22", None),
        ("devbox:", "devbox:", None),  # not digits: ssh's business
    ],
)
def test_host_strings_as_ssh_takes_them(host: str, target: str, port: int | None) -> None:
    assert parse_host(host) == (target, port)


@pytest.mark.parametrize(
    "host",
    [
        "",
        "-oProxyCommand=sh -c id",
        "-p22",
        "ssh://-oProxyCommand=id",
        "ssh://-oProxyCommand=id@host",
        "ssh://me@host:0",
        "ssh://me@host:99999",
        "ssh://me@host:22x",
        "me@host:0",
        "me@host:70000",
        "-me@host:22",
        ":22",
        "ssh://me@host/path",
        "ssh://@host",
        "dev box",
        "dev\nbox",
        "devbox\x1b[2J",
    ],
)
def test_hosts_ssh_must_not_get_are_refused(host: str) -> None:
    with pytest.raises(BadHost):
        parse_host(host)


def test_the_command_line_is_a_list_with_the_overrides() -> None:
    assert Remote("devbox", environ={}).argv == ["ssh", "-T", "devbox", "signaltty", "bridge"]
    env = {
        "SIGNALTTY_SSH_COMMAND": "ssh -F '/tmp/my config' -o ControlMaster=auto",
        "SIGNALTTY_REMOTE_COMMAND": "~/.local/bin/signaltty",
    }
    assert Remote("ssh://me@h:2200", "/run/x y.sock", environ=env).argv == [
        "ssh",
        "-F",
        "/tmp/my config",
        "-o",
        "ControlMaster=auto",
        "-T",
        "-p",
        "2200",
        "me@h",
        "~/.local/bin/signaltty",
        "bridge",
        "--socket",
        "'/run/x y.sock'",  # one word for the remote shell
    ]
    with pytest.raises(ValueError, match="no command"):
        Remote("devbox", environ={"SIGNALTTY_SSH_COMMAND": "  "})
    with pytest.raises(ValueError, match="quotation"):
        Remote("devbox", environ={"SIGNALTTY_SSH_COMMAND": "ssh 'unbalanced"})


def _fake_ssh(tmp: Path, script: str) -> dict[str, str]:
    """An ``ssh`` stand-in (a real program) for what ssh itself does on failure."""
    prog = tmp / "fake-ssh"
    prog.write_text(f"#!{sys.executable}\n{script}\n")
    prog.chmod(0o755)
    return {"SIGNALTTY_SSH_COMMAND": str(prog)}


def test_a_failing_ssh_says_what_it_wrote_and_its_status() -> None:
    with tempfile.TemporaryDirectory(prefix="sl-", dir="/tmp") as d:
        env = _fake_ssh(
            Path(d),
            "import sys\n"
            "sys.stderr.write('debug noise\\nssh: connect to host h port 22: Connection refused"
            "\\x1b[2J\\n')\n"
            "sys.exit(255)",
        )
        client = Client(Remote("h", environ=env))
        try:
            with pytest.raises(LinkError) as caught:
                client.call("server.status")
        finally:
            client.close()
    msg = str(caught.value)
    assert msg.startswith("h: debug noise / ssh: connect to host h port 22: Connection refused")
    assert msg.endswith("(ssh exit status 255)")
    assert "\x1b" not in msg


def test_an_ssh_that_cannot_be_run_is_a_link_error() -> None:
    env = {"SIGNALTTY_SSH_COMMAND": "/nonexistent/ssh"}
    with pytest.raises(LinkError, match="cannot run '/nonexistent/ssh'"):
        Client(Remote("h", environ=env))


def _endless_server(path: str, stop: threading.Event) -> threading.Thread:
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        chunk = b"x" * (1 << 20)
        try:
            while not stop.is_set():
                conn.sendall(chunk)  # one line that never ends
        except OSError:
            pass
        finally:
            conn.close()
            server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_an_endless_line_from_the_server_is_refused_not_held() -> None:
    with tempfile.TemporaryDirectory(prefix="sl-", dir="/tmp") as d:
        path = str(Path(d) / "s.sock")
        stop = threading.Event()
        thread = _endless_server(path, stop)
        client = Client(path, timeout=5)
        try:
            with pytest.raises(ConnectionError, match="longer than"):
                client.read_message(timeout=30)
            assert len(client._buf) <= MAX_SERVER_LINE + (1 << 16)
        finally:
            stop.set()
            client.close()
            thread.join(10)


def test_the_asyncio_client_refuses_it_too() -> None:
    async def run(path: str) -> None:
        client = await AsyncClient.connect(path)
        try:
            with pytest.raises(ConnectionError, match="longer than"):
                await client.read_message()
        finally:
            await client.close()

    with tempfile.TemporaryDirectory(prefix="sl-", dir="/tmp") as d:
        path = str(Path(d) / "s.sock")
        stop = threading.Event()
        thread = _endless_server(path, stop)
        try:
            asyncio.run(run(path))
        finally:
            stop.set()
            thread.join(10)
