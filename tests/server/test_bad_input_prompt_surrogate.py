"""Breaker: a launch prompt with a lone UTF-16 surrogate (agents.md §4.4: 1 B–32 KiB of UTF-8).

JSON allows ``"\\udcff"``/``"\\ud800"`` escapes that are not Unicode scalar values. The
``prompt`` of ``pane.spawn {agent}`` must be refused with ``BAD_PARAMS`` like every other
string field (``argv``, ``label`` are). Today ``\\ud800`` answers ``INTERNAL`` and ``\\udcff``
starts the program with a raw 0xff byte in argv, after which every snapshot write fails with
``UnicodeEncodeError`` (the flusher task dies, the shutdown save fails) and a restart restores
no workspace at all.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from tests.conftest import DaemonProc

PY = sys.executable


def _raw_call(d: DaemonProc, method: str, params: dict) -> dict:
    # ``json.dumps`` escapes the lone surrogate as ``\udcff`` (valid JSON text); the project's
    # client would replace it with '?' before sending.
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(d.socket)
    try:
        s.sendall((json.dumps({"protocol": "signaltty/1", "id": "r1", "method": method, "params": params}) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return json.loads(buf)
    finally:
        s.close()


@pytest.fixture
def agent_daemon(tmp_root: Path):
    agents = tmp_root / "agents"
    agents.mkdir()
    bindir = tmp_root / "bin"
    bindir.mkdir()
    tool = bindir / "echoer"
    tool.write_text("#!/bin/sh\nexec sleep 60\n")
    tool.chmod(0o755)
    (agents / "echoer.toml").write_text('[agent]\nkind = "generic"\nbinaries = ["echoer"]\n')
    d = DaemonProc(tmp_root, {"SIGNALTTY_AGENTS_DIR": str(agents), "PATH": f"{bindir}:/usr/bin:/bin"})
    d.start()
    try:
        yield d
    finally:
        d.stop()
        d.kill_leftovers()


# built with chr(): a lone surrogate in a literal reads as U+FFFD to some tools (ruff's PT014
# then calls these two cases duplicates); they are a high and a low surrogate
@pytest.mark.parametrize(
    "prompt", ["a" + chr(0xD800) + "b", "a" + chr(0xDCFF) + "b"], ids=["high-surrogate", "low-surrogate"]
)
def test_lone_surrogate_prompt_is_bad_params_and_state_survives(agent_daemon: DaemonProc, prompt: str) -> None:
    d = agent_daemon
    ws = d.call("workspace.create", {"name": "keepme", "cwd": str(d.root)})["workspace"]["id"]
    r = _raw_call(d, "pane.spawn", {"workspace_id": ws, "agent": "echoer", "prompt": prompt})
    assert r.get("ok") is False, f"a prompt that is not UTF-8 was accepted: {r}"
    assert r["error"]["code"] == "BAD_PARAMS", r["error"]
    # nothing may be lost: the workspace is saved at shutdown and restored
    assert d.stop() == 0
    assert "UnicodeEncodeError" not in d.stderr()
    d.kill_leftovers()
    d.start()
    names = [w["name"] for w in d.call("workspace.list")["workspaces"]]
    assert "keepme" in names
