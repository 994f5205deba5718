"""The handover a restarted image reads is hostile input (issue 15 "bad input").

The fd table (an environment variable) and the document (an fd) could have been reached by
a same-uid process; each is validated field by field: a bad table means a normal start, a
bad document means the snapshot, a bad field means that field is skipped — never a crash,
never an fd or a process the daemon does not own.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import random
import socket
from pathlib import Path

import pytest

from signaltty.server import handover
from signaltty.server.daemon import Daemon
from signaltty.server.handover import FdTable, HandoverError, HeldEntry
from signaltty.server.restart import adopt
from tests.conftest import DaemonProc


def test_table_round_trip_and_refusals(tmp_path: Path) -> None:
    lock = os.open(tmp_path / "lock", os.O_RDWR | os.O_CREAT)
    a, b = socket.socketpair()
    master, slave = os.openpty()
    try:
        table = FdTable(lock_fd=lock, listen_fd=a.fileno())
        table.ptys.append(handover.PtyEntry("pane_1", 4242, master, os.ttyname(slave)))
        table.held.append(HeldEntry(b.fileno(), "restart", 'req "1"'))
        back = handover.parse_table(table.encode())
        assert back.fds() == table.fds()
        assert back.held[0].req_id == 'req "1"'
        good = json.loads(table.encode())
        bad_tables = [
            "", "[]", "{", '{"format":2}',
            {**good, "lock": a.fileno()},  # a socket where a file belongs
            {**good, "listen": lock},
            {**good, "ptys": [["pane_1", 4242, lock, "/dev/pts/1"]]},  # not a PTY
            {**good, "ptys": [["pane_1", 1, master, "/dev/pts/1"]]},  # pid 1
            {**good, "ptys": [["../x", 4242, master, "/dev/pts/1"]]},
            {**good, "ptys": [["pane_1", 4242, master, "/etc/passwd"]]},
            {**good, "held": [[b.fileno(), "restart", "x" * 300]]},
            {**good, "held": [[master, "restart", "r"]]},
            {**good, "held": [[9999, "restart", "r"]]},  # not open
            {**good, "held": [[a.fileno(), "restart", "r"]]},  # named twice
            {**good, "doc": 0},
            "x" * 300_000,
        ]
        for bad in bad_tables:
            text = bad if isinstance(bad, str) else json.dumps(bad)
            with pytest.raises(HandoverError):
                handover.parse_table(text)
    finally:
        for fd in (lock, master, slave):
            os.close(fd)
        a.close()
        b.close()


def _document(tmp_root: Path) -> dict:
    """A real document: a daemon with panes, restarted with the handover fault off, is not
    needed — the document a running daemon would write is built from a live store."""
    d = DaemonProc(tmp_root)
    d.start()
    try:
        ws = d.call("workspace.create", {"name": "w", "cwd": str(tmp_root)})["workspace"]
        d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sh", "-c", "echo hi; exit 3"]})
        d.call("notify", {"title": "t", "body": "b"})
        import time

        time.sleep(0.5)
        state = d.root / "state"
        return {
            "format": 1,
            "version": "0.0.1",
            "restarts": 2,
            "seq": 7,
            "ring": [[1, "pane.created", {"pane_id": "x"}], [2, "a" * 100, {}], [9, "late", {}]],
            "seqs": {"x": {"lifecycle": 3, "bad": "7"}},
            "snapshot": (state / "snapshot.json").read_text() if (state / "snapshot.json").exists() else "{}",
            "runtime": {},
            "panes": {},
            "hooks": {"agent_pids": {"x": 5}, "pane_procs": [[5, "x", None]], "questions": {}, "waits": {}},
            "person_pids": [[12, None], ["x", 1]],
        }
    finally:
        d.stop()
        d.kill_leftovers()


def test_hostile_documents_never_crash_the_start(tmp_root: Path) -> None:
    base = _document(tmp_root)
    rng = random.Random(15)
    junk: list[object] = [None, -1, 2**70, "x" * 5000, [], {}, [[1, 2, 3]], True, 1.5, {"a": [None]}]

    async def one(doc: object) -> dict:
        d = Daemon(state_dir_flag=str(tmp_root / "fresh"), socket_flag=str(tmp_root / "f.sock"))
        (tmp_root / "fresh").mkdir(mode=0o700, exist_ok=True)
        fd = handover.write_doc(doc, tmp_root) if isinstance(doc, dict) else _raw_fd(doc)
        return adopt(d, FdTable(doc_fd=fd))

    def paths(obj: object, prefix: tuple = ()) -> list[tuple]:
        out = [prefix]
        if isinstance(obj, dict):
            for k, v in obj.items():
                out += paths(v, (*prefix, k))
        elif isinstance(obj, list):
            for i, v in enumerate(obj[:3]):
                out += paths(v, (*prefix, i))
        return out

    every = [p for p in paths(base) if p and p[0] != "snapshot"]
    for _ in range(300):
        doc = copy.deepcopy(base)
        where = rng.choice(every)
        node = doc
        for key in where[:-1]:
            node = node[key]
        node[where[-1]] = rng.choice(junk)
        result = asyncio.run(one(doc))
        assert result["handover"] in ("complete", "snapshot")
    for raw in (b"", b"not json", b"[]", b'{"format": 2}', b"\xff" * 100, b"[" * 100_000):
        assert asyncio.run(one(raw))["handover"] == "snapshot"


def _raw_fd(data: object) -> int:
    assert isinstance(data, bytes)
    fd = os.memfd_create("t")
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def test_a_garbage_handover_variable_means_a_normal_start(tmp_root: Path) -> None:
    for value in ('{"format":1,"lock":0}', "garbage", json.dumps({"format": 1, "listen": 99})):
        d = DaemonProc(tmp_root, {"SIGNALTTY_HANDOVER": value})
        d.start()
        try:
            assert d.call("server.status")["restarts"] == 0
        finally:
            d.stop()
            assert not d.kill_leftovers()


def test_a_handed_over_connection_ends_with_its_answer(tmp_root: Path) -> None:
    """The new image reads a handed-over connection's peer anew (pid, else start time), so it
    answers the call handed over and closes: a pane process that connected from a child which
    then exited must not go on calling as whatever process took that pid since (attack pass 8,
    A1: with no ``SO_PEERPIDFD`` for the dead child, the pid's new owner outside every pane
    was taken for the caller, and its ``decision.answer`` was obeyed)."""
    d = DaemonProc(tmp_root)
    d.start()
    try:
        with d.client(timeout=90) as c:
            assert c.call("server.restart")["restarted"] is True
            try:
                c.send("server.status")
                after = c.read_message(timeout=10)
            except OSError:  # the close reached us first
                after = None
            assert after is None
        assert d.call("server.status")["restarts"] == 1  # new connections are served
    finally:
        d.stop()
        assert not d.kill_leftovers()


def test_a_table_from_another_process_is_not_adopted(tmp_root: Path) -> None:
    """``SIGNALTTY_HANDOVER`` in an ordinary start's environment, naming fds that start
    passed on (a regular file as "lock", /dev/null as a PTY with some process's pid): a
    normal start — the state dir stays locked against a second daemon, and the process named
    is not signalled (attack pass 8, B1: it was SIGHUPed as an unknown pane's program)."""
    import subprocess
    import sys

    first = DaemonProc(tmp_root)
    first.start()
    victim = subprocess.Popen(["sleep", "60"], start_new_session=True)
    junk = os.open(tmp_root / "junk", os.O_RDWR | os.O_CREAT)
    null = os.open("/dev/null", os.O_RDWR)
    table = FdTable(lock_fd=junk)
    table.ptys.append(handover.PtyEntry("pane_zz", victim.pid, null, "/dev/pts/99"))
    env = {**first.env, handover.ENV: table.encode()}  # written by this process, not the daemon's
    try:
        second = subprocess.run(
            [sys.executable, "-m", "signaltty", "daemon", "--state-dir", str(first.state_dir)],
            env=env, pass_fds=(junk, null), capture_output=True, text=True, timeout=20,
        )
        assert second.returncode == 1
        assert "already listening" in second.stderr or "state dir in use" in second.stderr
        assert victim.poll() is None
        assert first.call("server.status")["restarts"] == 0
    finally:
        os.close(junk)
        os.close(null)
        victim.kill()
        victim.wait()
        first.stop()
        assert not first.kill_leftovers()


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: ns_last_pid stands in for the pid wrap")
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the no-pidfd filter is x86_64 only")
def test_a_restart_does_not_launder_a_dead_connectors_pid(tmp_root: Path) -> None:
    """Attack pass 8, A1, end to end where the kernel gives no pidfd (a seccomp filter makes
    ``SO_PEERPIDFD`` fail as on Linux < 6.5): a pane process connects from a child that
    exits, a process outside every pane takes the child's pid, the pane process asks for a
    restart on that connection and then answers another pane's permission on it. Refused
    before the restart (the start time read at accept), and the connection ends with the
    restart's answer (it used to go on as the pid's new owner: ``allow`` was obeyed)."""
    import subprocess
    import sys

    from tests.conftest import wait_until
    from tests.server.test_reporter_verdicts import Reporter, _claude_pane, _pending, _verdict

    repo = FIXTURES.parent.parent
    d = DaemonProc(tmp_root, {"PYTHONPATH": f"{FIXTURES / 'nopidfd'}{os.pathsep}{repo}"})
    d.start()
    sleeper: subprocess.Popen[bytes] | None = None
    try:
        victim = _claude_pane(d)
        reporter = Reporter(d, victim.id, timeout=120)
        decision = _pending(d, victim)
        box = tmp_root / "box"
        box.mkdir()
        ws = d.call("workspace.create", {"name": "x", "cwd": str(tmp_root)})["workspace"]
        argv = [sys.executable, str(FIXTURES / "pid_launderer.py"), str(box), victim.id]
        d.call("pane.spawn", {"workspace_id": ws["id"], "argv": argv})
        pid = int(wait_until(lambda: (box / "p").exists() and (box / "p").read_text(), 20))
        for _ in range(50):
            Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
            sleeper = subprocess.Popen(["sleep", "120"])
            if sleeper.pid == pid:
                break
            sleeper.kill()
            sleeper.wait()
            sleeper = None
        assert sleeper is not None, "no process could be put on the pid"
        (box / "go").write_text("")
        wait_until(lambda: (box / "result").exists(), 90)
        result = json.loads((box / "result").read_text())
        assert result["before"]["error"]["code"] == "FORBIDDEN"
        # the restart itself is refused now (its caller traces to a pane: the start time
        # read at accept no longer matches); had it gone through, the connection would end
        restart = result["restart"]
        if "error" in restart:
            assert restart["error"]["code"] == "FORBIDDEN"
        else:
            assert restart["result"]["restarted"] is True
            assert "closed" in result["after"]
        assert d.call("server.status")["restarts"] == 0 or "closed" in result["after"]
        assert d.call("pane.get", {"pane_id": victim.id})["pane"]["pending_decision"]["id"] == decision
        d.call("decision.answer", {"pane_id": victim.id, "verdict": "deny"})
        code, out, _err = reporter.result()
        assert _verdict(out) == "deny"
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
        d.stop()
        assert not d.kill_leftovers()
