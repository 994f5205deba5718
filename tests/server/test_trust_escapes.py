"""A pane process that leaves its pane still cannot answer (issue 10 follow-up, item 3).

Real daemon, real panes, the real ``signaltty`` CLI, a real ``setsid`` and a real tmux. The
daemon is a child subreaper (``system.subreaper``): ``setsid -f env -u SIGNALTTY_PANE …`` run
in a pane leaves the pane's process tree, session and environment, and is re-parented to the
daemon, which refuses it (``why = daemon``). A tmux server started in a pane keeps the pane's
environment: a command it runs with ``env -u SIGNALTTY_PANE`` is refused by its ancestor's
environment. The person's CLI (a child of this test process) is still obeyed, and a pane
child's exit status is still observed after orphans were adopted and reaped.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import psutil

from tests.conftest import DaemonProc, wait_until
from tests.server.test_mux_routing import tmux_socket  # noqa: F401 - fixture
from tests.server.test_trust_answers import REFUSAL, _permission_agent, _refusals, _shell_pane


def _escape_answer(d: DaemonProc, target: str, wrap: str) -> dict:
    """Run ``signaltty permission answer TARGET allow`` from a pane through ``wrap``."""
    out = d.root / f"esc-{time.monotonic_ns()}"
    script = Path(f"{out}.sh")  # a file: no quoting through the wrapper's layers
    script.write_text(f"signaltty permission answer {target} allow >{out}.out 2>{out}.err; echo $? >{out}.rc\n")
    _shell_pane(d, wrap.format(cmd=shlex.quote(str(script))) + "; exec sleep 60", "escaper")
    rc = wait_until(lambda: (Path(f"{out}.rc").exists() and Path(f"{out}.rc").read_text().strip()) or None, 30)
    return {"rc": int(rc), "stdout": Path(f"{out}.out").read_text(), "stderr": Path(f"{out}.err").read_text()}


def test_setsid_escape_is_refused(daemon: DaemonProc, tmp_root: Path) -> None:
    a, _ = _permission_agent(daemon, tmp_root)
    r = _escape_answer(daemon, a.id, "setsid -f env -u SIGNALTTY_PANE sh {cmd}")
    assert r["rc"] == 1, r
    assert REFUSAL in r["stderr"], r
    assert [x["why"] for x in _refusals(daemon)] == ["daemon"]
    assert a.get()["attention"] == "permission_required"
    assert len(a.entries()) == 2
    # the escaped process was adopted by the daemon and, once exited, reaped (no zombie)
    wait_until(lambda: not [c for c in psutil.Process(daemon.proc.pid).children()
                            if c.status() == psutil.STATUS_ZOMBIE], 15)
    # the person (a child of this test, outside every pane) is obeyed
    assert daemon.cli("permission", "answer", a.id, "allow").returncode == 0
    out = a.wait_entries(3)[2]["stdout"]
    assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


def test_tmux_server_started_in_a_pane_is_refused(daemon: DaemonProc, tmp_root: Path, tmux_socket: Path) -> None:  # noqa: F811
    a, _ = _permission_agent(daemon, tmp_root)
    sock = shlex.quote(str(tmux_socket))
    r = _escape_answer(daemon, a.id, f"tmux -S {sock} -f /dev/null new-session -d \"env -u SIGNALTTY_PANE sh {{cmd}}\"")
    assert r["rc"] == 1, r
    assert REFUSAL in r["stderr"], r
    assert [x["why"] for x in _refusals(daemon)] == ["environment"]
    assert a.get()["attention"] == "permission_required"
    assert len(a.entries()) == 2
    assert daemon.cli("permission", "answer", a.id, "deny").returncode == 0
    out = a.wait_entries(3)[2]["stdout"]
    assert json.loads(out)["hookSpecificOutput"]["decision"]["behavior"] == "deny"


def test_pane_exit_status_observed_with_adopted_orphans(daemon: DaemonProc) -> None:
    """Orphans adopted and reaped by the daemon never take a pane child's exit status."""
    ws = daemon.call("workspace.create", {"name": "codes", "cwd": str(daemon.root)})["workspace"]
    panes = {}
    for code in (3, 7, 0):
        # each leaves an orphan behind (re-parented to the daemon), then exits with its code
        argv = ["sh", "-c", f"setsid -f sh -c 'sleep 0.5; exit 9'; sleep 0.2; exit {code}"]
        panes[code] = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": argv})["pane"]["id"]
    for code, pane_id in panes.items():
        with daemon.client(timeout=None) as cl:
            cl.call("wait", {"pane_id": pane_id, "until": "exited", "timeout_s": 30})
        assert daemon.call("pane.get", {"pane_id": pane_id})["pane"]["live"] == {"state": "exited", "code": code}
    # the orphans (exit 9) ended and were reaped: no zombie, nothing left running
    wait_until(lambda: not psutil.Process(daemon.proc.pid).children(recursive=True), 15)


def test_a_chain_deeper_than_the_walk_is_refused(daemon: DaemonProc, tmp_root: Path) -> None:
    """Second attack pass: 70 nested shells above the answering CLI once hid the daemon above
    them (the walk stopped at 64 and said "outside"). A walk that reaches neither init nor
    the daemon within its bound now fails closed."""
    a, _ = _permission_agent(daemon, tmp_root)
    nest = daemon.root / "nest.sh"
    # nest.sh N SCRIPT: N nested `sh` processes (each waits for its child), then SCRIPT
    nest.write_text('if [ "$1" -gt 0 ]; then sh "$0" $(($1 - 1)) "$2"; else sh "$2"; fi\n')
    r = _escape_answer(daemon, a.id, f"setsid -f env -u SIGNALTTY_PANE sh {shlex.quote(str(nest))} 1100 {{cmd}}")
    assert r["rc"] == 1, r
    assert REFUSAL in r["stderr"], r
    assert [x["why"] for x in _refusals(daemon)] == ["deep"]
    assert a.get()["attention"] == "permission_required"
    # a shallower nest reaches the daemon: refused as its descendant
    r = _escape_answer(daemon, a.id, f"setsid -f env -u SIGNALTTY_PANE sh {shlex.quote(str(nest))} 70 {{cmd}}")
    assert r["rc"] == 1, r
    assert [x["why"] for x in _refusals(daemon)] == ["deep", "daemon"], r


def test_an_escaped_reporter_cannot_write_another_panes_hooks(daemon: DaemonProc, tmp_root: Path) -> None:
    """Second attack pass: `setsid -f env -u SIGNALTTY_PANE signaltty hook-event --pane X …`
    from pane Y replaced X's decision with the attacker's text. An explicit --pane is obeyed
    only from a process outside every pane."""
    a, _ = _permission_agent(daemon, tmp_root)
    before = a.get()["pending_decision"]
    out = daemon.root / "inject"
    script = Path(f"{out}.sh")
    payload = json.dumps({"session_id": "S1", "tool_name": "Bash", "tool_input": {"command": "echo harmless"}})
    script.write_text(
        f"echo {shlex.quote(payload)} | signaltty hook-event --pane {a.id} --agent claude "
        f"--event PermissionRequest --payload-stdin >{out}.out 2>{out}.err; echo $? >{out}.rc\n"
    )
    _shell_pane(daemon, f"setsid -f env -u SIGNALTTY_PANE sh {shlex.quote(str(script))}; exec sleep 60", "injector")
    wait_until(lambda: Path(f"{out}.rc").exists() and Path(f"{out}.rc").read_text().strip(), 30)
    assert "dropped" in Path(f"{out}.err").read_text(), Path(f"{out}.err").read_text()
    after = a.get()["pending_decision"]
    assert after["id"] == before["id"]
    assert "harmless" not in json.dumps(after)
