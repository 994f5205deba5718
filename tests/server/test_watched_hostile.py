"""A hostile watched host (issue 16 "Bad input"): bounded, sanitized, never answering by itself.

The local daemon's ``[hosts.devbox]`` reaches, through a stand-in ssh, the fake remote daemon
``tests/fixtures/hostile_remote.py``: it speaks ``signaltty/1`` well enough to be mirrored,
then sends what each test scripts (huge lines, escapes and markup, bad ids and types,
deep nesting, floods, decisions, restarts) and logs every request it receives. After each
attack the local daemon must still be running, answer ``server.status`` promptly and have
grown its peak memory by a bounded amount; the remote must have received nothing but
``subscribe`` / ``workspace.list`` / ``pane.list`` unless the person answered here. A
process inside a local pane asking for a mirrored permission is refused (the self-approval
guard) through the socket and through D-Bus, and nothing reaches the remote.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import threading
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, wait_until
from tests.desktop.conftest import bus as bus
from tests.desktop.conftest import desktop_daemon
from tests.desktop.conftest import notif_server as notif_server
from tests.server.test_trust_answers import REFUSAL, _answer_from_pane

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hostile_remote.py"
# what the local daemon sends on its own: reads only (pane.get reads a pane back after its
# transitions)
HANDSHAKE = {"subscribe", "workspace.list", "pane.list", "pane.get"}
PROMPT_S = 1.5  # server.status under attack (generous: 2 shared cores)
# what no mirrored text may contain: C0 (but \n \t in multi-line text), DEL, C1, bidi
# overrides and isolates, zero-width and other invisible format characters
FORBIDDEN_CHARS = (
    {chr(c) for c in range(0x20) if chr(c) not in "\n\t"}
    | {chr(0x7F)}
    | {chr(c) for c in range(0x80, 0xA0)}
    | set(
        "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff\u2060"
    )
)
EVIL = (
    "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x1b[0m \x9b31m\x9d8;;http://x\x9c "
    "\u202egnp.exe\u202c zero\u200bwidth\ufeff <b>bold</b> <a href='https://evil.example'>x</a> &amp;"
)


class Remote:
    """The fake remote's directory: its scenario and what it received."""

    def __init__(self, root: Path, scenario: dict[str, Any]) -> None:
        self.dir = root / "remote"
        self.dir.mkdir()
        self.set(scenario)
        self.ssh = root / "fake-ssh"
        self.ssh.write_text(f"#!/bin/sh\nexec {sys.executable} {FIXTURE} {self.dir}\n")
        self.ssh.chmod(0o755)

    def set(self, scenario: dict[str, Any]) -> None:
        tmp = self.dir / "scenario.tmp"
        tmp.write_text(json.dumps(scenario))
        tmp.replace(self.dir / "scenario.json")

    def requests(self) -> list[dict[str, Any]]:
        path = self.dir / "requests.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []

    def methods(self) -> set[str]:
        return {str(r.get("method")) for r in self.requests()}

    def connects(self) -> int:
        path = self.dir / "connects"
        return len(path.read_text().splitlines()) if path.exists() else 0

    def marked(self, name: str) -> bool:
        return (self.dir / f"mark-{name}").exists()


def pane(rid: str = "pane_1", **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": rid,
        "workspace_id": "ws_1",
        "argv": ["claude"],
        "cwd": "/srv/api",
        "title": "api",
        "live": {"state": "live"},
        "restore_state": "EXITED",
        "agent": {"kind": "claude", "display_name": "Claude"},
        "lifecycle": "idle",
        "attention": "none",
        "created_at": "2026-01-01T00:00:00.000Z",
    }
    return base | fields


def decision(did: str = "dec_1", **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": did,
        "prompt": "Allow Bash?\nls",
        "options": [{"id": "once", "label": "Allow once"}, {"id": "deny", "label": "Deny"}],
        "answerable": True,
        "native": True,
        "agent": "claude",
        "tool_name": "Bash",
        "received_at": "2026-01-01T00:00:00.000Z",
    }
    return base | fields


def ev(name: str, payload: Any) -> dict[str, Any]:
    return {"event": name, "payload": payload}


def line(obj: Any) -> str:
    return json.dumps(obj)


@pytest.fixture
def root() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="hh-", dir="/tmp") as d:
        yield Path(d)


def start_local(
    root: Path, remote: Remote, bus: Any = None, settle_ms: int | None = None
) -> DaemonProc:
    env = {"SIGNALTTY_SSH_COMMAND": str(remote.ssh)}
    config = '[hosts.devbox]\ntarget = "me@devbox"\n'
    if settle_ms is not None:
        config += f"[notifications]\nsettle_ms = {settle_ms}\n"
    if bus is not None:
        return desktop_daemon(root, bus, config, **env)
    d = DaemonProc(root, env)
    d.write_config(config)
    d.start()
    return d


def stop_local(d: DaemonProc) -> None:
    d.stop()
    assert not d.kill_leftovers()


def host(d: DaemonProc) -> dict[str, Any]:
    return next(h for h in d.call("hosts.list")["hosts"] if h["name"] == "devbox")


def mirrored(d: DaemonProc) -> list[dict[str, Any]]:
    return [p for p in d.call("pane.list")["panes"] if p.get("host") == "devbox"]


def peak_rss(d: DaemonProc) -> int:
    """The daemon's peak resident memory so far (VmHWM), bytes."""
    assert d.proc is not None
    for row in Path(f"/proc/{d.proc.pid}/status").read_text().splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def healthy(d: DaemonProc) -> dict[str, Any]:
    """The daemon runs and answers ``server.status`` within ``PROMPT_S``."""
    assert d.proc is not None
    assert d.proc.poll() is None, d.stderr()
    began = time.monotonic()
    status = d.call("server.status")
    took = time.monotonic() - began
    assert took < PROMPT_S, f"server.status took {took:.2f} s"
    return status


def ssh_children(d: DaemonProc) -> list[psutil.Process]:
    assert d.proc is not None
    return [
        c
        for c in psutil.Process(d.proc.pid).children()
        if "hostile_remote" in " ".join(c.cmdline()) or "fake-ssh" in " ".join(c.cmdline())
    ]


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def clean(text: str) -> bool:
    return not (set(text) & FORBIDDEN_CHARS) and all(unicodedata.category(c) != "Cf" for c in text)


# ------------------------------------------------------------------------------ tests


def test_a_line_over_the_cap_ends_the_link_not_the_daemon(root: Path) -> None:
    remote = Remote(root, {"panes": [pane()], "after": [{"await": "huge"}, {"huge": 200 << 20}]})
    d = start_local(root, remote)
    try:
        wait_until(lambda: host(d)["state"] == "connected", 20)
        before = peak_rss(d)
        (remote.dir / "go-huge").touch()
        h = wait_until(
            lambda: (
                (h := host(d))["state"] == "unreachable"
                and "longer than" in (h["error"] or "")
                and h
            ),
            30,
        )
        assert "8388608" in h["error"]  # the link's own cap (remote.MAX_LINE), not 32 MiB
        healthy(d)
        grown = peak_rss(d) - before
        # the cap bounds what one hostile line costs: a few times 8 MiB at worst, never
        # the 200 MiB sent (32 MiB cap: +70 MiB measured before the fix)
        assert grown < 40 << 20, f"peak memory grew by {grown >> 20} MiB"
        [p] = mirrored(d)  # the pane read before the line is kept, unreachable
        assert p["reachable"] is False
        assert remote.methods() <= HANDSHAKE
    finally:
        stop_local(d)


def test_lines_that_are_no_object_end_the_link_cleanly(root: Path) -> None:
    # each connection sends one kind of garbage (after "server.restarting": the first three
    # next attempts come after 0.5 s, then the back-off applies): the link ends with a clear
    # reason, the daemon carries on, and no ssh is left behind however often it happens
    garbage: list[dict[str, Any]] = [
        {"line": text} for text in ("[1, 2]", "5", '"text"', "{nope", "null")
    ]
    garbage += [{"nested": 200_000}, {"line": "[" * 200_000}]
    restart = ev("server.restarting", {})
    remote = Remote(
        root,
        {
            "panes": [pane()],
            "after_by_connect": [[restart, g, {"sleep": 30}] for g in garbage],
            "after": [{"mark": "last"}, {"sleep": 60}],
        },
    )
    d = start_local(root, remote)
    try:
        wait_until(lambda: remote.marked("last"), 90)
        h = wait_until(lambda: (h := host(d))["state"] == "connected" and h, 20)
        assert h["connects"] == len(garbage) + 1
        healthy(d)
        assert len(ssh_children(d)) <= 1
        assert remote.methods() <= HANDSHAKE
        [p] = mirrored(d)
        assert p["reachable"] is True
    finally:
        stop_local(d)
    log = (root / "daemon.stderr").read_text()
    assert log.count("the remote sent a line that is not a message") == len(garbage)
    # "restarting" buys three quick retries in a row, then the back-off applies
    retries = re.findall(r"event='remote.unreachable'.*retry_s=([0-9.]+)", log)
    assert retries == ["0.5", "0.5", "0.5", "1.0", "2.0", "4.0", "8.0"]
    assert "task.crashed" not in log
    assert "remote.session_failed" not in log


def test_bad_records_are_refused_one_by_one(root: Path) -> None:
    bad = [
        pane("../x"),
        pane("a/b"),
        pane("p" * 5000),
        pane("pane_t", lifecycle="exploded"),
        pane("pane_u", attention={"x": 1}),
        pane("pane_v", pty_size={"cols": 1e999, "rows": float("nan")}),
        pane("pane_w", live="yes"),
        pane("pane_x", argv="rm -rf /"),
        pane("pane_y", workspace_id="../../etc"),
        pane("pane_z", pending_decision={"id": "../d"}),
        [],
        "pane",
        None,
    ]
    good = [pane(f"pane_{i:05d}") for i in range(10_000)]
    dup = pane("pane_00000", title="duplicate")
    remote = Remote(
        root,
        {
            "workspaces": [{"id": "ws_1", "name": EVIL}, {"id": "../ws"}, 7],
            "panes": [*bad, *good, dup],
            "after": [
                ev("pane.updated", {"pane": pane("pane_00001", title=1e308)}),
                ev("pane.updated", {"pane": pane("pane_00001", last_run_secs="NaN")}),
                ev("agent.working", {"pane_id": "pane_00001", "lifecycle": "flying"}),
                ev("agent.working", {"pane_id": ["pane_00001"], "lifecycle": "working"}),
                ev("attention.created", {"pane_id": "pane_00001", "attention": 3}),
                ev("decision.answered", {"pane_id": "pane_00002", "decision_id": "never_shown"}),
                ev("decision.created", {"pane_id": "pane_00003", "decision": {"id": 5}}),
                ev("pane.exited", {"pane_id": "pane_00004", "code": 2**80}),
                ev("pane.closed", {"pane_id": "../../pane_00005"}),
                ev("no.such.event", {"pane_id": "pane_00006"}),
                ev("pane.created", "not an object"),
                {
                    "line": line(
                        {"protocol": "signaltty/1", "id": "h999999", "ok": True, "result": {}}
                    )
                },
                {"line": line({"protocol": "signaltty/1", "id": ["x"], "ok": False, "error": 1})},
                {
                    "line": '{"protocol":"signaltty/1","type":"event","event":"pane.updated","payload":{"pane":{"id":"pane_00007","workspace_id":"ws_1","pty_size":{"cols":1e999}}}}'
                },
                ev("pane.updated", {"pane": pane("pane_00008", title="still here")}),
                {"mark": "done"},
                {"sleep": 60},
            ],
        },
    )
    d = start_local(root, remote)
    try:
        wait_until(lambda: remote.marked("done"), 30)
        wait_until(
            lambda: any(p["title"] == "still here" for p in mirrored(d)), 20, what="the last event"
        )
        panes = mirrored(d)
        assert len(panes) == 512  # MAX_PANES per host, the rest left out
        ids = {p["id"] for p in panes}
        assert all(
            i.startswith("devbox/pane_0") and len(i) == len("devbox/pane_00000") for i in ids
        )
        first = next(p for p in panes if p["id"] == "devbox/pane_00000")
        assert first["title"] == "api"  # a duplicate id does not replace the first record
        for p in panes:
            assert p["lifecycle"] == "idle"
            assert p["attention"] == "none"
            assert p["pending_decision"] is None
        exited = next(p for p in panes if p["id"] == "devbox/pane_00004")
        assert exited["live"] == {"state": "exited", "code": None}  # 2**80 is no exit code
        h = healthy(d)["hosts"][0]
        assert h["state"] == "connected"
        assert h["connects"] == 1
        assert remote.methods() <= HANDSHAKE
    finally:
        stop_local(d)


def test_a_flood_of_events_keeps_the_daemon_responsive(root: Path) -> None:
    n = 50_000
    template = line(
        {
            "protocol": "signaltty/1",
            "type": "event",
            "event": "pane.updated",
            "seq": 1,
            "payload": {"pane": pane("pane_1", title="t@I@"), "changed": ["title"]},
        }
    )
    attention = [
        ev("attention.created", {"pane_id": "pane_1", "attention": "unread", "cause": "turn_done"}),
        ev("attention.cleared", {"pane_id": "pane_1", "reason": "seen"}),
    ]
    remote = Remote(
        root,
        {
            "panes": [pane()],
            "after": [
                {"await": "flood"},
                {"repeat": n, "line": template},
                ev("pane.updated", {"pane": pane("pane_1", title="last"), "changed": ["title"]}),
                *attention * 2000,
                {"mark": "done"},
                {"sleep": 60},
            ],
        },
    )
    d = start_local(root, remote)
    seen: list[dict[str, Any]] = []
    try:
        wait_until(lambda: host(d)["state"] == "connected", 30)
        with d.client(timeout=30) as sub:
            sub.call("subscribe", {"events": ["pane.*"]})
            reader = threading.Thread(target=_collect, args=(sub, seen), daemon=True)
            reader.start()
            before = peak_rss(d)
            began = time.monotonic()
            (remote.dir / "go-flood").touch()
            slowest = 0.0
            while not remote.marked("done"):
                t = time.monotonic()
                healthy(d)
                slowest = max(slowest, time.monotonic() - t)
            took = time.monotonic() - began
            wait_until(lambda: any(_title(e) == "last" for e in seen), 20)
        assert slowest < PROMPT_S
        grown = peak_rss(d) - before
        assert grown < 64 << 20, f"peak memory grew by {grown >> 20} MiB"
        assert host(d)["connects"] == 1
        # the updates are coalesced (latest wins, one per 250 ms per host): the subscriber
        # kept up and was not dropped, and got a handful, not 50 000
        updates = [e for e in seen if e["event"] == "pane.updated"]
        assert len(updates) <= took / 0.25 + 4, (len(updates), took)
        assert _title(updates[-1]) == "last"
    finally:
        stop_local(d)


def _collect(sub: Any, into: list[dict[str, Any]]) -> None:
    try:
        while (msg := sub.next_event(timeout=30)) is not None:
            into.append(msg)
    except OSError:  # the test closed the connection (TimeoutError is one too)
        return


def _title(msg: dict[str, Any]) -> str | None:
    return msg.get("payload", {}).get("pane", {}).get("title")


def test_a_pane_list_that_never_comes(root: Path) -> None:
    # pane.list gets an answer to a request never sent, never its own
    stray = line({"protocol": "signaltty/1", "id": "zz", "ok": True, "result": {"panes": [pane()]}})
    remote = Remote(root, {"panes": [pane()], "respond": {"pane.list": {"raw": stray}}})
    d = start_local(root, remote)
    try:
        wait_until(lambda: remote.connects() >= 1, 20)
        assert host(d)["state"] == "connecting"
        healthy(d)
        assert mirrored(d) == []
        # the handshake is given HANDSHAKE_S (30 s), then the host is unreachable
        h = wait_until(lambda: (h := host(d))["state"] == "unreachable" and h, 60)
        assert "no answer" in h["error"]
        assert len(ssh_children(d)) <= 1
    finally:
        stop_local(d)


def test_what_the_remote_writes_on_stderr_is_shown_cleaned(root: Path) -> None:
    # ssh passes the remote command's stderr through: the host's error quotes it, cleaned
    remote = Remote(root, {"fail": {"stderr": f"bridge: {EVIL}\n" * 400, "status": 1}})
    d = start_local(root, remote)
    try:
        h = wait_until(lambda: (h := host(d))["state"] == "unreachable" and h["error"] and h, 20)
        assert "bridge:" in h["error"]
        assert clean(h["error"])
        assert len(h["error"]) <= 420
        healthy(d)
        status = d.call("server.status")["hosts"][0]
        assert clean(status["error"])
    finally:
        stop_local(d)


# ------------------------------------------------------------- with the notification server


def test_hostile_text_is_sanitized_in_the_list_and_the_notification(
    root: Path, bus: Any, notif_server: Any
) -> None:
    notif_server.reset()
    dec = decision(
        prompt=f"Allow Bash?\n{EVIL}",
        tool_name=f"Ba{EVIL}sh",
        agent=EVIL,
        options=[{"id": "once", "label": f"Allow {EVIL}"}, {"id": "deny", "label": EVIL}],
    )
    evil_pane = pane(
        title=EVIL,
        label=None,
        last_message=f"{EVIL}\n{EVIL}",
        cwd=f"/srv/{EVIL}",
        argv=[EVIL, "--x"],
        lifecycle_source=EVIL,
        agent={"kind": "claude", "display_name": f"Cl{EVIL}aude", "agent_session_id": EVIL},
    )
    remote = Remote(
        root,
        {
            "workspaces": [{"id": "ws_1", "name": f"<i>ws</i>{EVIL}"}],
            "panes": [evil_pane],
            "after": [
                ev(
                    "attention.created",
                    {
                        "pane_id": "pane_1",
                        "attention": "permission_required",
                        "cause": "permission",
                    },
                ),
                ev("decision.created", {"pane_id": "pane_1", "decision": dec}),
                {"sleep": 120},
            ],
        },
    )
    d = start_local(root, remote, bus)
    try:
        p = wait_until(
            lambda: next((p for p in mirrored(d) if p["pending_decision"] is not None), None), 20
        )
        for text in strings(p):
            assert clean(text), repr(text)
        assert "<b>bold</b>" in p["title"]  # plain text in the protocol; escaped where shown
        nid, info = notif_server.wait_shown(lambda i: "devbox/" in i["summary"], 20)
        for text in (info["summary"], info["body"], *info["actions"]):
            assert clean(text), repr(text)
        assert "<b>" not in info["body"]
        assert "<a " not in info["body"]
        assert "&lt;b&gt;bold&lt;/b&gt;" in info["body"]
        assert "&amp;amp;" in info["body"]
        assert "needs approval" in info["summary"]
        assert remote.methods() <= HANDSHAKE
        # the person presses Deny: that answer, and only it, goes to the remote
        notif_server.press(nid, "Deny")
        wait_until(lambda: "decision.answer" in remote.methods(), 20)
        [ans] = [r for r in remote.requests() if r.get("method") == "decision.answer"]
        assert ans["params"] == {"pane_id": "pane_1", "decision_id": "dec_1", "verdict": "deny"}
    finally:
        stop_local(d)


def test_decisions_the_person_never_saw_are_never_answered(
    root: Path, bus: Any, notif_server: Any
) -> None:
    notif_server.reset()
    asking = pane(attention="permission_required", pending_decision=decision())
    churn = [
        ev("decision.created", {"pane_id": "pane_1", "decision": decision("dec_2")}),
        ev("decision.answered", {"pane_id": "pane_1", "decision_id": "dec_2", "option_id": "once"}),
        ev("decision.answered", {"pane_id": "pane_1", "decision_id": "dec_never"}),
        ev("decision.created", {"pane_id": "pane_1", "decision": decision("dec_1")}),
        ev("decision.cleared", {"pane_id": "pane_1", "decision_id": "dec_1", "reason": "x y"}),
        ev("decision.created", {"pane_id": "pane_1", "decision": decision("dec_1")}),
        ev("server.restarting", {}),
        ev("server.restarting", {}),
    ]
    remote = Remote(root, {"panes": [asking], "after": [*churn, {"exit": True}]})
    d = start_local(root, remote, bus)
    try:
        # it says it restarts, then goes: the link comes back after 0.5 s, again and again
        wait_until(lambda: remote.connects() >= 4, 30)
        out = d.cli("restart", "--json", timeout=90)
        assert out.returncode == 0, out.stderr + d.stderr()
        n = remote.connects()
        wait_until(lambda: remote.connects() >= n + 3, 30)
        healthy(d)
        # now it stays, still asking; an error it returns comes back cleaned
        remote.set(
            {
                "panes": [asking],
                "after": churn[:-2],
                "respond": {
                    "decision.answer": {
                        "error": {"code": "\x1b[31mEVIL", "message": f"nope {EVIL}" * 50}
                    }
                },
            }
        )
        n = remote.connects()
        wait_until(lambda: remote.connects() > n and host(d)["state"] == "connected", 30)
        wait_until(lambda: [p for p in mirrored(d) if p["pending_decision"]], 10)
        assert remote.methods() <= HANDSHAKE, remote.methods()
        with pytest.raises(SignalttyError) as err:
            d.call("decision.answer", {"pane_id": "devbox/pane_1", "verdict": "allow"})
        assert err.value.code == "REMOTE_ERROR"
        assert clean(err.value.message)
        assert len(err.value.message) <= 420
        assert err.value.message.startswith("devbox: nope ")
        answers = [r for r in remote.requests() if r.get("method") == "decision.answer"]
        assert len(answers) == 1
        assert remote.methods() <= HANDSHAKE | {"decision.answer"}
    finally:
        stop_local(d)


def test_a_pane_process_cannot_answer_a_mirrored_decision(
    root: Path, bus: Any, notif_server: Any
) -> None:
    from tests.desktop.test_dbus_answer_guard import _dbus_send_from_pane

    notif_server.reset()
    remote = Remote(
        root,
        {
            "panes": [pane(attention="permission_required", pending_decision=decision())],
            "after": [{"sleep": 120}],
        },
    )
    d = start_local(root, remote, bus)
    try:
        wait_until(lambda: [p for p in mirrored(d) if p["pending_decision"]], 20)
        for target in ("devbox/pane_1", "dec_1", "devbox/pane_"):
            r = _answer_from_pane(d, target, "allow")
            assert r["rc"] != 0, r
            assert REFUSAL in r["stderr"], r
        r = _dbus_send_from_pane(d, bus, "devbox/pane_1")
        assert r["rc"] != 0, r
        assert "dev.signaltty.Error.FORBIDDEN" in r["stderr"], r
        healthy(d)
        assert remote.methods() <= HANDSHAKE, remote.methods()
        [p] = mirrored(d)
        assert p["pending_decision"]["id"] == "dec_1"
    finally:
        stop_local(d)


def test_a_remote_decision_cannot_withdraw_a_local_notification(
    root: Path, bus: Any, notif_server: Any
) -> None:
    # a remote that learnt a local decision's id (Codex numbers its own) announces the same
    # id on its own pane and answers it there: the local notification stays
    from tests.server.test_hooks_e2e import _permission_agent

    notif_server.reset()
    remote = Remote(root, {"panes": [pane()], "after": [{"include": "attack"}, {"sleep": 60}]})
    d = start_local(root, remote, bus)
    try:
        wait_until(lambda: host(d)["state"] == "connected", 30)
        a, gate = _permission_agent(d, root)
        did = a.get()["pending_decision"]["id"]
        nid, _ = notif_server.wait_shown(lambda i: "devbox/" not in i["summary"], 20)
        steps = [
            ev("decision.created", {"pane_id": "pane_1", "decision": decision(did)}),
            ev("decision.answered", {"pane_id": "pane_1", "decision_id": did}),
            ev("decision.created", {"pane_id": "pane_1", "decision": decision(did)}),
            ev("decision.cleared", {"pane_id": "pane_1", "decision_id": did, "reason": "x"}),
            # then a notification of its own: shown after any withdrawal (one lock)
            ev("decision.created", {"pane_id": "pane_1", "decision": decision("d2")}),
            ev(
                "attention.created",
                {"pane_id": "pane_1", "attention": "permission_required", "cause": "permission"},
            ),
        ]
        (remote.dir / "steps-attack.json").write_text(json.dumps(steps))
        notif_server.wait_shown(lambda i: "devbox/" in i["summary"], 20)
        # the local pane's notification is still there, its decision pending
        assert nid in notif_server.shown, notif_server.log
        assert not [c for c in notif_server.calls("CloseNotification") if c[0] == nid]
        assert a.get()["pending_decision"]["id"] == did
        gate.touch()
    finally:
        stop_local(d)


def test_a_decision_slipped_in_by_a_record_is_announced(
    root: Path, bus: Any, notif_server: Any
) -> None:
    """A ``pane.updated`` record that brings a prompt without its transition events is
    announced like one read at connect: a remote cannot show a decision silently."""
    notif_server.reset()
    asked = decision("dec_9", prompt='Allow Bash?\n{\n  "command": "ls"\n}')
    slipped = pane(attention="permission_required", pending_decision=asked)
    remote = Remote(
        root,
        {"panes": [pane()], "after": [{"await": "slip"}, ev("pane.updated", {"pane": slipped})]},
    )
    d = start_local(root, remote, bus)
    try:
        wait_until(lambda: host(d)["state"] == "connected", 20)
        assert not notif_server.calls("Notify")
        (root / "remote" / "go-slip").touch()
        _, info = notif_server.wait_shown(lambda i: "devbox/" in i["summary"], 20)
        assert "needs approval" in info["summary"]
        assert "Allow once" in info["actions"]
        assert remote.methods() <= HANDSHAKE
    finally:
        stop_local(d)


def test_a_hosts_alerts_are_rate_limited_but_prompts_wait_their_turn(
    root: Path, bus: Any, notif_server: Any
) -> None:
    """40 prompts at once: the first ``ALERT_BURST`` (30) are announced, the others come
    at ``ALERT_RATE`` (2 a second) after them, none dropped."""
    notif_server.reset()
    n = 40
    steps: list[dict[str, Any]] = [{"await": "flood"}]
    for i in range(n):
        steps.append(
            ev(
                "pane.updated",
                {
                    "pane": pane(
                        f"pane_{i}",
                        title=f"api{i}",
                        attention="permission_required",
                        pending_decision=decision(f"dec_{i}"),
                    )
                },
            )
        )
    steps.append({"sleep": 120})
    panes = [pane(f"pane_{i}", title=f"api{i}") for i in range(n)]
    remote = Remote(root, {"panes": panes, "after": steps})
    d = start_local(root, remote, bus, settle_ms=0)
    try:
        wait_until(lambda: len(mirrored(d)) == n, 20)
        began = time.monotonic()
        (root / "remote" / "go-flood").touch()

        def announced() -> set[str]:
            return {
                args[3]
                for args in notif_server.calls("Notify")
                if "devbox/" in args[3] and "needs approval" in args[3]
            }

        wait_until(lambda: len(announced()) >= 30, 20)
        elapsed = time.monotonic() - began
        # never more than the burst plus what the rate allows in the time that passed
        assert len(announced()) <= 30 + 2 * elapsed + 2
        # … and the rest are announced, not dropped (the 10 left take about 5 s)
        wait_until(lambda: len(announced()) >= n, 30)
        healthy(d)
    finally:
        stop_local(d)


def test_dbus_lists_a_hosts_panes_and_prompts(root: Path, bus: Any, notif_server: Any) -> None:
    """D-Bus ``ListPanes``/``ListPermissions`` and the counts cover every watched host
    (issue 16 item 3), with the mirrored ids and cleaned text."""
    from tests.desktop.test_dbus_interface import call

    notif_server.reset()
    asking = pane(title=f"api{EVIL}", attention="permission_required", pending_decision=decision())
    remote = Remote(root, {"panes": [asking], "after": [{"sleep": 120}]})
    d = start_local(root, remote, bus)
    try:
        wait_until(lambda: host(d)["state"] == "connected", 20)
        rows = wait_until(
            lambda: [r for r in call(bus, "ListPanes").body[0] if r[0] == "devbox/pane_1"], 10
        )
        assert rows[0][1] == "devbox/ws_1"
        assert rows[0][5] == "permission_required"
        assert clean(rows[0][2])
        perms = call(bus, "ListPermissions").body[0]
        assert [(p[0], p[1]) for p in perms] == [("dec_1", "devbox/pane_1")]
        assert remote.methods() <= HANDSHAKE
    finally:
        stop_local(d)
