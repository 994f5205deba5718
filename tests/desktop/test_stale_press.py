"""A press on a notification whose decision is no longer pending (answered by another
surface, or superseded by a newer request) changes nothing: the delivered verdict stays,
a newer decision stays pending and keeps its notification, the daemon keeps running, and
the stale answer is logged and replaced by a 5-second "request no longer pending"
notification (desktop-and-service.md §6.3 "Buttons"; states.md §3.9 "Stale answers ...
never resume a pane").

Deterministic: the "user" presses the old notification exactly when the daemon withdraws
it (``NotificationServer.press_on_close``: ActionInvoked reaches the daemon before the
CloseNotification reply, the race a real click loses), and every wait is on an event.
"""

from __future__ import annotations

import json
import subprocess
import sys

from signaltty.proto import trust
from tests.conftest import wait_until
from tests.desktop.busfix import NotificationServer
from tests.server.test_hooks_e2e import _permission_agent

STALE = "· request no longer pending"


def _needs_approval(info: dict) -> bool:
    return "needs approval" in info["summary"]


def _name(info: dict) -> str:
    return info["summary"].rsplit(" · ", 1)[0]


def _allow_key(info: dict) -> str:
    return dict(zip(info["actions"][1::2], info["actions"][0::2], strict=True))["Allow once"]


def _stale_notice(server: NotificationServer) -> dict:
    _, info = server.wait_shown(lambda i: i["summary"].endswith(STALE))
    assert info["actions"][1::2] in ([], [""])  # no buttons
    assert info["timeout"] == 5000  # §6.3: a 5-second notification
    return info


def _rejections(d) -> list[dict]:
    log = d.state_dir / "signaltty.log"
    out = []
    for line in log.read_text().splitlines():
        if "notify.answer_rejected" in line:
            out.append(json.loads(line) if line.startswith("{") else {"line": line})
    return out


def test_stale_press_after_answer_elsewhere_keeps_the_delivered_verdict(
    ddaemon, tmp_root, notif_server
):
    a, _ = _permission_agent(ddaemon, tmp_root)
    nid, info = notif_server.wait_shown(_needs_approval)
    # the user clicks "Allow once" just as the daemon withdraws the notification because
    # the decision was denied from a shell
    notif_server.press_on_close[nid] = "Allow once"
    r = ddaemon.cli("permission", "answer", a.id, "deny")
    assert r.returncode == 0, r.stderr
    notice = _stale_notice(notif_server)
    assert notif_server.presses == [(nid, _allow_key(info), True)]
    assert notice["summary"] == f"{_name(info)} {STALE}"
    # the verdict already delivered is the shell's deny; the stale allow changed nothing
    entries = a.wait_entries(3)
    assert json.loads(entries[2]["stdout"])["hookSpecificOutput"]["decision"]["behavior"] == "deny"
    p = a.get()
    assert (p["lifecycle"], p["attention"], p["pending_decision"]) == ("working", "none", None)
    rejected = _rejections(ddaemon)
    assert len(rejected) == 1, rejected
    assert "NO_SUCH_DECISION" in json.dumps(rejected[0]), rejected
    st = ddaemon.call("server.status")
    assert st["notifications"]["available"] is True
    assert len(a.entries()) == 3  # the reporter printed one verdict, once


def test_stale_press_on_superseded_decision_leaves_the_newer_one_pending(
    ddaemon, tmp_root, notif_server
):
    a, _ = _permission_agent(ddaemon, tmp_root)
    nid1, info1 = notif_server.wait_shown(_needs_approval)
    first = a.get()["pending_decision"]["id"]
    # the user presses "Allow once" on the old notification just as the newer request's
    # notification replaces it
    notif_server.press_on_close[nid1] = "Allow once"
    payload = tmp_root / "newer-request.json"
    payload.write_text(
        json.dumps({"session_id": "S1", "tool_name": "Write", "tool_input": {"file_path": "x.txt"}})
    )
    with payload.open() as stdin:
        newer = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "signaltty",
                "hook-event",
                "--agent",
                "claude",
                "--event",
                "PermissionRequest",
                "--pane",
                a.id,
                "--payload-stdin",
                "--wait-for-answer",
                "--wait-timeout",
                "60",
            ],
            # outside every pane with an explicit --pane: it names its daemon, or no
            # verdict is obeyed (docs/security.md, attack pass 4, N1)
            env={**ddaemon.env, trust.DAEMON_ENV: trust.identity_token(ddaemon.proc.pid)},
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    try:
        second = wait_until(
            lambda: (d := a.get()["pending_decision"]) and d["id"] != first and d["id"]
        )
        # the superseded reporter ends without a verdict (states.md §3.9)
        entries = a.wait_entries(3)
        assert entries[2]["stdout"] == "", entries[2]
        assert entries[2]["rc"] == 0, entries[2]
        nid2, info2 = notif_server.wait_shown(
            lambda i: _needs_approval(i) and i["body"].startswith("Allow Write?")
        )
        assert _stale_notice(notif_server)["summary"] == f"{_name(info1)} {STALE}"
        assert notif_server.presses == [(nid1, _allow_key(info1), True)]
        rejected = _rejections(ddaemon)
        assert len(rejected) == 1, rejected
        assert "NO_SUCH_DECISION" in json.dumps(rejected[0]), rejected
        # the newer decision is untouched: still pending, its reporter still waiting, its
        # notification still up with both buttons
        p = a.get()
        assert (p["lifecycle"], p["attention"]) == ("blocked", "permission_required")
        assert p["pending_decision"]["id"] == second
        assert newer.poll() is None
        assert nid2 in notif_server.shown
        assert {"Allow once", "Deny"} <= set(info2["actions"][1::2])
        # and it is still the pane's live notification: answering it withdraws it
        r = ddaemon.cli("permission", "answer", a.id, "allow")
        assert r.returncode == 0, r.stderr
        out, _err = newer.communicate(timeout=30)
        assert json.loads(out)["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
        wait_until(lambda: any(args == (nid2,) for args in notif_server.calls("CloseNotification")))
        wait_until(lambda: nid2 not in notif_server.shown)
        p = a.get()
        assert (p["lifecycle"], p["attention"], p["pending_decision"]) == ("working", "none", None)
    finally:
        if newer.poll() is None:
            newer.kill()
            newer.wait()


def test_press_on_an_already_withdrawn_notification_does_nothing(ddaemon, tmp_root, notif_server):
    a, _ = _permission_agent(ddaemon, tmp_root)
    nid, _ = notif_server.wait_shown(_needs_approval)
    r = ddaemon.cli("permission", "answer", a.id, "allow")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: any(args == (nid,) for args in notif_server.calls("CloseNotification")))
    wait_until(lambda: nid not in notif_server.shown)
    notifies = len(notif_server.calls("Notify"))
    assert notif_server.press(nid, "Deny") is False  # the server lost the race: a stale signal
    # barrier: a body click on another pane's notification, sent after the stale press on
    # the same connection, is handled after it
    ws = ddaemon.call("workspace.create", {"name": "other"})["workspace"]
    other = ddaemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
    ddaemon.call("notify", {"pane_id": other["id"], "title": "Barrier", "severity": "error"})
    nid_b, _ = notif_server.wait_shown(lambda i: i["summary"].endswith("· Barrier"))
    notif_server.press(nid_b, "default")
    wait_until(
        lambda: ddaemon.call("pane.get", {"pane_id": other["id"]})["pane"]["attention"] == "none"
    )
    entries = a.wait_entries(3)
    assert json.loads(entries[2]["stdout"])["hookSpecificOutput"]["decision"] == {
        "behavior": "allow"
    }
    p = a.get()
    assert (p["lifecycle"], p["attention"], p["pending_decision"]) == ("working", "none", None)
    assert _rejections(ddaemon) == []  # the withdrawn notification's callbacks are gone
    assert len(notif_server.calls("Notify")) == notifies + 1  # only the barrier
    assert ddaemon.call("server.status")["notifications"]["available"] is True
