"""A second local user for the trust tests: created with ``useradd`` as root, removed with
every process it ran afterwards (also on failure).

Without root the tests that need it skip with the reason; with ``CI`` set they fail
instead (CI runs as root). The user reaches the private test bus (its config allows every
uid, like a shared system's session bus reachable by others would) with tools nobody here
wrote (``dbus-send``) or with the test notification server run by the system Python from a
temp dir it can read (jeepney copied there: the test venv lives under a directory other
users cannot enter).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import jeepney
import psutil
import pytest

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int

    def run(self, argv: list[str], **kw) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, **self.popen_args(), capture_output=True, text=True, **kw)

    def popen_args(self) -> dict:
        return {
            "user": self.uid,
            "group": self.gid,
            "extra_groups": [],
            "env": {"PATH": "/usr/bin:/bin", "HOME": "/", "LANG": "C.UTF-8"},
            "cwd": "/",
        }


def unusable() -> str | None:
    """Why this machine cannot create a second user, or None."""
    if os.geteuid() != 0:
        return "needs root to create a second user (useradd)"
    for tool in ("useradd", "userdel"):
        if shutil.which(tool) is None:
            return f"missing {tool} (Debian package passwd)"
    return None


def require_other_user() -> None:
    reason = unusable()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: CI must run the cross-user tests")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def other_user() -> Iterator[User]:
    require_other_user()
    name = f"sttrust{secrets.token_hex(3)}"
    subprocess.run(
        ["useradd", "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    try:
        pw = pwd.getpwnam(name)
        yield User(name, pw.pw_uid, pw.pw_gid)
    finally:
        _kill_all(pwd.getpwnam(name).pw_uid)
        subprocess.run(["userdel", name], check=False, capture_output=True)
        if subprocess.run(["getent", "group", name], capture_output=True).returncode == 0:
            subprocess.run(["groupdel", name], check=False, capture_output=True)


def _kill_all(uid: int) -> None:
    procs = [
        p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid
    ]
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(procs, timeout=5)


def system_python() -> str:
    """An interpreter the other user can run (the venv's is under a 0700 home)."""
    for cand in ("/usr/bin/python3", "/bin/python3"):
        if os.access(cand, os.X_OK):
            return cand
    if os.environ.get("CI"):
        pytest.fail("no /usr/bin/python3 for the second user (Debian package python3)")
    pytest.skip("no /usr/bin/python3 for the second user (Debian package python3)")
    raise AssertionError  # not reached


_DRIVER = """
import sys
from busfix import NotificationServer
server = NotificationServer(sys.argv[1])
print("ready", server.conn.unique_name, flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "signal":  # signal MEMBER ID ARG: emit as this server, broadcast
        sig = "us" if cmd[1] == "ActionInvoked" else "uu"
        arg = cmd[3] if sig == "us" else int(cmd[3])
        server._signal(cmd[1], sig, (int(cmd[2]), arg))
        print("sent", flush=True)
    elif cmd[0] == "calls":
        print(" ".join(m for m, _ in server.log) or "-", flush=True)
    elif cmd[0] == "quit":
        break
server.close()
"""


class ForeignServer:
    """``tests/desktop/busfix.NotificationServer`` run as ``user``: owns
    ``org.freedesktop.Notifications`` on ``address`` and emits signals on request."""

    def __init__(self, user: User, address: str) -> None:
        python = system_python()
        self.dir = Path(tempfile.mkdtemp(prefix="stforeign-", dir="/tmp"))
        os.chmod(self.dir, 0o755)
        shutil.copytree(Path(jeepney.__file__).parent, self.dir / "jeepney")
        shutil.copy(HERE / "busfix.py", self.dir / "busfix.py")
        (self.dir / "driver.py").write_text(_DRIVER)
        args = user.popen_args()
        args["env"] = {**args["env"], "PYTHONPATH": str(self.dir), "PYTHONDONTWRITEBYTECODE": "1"}
        self.proc = subprocess.Popen(
            [python, str(self.dir / "driver.py"), address],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **args,
        )
        ready = self._line()
        if not ready.startswith("ready "):
            err = self.proc.stderr.read() if self.proc.poll() is not None else ""
            self.stop()
            raise RuntimeError(f"foreign notification server did not start: {ready!r} {err}")
        self.unique_name = ready.split()[1]

    def _line(self, timeout: float = 15) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        import select

        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if r:
                return self.proc.stdout.readline().strip()
            if self.proc.poll() is not None:
                return ""
        raise AssertionError("the foreign notification server did not answer")

    def command(self, text: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        return self._line()

    def calls(self) -> list[str]:
        out = self.command("calls")
        return [] if out == "-" else out.split()

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.command("quit")
                self.proc.wait(5)
            except (AssertionError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
