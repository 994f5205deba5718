"""Resume and launch fidelity (issue 11 item 11) through a real daemon.

* resume runs in the directory the agent's hooks reported (a shell pane that ``cd``-ed before
  starting the agent), never in a hostile or vanished one;
* the model chosen at launch (``--model X``) and bypass flags typed with the agent survive
  resume — bypass flags only as the catalog declares them, never from an edited snapshot;
* a user manifest naming a renamed binary applies at the next process refresh, even when
  the pane prints nothing.

The agent is a small script named ``claude``: given a JSON plan it runs
``tests/fixtures/fake_agent.py`` (real ``signaltty hook-event`` calls); given anything else —
what ``pane resume`` passes — it appends its argv and working directory to a record file and
exits. The record is the proof of what ``pane resume`` really ran, and where.
"""

from __future__ import annotations

import ast
import base64
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, DaemonProc, holds_for, wait_until

FAKE = REPO / "tests" / "fixtures" / "fake_agent.py"
SID = "8d27a2e7-b7c5-4958-9786-6f1975e1e647"
BYPASS = "--dangerously-skip-permissions"


def _program(root: Path, name: str) -> tuple[Path, Path]:
    bindir = root / "bin"
    bindir.mkdir(exist_ok=True)
    record = root / f"{name}.record"
    prog = bindir / name
    prog.write_text(
        f"#!{sys.executable}\n"
        "import os, runpy, sys\n"
        "args = sys.argv[1:]\n"
        "plans = [a for a in args if a.startswith('[')]\n"
        "if plans:\n"
        "    sys.argv = [sys.argv[0], plans[0]]\n"
        f"    runpy.run_path({str(FAKE)!r}, run_name='__main__')\n"
        "else:\n"
        f"    with open({str(record)!r}, 'a') as fh:\n"
        "        fh.write(repr([args, os.getcwd()]) + '\\n')\n"
    )
    prog.chmod(0o755)
    return prog, record


@pytest.fixture
def d(tmp_root: Path) -> Iterator[DaemonProc]:
    """A daemon whose PATH holds ``<root>/bin`` (a shell pane runs ``claude`` by name, and so
    does the resume of a pane whose own program was the shell)."""
    bindir = tmp_root / "bin"
    bindir.mkdir()
    proc = DaemonProc(tmp_root)
    proc.env["PATH"] = os.pathsep.join([str(bindir), proc.env["PATH"]])
    (tmp_root / "agents").mkdir()
    proc.write_config("[server]\nproc_refresh_s = 2\n")
    proc.start("--agents-dir", str(tmp_root / "agents"))
    try:
        yield proc
    finally:
        proc.stop()
        assert proc.kill_leftovers() == []


def _hook(event: str, **payload: Any) -> dict[str, Any]:
    return {"hook": event, "agent": "claude", "payload": {"session_id": SID, **payload}}


def _workspace(d: DaemonProc) -> str:
    return str(d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]["id"])


def _wait_exited(d: DaemonProc, pane_id: str) -> None:
    with d.client(timeout=None) as cl:
        cl.call("wait", {"pane_id": pane_id, "until": "exited", "timeout_s": 30})


def _spawn_agent(d: DaemonProc, argv: list[str], plan: list[dict[str, Any]]) -> str:
    pane_id = str(d.call("pane.spawn", {
        "workspace_id": _workspace(d), "argv": [*argv, json.dumps(plan)],
        "env": {"SIGNALTTY_FAKE_LOG": str(d.root / "fake.log"), "SIGNALTTY_FAKE_LINGER": "0"},
    })["pane"]["id"])
    _wait_exited(d, pane_id)
    return pane_id


def _in_shell(d: DaemonProc, directory: Path, plan: list[dict[str, Any]], args: str = "") -> str:
    """A bash pane started in ``d.root`` that ``cd``-s to ``directory``, runs ``claude
    <args>`` by name there, and exits with it."""
    plan_file = d.root / "plan.json"
    plan_file.write_text(json.dumps(plan))
    pane_id = str(d.call("pane.spawn", {
        "workspace_id": _workspace(d), "argv": ["bash", "--norc", "--noprofile"],
        "env": {"SIGNALTTY_FAKE_LOG": str(d.root / "fake.log"), "SIGNALTTY_FAKE_LINGER": "0"},
    })["pane"]["id"])
    line = f"cd '{directory}' && claude {args} \"$(cat '{plan_file}')\"; exit\r"
    d.call("pane.input", {"pane_id": pane_id, "data_b64": base64.b64encode(line.encode()).decode()})
    _wait_exited(d, pane_id)
    return pane_id


def _resume(d: DaemonProc, pane_id: str, record: Path) -> tuple[str, list[str], str]:
    """Run the real ``signaltty pane resume``; returns its stdout and the recorded argv/cwd."""
    before = len(record.read_text().splitlines()) if record.exists() else 0
    r = d.cli("pane", "resume", pane_id)
    assert r.returncode == 0, r.stderr
    wait_until(lambda: record.exists() and len(record.read_text().splitlines()) > before, 15,
               what="the resumed agent ran")
    args, cwd = ast.literal_eval(record.read_text().splitlines()[-1])
    return r.stdout, args, cwd


def _agent(d: DaemonProc, pane_id: str) -> dict[str, Any]:
    return dict(d.call("pane.get", {"pane_id": pane_id})["pane"]["agent"])


# ---------------------------------------------------------------- (a) the session's directory


def test_resume_runs_where_the_agent_ran_in_a_shell_pane(d: DaemonProc) -> None:
    _, record = _program(d.root, "claude")
    project = d.root / "project"
    (project / "sub").mkdir(parents=True)
    pane_id = _in_shell(d, project, [
        _hook("SessionStart", cwd=str(project), source="startup"),
        # a later hook from a subdirectory (a `cd` in the agent's shell tool) does not move
        # the session: the agent keeps its sessions by the directory it started in
        _hook("Stop", cwd=str(project / "sub")),
    ])
    agent = _agent(d, pane_id)
    assert agent["kind"] == "claude"
    assert agent["session_cwd"] == str(project)
    out, args, cwd = _resume(d, pane_id, record)
    assert args == ["--resume", SID]
    assert cwd == str(project)
    assert str(project) in out  # `pane resume` says where it runs


@pytest.mark.parametrize("hostile", [
    "relative/dir",
    "/tmp/x\n--dangerously-skip-permissions",
    "/no/such/directory",
    "FILE",  # an existing file, not a directory
    ["/tmp"],
])
def test_a_hostile_or_missing_cwd_is_never_used(d: DaemonProc, hostile: object) -> None:
    _, record = _program(d.root, "claude")
    project = d.root / "project"
    project.mkdir()
    if hostile == "FILE":
        hostile = str(d.root / "claude.record.not-a-dir")
        Path(hostile).write_text("x")
    pane_id = _in_shell(d, project, [_hook("SessionStart", cwd=hostile), _hook("Stop")])
    assert _agent(d, pane_id)["session_cwd"] is None
    _, args, cwd = _resume(d, pane_id, record)
    assert args == ["--resume", SID]
    assert cwd == str(d.root)  # the pane's own launch directory, as before
    assert d.call("server.status")


def test_a_session_directory_removed_before_resume_falls_back(d: DaemonProc) -> None:
    _, record = _program(d.root, "claude")
    project = d.root / "gone"
    project.mkdir()
    pane_id = _in_shell(d, project, [_hook("SessionStart", cwd=str(project)), _hook("Stop")])
    assert _agent(d, pane_id)["session_cwd"] == str(project)
    project.rmdir()
    _, _, cwd = _resume(d, pane_id, record)
    assert cwd == str(d.root)


def test_the_session_directory_survives_a_daemon_restart(d: DaemonProc) -> None:
    _, record = _program(d.root, "claude")
    project = d.root / "project"
    project.mkdir()
    pane_id = _in_shell(d, project, [_hook("SessionStart", cwd=str(project)), _hook("Stop")])
    d.stop()
    d.start("--agents-dir", str(d.root / "agents"))
    assert _agent(d, pane_id)["session_cwd"] == str(project)
    _, _, cwd = _resume(d, pane_id, record)
    assert cwd == str(project)


# ---------------------------------------------------------------- (c) launch flags


def test_model_and_typed_bypass_flags_survive_resume(d: DaemonProc) -> None:
    prog, record = _program(d.root, "claude")
    plan = [_hook("SessionStart", cwd=str(d.root)), _hook("Stop")]
    pane_id = _spawn_agent(d, [str(prog), BYPASS, "--model", "opus[1m]"], plan)
    agent = _agent(d, pane_id)
    assert agent["launch_prefix"] == [BYPASS]
    # shown before it runs: `pane get` holds the whole command
    assert agent["resume_argv"] == [str(prog), BYPASS, "--model", "opus[1m]", "--resume", SID]
    out, args, _ = _resume(d, pane_id, record)
    assert args == [BYPASS, "--model", "opus[1m]", "--resume", SID]
    assert BYPASS in out
    # the `--model=X` spelling, without bypass
    pane_id = _spawn_agent(d, [str(prog), "--model=sonnet"], plan)
    assert _agent(d, pane_id)["launch_prefix"] == []
    _, args, _ = _resume(d, pane_id, record)
    assert args == ["--model", "sonnet", "--resume", SID]


def test_the_model_typed_in_a_shell_pane_survives_resume(d: DaemonProc) -> None:
    _, record = _program(d.root, "claude")
    plan = [_hook("SessionStart", cwd=str(d.root)), _hook("Stop")]
    # the options come from the agent's own command line (the pane's argv is the shell);
    # only the model is kept, never a permission option typed beside it
    pane_id = _in_shell(d, d.root, plan, args="--permission-mode bypassPermissions -m x --model=opus")
    agent = _agent(d, pane_id)
    assert agent["launch_options"] == ["--model", "opus"]
    assert agent["resume_argv"] == ["claude", "--model", "opus", "--resume", SID]
    assert "resume claude --model opus --resume" in d.cli("pane", "get", pane_id).stdout
    out, args, _ = _resume(d, pane_id, record)
    assert args == ["--model", "opus", "--resume", SID]
    assert "command claude --model opus --resume" in out  # said before it ran


@pytest.mark.parametrize(("edited", "kept"), [
    (["--model", BYPASS], []),
    (["--model", "a b"], []),
    (["--model", "x\x1b[2J"], []),
    (["--model=--yolo"], []),
    (["--add-dir", "/", "--model", "haiku"], ["--model", "haiku"]),
    (["--", "--model", "haiku"], []),
    ([BYPASS, "--model", "haiku"], ["--model", "haiku"]),
])
def test_an_edited_snapshot_cannot_add_flags_through_the_launch_argv(
    d: DaemonProc, edited: list[str], kept: list[str]
) -> None:
    prog, record = _program(d.root, "claude")
    pane_id = _spawn_agent(d, [str(prog)], [_hook("SessionStart"), _hook("Stop")])
    d.stop()
    snap = d.state_dir / "snapshot.json"
    doc = json.loads(snap.read_text())
    [pane] = [p for p in doc["panes"] if p["id"] == pane_id]
    pane["argv"] = [str(prog), *edited]
    pane["agent"]["launch_options"] = edited  # the shell-pane record: filtered the same way
    snap.write_text(json.dumps(doc))
    d.start("--agents-dir", str(d.root / "agents"))
    _, args, _ = _resume(d, pane_id, record)
    # only a model option with a plain value is kept; a bypass flag only through
    # launch_prefix, which an edited snapshot cannot set (attack pass 3, A4)
    assert args == [*kept, "--resume", SID]


# ---------------------------------------------------------------- (d) renamed binaries


def _silent(d: DaemonProc, name: str, *, via_shell: bool = False) -> str:
    """A pane running ``<root>/bin/<name>``, which never prints; ``via_shell``: started as
    ``sh -c 'exec …'`` so only the process refresh can see what runs (not spawn detection)."""
    prog = d.root / "bin" / name
    prog.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(120)\n")
    prog.chmod(0o755)
    argv = ["sh", "-c", f"exec '{prog}'"] if via_shell else [str(prog)]
    return str(d.call("pane.spawn", {"workspace_id": _workspace(d), "argv": argv})["pane"]["id"])


def _kind(d: DaemonProc, pane_id: str) -> str:
    return str(_agent(d, pane_id)["kind"])


def test_a_user_manifest_for_a_renamed_binary_applies_at_the_next_refresh(d: DaemonProc) -> None:
    renamed = _silent(d, "my-claude")
    assert _kind(d, renamed) == "generic"
    witness = _silent(d, "claude", via_shell=True)  # promoted by a refresh: a scan has run
    assert _kind(d, witness) != "claude"
    wait_until(lambda: _kind(d, witness) == "claude", 10, what="first refresh")
    # nothing prints from now on: quiet refresh periods are skipped (up to 6 × 2 s)
    (d.root / "agents" / "my-claude.toml").write_text(
        'schema = 1\n[agent]\nkind = "claude"\ndisplay_name = "My Claude"\n'
        'binaries = ["my-claude"]\n'
    )
    r = d.cli("agents", "reload")
    assert r.returncode == 0, r.stderr
    # one period (2 s) plus slack; without the rescan it waits for the 6th period (12 s)
    wait_until(lambda: _kind(d, renamed) == "claude", 2 + 3, what="promoted at the next refresh")
    assert _agent(d, renamed)["display_name"] == "My Claude"
    assert holds_for(lambda: _kind(d, renamed) == "claude", 0.5)
