"""Native permission answers end to end through the hooks the installer wrote: a fake
provider (fake_provider.py) runs the installed commands exactly as Claude Code / Codex do
(payload on stdin, verdict read from the reporter's stdout, killed at its timeout)
(integrations.md §3, §4; issue 5 "Tests")."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from signaltty.installer.command import managed_command
from signaltty.proto import trust
from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, wait_until

PROVIDER = Path(__file__).parent / "fake_provider.py"
REPORTER = str(Path(sys.executable).parent / "signaltty")
ALLOW = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}
DENY = {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                               "decision": {"behavior": "deny", "message": "Denied in signaltty"}}}


def request(session: str = "S1", **step) -> dict:
    payload = {"session_id": session, "hook_event_name": "PermissionRequest", "tool_name": "Bash",
               "tool_input": {"command": "rm -rf build"}}
    return {"event": "PermissionRequest", "payload": payload, **step}


def start(session: str = "S1") -> list[dict]:
    return [{"event": "SessionStart", "payload": {"session_id": session, "source": "startup"}},
            {"event": "UserPromptSubmit", "payload": {"session_id": session, "prompt": "clean"}}]


class Provider:
    """The fake provider as the pane program, installed as ``claude``/``codex`` so that
    automatic configuration writes its hooks before it starts."""

    def __init__(self, d: DaemonProc, plan: list[dict], name: str = "claude") -> None:
        self.d = d
        self.log = d.root / f"{name}-{time.monotonic_ns()}.log"
        prog = d.root / "pbin" / name
        prog.parent.mkdir(exist_ok=True)
        prog.write_text(f"#!{sys.executable}\n" + PROVIDER.read_text())
        prog.chmod(0o755)
        ws = d.call("workspace.create", {"name": name, "cwd": str(d.root)})["workspace"]
        r = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": [str(prog), json.dumps(plan)],
                                  "env": {"SIGNALTTY_FAKE_LOG": str(self.log)}})
        self.integration = r["integration"]
        self.id = r["pane"]["id"]

    def entries(self) -> list[dict]:
        try:
            return [json.loads(x) for x in self.log.read_text().splitlines()]
        except FileNotFoundError:
            return []

    def entry(self, event: str, tag: str | None = None, timeout: float = 30) -> dict:
        def find():
            return next((e for e in self.entries() if e.get("event") == event and e.get("id") == tag), None)
        return wait_until(find, timeout=timeout)

    def get(self) -> dict:
        return self.d.call("pane.get", {"pane_id": self.id})["pane"]

    def pending(self) -> dict:
        return wait_until(lambda: (self.get()["pending_decision"] or {}).get("answerable") and self.get()["pending_decision"])


def outside_provider(d: DaemonProc, pane_id: str, plan: list[dict], settings: Path, log: Path) -> subprocess.Popen:
    """The fake provider outside the pane (so it outlives the pane and the daemon).

    Its hooks are the commands of ``settings`` with ``--pane`` added: a SIGNALTTY_PANE merely
    inherited by a process that does not run in the pane is dropped (issue 10 §6, as for a
    tmux server started in a pane), an explicit ``--pane`` from outside every pane is obeyed.
    """
    data = json.loads(settings.read_text())
    for groups in data.get("hooks", {}).values():
        for hook in (h for g in groups for h in g.get("hooks", [])):
            command, sep, comment = hook["command"].partition(" #")
            hook["command"] = f"{command} --pane {pane_id}{sep}{comment}"
    named = log.with_suffix(".settings.json")
    named.write_text(json.dumps(data))
    # the person's own wiring outside panes names the daemon it trusts (a reporter outside
    # panes takes no verdict otherwise: issue 10, attack pass 4, N1)
    assert d.proc is not None
    env = {**d.env, "SIGNALTTY_PANE": pane_id, "SIGNALTTY_FAKE_LOG": str(log), "SIGNALTTY_FAKE_LINGER": "0",
           trust.DAEMON_ENV: trust.identity_token(d.proc.pid)}
    return subprocess.Popen([sys.executable, str(PROVIDER), "--settings", str(named), json.dumps(plan)], env=env)


def log_entries(log: Path) -> list[dict]:
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize(("agent", "verdict", "expected"), [
    ("claude", "allow", ALLOW), ("claude", "deny", DENY), ("codex", "allow", ALLOW), ("codex", "deny", DENY),
])
def test_answer_from_shell_reaches_the_provider(daemon, tmp_root, agent, verdict, expected):
    gate = tmp_root / "gate"
    p = Provider(daemon, [*start(), request(), {"wait_file": str(gate)}, {"event": "Stop", "payload": {"session_id": "S1"}}], agent)
    assert p.integration["status"] in ("configured", "disabled")
    assert p.integration["changed"] is True
    hooks_file = daemon.home / (".claude/settings.json" if agent == "claude" else ".codex/hooks.json")
    installed = json.loads(hooks_file.read_text())["hooks"]["PermissionRequest"][0]["hooks"][0]
    assert installed == {"type": "command", "command": managed_command(REPORTER, agent, "PermissionRequest"), "timeout": 125}
    decision = p.pending()
    assert decision["native"] is True
    assert (p.get()["lifecycle"], p.get()["attention"]) == ("blocked", "permission_required")
    r = daemon.cli("permission", "answer", p.id, verdict)
    assert r.returncode == 0, r.stderr
    e = p.entry("PermissionRequest")
    assert (e["rc"], e["killed"]) == (0, False)
    assert json.loads(e["stdout"]) == expected
    assert e["stdout"].count("\n") == 1  # the verdict alone, one line
    assert (p.get()["lifecycle"], p.get()["pending_decision"]) == ("working", None)
    gate.touch()
    wait_until(lambda: p.get()["lifecycle"] == "done")
    assert all(x["stdout"] == "" for x in p.entries() if x.get("event") not in ("PermissionRequest", None))


def test_provider_timeout_disconnects_mid_wait_without_verdict(daemon):
    p = Provider(daemon, [*start(), request(provider_timeout=1.5)])
    p.pending()
    e = p.entry("PermissionRequest")
    assert e["killed"] is True
    assert e["stdout"] == ""
    wait_until(lambda: (p.get()["pending_decision"] or {"answerable": False})["answerable"] is False)
    with pytest.raises(SignalttyError) as exc:  # a late answer grants nothing
        daemon.call("decision.answer", {"pane_id": p.id, "verdict": "allow"})
    assert exc.value.code == "NO_SUCH_DECISION"
    assert p.get()["lifecycle"] == "blocked"  # the provider shows its own prompt now


def test_supersession_newer_request_wins(daemon, tmp_root):
    p = Provider(daemon, [*start(), request(id="old", background=True), {"sleep": 1.0}, request(id="new", background=True)])
    old = p.entry("PermissionRequest", "old")
    assert (old["stdout"], old["rc"], old["killed"]) == ("", 0, False)
    p.pending()
    daemon.call("decision.answer", {"pane_id": p.id, "verdict": "deny"})
    assert p.entry("PermissionRequest", "new")["behavior"] == "deny"


def test_session_replacement_cancels_the_wait(daemon, tmp_root):
    gate = tmp_root / "gate"
    p = Provider(daemon, [*start(), request(background=True), {"wait_file": str(gate)},
                          {"event": "SessionStart", "payload": {"session_id": "S2", "source": "clear"}}])
    p.pending()
    gate.touch()
    e = p.entry("PermissionRequest")
    assert (e["stdout"], e["killed"]) == ("", False)
    assert p.get()["agent"]["agent_session_id"] == "S2"
    with pytest.raises(SignalttyError):
        daemon.call("decision.answer", {"pane_id": p.id, "verdict": "allow"})


def test_pane_exit_ends_the_wait(daemon, tmp_root):
    p = Provider(daemon, start())
    p.entry("UserPromptSubmit")
    log = tmp_root / "outside.log"
    proc = outside_provider(daemon, p.id, [request()], daemon.home / ".claude/settings.json", log)
    try:
        p.pending()
        daemon.call("pane.signal", {"pane_id": p.id, "signal": "KILL"})
        e = wait_until(lambda: next((x for x in log_entries(log) if x.get("event")), None))
        assert (e["stdout"], e["rc"], e["killed"]) == ("", 0, False)
    finally:
        proc.kill()
        proc.wait()


def test_daemon_restart_gives_no_verdict_and_restores_read_only(tmp_root):
    d = DaemonProc(tmp_root)
    d.start()
    proc = None
    try:
        p = Provider(d, start())
        p.entry("UserPromptSubmit")
        log = tmp_root / "outside.log"
        proc = outside_provider(d, p.id, [request()], d.home / ".claude/settings.json", log)
        p.pending()
        d.stop()
        e = wait_until(lambda: next((x for x in log_entries(log) if x.get("event")), None))
        assert e["stdout"] == ""
        assert e["killed"] is False
        d.start()
        restored = d.call("pane.get", {"pane_id": p.id})["pane"]["pending_decision"]
        assert restored["native"] is True
        assert restored["answerable"] is False
        r = d.cli("permission", "answer", p.id, "allow")
        assert r.returncode == 1
        assert "NO_SUCH_DECISION" in r.stderr
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        d.stop()
        d.kill_leftovers()


def test_concurrent_answers_exactly_one_verdict(daemon):
    p = Provider(daemon, [*start(), request()])
    p.pending()
    results: list[tuple[str, str]] = []

    def answer(v: str) -> None:
        try:
            daemon.call("decision.answer", {"pane_id": p.id, "verdict": v})
            results.append(("ok", v))
        except SignalttyError as exc:
            results.append((exc.code, v))

    threads = [threading.Thread(target=answer, args=(v,)) for v in ("allow", "deny") * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [v for code, v in results if code == "ok"]
    assert len(winners) == 1
    assert sorted(c for c, _ in results) == ["NO_SUCH_DECISION"] * 5 + ["ok"]
    assert p.entry("PermissionRequest")["behavior"] == winners[0]


def test_read_only_request_from_a_legacy_hook_then_reinstall(daemon, tmp_root):
    p = Provider(daemon, start())
    p.entry("UserPromptSubmit")
    home = tmp_root / "legacy"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    legacy = f"{REPORTER} hook-event --agent claude --event PermissionRequest --payload-stdin"
    settings.write_text(json.dumps({"hooks": {"PermissionRequest": [
        {"matcher": "", "hooks": [{"type": "command", "command": legacy, "timeout": 10}]}]}}))
    log = tmp_root / "ro.log"
    proc = outside_provider(daemon, p.id, [request()], settings, log)
    try:
        e = wait_until(lambda: next((x for x in log_entries(log) if x.get("event")), None))
        assert (e["stdout"], e["rc"]) == ("", 0)
        decision = p.get()["pending_decision"]
        assert decision["native"] is True
        assert decision["answerable"] is False
        r = daemon.cli("permission", "answer", p.id, "allow")
        assert r.returncode == 1
        assert "NO_SUCH_DECISION" in r.stderr
    finally:
        proc.kill()
        proc.wait()
    r = daemon.cli("integration", "install", "claude", "--home", str(home))
    assert r.returncode == 0, r.stderr
    rewritten = json.loads(settings.read_text())["hooks"]["PermissionRequest"]
    assert rewritten == [{"matcher": "", "hooks": [{"type": "command", "timeout": 125,
                          "command": managed_command(REPORTER, "claude", "PermissionRequest")}]}]
