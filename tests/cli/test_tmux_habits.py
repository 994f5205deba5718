"""tmux habits (issue 13 item 9), end to end through the real ``signaltty`` command against a
real daemon: ``new -e``/``--attach``, short pane ids, ``pane input --keys``, an attached
viewer keeping its pane from turning ``unread``, aligned ``subscribe`` output.

Programs in panes are real (``python -c`` scripts, ``cat``); ``--attach`` and ``pane attach``
run on the slave side of a real PTY that is their controlling terminal.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from signaltty.proto.envelope import SignalttyError
from tests.cli.test_cli import _read_until, _set_size
from tests.conftest import DaemonProc, wait_until

PY = sys.executable
CTTY_EXEC = (
    "import fcntl, os, sys, termios\n"
    "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
    "os.execv(sys.argv[1], sys.argv[1:])"
)
# prints each read of its raw-mode stdin as hex (C-c is a byte here, not SIGINT)
HEX_ECHO = (
    "import os, sys, tty\n"
    "tty.setraw(0)\n"
    "sys.stdout.write('ready\\r\\n'); sys.stdout.flush()\n"
    "while True:\n"
    "    data = os.read(0, 4096)\n"
    "    if not data: break\n"
    "    sys.stdout.write('HEX:' + data.hex() + '\\r\\n'); sys.stdout.flush()\n"
)
# waits for a line, then rings, posts an OSC 777 notification, says "rang"; waits for a
# second line, then exits 0
BELL_THEN_EXIT = (
    "import sys\n"
    "sys.stdin.readline()\n"
    "sys.stdout.write('\\a\\x1b]777;notify;Build;finished\\x1b\\\\rang\\n'); sys.stdout.flush()\n"
    "sys.stdin.readline()\n"
)


def jcli(d: DaemonProc, *args: str) -> dict:
    r = d.cli("--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def pane(d: DaemonProc, pane_id: str) -> dict:
    return d.call("pane.get", {"pane_id": pane_id})["pane"]


class Term:
    """A ``signaltty`` command on a real PTY that is its controlling terminal."""

    def __init__(self, d: DaemonProc, *args: str) -> None:
        self.master, slave = os.openpty()
        _set_size(self.master, 100, 30)
        self.proc = subprocess.Popen(
            [PY, "-c", CTTY_EXEC, PY, "-m", "signaltty", *args],
            env={**d.env, "TERM": "xterm-256color"},
            stdin=slave, stdout=slave, stderr=slave, start_new_session=True, cwd=str(d.root),
        )
        os.close(slave)
        self.out = b""

    def expect(self, needle: bytes, timeout: float = 15) -> bytes:
        self.out += _read_until(self.master, needle, timeout)
        return self.out

    def write(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self, timeout: float = 15) -> int:
        code = self.proc.wait(timeout)
        # the rest of what it wrote (the PTY returns EIO once the slave side is gone)
        while select.select([self.master], [], [], 0.2)[0]:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.out += chunk
        return code

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


@pytest.fixture
def term(daemon) -> Iterator[list[Term]]:
    made: list[Term] = []
    yield made
    for t in made:
        t.close()


# ---------------------------------------------------------------- new -e / --attach


def env_of(d: DaemonProc, pane_id: str) -> dict:
    wait_until(lambda: pane(d, pane_id)["lifecycle"] == "done", timeout=20)
    text = d.call("pane.read", {"pane_id": pane_id})["text"]
    pairs = [ln[4:].split("=", 1) for ln in text.splitlines() if ln.startswith("ENV:")]
    return {k: json.loads(v) for k, v in pairs}


# one short line per variable (a long line would wrap at the pane's 80 columns)
PRINT_ENV = (
    "import json, os\n"
    "for k in ('FOO', 'SPACED', 'EMPTY', 'SIGNALTTY_PANE', 'B'): print('ENV:' + k + '=' + json.dumps(os.environ.get(k)))"
)


def test_new_e_reaches_the_programs_environment(daemon):
    out = jcli(daemon, "new", "-e", "FOO=bar", "--env", "SPACED=a b=c", "-e", "EMPTY=", "-e", "FOO=last", "--", PY, "-c", PRINT_ENV)
    env = env_of(daemon, out["pane_id"])
    assert env == {"FOO": "last", "SPACED": "a b=c", "EMPTY": "", "SIGNALTTY_PANE": out["pane_id"], "B": None}
    # pane spawn and pane split take it too (split: before the id and in its tail)
    sp = jcli(daemon, "pane", "spawn", "--workspace", out["workspace_id"], "-e", "FOO=spawned", "--", PY, "-c", PRINT_ENV)
    assert env_of(daemon, sp["pane"]["id"])["FOO"] == "spawned"
    sl = jcli(daemon, "pane", "split", "-e", "FOO=split", out["pane_id"], "-e", "B=2", "--", PY, "-c", PRINT_ENV)
    env = env_of(daemon, sl["pane"]["id"])
    assert (env["FOO"], env["B"]) == ("split", "2")


@pytest.mark.parametrize(
    ("arg", "code", "message"),
    [
        ("NOEQUALS", 2, "expected KEY=VALUE, got 'NOEQUALS'"),
        ("=value", 2, "expected KEY=VALUE"),
        ("1ABC=x", 1, "env key '1ABC' is not a variable name"),
        ("A-B=x", 1, "env key 'A-B' is not a variable name"),
        ("SIGNALTTY_PANE=pane_forged", 1, "env key SIGNALTTY_PANE is set by signaltty for every pane and cannot be overridden"),
        ("SIGNALTTY_SOCKET=/tmp/x", 1, "SIGNALTTY_SOCKET is set by signaltty"),
        ("TERM_PROGRAM=x", 1, "TERM_PROGRAM is set by signaltty"),
        ("LD_PRELOAD=/x.so", 1, "env key LD_PRELOAD never reaches a pane"),
    ],
)
def test_new_e_bad_input_is_refused_and_leaves_nothing(daemon, arg, code, message):
    r = daemon.cli("new", "-e", arg, "--", "true")
    assert r.returncode == code, (r.returncode, r.stderr)
    assert message in r.stderr, (r.returncode, r.stderr)
    if code == 1:
        assert "BAD_PARAMS" in r.stderr
    # the workspace made for the pane is gone again: nothing half-created
    assert daemon.call("workspace.list")["workspaces"] == []
    assert daemon.call("pane.list")["panes"] == []


def test_env_bad_input_on_the_socket(daemon):
    ws = daemon.call("workspace.create", {"name": "e"})["workspace"]
    for env, why in (
        ({"": "x"}, "(empty)"),
        ({"A=B": "x"}, "not a variable name"),
        ({"A": "x\x00y"}, "contains NUL"),
        ({f"K{i}": "v" for i in range(257)}, "more than 256"),
        ({"A": 1}, "env.A"),
    ):
        with daemon.client() as cl, pytest.raises(SignalttyError) as exc:
            cl.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["true"], "env": env})
        assert exc.value.code == "BAD_PARAMS", exc.value.message
        assert why in exc.value.message, exc.value.message
        assert exc.value.details["field"].startswith("env")
    assert daemon.call("pane.list")["panes"] == []


def test_new_attach_goes_straight_into_the_pane(daemon, term):
    t = Term(daemon, "new", "--name", "att", "--attach", "--", "cat")
    term.append(t)
    (p,) = wait_until(lambda: daemon.call("pane.list")["panes"], timeout=20)
    # attached: the pane took the PTY's size, and typing reaches cat
    wait_until(lambda: pane(daemon, p["id"])["pty_size"] == {"cols": 100, "rows": 30})
    t.write(b"typed-in-new\r")
    t.expect(b"typed-in-new")
    t.write(b"\x1d")
    assert t.finish() == 0
    out = t.out.decode(errors="replace")
    assert "detached" in out
    assert f"{p['id']}  (workspace att)" in out
    assert pane(daemon, p["id"])["live"] == {"state": "live"}
    assert "typed-in-new" in daemon.call("pane.read", {"pane_id": p["id"]})["text"]


# ---------------------------------------------------------------- short ids


def two_sharing_a_first_digit(d: DaemonProc, ws: str) -> tuple[list[str], str]:
    """Spawn ``cat`` panes until two ids share their first hex digit (≤ 17 by pigeonhole)."""
    seen: dict[str, list[str]] = {}
    for _ in range(17):
        pid = d.call("pane.spawn", {"workspace_id": ws, "argv": ["cat"]})["pane"]["id"]
        seen.setdefault(pid[5], []).append(pid)
        if len(seen[pid[5]]) == 2:
            return seen[pid[5]], "pane_" + pid[5]
    raise AssertionError("pigeonhole")


def test_short_ids_shown_and_accepted_ambiguous_and_unknown(daemon):
    ws = daemon.call("workspace.create", {"name": "short", "cwd": str(daemon.root)})["workspace"]["id"]
    pair, shared = two_sharing_a_first_digit(daemon, ws)
    everyone = [p["id"] for p in daemon.call("pane.list")["panes"]]

    # plain `pane list` shows the shortest unique prefix, at least pane_ + 8 hex digits
    listed = daemon.cli("pane", "list").stdout.splitlines()
    shown = [line.split()[0] for line in listed]
    assert len(shown) == len(everyone)
    assert len(set(shown)) == len(shown)
    for short, full in zip(shown, everyone, strict=True):
        assert full.startswith(short)
        assert len(short) >= 13
        assert short != full
    assert [p["id"] for p in jcli(daemon, "pane", "list")["panes"]] == everyone  # --json: full ids
    assert daemon.cli("workspace", "get", "short").stdout.count("\n  pane_") == len(everyone)

    # a unique prefix works for every command that names a pane
    target = pair[0]
    short = shown[everyone.index(target)]
    minimal = next(target[:n] for n in range(6, 40) if sum(i.startswith(target[:n]) for i in everyone) == 1)
    assert jcli(daemon, "pane", "get", minimal)["pane"]["id"] == target
    assert daemon.cli("pane", "input", short, "--data", "via-short\n").returncode == 0
    assert daemon.cli("pane", "wait-output", minimal, "--match", "via-short", "--timeout", "10").returncode == 0
    assert "via-short" in daemon.cli("pane", "read", short).stdout
    r = daemon.cli("notify", "--pane", minimal, "--title", "hello")
    assert r.returncode == 0
    assert pane(daemon, target)["attention"] == "unread"
    assert "pane_" in daemon.cli("attention").stdout
    assert target not in daemon.cli("attention").stdout
    assert short in daemon.cli("attention").stdout
    assert daemon.cli("pane", "mark-seen", minimal).returncode == 0
    assert pane(daemon, target)["attention"] == "none"
    assert daemon.cli("pane", "resize", minimal, "--cols", "90", "--rows", "20").returncode == 0
    assert jcli(daemon, "permission", "list", "--pane", minimal)["permissions"] == []
    sl = jcli(daemon, "pane", "split", minimal, "--", "cat")
    assert sl["pane"]["workspace_id"] == ws
    child = jcli(daemon, "pane", "spawn", "--workspace", ws, "--parent-pane", minimal, "--", "true")
    assert child["pane"]["parent_pane_id"] == target
    # the socket resolves it too, and pane.attach says which pane it attached
    with daemon.client() as cl:
        assert cl.call("pane.attach", {"pane_id": minimal, "mark_seen": False})["pane_id"] == target

    # ambiguous: an error listing the matches, for several commands; nothing happens
    for args in (
        ("pane", "get", shared),
        ("pane", "input", shared, "--data", "x"),
        ("pane", "close", shared),
        ("wait", "--pane", shared, "--until", "done", "--timeout", "1"),
        ("notify", "--pane", shared, "--title", "t"),
        ("permission", "answer", shared, "allow"),
    ):
        r = daemon.cli(*args)
        assert r.returncode == 1, (args, r.stderr)
        assert "AMBIGUOUS" in r.stderr, (args, r.stderr)
        assert f"pane id prefix {shared} matches" in r.stderr, r.stderr
        assert all(p in r.stderr for p in pair), r.stderr
    r = daemon.cli("--json", "pane", "get", shared)
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "AMBIGUOUS"
    assert all(p in err["message"] for p in pair)
    with daemon.client() as cl, pytest.raises(SignalttyError) as exc:
        cl.call("pane.mark_seen", {"pane_id": shared})
    assert exc.value.code == "AMBIGUOUS"
    assert exc.value.details["pane_ids"] == sorted(
        i for i in [p["id"] for p in daemon.call("pane.list")["panes"]] if i.startswith(shared)
    )
    assert all(pane(daemon, p)["live"] == {"state": "live"} for p in pair)  # `close` did nothing

    # unknown: NO_SUCH_PANE, as for any unknown id; not an abbreviation: the same
    for ref in ("pane_zz", "pane_", target + "0", target[5:13]):
        r = daemon.cli("pane", "get", ref)
        assert r.returncode == 1
        assert r.stderr.strip() == f"signaltty: server error NO_SUCH_PANE: no such pane: {ref}"
    r = daemon.cli("pane", "close", "pane_zz")
    assert "NO_SUCH_PANE" in r.stderr
    # a unique prefix closes exactly that pane
    assert daemon.cli("pane", "close", minimal).returncode == 0
    assert target not in [p["id"] for p in daemon.call("pane.list")["panes"]]


# ---------------------------------------------------------------- pane input --keys


def hex_typed(d: DaemonProc, pane_id: str) -> str:
    text = d.call("pane.read", {"pane_id": pane_id})["text"]
    return "".join(m.group(1) for m in re.finditer(r"HEX:([0-9a-f]+)", text))


def test_keys_arrive_as_the_bytes_a_terminal_sends(daemon):
    out = jcli(daemon, "new", "--", PY, "-c", HEX_ECHO)
    pid = out["pane_id"]
    assert daemon.cli("pane", "wait-output", pid, "--match", "ready", "--timeout", "20").returncode == 0
    r = daemon.cli("pane", "input", pid, "--keys", "Enter", "C-c", "Escape", "Up", "F5", "M-x", "BSpace", "Tab", "PPage", "C-Left", "Space", "q")
    assert r.returncode == 0, r.stderr
    want = b"\r\x03\x1b\x1b[A\x1b[15~\x1bx\x7f\t\x1b[5~\x1b[1;5D q".hex()
    wait_until(lambda: hex_typed(daemon, pid) == want, timeout=10)
    # text first, then keys, in one write
    assert daemon.cli("pane", "input", pid, "--data", "ls -l", "--keys", "Enter").returncode == 0
    want += b"ls -l\r".hex()
    wait_until(lambda: hex_typed(daemon, pid) == want, timeout=10)
    # stdin then keys
    assert daemon.cli("pane", "input", pid, "--stdin", "--keys", "C-d", input=b"from-stdin").returncode == 0
    want += b"from-stdin\x04".hex()
    wait_until(lambda: hex_typed(daemon, pid) == want, timeout=10)

    # bad input: a clear error listing the valid names; nothing at all is typed
    for args in (("--keys", "Enter", "Entr"), ("--data", "oops", "--keys", "C-1"), ("--keys", "make test")):
        r = daemon.cli("pane", "input", pid, *args)
        assert r.returncode == 2, r.stderr
        assert "valid keys: Enter Escape Tab" in r.stderr, r.stderr
    r = daemon.cli("pane", "input", pid)
    assert r.returncode == 2
    assert "give --data, --stdin or --keys" in r.stderr
    assert daemon.cli("pane", "input", pid, "--keys", "z").returncode == 0  # a sentinel after them
    wait_until(lambda: hex_typed(daemon, pid) == want + b"z".hex(), timeout=10)
    assert daemon.cli("pane", "close", pid).returncode == 0


# ---------------------------------------------------------------- attached = looking


def test_attached_pane_does_not_turn_unread_from_its_own_bell_osc_or_exit(daemon, term):
    watched = jcli(daemon, "new", "--name", "watched", "--", PY, "-c", BELL_THEN_EXIT)["pane_id"]
    t = Term(daemon, "pane", "attach", watched[:13])  # a short id, as `pane list` shows it
    term.append(t)
    t.expect(b"\x1b[H")  # the snapshot: attached
    wait_until(lambda: pane(daemon, watched)["pty_size"] == {"cols": 100, "rows": 30})
    t.write(b"\r")
    t.expect(b"rang")
    wait_until(lambda: pane(daemon, watched)["last_message"] == "Build: finished")  # the OSC was applied
    assert pane(daemon, watched)["attention"] == "none"
    t.write(b"\r")
    t.expect(b"pane exited (code 0)")
    assert t.finish() == 0
    p = pane(daemon, watched)
    assert (p["lifecycle"], p["attention"]) == ("done", "none")
    assert daemon.cli("attention").stdout.strip() == "(nothing needs you)"

    # the same program with nobody attached: each of the three marks it unread
    alone = jcli(daemon, "new", "--name", "alone", "--", PY, "-c", BELL_THEN_EXIT)["pane_id"]
    assert daemon.cli("pane", "input", alone, "--keys", "Enter").returncode == 0
    wait_until(lambda: pane(daemon, alone)["last_message"] == "Build: finished")
    assert pane(daemon, alone)["attention"] == "unread"
    assert daemon.cli("pane", "mark-seen", alone).returncode == 0
    assert daemon.cli("pane", "input", alone, "--keys", "Enter").returncode == 0
    wait_until(lambda: pane(daemon, alone)["lifecycle"] == "done", timeout=20)
    assert pane(daemon, alone)["attention"] == "unread"


def test_a_passive_viewer_is_not_a_person_looking(daemon):
    """``pane.attach`` with ``mark_seen: false`` (a recorder, a tool) does not count."""
    pid = jcli(daemon, "new", "--", PY, "-c", BELL_THEN_EXIT)["pane_id"]
    with daemon.client(timeout=None) as cl:
        cl.call("pane.attach", {"pane_id": pid, "mark_seen": False})
        assert daemon.cli("pane", "input", pid, "--keys", "Enter").returncode == 0
        wait_until(lambda: pane(daemon, pid)["last_message"] == "Build: finished")
        assert pane(daemon, pid)["attention"] == "unread"
        # the same connection attaching as a person from now on: the exit is seen
        cl.call("pane.attach", {"pane_id": pid})
        assert pane(daemon, pid)["attention"] == "none"
        assert daemon.cli("pane", "input", pid, "--keys", "Enter").returncode == 0
        wait_until(lambda: pane(daemon, pid)["lifecycle"] == "done", timeout=20)
        assert pane(daemon, pid)["attention"] == "none"


# ---------------------------------------------------------------- subscribe output

LINE = re.compile(r"^(\d\d:\d\d:\d\d) +(\d+)  (\S+) +(pane_[0-9a-f]{8}|-) *( .*)?$")


def test_plain_subscribe_is_aligned_sanitized_text(daemon):
    proc = subprocess.Popen(
        [PY, "-m", "signaltty", "subscribe", "--events", "agent.*,attention.*,notification.*,pane.exited,workspace.created"],
        env=daemon.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    buf = b""

    def read_lines(timeout: float) -> list[str]:
        nonlocal buf
        if select.select([proc.stdout], [], [], timeout)[0]:
            buf += os.read(proc.stdout.fileno(), 65536)
        *done, buf = buf.split(b"\n")
        return [ln.decode() for ln in done]

    lines: list[str] = []
    try:
        # subscribed once an event comes through: make workspaces until one is printed
        while not lines:
            daemon.call("workspace.create", {"name": "probe"})
            lines += read_lines(0.5)
        out = jcli(daemon, "new", "--name", "sub", "--", PY, "-c", "print('x')")
        wait_until(lambda: pane(daemon, out["pane_id"])["attention"] == "unread", timeout=20)
        daemon.cli("notify", "--pane", out["pane_id"], "--title", "evil\x1b]0;pwned\x07\x1b[2Jtitle\u202e", "--body", "line1\nline2")
        deadline = time.monotonic() + 20
        while not any("notification.created" in ln for ln in lines):
            assert time.monotonic() < deadline, lines
            lines += read_lines(1)
    finally:
        proc.terminate()
        proc.wait(10)
    text = "\n".join(lines)
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "\u202e" not in text
    parsed = [LINE.match(ln) for ln in lines]
    assert all(parsed), lines
    # columns start at the same offsets on every line
    for group in (3, 4):
        assert len({m.start(group) for m in parsed}) == 1, lines
    events = [m.group(3) for m in parsed]
    assert events[0] == "workspace.created"
    assert "agent.done" in events
    assert "pane.exited" in events
    by_event = {m.group(3): m for m in parsed}
    assert by_event["agent.done"].group(5).strip() == "unknown → done (exit)"
    assert out["pane_id"].startswith(by_event["agent.done"].group(4))
    note = by_event["notification.created"].group(5).strip()
    assert note.startswith("[info] evil"), note
    assert note.endswith("title: line1"), note
    assert "pwned" not in note, note
    seqs = [int(m.group(2)) for m in parsed]
    assert seqs == sorted(seqs)
