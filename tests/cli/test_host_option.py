"""``--host`` and ``$SIGNALTTY_HOST`` on the command line (issue 16 item 2), through a
stand-in ssh that logs its arguments and runs the remote command on this machine, so the
rules are checked without an sshd (tests/remote/test_ssh_host.py has the real one): which
commands take the host, which refuse it, that a pane ignores the variable, and that a
subscription's events come through the link.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

from signaltty.proto import trust
from tests.conftest import DaemonProc, wait_until

PY = sys.executable


def _logging_ssh(d: DaemonProc) -> tuple[dict[str, str], Path]:
    log = d.root / "ssh-argv.log"
    prog = d.root / "logging-ssh"
    prog.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >>{log}\n'
        'while [ "$#" -gt 0 ] && [ "$1" != signaltty ]; do shift; done\n'
        f'shift; exec {PY} -m signaltty "$@"\n'
    )
    prog.chmod(0o755)
    return dict(d.env, SIGNALTTY_SSH_COMMAND=f"{prog} -o Opt=1"), log


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "signaltty", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_the_variable_and_the_option_go_through_ssh(daemon):
    env, log = _logging_ssh(daemon)
    r = _cli(dict(env, SIGNALTTY_HOST="devbox"), "--json", "status")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pid"] == daemon.proc.pid
    r = _cli(env, "--host", "ssh://me@devbox:2222", "pane", "list", "--socket", daemon.socket)
    assert r.returncode == 0, r.stderr
    assert _calls(log) == [
        "-o Opt=1 -T devbox signaltty bridge",
        f"-o Opt=1 -T -p 2222 me@devbox signaltty bridge --socket {daemon.socket}",
    ]


def test_inside_a_pane_the_variable_is_not_read(daemon):
    env, log = _logging_ssh(daemon)
    in_pane = dict(
        env, SIGNALTTY_HOST="devbox", SIGNALTTY_DAEMON=trust.identity_token(daemon.proc.pid)
    )
    r = _cli(in_pane, "--json", "status")
    assert r.returncode == 0, r.stderr
    assert _calls(log) == []  # the pane's own daemon, over its socket
    r = _cli(in_pane, "--host", "devbox", "--json", "status")  # named: taken
    assert r.returncode == 0, r.stderr
    assert len(_calls(log)) == 1


def test_local_commands_refuse_the_option_and_ignore_the_variable(daemon):
    env, log = _logging_ssh(daemon)
    for args in (["daemon", "--detach"], ["service", "status"], ["integration", "status"]):
        r = _cli(env, "--host", "devbox", *args)
        assert r.returncode == 2, (args, r.stderr)
        assert f"--host does not apply to `{args[0]}`" in r.stderr
    r = _cli(env, "--host", "devbox", "hook-event", "--agent", "claude", "--event", "Stop")
    assert r.returncode == 1  # a reporter never exits 2, even on a usage error
    assert "--host" in r.stderr
    r = _cli(env, "--host", "devbox", "bridge")
    assert r.returncode == 1
    assert "--host does not apply to `bridge`" in r.stderr
    r = _cli(dict(env, SIGNALTTY_HOST="devbox"), "integration", "status")
    assert r.returncode == 0, r.stderr
    assert _calls(log) == []


def test_a_relative_cwd_means_nothing_on_another_host(daemon):
    env, log = _logging_ssh(daemon)
    r = _cli(env, "--host", "devbox", "new", "--cwd", "sub", "--", "true")
    assert r.returncode == 2
    assert "give an absolute directory on devbox" in r.stderr
    # without --cwd the remote daemon's default (its home) stands in for ours
    r = _cli(env, "--host", "devbox", "--json", "new", "--", "sleep", "30")
    assert r.returncode == 0, r.stderr
    ws = daemon.call("workspace.get", {"workspace_id": json.loads(r.stdout)["workspace_id"]})
    assert ws["workspace"]["cwd"] == str(daemon.home)


class _Lines:
    """Lines of a child's stdout, each waited for with a deadline (never a blocking read)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""

    def next(self, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, f"no line within {timeout} s: {self.buf[-300:]!r}"
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 65536)
                assert chunk, f"EOF: {self.buf[-300:]!r}"
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return dict(json.loads(line))


def test_subscribed_events_come_through_the_link(daemon):
    env, _log = _logging_ssh(daemon)
    sub = subprocess.Popen(
        [PY, "-m", "signaltty", "--host", "devbox", "--json", "subscribe"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert sub.stdout is not None
        lines = _Lines(sub.stdout.fileno())
        assert lines.next()["subscribed"] is True  # the subscribe result: connected
        ws = daemon.call("workspace.create", {"name": "seen-remotely"})["workspace"]
        line = lines.next()
        assert line["event"] == "workspace.created"
        assert line["payload"]["workspace"]["id"] == ws["id"]
    finally:
        sub.terminate()
        sub.communicate(timeout=30)


def test_top_through_the_link_answers_a_permission(daemon):
    from types import SimpleNamespace

    from tests.cli.test_top import TopTerm, _permission_agent, _verdict

    env, log = _logging_ssh(daemon)
    pane_id, entries = _permission_agent(daemon, "far", "make deploy")
    wait_until(
        lambda: (
            daemon.call("pane.get", {"pane_id": pane_id})["pane"]["pending_decision"] or {}
        ).get("answerable"),
        20,
    )
    t = TopTerm(SimpleNamespace(env=dict(env, SIGNALTTY_HOST="devbox"), root=daemon.root))
    try:
        t.wait_text("[far]")
        assert "[far]" in t.step(b"n", "next unread")
        t.press(b"a")
        t.wait_text("Allow once: Bash: make deploy?")
        t.press(b"y")
        assert _verdict(entries) == {"behavior": "allow"}
        t.press(b"q")
        assert t.proc.wait(30) == 0
    finally:
        t.close()
    assert len(_calls(log)) == 2  # its stream and its request connection, each one ssh


def test_a_watched_host_name_is_a_host_value(daemon):
    """``--host NAME`` with a ``[hosts.NAME]`` entry uses its target and remote command
    (what the daemon's own link uses), so ``devbox/pane_…`` ids and ``--host devbox`` agree."""
    env, log = _logging_ssh(daemon)
    daemon.write_config('[hosts.dbx]\ntarget = "me@devbox:2222"\nremote_command = "~/bin/st"\n')
    _cli(env, "--host", "dbx", "status")
    assert _calls(log)[-1] == "-o Opt=1 -T -p 2222 me@devbox ~/bin/st bridge"
    _cli(env, "--host", "other", "status")  # no entry: what ssh takes
    assert _calls(log)[-1] == "-o Opt=1 -T other signaltty bridge"
