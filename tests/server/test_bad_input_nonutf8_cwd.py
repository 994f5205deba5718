"""Breaker: a pane whose program works in a directory whose name is not UTF-8.

The process refresh follows the foreground program's cwd (agents.md §3.3, states.md §3.6).
``os.readlink("/proc/<pid>/cwd")`` gives such a name with surrogate escapes (``\\udcff``);
it must never make the workspace unsaveable. Today ``pane.cwd`` takes the escaped string,
``json.dumps(...).encode()`` then raises ``UnicodeEncodeError`` on every save: the flusher task
dies, the shutdown save fails, and a restart loses every workspace created since.
The same hole is open through ``pane.spawn {cwd}`` / ``workspace.create {cwd}`` with a JSON
``"\\udcff"`` escape (plain ``str`` params accept lone surrogates).
"""

from __future__ import annotations

import base64
import json
import socket

from tests.conftest import DaemonProc, wait_until


def test_cwd_follow_into_non_utf8_directory_keeps_state_saveable(configured) -> None:
    d = configured("[server]\nproc_refresh_s = 2\n")
    ws = d.call("workspace.create", {"name": "first", "cwd": str(d.root)})["workspace"]["id"]
    script = f'd=$(printf "{d.root}/brk\\377"); mkdir -p "$d"; cd "$d"; exec sleep 120'
    pid = d.call("pane.spawn", {"workspace_id": ws, "argv": ["sh", "-c", script]})["pane"]["id"]
    # the process refresh sees the new cwd (or refuses it; either is fine)
    wait_until(lambda: d.call("pane.get", {"pane_id": pid})["pane"]["process_name"] == "sleep", timeout=15)
    # A witness for "a later refresh ran": a shell that moves into an ordinary directory
    # after the cwd above was set; once its new cwd shows, the odd pane was scanned again.
    (d.root / "plain").mkdir()
    witness = d.call("pane.spawn", {"workspace_id": ws, "argv": ["sh"]})["pane"]["id"]
    typed = base64.b64encode(f"cd {d.root}/plain\r".encode()).decode()
    d.call("pane.input", {"pane_id": witness, "data_b64": typed})
    wait_until(lambda: d.call("pane.get", {"pane_id": witness})["pane"]["cwd"] == f"{d.root}/plain",
               timeout=20, what="a process refresh after the cwd change")
    d.call("workspace.create", {"name": "second", "cwd": str(d.root)})
    assert d.stop() == 0
    assert "UnicodeEncodeError" not in d.stderr()
    assert "shutdown.step_failed" not in d.stderr()
    d.kill_leftovers()
    d.start()
    names = sorted(w["name"] for w in d.call("workspace.list")["workspaces"])
    assert names == ["first", "second"]
    panes = d.call("pane.list")["panes"]
    assert sorted(p["id"] for p in panes) == sorted([pid, witness])


def test_spawn_cwd_with_lone_surrogate_is_refused_or_saveable(daemon: DaemonProc) -> None:
    d = daemon
    odd = d.root / "odd"
    import os

    os.makedirs(os.fsencode(str(odd)) + b"/\xff")
    ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]["id"]
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(d.socket)
    req = {"protocol": "signaltty/1", "id": "r", "method": "pane.spawn",
           "params": {"workspace_id": ws, "argv": ["sleep", "120"], "cwd": str(odd) + "/\udcff"}}
    s.sendall((json.dumps(req) + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"):
        buf += s.recv(65536)
    s.close()
    r = json.loads(buf)
    if not r["ok"]:
        assert r["error"]["code"] == "BAD_PARAMS"
    d.call("workspace.create", {"name": "after", "cwd": str(d.root)})
    assert d.stop() == 0
    assert "UnicodeEncodeError" not in d.stderr()
    d.kill_leftovers()
    d.start()
    assert "after" in [w["name"] for w in d.call("workspace.list")["workspaces"]]
