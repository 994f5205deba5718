"""Hooks end to end: a fake agent in a real pane calls the real installed ``signaltty
hook-event``/``report-session`` with real stdin payloads (issue #3; states.md §9.1, §9.8,
§9.9, §9.10; integrations.md §2, §4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import REPO, DaemonProc, wait_until

FAKE = REPO / "tests" / "fixtures" / "fake_agent.py"
SHARED = REPO / "tests" / "fixtures" / "real-agents"


def agent_bin(root: Path, name: str = "claude") -> Path:
    """The fake agent installed under ``name`` (so process detection sees that program)."""
    bindir = root / "bin"
    bindir.mkdir(exist_ok=True)
    path = bindir / name
    path.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
    path.chmod(0o755)
    return path


class Agent:
    def __init__(self, d: DaemonProc, plan: list[dict], name: str = "claude", linger: float = 60) -> None:
        self.d = d
        self.log = d.root / f"{name}-{time.monotonic_ns()}.log"
        prog = agent_bin(d.root, name)
        ws = d.call("workspace.create", {"name": name, "cwd": str(d.root)})["workspace"]
        self.pane = d.call(
            "pane.spawn",
            {
                "workspace_id": ws["id"],
                "argv": [str(prog), json.dumps(plan)],
                "env": {"SIGNALTTY_FAKE_LOG": str(self.log), "SIGNALTTY_FAKE_LINGER": str(linger)},
            },
        )["pane"]
        self.id = self.pane["id"]

    def entries(self) -> list[dict]:
        try:
            return [json.loads(x) for x in self.log.read_text().splitlines()]
        except FileNotFoundError:
            return []

    def wait_entries(self, n: int, timeout: float = 20) -> list[dict]:
        return wait_until(lambda: len(self.entries()) >= n and self.entries(), timeout=timeout)

    def get(self) -> dict:
        return self.d.call("pane.get", {"pane_id": self.id})["pane"]


def hook(event: str, payload: dict | None = None, agent: str = "claude", args: list[str] | None = None) -> dict:
    step: dict = {"hook": event, "agent": agent}
    if payload is not None:
        step["payload"] = payload
    if args:
        step["args"] = args
    return step


def test_claude_turn_through_real_reporter(daemon):
    a = Agent(daemon, [
        hook("SessionStart", {"session_id": "S1", "source": "startup"}),
        hook("UserPromptSubmit", {"session_id": "S1", "prompt": "fix"}),
        hook("PreToolUse", {"session_id": "S1", "tool_name": "Bash"}),
        hook("Stop", {"session_id": "S1", "last_assistant_message": "All tests pass."}),
    ])
    log = a.wait_entries(4)
    assert [e["rc"] for e in log] == [0, 0, 0, 0]
    assert all(e["stdout"] == "" for e in log)  # stdout stays empty without --json
    assert log[0]["stderr"].strip() == "accepted claude:SessionStart lifecycle=idle attention=none"
    assert log[3]["stderr"].strip() == "accepted claude:Stop lifecycle=done attention=unread"
    p = a.get()
    assert (p["lifecycle"], p["attention"], p["last_message"]) == ("done", "unread", "All tests pass.")
    # a path-qualified launch resumes with the same path (agents.md §3.4 step 4)
    assert p["agent"]["agent_session_id"] == "S1"
    assert p["agent"]["resume_argv"] == [str(daemon.root / "bin" / "claude"), "--resume", "S1"]
    assert p["hooked"] is True
    assert p["authority"] == "hook"
    assert p["agent"]["kind"] == "claude"


def test_routing_by_ancestry_without_pane_env(daemon):
    # `env -u` removes SIGNALTTY_PANE: only the process ancestry can find the pane.
    a = Agent(daemon, [{"spawn": ["env", "-u", "SIGNALTTY_PANE", "signaltty", "hook-event", "--agent", "claude", "--event", "UserPromptSubmit"]}])
    a.wait_entries(1)
    assert a.get()["lifecycle"] == "working"


def test_foreign_hook_and_daemon_down(daemon, tmp_root):
    env = {k: v for k, v in daemon.env.items() if k != "SIGNALTTY_PANE"}
    r = subprocess.run(["signaltty", "--json", "status"], env=env, capture_output=True, text=True)
    assert r.returncode == 0
    r = subprocess.run(
        ["signaltty", "hook-event", "--agent", "cursor", "--event", "sessionStart", "--json"],
        env=env, capture_output=True, text=True,
    )
    assert r.returncode == 0
    assert json.loads(r.stdout)["pane_id"] is None
    assert r.stderr.strip() == "no pane for cursor:sessionStart"
    down = dict(env, SIGNALTTY_SOCKET=str(tmp_root / "nobody.sock"))
    t0 = time.monotonic()
    r = subprocess.run(["signaltty", "hook-event", "--agent", "claude", "--event", "Stop"], env=down, capture_output=True, text=True)
    # a generous bound on a missing daemon: the agent is never held up (nothing to wait for)
    assert r.returncode == 0
    assert r.stdout == ""
    assert time.monotonic() - t0 < 5
    r = subprocess.run(["signaltty", "hook-event", "--agent", "claude", "--event", "Stop", "--pane", "pane_x"], env=down, capture_output=True, text=True)
    assert r.returncode == 1
    assert "server not reachable at" in r.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["--agent", "nope", "--event", "Stop", "--pane", "P"], None, "server error BAD_PARAMS: unknown agent: nope"),
        (["--agent", "claude", "--event", "Stop", "--pane", "pane_nope"], None, "server error NO_SUCH_PANE"),
        (["--agent", "claude", "--event", "Stop", "--payload-stdin"], "{not json", "invalid payload JSON"),
        (["--agent", "claude", "--bogus"], None, "unknown option --bogus"),
        (["--event", "Stop"], None, "--agent is required"),
        (["--agent", "claude", "--event", "X", "--decision", "{x"], None, "invalid decision JSON"),
    ],
    ids=["unknown-agent", "unknown-pane", "bad-json", "bad-option", "no-agent", "bad-decision"],
)
def test_reporter_errors_exit_1_never_2(daemon, args, stdin, message):
    if "P" in args:
        ws = daemon.call("workspace.create", {"name": "e"})["workspace"]
        pane = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
        args = [pane["id"] if a == "P" else a for a in args]
    r = subprocess.run(["signaltty", "hook-event", *args], env=daemon.env, input=stdin, capture_output=True, text=True)
    assert r.returncode == 1, r
    assert message in r.stderr
    assert r.stdout == ""


def test_payload_over_256k_from_client(daemon):
    ws = daemon.call("workspace.create", {"name": "b"})["workspace"]
    pane = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
    with pytest.raises(SignalttyError) as exc:
        daemon.call("hook-event", {"agent": "claude", "event": "Stop", "pane_id": pane["id"], "payload": {"x": "y" * (256 * 1024)}})
    assert exc.value.code == "RATE_LIMITED"
    assert daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]["lifecycle"] == "unknown"


def test_codex_notify_payload_as_trailing_argument(daemon):
    notify = {"type": "agent-turn-complete", "thread-id": "T1", "last-assistant-message": "done!"}
    a = Agent(daemon, [
        hook("SessionStart", {"session_id": "T1"}, agent="codex"),
        hook("UserPromptSubmit", {"session_id": "T1"}, agent="codex"),
        {"spawn": ["signaltty", "hook-event", "--agent", "codex", json.dumps(notify)]},
    ], name="codex")
    a.wait_entries(3)
    p = a.get()
    assert (p["lifecycle"], p["attention"], p["last_message"]) == ("done", "unread", "done!")


def test_nested_claude_p_does_not_clobber_session(daemon, tmp_root):
    nested = agent_bin(tmp_root, "claude")
    inner_plan = json.dumps([
        hook("SessionStart", {"session_id": "NESTED", "source": "startup"}),
        hook("Stop", {"session_id": "NESTED", "last_assistant_message": "nested done"}),
    ])
    a = Agent(daemon, [
        hook("SessionStart", {"session_id": "OUTER"}),
        hook("UserPromptSubmit", {"session_id": "OUTER"}),
        # a tool of the outer agent runs `claude -p` in the same pane (a shell in between)
        {"spawn": ["sh", "-c", f"SIGNALTTY_FAKE_LINGER=0 {nested} '{inner_plan}'"]},
    ])
    entries = a.wait_entries(5)
    inner = [e for e in entries if "hook" in e and e["hook"] in ("SessionStart", "Stop")][1:]
    assert all("dropped" in e["stderr"] and "nested_session" in e["stderr"] for e in inner), inner
    p = a.get()
    assert p["agent"]["agent_session_id"] == "OUTER"
    assert p["agent"]["session_generation"] == 0
    assert p["lifecycle"] == "working"


def test_report_session_and_validation(daemon):
    a = Agent(daemon, [{"report": ["--session", "R1", "--agent", "pi"]}], name="pi")
    entries = a.wait_entries(1)
    assert entries[0]["rc"] == 0
    assert entries[0]["stdout"] == ""
    p = a.get()
    assert p["agent"]["kind"] == "pi"
    assert p["agent"]["agent_session_id"] == "R1"
    assert p["agent"]["resume_argv"] == [str(daemon.root / "bin" / "pi"), "--session", "R1"]
    for bad in (["-x"], ["/abs/path"], ["a\x01b"], ["x"] * 65):
        with pytest.raises(SignalttyError) as exc:
            daemon.call("report-session", {"pane_id": a.id, "agent_session_id": "R2", "resume_argv": bad})
        assert exc.value.code == "BAD_PARAMS"
    # a free-form command is refused (issue 10 follow-up): only the agent's own resume command
    with pytest.raises(SignalttyError) as exc:
        daemon.call("report-session", {"pane_id": a.id, "agent_session_id": "R2", "resume_argv": ["agy", "--conversation", "R2"]})
    assert exc.value.code == "BAD_PARAMS"
    assert "pi --session R2" in exc.value.message
    r = daemon.call("report-session", {"pane_id": a.id, "agent_session_id": "R2", "resume_argv": ["pi", "--session", "R2"]})
    assert r["pane"]["agent"]["resume_argv"] == [str(daemon.root / "bin" / "pi"), "--session", "R2"]
    assert r["pane"]["agent"]["resume_source"] == "adapter"
    assert r["pane"]["agent"]["session_generation"] == 1
    with pytest.raises(SignalttyError):
        daemon.call("report-session", {"pane_id": a.id, "agent_session_id": "x" * 257})


def _permission_agent(d: DaemonProc, tmp: Path, timeout: int = 30, agent: str = "claude") -> tuple[Agent, Path]:
    gate = tmp / f"gate-{time.monotonic_ns()}"
    a = Agent(d, [
        hook("SessionStart", {"session_id": "S1"}, agent=agent),
        hook("UserPromptSubmit", {"session_id": "S1"}, agent=agent),
        hook("PermissionRequest", {"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "ls"}}, agent=agent,
             args=["--wait-for-answer", "--wait-timeout", str(timeout)]),
        {"wait_file": str(gate)},
    ], name=agent)
    wait_until(lambda: a.get()["pending_decision"] is not None)
    return a, gate


@pytest.mark.parametrize(("verdict", "behavior"), [("allow", {"behavior": "allow"}), ("deny", {"behavior": "deny", "message": "Denied in signaltty"})])
def test_d1_d2_native_permission_answered_from_shell(daemon, tmp_root, verdict, behavior):
    a, _ = _permission_agent(daemon, tmp_root)
    p = a.get()
    assert (p["lifecycle"], p["attention"]) == ("blocked", "permission_required")
    assert p["pending_decision"]["answerable"] is True
    assert p["pending_decision"]["native"] is True
    listed = json.loads(daemon.cli("--json", "permission", "list").stdout)["permissions"]
    assert [x["pane_id"] for x in listed] == [a.id]
    assert listed[0]["tool_name"] == "Bash"
    r = daemon.cli("permission", "answer", a.id, verdict)
    assert r.returncode == 0
    assert r.stdout.startswith("answered permission_")
    entries = a.wait_entries(3)
    assert json.loads(entries[2]["stdout"]) == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": behavior}}
    assert entries[2]["rc"] == 0
    p = a.get()
    assert (p["lifecycle"], p["attention"], p["pending_decision"]) == ("working", "none", None)
    r = daemon.cli("permission", "answer", a.id, verdict)  # stale
    assert r.returncode == 1
    assert "NO_SUCH_DECISION" in r.stderr


def test_d3_timeout_gives_no_verdict(daemon, tmp_root):
    a, _ = _permission_agent(daemon, tmp_root, timeout=1)
    entries = a.wait_entries(3)
    assert entries[2]["stdout"] == ""
    assert entries[2]["rc"] == 0
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"pane_id": a.id, "verdict": "allow"})
    assert exc.value.code == "NO_SUCH_DECISION"
    assert a.get()["lifecycle"] == "blocked"  # the agent shows its own prompt now


def test_d4_concurrent_answers_one_wins(daemon, tmp_root):
    a, _ = _permission_agent(daemon, tmp_root)
    results: list[str] = []

    def answer(v: str) -> None:
        try:
            daemon.call("decision.answer", {"pane_id": a.id, "verdict": v})
            results.append("ok")
        except SignalttyError as exc:
            results.append(exc.code)

    threads = [threading.Thread(target=answer, args=(v,)) for v in ("allow", "deny", "allow", "deny")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["NO_SUCH_DECISION"] * 3 + ["ok"]
    assert a.wait_entries(3)[2]["stdout"] != ""


def test_d5_new_session_invalidates(daemon, tmp_root):
    a, _ = _permission_agent(daemon, tmp_root)
    daemon.call("report-session", {"pane_id": a.id, "agent_session_id": "S9"})
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"pane_id": a.id, "verdict": "allow"})
    assert exc.value.code == "NO_SUCH_DECISION"
    assert a.wait_entries(3)[2]["stdout"] == ""


def test_pane_close_ends_waiter_without_verdict(daemon, tmp_root):
    a, _ = _permission_agent(daemon, tmp_root)
    sub = daemon.client(timeout=None)
    sub.call("subscribe", {"events": ["decision.*"]})
    daemon.call("pane.close", {"pane_id": a.id, "signal": "HUP"})
    ev = sub.next_event(timeout=10)
    assert ev["event"] == "decision.cleared"
    assert ev["payload"]["reason"] == "pane_closed"
    sub.close()


def test_d8_non_waiting_native_decision_is_read_only(daemon):
    a = Agent(daemon, [hook("PermissionRequest", {"session_id": "S1", "tool_name": "Bash", "tool_input": {}})])
    wait_until(lambda: a.get()["pending_decision"] is not None)
    assert a.get()["pending_decision"]["answerable"] is False
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"pane_id": a.id, "verdict": "allow"})
    assert exc.value.code == "NO_SUCH_DECISION"
    assert "(read-only: answer in the terminal)" in daemon.cli("pane", "get", a.id).stdout


def test_c4_codex_typed_answer_channel(daemon):
    # the keys are Codex's own dialog's (issue 10, attack 3, A10): tests/server/test_trust_typed_answers.py
    from tests.server.test_trust_typed_answers import _screen, codex_decision

    a = codex_decision(daemon, {"id": "d1", "prompt": "Run it?",
                                "options": [{"id": "1", "label": "Yes"}, {"id": "2", "label": "No"}]})
    assert a.get()["pending_decision"]["answerable"] is True
    r = daemon.call("decision.answer", {"pane_id": a.id, "option_id": "deny"})
    assert r["option_id"] == "deny"
    wait_until(lambda: _screen(daemon, a).rstrip().endswith("^["))
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"decision_id": "d1", "option_id": "once"})
    assert exc.value.code == "NO_SUCH_DECISION"


def test_d7_generic_explicit_decision_has_no_channel(daemon):
    a = Agent(daemon, [hook("ask", {}, agent="generic", args=["--decision", json.dumps({"id": "g1", "prompt": "Go?", "options": [{"id": "yes", "label": "Yes"}]}), "--message", "Go?"])], name="tool")
    wait_until(lambda: a.get()["pending_decision"] is not None)
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"pane_id": a.id, "option_id": "yes"})
    assert exc.value.code == "BAD_PARAMS"
    assert "no answer channel" in exc.value.message


def test_rs1_restart_resumable_and_resume(tmp_root):
    d = DaemonProc(tmp_root)
    agent_bin(tmp_root, "claude")
    d.env["PATH"] = f"{tmp_root / 'bin'}{os.pathsep}{d.env['PATH']}"
    d.start()
    try:
        plan = [hook("SessionStart", {"session_id": "S1"}), hook("UserPromptSubmit", {"session_id": "S1"})]
        log = tmp_root / "rs1.log"
        ws = d.call("workspace.create", {"name": "rs", "cwd": str(tmp_root)})["workspace"]
        pane_id = d.call(
            "pane.spawn",
            {"workspace_id": ws["id"], "argv": ["claude", json.dumps(plan)], "env": {"SIGNALTTY_FAKE_LOG": str(log)}},
        )["pane"]["id"]
        wait_until(lambda: log.exists() and len(log.read_text().splitlines()) >= 2)
        base = d.call("pane.get", {"pane_id": pane_id})["wait_baseline"]
        assert d.stop() == 0
        # on restart, a `claude` that just echoes how it was resumed
        wrapper = tmp_root / "bin2" / "claude"
        wrapper.parent.mkdir()
        wrapper.write_text("#!/bin/sh\necho resumed-with \"$@\"\nexec sleep 60\n")
        wrapper.chmod(0o755)
        d.env["PATH"] = f"{wrapper.parent}{os.pathsep}{d.env['PATH']}"
        d.start()
        p = d.call("pane.get", {"pane_id": pane_id})["pane"]
        assert p["restore_state"] == "RESUMABLE"
        assert p["live"] == {"state": "exited", "code": None}
        assert (p["lifecycle"], p["attention"]) == ("working", "none")
        assert p["agent"]["resume_argv"] == ["claude", "--resume", "S1"]
        assert psutil_children(d) == []  # restore never starts a process
        with pytest.raises(SignalttyError) as exc:
            d.call("wait", {"pane_id": pane_id, "until": "done", "after": base})
        assert exc.value.code == "IDENTITY_CHANGED"  # W5: a new process instance
        sub = d.client(timeout=None)
        sub.call("subscribe", {"events": ["pane.created"]})
        r = d.call("pane.resume", {"pane_id": pane_id})
        assert r["pane"]["restore_state"] == "LIVE"
        assert r["pane"]["lifecycle"] == "unknown"
        assert r["pane"]["lifecycle_source"] == "resume"
        assert r["pane"]["live"] == {"state": "live"}
        ev = sub.next_event(timeout=10)
        assert ev["payload"]["resumed"] is True
        assert ev["payload"]["pane"]["id"] == pane_id
        d.call("pane.wait_for_output", {"pane_id": pane_id, "match": "resumed-with --resume S1", "timeout_s": 10})
        with pytest.raises(SignalttyError) as exc:
            d.call("pane.resume", {"pane_id": pane_id})
        assert exc.value.message == "pane is already live"
        sub.close()
    finally:
        d.stop()
        d.kill_leftovers()


def psutil_children(d: DaemonProc) -> list:
    import psutil

    return psutil.Process(d.proc.pid).children()


def test_rs4_restored_native_decision_unanswerable(tmp_root):
    d = DaemonProc(tmp_root)
    d.start()
    try:
        a, _ = _permission_agent(d, tmp_root)
        d.stop()
        d.start()
        p = d.call("pane.get", {"pane_id": a.id})["pane"]
        assert p["pending_decision"]["native"]
        assert p["pending_decision"]["answerable"] is False
        with pytest.raises(SignalttyError) as exc:
            d.call("decision.answer", {"pane_id": a.id, "verdict": "allow"})
        assert exc.value.code == "NO_SUCH_DECISION"
    finally:
        d.stop()
        d.kill_leftovers()


def test_resume_not_resumable(daemon):
    ws = daemon.call("workspace.create", {"name": "r"})["workspace"]
    p = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["true"]})["pane"]
    with daemon.client(timeout=None) as cl:
        cl.call("wait", {"pane_id": p["id"], "until": "exited", "timeout_s": 10})
    with pytest.raises(SignalttyError) as exc:
        daemon.call("pane.resume", {"pane_id": p["id"]})
    # it says why and what to do instead (new-user pass)
    assert exc.value.message.startswith("not resumable: this pane runs no agent"), exc.value.message
    assert "signaltty new" in exc.value.message


def test_pane_submit_gate(daemon):
    # The fake agent reads the pasted prompt line and reports a turn start, like a real CLI.
    a = Agent(daemon, [
        hook("SessionStart", {"session_id": "S1"}),
        {"readline": True},
        hook("UserPromptSubmit", {"session_id": "S1"}),
    ])
    wait_until(lambda: a.get()["lifecycle"] == "idle")
    with pytest.raises(SignalttyError) as exc:
        daemon.call("pane.submit", {"pane_id": a.id, "text": "bad \x1b[201~ text"})
    assert exc.value.code == "BAD_PARAMS"
    with daemon.client(timeout=None) as cl:
        r = cl.call("pane.submit", {"pane_id": a.id, "text": "fix the bug", "submit_delay_ms": 50})
    assert r["submitted"] is True
    assert r["outcome"] == "working"
    line = a.wait_entries(3)[1]["readline"]
    assert "fix the bug" in line
    with pytest.raises(SignalttyError) as exc, daemon.client(timeout=None) as cl:
        cl.call("pane.submit", {"pane_id": a.id, "text": "again"})
    assert exc.value.code == "AGENT_BUSY"
    b = Agent(daemon, [])
    with pytest.raises(SignalttyError) as exc, daemon.client(timeout=None) as cl:
        cl.call("pane.submit", {"pane_id": b.id, "text": "hi"})
    assert exc.value.code == "AGENT_NOT_READY"


def test_hook_storm_is_contained(daemon):
    ws = daemon.call("workspace.create", {"name": "s"})["workspace"]
    pane = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
    with daemon.client(timeout=None) as cl:
        for i in range(1000):
            cl.send("hook-event", {"agent": "claude", "event": "UserPromptSubmit" if i % 2 else "Stop", "pane_id": pane["id"], "payload": {"session_id": "S1"}})
        for _ in range(1000):
            msg = cl.read_message(timeout=30)
            assert msg["ok"] is True
    p = daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]
    assert p["lifecycle"] == "working"
    assert p["agent"]["agent_session_id"] == "S1"
    assert daemon.call("server.status")["pid"] == daemon.proc.pid
    # (how long the storm takes and what it costs other clients: bench/latency.py "hook-storm")


def test_hook_on_exited_pane_h21(daemon):
    a = Agent(daemon, [hook("SessionStart", {"session_id": "S3"}), {"exit": 0}])
    with daemon.client(timeout=None) as cl:
        cl.call("wait", {"pane_id": a.id, "until": "exited", "timeout_s": 20})
    r = daemon.call("hook-event", {"agent": "claude", "event": "SessionEnd", "pane_id": a.id, "payload": {"session_id": "S3"}})
    assert r["accepted"]
    assert (r["lifecycle"], r["attention"]) == ("done", "unread")


@pytest.mark.parametrize("agent", ["claude", "codex", "opencode", "pi"])
def test_real_payloads_are_accepted_or_dropped_cleanly(daemon, agent):
    samples = json.loads((SHARED / agent / "hook_samples.json").read_text())
    ws = daemon.call("workspace.create", {"name": agent})["workspace"]
    pane = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
    for event, payload in samples.items():
        body = payload if isinstance(payload, dict) else {"value": payload}
        kind = agent if agent != "pi" else "pi"
        r = daemon.call("hook-event", {"agent": kind, "event": event, "pane_id": pane["id"], "payload": body})
        assert r["accepted"] or r.get("reason") in ("unrecognized_hook", "harness_mismatch"), (event, r)
