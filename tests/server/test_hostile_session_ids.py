"""Issue 10 item 4 end to end: a hostile session id never reaches a resume argv.

A real daemon, real panes and the real installed ``signaltty hook-event`` /
``report-session``. The agent programs are small scripts named ``claude``/``codex``: given a
JSON plan (argv[1] starting with ``[``) they run ``tests/fixtures/fake_agent.py``; given
anything else — which is what ``pane resume`` passes — they append their argv to a record
file and exit. The record file is the proof: it shows exactly what ``pane resume`` ran.
A positive control in each test resumes a pane with a valid id and finds it in the record,
so the absence of the hostile id there means something.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import REPO, DaemonProc, wait_until

FAKE = REPO / "tests" / "fixtures" / "fake_agent.py"
CLAUDE_BYPASS = "--dangerously-skip-permissions"
CODEX_BYPASS = "--dangerously-bypass-approvals-and-sandbox"
GOOD = "8d27a2e7-b7c5-4958-9786-6f1975e1e647"


def agent_program(root: Path, name: str) -> tuple[Path, Path]:
    """Install the recording agent script ``<root>/bin/<name>``; returns (program, record)."""
    bindir = root / "bin"
    bindir.mkdir(exist_ok=True)
    record = root / f"{name}.record"
    prog = bindir / name
    # Codex launches get `--no-daemon` inserted and its support probed with
    # `--no-daemon --version` (agents/codex_runtime.py): the probe is answered, not recorded.
    prog.write_text(
        f"#!{sys.executable}\n"
        "import runpy, sys\n"
        "args = sys.argv[1:]\n"
        "plans = [a for a in args if a.startswith('[')]\n"
        "if args == ['--no-daemon', '--version']:\n"
        "    print('fake 1.0')\n"
        "elif plans:\n"
        "    sys.argv = [sys.argv[0], plans[0]]\n"
        f"    runpy.run_path({str(FAKE)!r}, run_name='__main__')\n"
        "else:\n"
        f"    with open({str(record)!r}, 'a') as fh:\n"
        "        fh.write(repr(args) + '\\n')\n"
    )
    prog.chmod(0o755)
    return prog, record


def run_agent(d: DaemonProc, prog: Path, plan: list[dict], *, linger: bool = False) -> str:
    """Spawn ``prog`` with ``plan`` in a new pane and wait until it ran every step.

    Without ``linger`` the program then exits (and this waits for it); with it, it stays
    running (a pane live at shutdown comes back RESUMABLE or RESTORED).
    """
    log = d.root / f"{prog.name}-{len(list(d.root.glob('*.log')))}.log"
    ws = d.call("workspace.create", {"name": prog.name, "cwd": str(d.root)})["workspace"]
    env = {"SIGNALTTY_FAKE_LOG": str(log), "SIGNALTTY_FAKE_LINGER": "60" if linger else "0"}
    pane_id = d.call(
        "pane.spawn", {"workspace_id": ws["id"], "argv": [str(prog), json.dumps(plan)], "env": env}
    )["pane"]["id"]
    steps = len([s for s in plan if "hook" in s or "report" in s])
    if linger:
        wait_until(lambda: log.exists() and len(log.read_text().splitlines()) >= steps, timeout=20)
        return pane_id
    with d.client(timeout=None) as cl:
        cl.call("wait", {"pane_id": pane_id, "until": "exited", "timeout_s": 30})
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(entries) == steps, entries
    return pane_id


def hook(event: str, payload: dict, agent: str = "claude") -> dict:
    return {"hook": event, "agent": agent, "payload": payload}


def records(record: Path) -> list[str]:
    return record.read_text().splitlines() if record.exists() else []


def resume_refused(d: DaemonProc, pane_id: str) -> str:
    with pytest.raises(SignalttyError) as exc:
        d.call("pane.resume", {"pane_id": pane_id})
    assert exc.value.code == "BAD_PARAMS"
    return exc.value.message


def test_hostile_ids_from_hooks_never_reach_resume(daemon: DaemonProc) -> None:
    d = daemon
    claude, claude_record = agent_program(d.root, "claude")
    codex, codex_record = agent_program(d.root, "codex")
    # Claude: the session id of every hook is the bypass flag
    bad_claude = run_agent(d, claude, [
        hook("SessionStart", {"session_id": CLAUDE_BYPASS, "source": "startup"}),
        hook("UserPromptSubmit", {"session_id": CLAUDE_BYPASS, "prompt": "hi"}),
        hook("Stop", {"session_id": CLAUDE_BYPASS, "last_assistant_message": "done"}),
    ])
    # Codex: through session_id and through the notify payload's thread-id
    bad_codex = run_agent(d, codex, [
        hook("SessionStart", {"session_id": CODEX_BYPASS}, agent="codex"),
        hook("agent-turn-complete", {"type": "agent-turn-complete", "thread-id": CODEX_BYPASS,
                                     "input-messages": ["hi"]}, agent="codex"),
    ])
    good = run_agent(d, claude, [hook("SessionStart", {"session_id": GOOD}), hook("Stop", {"session_id": GOOD})])

    for pane_id, kind in ((bad_claude, "claude"), (bad_codex, "codex")):
        p = d.call("pane.get", {"pane_id": pane_id})["pane"]
        # the hooks themselves were applied (only the id was refused)
        assert p["agent"]["kind"] == kind, p
        assert p["lifecycle"] in ("done", "exited", "idle"), p
        assert p["agent"]["agent_session_id"] is None
        assert p["agent"]["resume_argv"] is None
        assert resume_refused(d, pane_id).startswith("not resumable: ")
    assert "hook.session_id_rejected" in d.stderr()
    assert "starts with '-'" in d.stderr()

    # control: a valid id resumes, and the record shows exactly what ran
    assert d.call("pane.get", {"pane_id": good})["pane"]["agent"]["resume_argv"] == [str(claude), "--resume", GOOD]
    d.call("pane.resume", {"pane_id": good})
    wait_until(lambda: records(claude_record), timeout=15)
    assert records(claude_record) == [repr(["--resume", GOOD])]
    assert records(codex_record) == []
    assert d.call("server.status") is not None


def test_hostile_id_through_report_session(daemon: DaemonProc) -> None:
    d = daemon
    claude, record = agent_program(d.root, "claude")
    pane_id = run_agent(d, claude, [
        hook("SessionStart", {"session_id": GOOD}),
        # the real report-session CLI from inside the pane
        {"report": [f"--session={CLAUDE_BYPASS}"]},
        {"report": ["--session", "S1 --yolo"]},
    ])
    log = sorted(d.root.glob("claude-*.log"))[-1]
    reports = [e for e in map(json.loads, log.read_text().splitlines()) if "report" in e]
    assert [e["rc"] for e in reports] == [1, 1]
    assert "starts with '-'" in reports[0]["stderr"]
    assert "whitespace" in reports[1]["stderr"]
    p = d.call("pane.get", {"pane_id": pane_id})["pane"]
    assert p["agent"]["agent_session_id"] == GOOD  # the hostile reports changed nothing
    for value in (CLAUDE_BYPASS, CODEX_BYPASS, "-c", "x\x1b[2J"):
        with pytest.raises(SignalttyError) as exc:
            d.call("report-session", {"pane_id": pane_id, "agent_session_id": value})
        assert exc.value.code == "BAD_PARAMS"
        assert "rejected" in exc.value.message
    d.call("pane.resume", {"pane_id": pane_id})
    wait_until(lambda: records(record), timeout=15)
    assert records(record) == [repr(["--resume", GOOD])]


def _edit_snapshot(state_dir: Path, edit: dict[str, dict]) -> None:
    path = state_dir / "snapshot.json"
    doc = json.loads(path.read_text())
    for pane in doc["panes"]:
        if pane["id"] in edit:
            pane["agent"].update(edit[pane["id"]])
    path.write_text(json.dumps(doc, indent=2))


def test_hand_edited_snapshot_is_revalidated_on_restart(tmp_root: Path) -> None:
    d = DaemonProc(tmp_root)
    d.start()
    try:
        claude, record = agent_program(tmp_root, "claude")
        codex, codex_record = agent_program(tmp_root, "codex")
        plan = [hook("SessionStart", {"session_id": GOOD})]
        adapter_pane = run_agent(d, claude, plan, linger=True)
        reported_pane = run_agent(d, claude, plan, linger=True)
        codex_pane = run_agent(d, codex, [hook("SessionStart", {"session_id": GOOD}, agent="codex")], linger=True)
        control = run_agent(d, claude, plan, linger=True)
        for pane_id in (adapter_pane, reported_pane, codex_pane, control):
            wait_until(lambda pid=pane_id: d.call("pane.get", {"pane_id": pid})["pane"]["agent"]["agent_session_id"])
        assert d.stop() == 0
        assert d.kill_leftovers() == []
        _edit_snapshot(d.state_dir, {
            adapter_pane: {"agent_session_id": CLAUDE_BYPASS, "resume_source": "adapter",
                           "resume_argv": [str(claude), "--resume", CLAUDE_BYPASS]},
            reported_pane: {"agent_session_id": CLAUDE_BYPASS, "resume_source": "reported",
                            "resume_argv": ["claude", "--resume", CLAUDE_BYPASS]},
            codex_pane: {"agent_session_id": CODEX_BYPASS, "resume_source": "adapter",
                         "resume_argv": [str(codex), "resume", CODEX_BYPASS]},
        })
        d.start()
        for pane_id in (adapter_pane, reported_pane, codex_pane):
            p = d.call("pane.get", {"pane_id": pane_id})["pane"]
            assert p["restore_state"] == "RESTORED", p  # not RESUMABLE
            assert p["agent"]["agent_session_id"] is None
            assert p["agent"]["resume_argv"] is None
            assert resume_refused(d, pane_id).startswith("not resumable: ")
        assert "agent_session_id" in d.stderr()
        assert "dropped" in d.stderr()
        # control: the untouched pane still resumes with its own id
        assert d.call("pane.get", {"pane_id": control})["pane"]["restore_state"] == "RESUMABLE"
        d.call("pane.resume", {"pane_id": control})
        wait_until(lambda: records(record), timeout=15)
        assert records(record) == [repr(["--resume", GOOD])]
        assert records(codex_record) == []
    finally:
        d.stop()
        d.kill_leftovers()
