"""Hosts a daemon watches (issue 16 item 3) between two real daemons on this machine.

The "remote" is a second daemon with its own root; the local daemon's ``[hosts.devbox]``
reaches it through a stand-in ssh that runs the real ``signaltty bridge`` against the remote
socket (tests/remote/test_watched_ssh.py does the same through a real sshd). Checked: one link
per host, the mirror (``pane.list``, ``pane.get``, ``attention.pending``, ``permission.list``,
``server.status.hosts``, events under ``devbox/…`` ids), a remote permission answered here and
obeyed there, the remote daemon stopped (panes kept, unreachable) and started again
(reconnected), ``hosts.reload``, and what a mirrored pane refuses.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, wait_until
from tests.server.test_reporter_verdicts import Reporter, _claude_pane, _pending, _verdict

PY = sys.executable


def stand_in_ssh(root: Path, remote: DaemonProc, log: Path | None = None) -> str:
    """A program taking ssh's arguments that runs the remote command's ``bridge …`` (the
    words after it, ``--no-start`` included) for ``remote``."""
    prog = root / "fake-ssh"
    record = f'printf "%s\\n" "$*" >>{log}\n' if log is not None else ""
    prog.write_text(
        "#!/bin/sh\n"
        + record
        + 'while [ "$#" -gt 0 ] && [ "$1" != bridge ]; do shift; done\n'
        + f"exec env SIGNALTTY_SOCKET={remote.socket} XDG_RUNTIME_DIR={remote.root / 'run'} "
        f'{PY} -m signaltty "$@"\n'
    )
    prog.chmod(0o755)
    return str(prog)


@pytest.fixture
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonProc, DaemonProc, Path]]:
    import tempfile

    with (
        tempfile.TemporaryDirectory(prefix="rh-", dir="/tmp") as a,
        tempfile.TemporaryDirectory(prefix="lh-", dir="/tmp") as b,
    ):
        remote = DaemonProc(Path(a))
        remote.start()
        log = Path(b) / "ssh.log"
        local = DaemonProc(Path(b), {"SIGNALTTY_SSH_COMMAND": stand_in_ssh(Path(b), remote, log)})
        local.write_config('[hosts.devbox]\ntarget = "me@devbox"\n')
        local.start()
        try:
            yield local, remote, log
        finally:
            local.stop()
            remote.stop()
            assert not local.kill_leftovers()
            assert not remote.kill_leftovers()


def _spawn(d: DaemonProc, argv: list[str]) -> dict:
    ws = d.call("workspace.create", {"name": "api", "cwd": str(d.root)})["workspace"]
    return d.call("pane.spawn", {"workspace_id": ws["id"], "argv": argv})["pane"]


def _host(d: DaemonProc, name: str = "devbox") -> dict:
    return next(h for h in d.call("hosts.list")["hosts"] if h["name"] == name)


def _mirrored(d: DaemonProc) -> list[dict]:
    return [p for p in d.call("pane.list")["panes"] if p.get("host") == "devbox"]


def test_remote_panes_are_mirrored_and_answered_here(pair) -> None:
    local, remote, log = pair
    wait_until(lambda: _host(local)["state"] == "connected", 20)
    agent = _claude_pane(remote)
    mid = f"devbox/{agent.id}"
    p = wait_until(lambda: next((x for x in _mirrored(local) if x["id"] == mid), None), 10)
    assert p["reachable"] is True
    assert p["workspace_id"].startswith("devbox/")
    assert local.call("pane.get", {"pane_id": mid})["pane"]["host"] == "devbox"
    # a short id works like a local one
    assert local.call("pane.get", {"pane_id": mid[: len("devbox/") + 9]})["pane"]["id"] == mid

    with local.client(timeout=20) as sub:
        sub.call("subscribe", {"events": ["attention.*", "decision.*"]})
        reporter = Reporter(remote, agent.id)
        decision = _pending(remote, agent)
        seen = []
        while not {"attention.created", "decision.created"} <= {e for e, _ in seen}:
            msg = sub.next_event(timeout=20)
            assert msg is not None
            if msg["payload"].get("pane_id") == mid:
                seen.append((msg["event"], msg["payload"]))
    perms = wait_until(
        lambda: [x for x in local.call("permission.list")["permissions"] if x["pane_id"] == mid], 10
    )
    assert perms[0]["decision_id"] == decision
    assert perms[0]["host"] == "devbox"
    pending = local.call("attention.pending")["panes"]
    assert any(x["pane_id"] == mid and x["host"] == "devbox" for x in pending)
    # what only the remote daemon can do is refused here, saying what to run instead
    with pytest.raises(SignalttyError) as err:
        local.call("pane.input", {"pane_id": mid, "data_b64": "eA=="})
    assert err.value.code == "NO_SUCH_PANE"
    assert "--host me@devbox" in err.value.message
    # the person's answer, given here, is obeyed there
    r = local.call("decision.answer", {"pane_id": mid, "verdict": "allow"})
    assert r["answered"] is True
    assert r["host"] == "devbox"
    code, out, err_text = reporter.result()
    assert code == 0, err_text
    assert _verdict(out) == "allow"
    wait_until(
        lambda: local.call("pane.get", {"pane_id": mid})["pane"]["pending_decision"] is None, 10
    )
    # what came with the answer but has no event of its own (the last message) is read back
    theirs = agent.get()["last_message"]
    assert theirs
    wait_until(
        lambda: local.call("pane.get", {"pane_id": mid})["pane"]["last_message"] == theirs, 10
    )
    # one ssh connection for the host, however many requests went over it
    assert len(log.read_text().splitlines()) == 1
    assert "BatchMode=yes" in log.read_text()


def test_the_remote_daemon_going_away_and_coming_back(pair) -> None:
    local, remote, _ = pair
    wait_until(lambda: _host(local)["state"] == "connected", 20)
    _spawn(remote, ["sleep", "600"])
    wait_until(lambda: len(_mirrored(local)) == 1, 10)
    remote.stop()
    h = wait_until(lambda: (h := _host(local))["state"] == "unreachable" and h, 20)
    assert h["error"]
    assert h["retry_at"]
    [p] = _mirrored(local)  # kept, shown as unreachable
    assert p["reachable"] is False
    # watching does not bring the daemon back (bridge --no-start): the next attempt says so,
    # and "since" is still when the host went down, not when that attempt began
    later = wait_until(
        lambda: (x := _host(local))["error"] and "no signaltty daemon" in x["error"] and x, 20
    )
    assert later["since"] == h["since"]
    assert not Path(remote.socket).exists()
    with pytest.raises(SignalttyError) as err:
        local.call("decision.answer", {"pane_id": p["id"], "verdict": "allow"})
    assert err.value.code == "NO_SUCH_DECISION"
    remote.start()
    wait_until(lambda: _host(local)["state"] == "connected", 30)
    # the restarted daemon restored its pane (or not): the mirror follows its list
    wait_until(lambda: all(x["reachable"] for x in _mirrored(local)), 10)
    assert _host(local)["connects"] == 2


def test_a_remote_program_that_ends_is_mirrored_as_the_remote_sees_it(pair) -> None:
    local, remote, _ = pair
    wait_until(lambda: _host(local)["state"] == "connected", 20)
    pane = _spawn(remote, ["sh", "-c", "exit 3"])
    mid = f"devbox/{pane['id']}"
    theirs = wait_until(
        lambda: (
            (x := remote.call("pane.get", {"pane_id": pane["id"]})["pane"])["live"]["state"]
            == "exited"
            and x
        ),
        10,
    )
    # the remote's pane.created crosses the link after the remote saw the exit on a loaded
    # machine: wait for the mirror to name the pane before reading it by id
    wait_until(lambda: any(x["id"] == mid for x in _mirrored(local)), 10)
    ours = wait_until(
        lambda: (
            (x := local.call("pane.get", {"pane_id": mid})["pane"])["restore_state"]
            == theirs["restore_state"]
            and x
        ),
        10,
    )
    assert ours["live"] == {"state": "exited", "code": 3}
    assert ours["lifecycle"] == theirs["lifecycle"]
    assert ours["workspace_name"] == "api"


def test_hosts_reload_adds_and_removes(pair) -> None:
    local, remote, _ = pair
    wait_until(lambda: _host(local)["state"] == "connected", 20)
    _spawn(remote, ["sleep", "600"])
    wait_until(lambda: len(_mirrored(local)) == 1, 10)
    local.write_config('[hosts.other]\ntarget = "other"\n[hosts."-bad"]\ntarget = "x"\n')
    r = local.call("hosts.reload")
    assert [h["name"] for h in r["hosts"]] == ["other"]
    assert any("-bad" in e for e in r["errors"])
    assert _mirrored(local) == []
    status = local.call("server.status")
    assert [h["name"] for h in status["hosts"]] == ["other"]
    local.write_config("[hosts\n")
    with pytest.raises(SignalttyError) as err:
        local.call("hosts.reload")
    assert err.value.code == "IO_ERROR"
    assert [h["name"] for h in local.call("hosts.list")["hosts"]] == ["other"]
    ssh = [
        c for c in psutil.Process(local.proc.pid).children() if "fake-ssh" in " ".join(c.cmdline())
    ]
    assert len(ssh) <= 1


def test_a_hosts_remote_command_and_no_start(pair) -> None:
    """``remote_command`` is the remote shell's command for signaltty on that link; the
    link's bridge never starts a daemon (``--no-start``)."""
    local, _remote, log = pair
    wait_until(lambda: _host(local)["state"] == "connected", 20)
    local.write_config('[hosts.devbox]\ntarget = "me@devbox"\nremote_command = "~/bin/st"\n')
    local.call("hosts.reload")
    wait_until(lambda: _host(local)["connects"] == 1 and _host(local)["state"] == "connected", 20)
    first, last = log.read_text().splitlines()[0], log.read_text().splitlines()[-1]
    assert first.endswith(" me@devbox signaltty bridge --no-start")
    assert last.endswith(" me@devbox ~/bin/st bridge --no-start")
