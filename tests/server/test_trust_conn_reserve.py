"""Pane processes cannot take every connection slot (issue 10 follow-up, item 5).

A real daemon; a real pane process opens 260 connections that subscribe to every event and
keep reading (not idle: the idle timeout never frees them). It gets at most 256 − 32 of
them, the rest refused with ``RATE_LIMITED`` saying why; the person's ``signaltty status``
from outside every pane (a child of this test) is still answered, and so are a few more
connections from outside.
"""

from __future__ import annotations

import json
import socket
import sys

from signaltty.server.listener import OUTSIDE_RESERVE
from tests.conftest import DaemonProc, wait_until

FLOOD = r"""
import json, select, socket, sys, time
path, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
req = json.dumps({"protocol": "signaltty/1", "id": "s", "method": "subscribe", "params": {"events": ["*"]}}) + "\n"
held, refused = [], []
def first_line(s):
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            return None
        buf += chunk
    return json.loads(buf.split(b"\n")[0])
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(path)
    try:
        s.sendall(req.encode())
    except BrokenPipeError:
        pass  # refused before it asked: the refusal is still there to read
    try:
        r = first_line(s)
    except ConnectionResetError:
        r = None
    if r is not None and r.get("ok"):
        held.append(s)
    else:
        refused.append(r)
        s.close()
with open(out + ".tmp", "w") as fh:
    json.dump({"held": len(held), "refused": refused}, fh)
import os; os.replace(out + ".tmp", out)
while True:  # keep reading: these subscribers are never idle
    for s in select.select(held, [], [], 1)[0]:
        s.recv(65536)
"""


def test_pane_subscribers_cannot_lock_the_person_out(daemon: DaemonProc) -> None:
    d = daemon
    script, out = d.root / "flood.py", d.root / "flood.json"
    script.write_text(FLOOD)
    ws = d.call("workspace.create", {"name": "flood", "cwd": str(d.root)})["workspace"]
    pane = d.call("pane.spawn", {"workspace_id": ws["id"],
                                 "argv": [sys.executable, str(script), d.socket, str(out), "260"]})["pane"]
    try:
        result = json.loads(wait_until(lambda: out.exists() and out.read_text(), 60))
    except AssertionError:
        raise AssertionError(f"the flood did not finish: {d.call('pane.read', {'pane_id': pane['id']})}") from None
    assert result["held"] == 256 - OUTSIDE_RESERVE, result["held"]
    assert len(result["refused"]) == 260 - result["held"]
    for r in result["refused"]:
        assert r is not None, r
        assert r["error"]["code"] == "RATE_LIMITED", r
        assert "processes inside signaltty panes share" in r["error"]["message"], r
    # the person, outside every pane, is still answered — several times over
    r = d.cli("status")
    assert r.returncode == 0, r.stderr
    outside = []
    try:
        for _ in range(OUTSIDE_RESERVE - 4):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(10)
            s.connect(d.socket)
            outside.append(s)
        assert d.call("server.status")["pid"] == d.proc.pid
    finally:
        for s in outside:
            s.close()
