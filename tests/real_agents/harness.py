"""Driving one real agent CLI in a signaltty pane against the fake model (issue 11 tier).

A :class:`Session` owns a hermetic daemon (``tests.conftest.DaemonProc``: its own socket,
state and ``HOME`` under a temp dir), the fake model (``fake_model.FakeModel``) and one pane
running the agent. The agent's configuration lives in that temp ``HOME`` only; signaltty's
own integration is installed by the daemon at spawn (docs/integrations.md, automatic
configuration), never by the test.

Timing discipline: every wait on the agent is a wait on its **screen** (``pane.read`` in
screen mode) with a generous deadline; only then is signaltty's state checked, with the
issue's 2 s bound, through the daemon's ``wait`` (and ``pane.get`` for the other axis).
Driving failures (the CLI did not draw what it always draws) raise :class:`DriveError`,
which strict ``xfail(raises=AssertionError)`` marks do not swallow; only state/effect
checks raise ``AssertionError``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import REPO, DaemonProc, wait_until
from tests.desktop.busfix import PrivateBus, have_dbus
from tests.real_agents.fake_model import FakeModel

STATE_BUDGET_S = 2.0  # issue 11: signaltty agrees with the screen within 2 s
# signaltty's D-Bus service (protocol.md §8; tests/desktop/test_dbus_interface.py)
DBUS_NAME, DBUS_PATH, DBUS_IFACE = "dev.signaltty.Signaltty", "/dev/signaltty/Signaltty", "dev.signaltty.Signaltty1"
SCREEN_TIMEOUT_S = 45.0  # generous: the CLIs are heavy on a loaded 2-core machine
POLL_S = 0.1


# environment variables that make CLIs believe they run under CI (is-in-ci, ci-info)
CI_VARS = ("CI", "CONTINUOUS_INTEGRATION", "BUILD_NUMBER", "RUN_ID", "GITHUB_ACTIONS", "GITLAB_CI")

class DriveError(RuntimeError):
    """The agent did not reach a screen the scenario needs (not a signaltty verdict)."""


def agents_bin_dir() -> Path | None:
    """``$SIGNALTTY_REAL_AGENTS_DIR``'s npm bin dir, else the one tests/run.sh fills in the checkout."""
    value = os.environ.get("SIGNALTTY_REAL_AGENTS_DIR")
    if value:
        return Path(value) / "node_modules" / ".bin"
    default = REPO / ".real-agents" / "node_modules" / ".bin"
    return default if default.is_dir() else None


def require_binary(name: str) -> str:
    """The CLI's path; skip with one reason outside CI, fail under CI (``CI=true``)."""
    bindir = agents_bin_dir()
    path = bindir / name if bindir is not None else None
    if path is not None and os.access(path, os.X_OK):
        return str(path)
    why = (f"real agent CLI '{name}' not installed: set SIGNALTTY_REAL_AGENTS_DIR to the npm prefix "
           "tests/run.sh installs (.real-agents)") if path is None else f"real agent CLI missing: {path}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why} (under CI the real-agent tier must run)", pytrace=False)
    pytest.skip(why)


@dataclass
class Observation:
    """What signaltty said when the screen showed a state."""

    ok: bool
    want: str
    lifecycle: str
    attention: str
    elapsed: float
    screen: str
    explain: str = ""
    notes: list[str] = field(default_factory=list)

    def message(self) -> str:
        tail = "\n".join(line for line in self.screen.splitlines() if line.strip())[-1800:]
        notes = "".join(f"\n{n}" for n in self.notes)
        return (f"screen showed {self.want!r} but signaltty said {self.lifecycle}/{self.attention} "
                f"{self.elapsed:.1f} s later{notes}\n--- explain: {self.explain}\n--- screen:\n{tail}")


@dataclass
class Agent:
    """How to run and read one CLI.

    ``setup(session)`` writes its config into the temp home and returns extra daemon (so
    pane) environment; the regexes are matched against the visible screen.
    """

    name: str
    binary: str
    args: list[str]
    setup: Callable[[Session], dict[str, str]]
    idle: str  # the agent's prompt, ready for input, no turn running
    working: str  # a turn is running
    dialog: str  # its permission dialog is on screen
    allow_keys: list[bytes]  # answer "allow once" in that dialog
    deny_keys: list[bytes]  # answer "no" in that dialog
    quit_keys: list[bytes]
    interrupted: str  # what the screen shows once Esc stopped a turn
    clear_after_esc: bytes = b""  # keys that empty the input line afterwards
    esc_keys: list[bytes] = field(default_factory=lambda: [b"\x1b"])  # interrupt a running turn
    deny_cancels_turn: bool = False  # "no" in its dialog ends the turn like Esc (no model call)
    submit_delay: float = 0.5
    # the input line's placeholder, shown only while it is empty (keys typed into an agent
    # still starting can be dropped: with this set, ``prompt`` types them again)
    empty_input: str | None = None


class Session:
    """One agent CLI in one signaltty pane, with its own daemon and fake model."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.binary = require_binary(agent.binary)
        self.root = Path(tempfile.mkdtemp(prefix="sra-", dir="/tmp"))
        self.home = self.root / "home"
        self.home.mkdir()
        self.work = self.root / "work"
        self.work.mkdir()
        self.model = FakeModel().start()
        # a private session bus: permissions are answered over D-Bus too (issue 11 scenario)
        if not have_dbus():
            shutil.rmtree(self.root, ignore_errors=True)
            self.model.stop()
            if os.environ.get("CI") == "true":
                pytest.fail("dbus-daemon is not installed (under CI the real-agent tier must run)", pytrace=False)
            pytest.skip("dbus-daemon is not installed")
        self.bus = PrivateBus()
        self.daemon: DaemonProc | None = None
        self.pane_id = ""

    # ------------------------------------------------------------------ life

    def start(self) -> None:
        env = {**self.agent.setup(self), **self.bus.env(), "SIGNALTTY_DBUS": "1"}
        self.daemon = DaemonProc(self.root, env)
        # The agents run in panes the way a person starts them, not as CI jobs: Gemini CLI
        # (and other Node CLIs using is-in-ci) turn non-interactive when they see these.
        for var in CI_VARS:
            self.daemon.env.pop(var, None)
        self.daemon.start()
        self._wait_dbus()
        ws = self.call("workspace.create", {"name": self.agent.name, "cwd": str(self.work)})["workspace"]
        pane = self.call("pane.spawn", {"workspace_id": ws["id"], "argv": [self.binary, *self.agent.args],
                                        "cwd": str(self.work), "cols": 120, "rows": 40})["pane"]
        self.pane_id = pane["id"]

    def close(self) -> None:
        try:
            if self.daemon is not None:
                with contextlib.suppress(Exception):
                    self.call("pane.close", {"pane_id": self.pane_id, "signal": "KILL"})
                self.daemon.stop()
                self.daemon.kill_leftovers()
        finally:
            self.model.stop()
            self.bus.stop()
            kill_strays(self.root)
            shutil.rmtree(self.root, ignore_errors=True)

    def _wait_dbus(self) -> None:
        try:
            wait_until(lambda: self.call("server.status")["dbus"]["name_owned"], timeout=20)
        except AssertionError:
            raise DriveError(f"{self.agent.name}: the daemon never owned {DBUS_NAME} on the private bus\n"
                             f"{self.call('server.status').get('dbus')}") from None

    def restart_daemon(self) -> list[int]:
        """Stop the daemon (SIGTERM: every pane program ends, the snapshot is saved) and
        start it again on the same state; returns the pids of its children that outlived it."""
        assert self.daemon is not None
        self.daemon.stop()
        left = self.daemon.kill_leftovers()
        self.daemon.start()
        self._wait_dbus()
        return left

    def answer_dbus(self, verdict: str) -> subprocess.CompletedProcess[str]:
        """``AnswerPermission(pane_id, verdict)`` with ``dbus-send`` from outside every pane."""
        return subprocess.run(
            ["dbus-send", f"--bus={self.bus.address}", "--print-reply", f"--dest={DBUS_NAME}", DBUS_PATH,
             f"{DBUS_IFACE}.AnswerPermission", f"string:{self.pane_id}", f"string:{verdict}"],
            capture_output=True, text=True, timeout=30)

    # ------------------------------------------------------------------ daemon access

    def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 10.0) -> dict[str, Any]:
        assert self.daemon is not None
        with self.daemon.client(timeout=timeout) as cl:
            return cl.call(method, params)

    def pane(self) -> dict[str, Any]:
        return self.call("pane.get", {"pane_id": self.pane_id})["pane"]

    def state(self) -> tuple[str, str]:
        p = self.pane()
        return p["lifecycle"], p["attention"]

    def screen(self) -> str:
        return self.call("pane.read", {"pane_id": self.pane_id, "mode": "screen"})["text"]

    def explain(self) -> str:
        with contextlib.suppress(Exception):
            e = self.call("pane.explain", {"pane_id": self.pane_id})
            return json.dumps({k: e[k] for k in ("authority", "winner", "lifecycle", "attention") if k in e})[:600]
        return ""

    def permissions(self) -> list[dict[str, Any]]:
        return self.call("permission.list", {"pane_id": self.pane_id}).get("permissions", [])

    def cli(self, *args: str) -> Any:
        assert self.daemon is not None
        return self.daemon.cli(*args)

    # ------------------------------------------------------------------ input

    def send(self, data: bytes) -> None:
        self.call("pane.input", {"pane_id": self.pane_id, "data_b64": base64.b64encode(data).decode()})

    def prompt(self, text: str) -> None:
        """Type ``text``, wait until the input line shows it, then press Enter.

        Enter goes separately: Codex turns a fast "text+Enter" burst into a newline.
        """
        self.send(text.encode())
        empty = self.agent.empty_input
        try:
            self.wait_screen(lambda s: text in s, f"the typed prompt {text!r}", timeout=8 if empty else 20)
        except DriveError:
            # Gemini CLI drops keys typed while it still starts after a resume (its prompt is
            # drawn, then drawn again once its SessionStart hook ran): type again only while
            # its input line is still empty, so no key is ever doubled
            if empty is None or not re.search(empty, self.screen(), re.M):
                raise
            self.send(text.encode())
            self.wait_screen(lambda s: text in s, f"the typed prompt {text!r}", timeout=12)
        time.sleep(self.agent.submit_delay)  # per agent: a fast text+Enter is taken as a paste
        self.send(b"\r")

    # ------------------------------------------------------------------ screen waits

    def wait_screen(self, pred: Callable[[str], Any], what: str, timeout: float = SCREEN_TIMEOUT_S) -> str:
        """Poll the visible screen until ``pred`` holds; :class:`DriveError` on timeout."""
        deadline = time.monotonic() + timeout
        text = ""
        while True:
            text = self.screen()
            if pred(text):
                return text
            if time.monotonic() > deadline:
                raise DriveError(f"{self.agent.name}: the screen never showed {what} within {timeout:.0f} s; "
                                 f"signaltty says {'/'.join(self.state())}\nfake model:\n{self.model.summary()}\n"
                                 f"--- screen:\n{text}")
            time.sleep(POLL_S)

    def shows(self, text: str, key: str) -> bool:
        return re.search(getattr(self.agent, key), text, re.M) is not None

    # ------------------------------------------------------------------ state checks

    def expect(self, lifecycle: Iterable[str] | str, attention: Iterable[str] | str | None,
               want: str, budget: float = STATE_BUDGET_S) -> Observation:
        """Wait (≤ ``budget``) until signaltty's lifecycle and attention are among the given ones.

        Uses the daemon's ``wait`` for the lifecycle (first satisfied wins), then ``pane.get``
        for both axes together until the same deadline.
        """
        lifes = [lifecycle] if isinstance(lifecycle, str) else list(lifecycle)
        attns = None if attention is None else ([attention] if isinstance(attention, str) else list(attention))
        start = time.monotonic()
        deadline = start + budget
        with contextlib.suppress(SignalttyError):
            self.call("wait", {"pane_id": self.pane_id, "until": lifes, "timeout_s": budget}, timeout=budget + 5)
        life, attn = self.state()
        while not (life in lifes and (attns is None or attn in attns)) and time.monotonic() < deadline:
            time.sleep(0.05)
            life, attn = self.state()
        ok = life in lifes and (attns is None or attn in attns)
        screen = self.screen()
        return Observation(ok, want, life, attn, time.monotonic() - start, screen, "" if ok else self.explain())


    def hold(self, lifecycle: str, attention: str, want: str, seconds: float = STATE_BUDGET_S) -> Observation:
        """Whether signaltty keeps saying ``lifecycle``/``attention`` for ``seconds``."""
        start = time.monotonic()
        seen: list[str] = []
        while True:
            life, attn = self.state()
            if (life, attn) != (lifecycle, attention):
                seen.append(f"{life}/{attn} after {time.monotonic() - start:.1f} s")
                break
            if time.monotonic() - start >= seconds:
                break
            time.sleep(0.1)
        ok = not seen
        return Observation(ok, want, life, attn, time.monotonic() - start, self.screen(),
                           "" if ok else self.explain(), [f"changed to {seen[0]}"] if seen else [])


def kill_strays(root: Path) -> None:
    """SIGKILL processes that still run from our temp root (e.g. a detached Codex server)."""
    mine = str(root)
    for proc in psutil.process_iter(["pid", "cmdline", "cwd"]):
        with contextlib.suppress(psutil.Error):
            info = proc.info
            text = " ".join(info.get("cmdline") or []) + " " + (info.get("cwd") or "")
            if mine in text and proc.pid != os.getpid():
                os.kill(proc.pid, signal.SIGKILL)
