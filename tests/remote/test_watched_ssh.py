"""A watched host (issue 16 item 3) through real OpenSSH, notifications on a real private bus.

The remote side is tests/remote/test_ssh_host.py's tier (its own ``sshd`` on 127.0.0.1, a
throwaway user whose ``signaltty`` is this checkout, the ``remote`` alias in a test
``ssh_config``). The local side is a root daemon (``tests.conftest.DaemonProc``) with
``[hosts.devbox] target = "remote"``, ``SIGNALTTY_SSH_COMMAND="ssh -F <that ssh_config>"``,
D-Bus and notifications on, on a private ``dbus-daemon`` where the test notification server
(tests/desktop/busfix.py) records what it is sent and presses its buttons, with
``settle_ms = 0``. Checked end to end: one ssh process for the host however many panes run
there; a remote Claude permission request shown here as "devbox/… · Claude Code needs
approval" whose "Allow once" button reaches the real waiting ``hook-event`` over there; the
remote daemon restarted in place, and shut down and started again (the link reconnects, the
mirror comes back reachable); the link cut with ``kill -9`` of the daemon's ssh (unreachable
with ssh's reason, mirrored panes kept and marked, then reconnected by itself); a host that
does not exist (a clear error, a retry time, nothing else affected).

Runs as root; skipped with the reason otherwise, and under ``CI`` it fails instead (the
``remote`` fixture's rule; ``bash tests/run.sh`` installs openssh-server and dbus).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from signaltty.proto.client import Client
from tests.conftest import DaemonProc, wait_until
from tests.desktop.busfix import NotificationServer, PrivateBus
from tests.desktop.conftest import bus as bus
from tests.desktop.conftest import desktop_daemon
from tests.desktop.conftest import notif_server as notif_server
from tests.remote.test_ssh_host import Remote, _ssh_children
from tests.remote.test_ssh_host import remote as remote

WATCH = '[hosts.devbox]\ntarget = "remote"\n[notifications]\nsettle_ms = 0\n'
LINK_S = 60  # an ssh login, the remote daemon's start on demand, subscribe and two lists


def watching(root: Path, remote: Remote, bus: PrivateBus, config: str = WATCH) -> DaemonProc:
    """The local daemon: watches ``config``'s hosts through the test's ssh configuration."""
    return desktop_daemon(
        root, bus, config, SIGNALTTY_SSH_COMMAND=f"ssh -F {remote.tmp / 'ssh_config'}"
    )


@pytest.fixture
def local(
    tmp_root: Path, remote: Remote, bus: PrivateBus, notif_server: NotificationServer
) -> Iterator[DaemonProc]:
    notif_server.reset()
    # watching never starts a daemon over there (bridge --no-start): a --host command does
    remote.json("status")
    d = watching(tmp_root, remote, bus)
    try:
        yield d
    finally:
        d.stop()
        leftovers = d.kill_leftovers()
        assert not leftovers, f"daemon left children running: {leftovers}"
    # its bridge on the remote side ends with the ssh connection
    wait_until(lambda: not remote.bridges(), 30, what="the watched host's bridge to exit")


def host(d: DaemonProc, name: str = "devbox") -> dict[str, Any]:
    return next(h for h in d.call("hosts.list")["hosts"] if h["name"] == name)


def connected(d: DaemonProc, name: str = "devbox") -> dict[str, Any]:
    return wait_until(
        lambda: (h := host(d, name))["state"] == "connected" and h, LINK_S, what=f"{name} connected"
    )


def mirrored(d: DaemonProc) -> dict[str, dict[str, Any]]:
    """Local id → record of the panes mirrored from devbox."""
    return {p["id"]: p for p in d.call("pane.list")["panes"] if p.get("host") == "devbox"}


def ssh_of(d: DaemonProc) -> list[psutil.Process]:
    assert d.proc is not None
    return _ssh_children(psutil.Process(d.proc.pid))


def until_event(
    sub: Client, pred: Callable[[str, dict[str, Any]], bool], timeout: float = LINK_S
) -> dict[str, Any]:
    """Read ``sub``'s events until ``pred(name, payload)``; that payload."""
    seen = []
    while True:
        msg = sub.next_event(timeout=timeout)
        assert msg is not None, f"no matching event; saw {seen[-20:]}"
        seen.append(msg["event"])
        if pred(msg["event"], msg["payload"]):
            return dict(msg["payload"])


def host_state(state: str) -> Callable[[str, dict[str, Any]], bool]:
    return lambda ev, p: ev == "host.updated" and p["host"]["state"] == state


def test_one_ssh_process_for_the_host_however_many_panes(local: DaemonProc, remote: Remote) -> None:
    connected(local)
    assert len(ssh_of(local)) == 1
    ids = [remote.new("--name", f"many{i}", "--", "sleep", "600") for i in range(3)]
    want = {f"devbox/{rid}" for rid in ids}
    panes = wait_until(
        lambda: (m := mirrored(local)).keys() >= want and m, 30, what="the three mirrored panes"
    )
    assert all(panes[p]["reachable"] is True for p in want)
    assert all(panes[p]["workspace_id"].startswith("devbox/") for p in want)
    # the --host commands' own ssh connections are gone; the daemon's one link remains
    wait_until(lambda: len(remote.bridges()) == 1, 30, what="only the watched host's bridge")
    assert len(ssh_of(local)) == 1
    h = host(local)
    assert h["connects"] == 1
    assert h["panes"] >= 3
    status = local.call("server.status")
    assert [(x["name"], x["state"]) for x in status["hosts"]] == [("devbox", "connected")]


def test_a_remote_permission_answered_by_the_local_notification_button(
    local: DaemonProc, remote: Remote, notif_server: NotificationServer
) -> None:
    connected(local)
    log = remote.home / "watched-agent.log"
    plan = [
        {"hook": "SessionStart", "agent": "claude", "payload": {"session_id": "W1"}},
        {"hook": "UserPromptSubmit", "agent": "claude", "payload": {"session_id": "W1"}},
        {
            "hook": "PermissionRequest",
            "agent": "claude",
            "payload": {"session_id": "W1", "tool_name": "Bash", "tool_input": {"command": "ls"}},
            "args": ["--wait-for-answer", "--wait-timeout", "60"],
        },
        {"sleep": 60},
    ]
    rid = remote.new(
        "--name", "api", "-e", f"SIGNALTTY_FAKE_LOG={log}", "--", "claude", json.dumps(plan)
    )
    mid = f"devbox/{rid}"
    nid, info = notif_server.wait_shown(
        lambda i: "needs approval" in i["summary"] and "Allow once" in i["actions"], timeout=60
    )
    assert info["summary"].startswith("devbox/")
    assert info["summary"].endswith(" · Claude Code needs approval")
    assert info["body"].startswith("Allow Bash?")
    assert info["actions"][1::2] == ["", "Allow once", "Deny"]  # the body click, the buttons
    # the mirror names the same request the remote daemon holds
    pending = local.call("pane.get", {"pane_id": mid})["pane"]["pending_decision"]
    there = remote.json("pane", "get", rid)["pane"]["pending_decision"]
    assert pending["id"] == there["id"]
    assert [p["host"] for p in local.call("permission.list")["permissions"]] == ["devbox"]
    notif_server.press(nid, "Allow once")

    def verdict() -> dict[str, Any] | None:
        with contextlib.suppress(OSError):
            for line in log.read_text().splitlines():
                entry = json.loads(line)
                if entry.get("hook") == "PermissionRequest":
                    return dict(entry)
        return None

    entry = wait_until(verdict, 30, what="the remote reporter's verdict")
    assert entry["rc"] == 0, entry["stderr"]
    assert json.loads(entry["stdout"]) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }
    wait_until(
        lambda: local.call("pane.get", {"pane_id": mid})["pane"]["pending_decision"] is None,
        30,
        what="the mirror to see the request answered",
    )
    assert remote.json("pane", "get", rid)["pane"]["pending_decision"] is None


def test_the_remote_daemon_restarted_or_stopped_and_started(
    local: DaemonProc, remote: Remote
) -> None:
    connected(local)
    rid = remote.new("--name", "stays", "--", "sleep", "600")
    mid = f"devbox/{rid}"
    wait_until(lambda: mid in mirrored(local), 30, what="the mirrored pane")
    pid = remote.json("status")["pid"]
    with local.client(timeout=LINK_S) as sub:
        sub.call("subscribe", {"events": ["host.*"]})
        # restarted in place: the same daemon process, its panes kept
        r = remote.cli("restart")
        assert r.returncode == 0, (r.stderr, remote.log())
        until_event(sub, host_state("unreachable"))
        until_event(sub, host_state("connected"))
    assert remote.json("status")["pid"] == pid
    panes = wait_until(lambda: (m := mirrored(local)).get(mid) and m, 30, what="the pane back")
    assert panes[mid]["reachable"] is True
    assert host(local)["connects"] == 2

    with local.client(timeout=LINK_S) as sub:
        sub.call("subscribe", {"events": ["host.*"]})
        r = remote.cli("shutdown", "--force")
        assert r.returncode == 0, (r.stderr, remote.log())
        gone = until_event(sub, host_state("unreachable"))
        assert gone["host"]["error"]
        # watching does not bring it back (bridge --no-start): the next attempt says so …
        wait_until(
            lambda: "no signaltty daemon" in (host(local)["error"] or ""),
            LINK_S,
            what="the no-daemon reason",
        )
        # … and a --host command, which starts one on demand, does
        remote.json("status")
        until_event(sub, host_state("connected"))
    assert remote.json("status")["pid"] != pid
    assert host(local)["connects"] == 3
    # the mirror is the new daemon's list, every pane of it reachable
    there = {f"devbox/{p['id']}" for p in remote.json("pane", "list")["panes"]}
    mirror = wait_until(
        lambda: (m := mirrored(local)).keys() == there and m, 30, what="the mirror to follow"
    )
    assert all(p["reachable"] is True for p in mirror.values())


def test_the_link_cut_keeps_the_panes_and_reconnects(local: DaemonProc, remote: Remote) -> None:
    connected(local)
    rid = remote.new("--name", "cut", "--", "sleep", "600")
    mid = f"devbox/{rid}"
    wait_until(lambda: mid in mirrored(local), 30, what="the mirrored pane")
    [ssh] = ssh_of(local)
    with local.client(timeout=LINK_S) as sub:
        sub.call("subscribe", {"events": ["host.*", "pane.*"]})
        ssh.kill()
        down = until_event(sub, host_state("unreachable"))
        assert "ssh was killed by signal 9" in down["host"]["error"]
        assert down["host"]["retry_at"]
        marked = until_event(
            sub,
            lambda ev, p: ev == "pane.updated" and p["pane"]["id"] == mid,
        )
        assert marked["pane"]["reachable"] is False
        assert marked["changed"] == ["reachable"]
        back = until_event(
            sub,
            lambda ev, p: (
                ev == "pane.updated" and p["pane"]["id"] == mid and p["pane"]["reachable"] is True
            ),
        )
        assert back["changed"] == ["reachable"]
    assert host(local)["state"] == "connected"
    assert mirrored(local)[mid]["reachable"] is True
    assert len(ssh_of(local)) == 1
    assert ssh_of(local)[0].pid != ssh.pid


def test_a_host_that_does_not_exist(
    tmp_root: Path, remote: Remote, bus: PrivateBus, notif_server: NotificationServer
) -> None:
    notif_server.reset()
    d = watching(tmp_root, remote, bus, '[hosts.nowhere]\ntarget = "nosuchhost.invalid"\n')
    try:
        h = wait_until(
            lambda: (x := host(d, "nowhere"))["state"] == "unreachable" and x,
            LINK_S,
            what="the host unreachable",
        )
        assert "Could not resolve hostname" in h["error"]
        assert "ssh exit status 255" in h["error"]
        assert h["retry_at"]
        assert h["connects"] == 0
        assert h["panes"] == 0
        # nothing else waits on it: status answers, local panes run, its error is shown
        with Client(d.socket, timeout=5) as cl:
            st = cl.call("server.status")
        assert [(x["name"], x["state"]) for x in st["hosts"]] == [("nowhere", "unreachable")]
        r = d.cli("--json", "new", "--name", "here", "--", "sleep", "60")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["pane_id"] in [p["id"] for p in d.call("pane.list")["panes"]]
        human = d.cli("status")
        assert human.returncode == 0, human.stderr
        assert "nowhere" in human.stdout
    finally:
        d.stop()
        assert not d.kill_leftovers()
