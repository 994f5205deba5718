"""Notifications never outlive their question (issue 13 item 7).

* A server that keeps a notification after an action (dunst, for an action chosen from its
  context menu; ``NotificationServer.keep_after_action``) gets ``CloseNotification`` for it
  after "Allow once", "Deny" or a body click.
* A permission notification is withdrawn when its decision ends any other way: answered
  from the CLI or D-Bus (tests/desktop/test_desktop_e2e.py), the agent answered in its
  terminal (it kills its waiting hook), the pane exited.
* When the native wait times out, the notification is replaced by one saying the agent now
  asks in its terminal, which goes when the pane's attention is cleared.
"""

from __future__ import annotations

import json
import signal

import psutil
import pytest

from tests.conftest import DaemonProc, wait_until
from tests.desktop.busfix import NotificationServer
from tests.desktop.conftest import desktop_daemon
from tests.server.test_hooks_e2e import _permission_agent

FAST = "[notifications]\nsettle_ms = 100\n"


def _closed(server: NotificationServer, nid: int) -> bool:
    return any(args == (nid,) for args in server.calls("CloseNotification"))


def _needs_approval(info: dict) -> bool:
    return "needs approval" in info["summary"]


@pytest.fixture
def fast_daemon(tmp_root, bus, notif_server):
    notif_server.reset()
    d = desktop_daemon(tmp_root, bus, config=FAST)
    try:
        wait_until(lambda: d.call("server.status")["notifications"]["available"])
        yield d
    finally:
        d.stop()
        assert not d.kill_leftovers()


@pytest.mark.parametrize(("label", "behavior"), [("Allow once", "allow"), ("Deny", "deny")])
def test_button_on_a_server_that_keeps_the_notification_withdraws_it(
    fast_daemon, tmp_root, notif_server, label, behavior
):
    a, _ = _permission_agent(fast_daemon, tmp_root)
    nid, _ = notif_server.wait_shown(_needs_approval)
    notif_server.keep_after_action = True
    assert notif_server.press(nid, label) is True
    entries = a.wait_entries(3)
    verdict = json.loads(entries[2]["stdout"])["hookSpecificOutput"]["decision"]
    assert verdict["behavior"] == behavior
    wait_until(lambda: _closed(notif_server, nid))
    wait_until(lambda: nid not in notif_server.shown)
    # a second press of the same (now closed) notification runs nothing
    notif_server.press(nid, label)
    assert a.get()["pending_decision"] is None
    assert notif_server.presses[0] == (nid, notif_server.presses[0][1], True)
    log = (fast_daemon.state_dir / "signaltty.log").read_text()
    assert log.count("notify.answered") == 1
    assert "notify.answer_rejected" not in log


def test_body_click_on_a_server_that_keeps_the_notification_withdraws_it(
    fast_daemon, notif_server
):
    ws = fast_daemon.call("workspace.create", {"name": "k"})["workspace"]
    pane = fast_daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})
    pane_id = pane["pane"]["id"]
    fast_daemon.call("notify", {"pane_id": pane_id, "title": "Kept", "severity": "error"})
    nid, _ = notif_server.wait_shown(lambda i: i["summary"].endswith("· Kept"))
    notif_server.keep_after_action = True
    notif_server.press(nid, "default")
    wait_until(lambda: _closed(notif_server, nid))
    assert nid not in notif_server.shown
    assert fast_daemon.call("pane.get", {"pane_id": pane_id})["pane"]["attention"] == "none"


def _waiting_reporter(d: DaemonProc) -> psutil.Process:
    """The ``signaltty hook-event --wait-for-answer`` process the fake agent is waiting on."""

    def find() -> psutil.Process | None:
        for proc in psutil.Process(d.proc.pid).children(recursive=True):
            try:
                cmd = proc.cmdline()
            except psutil.Error:
                continue
            if "hook-event" in cmd and "--wait-for-answer" in cmd:
                return proc
        return None

    return wait_until(find)


def test_answered_in_the_agents_terminal_withdraws_it(fast_daemon, tmp_root, notif_server):
    a, _ = _permission_agent(fast_daemon, tmp_root)
    nid, _ = notif_server.wait_shown(_needs_approval)
    # the person answers in the agent's own dialog: the agent ends its waiting hook
    _waiting_reporter(fast_daemon).send_signal(signal.SIGKILL)
    wait_until(lambda: _closed(notif_server, nid))
    assert nid not in notif_server.shown
    assert a.get()["pending_decision"] is None
    assert not any("asks in its terminal" in i["summary"] for i in notif_server.shown.values())


def test_pane_exit_withdraws_it(fast_daemon, tmp_root, notif_server):
    a, _ = _permission_agent(fast_daemon, tmp_root)
    nid, _ = notif_server.wait_shown(_needs_approval)
    fast_daemon.call("pane.signal", {"pane_id": a.id, "signal": "KILL", "group": True})
    wait_until(lambda: _closed(notif_server, nid))
    assert nid not in notif_server.shown


def test_native_timeout_says_the_agent_now_asks_in_its_terminal(
    fast_daemon, tmp_root, notif_server
):
    a, _ = _permission_agent(fast_daemon, tmp_root, timeout=2)
    nid, first = notif_server.wait_shown(_needs_approval)
    nid2, info = notif_server.wait_shown(lambda i: "asks in its terminal" in i["summary"])
    assert _closed(notif_server, nid)
    assert nid not in notif_server.shown
    assert info["summary"] == first["summary"].replace(
        "needs approval", "asks in its terminal"
    )
    # the question as the permission notification asked it, and where to answer it now
    assert first["body"].startswith("Allow Bash?\n")
    assert "ls" in first["body"]
    question = first["body"].rpartition("\n(answer")[0]  # without where to answer (issue 11 item 3)
    assert question
    assert info["body"] == question + "\nNot answered here in time: answer it in the terminal."
    assert info["actions"][1::2] in ([], [""])  # nothing to answer here any more
    assert info["hints"]["urgency"] == ("y", 2)
    assert info["timeout"] == 0
    p = a.get()
    assert (p["lifecycle"], p["attention"], p["pending_decision"]) == (
        "blocked",
        "permission_required",
        None,
    )
    # the answer in the terminal moves the agent on: attention cleared → notice withdrawn
    fast_daemon.call("pane.mark_seen", {"pane_id": a.id})
    wait_until(lambda: _closed(notif_server, nid2))
    assert nid2 not in notif_server.shown
