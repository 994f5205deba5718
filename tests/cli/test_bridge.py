"""``signaltty bridge`` (issue 16 item 1): stdin/stdout to the daemon's socket, raw lines
both ways, the same trust checks as every client, the daemon started on demand, a line
over the limit ends it, and it starts as light as the hook reporter.

The daemon sees the bridge as the process it is: from inside a pane it cannot answer a
permission (the self-approval guard, unchanged); from outside every pane it can.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import psutil

from signaltty.cli import bridge
from signaltty.core.limits import MAX_LINE_BYTES
from signaltty.proto import client
from signaltty.proto.client import Client
from tests.cli.test_fastpath import FAST_PATH_MODULES, NEVER, modules_loaded_by
from tests.conftest import DaemonProc, wait_until
from tests.server.test_hooks_e2e import _permission_agent

PY = sys.executable
REFUSAL = "processes inside signaltty panes cannot answer permissions"


def _req(req_id: str, method: str, params: dict | None = None) -> bytes:
    msg = {"protocol": "signaltty/1", "id": req_id, "method": method, "params": params or {}}
    return (json.dumps(msg) + "\n").encode()


def _bridge(
    env: dict[str, str], stdin: bytes, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [PY, "-m", "signaltty", "bridge"],
        env=env,
        input=stdin,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def _responses(out: bytes) -> dict[str, dict]:
    msgs = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {m["id"]: m for m in msgs if "id" in m}


def test_requests_in_answers_out_then_eof_ends_it(daemon):
    r = _bridge(daemon.env, _req("a", "server.status") + _req("b", "pane.list"))
    assert r.returncode == 0, r.stderr
    got = _responses(r.stdout)
    assert got["a"]["result"]["pid"] == daemon.proc.pid
    assert got["b"]["result"]["panes"] == []
    assert r.stderr == b""


def test_the_daemon_judges_the_bridge_as_the_process_it_is(daemon, tmp_root):
    a, _gate = _permission_agent(daemon, tmp_root)
    answer = _req("x", "decision.answer", {"pane_id": a.id, "verdict": "allow"})
    (tmp_root / "req.jsonl").write_bytes(answer)
    res = tmp_root / "inpane"
    # the same bytes through a bridge started inside another pane: refused as any pane client
    ws = daemon.call("workspace.create", {"name": "other", "cwd": str(tmp_root)})["workspace"]
    daemon.call(
        "pane.spawn",
        {
            "workspace_id": ws["id"],
            "argv": [
                "sh",
                "-c",
                f"signaltty bridge <{tmp_root / 'req.jsonl'} >{res}.out 2>{res}.err; echo $? >{res}.rc",
            ],
        },
    )
    wait_until(lambda: Path(f"{res}.rc").exists() and Path(f"{res}.rc").read_text().strip(), 30)
    refused = _responses(Path(f"{res}.out").read_bytes())["x"]
    assert refused["ok"] is False
    assert REFUSAL in refused["error"]["message"]
    assert daemon.call("pane.get", {"pane_id": a.id})["pane"]["pending_decision"] is not None
    # from outside every pane (a terminal, sshd's session): the person's answer
    r = _bridge(daemon.env, answer)
    assert r.returncode == 0, r.stderr
    assert _responses(r.stdout)["x"]["ok"] is True, r.stdout
    entries = a.wait_entries(3)
    assert json.loads(entries[2]["stdout"])["hookSpecificOutput"]["decision"] == {
        "behavior": "allow"
    }


def test_no_daemon_one_is_started_on_demand(tmp_root):
    d = DaemonProc(tmp_root)  # its environment only: nothing listens yet
    r = _bridge(d.env, _req("s", "server.status"))
    assert r.returncode == 0, r.stderr
    status = _responses(r.stdout)["s"]["result"]
    started = psutil.Process(status["pid"])
    try:
        assert status["socket"] == d.socket
        assert b"server started on" in r.stderr  # --detach's report went to stderr, not stdout
        r = _bridge(d.env, _req("t", "server.status"))  # the next one finds it running
        assert _responses(r.stdout)["t"]["result"]["pid"] == status["pid"]
    finally:
        with Client(d.socket) as cl:
            cl.call("server.shutdown", {"force": True})
        started.wait(30)


def test_a_socket_that_is_not_ours_gets_nothing_and_no_daemon_is_started(tmp_root):
    shared = tmp_root / "shared"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o777)  # anyone may have put it there
    path = str(shared / "s.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)
    server.settimeout(0.5)
    try:
        env = dict(DaemonProc(tmp_root).env, SIGNALTTY_SOCKET=path)
        r = _bridge(env, _req("s", "server.status"))
        assert r.returncode == 1
        assert r.stdout == b""
        assert r.stderr.startswith(b"signaltty bridge: not your signaltty daemon: ")
        try:
            conn, _ = server.accept()
        except TimeoutError:
            conn = None
        assert conn is None  # refused before connecting: the directory is open to others
    finally:
        server.close()
    assert not (tmp_root / "xdgstate" / "signaltty").exists()  # no daemon was started


def test_a_line_over_the_limit_ends_the_bridge(daemon):
    huge = b"x" * (16 * 1024 * 1024 + 2)  # no newline: one line past protocol.md's 16 MiB
    r = _bridge(daemon.env, huge, timeout=120)
    assert r.returncode == 1
    assert r.stderr.strip() == b"signaltty bridge: a line from the client exceeds 16777216 bytes"
    # the daemon is unharmed
    assert daemon.call("server.status")["pid"] == daemon.proc.pid


def test_the_bridge_starts_as_light_as_the_reporter(daemon):
    rc, loaded = modules_loaded_by(["bridge"], daemon.env, _req("s", "server.status"))
    assert rc == 0
    extra = loaded - FAST_PATH_MODULES
    assert extra <= {"signaltty.cli.bridge", "select"}, sorted(extra)
    assert not loaded & NEVER


def test_the_bridge_limits_are_the_protocol_s():
    assert bridge.MAX_LINE_BYTES == MAX_LINE_BYTES
    assert bridge.MAX_SERVER_LINE == client.MAX_SERVER_LINE


def _loopback_ssh(d: DaemonProc) -> dict[str, str]:
    """``SIGNALTTY_SSH_COMMAND`` for a stand-in that runs the remote command here (no sshd:
    the transport is the test's subject, not ssh's login)."""
    prog = d.root / "loopback-ssh"
    prog.write_text(
        "#!/bin/sh\n"
        'while [ "$#" -gt 0 ] && [ "$1" != signaltty ]; do shift; done\n'
        f'shift; exec {PY} -m signaltty "$@"\n'
    )
    prog.chmod(0o755)
    return dict(d.env, SIGNALTTY_SSH_COMMAND=str(prog))


def test_the_cli_and_the_asyncio_client_through_a_link(daemon):
    import asyncio

    from signaltty.proto.client import AsyncClient
    from signaltty.proto.sshlink import Remote

    env = _loopback_ssh(daemon)
    r = subprocess.run(
        [PY, "-m", "signaltty", "--host", "elsewhere", "--json", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pid"] == daemon.proc.pid

    async def through_link() -> tuple[int, int]:
        cl = await AsyncClient.connect(Remote("elsewhere", environ=env))
        link = cl._link
        assert link is not None
        try:
            pid = (await cl.call("server.status"))["pid"]
        finally:
            await cl.close()
        return pid, link.proc.wait(10)

    pid, ssh_status = asyncio.run(through_link())
    assert pid == daemon.proc.pid
    assert ssh_status == 0  # closing our end ended the bridge, then the stand-in ssh


def test_a_relative_socket_is_started_where_the_bridge_looks(tmp_root):
    d = DaemonProc(tmp_root)
    r = subprocess.run(
        [PY, "-m", "signaltty", "--socket", "rel.sock", "bridge"],
        env=d.env,
        input=_req("s", "server.status"),
        capture_output=True,
        timeout=60,
        cwd=str(tmp_root),
        check=False,
    )
    assert r.returncode == 0, r.stderr
    status = _responses(r.stdout)["s"]["result"]
    started = psutil.Process(status["pid"])
    try:
        assert status["socket"] == str(tmp_root / "rel.sock")
    finally:
        with Client(str(tmp_root / "rel.sock")) as cl:
            cl.call("server.shutdown", {"force": True})
        started.wait(30)
