"""``signaltty --host`` through real OpenSSH to a second user's daemon (issue 16).

The test starts its own ``sshd -D`` on 127.0.0.1 (a free port, a throwaway host key, public
keys only, ``UsePAM no``, ``StrictModes no`` because the remote home lives under /tmp) and
creates a throwaway user as the remote account, whose ``signaltty`` is this checkout: the
source and run-time dependencies are copied to a directory that user can read and a
wrapper ``~/bin/signaltty`` runs them with the system Python (root's venv is not readable
by others; the same runtime as tests/desktop/test_systemd_user.py). What the remote login
gets comes from sshd's ``SetEnv``, the documented way an admin sets a session's environment:
``PATH`` with ``~/bin`` first (so the default remote command ``signaltty`` is found, as on a
machine where it is installed), a private ``XDG_RUNTIME_DIR`` under its home, and the
switches that keep its daemon off the session bus. The local side is the real CLI with
``SIGNALTTY_SSH_COMMAND="ssh -F <test ssh_config>"``: the client key, the known host key and
the ``remote`` alias are the user's ssh configuration, as they would be.

Nothing but ssh connects the two: the remote daemon is started on demand by the first
``signaltty bridge``, as that user. Runs as root (it creates a user); skipped with the
reason otherwise, and under ``CI`` it fails instead. Everything it starts (sshd and its
sessions, the remote daemon and panes, ssh clients) is killed and the user removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import secrets
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import REPO, wait_until
from tests.desktop.test_systemd_user import _interpreter, _Runtime

SSHD = "/usr/sbin/sshd"
FAKE_AGENT = REPO / "tests" / "fixtures" / "fake_agent.py"
CLI_TIMEOUT_S = 60


def _usable() -> str | None:
    """Why this machine cannot run the tier, or None."""
    if not sys.platform.startswith("linux"):
        return "needs Linux"
    if os.geteuid() != 0:
        return "needs root (creates a user and runs sshd)"
    if not os.access(SSHD, os.X_OK):
        return f"no {SSHD} (Debian package openssh-server; tests/run.sh installs it)"
    for tool in ("ssh", "ssh-keygen", "useradd", "userdel"):
        if shutil.which(tool) is None:
            return f"missing {tool}"
    if _interpreter() is None:
        return f"no system python{sys.version_info[0]}.{sys.version_info[1]} for the remote user"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Remote:
    """sshd on 127.0.0.1 and a throwaway remote account; :meth:`teardown` undoes all."""

    def __init__(self) -> None:
        self.name = "sr" + secrets.token_hex(4)
        self.tmp = Path(tempfile.mkdtemp(prefix="stssh-", dir="/tmp"))
        os.chmod(self.tmp, 0o755)  # the remote user reads its runtime under it
        self.home = self.tmp / "home"
        self.local_home = self.tmp / "local"
        self.sshd: subprocess.Popen[bytes] | None = None
        self.user_added = False
        self.created_privsep = False
        self.uid = -1
        self.port = _free_port()

    def _keygen(self, path: Path) -> None:
        subprocess.run(
            [
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "signaltty-test",
                "-f",
                str(path),
            ],
            check=True,
            capture_output=True,
        )

    def setup(self) -> None:
        # '*': no password, yet not a locked account (sshd refuses keys for '!' ones)
        subprocess.run(
            ["useradd", "-M", "-d", str(self.home), "-s", "/bin/sh", "-p", "*", self.name],
            check=True,
            capture_output=True,
        )
        self.user_added = True
        self.uid = pwd.getpwnam(self.name).pw_uid
        self.home.mkdir()
        self.local_home.mkdir(mode=0o700)
        rt = _Runtime(self.tmp)
        python = _interpreter()
        bindir = self.home / "bin"
        bindir.mkdir()
        wrapper = bindir / "signaltty"
        wrapper.write_text(
            f'#!/bin/sh\nPYTHONPATH={rt.pythonpath} exec {python} -m signaltty "$@"\n'
        )
        wrapper.chmod(0o755)
        agent = bindir / "claude"  # the scripted agent, under the name detection knows
        agent.write_text(f"#!{python}\n" + FAKE_AGENT.read_text())
        agent.chmod(0o755)
        (self.home / "run").mkdir(mode=0o700)
        keys = self.tmp / "keys"
        keys.mkdir(mode=0o700)
        self._keygen(keys / "host")
        self._keygen(keys / "client")
        ssh_dir = self.home / ".ssh"
        ssh_dir.mkdir(mode=0o700)
        (ssh_dir / "authorized_keys").write_text((keys / "client.pub").read_text())
        subprocess.run(["chown", "-R", f"{self.name}:", str(self.home)], check=True)

        env = {
            "PATH": f"{bindir}:/usr/bin:/bin",
            "XDG_RUNTIME_DIR": str(self.home / "run"),
            "SIGNALTTY_DBUS": "0",
            "SIGNALTTY_NOTIFY": "0",
            "SIGNALTTY_LOGIND": "0",
            "SIGNALTTY_SHELL_PATH": "0",
            "LANG": "C.UTF-8",
        }
        config = self.tmp / "sshd_config"
        config.write_text(
            f"Port {self.port}\n"
            "ListenAddress 127.0.0.1\n"
            f"HostKey {keys / 'host'}\n"
            "PidFile none\n"
            "UsePAM no\n"
            "StrictModes no\n"
            "PubkeyAuthentication yes\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "PermitRootLogin no\n"
            f"AllowUsers {self.name}\n"
            "X11Forwarding no\n"
            "AllowTcpForwarding no\n"
            "LogLevel VERBOSE\n"
            "SetEnv " + " ".join(f"{k}={v}" for k, v in env.items()) + "\n"
        )
        privsep = Path("/run/sshd")
        if not privsep.exists():
            privsep.mkdir(mode=0o755, parents=True)
            self.created_privsep = True
        check = subprocess.run([SSHD, "-t", "-f", str(config)], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr
        with open(self.tmp / "sshd.log", "wb") as log:
            self.sshd = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        wait_until(self._listening, 30, what="sshd listening")

        (self.tmp / "known_hosts").write_text(
            f"[127.0.0.1]:{self.port} " + (keys / "host.pub").read_text()
        )
        (self.tmp / "ssh_config").write_text(
            "Host remote\n"
            "  HostName 127.0.0.1\n"
            f"  Port {self.port}\n"
            f"  User {self.name}\n"
            "Host *\n"
            f"  IdentityFile {keys / 'client'}\n"
            "  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.tmp / 'known_hosts'}\n"
            "  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n"
            "  BatchMode yes\n"
            "  ConnectTimeout 20\n"
        )

    def _listening(self) -> bool:
        assert self.sshd is not None
        if self.sshd.poll() is not None:
            raise AssertionError(f"sshd exited {self.sshd.returncode}: {self.log()}")
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def log(self) -> str:
        try:
            return (self.tmp / "sshd.log").read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    # ------------------------------------------------------------------ the client side

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SIGNALTTY_", "XDG_", "SSH_")) and k != "HOME"
        }
        env.update(
            HOME=str(self.local_home),
            SIGNALTTY_SSH_COMMAND=f"ssh -F {self.tmp / 'ssh_config'}",
            PYTHONPATH=str(REPO),
        )
        env.update(extra)
        return env

    def cli(
        self, *args: str, host: str = "remote", **extra: str
    ) -> subprocess.CompletedProcess[str]:
        """Run the real local CLI with ``--host host``."""
        return subprocess.run(
            [sys.executable, "-m", "signaltty", "--host", host, *args],
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            cwd=str(self.tmp),
            check=False,
        )

    def json(self, *args: str) -> dict:
        r = self.cli("--json", *args)
        assert r.returncode == 0, (args, r.stderr, self.log())
        return dict(json.loads(r.stdout))

    def new(self, *args: str) -> str:
        """``new`` on the remote; the pane id."""
        return str(self.json("new", *args)["pane_id"])

    def user_procs(self) -> list[psutil.Process]:
        out = []
        for proc in psutil.process_iter(["uids"]):
            with contextlib.suppress(psutil.Error):
                if proc.info["uids"] is not None and self.uid in (
                    proc.info["uids"].real,
                    proc.info["uids"].effective,
                ):
                    out.append(proc)
        return out

    def bridges(self) -> list[psutil.Process]:
        found = []
        for proc in self.user_procs():
            with contextlib.suppress(psutil.Error):
                cmd = proc.cmdline()
                if "-m" in cmd and "bridge" in cmd:  # `bridge` or a watcher's `bridge --no-start`
                    found.append(proc)
        return found

    # ------------------------------------------------------------------ teardown

    def teardown(self) -> list[str]:
        problems: list[str] = []
        if self.sshd is not None:
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(self.sshd.pid).children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        child.kill()
            self.sshd.terminate()
            try:
                self.sshd.wait(10)
            except subprocess.TimeoutExpired:
                self.sshd.kill()
                self.sshd.wait()
        if self.uid >= 0:
            for _ in range(50):  # the remote daemon, its panes, session processes
                procs = self.user_procs()
                if not procs:
                    break
                for proc in procs:
                    with contextlib.suppress(psutil.Error):
                        proc.kill()
                time.sleep(0.1)
            if self.user_procs():
                problems.append(f"processes of uid {self.uid} left: {self.user_procs()}")
        if self.user_added:
            r = subprocess.run(
                ["userdel", "-f", self.name], check=False, capture_output=True, text=True
            )
            with contextlib.suppress(KeyError):
                pwd.getpwnam(self.name)
                problems.append(f"user {self.name} not removed: {r.stderr.strip()}")
        if self.created_privsep:
            with contextlib.suppress(OSError):
                Path("/run/sshd").rmdir()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return problems


@pytest.fixture(scope="module")
def remote() -> Iterator[Remote]:
    reason = _usable()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(
                f"the OpenSSH tier must run in CI (root; tests/run.sh installs openssh-server): {reason}"
            )
        pytest.skip(reason)
    r = Remote()
    try:
        r.setup()
        yield r
    finally:
        problems = r.teardown()
    assert not problems, problems


def _ssh_children(proc: psutil.Process) -> list[psutil.Process]:
    out = []
    for child in proc.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.name() == "ssh":
                out.append(child)
    return out


def test_spawn_status_and_read_on_the_remote(remote: Remote) -> None:
    r = remote.cli("new", "--name", "far", "--", "sh", "-c", "echo hi from $(id -un); sleep 30")
    assert r.returncode == 0, (r.stderr, remote.log())
    pane_id = r.stdout.split()[0]
    assert pane_id.startswith("pane_")
    status = remote.json("status")
    # the daemon answering is the remote account's, started on demand by the bridge,
    # without the login's SSH_* variables (its panes outlive that login)
    daemon = psutil.Process(status["pid"])
    assert daemon.uids().real == remote.uid
    assert not [k for k in daemon.environ() if k.startswith("SSH_")]
    assert daemon.environ()["XDG_RUNTIME_DIR"] == str(remote.home / "run")
    human = remote.cli("status")
    assert human.returncode == 0, human.stderr
    assert str(status["pid"]) in human.stdout
    wait_until(
        lambda: f"hi from {remote.name}" in remote.cli("pane", "read", pane_id).stdout,
        30,
        what="the remote pane's output read through --host",
    )
    panes = remote.json("pane", "list")["panes"]
    assert pane_id in [p["id"] for p in panes]
    # the same daemon through an ssh:// URL and user@host:port (the port becomes ssh's -p)
    for url in (
        f"ssh://{remote.name}@127.0.0.1:{remote.port}",
        f"{remote.name}@127.0.0.1:{remote.port}",
    ):
        r = remote.cli("--json", "status", host=url)
        assert r.returncode == 0, (url, r.stderr)
        assert json.loads(r.stdout)["pid"] == status["pid"]
    # SIGNALTTY_HOST is --host's default
    r = subprocess.run(
        [sys.executable, "-m", "signaltty", "--json", "status"],
        env=remote.env(SIGNALTTY_HOST="remote"),
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pid"] == status["pid"]
    # every ssh client is gone once the commands returned; each bridge with it
    wait_until(lambda: not remote.bridges(), 20, what="the remote bridges to exit")


def test_remote_permission_answered_through_host(remote: Remote) -> None:
    log = remote.home / "agent.log"
    plan = [
        {"hook": "SessionStart", "agent": "claude", "payload": {"session_id": "S1"}},
        {"hook": "UserPromptSubmit", "agent": "claude", "payload": {"session_id": "S1"}},
        {
            "hook": "PermissionRequest",
            "agent": "claude",
            "payload": {"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "ls"}},
            "args": ["--wait-for-answer", "--wait-timeout", "60"],
        },
        {"sleep": 60},
    ]
    pane_id = remote.new(
        "--name", "agent", "-e", f"SIGNALTTY_FAKE_LOG={log}", "--", "claude", json.dumps(plan)
    )

    def pending() -> dict | None:
        return remote.json("pane", "get", pane_id)["pane"]["pending_decision"]

    wait_until(pending, 30, what="the remote permission request")
    listed = remote.json("permission", "list")["permissions"]
    assert [p["pane_id"] for p in listed] == [pane_id]
    r = remote.cli("permission", "answer", pane_id, "allow")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("answered permission_")

    def verdict() -> dict | None:
        with contextlib.suppress(OSError):
            for line in log.read_text().splitlines():
                entry = json.loads(line)
                if entry.get("hook") == "PermissionRequest":
                    return dict(entry)
        return None

    entry = wait_until(verdict, 30, what="the agent's hook to get the verdict")
    assert entry["rc"] == 0
    assert json.loads(entry["stdout"]) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }
    assert remote.json("pane", "get", pane_id)["pane"]["pending_decision"] is None


def test_a_cut_link_is_a_clear_error_and_the_remote_panes_stay(remote: Remote) -> None:
    pane_id = remote.new("--name", "stay", "--", "sleep", "60")
    before = len(remote.bridges())
    sub = subprocess.Popen(
        [sys.executable, "-m", "signaltty", "--host", "remote", "subscribe"],
        env=remote.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: len(remote.bridges()) > before, 30, what="subscribe's bridge")
        ssh = wait_until(lambda: _ssh_children(psutil.Process(sub.pid)), 10, what="its ssh")
        for proc in ssh:
            proc.kill()
        _out, err = sub.communicate(timeout=30)
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.communicate()
    assert sub.returncode == 1, err
    assert err.startswith("signaltty: over ssh to remote: ")
    assert "ssh was killed by signal 9" in err
    # the panes live on over there: a new link finds the same one
    assert pane_id in [p["id"] for p in remote.json("pane", "list")["panes"]]


def test_a_host_that_does_not_exist_is_a_clear_error(remote: Remote) -> None:
    r = remote.cli("status", host="no-such-host.invalid")
    assert r.returncode == 1
    assert r.stderr.startswith("signaltty: over ssh to no-such-host.invalid: ")
    assert "Could not resolve hostname" in r.stderr
    assert "ssh exit status 255" in r.stderr
    r = remote.cli("--json", "status", host="no-such-host.invalid")
    assert json.loads(r.stderr)["error"]["code"] == "REMOTE_UNREACHABLE"
    # an account the key does not open (sshd allows only the remote user)
    r = remote.cli("status", host="root@remote")
    assert r.returncode == 1
    assert r.stderr.startswith("signaltty: over ssh to root@remote: ")
    assert "Permission denied (publickey)" in r.stderr


def test_a_remote_without_signaltty_says_what_the_remote_said(remote: Remote) -> None:
    r = remote.cli("status", SIGNALTTY_REMOTE_COMMAND="no-such-signaltty")
    assert r.returncode == 1
    assert "no-such-signaltty" in r.stderr
    assert "not found" in r.stderr
    assert "ssh exit status 127" in r.stderr


def test_a_host_that_ssh_would_read_as_an_option_is_refused(remote: Remote) -> None:
    marker = remote.tmp / "proxy-ran"
    r = remote.cli("status", host=f"-oProxyCommand=touch {marker}")
    assert r.returncode == 2
    assert "starts with '-'" in r.stderr
    r = remote.cli("status", host=f"ssh://-oProxyCommand=touch {marker}")
    assert r.returncode == 2
    assert not marker.exists()


def test_remote_command_override_and_no_ssh_left(remote: Remote) -> None:
    r = remote.cli(
        "--json", "status", SIGNALTTY_REMOTE_COMMAND=str(remote.home / "bin" / "signaltty")
    )
    assert r.returncode == 0, r.stderr
    assert psutil.Process(json.loads(r.stdout)["pid"]).uids().real == remote.uid
    me = psutil.Process()
    assert not _ssh_children(me)
    # the ssh processes of the commands above were all reaped (none left as zombies either)
    assert not [c for c in me.children(recursive=True) if c.name() == "ssh"]


def _read_until(fd: int, needle: bytes, timeout: float = 30) -> bytes:
    buf = b""
    deadline = time.monotonic() + timeout
    while needle not in buf:
        left = deadline - time.monotonic()
        assert left > 0, f"{needle!r} not seen in {buf[-500:]!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                buf += os.read(fd, 65536)
            except OSError:
                break
    return buf


def test_attach_and_detach_through_host(remote: Remote) -> None:
    pane_id = remote.new("--name", "cat", "--", "cat")
    master, slave = os.openpty()

    def make_ctty() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [sys.executable, "-m", "signaltty", "--host", "remote", "pane", "attach", pane_id],
        env=remote.env(),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=make_ctty,
    )
    os.close(slave)
    try:
        _read_until(master, b"\x1b[H")  # the snapshot arrived through ssh
        os.write(master, b"over-the-link\r")
        _read_until(master, b"over-the-link")
        os.write(master, b"\x1d")
        _read_until(master, b"detached")
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    wait_until(
        lambda: "over-the-link" in remote.json("pane", "read", pane_id)["text"],
        30,
        what="the typed line in the remote pane",
    )
    assert remote.json("pane", "get", pane_id)["pane"]["live"] == {"state": "live"}
