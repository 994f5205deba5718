"""The hook reporter fast path: stdlib-only imports after a real call, stdout discipline,
``--json``, never exit 2 (integrations.md §2; README "Dependency rules")."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

HEAVY = ("pydantic", "structlog", "uvloop", "pyte", "psutil", "jeepney", "desktop_notifier", "tomlkit")


def test_hook_event_loads_nothing_heavy_during_a_real_call(daemon):
    ws = daemon.call("workspace.create", {"name": "f"})["workspace"]
    pane = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
        "from signaltty.cli.entry import main\n"
        f"rc = main(['hook-event', '--agent', 'claude', '--event', 'UserPromptSubmit', '--pane', {pane['id']!r}])\n"
        "import json; print(json.dumps({'rc': rc, 'mods': sorted(sys.modules)}), file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-I", "-c", code], env=daemon.env, capture_output=True, text=True, timeout=30)
    report = json.loads(r.stderr.strip().splitlines()[-1])
    assert report["rc"] == 0
    assert r.stdout == ""
    loaded = {m.split(".")[0] for m in report["mods"]}
    assert not loaded & set(HEAVY), loaded & set(HEAVY)
    assert not any(m.startswith(("signaltty.server", "signaltty.agents", "signaltty.cli.main")) for m in report["mods"])
    assert daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]["lifecycle"] == "working"


def test_json_prints_result_and_report_session(daemon):
    ws = daemon.call("workspace.create", {"name": "j"})["workspace"]
    pane = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
    r = daemon.cli("hook-event", "--agent", "codex", "--event", "Stop", "--pane", pane["id"], "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 0
    assert out["accepted"] is True
    assert out["lifecycle"] == "done"
    r = daemon.cli("hook-event", "--agent", "codex", "--event", "SubagentStop", "--pane", pane["id"])
    assert r.returncode == 0
    assert r.stdout == ""
    assert r.stderr.strip() == "dropped codex:SubagentStop (unrecognized_hook)"
    r = daemon.cli("report-session", "--pane", pane["id"], "--session", "T1")
    assert r.returncode == 0
    assert r.stdout == ""
    assert daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]["agent"]["agent_session_id"] == "T1"
    for bad in (["--session"], ["--bogus"], []):
        r = daemon.cli("report-session", "--pane", pane["id"], *bad)
        assert r.returncode == 1, bad
