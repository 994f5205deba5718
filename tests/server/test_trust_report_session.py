"""One pane cannot rewrite another pane's resume command (issue 10 follow-up, item 1).

A real daemon, real panes and the real ``signaltty report-session`` run inside a pane. The
victim's agent program is the recording script of ``test_hostile_session_ids``: what
``pane resume`` ran is in its record file. An attacker pane reporting the victim's session
with ``--dangerously-skip-permissions`` (or ``sh -c …``) in ``--resume-argv`` is refused —
also when it leaves its pane's process tree and environment (``setsid -f env -u``); a
free-form ``resume_argv`` from outside every pane is refused too; only the agent's own
resume command is accepted, and ``pane resume`` runs exactly that.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, wait_until
from tests.server.test_hostile_session_ids import (
    CLAUDE_BYPASS,
    GOOD,
    agent_program,
    hook,
    records,
    run_agent,
)


def _report_from_pane(d: DaemonProc, argv: list[str], *, escape: bool = False) -> dict:
    """Run ``signaltty report-session ARGV`` in a new shell pane; its rc/stdout/stderr.

    ``escape``: run it through ``setsid -f env -u SIGNALTTY_PANE`` (out of the pane's tree,
    session and environment).
    """
    out = d.root / f"rep-{time.monotonic_ns()}"
    cmd = shlex.join(["signaltty", "report-session", *argv])
    inner = f"{cmd} >{out}.out 2>{out}.err; echo $? >{out}.rc"
    if escape:
        inner = shlex.join(["setsid", "-f", "env", "-u", "SIGNALTTY_PANE", "sh", "-c", inner])
    ws = d.call("workspace.create", {"name": "attacker", "cwd": str(d.root)})["workspace"]
    d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sh", "-c", f"{inner}; exec sleep 60"]})
    rc = wait_until(lambda: (Path(f"{out}.rc").exists() and Path(f"{out}.rc").read_text().strip()) or None, 30)
    return {"rc": int(rc), "stdout": Path(f"{out}.out").read_text(), "stderr": Path(f"{out}.err").read_text()}


def test_other_pane_cannot_rewrite_resume_argv(daemon: DaemonProc) -> None:
    d = daemon
    claude, record = agent_program(d.root, "claude")
    victim = run_agent(d, claude, [hook("SessionStart", {"session_id": GOOD})])
    before = d.call("pane.get", {"pane_id": victim})["pane"]["agent"]
    assert before["resume_argv"] == [str(claude), "--resume", GOOD]
    hostile = [
        ["claude", CLAUDE_BYPASS, "--resume", GOOD],
        ["sh", "-c", f"touch {d.root / 'pwned'}"],
    ]
    for argv in hostile:
        for escape in (False, True):
            r = _report_from_pane(
                d,
                ["--pane", victim, "--session", GOOD, "--agent", "claude", "--resume-argv", json.dumps(argv)],
                escape=escape,
            )
            assert r["rc"] == 1, (escape, r)
            assert r["stdout"] == "", (escape, r)
            assert "report-session is accepted only from inside the pane" in r["stderr"], (escape, r)
    # the person (outside every pane) cannot store a free-form command either
    for argv in hostile:
        with pytest.raises(SignalttyError) as exc:
            d.call("report-session", {"pane_id": victim, "agent_session_id": GOOD, "agent": "claude",
                                      "resume_argv": argv})
        assert exc.value.code == "BAD_PARAMS"
        assert "the agent's own resume command" in exc.value.message
    # ... only the agent's own resume command (bare name or path) is accepted
    r = d.call("report-session", {"pane_id": victim, "agent_session_id": GOOD, "agent": "claude",
                                  "resume_argv": ["claude", "--resume", GOOD]})
    assert r["pane"]["agent"]["resume_argv"] == [str(claude), "--resume", GOOD]
    assert d.call("pane.get", {"pane_id": victim})["pane"]["agent"]["resume_argv"] == before["resume_argv"]
    d.call("pane.resume", {"pane_id": victim})
    wait_until(lambda: records(record), timeout=15)
    assert records(record) == [repr(["--resume", GOOD])]
    assert not (d.root / "pwned").exists()
    assert "report_session.refused" in d.stderr()


def test_pane_reports_its_own_session(daemon: DaemonProc) -> None:
    """Control: a report-session from inside the pane it names still works."""
    d = daemon
    claude, _ = agent_program(d.root, "claude")
    pane = run_agent(d, claude, [
        hook("SessionStart", {"session_id": GOOD}),
        {"report": ["--session", "S2", "--resume-argv", json.dumps(["claude", "--resume", "S2"])]},
    ])
    log = sorted(d.root.glob("claude-*.log"))[-1]
    reports = [e for e in map(json.loads, log.read_text().splitlines()) if "report" in e]
    assert [e["rc"] for e in reports] == [0], reports
    p = d.call("pane.get", {"pane_id": pane})["pane"]["agent"]
    assert p["agent_session_id"] == "S2"
    assert p["resume_argv"] == [str(claude), "--resume", "S2"]
