"""The hook reporter fast path: stdlib-only imports after a real call, stdout discipline,
``--json``, never exit 2 (integrations.md §2; README "Dependency rules")."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest

from signaltty.proto import trust
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


# Everything the reporter may load beyond what a bare `python -I -S` has at start (issue 12:
# a hook costs ≤ 2× that start; `json` alone, through `re` and `enum`, costs ~5 ms): the
# package's own light modules and the C halves of socket, json and struct. Adding anything
# (json, re, enum, socket, typing, dataclasses, collections, functools…) fails here.
FAST_PATH_MODULES = {
    "__future__",  # `from __future__ import annotations` imports it (~0.1 ms)
    "_json",
    "_socket",
    "_struct",
    "struct",
    "errno",
    "signaltty",
    "signaltty.cli",
    "signaltty.cli.entry",
    "signaltty.cli.fastjson",
    "signaltty.cli.fastpath",
    "signaltty.proto",
    "signaltty.proto.connect",
    "signaltty.proto.constants",
    "signaltty.proto.sockpath",
    "signaltty.proto.trust",
    # what `site` loads at every start anyway (this test runs without it, -S)
    "os",
    "os.path",
    "posixpath",
    "genericpath",
    "stat",
    "_stat",
    "_collections_abc",
}
NEVER = {"json", "re", "enum", "socket", "selectors", "typing", "dataclasses", "functools", "collections"}

PAYLOAD = json.dumps(
    json.loads((REPO / "tests/fixtures/real-agents/claude/hook_samples.json").read_text())["Stop"]
).encode()


def modules_loaded_by(args: list[str], env: dict[str, str], stdin: bytes = b"", pre: str = "") -> tuple[int, set[str]]:
    """Run the entry point with ``args`` in a fresh ``python -I -S``; return its exit code and
    the modules it loaded that the bare interpreter had not (``pre`` runs first)."""
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        f"{pre}\n"
        "from signaltty.cli.entry import main\n"
        "rc = main(sys.argv[1:])\n"
        "sys.stderr.write('\\nLOADED ' + repr((rc, sorted(set(sys.modules) - before))) + '\\n')\n"
    )
    r = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, *args], env=env, input=stdin, capture_output=True, timeout=30
    )
    line = [ln for ln in r.stderr.decode().splitlines() if ln.startswith("LOADED ")][-1]
    rc, mods = ast.literal_eval(line.removeprefix("LOADED "))
    return rc, set(mods)


def test_reporter_loads_only_its_budget(daemon):
    ws = daemon.call("workspace.create", {"name": "b"})["workspace"]
    pane = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
    assert daemon.proc is not None
    in_pane = dict(daemon.env, SIGNALTTY_PANE=pane["id"], SIGNALTTY_DAEMON=trust.identity_token(daemon.proc.pid))
    hook = ["hook-event", "--agent", "claude", "--event", "Stop", "--payload-stdin"]
    runs = {
        # the status hook as `integration install` writes it, in a pane
        "status": (hook, in_pane, PAYLOAD),
        # a permission hook outside every pane: the ancestor walk, then the state only
        "wait-outside": ([*hook, "--wait-for-answer", "--pane", pane["id"]], daemon.env, PAYLOAD),
        "json": (["--json", "hook-event", "--agent", "codex", "--event", "Stop", "--pane", pane["id"]], daemon.env, b""),
        "session": (["report-session", "--pane", pane["id"], "--session", "T9"], daemon.env, b""),
        # no daemon and no pane: nothing to report
        "no-daemon": (hook, dict(daemon.env, SIGNALTTY_SOCKET=str(daemon.root / "none.sock")), PAYLOAD),
    }
    for name, (args, env, stdin) in runs.items():
        rc, loaded = modules_loaded_by(args, env, stdin)
        assert rc == 0, name
        assert loaded <= FAST_PATH_MODULES, (name, sorted(loaded - FAST_PATH_MODULES))
        assert not loaded & NEVER, name
    assert daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]["agent"]["agent_session_id"] == "T9"


def test_the_budget_check_sees_an_extra_import(tmp_path):
    env = dict(os.environ, SIGNALTTY_SOCKET=str(tmp_path / "none.sock"))
    env.pop("SIGNALTTY_PANE", None)
    rc, loaded = modules_loaded_by(["hook-event", "--agent", "claude", "--event", "Stop"], env, pre="import textwrap")
    assert rc == 0
    assert "textwrap" in loaded
    assert "re" in loaded  # textwrap imports re
    assert "signaltty.cli.fastpath" in loaded


@pytest.mark.parametrize("entry", ["module", "script"])
def test_a_closed_stdout_exits_1_not_120(daemon, entry):
    """The entry leaves a reporter with os._exit after flushing (no interpreter shutdown):
    output it cannot deliver is exit 1, as a hook's failure must be (never 2; Python's own
    shutdown would exit 120)."""
    ws = daemon.call("workspace.create", {"name": "c"})["workspace"]
    pane = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
    args = ["hook-event", "--agent", "codex", "--event", "Stop", "--pane", pane["id"], "--json"]
    argv = [sys.executable, "-m", "signaltty"] if entry == "module" else ["signaltty"]
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads: the flush at exit meets EPIPE
    try:
        r = subprocess.run([*argv, *args], env=daemon.env, stdout=write_end, stderr=subprocess.PIPE, timeout=30)
    finally:
        os.close(write_end)
    assert r.returncode == 1, r.stderr
    assert daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]["lifecycle"] == "done"
    # and with a reader the same command prints its result and exits 0
    r = subprocess.run([*argv, *args], env=daemon.env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["lifecycle"] == "done"
