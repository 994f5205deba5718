"""The installed OpenCode plugin run under ``node`` through both loader shapes, with a
recording reporter and with the real ``signaltty hook-event`` (integrations.md §1.3;
agents.md §2.3; research real-agents.md §5)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from signaltty.installer import api
from tests.conftest import wait_until

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")
LOADERS = {"default": Path(__file__).parent / "node" / "load_default.mjs",
           "named": Path(__file__).parent / "node" / "load_named.cjs"}

RECORDER = """#!/bin/sh
# records one reporter call: argv and stdin
{ printf '%s\\n' "$*"; cat; printf '\\n'; } >> "$RECORD_LOG"
"""


@functools.cache
def detect_flag() -> list[str]:
    """ESM syntax in a .js file with no package.json: Node < 22.7 needs detection turned on."""
    r = subprocess.run([NODE, "--experimental-detect-module", "-e", "0"], capture_output=True, check=False)
    return ["--experimental-detect-module"] if r.returncode == 0 else []


def run_plugin(plugin: str, shape: str, events: list[dict], env: dict[str, str]) -> dict:
    r = subprocess.run([NODE, *detect_flag(), str(LOADERS[shape]), plugin, json.dumps(events)],
                       env=env, capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def calls(log: Path) -> list[tuple[str, dict]]:
    if not log.exists():
        return []
    chunks = [c for c in log.read_text().split("\n") if c]
    return [(chunks[i], json.loads(chunks[i + 1])) for i in range(0, len(chunks), 2)]


EVENTS = [
    {"type": "session.created", "properties": {"info": {"id": "ses_1", "title": "x"}}},
    {"type": "message.updated", "properties": {"sessionID": "ses_1"}},
    {"type": "session.status", "properties": {"sessionID": "ses_1", "status": {"type": "busy"}}},
    {"type": "session.status", "sessionID": "ses_2", "status": "idle"},
    {"type": "session.idle", "properties": {"sessionID": "ses_1"}},
    {"type": "session.error", "properties": {"sessionID": "ses_1",
                                             "error": {"name": "APIError", "data": {"message": "rate limited"}}}},
    {"type": "session.execution.failed", "properties": {"sessionID": "ses_1", "error": {"message": "boom"}}},
    {"type": "session.error", "properties": {"sessionID": "ses_1", "error": {"name": "MessageAbortedError"}}},
    {"type": "session.execution.succeeded", "properties": {"sessionID": "ses_1"}},
]
EXPECTED = [
    ("session.created", {"session_id": "ses_1", "status": None, "message": None}),
    ("session.status", {"session_id": "ses_1", "status": "busy", "message": None}),
    ("session.status", {"session_id": "ses_2", "status": "idle", "message": None}),
    ("session.idle", {"session_id": "ses_1", "status": None, "message": None}),
    ("session.error", {"session_id": "ses_1", "status": None, "message": "rate limited"}),
    ("session.error", {"session_id": "ses_1", "status": None, "message": "boom"}),
    ("session.idle", {"session_id": "ses_1", "status": None, "message": None}),
    ("session.idle", {"session_id": "ses_1", "status": None, "message": None}),
]


@pytest.fixture
def recorder(tmp_path: Path) -> tuple[str, Path]:
    exe = tmp_path / "bin" / "signaltty"
    exe.parent.mkdir()
    exe.write_text(RECORDER)
    exe.chmod(0o755)
    return str(exe), tmp_path / "calls.log"


@pytest.mark.parametrize("shape", ["default", "named"])
def test_plugin_normalizes_and_calls_reporter(tmp_path, recorder, shape):
    exe, log = recorder
    plugin = api.install("opencode", exe, home=tmp_path / "home", env={}).file
    env = {"PATH": os.environ["PATH"], "SIGNALTTY_PANE": "pane_x", "RECORD_LOG": str(log)}
    assert run_plugin(plugin, shape, EVENTS, env) == {"plugins": 1}
    got = calls(log)
    assert [c[0] for c in got] == [f"hook-event --agent opencode --event {n} --payload-stdin" for n, _ in EXPECTED]
    assert [(c[0].split()[4], c[1]) for c in got] == EXPECTED


@pytest.mark.parametrize("shape", ["default", "named"])
def test_plugin_silent_outside_a_pane_and_swallows_errors(tmp_path, recorder, shape):
    exe, log = recorder
    plugin = api.install("opencode", exe, home=tmp_path / "home", env={}).file
    env = {"PATH": os.environ["PATH"], "RECORD_LOG": str(log)}
    assert run_plugin(plugin, shape, EVENTS, env) == {"plugins": 1}
    assert calls(log) == []
    missing = api.install("opencode", str(tmp_path / "nowhere" / "signaltty"), home=tmp_path / "h2", env={}).file
    run_plugin(missing, shape, EVENTS + [None, {"type": 5}], {**env, "SIGNALTTY_PANE": "pane_x"})


@pytest.mark.parametrize("shape", ["default", "named"])
def test_plugin_drives_a_real_pane(daemon, shape):
    """The plugin runs where OpenCode runs, inside the pane: its reporter calls are routed
    there by ancestry (a SIGNALTTY_PANE merely inherited by a process outside the pane is
    dropped, issue 10 §6)."""
    reporter = str(Path(sys.executable).parent / "signaltty")
    plugin = api.install("opencode", reporter, home=daemon.root / "oc-home", env={}).file
    root = daemon.root
    script = ""
    for i, batch in enumerate([[EVENTS[0], EVENTS[2]], [EVENTS[5]]]):
        (root / f"oc-{i}.json").write_text(json.dumps(batch))
        host = " ".join([NODE, *detect_flag(), str(LOADERS[shape]), plugin])
        script += (f"while [ ! -e {root}/oc-go-{i} ]; do sleep 0.05; done; "
                   f"{host} \"$(cat {root}/oc-{i}.json)\" >{root}/oc-out-{i} 2>&1; echo $? >{root}/oc-rc-{i}; ")
    ws = daemon.call("workspace.create", {"name": "oc", "cwd": str(root)})["workspace"]
    pane = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sh", "-c", script + "exec sleep 60"],
                                      "agent_hint": "opencode"})["pane"]
    get = lambda: daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]

    def run(i: int) -> None:
        (root / f"oc-go-{i}").touch()
        rc = wait_until(lambda: (root / f"oc-rc-{i}").exists() and (root / f"oc-rc-{i}").read_text().strip(), 60)
        out = (root / f"oc-out-{i}").read_text()
        assert rc == "0", out
        assert json.loads(out.strip().splitlines()[-1]) == {"plugins": 1}

    run(0)
    p = wait_until(lambda: get()["lifecycle"] == "working" and get())
    assert p["agent"]["agent_session_id"] == "ses_1" and p["hooked"] is True
    run(1)
    p = wait_until(lambda: get()["lifecycle"] == "failed" and get())
    assert (p["attention"], p["last_message"]) == ("error", "rate limited")
