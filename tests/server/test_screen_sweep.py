"""Screen rules, OSC 7501 program status and stuck-working recovery through a real daemon.

A driver program in a real PTY writes exactly what the test sends (echo off), so each case
puts a chosen screen or OSC 7501 report in front of the daemon's 500 ms sweep. The rules are
a user manifest of kind ``claude`` in the agents directory, which replaces the bundled Claude
rules for every Claude pane (agents.md §5.4). Spec: states.md §3.3, §3.7, §3.8, tables
§9.5–§9.7; protocol.md §6 ``pane.explain``.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, holds_for, wait_until

PY = sys.executable

MANIFEST = r"""
[agent]
id = "stub-claude"
kind = "claude"
binaries = ["stub-claude"]

[[screen]]
id = "approval"
state = "blocked"
region = "bottom"
lines = 6
regex = ['Allow this action\?']
priority = 300

[[screen]]
id = "busy"
state = "working"
regex = ['(?m)^[\u2800-\u28ff] Working']
priority = 100

[[screen]]
id = "transcript"
state = "hold"
regex = ['showing transcript']
priority = 90

[[screen]]
id = "prompt_ready"
state = "idle"
region = "prompt_box"
regex = ['(?m)^❯']
priority = 40

[[screen]]
id = "idle_fallback"
state = "idle"
regex = ['']
priority = -1000
"""

DRIVER = Path(__file__).resolve().parents[1] / "fixtures" / "screen_driver.py"

CLEAR = "\x1b[2J\x1b[H"
WORKING = CLEAR + "\u2819 Working (3s)\r\n"
IDLE_BOX = CLEAR + "answer text\r\n" + "─" * 20 + "\r\n❯ \r\n" + "─" * 20 + "\r\n"
APPROVAL = CLEAR + "Bash(rm -rf build)\r\nAllow this action?\r\n  1. Yes\r\n  2. No\r\n"
PLAIN = CLEAR + "some output without any sign\r\n"


@pytest.fixture
def d(tmp_root: Path) -> Iterator[DaemonProc]:
    agents = tmp_root / "config" / "signaltty" / "agents"
    agents.mkdir(parents=True)
    (agents / "stub-claude.toml").write_text(MANIFEST, encoding="utf-8")
    (tmp_root / "config" / "signaltty" / "config.toml").write_text(
        "[server]\nstuck_recovery_s = 2\nscreen_sweep_ms = 200\nproc_refresh_s = 2\n", encoding="utf-8"
    )
    dp = DaemonProc(tmp_root)
    dp.start()
    try:
        yield dp
    finally:
        dp.stop()
        assert not dp.kill_leftovers()


def spawn_driver(d: DaemonProc, hint: str = "claude") -> str:
    ws = d.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pane = d.call(
        "pane.spawn",
        {"workspace_id": ws, "argv": [PY, str(DRIVER)], "agent_hint": hint},
    )["pane"]
    wait_until(lambda: "driver ready" in d.call("pane.read", {"pane_id": pane["id"]})["text"])
    return pane["id"]


def show(d: DaemonProc, pane_id: str, text: str) -> None:
    data = (json.dumps(text) + "\r").encode()
    d.call("pane.input", {"pane_id": pane_id, "data_b64": base64.b64encode(data).decode()})


def get(d: DaemonProc, pane_id: str) -> dict[str, Any]:
    return d.call("pane.get", {"pane_id": pane_id})["pane"]


def wait_state(d: DaemonProc, pane_id: str, lifecycle: str, attention: str | None = None, timeout: float = 10) -> dict[str, Any]:
    def ok() -> dict[str, Any] | None:
        p = get(d, pane_id)
        if p["lifecycle"] == lifecycle and (attention is None or p["attention"] == attention):
            return p
        return None

    try:
        return wait_until(ok, timeout=timeout)
    except AssertionError:
        raise AssertionError(f"pane never reached {lifecycle}/{attention}: {get(d, pane_id)}") from None


def report(payload: str) -> str:
    return f"\x1b]7501;{payload}\x1b\\"


def hook(d: DaemonProc, pane_id: str, event: str) -> dict[str, Any]:
    return d.call("hook-event", {"agent": "claude", "event": event, "pane_id": pane_id, "payload": {}})


def on_screen(d: DaemonProc, pane_id: str, rule_id: str) -> None:
    """Wait until the pane's screen is what ``rule_id`` matches (a fresh evaluation)."""
    def matched() -> bool:
        return (d.call("pane.explain", {"pane_id": pane_id})["matched"] or {}).get("id") == rule_id

    wait_until(matched, what=f"rule {rule_id} matching the screen")


def swept(d: DaemonProc, passes: int = 2) -> None:
    """Barrier: the screen sweep has run ``passes`` more passes. With two, one whole pass
    started after the call, so whatever the screen shows now has been classified."""
    first = d.call("server.status")["sweep"]["ticks"]
    wait_until(lambda: d.call("server.status")["sweep"]["ticks"] >= first + passes,
               what=f"{passes} sweep passes")


# ---------------------------------------------------------------- §9.5

def test_screen_rules_classify_an_unhooked_pane(d: DaemonProc) -> None:
    pid = spawn_driver(d)
    assert get(d, pid)["lifecycle"] == "unknown"
    show(d, pid, WORKING)
    p = wait_state(d, pid, "working", "none")  # S1
    assert p["lifecycle_source"] == "screen"
    assert p["authority"] == "screen"
    show(d, pid, APPROVAL)
    wait_state(d, pid, "blocked", "input_required")  # S3
    show(d, pid, WORKING)
    wait_state(d, pid, "working", "none")  # S4
    show(d, pid, IDLE_BOX)
    p = wait_state(d, pid, "done", "unread")  # S2
    assert p["lifecycle_source"] == "screen"


CODEX_STARTUP = Path(__file__).resolve().parents[1] / "fixtures" / "real-agents" / "codex" / "00_startup_hooks_review.raw"


def test_a_backlog_the_sweep_left_is_applied_without_further_output(d: DaemonProc) -> None:
    """Codex 0.171.0's start-up bytes arrive in one burst, then it prints nothing while its
    "Hooks need review" dialog waits. The sweep applies a backlog in bounded pieces; the
    rows it evaluates must catch up with the rest on later ticks, not stay at the frame
    before the dialog until the next output (seen as Codex reading ``unknown`` for 6 s and
    then ``done`` instead of ``idle``). Only ``pane.get`` is polled: a screen read would
    apply the backlog itself and hide the fault."""
    ws = d.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pane_id = d.call(
        "pane.spawn",
        {"workspace_id": ws, "argv": [PY, str(DRIVER)], "agent_hint": "codex", "cols": 120, "rows": 40},
    )["pane"]["id"]
    wait_until(lambda: "driver ready" in d.call("pane.read", {"pane_id": pane_id})["text"])
    data = (json.dumps({"raw": str(CODEX_STARTUP)}) + "\r").encode()
    d.call("pane.input", {"pane_id": pane_id, "data_b64": base64.b64encode(data).decode()})
    p = wait_state(d, pane_id, "blocked", "input_required", timeout=5)
    assert "hooks" in (p.get("last_message") or "").lower()


def test_fallback_and_hold_change_nothing(d: DaemonProc) -> None:
    pid = spawn_driver(d)
    show(d, pid, PLAIN)  # S7: idle_fallback on unknown → nothing
    on_screen(d, pid, "idle_fallback")
    swept(d)
    assert get(d, pid)["lifecycle"] == "unknown"
    show(d, pid, WORKING)
    wait_state(d, pid, "working")
    show(d, pid, CLEAR + "showing transcript\r\n")  # S8: hold
    on_screen(d, pid, "transcript")
    swept(d)
    assert get(d, pid)["lifecycle"] == "working"


def test_explain_lists_every_rule_with_region_and_result(d: DaemonProc) -> None:
    pid = spawn_driver(d)
    show(d, pid, APPROVAL)
    wait_state(d, pid, "blocked")
    ex = d.call("pane.explain", {"pane_id": pid})
    assert ex["source"] == "user"
    assert ex["kind"] == "claude"
    assert ex["live"]
    assert not ex["hooked"]
    assert ex["authority"] == "screen"
    assert ex["classifies"]
    assert ex["matched"] == {"id": "approval", "state": "blocked", "index": 0}
    rules = {r["id"]: r for r in ex["rules"]}
    assert rules["approval"]["region"] == "bottom(6)"
    assert rules["approval"]["matched"]
    assert rules["busy"]["region"] == "bottom(12)"
    assert not rules["busy"]["matched"]
    assert rules["prompt_ready"]["region"] == "prompt_box"
    assert rules["prompt_ready"]["priority"] == 40
    assert rules["idle_fallback"]["matched"]
    assert all(r["file"].endswith("stub-claude.toml") for r in ex["rules"])
    assert ex["program_status"] is None
    assert ex["recovery"] is None


def test_explain_errors(d: DaemonProc) -> None:
    with pytest.raises(SignalttyError) as exc:
        d.call("pane.explain", {"pane_id": "pane_nope"})
    assert exc.value.code == "NO_SUCH_PANE"
    with pytest.raises(SignalttyError) as exc:
        d.call("pane.explain", {})
    assert exc.value.code == "BAD_PARAMS"


def test_explain_of_an_exited_pane_lists_rules_unevaluated(d: DaemonProc) -> None:
    pid = spawn_driver(d)
    d.call("pane.signal", {"pane_id": pid, "signal": "KILL"})
    wait_until(lambda: get(d, pid)["live"]["state"] == "exited")
    ex = d.call("pane.explain", {"pane_id": pid})
    assert not ex["live"]
    assert ex["authority"] == "none"
    assert ex["matched"] is None
    assert ex["rules"]
    assert not any(r["matched"] for r in ex["rules"])


def test_hooked_pane_is_not_classified_by_the_screen_and_recovers(d: DaemonProc) -> None:
    pid = spawn_driver(d)
    hook(d, pid, "UserPromptSubmit")
    p = wait_state(d, pid, "working")
    assert p["authority"] == "hook"
    assert p["lifecycle_source"] == "hook"
    show(d, pid, APPROVAL)  # S11: the screen does not decide for a hooked pane
    on_screen(d, pid, "approval")
    swept(d)
    assert get(d, pid)["lifecycle"] == "working"
    show(d, pid, IDLE_BOX)  # R1: non-fallback idle evidence for N = 2 s
    wait_until(lambda: (d.call("pane.explain", {"pane_id": pid})["recovery"] or {}).get("evidence"))
    ex = d.call("pane.explain", {"pane_id": pid})
    assert ex["recovery"]["armed"]
    assert ex["recovery"]["fires_in_s"] <= 2
    p = wait_state(d, pid, "done", "unread", timeout=8)
    assert p["lifecycle_source"] == "recovery"
    assert p["hooked"]
    assert p["authority"] == "hook"
    assert p["last_message"] == "turn ended without a stop signal"


def test_a_hook_restarts_the_recovery_timer_and_fallback_never_fires(d: DaemonProc) -> None:
    pid = spawn_driver(d)
    hook(d, pid, "UserPromptSubmit")
    wait_state(d, pid, "working")
    show(d, pid, PLAIN)  # R3: only idle_fallback
    on_screen(d, pid, "idle_fallback")
    # the behaviour is a span: past the 2 s recovery period (plus sweep passes), no recovery
    holds_for(lambda: get(d, pid)["lifecycle"] == "working", 3.5, what="working past the recovery")
    show(d, pid, IDLE_BOX)
    wait_until(lambda: (d.call("pane.explain", {"pane_id": pid})["recovery"] or {}).get("evidence"))
    for _ in range(3):  # R2: hooks every second keep it from firing
        time.sleep(1.0)  # the pace of the hooks is the behaviour (under the 2 s period)
        hook(d, pid, "PostToolUse")
    assert get(d, pid)["lifecycle"] == "working"
    wait_state(d, pid, "done", "unread", timeout=8)


# ---------------------------------------------------------------- §9.6

QUERY_PROBE = textwrap.dedent(
    """
    import os, sys, termios, time, tty
    tty.setraw(0)
    os.write(1, b"\\x1b]7501;?\\x1b\\\\")
    got = b""
    deadline = time.time() + 5
    while not got.endswith(b"\\x1b\\\\") and time.time() < deadline:
        got += os.read(0, 64)
    os.write(1, b"REPLY=" + repr(got).encode() + b"\\r\\n")
    time.sleep(30)
    """
)


def test_p1_query_answered_at_once_without_a_viewer(d: DaemonProc) -> None:
    (d.root / "probe.py").write_text(QUERY_PROBE, encoding="utf-8")
    ws = d.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pid = d.call("pane.spawn", {"workspace_id": ws, "argv": [PY, str(d.root / "probe.py")], "agent_hint": "claude"})["pane"]["id"]
    text = wait_until(lambda: (t := d.call("pane.read", {"pane_id": pid})["text"]) and "REPLY=" in t and t)
    assert "REPLY=b'\\x1b]7501;?\\x1b\\\\'" in text
    assert get(d, pid)["lifecycle"] == "unknown"


def test_program_status_reports_drive_the_pane(d: DaemonProc) -> None:
    pid = spawn_driver(d)
    show(d, pid, report("state=working:app=stub"))
    p = wait_state(d, pid, "working")  # P2
    assert p["authority"] == "program_status"
    assert p["lifecycle_source"] == "program_status"
    show(d, pid, APPROVAL)  # P14: the screen does not run under program-status authority
    on_screen(d, pid, "approval")
    swept(d)
    assert get(d, pid)["lifecycle"] == "working"
    show(d, pid, report("state=blocked:kind=permission"))
    wait_state(d, pid, "blocked", "permission_required")  # P3
    show(d, pid, report("state=working:progress=40"))
    p = wait_state(d, pid, "working", "none")  # P4
    wait_until(lambda: (get(d, pid)["program_status"] or {}).get("progress") == 40)
    show(d, pid, report("state=bogus"))  # P9: discarded
    show(d, pid, report("id=task/1:state=idle"))  # child record only
    wait_until(lambda: (get(d, pid)["program_status"] or {}).get("children"))
    assert get(d, pid)["lifecycle"] == "working"
    msg = base64.b64encode(b"Tests passed").decode().rstrip("=")
    show(d, pid, report(f"state=done:msg={msg}"))
    p = wait_state(d, pid, "done", "unread")  # P7
    assert p["last_message"] == "Tests passed"
    show(d, pid, report("state=working"))
    wait_state(d, pid, "working")
    # P12: authority back to the screen. The idle it passes through is brief (the next sweep
    # reads the spinner), so it is read from the event stream rather than polled.
    with d.client(timeout=10) as sub:
        sub.call("subscribe", {"events": ["agent.*"]})
        show(d, pid, WORKING + report("state=clear"))
        deadline = time.monotonic() + 10
        while True:
            msg = sub.read_message(timeout=max(0.1, deadline - time.monotonic()))
            assert msg is not None
            data = msg.get("payload") or {}
            if msg.get("event") == "agent.idle" and data.get("pane_id") == pid:
                break
    assert data["source"] == "program_status"
    p = wait_state(d, pid, "working")  # the screen rules run again: the spinner is visible
    assert p["authority"] == "screen"
    assert p["lifecycle_source"] == "screen"


def test_prompt_start_and_ris_end_program_status(d: DaemonProc) -> None:
    pid = spawn_driver(d)
    show(d, pid, report("state=working"))
    wait_state(d, pid, "working")
    show(d, pid, "\x1b]133;A\x07")
    p = wait_state(d, pid, "idle")
    assert p["program_status"] is None
    show(d, pid, report("state=blocked:kind=question"))
    wait_state(d, pid, "blocked", "input_required")
    show(d, pid, "\x1bc")
    p = wait_state(d, pid, "idle", "none")
    assert p["program_status"] is None


def test_reports_on_a_hooked_pane_are_recorded_only_and_count_as_recovery_evidence(d: DaemonProc) -> None:
    pid = spawn_driver(d)
    hook(d, pid, "UserPromptSubmit")
    wait_state(d, pid, "working")
    show(d, pid, PLAIN + report("state=idle"))  # P11, then R5
    wait_until(lambda: (get(d, pid)["program_status"] or {}).get("state") == "idle")
    p = get(d, pid)
    assert p["lifecycle"] == "working"
    assert p["authority"] == "hook"
    p = wait_state(d, pid, "done", "unread", timeout=8)
    assert p["lifecycle_source"] == "recovery"


def test_a_flood_of_reports_and_bad_base64_is_contained(d: DaemonProc) -> None:
    pid = spawn_driver(d)
    sub = d.client(timeout=None)
    sub.call("subscribe", {"events": ["pane.program_status"]})
    # A canonical-mode line holds at most 4095 bytes: send the flood 80 reports a line.
    for n in range(40):
        show(d, pid, "".join(report(f"state=working:progress={i % 101}") for i in range(n * 80, n * 80 + 80)))
    show(d, pid, report("state=blocked:kind=permission:msg=!!!not-base64!!!"))
    p = wait_state(d, pid, "blocked", "permission_required", timeout=20)
    assert p["last_message"] is None  # the invalid msg was dropped, the report kept
    seen = 0
    while True:  # until the coalesced event that carries the last report (latest wins)
        ev = sub.next_event(timeout=10)
        assert ev is not None, f"subscription closed after {seen} events"
        seen += 1
        if (ev["payload"]["program_status"] or {}).get("state") == "blocked":
            break
    sub.close()
    assert 1 <= seen < 100, seen  # coalesced: not one event per report
    assert d.call("server.status")["pid"]


def test_explain_cli_text_and_json(d: DaemonProc) -> None:
    pid = spawn_driver(d)
    show(d, pid, APPROVAL)
    wait_state(d, pid, "blocked")
    r = d.cli("pane", "explain", pid)
    assert r.returncode == 0, r.stderr
    assert "winner: approval (blocked, #0)" in r.stdout
    assert "authority screen" in r.stdout
    assert " *  0 approval" in r.stdout
    r = d.cli("--json", "pane", "explain", pid)
    assert json.loads(r.stdout)["matched"]["id"] == "approval"
    r = d.cli("pane", "explain", "pane_missing")
    assert r.returncode == 1
    assert "NO_SUCH_PANE" in r.stderr


def test_program_status_ends_when_the_foreground_program_goes_away(d: DaemonProc) -> None:
    ws = d.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pid = d.call(
        "pane.spawn",
        {"workspace_id": ws, "argv": ["bash", "--norc", "--noprofile"], "agent_hint": "claude"},
    )["pane"]["id"]
    code = "import sys,time; sys.stdout.write(chr(27)+']7501;state=working'+chr(27)+chr(92)); sys.stdout.flush(); time.sleep(5)"
    cmd = f"{PY} -c \"{code}\"; clear\r"
    d.call("pane.input", {"pane_id": pid, "data_b64": base64.b64encode(cmd.encode()).decode()})
    p = wait_state(d, pid, "working")
    assert p["authority"] == "program_status"
    wait_until(lambda: get(d, pid)["process_name"] == os.path.basename(PY), timeout=10)
    p = wait_state(d, pid, "idle", timeout=15)  # back to bash: the reporter is gone
    assert p["program_status"] is None
    assert p["authority"] == "screen"


HOSTILE = r"""
[agent]
id = "slowpoke"
kind = "pi"
binaries = ["slowpoke"]

[[screen]]
id = "catastrophic"
state = "working"
region = "screen"
regex = ['(?:(?:a|aa)+)+c']
priority = 100

[[screen]]
id = "ready"
state = "idle"
regex = ['READY']
priority = 50
"""


def test_a_catastrophic_user_rule_is_disabled_and_the_daemon_stays_responsive(d: DaemonProc) -> None:
    (d.root / "config" / "signaltty" / "agents" / "slowpoke.toml").write_text(HOSTILE, encoding="utf-8")
    d.call("agents.reload")
    ws = d.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pids = []
    for _ in range(3):
        pane = d.call("pane.spawn", {"workspace_id": ws, "argv": [PY, str(DRIVER)], "agent_hint": "pi"})["pane"]
        pids.append(pane["id"])
    for pid in pids:
        wait_until(lambda pid=pid: "driver ready" in d.call("pane.read", {"pane_id": pid})["text"])
        show(d, pid, CLEAR + "a" * 60 + "b\r\n")
    status = wait_until(lambda: (s := d.call("server.status"))["sweep"]["disabled_rules"] and s, timeout=20)
    assert status["sweep"]["disabled_rules"] == ["slowpoke.toml:catastrophic"]
    # the loop answered while the rule was being tried, and other rules still classify
    show(d, pids[0], CLEAR + "a" * 60 + "b READY\r\n")
    ex = wait_until(lambda: (e := d.call("pane.explain", {"pane_id": pids[0]}))["matched"] and e)
    assert ex["matched"]["id"] == "ready"
    assert ex["rules"][0]["disabled"] == "search ran out of time"
    assert not ex["rules"][0]["matched"]


def test_agent_rules_stop_when_only_the_shell_is_left(d: DaemonProc) -> None:
    # a bash pane promoted to claude by the refresh; after the agent quits, the shell's
    # screen is not read with claude's rules (it would stay "working" forever)
    bindir = d.root / "bin"
    bindir.mkdir()
    fake = bindir / "claude"
    fake.write_text("#!/bin/sh\nprintf '\\342\\240\\231 Working on it\\n'\nsleep 60\n")
    fake.chmod(0o755)
    ws = d.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pid = d.call("pane.spawn", {"workspace_id": ws, "argv": ["bash", "--norc", "--noprofile"]})["pane"]["id"]
    cmd = f"PS1='$ '; {fake}\r"
    d.call("pane.input", {"pane_id": pid, "data_b64": base64.b64encode(cmd.encode()).decode()})
    wait_until(lambda: get(d, pid)["agent"]["kind"] == "claude", timeout=15)
    p = wait_state(d, pid, "working")
    assert p["authority"] == "screen"
    assert p["process_name"] == "claude"
    d.call("pane.input", {"pane_id": pid, "data_b64": base64.b64encode(b"\x03").decode()})  # Ctrl-C
    p = wait_state(d, pid, "idle", timeout=15)
    assert p["agent"]["kind"] == "claude"
    assert p["process_name"] == "bash"
    assert p["authority"] == "none"
    ex = d.call("pane.explain", {"pane_id": pid})
    assert ex["source"] == "none"
    assert ex["rules"] == []
    show_cmd = "echo '\u2819 Working'\r"  # the shell printing agent-like text changes nothing
    d.call("pane.input", {"pane_id": pid, "data_b64": base64.b64encode(show_cmd.encode()).decode()})
    wait_until(lambda: d.call("pane.read", {"pane_id": pid})["text"].count("\u2819 Working") >= 2,
               what="the echo and its output on screen")
    swept(d)
    assert get(d, pid)["lifecycle"] == "idle"


def test_program_status_holds_while_its_script_stays_in_front(d: DaemonProc) -> None:
    # the name from the spawn argv ("reporter.py" → "reporter") and the one read from /proc
    # ("python3 reporter.py" → "reporter") must agree, or the first refresh ends the authority
    script = d.root / "reporter.py"
    script.write_text(
        "import sys, time\n"
        "sys.stdout.write('\\x1b]7501;state=working\\x1b\\\\'); sys.stdout.flush()\n"
        "time.sleep(60)\n"
    )
    script.chmod(0o755)
    ws = d.call("workspace.create", {"name": "w"})["workspace"]["id"]
    py = d.call("pane.spawn", {"workspace_id": ws, "argv": [PY, str(script)]})["pane"]["id"]
    wait_state(d, py, "working")
    # a span: two refreshes (proc_refresh_s = 2), whose count the daemon does not report
    p = holds_for(lambda: (q := get(d, py))["authority"] == "program_status" and q, 5.0,
                  what="program-status authority across two refreshes")
    assert p["lifecycle"] == "working", p
    assert p["authority"] == "program_status", p
    assert p["process_name"] == "reporter"
