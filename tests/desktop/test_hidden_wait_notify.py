"""Issue 11 item 3 on a real private session bus with our fake notification server: Codex's
native wait (no dialog of its own while it runs) is cut to ``[permissions] hidden_wait_s``
when the server shows no buttons, and its notification says when the terminal asks; with
buttons the person can answer on the desktop, so the requested wait stands.
"""

from __future__ import annotations

from datetime import datetime

from tests.conftest import wait_until
from tests.desktop.busfix import PrivateBus
from tests.desktop.conftest import desktop_daemon
from tests.server.test_hooks_e2e import _permission_agent

CONFIG = "[permissions]\nhidden_wait_s = 2\n"


def _wait_s(d, pane_id: str) -> float:
    (item,) = d.call("permission.list", {"pane_id": pane_id})["permissions"]
    return (datetime.fromisoformat(item["deadline"]) - datetime.fromisoformat(item["received_at"])).total_seconds()


def _started(tmp_root, bus: PrivateBus):
    d = desktop_daemon(tmp_root, bus, CONFIG)
    # the notifier reaches the server in the background at start; a request comes later
    wait_until(lambda: d.call("server.status")["notifications"]["available"] is True, timeout=10)
    return d


def test_without_buttons_codex_asks_in_its_terminal_soon(tmp_root, bus, notif_server):
    notif_server.reset("no-actions")
    d = _started(tmp_root, bus)
    try:
        a, gate = _permission_agent(d, tmp_root, timeout=30, agent="codex")
        assert round(_wait_s(d, a.id)) == 2
        _, info = notif_server.wait_shown(lambda i: "needs approval" in i["summary"])
        did = a.get()["pending_decision"]["id"]
        assert info["body"].endswith(
            f"(answer: signaltty permission answer --pane {a.id} {did} allow|deny; Codex asks in its terminal after 2 s)")
        entries = a.wait_entries(3, timeout=10)
        assert (entries[2]["stdout"], entries[2]["rc"]) == ("", 0)  # no verdict: its own dialog
        _, notice = notif_server.wait_shown(lambda i: "asks in its terminal" in i["summary"])
        assert "answer it in the terminal" in notice["body"]
        gate.touch()
    finally:
        d.stop()
        notif_server.reset()


def test_with_buttons_the_requested_wait_stands(tmp_root, bus, notif_server):
    notif_server.reset()
    d = _started(tmp_root, bus)
    try:
        a, gate = _permission_agent(d, tmp_root, timeout=30, agent="codex")
        assert round(_wait_s(d, a.id)) == 30
        _, info = notif_server.wait_shown(lambda i: "needs approval" in i["summary"])
        assert "Allow once" in info["actions"]
        assert info["body"].endswith("(answer here; Codex asks in its terminal after 30 s)")
        r = d.cli("permission", "answer", a.id, "deny")
        assert r.returncode == 0, r.stderr
        gate.touch()
    finally:
        d.stop()
        notif_server.reset()
