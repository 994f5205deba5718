"""A hand-edited snapshot cannot add launch flags or environment to a resumed agent
(issue 10, third attack pass, A4).

A real daemon runs a recording ``claude`` (tests/server/test_hostile_session_ids.py) that
reports a session and exits; the daemon is stopped, ``snapshot.json`` edited the way a
same-uid process could, and the daemon started again. The record file shows the argv and the
environment ``pane resume`` really gave the program. A positive control keeps what signaltty
itself stores: the catalog entry's bypass args and a provider root variable.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from tests.conftest import DaemonProc, wait_until
from tests.server.test_hostile_session_ids import (
    CLAUDE_BYPASS,
    GOOD,
    agent_program,
    hook,
    run_agent,
)

WATCHED = ("NODE_OPTIONS", "LD_PRELOAD", "CLAUDE_CONFIG_DIR")
PLAN = [hook("SessionStart", {"session_id": GOOD}), hook("Stop", {"session_id": GOOD})]


def _recording_claude(d: DaemonProc) -> tuple[Path, Path]:
    """The recording ``claude``, also writing the watched variables of its environment."""
    prog, record = agent_program(d.root, "claude")
    line = "fh.write(repr(args) + '\\n')"
    src = prog.read_text()
    assert line in src
    env = f"{{k: os.environ.get(k) for k in {WATCHED!r}}}"
    prog.write_text(src.replace(line, f"import os; fh.write(repr([args, {env}]) + '\\n')"))
    return prog, record


def _edit_snapshot(d: DaemonProc, pane_id: str, agent: dict[str, Any]) -> None:
    snap = d.state_dir / "snapshot.json"
    doc = json.loads(snap.read_text())
    [pane] = [p for p in doc["panes"] if p["id"] == pane_id]
    pane["agent"].update(agent)
    snap.write_text(json.dumps(doc))


def _resumed(
    d: DaemonProc, pane_id: str, record: Path
) -> tuple[str, list[str], dict[str, str | None]]:
    r = d.cli("pane", "resume", pane_id)
    assert r.returncode == 0, r.stderr
    wait_until(lambda: record.exists() and record.read_text().strip(), 15, what="resume ran")
    args, env = ast.literal_eval(record.read_text().splitlines()[-1])
    return r.stdout, args, env


def test_edited_launch_prefix_and_config_env_are_dropped_and_logged(daemon: DaemonProc) -> None:
    d = daemon
    prog, record = _recording_claude(d)
    pane = run_agent(d, prog, PLAN)
    d.stop()
    _edit_snapshot(d, pane, {
        "catalog_id": "claude",
        "launch_prefix": [CLAUDE_BYPASS, "--add-dir", "/"],
        "config_env": {"NODE_OPTIONS": "--require /tmp/evil.js", "LD_PRELOAD": "/tmp/evil.so",
                       "CLAUDE_CONFIG_DIR": "relative/dir"},
    })
    d.start()
    problems = [x for x in d.stderr().splitlines() if "snapshot.restore_problem" in x]
    for what in ("launch_prefix", "NODE_OPTIONS", "LD_PRELOAD", "CLAUDE_CONFIG_DIR"):
        assert any(f"pane {pane}: " in x and what in x for x in problems), (what, problems)
    agent = d.call("pane.get", {"pane_id": pane})["pane"]["agent"]
    assert agent["launch_prefix"] == []
    assert agent["config_env"] == {}
    out, args, env = _resumed(d, pane, record)
    assert args == ["--resume", GOOD], args
    assert env == {"NODE_OPTIONS": None, "LD_PRELOAD": None, "CLAUDE_CONFIG_DIR": None}, env
    assert "no added flags or env" in out


def test_the_agents_own_bypass_flag_is_said_before_resume_runs(daemon: DaemonProc) -> None:
    """The attack as reported adds exactly the bypass args a bypass launch stores: kept (out
    of reach, docs/security.md), but no longer unseen — ``pane get`` and ``pane resume`` say
    it before the agent starts."""
    d = daemon
    prog, record = _recording_claude(d)
    pane = run_agent(d, prog, PLAN)
    d.stop()
    _edit_snapshot(d, pane, {"launch_prefix": [CLAUDE_BYPASS]})
    d.start()
    assert f"launch flags {CLAUDE_BYPASS}" in d.cli("pane", "get", pane).stdout
    out, args, _ = _resumed(d, pane, record)
    first, _, _ = out.partition("resumed ")
    assert f"resuming {pane} with:\n  launch flags {CLAUDE_BYPASS}" in first
    assert args == [CLAUDE_BYPASS, "--resume", GOOD]


def test_what_signaltty_stores_is_kept_and_shown(daemon: DaemonProc) -> None:
    d = daemon
    prog, record = _recording_claude(d)
    pane = run_agent(d, prog, PLAN)
    d.stop()
    root = d.root / "claude-root"
    _edit_snapshot(d, pane, {"catalog_id": "claude", "launch_prefix": [CLAUDE_BYPASS],
                             "config_env": {"CLAUDE_CONFIG_DIR": str(root)}})
    d.start()
    assert "snapshot.restore_problem" not in d.stderr()
    shown = d.cli("pane", "get", pane)
    assert shown.returncode == 0, shown.stderr
    assert f"launch flags {CLAUDE_BYPASS}" in shown.stdout
    assert f"launch env CLAUDE_CONFIG_DIR={root}" in shown.stdout
    out, args, env = _resumed(d, pane, record)
    assert args == [CLAUDE_BYPASS, "--resume", GOOD], args
    assert env["CLAUDE_CONFIG_DIR"] == str(root)
    assert env["NODE_OPTIONS"] is None
    # said before it ran: the flags and the environment the resume adds
    first, _, rest = out.partition("resumed ")
    assert f"resuming {pane} with:" in first
    assert CLAUDE_BYPASS in first
    assert str(root) in first
    assert f"launch env CLAUDE_CONFIG_DIR={root}" in rest
