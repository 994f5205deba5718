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
from typing import Any

import pytest

from signaltty.installer import api
from signaltty.proto.envelope import SignalttyError
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
    run_plugin(missing, shape, EVENTS + [ASKED, None, {"type": 5}], {**env, "SIGNALTTY_PANE": "pane_x"})


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

    def get() -> dict[str, Any]:
        return daemon.call("pane.get", {"pane_id": pane["id"]})["pane"]

    def run(i: int) -> None:
        (root / f"oc-go-{i}").touch()
        rc = wait_until(lambda: (root / f"oc-rc-{i}").exists() and (root / f"oc-rc-{i}").read_text().strip(), 60)
        out = (root / f"oc-out-{i}").read_text()
        assert rc == "0", out
        assert json.loads(out.strip().splitlines()[-1]) == {"plugins": 1}

    run(0)
    p = wait_until(lambda: get()["lifecycle"] == "working" and get())
    assert p["agent"]["agent_session_id"] == "ses_1"
    assert p["hooked"] is True
    run(1)
    p = wait_until(lambda: get()["lifecycle"] == "failed" and get())
    assert (p["attention"], p["last_message"]) == ("error", "rate limited")


ASKED = {"type": "permission.asked", "properties": {
    "id": "per_1", "sessionID": "ses_1", "permission": "bash", "patterns": ["touch perm_marker.txt"],
    "metadata": {"command": "touch perm_marker.txt"}, "always": ["touch *"],
    "tool": {"messageID": "msg_1", "callID": "call_1"}}}


def _replied(request_id: str, reply: str) -> dict:
    return {"type": "permission.replied", "properties": {"sessionID": "ses_1", "requestID": request_id, "reply": reply}}


def test_plugin_permission_is_answered_through_opencodes_reply_api(daemon):
    """Issue 11 item 6: ``permission.asked`` blocks the pane with a native decision (answered
    from signaltty, the verdict goes through OpenCode's own reply API), and
    ``permission.replied`` (answered in OpenCode's dialog) withdraws the request."""
    reporter = str(Path(sys.executable).parent / "signaltty")
    plugin = api.install("opencode", reporter, home=daemon.root / "oc-home", env={}).file
    box = daemon.root / "oc-session"
    box.mkdir()
    host = [NODE, *detect_flag(), str(Path(__file__).parent / "node" / "load_session.mjs"), plugin, str(box)]
    ws = daemon.call("workspace.create", {"name": "oc", "cwd": str(daemon.root)})["workspace"]
    pane_id = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": host, "agent_hint": "opencode"})["pane"]["id"]

    def get() -> dict[str, Any]:
        return daemon.call("pane.get", {"pane_id": pane_id})["pane"]

    def listed() -> list[dict[str, Any]]:
        return daemon.call("permission.list", {"pane_id": pane_id})["permissions"]

    def posts() -> list[Any]:
        if not (box / "posts.jsonl").exists():
            return []
        return [json.loads(x) for x in (box / "posts.jsonl").read_text().splitlines()]

    sent = [0]

    def feed(events: object) -> None:
        n = sent[0]
        sent[0] += 1
        tmp = box / f"tmp-{n}"
        tmp.write_text(json.dumps(events))
        tmp.rename(box / f"batch-{n}.json")
        if events != "exit":
            wait_until(lambda: (box / f"done-{n}").exists(), 30)

    def state() -> tuple[str, str]:
        p = get()
        return p["lifecycle"], p["attention"]

    feed([EVENTS[0], EVENTS[2]])
    wait_until(lambda: state() == ("working", "none"), 15)
    # a "busy" restated while the dialog is open does not withdraw the request
    feed([ASKED, EVENTS[2]])
    wait_until(lambda: state() == ("blocked", "permission_required") and listed(), 15)
    (dec,) = listed()
    assert (dec["tool_name"], dec["native"], dec["answerable"]) == ("bash", True, True)
    assert dec["prompt"].startswith("Allow bash?")
    assert "touch perm_marker.txt" in dec["prompt"]
    assert get()["last_message"] == "bash: touch perm_marker.txt"
    daemon.call("decision.answer", {"pane_id": pane_id, "decision_id": dec["decision_id"], "verdict": "allow"})
    wait_until(lambda: posts(), 15)
    assert posts() == [{"url": "/permission/per_1/reply", "body": {"reply": "once"}}]
    feed([_replied("per_1", "once")])
    assert state() == ("working", "none")
    assert listed() == []

    # answered in OpenCode's own dialog: the request is withdrawn, nothing is sent
    feed([{**ASKED, "properties": {**ASKED["properties"], "id": "per_2"}}])
    wait_until(lambda: state() == ("blocked", "permission_required") and listed(), 15)
    feed([_replied("per_2", "reject")])
    assert state() == ("working", "none")
    assert listed() == []
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"pane_id": pane_id, "verdict": "deny"})
    assert exc.value.code == "NO_SUCH_DECISION"

    # a deny from signaltty is sent as "reject"
    feed([{**ASKED, "properties": {**ASKED["properties"], "id": "per_3"}}])
    wait_until(lambda: listed(), 15)
    daemon.call("decision.answer", {"pane_id": pane_id, "verdict": "deny"})
    wait_until(lambda: len(posts()) == 2, 15)
    assert posts()[1] == {"url": "/permission/per_3/reply", "body": {"reply": "reject"}}
    feed("exit")
    wait_until(lambda: get()["live"]["state"] == "exited", 15)
