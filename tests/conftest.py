"""Shared fixtures: a real daemon in a hermetic temp home, and clients for it.

``daemon`` starts ``python -m signaltty daemon`` as a subprocess with its own socket, state,
config and HOME under a temp dir, waits for readiness, and on teardown shuts it down (SIGTERM,
then SIGKILL) and checks that none of its children are left running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from signaltty.proto.client import Client
from tests.waiting import holds_for, wait_until

__all__ = ["REPO", "DaemonProc", "holds_for", "wait_until"]  # the helpers tests import from here

REPO = Path(__file__).resolve().parent.parent


class DaemonProc:
    """A running daemon subprocess and its hermetic environment."""

    def __init__(self, root: Path, extra_env: dict[str, str] | None = None) -> None:
        self.root = root
        self.home = root / "home"
        self.home.mkdir(exist_ok=True)
        self.state_dir = root / "state"
        self.socket = str(root / "s.sock")
        self.env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SIGNALTTY_", "XDG_", "NOTIFY_SOCKET", "WATCHDOG_"))
        }
        self.env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(root / "config"),
            XDG_STATE_HOME=str(root / "xdgstate"),
            XDG_RUNTIME_DIR=str(root / "run"),
            SIGNALTTY_SOCKET=self.socket,
            SIGNALTTY_DBUS="0",
            SIGNALTTY_NOTIFY="0",
            # never the machine's own logind (tests/system/test_logind.py serves a fake one)
            SIGNALTTY_LOGIND="0",
            SIGNALTTY_SHELL_PATH="0",
            SIGNALTTY_INTEGRATION_HOME=str(self.home),
            PYTHONPATH=str(REPO),
            # the installed console script (`signaltty hook-event` inside panes)
            PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)]),
        )
        self.env.update(extra_env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.children: list[psutil.Process] = []

    def cli(self, *args: str, input: bytes | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Run the real console entry point against this daemon."""
        return subprocess.run(
            [sys.executable, "-m", "signaltty", *args],
            env=self.env,
            input=input.decode() if input is not None else None,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=str(self.root),
        )

    def write_config(self, text: str) -> None:
        """Write ``config.toml`` where the daemon reads it (``$XDG_CONFIG_HOME/signaltty``)."""
        cfg = self.root / "config" / "signaltty"
        cfg.mkdir(parents=True, exist_ok=True)
        (cfg / "config.toml").write_text(text)

    def start(self, *extra: str, prefix: tuple[str, ...] = ()) -> None:
        """Start the daemon; ``prefix``: a command it runs under (one dropping a capability)."""
        argv = [sys.executable, "-m", "signaltty", "daemon", "--state-dir", str(self.state_dir)]
        # the child keeps its own copy of the descriptor; ours can close once it is spawned
        with open(self.root / "daemon.stderr", "ab") as log:
            self.proc = subprocess.Popen(
                [*prefix, *argv, *extra],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                cwd=str(self.root),
            )
        deadline = time.monotonic() + 30  # generous: CI machines are shared and loaded
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited {self.proc.returncode}: {self.stderr()}")
            try:
                with Client(self.socket, timeout=1) as cl:
                    cl.call("server.status")
                return
            except OSError:
                time.sleep(0.05)
        why = self.stderr()
        self.stop()  # a daemon that never got ready must not outlive the test
        self.kill_leftovers()
        raise RuntimeError(f"daemon did not become ready: {why}")

    def stderr(self) -> str:
        try:
            return (self.root / "daemon.stderr").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def client(self, timeout: float | None = 5.0) -> Client:
        return Client(self.socket, timeout=timeout)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        with self.client() as cl:
            return cl.call(method, params)

    def stop(self, timeout: float = 15) -> int | None:
        """SIGTERM and wait; SIGKILL on timeout. Returns the exit code."""
        if self.proc is None:
            return None
        try:
            self.children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            self.children = []
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code

    def kill_leftovers(self) -> list[int]:
        """SIGKILL children of the last run still alive; return their pids."""
        alive = []
        for child in self.children:
            try:
                if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                    alive.append(child.pid)
                    child.kill()
            except psutil.NoSuchProcess:
                pass
        return alive


@pytest.fixture
def tmp_root() -> Iterator[Path]:
    # Short paths: a Unix socket path must fit in 107 bytes.
    with tempfile.TemporaryDirectory(prefix="st-", dir="/tmp") as d:
        yield Path(d)


@pytest.fixture
def daemon(tmp_root: Path) -> Iterator[DaemonProc]:
    d = DaemonProc(tmp_root)
    d.start()
    try:
        yield d
    finally:
        d.stop()
        leftovers = d.kill_leftovers()
        assert not leftovers, f"daemon left children running: {leftovers}"


@pytest.fixture
def configured(tmp_root: Path) -> Iterator[Any]:
    """``configured(text)`` starts a daemon with that ``config.toml``; all are stopped (and
    checked for leftover children) at teardown."""
    started: list[DaemonProc] = []

    def start(config: str) -> DaemonProc:
        d = DaemonProc(tmp_root)
        d.write_config(config)
        d.start()
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()
        assert not d.kill_leftovers()
