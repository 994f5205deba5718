"""Hooks from a multiplexer inside a pane (issue #10 item 6), with a real tmux.

A tmux server started in pane A keeps A's environment (``SIGNALTTY_PANE``) for every window
it runs, but it daemonizes: an agent in one of its windows does not descend from pane A.
Here the person views that tmux session in pane B; the agent's hooks — including a waiting
``PermissionRequest`` — must not touch pane A (no blocked/permission_required, nothing to
answer there) and are dropped, so the agent asks in its own dialog. A reporter that does run
in a pane but inherited another pane's id is routed to the pane it runs in.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, wait_until
from tests.server.test_hooks_e2e import agent_bin, hook
from tests.server.test_trust_answers import _pane_child


def _require_tmux() -> None:
    if shutil.which("tmux") is None:
        if os.environ.get("CI"):
            pytest.fail("tmux is missing (tests/run.sh installs it)")
        pytest.skip("tmux is missing")


PLAN = [
    {"print": "AGENT-IN-TMUX"},
    hook("SessionStart", {"session_id": "M1"}),
    hook("UserPromptSubmit", {"session_id": "M1", "prompt": "deploy"}),
    hook("PermissionRequest", {"session_id": "M1", "tool_name": "Bash", "tool_input": {"command": "make deploy"}},
         args=["--wait-for-answer", "--wait-timeout", "30"]),
    hook("Notification", {"session_id": "M1", "message": "Claude needs your permission"}),
]


def _entries(log: Path) -> list[dict]:
    try:
        return [json.loads(x) for x in log.read_text().splitlines()]
    except FileNotFoundError:
        return []


def _shown(d: DaemonProc, pane_id: str) -> bytes:
    """What a viewer attaching to the pane is shown first (tmux draws on the alternate screen)."""
    with d.client() as cl:
        snap = cl.call("pane.attach", {"pane_id": pane_id})["snapshot_b64"]
        cl.call("pane.detach", {"pane_id": pane_id})
    return base64.b64decode(snap)


def _spawn(d: DaemonProc, argv: list[str], env: dict[str, str] | None = None) -> str:
    ws = d.call("workspace.create", {"name": "mux", "cwd": str(d.root)})["workspace"]
    params = {"workspace_id": ws["id"], "argv": argv, "cols": 100, "rows": 30}
    if env:
        params["env"] = env
    return d.call("pane.spawn", params)["pane"]["id"]


@pytest.fixture
def tmux_socket(tmp_root: Path) -> Iterator[Path]:
    """A private tmux socket; the server on it (and what it runs) is killed afterwards."""
    _require_tmux()
    sock = tmp_root / "tmux.sock"
    try:
        yield sock
    finally:
        server = None
        r = subprocess.run(["tmux", "-S", str(sock), "display", "-p", "#{pid}"], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip().isdigit():
            server = int(r.stdout.strip())
        procs = []
        if server is not None:
            try:
                procs = [psutil.Process(server), *psutil.Process(server).children(recursive=True)]
            except psutil.Error:
                procs = []
        subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True)
        for p in procs:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(procs, timeout=5)


def test_tmux_started_in_one_pane_serving_another(daemon, tmp_root, tmux_socket):
    log = tmp_root / "tmux-agent.log"
    prog = agent_bin(tmp_root, "claude")
    (tmp_root / "plan.json").write_text(json.dumps(PLAN))
    (tmp_root / "agent.sh").write_text(f'exec {prog} "$(cat {tmp_root / "plan.json"})"\n')
    sock = str(tmux_socket)
    # pane A starts a tmux server running the agent (as `tmux new -d claude` would)...
    pane_a = _spawn(daemon, ["sh", "-c",
                             f"tmux -S {sock} -f /dev/null new-session -d -s agent -x 100 -y 30 "
                             f"'sh {tmp_root / 'agent.sh'}'; echo STARTED; exec sleep 600"],
                    env={"SIGNALTTY_FAKE_LOG": str(log)})
    daemon.call("pane.wait_for_output", {"pane_id": pane_a, "match": "STARTED", "timeout_s": 20})
    # ...and the person watches that tmux session in pane B
    pane_b = _spawn(daemon, ["tmux", "-S", sock, "attach", "-t", "agent"])
    entries = wait_until(lambda: len(_entries(log)) >= 4 and _entries(log), 30)
    wait_until(lambda: b"AGENT-IN-TMUX" in _shown(daemon, pane_b), 20)  # the person sees the agent in B

    # the premise: tmux daemonized (not in A's tree) yet passes A's id to what it runs
    server = int(subprocess.run(["tmux", "-S", sock, "display", "-p", "#{pid}"],
                                capture_output=True, text=True, check=True).stdout)
    agent_pid = next(p.pid for p in psutil.Process(server).children(recursive=True) if str(prog) in p.cmdline())
    assert psutil.Process(agent_pid).environ()["SIGNALTTY_PANE"] == pane_a
    assert _pane_child(daemon, pane_a) not in [p.pid for p in psutil.Process(server).parents()]

    # every hook was dropped, the waiting one too: no verdict, exit 0 (the agent's own dialog)
    assert [e["hook"] for e in entries] == ["SessionStart", "UserPromptSubmit", "PermissionRequest", "Notification"]
    for e in entries:
        assert e["rc"] == 0, e
        assert e["stdout"] == "", e
        assert "(outside_pane)" in e["stderr"], e
    for pane_id in (pane_a, pane_b):
        p = daemon.call("pane.get", {"pane_id": pane_id})["pane"]
        assert p["pending_decision"] is None
        assert p["lifecycle"] != "blocked", p
        assert p["attention"] == "none", p
        assert p["agent"]["agent_session_id"] is None
    assert daemon.call("permission.list")["permissions"] == []
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"pane_id": pane_a, "verdict": "allow"})
    assert exc.value.code == "NO_SUCH_DECISION"
    # the daemon keeps answering
    assert daemon.call("server.status")["version"]


def test_inherited_pane_id_is_routed_to_the_pane_the_reporter_runs_in(daemon, tmp_root):
    """A reporter in pane C carrying pane A's SIGNALTTY_PANE: the hook goes to C."""
    pane_a = _spawn(daemon, ["sleep", "600"])
    log = tmp_root / "c-agent.log"
    prog = agent_bin(tmp_root, "claude")
    pane_c = _spawn(daemon, ["env", f"SIGNALTTY_PANE={pane_a}", str(prog), json.dumps(PLAN[1:4])],
                    env={"SIGNALTTY_FAKE_LOG": str(log)})
    wait_until(lambda: daemon.call("pane.get", {"pane_id": pane_c})["pane"]["pending_decision"] is not None, 30)
    c = daemon.call("pane.get", {"pane_id": pane_c})["pane"]
    assert (c["lifecycle"], c["attention"]) == ("blocked", "permission_required")
    assert c["agent"]["agent_session_id"] == "M1"
    a = daemon.call("pane.get", {"pane_id": pane_a})["pane"]
    assert a["pending_decision"] is None
    assert a["attention"] == "none"
    assert a["agent"]["agent_session_id"] is None
    with pytest.raises(SignalttyError):
        daemon.call("decision.answer", {"pane_id": pane_a, "verdict": "allow"})
    daemon.call("decision.answer", {"pane_id": pane_c, "verdict": "allow"})
    e = wait_until(lambda: len(_entries(log)) >= 3 and _entries(log), 20)
    assert json.loads(e[2]["stdout"])["hookSpecificOutput"]["decision"] == {"behavior": "allow"}


def test_explicit_pane_from_outside_every_pane_still_applies(daemon, tmp_root):
    """``--pane`` given by a process outside every pane (a script, a test) is obeyed as
    before; the same id inherited from the environment is not."""
    pane_a = _spawn(daemon, ["sleep", "600"])
    env = dict(daemon.env)
    r = subprocess.run(["signaltty", "hook-event", "--agent", "claude", "--event", "Stop", "--pane", pane_a],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("accepted claude:Stop"), r.stderr
    env["SIGNALTTY_PANE"] = pane_a
    r = subprocess.run(["signaltty", "hook-event", "--agent", "claude", "--event", "UserPromptSubmit"],
                       env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "dropped claude:UserPromptSubmit (outside_pane)" in r.stderr, r.stderr
    assert daemon.call("pane.get", {"pane_id": pane_a})["pane"]["lifecycle"] != "working"
