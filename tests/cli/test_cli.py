"""The installed console entry point against a real daemon: --json output, exit codes, and the
interactive ``pane attach`` driven through a real PTY (protocol.md §10)."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time

from tests.conftest import DaemonProc, wait_until

PY = sys.executable


def jcli(d: DaemonProc, *args: str) -> dict:
    r = d.cli("--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_new_list_get_read_json(daemon):
    out = jcli(daemon, "new", "--name", "Demo WS", "--", PY, "-c", "print('from child')")
    assert set(out) >= {"workspace_id", "handle", "pane_id"}
    assert out["handle"] == "demo-ws"
    r = daemon.cli("wait", "--pane", out["pane_id"], "--until", "done", "--timeout", "20")
    assert r.returncode == 0
    assert r.stdout.startswith("done")
    panes = jcli(daemon, "pane", "list")["panes"]
    assert [p["id"] for p in panes] == [out["pane_id"]]
    assert jcli(daemon, "pane", "list", "--live")["panes"] == []
    got = jcli(daemon, "pane", "get", out["pane_id"])
    assert got["pane"]["lifecycle"] == "done"
    assert "wait_baseline" in got
    r = daemon.cli("pane", "read", out["pane_id"])
    assert "from child" in r.stdout
    ws = jcli(daemon, "workspace", "get", "demo-ws")
    assert ws["workspace"]["id"] == out["workspace_id"]
    human = daemon.cli("attention")
    assert out["pane_id"][:13] in human.stdout
    assert "unread" in human.stdout
    assert jcli(daemon, "focus", "next-unread")["pane_id"] == out["pane_id"]
    jcli(daemon, "pane", "mark-seen", out["pane_id"])
    assert jcli(daemon, "attention")["panes"] == []
    assert daemon.cli("attention").stdout.strip() == "(nothing needs you)"


def test_relative_cwd_is_read_against_the_commands_directory(daemon):
    """`--cwd proj` means ./proj of the shell the command runs in, as every tool reads it
    (the daemon's own directory is another one; a new-user pass found it refused)."""
    proj = daemon.root / "proj"
    (proj / "sub").mkdir(parents=True)
    out = jcli(daemon, "new", "--cwd", "proj", "--", PY, "-c", "import os; print(os.getcwd())")
    assert jcli(daemon, "pane", "get", out["pane_id"])["pane"]["launch_cwd"] == str(proj)
    ws = jcli(daemon, "workspace", "get", out["workspace_id"])["workspace"]["id"]
    sp = jcli(daemon, "pane", "spawn", "--workspace", ws, "--cwd", "proj/sub", "--", PY, "-c", "pass")
    assert sp["pane"]["launch_cwd"] == str(proj / "sub")
    r = daemon.cli("new", "--cwd", "missing", "--", "true")
    assert r.returncode != 0
    assert str(daemon.root / "missing") in r.stderr


def test_an_unknown_agent_hint_is_warned_about(daemon):
    """The protocol reads an unknown hint as no agent; the CLI says so (new-user pass,
    session 20: a typo gave a pane with no rules and no word about it)."""
    ws = jcli(daemon, "new", "--name", "h", "--", PY, "-c", "pass")["workspace_id"]
    typo = daemon.cli("--json", "pane", "spawn", "--workspace", ws, "--hint", "claudee", "--", "true")
    assert typo.returncode == 0
    assert json.loads(typo.stdout)["pane"]["agent"]["kind"] == "none"
    assert "no agent kind 'claudee'" in typo.stderr
    known = daemon.cli("--json", "pane", "spawn", "--workspace", ws, "--hint", "claude", "--", "true")
    assert known.returncode == 0
    assert json.loads(known.stdout)["pane"]["agent"]["kind"] == "claude"
    assert known.stderr == ""


def test_errors_and_exit_codes(daemon):
    r = daemon.cli("pane", "get", "pane_nope")
    assert r.returncode == 1
    assert r.stderr.strip() == "signaltty: server error NO_SUCH_PANE: no such pane: pane_nope"
    r = daemon.cli("pane", "bogus-subcommand")
    assert r.returncode == 2
    r = daemon.cli("wait", "--pane", "pane_nope", "--until", "done")
    assert r.returncode == 1
    r = daemon.cli("wait", "--pane", "pane_nope", "--until", "done", "--after-baseline", "{oops")
    assert r.returncode == 1
    assert "not JSON" in r.stderr


def test_closed_stdout_ends_quietly_like_coreutils(daemon):
    """Issue 13 §4: ``signaltty pane list | head -1`` — the reader is gone before we write."""
    for _ in range(3):
        jcli(daemon, "new", "--", PY, "-c", "pass")
    read_end, write_end = os.pipe()
    os.close(read_end)  # a reader that already left
    try:
        r = subprocess.run(
            [PY, "-m", "signaltty", "pane", "list"],
            env=daemon.env, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=30,
        )
    finally:
        os.close(write_end)
    assert r.stderr == "", (r.returncode, r.stderr)
    assert r.returncode == -signal.SIGPIPE, (r.returncode, r.stderr)
    # through a real shell pipe as a person types it
    r = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {PY} -m signaltty pane list | head -c1 >/dev/null"],
        env=daemon.env, capture_output=True, text=True, timeout=30,
    )
    assert r.stderr == "", r.stderr


def test_json_errors_are_json_on_stderr(daemon, tmp_root):
    r = daemon.cli("--json", "pane", "get", "pane_nope")
    assert r.returncode == 1
    assert r.stdout == ""
    assert json.loads(r.stderr) == {"error": {"code": "NO_SUCH_PANE", "message": "no such pane: pane_nope"}}
    r = daemon.cli("--json", "--socket", str(tmp_root / "absent.sock"), "status")
    assert r.returncode == 1
    assert json.loads(r.stderr)["error"]["code"] == "NO_DAEMON"


def test_no_daemon_clear_error(tmp_root):
    d = DaemonProc(tmp_root)
    r = d.cli("status")
    assert r.returncode == 1
    assert "is the daemon running?" in r.stderr


def test_subscribe_json_prints_events(daemon):
    proc = subprocess.Popen(
        [PY, "-m", "signaltty", "--json", "subscribe", "--events", "notification.*"],
        env=daemon.env, stdout=subprocess.PIPE, text=True,
    )
    try:
        first = json.loads(proc.stdout.readline())
        assert first["subscribed"] is True
        daemon.call("notify", {"title": "hello"})
        ev = json.loads(proc.stdout.readline())
        assert ev["event"] == "notification.created"
        assert ev["payload"]["notification"]["title"] == "hello"
    finally:
        proc.terminate()
        proc.wait(10)


def test_subscribe_replay(daemon):
    start = daemon.call("server.status")["seq"]
    daemon.call("notify", {"title": "one"})
    daemon.call("notify", {"title": "two"})
    with daemon.client(timeout=None) as cl:
        r = cl.call("subscribe", {"events": ["notification.created"], "from_seq": start})
        assert r["replay"] == {"status": "complete", "returned": 2}
        titles = [cl.next_event(timeout=5)["payload"]["notification"]["title"] for _ in range(2)]
        assert titles == ["one", "two"]
    with daemon.client(timeout=None) as cl:
        r = cl.call("subscribe", {"from_seq": 10_000})
        assert r["subscribed"] is False
        assert r["replay"]["status"] == "cursor_ahead"
        assert cl.read_message(timeout=5) is None  # closed after the response


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _read_until(fd: int, needle: bytes, timeout: float = 10) -> bytes:
    buf = b""
    deadline = time.monotonic() + timeout
    while needle not in buf:
        left = deadline - time.monotonic()
        assert left > 0, f"{needle!r} not seen in {buf[-500:]!r}"
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                buf += os.read(fd, 65536)
            except OSError:
                break
    return buf


def test_interactive_attach_resize_and_detach(daemon):
    ws = daemon.call("workspace.create", {"name": "a"})["workspace"]
    pane = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["cat"]})["pane"]
    master, slave = os.openpty()
    _set_size(master, 100, 30)

    def make_ctty() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [PY, "-m", "signaltty", "pane", "attach", pane["id"]],
        env=daemon.env, stdin=slave, stdout=slave, stderr=slave, preexec_fn=make_ctty,
    )
    os.close(slave)
    try:
        wait_until(lambda: daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]["pty_size"] == {"cols": 100, "rows": 30})
        os.write(master, b"typed-through\r")
        _read_until(master, b"typed-through")
        _set_size(master, 90, 20)  # the kernel sends SIGWINCH to attach
        wait_until(lambda: daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]["pty_size"] == {"cols": 90, "rows": 20})
        os.write(master, b"last-bytes\x1d")
        _read_until(master, b"detached")
        assert proc.wait(10) == 0
        text = daemon.call("pane.read", {"pane_id": pane["id"]})["text"]
        assert "typed-through" in text
        assert "last-bytes" in text
        assert daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]["live"] == {"state": "live"}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def test_attach_ends_when_pane_exits(daemon):
    ws = daemon.call("workspace.create", {"name": "b"})["workspace"]
    pane = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": [PY, "-c", "import sys; sys.stdin.readline(); print('bye')"]})["pane"]
    master, slave = os.openpty()
    proc = subprocess.Popen([PY, "-m", "signaltty", "pane", "attach", pane["id"]], env=daemon.env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    try:
        _read_until(master, b"\x1b[H")  # the snapshot arrived: attach is connected
        os.write(master, b"\r")
        out = _read_until(master, b"pane exited (code 0)")
        assert b"bye" in out
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
