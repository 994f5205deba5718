"""A notification server started inside a pane is sent nothing and presses nothing
(issue 10 follow-up, item 2), end to end on a private bus.

Same uid, so the uid check of ``desktop.fdo`` passes: the real notification server goes away
and a process in a pane claims ``org.freedesktop.Notifications`` (``busfix.NotificationServer``
run as the pane's program). The daemon traces the owner's pid (``GetConnectionUnixProcessID``)
with the self-approval guard's check: it sends it no ``Notify``, reports notifications
unavailable, and every ``ActionInvoked`` it emits — for the earlier notification's id and
real "Allow once" key, and for ids it guesses — grants nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import REPO, holds_for, wait_until
from tests.desktop.test_notify_trust import allow_key, assert_still_pending, env, log_events  # noqa: F401
from tests.server.test_hooks_e2e import _permission_agent

# The pane's program: claims the name once the real server is gone, then follows commands
# from a file (its stdin is the pane's terminal) and writes what it received to another.
SERVER = r"""
import os, sys, time
from tests.desktop.busfix import NotificationServer
address, cmds, out = sys.argv[1:4]
server = NotificationServer(address)
with open(out + ".ready", "w") as fh:
    fh.write(server.conn.unique_name)
done = 0
while True:
    lines = open(cmds).read().splitlines() if os.path.exists(cmds) else []
    for line in lines[done:]:
        nid, key = line.split()
        server._signal("ActionInvoked", "us", (int(nid), key))
    done = len(lines)
    with open(out + ".tmp", "w") as fh:
        fh.write(" ".join([m for m, _ in server.log] + ["pressed"] * done))
    os.replace(out + ".tmp", out)
    time.sleep(0.05)  # the pane program's own polling of its command file, not the test's
"""


def test_server_in_a_pane_gets_nothing_and_presses_nothing(env, tmp_root: Path) -> None:  # noqa: F811
    bus, server, d = env
    a, _ = _permission_agent(d, tmp_root)
    nid, info = server.wait_shown(lambda i: "needs approval" in i["summary"])
    key, decision = allow_key(info), a.get()["pending_decision"]["id"]
    server.close()  # the real server goes away (killed by the attacker)
    script, cmds, out = tmp_root / "evil.py", tmp_root / "evil.cmds", tmp_root / "evil.calls"
    script.write_text(SERVER)
    ws = d.call("workspace.create", {"name": "evil", "cwd": str(tmp_root)})["workspace"]
    d.call("pane.spawn", {"workspace_id": ws["id"],
                          "argv": [sys.executable, str(script), bus.address, str(cmds), str(out)],
                          "env": {"PYTHONPATH": str(REPO)}})
    wait_until(lambda: Path(f"{out}.ready").exists() and out.exists(), 20)
    # a new request: the daemon resolves the new owner, traces it to the pane, sends nothing
    b, _ = _permission_agent(d, tmp_root)
    refused = wait_until(lambda: [r for r in log_events(d, "notify.server_refused")], 20)
    assert refused[0]["why"].startswith("ancestry"), refused
    warned = wait_until(lambda: [r for r in log_events(d, "notify.unavailable")
                                 if "inside a signaltty pane" in r["reason"]], 20)
    assert warned
    assert d.call("server.status")["notifications"]["available"] is False
    # it presses the earlier notification's real key and every id it could guess
    presses = [(nid, key)] + [(n, key) for n in range(1, 6)]
    cmds.write_text("".join(f"{n} {k}\n" for n, k in presses))
    wait_until(lambda: out.read_text().split().count("pressed") == len(presses), 20)
    # (the daemon dropped its connection to a server it may not use, or ignores the press:
    # neither leaves an event to wait for, so the behaviour is a window in which no grant
    # may arrive; a grant reaches the reporter well within it)
    holds_for(
        lambda: len(a.entries()) == 2 and (a.get()["pending_decision"] or {}).get("id") == decision,
        0.5,
        what="no press granted the request",
    )
    assert_still_pending(a, decision)
    assert b.get()["pending_decision"] is not None
    assert len(b.entries()) == 2
    assert "Notify" not in out.read_text().split()
    # the person still answers from outside every pane
    assert d.cli("permission", "answer", a.id, "deny").returncode == 0
    verdict = json.loads(a.wait_entries(3)[2]["stdout"])["hookSpecificOutput"]["decision"]
    assert verdict["behavior"] == "deny"
