"""``signaltty top`` through a real PTY against a real daemon: keys in, screen out (issue 13 §10).

The real ``python -m signaltty top`` runs on the slave side of a PTY that is its controlling
terminal (so a size change sends it SIGWINCH); everything it writes is fed into a pyte screen
and the tests assert on the rendered lines. The panes are real: a program that finished
(``done``/``unread``), fake agents blocked on a native ``PermissionRequest`` that waits for an
answer (tests/fixtures/fake_agent.py calling the real ``signaltty hook-event``), and ``cat``.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Callable, Iterator

import pyte
import pytest

from tests.conftest import DaemonProc, wait_until
from tests.server.test_hooks_e2e import agent_bin, hook

PY = sys.executable
CTTY_EXEC = (
    "import fcntl, os, sys, termios\n"
    "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
    "os.execv(sys.argv[1], sys.argv[1:])"
)


class TopTerm:
    """``signaltty top`` on a real PTY, its output rendered by a pyte screen."""

    def __init__(self, d: DaemonProc, cols: int = 100, rows: int = 30) -> None:
        self.master, self.slave = os.openpty()
        self._set_size(cols, rows)
        self.cooked = termios.tcgetattr(self.slave)
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()
        self.lock = threading.Lock()
        self.stop = threading.Event()

        env = {**d.env, "TERM": "xterm-256color"}
        # a new session whose controlling terminal is the PTY (so resizes send SIGWINCH),
        # set up by the child itself before it execs top: no preexec_fn in a threaded test
        self.proc = subprocess.Popen(
            [PY, "-c", CTTY_EXEC, PY, "-m", "signaltty", "top"],
            env=env,
            stdin=self.slave,
            stdout=self.slave,
            stderr=self.slave,
            start_new_session=True,
            cwd=str(d.root),
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _set_size(self, cols: int, rows: int) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def _read(self) -> None:
        while not self.stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if not ready:
                continue
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            with self.lock:
                self.raw += data
                self.stream.feed(data)

    def lines(self) -> list[str]:
        with self.lock:
            return list(self.screen.display)

    def text(self) -> str:
        return "\n".join(self.lines())

    def selected(self) -> str:
        """The selected row (the one marked ``>`` in the first column), or ``""``."""
        return next((ln for ln in self.lines() if ln.startswith("> ")), "")

    def row(self, needle: str) -> str:
        return next((ln for ln in self.lines() if needle in ln), "")

    def wait(self, pred: Callable[[], object], what: str, timeout: float = 20) -> None:
        try:
            wait_until(pred, timeout=timeout)
        except AssertionError:
            raise AssertionError(f"{what}; screen was:\n{self.text()}") from None

    def wait_text(self, needle: str, timeout: float = 20) -> None:
        self.wait(lambda: needle in self.text(), f"{needle!r} never shown", timeout)

    def press(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def step(self, key: bytes, what: str) -> str:
        """Press ``key`` and wait until the selected row changes; return the new one."""
        before = self.selected()
        self.press(key)
        self.wait(lambda: self.selected() != before, f"{what}: the selection did not move")
        return self.selected()

    def resize(self, cols: int, rows: int) -> None:
        with self.lock:
            self.screen.resize(rows, cols)
        self._set_size(cols, rows)  # the kernel sends SIGWINCH to top

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stop.set()
        self.reader.join(5)
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def top_term(daemon: DaemonProc) -> Iterator[Callable[..., TopTerm]]:
    started: list[TopTerm] = []

    def start(cols: int = 100, rows: int = 30) -> TopTerm:
        t = TopTerm(daemon, cols, rows)
        started.append(t)
        return t

    yield start
    for t in started:
        t.close()


def _workspace(d: DaemonProc, name: str) -> str:
    return d.call("workspace.create", {"name": name, "cwd": str(d.root)})["workspace"]["id"]


def _spawn(
    d: DaemonProc, ws_name: str, argv: list[str], label: str, env: dict[str, str] | None = None
) -> str:
    params = {"workspace_id": _workspace(d, ws_name), "argv": argv, "label": label, "env": env}
    return d.call("pane.spawn", {k: v for k, v in params.items() if v is not None})["pane"]["id"]


def _permission_agent(
    d: DaemonProc, label: str, command: str
) -> tuple[str, Callable[[], list[dict]]]:
    """A fake claude blocked on a PermissionRequest waiting for an answer; returns its pane
    id and a reader of its log (each hook's exit code and stdout)."""
    log = d.root / f"{label}.log"
    plan = [
        hook("SessionStart", {"session_id": label}),
        hook("UserPromptSubmit", {"session_id": label}),
        hook(
            "PermissionRequest",
            {"session_id": label, "tool_name": "Bash", "tool_input": {"command": command}},
            args=["--wait-for-answer", "--wait-timeout", "120"],
        ),
        {"wait_file": str(d.root / "never")},
    ]
    pane = _spawn(
        d,
        "agents",
        [str(agent_bin(d.root)), json.dumps(plan)],
        label,
        env={"SIGNALTTY_FAKE_LOG": str(log), "SIGNALTTY_FAKE_LINGER": "60"},
    )

    def entries() -> list[dict]:
        try:
            return [json.loads(x) for x in log.read_text().splitlines()]
        except FileNotFoundError:
            return []

    return pane, entries


def _pane(d: DaemonProc, pane_id: str) -> dict:
    return d.call("pane.get", {"pane_id": pane_id})["pane"]


def _verdict(entries: Callable[[], list[dict]]) -> dict:
    """The answer the agent's PermissionRequest hook printed (its third log entry)."""
    log = wait_until(lambda: len(entries()) >= 3 and entries(), timeout=20)
    return json.loads(log[2]["stdout"])["hookSpecificOutput"]["decision"]


def test_top_live_view_keys_and_screen(daemon, top_term):
    job = _spawn(daemon, "build", [PY, "-c", "print('built ok')"], "job")
    cat = _spawn(daemon, "shell", ["cat"], "cat")
    # the command has a second line and an escape sequence: the view shows the first line only,
    # without the escape (neither acted on nor drawn as ^[)
    deny_id, deny_log = _permission_agent(daemon, "p-deny", "rm -rf build/\x1b[2J\nsecond-line")
    allow_id, allow_log = _permission_agent(daemon, "p-allow", "make deploy")
    for pid in (deny_id, allow_id):
        wait_until(
            lambda pid=pid: (_pane(daemon, pid)["pending_decision"] or {}).get("answerable"),
            timeout=20,
        )
    wait_until(lambda: _pane(daemon, job)["attention"] == "unread", timeout=20)

    t = top_term(100, 30)
    t.wait_text("signaltty top")
    t.wait_text("[p-allow]")
    # the job's program is gone: its exit code instead of a lifecycle (it looks dead)
    assert "unread" in t.row("[job]")
    assert "exited 0" in t.row("[job]")
    assert "build" in t.row("[job]")
    # two workspaces named "agents": their handles tell them apart
    assert "agents " in t.row("[p-deny]") + t.row("[p-allow]")
    assert "agents-2" in t.row("[p-deny]") + t.row("[p-allow]")
    assert "permission" in t.row("[p-deny]")
    assert "blocked" in t.row("[p-deny]")
    assert "Bash: rm -rf build/ …" in t.text()
    assert "Bash: make deploy" in t.text()
    assert "second-line" not in t.text()
    assert "^[" not in t.text()
    assert "[2J" not in t.text()
    # prompt_toolkit took the terminal (raw mode) while it runs
    assert not termios.tcgetattr(t.slave)[3] & termios.ICANON

    # next unread: the two permission requests first (most urgent), then the unread job
    first = t.step(b"n", "next unread")
    second = t.step(b"n", "next unread")
    assert {"[p-deny]" in first, "[p-deny]" in second} == {True, False}
    assert "[p-allow]" in first + second
    assert "[job]" in t.step(b"n", "next unread")

    # mark seen: the daemon clears the pane's attention and the row follows
    t.press(b"s")
    wait_until(lambda: _pane(daemon, job)["attention"] == "none", timeout=10)
    t.wait(lambda: "unread" not in t.row("[job]"), "the job row still says unread")
    t.wait_text("marked seen")

    # Deny takes one key; the decision resolves in the daemon and the agent gets the verdict
    while "[p-deny]" not in t.selected():
        t.step(b"n", "next unread")
    t.press(b"d")
    assert _verdict(deny_log)["behavior"] == "deny"
    wait_until(lambda: _pane(daemon, deny_id)["pending_decision"] is None, timeout=10)
    t.wait(lambda: "rm -rf build/" not in t.text(), "the answered permission is still shown")

    # Allow once asks for a `y` first: no answer before it, and any other key cancels
    while "[p-allow]" not in t.selected():
        t.step(b"n", "next unread")
    t.press(b"a")
    t.wait_text("Allow once: Bash: make deploy?")
    t.press(b"x")
    t.wait_text("not allowed")
    assert _pane(daemon, allow_id)["pending_decision"] is not None
    assert len(allow_log()) == 2
    t.press(b"a")
    t.wait_text("Allow once: Bash: make deploy?")
    assert _pane(daemon, allow_id)["pending_decision"] is not None
    assert len(allow_log()) == 2
    t.press(b"y")
    assert _verdict(allow_log)["behavior"] == "allow"
    wait_until(lambda: _pane(daemon, allow_id)["pending_decision"] is None, timeout=10)
    t.wait(lambda: "make deploy" not in t.text(), "the allowed permission is still shown")

    # a change arrives without a key press: a new pane appears
    _spawn(daemon, "late", ["cat"], "late")
    t.wait_text("[late]")

    # attach to the cat pane, type through, detach with Ctrl+], and top is back
    t.press(b"g")  # to the first row (the one under the column names)
    t.wait(lambda: t.lines()[2].startswith("> "), "g did not select the first row")
    for _ in range(10):
        if "[cat]" in t.selected():
            break
        t.step(b"j", "move down")
    assert "[cat]" in t.selected()
    t.press(b"\r")
    t.wait(lambda: "signaltty top" not in t.text(), "attach did not take the screen")
    t.press(b"typed-in-top\r")
    wait_until(
        lambda: "typed-in-top" in daemon.call("pane.read", {"pane_id": cat})["text"], timeout=10
    )
    t.press(b"\x1d")
    t.wait_text("signaltty top")
    t.wait_text(f"detached from {cat}")
    assert "[cat]" in t.selected()

    # a 20-column terminal: a clear line, no crash; wide again: the table is back
    t.resize(20, 30)
    t.wait_text("terminal too small")
    assert t.proc.poll() is None
    assert all(len(ln.rstrip()) <= 20 for ln in t.lines())
    t.resize(100, 30)
    t.wait_text("[late]")

    t.press(b"q")
    assert t.proc.wait(10) == 0
    attrs = termios.tcgetattr(t.slave)
    assert attrs[3] & termios.ICANON
    assert attrs[3] & termios.ECHO
    with t.lock:
        raw = bytes(t.raw)
    assert raw.rfind(b"\x1b[?1049l") > raw.rfind(b"\x1b[?1049h") >= 0  # left the alternate screen


def test_top_dead_pane_says_so_and_enter_says_why(daemon, top_term):
    dead = _spawn(daemon, "gone", [PY, "-c", "import sys; sys.exit(3)"], "dead")
    _spawn(daemon, "here", ["cat"], "alive")
    wait_until(lambda: _pane(daemon, dead)["live"]["state"] == "exited", timeout=20)
    t = top_term(100, 30)
    t.wait_text("[alive]")
    t.wait(lambda: "exited 3" in t.row("[dead]"), "the dead pane does not say so")
    first = t.row("[dead]")

    def clock() -> str:
        return t.lines()[0].rstrip()[-8:]

    start = clock()
    later = {_later(start, n) for n in range(2, 6)}  # a skipped redraw second is fine
    t.wait(lambda: clock() in later, "the clock did not move 2 s", timeout=10)
    # its AGE is the time since it ended, which goes on (not frozen at 0s)
    t.wait(lambda: t.row("[dead]") != first, "the dead pane's age did not move", timeout=5)
    assert "exited 3" in t.row("[dead]")
    while "[dead]" not in t.selected():
        t.step(b"j", "move down")
    t.press(b"\r")
    t.wait_text("cannot attach:")
    assert f"{dead[:13]} has exited (code 3)" in t.text()
    assert "signaltty top" in t.text()
    assert t.proc.poll() is None
    t.press(b"q")
    assert t.proc.wait(10) == 0


def _later(hms: str, seconds: int) -> str:
    h, m, s = (int(x) for x in hms.split(":"))
    total = (h * 3600 + m * 60 + s + seconds) % 86400
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def test_top_reconnects_when_the_daemon_comes_back(daemon, top_term):
    _spawn(daemon, "w", ["cat"], "first")
    t = top_term(80, 24)
    t.wait_text("[first]")
    daemon.call("server.shutdown", {"force": True})
    daemon.proc.wait(15)
    t.wait_text("daemon not running")
    assert t.proc.poll() is None
    daemon.start()
    _spawn(daemon, "w", ["cat"], "second")
    t.wait_text("[second]")
    t.press(b"\x03")  # Ctrl+C quits too
    assert t.proc.wait(10) == 0


def test_top_acts_after_its_request_connection_idled_out(tmp_root):
    """The daemon closes a connection idle for ``server.idle_timeout_s`` (not the subscribed
    one): a key pressed after a quiet spell still reaches the daemon."""
    cfg = tmp_root / "config" / "signaltty"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text("[server]\nidle_timeout_s = 1\n")
    d = DaemonProc(tmp_root)
    d.start()
    t = None
    try:
        job = _spawn(d, "build", [PY, "-c", "print('ok')"], "job")
        wait_until(lambda: _pane(d, job)["attention"] == "unread", timeout=20)
        t = TopTerm(d, 100, 30)
        t.wait(lambda: "unread" in t.row("[job]"), "the job is not shown unread")
        # top's request connection went quiet and the daemon closed it
        wait_until(lambda: d.call("server.status")["connections"]["closed_idle"] >= 1, timeout=15)
        assert "daemon not running" not in t.text()
        assert t.proc.poll() is None
        t.press(b"s")
        wait_until(lambda: _pane(d, job)["attention"] == "none", timeout=10)
        t.wait_text("marked seen")
        t.press(b"q")
        assert t.proc.wait(10) == 0
    finally:
        if t is not None:
            t.close()
        d.stop()
        assert not d.kill_leftovers()


def test_top_without_a_terminal_or_daemon(daemon, tmp_root):
    r = daemon.cli("top")  # stdin/stdout are pipes here
    assert r.returncode == 1
    assert "top needs a terminal" in r.stderr
    env = {**daemon.env, "SIGNALTTY_SOCKET": str(tmp_root / "none.sock")}
    master, slave = os.openpty()
    try:
        proc = subprocess.run(
            [PY, "-m", "signaltty", "top"],
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=subprocess.PIPE,
            timeout=30,
            cwd=str(tmp_root),
        )
    finally:
        os.close(master)
        os.close(slave)
    assert proc.returncode == 1
    assert b"is the daemon running?" in proc.stderr


def test_top_imports_prompt_toolkit_only_for_top():
    code = (
        "import signaltty.cli.main as m, sys; m.build_parser(); "
        "print('prompt_toolkit' in sys.modules)"
    )
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    out = subprocess.run(
        [PY, "-c", "import signaltty.cli.top, sys; print('prompt_toolkit' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "True"
