"""A waiting reporter prints an allow verdict only for an authenticated answer (issue #10).

The real ``signaltty hook-event --wait-for-answer`` (the command Claude Code runs for a
``PermissionRequest``) waits on a real pane's prompt while one thing happens to it: timeout,
daemon shutdown, connection drop, pane close, supersession, an answer from a pane process
(refused), an ambiguous decision id, deny. Its stdout — what the agent obeys — must never
carry ``allow``; the last case, the person answering from outside every pane, must (so the
check can fail).
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from signaltty.proto import trust
from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, wait_until
from tests.server.test_hooks_e2e import Agent, hook
from tests.server.test_trust_answers import _answer_from_pane, _codex_decision


class Reporter:
    """``signaltty hook-event`` for a Claude ``PermissionRequest``, waiting for a verdict."""

    def __init__(self, d: DaemonProc, pane_id: str, timeout: float = 30, command: str = "ls") -> None:
        payload = d.root / f"payload-{time.monotonic_ns()}.json"
        payload.write_text(json.dumps({"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": command}}))
        # run from outside every pane with an explicit --pane (the person's manual flow): a
        # verdict is obeyed only from a server proven to be the daemon, which this process
        # does not descend from, so it names it (docs/security.md, fourth attack pass, N1)
        assert d.proc is not None
        env = {**d.env, trust.DAEMON_ENV: trust.identity_token(d.proc.pid)}
        with open(payload, "rb") as stdin:
            self.proc = subprocess.Popen(
                ["signaltty", "hook-event", "--agent", "claude", "--event", "PermissionRequest",
                 "--payload-stdin", "--wait-for-answer", "--wait-timeout", str(timeout), "--pane", pane_id],
                stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
            )

    def result(self, timeout: float = 60) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err


def _claude_pane(d: DaemonProc) -> Agent:
    a = Agent(d, [hook("SessionStart", {"session_id": "S1"}), hook("UserPromptSubmit", {"session_id": "S1"})])
    a.wait_entries(2)
    return a


def _pending(d: DaemonProc, a: Agent) -> str:
    return wait_until(lambda: (a.get()["pending_decision"] or {}).get("id"), 20)


def _verdict(stdout: str) -> str | None:
    """The behaviour the agent would obey, or None for no verdict (its own dialog)."""
    if not stdout.strip():
        return None
    return json.loads(stdout)["hookSpecificOutput"]["decision"]["behavior"]


def _path_timeout(d: DaemonProc, a: Agent) -> list[Reporter]:
    r = Reporter(d, a.id, timeout=1)
    return [r]


def _path_deny(d: DaemonProc, a: Agent) -> list[Reporter]:
    r = Reporter(d, a.id)
    _pending(d, a)
    d.call("decision.answer", {"pane_id": a.id, "verdict": "deny"})
    return [r]


def _path_shutdown(d: DaemonProc, a: Agent) -> list[Reporter]:
    r = Reporter(d, a.id)
    _pending(d, a)
    assert d.stop() == 0
    return [r]


def _hard_kill(d: DaemonProc) -> None:
    """SIGKILL the daemon (no shutdown, sockets just break), then what its panes ran."""
    assert d.proc is not None
    children = psutil.Process(d.proc.pid).children(recursive=True)
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait()
    d.proc = None
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.kill()


def _path_connection_drop(d: DaemonProc, a: Agent) -> list[Reporter]:
    r = Reporter(d, a.id)
    _pending(d, a)
    _hard_kill(d)
    return [r]


def _path_pane_close(d: DaemonProc, a: Agent) -> list[Reporter]:
    r = Reporter(d, a.id)
    _pending(d, a)
    d.call("pane.close", {"pane_id": a.id, "signal": "HUP"})
    return [r]


def _path_superseded(d: DaemonProc, a: Agent) -> list[Reporter]:
    first = Reporter(d, a.id, command="rm -rf /")
    did = _pending(d, a)
    second = Reporter(d, a.id, command="ls")
    wait_until(lambda: _pending(d, a) != did)
    # the person allows what is shown now: the second request, never the first
    d.call("decision.answer", {"pane_id": a.id, "verdict": "allow"})
    code, out, _ = second.result()
    assert _verdict(out) == "allow"
    return [first]


def _path_pane_process(d: DaemonProc, a: Agent) -> list[Reporter]:
    r = Reporter(d, a.id, timeout=8)
    did = _pending(d, a)
    for target in (a.id, did):
        res = _answer_from_pane(d, target)
        assert res["rc"] == 1, res
        assert "FORBIDDEN" in res["stderr"], res
    return [r]


def _path_ambiguous(d: DaemonProc, a: Agent) -> list[Reporter]:
    r = Reporter(d, a.id, timeout=8)
    did = _pending(d, a)
    _codex_decision(d, did)  # another pane's reporter copies the id
    with pytest.raises(SignalttyError) as exc:
        d.call("decision.answer", {"decision_id": did, "verdict": "allow"})
    assert exc.value.code == "AMBIGUOUS"
    assert d.cli("permission", "answer", did, "allow").returncode == 1
    return [r]


def _path_person(d: DaemonProc, a: Agent) -> list[Reporter]:
    r = Reporter(d, a.id)
    did = _pending(d, a)
    d.call("decision.answer", {"pane_id": a.id, "decision_id": did, "verdict": "allow"})
    return [r]


PATHS = {
    "timeout": _path_timeout,
    "deny": _path_deny,
    "daemon-shutdown": _path_shutdown,
    "connection-drop": _path_connection_drop,
    "pane-close": _path_pane_close,
    "superseded": _path_superseded,
    "answer-from-pane-process": _path_pane_process,
    "ambiguous-id": _path_ambiguous,
}


@pytest.mark.parametrize("path", list(PATHS))
def test_waiting_reporter_never_prints_allow(tmp_root: Path, path: str) -> None:
    d = DaemonProc(tmp_root)
    d.start()
    try:
        a = _claude_pane(d)
        reporters = PATHS[path](d, a)
        for r in reporters:
            code, out, err = r.result()
            assert code == 0, err  # never an error the agent would show, never exit 2
            assert "allow" not in out, (path, out, err)
            assert _verdict(out) in (None, "deny")
            if path == "deny":
                assert _verdict(out) == "deny"
    finally:
        d.stop()
        d.kill_leftovers()


def test_person_answer_is_the_allow_path(tmp_root: Path) -> None:
    """The control: the same reporter prints allow for the person's answer."""
    d = DaemonProc(tmp_root)
    d.start()
    try:
        a = _claude_pane(d)
        [r] = _path_person(d, a)
        code, out, _ = r.result()
        assert code == 0
        assert _verdict(out) == "allow"
        assert json.loads(out) == {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                                          "decision": {"behavior": "allow"}}}
    finally:
        d.stop()
        d.kill_leftovers()
