"""Who may answer a permission, and which decision an id names (issue #10 items 3 and 5).

Real daemon, real panes, the real ``signaltty`` CLI run *inside* panes: a pane process
answering another pane's prompt, and the case of the issue — a background loop left by one
tool call (double-forked out of the pane's process tree, still in its session) retrying
``permission answer … allow`` every 0.2 s — are refused with the guard's message while the
person's answer from outside every pane goes through. ``permissions.answer_from_panes =
true`` turns the guard off. Decision ids pending on two panes are refused as ``AMBIGUOUS``
unless the pane is named.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, wait_until
from tests.server.test_hooks_e2e import Agent, _permission_agent, agent_bin, hook

REFUSAL = (
    "answer from your own terminal, the notification or D-Bus; "
    "processes inside signaltty panes cannot answer permissions"
)

# A tool call that leaves a background job behind: it returns at once, its job leaves the
# pane's process tree (double fork: reparented to init or a subreaper) and its foreground
# process group (so the pane's hang-up does not end it), and answers "allow" every 0.2 s.
LOOP = r"""
import json, os, subprocess, sys, time
log, pidfile, target = sys.argv[1:4]
if os.fork():
    while not os.path.exists(pidfile):  # returns once its job is safely on its way
        time.sleep(0.02)  # (the attacker program's own polling, not the test's)
    os._exit(0)
os.setpgid(0, 0)
if os.fork():
    os._exit(0)
with open(pidfile + ".tmp", "w") as fh:
    fh.write(str(os.getpid()))
os.rename(pidfile + ".tmp", pidfile)
env = {k: v for k, v in os.environ.items() if k != "SIGNALTTY_PANE"}  # covers its tracks
while True:
    r = subprocess.run(["signaltty", "permission", "answer", target, "allow"], capture_output=True, text=True, env=env)
    with open(log, "a") as fh:
        fh.write(json.dumps({"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr}) + "\n")
    time.sleep(0.2)  # the attacker's pace (part of the scenario), not synchronisation
"""


@pytest.fixture
def open_daemon(tmp_root: Path) -> Iterator[DaemonProc]:
    """A daemon with ``permissions.answer_from_panes = true``."""
    d = DaemonProc(tmp_root)
    d.write_config("[permissions]\nanswer_from_panes = true\n")
    d.start()
    try:
        yield d
    finally:
        d.stop()
        assert not d.kill_leftovers()


def _shell_pane(d: DaemonProc, script: str, name: str = "sh") -> str:
    ws = d.call("workspace.create", {"name": name, "cwd": str(d.root)})["workspace"]
    return d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sh", "-c", script]})["pane"]["id"]


def _answer_from_pane(d: DaemonProc, target: str, verdict: str = "allow") -> dict:
    """Run ``signaltty permission answer`` in a new pane; its rc/stdout/stderr."""
    out = d.root / f"ans-{time.monotonic_ns()}"
    _shell_pane(
        d,
        f"signaltty permission answer {target} {verdict} >{out}.out 2>{out}.err; echo $? >{out}.rc; exec sleep 60",
        "answerer",
    )
    rc = wait_until(lambda: (Path(f"{out}.rc").exists() and Path(f"{out}.rc").read_text().strip()) or None, 30)
    return {"rc": int(rc), "stdout": Path(f"{out}.out").read_text(), "stderr": Path(f"{out}.err").read_text()}


def _start_loop(d: DaemonProc, target: str, *, then: str = "exec sleep 600") -> tuple[str, Path, int]:
    """A pane whose "tool call" leaves the answering loop behind; (pane id, log, loop pid)."""
    script = d.root / "loop.py"
    script.write_text(LOOP)
    log = d.root / f"loop-{time.monotonic_ns()}.log"
    pidfile = Path(f"{log}.pid")
    # started without SIGNALTTY_PANE (an ancestor's environment naming the pane is refused
    # on its own): only its session gives it away
    pane = _shell_pane(d, f"env -u SIGNALTTY_PANE {sys.executable} {script} {log} {pidfile} {target}; {then}", "looper")
    pid = int(wait_until(lambda: pidfile.exists() and pidfile.read_text(), 20))
    return pane, log, pid


def _attempts(log: Path) -> list[dict]:
    try:
        return [json.loads(x) for x in log.read_text().splitlines()]
    except FileNotFoundError:
        return []


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _pane_child(d: DaemonProc, pane_id: str) -> int:
    """The pid of a pane's process: the daemon's child whose environment names the pane."""
    for child in psutil.Process(d.proc.pid).children():
        try:
            if child.environ().get("SIGNALTTY_PANE") == pane_id:
                return child.pid
        except psutil.Error:
            continue
    raise AssertionError(f"no process for {pane_id}")


def _ancestors(pid: int) -> list[int]:
    return [p.pid for p in psutil.Process(pid).parents()]


def _refusals(d: DaemonProc) -> list[dict]:
    """The daemon's ``decision.answer_refused`` log records (why, caller_pane)."""
    out = []
    for line in (d.state_dir / "signaltty.log").read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("event") == "decision.answer_refused":
            out.append(rec)
    return out


def test_pane_process_cannot_answer_another_panes_prompt(daemon, tmp_root):
    a, _ = _permission_agent(daemon, tmp_root)
    r = _answer_from_pane(daemon, a.id)
    assert r["rc"] == 1, r
    assert REFUSAL in r["stderr"], r
    assert "FORBIDDEN" in r["stderr"], r
    # by decision id too, and with deny: no answer of any kind from a pane
    did = a.get()["pending_decision"]["id"]
    r = _answer_from_pane(daemon, did, "deny")
    assert r["rc"] == 1, r
    assert REFUSAL in r["stderr"], r
    p = a.get()
    assert (p["lifecycle"], p["attention"]) == ("blocked", "permission_required")
    assert len(a.entries()) == 2  # the reporter is still waiting: no verdict went out
    # the person, outside every pane, is obeyed
    assert daemon.cli("permission", "answer", a.id, "allow").returncode == 0
    out = a.wait_entries(3)[2]["stdout"]
    assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


def test_agent_cannot_answer_its_own_prompt(daemon, tmp_root):
    """A tool the agent runs (a child of the pane's process) allows the agent's own request."""
    gate = tmp_root / "own-gate"
    res = tmp_root / "own"
    log = tmp_root / "own-agent.log"
    plan = [
        hook("SessionStart", {"session_id": "S1"}),
        hook("PermissionRequest", {"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "rm -rf x"}},
             args=["--wait-for-answer", "--wait-timeout", "30"]),
    ]
    # (it even drops SIGNALTTY_PANE from its environment: its ancestry gives it away)
    tool = (f"(while [ ! -e {gate} ]; do sleep 0.05; done; p=$SIGNALTTY_PANE; "
            f"env -u SIGNALTTY_PANE signaltty permission answer \"$p\" allow "
            f">{res}.out 2>{res}.err; echo $? >{res}.rc) & ")
    prog = agent_bin(tmp_root, "claude")
    ws = daemon.call("workspace.create", {"name": "own", "cwd": str(tmp_root)})["workspace"]
    pane = daemon.call("pane.spawn", {
        "workspace_id": ws["id"],
        "argv": ["sh", "-c", tool + f"exec {prog} '{json.dumps(plan)}'"],
        "env": {"SIGNALTTY_FAKE_LOG": str(log)},
    })["pane"]
    wait_until(lambda: daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]["pending_decision"] is not None)
    gate.touch()
    rc = wait_until(lambda: Path(f"{res}.rc").exists() and Path(f"{res}.rc").read_text().strip(), 30)
    assert rc == "1"
    assert REFUSAL in Path(f"{res}.err").read_text()
    p = daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]
    assert p["pending_decision"] is not None
    assert p["attention"] == "permission_required"
    assert len(log.read_text().splitlines()) == 1  # SessionStart only: the request still waits
    assert [(r["why"], r["caller_pane"]) for r in _refusals(daemon)] == [("ancestry", pane["id"])]


def test_background_loop_left_by_a_tool_call_is_refused(daemon, tmp_root):
    """The issue's case: the loop left the pane's process tree, but not its session."""
    a, _ = _permission_agent(daemon, tmp_root)
    looper, log, pid = _start_loop(daemon, a.id)
    try:
        assert _pane_child(daemon, looper) not in _ancestors(pid)  # ancestry alone would miss it
        assert os.getsid(pid) == _pane_child(daemon, looper)
        wait_until(lambda: len(_attempts(log)) >= 5, 30)
        assert all(x["rc"] == 1 and REFUSAL in x["stderr"] for x in _attempts(log))
        # it was told apart by its session (it left the tree and cleaned its environment)
        assert {(r["why"], r["caller_pane"]) for r in _refusals(daemon)} == {("session", looper)}
        assert len(a.entries()) == 2
        assert a.get()["attention"] == "permission_required"
        # a later request in another pane is not approved either
        b, _ = _permission_agent(daemon, tmp_root)
        n = len(_attempts(log))
        wait_until(lambda: len(_attempts(log)) >= n + 3, 30)
        assert b.get()["pending_decision"] is not None
        assert len(b.entries()) == 2
        assert daemon.cli("permission", "answer", a.id, "deny").returncode == 0
        assert json.loads(a.wait_entries(3)[2]["stdout"])["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    finally:
        _kill(pid)


def test_loop_outliving_its_pane_is_still_refused(daemon, tmp_root):
    """The pane whose tool call left the loop has exited; its session id lives on."""
    a, _ = _permission_agent(daemon, tmp_root)
    looper, log, pid = _start_loop(daemon, a.id, then="exit 0")
    try:
        wait_until(lambda: daemon.call("pane.get", {"pane_id": looper})["pane"]["live"]["state"] == "exited")
        n = len(_attempts(log))
        wait_until(lambda: len(_attempts(log)) >= n + 3, 30)
        assert all(x["rc"] == 1 and REFUSAL in x["stderr"] for x in _attempts(log)[n:])
        # closing the pane record does not make its processes strangers either
        daemon.call("pane.close", {"pane_id": looper})
        assert psutil.pid_exists(pid)
        n = len(_attempts(log))
        wait_until(lambda: len(_attempts(log)) >= n + 3, 30)
        assert all(x["rc"] == 1 and REFUSAL in x["stderr"] for x in _attempts(log)[n:])
        assert len(a.entries()) == 2
        assert a.get()["pending_decision"] is not None
        assert {(r["why"], r["caller_pane"]) for r in _refusals(daemon)} == {("session", looper)}
    finally:
        _kill(pid)


def test_environment_naming_a_pane_is_refused(daemon, tmp_root):
    """A process started from a pane that left its tree and session (``setsid``), as a
    multiplexer server started in a pane does, still carries the pane's SIGNALTTY_PANE."""
    a, _ = _permission_agent(daemon, tmp_root)
    out = tmp_root / "setsid"
    _shell_pane(
        daemon,
        f"setsid -f sh -c 'signaltty permission answer {a.id} allow >{out}.out 2>{out}.err; echo $? >{out}.rc'; exec sleep 60",
    )
    rc = wait_until(lambda: Path(f"{out}.rc").exists() and Path(f"{out}.rc").read_text().strip(), 30)
    assert rc == "1"
    assert REFUSAL in Path(f"{out}.err").read_text()
    assert a.get()["pending_decision"] is not None
    assert [r["why"] for r in _refusals(daemon)] == ["environment"]


def test_answer_from_panes_setting_allows_it(open_daemon, tmp_root):
    d = open_daemon
    assert d.call("server.status").get("config_error") is None
    a, _ = _permission_agent(d, tmp_root)
    r = _answer_from_pane(d, a.id)
    assert r["rc"] == 0, r
    assert r["stdout"].startswith("answered permission_"), r
    assert json.loads(a.wait_entries(3)[2]["stdout"])["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


def test_bad_setting_is_a_config_error(tmp_root):
    d = DaemonProc(tmp_root)
    d.write_config('[permissions]\nanswer_from_panes = "yes"\n')
    d.start()
    try:
        status = d.call("server.status")
        assert "permissions.answer_from_panes" in (status.get("config_error") or "")
        # the defaults apply: the guard is on
        a, _ = _permission_agent(d, tmp_root)
        assert _answer_from_pane(d, a.id)["rc"] == 1
    finally:
        d.stop()
        d.kill_leftovers()


# ---------------------------------------------------------------- decision ids (item 5)


def _codex_decision(d: DaemonProc, decision_id: str) -> Agent:
    # with Codex's own dialog on screen: only its fixed keys are typed (attack 3, A10)
    from tests.server.test_trust_typed_answers import codex_decision

    return codex_decision(d, {"id": decision_id, "prompt": "Run it?",
                              "options": [{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}]})


def _typed(d: DaemonProc, a: Agent) -> str:
    return d.call("pane.read", {"pane_id": a.id, "mode": "screen"})["text"].rstrip()


def test_bare_id_on_two_panes_is_ambiguous(daemon):
    a = _codex_decision(daemon, "d1")
    b = _codex_decision(daemon, "d1")
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"decision_id": "d1", "verdict": "allow"})
    assert exc.value.code == "AMBIGUOUS"
    assert sorted(exc.value.details["pane_ids"]) == sorted([a.id, b.id])
    assert a.id in exc.value.message
    assert b.id in exc.value.message
    # nothing was typed anywhere
    assert a.get()["pending_decision"] is not None
    assert b.get()["pending_decision"] is not None
    assert len(a.entries()) == 2
    assert len(b.entries()) == 2
    # the CLI names the panes and the command that picks one
    r = daemon.cli("permission", "answer", "d1", "allow")
    assert r.returncode == 1
    assert "decision d1 is pending on 2 panes" in r.stderr
    assert f"signaltty permission answer d1 allow --pane {b.id}" in r.stderr
    r = daemon.cli("decision", "answer", "--decision", "d1", "--option", "no")
    assert r.returncode == 1
    assert a.id in r.stderr
    assert b.id in r.stderr
    # {pane_id, decision_id}: exactly that pane's decision
    r = daemon.cli("permission", "answer", "d1", "allow", "--pane", b.id)
    assert r.returncode == 0, r.stderr
    wait_until(lambda: _typed(daemon, b).endswith("y"))
    assert b.get()["pending_decision"] is None
    assert a.get()["pending_decision"] is not None
    assert not _typed(daemon, a).endswith("y")
    # now only one pane has it: the bare id is no longer ambiguous
    r = daemon.call("decision.answer", {"decision_id": "d1", "option_id": "deny"})
    assert r["option_id"] == "deny"
    wait_until(lambda: _typed(daemon, a).endswith("^["))


def test_pane_and_id_must_match(daemon):
    a = _codex_decision(daemon, "d7")
    b = _codex_decision(daemon, "d8")
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"pane_id": b.id, "decision_id": "d7", "verdict": "allow"})
    assert exc.value.code == "NO_SUCH_DECISION"
    assert a.get()["pending_decision"] is not None
    assert b.get()["pending_decision"] is not None
    r = daemon.cli("permission", "answer", a.id, "allow", "--pane", b.id)
    assert r.returncode == 2
    assert "another pane" in r.stderr


def test_forged_native_id_in_another_pane_makes_it_ambiguous(daemon, tmp_root):
    """A reporter in another pane copies a native decision's id: the bare id no longer
    answers anything; the pane-qualified answer reaches the real one only."""
    a, _ = _permission_agent(daemon, tmp_root)
    did = a.get()["pending_decision"]["id"]
    forged = _codex_decision(daemon, did)
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"decision_id": did, "verdict": "allow"})
    assert exc.value.code == "AMBIGUOUS"
    assert len(a.entries()) == 2
    assert len(forged.entries()) == 2
    daemon.call("decision.answer", {"pane_id": a.id, "decision_id": did, "verdict": "allow"})
    assert json.loads(a.wait_entries(3)[2]["stdout"])["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    assert forged.get()["pending_decision"] is not None
    assert len(forged.entries()) == 2
