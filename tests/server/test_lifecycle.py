"""Daemon start-up and shutdown: singleton, stale socket, state-dir lock, sd_notify, snapshot and
restore (desktop-and-service.md §2, §3.2, §8; states.md §4, table §9.10)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from signaltty.proto.client import Client
from tests.conftest import DaemonProc, wait_until

PY = sys.executable


def run_daemon_cmd(d: DaemonProc, *extra: str, timeout: float = 15) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "signaltty", "daemon", "--state-dir", str(d.state_dir), *extra],
        env=d.env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )


def test_second_daemon_refused(daemon):
    r = run_daemon_cmd(daemon)
    assert r.returncode == 1
    assert f"a server is already listening on {daemon.socket}" in r.stderr


def test_state_dir_in_use(daemon, tmp_root):
    r = run_daemon_cmd(daemon, "--socket", str(tmp_root / "other.sock"))
    assert r.returncode == 1
    assert "state dir in use" in r.stderr


def test_stale_socket_removed(tmp_root):
    d = DaemonProc(tmp_root)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(d.socket)
    stale.close()  # file left behind, nobody listening
    d.start()
    try:
        assert d.call("server.status")["pid"] == d.proc.pid
    finally:
        d.stop()


def test_socket_path_too_long(tmp_root):
    d = DaemonProc(tmp_root)
    deep = tmp_root / ("x" * 60) / ("y" * 60)
    deep.mkdir(parents=True)
    r = run_daemon_cmd(d, "--socket", str(deep / "s.sock"))
    assert r.returncode == 1
    assert "at most 107" in r.stderr


def test_runtime_dir_fallback_without_xdg(tmp_root):
    d = DaemonProc(tmp_root)
    del d.env["SIGNALTTY_SOCKET"]
    del d.env["XDG_RUNTIME_DIR"]
    uid = os.getuid()
    expected = Path(f"/tmp/signaltty-{uid}/signaltty.sock")
    if expected.exists():
        pytest.skip("a daemon of this user already uses the default runtime dir")
    d.socket = str(expected)
    d.start()
    try:
        st = os.stat(expected.parent)
        assert st.st_mode & 0o777 == 0o700
        assert d.call("server.status")["socket"] == str(expected)
    finally:
        d.stop()
    assert not expected.exists()


def test_sd_notify_ready_stopping_watchdog(tmp_root):
    sock_path = str(tmp_root / "notify.sock")
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(sock_path)
    ns.settimeout(10)
    d = DaemonProc(tmp_root, {"NOTIFY_SOCKET": sock_path, "WATCHDOG_USEC": "400000"})
    d.start()
    msgs: list[str] = []
    try:
        wait_until(lambda: _collect(ns, msgs) and any("WATCHDOG=1" in m for m in msgs), timeout=10)
        # the pane environment never sees the notify socket
        out = tmp_root / "env.json"
        ws = d.call("workspace.create", {"name": "n"})["workspace"]
        d.call("pane.spawn", {"workspace_id": ws["id"], "argv": [PY, "-c", f"import os,json; json.dump(dict(os.environ), open({str(out)!r},'w'))"]})
        wait_until(lambda: out.exists() and out.stat().st_size > 0)
        env = json.loads(out.read_text())
        assert "NOTIFY_SOCKET" not in env
        assert "WATCHDOG_USEC" not in env
    finally:
        assert d.stop() == 0
    _collect(ns, msgs)
    ns.close()
    joined = "\n".join(msgs)
    assert "READY=1" in joined
    assert f"STATUS=listening on {d.socket}" in joined
    assert "STOPPING=1" in joined
    assert joined.index("READY=1") < joined.index("STOPPING=1")


def _collect(ns: socket.socket, msgs: list[str]) -> bool:
    ns.setblocking(False)
    try:
        while True:
            msgs.append(ns.recv(4096).decode())
    except BlockingIOError:
        pass
    finally:
        ns.setblocking(True)
    return True


def _spawn(d: DaemonProc, argv: list[str], name: str = "w") -> dict:
    ws = d.call("workspace.create", {"name": name, "cwd": str(d.root)})["workspace"]
    return d.call("pane.spawn", {"workspace_id": ws["id"], "argv": argv, "label": "lbl"})["pane"]


def test_sigterm_saves_snapshot_and_restore_states(tmp_root):
    d = DaemonProc(tmp_root)
    d.start()
    live = _spawn(d, [PY, "-c", "print('live tail text', flush=True)\nimport time; time.sleep(60)"], "alpha")
    done = _spawn(d, [PY, "-c", "print('finished tail text')"], "beta")
    with d.client(timeout=None) as cl:
        cl.call("wait", {"pane_id": done["id"], "until": "exited", "timeout_s": 20})
    d.call("pane.wait_for_output", {"pane_id": live["id"], "match": "live tail text", "timeout_s": 10})
    d.call("notify", {"pane_id": live["id"], "title": "keep me", "severity": "info"})
    pid = d.proc.pid
    kids = psutil.Process(pid).children(recursive=True)
    assert d.stop() == 0
    gone, alive = psutil.wait_procs(kids, timeout=5)
    assert not alive, "children must be stopped on shutdown"
    snap = json.loads((d.state_dir / "snapshot.json").read_text())
    assert snap["version"] == 1
    assert len(snap["panes"]) == 2
    assert (d.state_dir / "snapshot.json").stat().st_mode & 0o777 == 0o600
    assert "hooked" not in snap["panes"][0]
    assert "process_name" not in snap["panes"][0]

    d.start()
    try:
        panes = {p["id"]: p for p in d.call("pane.list")["panes"]}
        a, b = panes[live["id"]], panes[done["id"]]
        assert a["restore_state"] == "RESTORED"
        assert a["live"] == {"state": "exited", "code": None}
        assert a["attention"] == "unread"
        assert a["last_message"] == "keep me"
        assert a["label"] == "lbl"
        assert b["restore_state"] == "EXITED"
        assert (b["lifecycle"], b["attention"]) == ("done", "unread")
        assert b["live"] == {"state": "exited", "code": 0}
        assert "live tail text" in d.call("pane.read", {"pane_id": a["id"]})["text"]
        assert "finished tail text" in d.call("pane.read", {"pane_id": b["id"], "mode": "screen"})["text"]
        att = d.call("pane.attach", {"pane_id": a["id"], "mark_seen": False})
        assert att["live"] is False
        assert att["restore_state"] == "RESTORED"
        wss = d.call("workspace.list")["workspaces"]
        assert [w["handle"] for w in wss] == ["alpha", "beta"]
        # restore never starts a process
        assert psutil.Process(d.proc.pid).children() == []
        r = d.cli("--json", "attention")
        assert {x["pane_id"] for x in json.loads(r.stdout)["panes"]} == {a["id"], b["id"]}
    finally:
        d.stop()


def test_shutdown_method_refuses_with_live_panes_then_force(tmp_root):
    d = DaemonProc(tmp_root)
    d.start()
    _spawn(d, ["sleep", "60"])
    r = d.cli("shutdown")
    assert r.returncode == 1
    assert "--force" in r.stderr
    sub = d.client(timeout=None)
    sub.call("subscribe", {"events": ["server.*"]})
    r = d.cli("--json", "shutdown", "--force")
    assert r.returncode == 0
    assert json.loads(r.stdout) == {"stopped": True}
    ev = sub.next_event(timeout=10)
    assert ev["event"] == "server.will_shutdown"
    d.proc.wait(15)
    assert d.proc.returncode == 0
    assert not os.path.exists(d.socket)
    assert (d.state_dir / "snapshot.json").exists()
    d.proc = None


def test_corrupt_snapshot_moved_aside(tmp_root):
    d = DaemonProc(tmp_root)
    d.state_dir.mkdir(mode=0o700)
    (d.state_dir / "snapshot.json").write_text("{not json")
    d.start()
    try:
        assert d.call("pane.list")["panes"] == []
        assert list(d.state_dir.glob("snapshot.corrupt-*"))
    finally:
        d.stop()


def test_unsupported_snapshot_version_moved_aside(tmp_root):
    d = DaemonProc(tmp_root)
    d.state_dir.mkdir(mode=0o700)
    (d.state_dir / "snapshot.json").write_text('{"version": 7}')
    d.start()
    try:
        assert list(d.state_dir.glob("snapshot.unsupported-v7-*"))
    finally:
        d.stop()


def test_snapshot_repairs_missing_handles_and_pane_ids(tmp_root):
    d = DaemonProc(tmp_root)
    d.state_dir.mkdir(mode=0o700)
    snap = {
        "version": 1,
        "tabs": [],
        "workspaces": [{"id": "ws_1", "name": "My WS", "cwd": "/tmp", "created_at": "2026-01-01T00:00:00.000Z"}],
        "panes": [
            {"id": "pane_b", "workspace_id": "ws_1", "argv": ["x"], "created_at": "2026-01-01T00:00:02.000Z",
             "live": {"state": "live"}, "lifecycle": "working", "attention": "none", "future_field": 1},
            {"id": "pane_a", "workspace_id": "ws_1", "argv": ["y"], "created_at": "2026-01-01T00:00:01.000Z",
             "live": {"state": "exited", "code": 1}, "lifecycle": "failed", "attention": "unread",
             "agent": {"kind": "claude", "resume_argv": ["claude", "--resume", "S1"]}},
            {"id": "pane_bad", "workspace_id": "ws_1", "lifecycle": "nonsense"},
        ],
    }
    (d.state_dir / "snapshot.json").write_text(json.dumps(snap))
    d.start()
    try:
        ws = d.call("workspace.get", {"workspace_id": "my-ws"})
        assert ws["workspace"]["pane_ids"] == ["pane_a", "pane_b"]
        states = {p["id"]: (p["restore_state"], p["lifecycle"]) for p in ws["panes"]}
        assert states == {"pane_a": ("EXITED", "failed"), "pane_b": ("RESTORED", "working")}
    finally:
        d.stop()


def test_detach_starts_once(tmp_root):
    d = DaemonProc(tmp_root)
    r = d.cli("daemon", "--detach", "--state-dir", str(d.state_dir))
    try:
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(f"server started on {d.socket} (log: ")
        r2 = d.cli("daemon", "--detach", "--state-dir", str(d.state_dir))
        assert r2.returncode == 0
        assert r2.stdout.strip() == f"server already running on {d.socket}"
    finally:
        with Client(d.socket) as cl:
            pid = cl.call("server.status")["pid"]
            cl.call("server.shutdown", {"force": True})
        wait_until(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, timeout=15)
    log = d.state_dir / "signaltty.log"
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    assert any(x.get("event") == "daemon.ready" for x in lines)


def test_detach_says_why_the_daemon_did_not_start(tmp_root):
    """Issue 13 §5: the reason is printed, not a pointer to a file holding it."""
    d = DaemonProc(tmp_root)
    d.start()  # holds the state dir
    try:
        other = str(tmp_root / "other.sock")
        r = d.cli("daemon", "--detach", "--state-dir", str(d.state_dir), "--socket", other)
        assert r.returncode != 0
        assert "server did not start: " in r.stderr, r.stderr
        assert "state dir in use" in r.stderr, r.stderr
        assert d.call("server.status")["pid"]  # the running one is untouched
    finally:
        d.stop()


def test_invalid_config_uses_defaults_and_reports(tmp_root):
    d = DaemonProc(tmp_root)
    cfg = tmp_root / "config" / "signaltty"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text("[server]\nscreen_sweep_ms = 1\n")
    d.start()
    try:
        assert "screen_sweep_ms" in d.call("server.status")["config_error"]
    finally:
        d.stop()


def test_sighup_ignoring_child_is_killed_after_grace(tmp_root):
    d = DaemonProc(tmp_root)
    d.start()
    _spawn(d, [PY, "-c", "import signal,time\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\nprint('armed', flush=True)\ntime.sleep(120)"])
    pane_id = d.call("pane.list")["panes"][0]["id"]
    d.call("pane.wait_for_output", {"pane_id": pane_id, "match": "armed", "timeout_s": 10})
    kids = psutil.Process(d.proc.pid).children(recursive=True)
    t0 = time.monotonic()
    assert d.stop() == 0
    assert time.monotonic() - t0 >= 2.5  # SIGKILL only after the 3 s grace
    gone, alive = psutil.wait_procs(kids, timeout=5)
    assert not alive


def test_workspace_rename_close_and_handles(daemon):
    a = daemon.call("workspace.create", {"name": "Same Name"})["workspace"]
    b = daemon.call("workspace.create", {"name": "same  name!"})["workspace"]
    assert (a["handle"], b["handle"]) == ("same-name", "same-name-2")
    assert daemon.call("workspace.create", {"name": "日本"})["workspace"]["handle"] == "ws"
    r = daemon.call("workspace.rename", {"workspace_id": "same-name-2", "name": "Other"})
    assert r["workspace"]["name"] == "Other"
    assert r["workspace"]["handle"] == "same-name-2"
    from signaltty.proto.envelope import SignalttyError
    with pytest.raises(SignalttyError) as exc:
        daemon.call("workspace.rename", {"workspace_id": a["id"], "name": " \x1b[31m "})
    assert exc.value.code == "BAD_PARAMS"
    with pytest.raises(SignalttyError) as exc:
        daemon.call("workspace.create", {"cwd": "relative/dir"})
    assert exc.value.code == "BAD_PARAMS"
    assert exc.value.details["field"] == "cwd"
    p = daemon.call("pane.spawn", {"workspace_id": a["id"], "argv": ["sleep", "60"]})["pane"]
    sub = daemon.client(timeout=None)
    sub.call("subscribe", {"events": ["pane.closed", "workspace.closed"]})
    assert daemon.call("workspace.close", {"workspace_id": a["handle"]}) == {"closed": True}
    assert sub.next_event(timeout=5)["event"] == "pane.closed"
    ev = sub.next_event(timeout=5)
    assert ev["event"] == "workspace.closed"
    assert ev["payload"] == {"workspace_id": a["id"]}
    sub.close()
    assert [w["id"] for w in daemon.call("workspace.list")["workspaces"]][0] == b["id"]
    assert p["workspace_id"] == a["id"]


def test_nothing_a_pane_started_outlives_the_daemon(tmp_root):
    d = DaemonProc(tmp_root)
    d.start()
    marker = tmp_root / "gc.pid"
    # the child leaves a grandchild in its process group that ignores HUP and TERM
    code = (
        "import os,signal,time,sys\n"
        "if os.fork() == 0:\n"
        "    signal.signal(signal.SIGHUP, signal.SIG_IGN); signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"    open({str(marker)!r}, 'w').write(str(os.getpid()))\n"
        "    while True: time.sleep(1)\n"
        "time.sleep(0.5)\n"
    )
    _spawn(d, [PY, "-c", code])
    stubborn = _spawn(d, [PY, "-c", "import signal,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\nprint('armed', flush=True)\ntime.sleep(120)"], "s")
    d.call("pane.wait_for_output", {"pane_id": stubborn["id"], "match": "armed", "timeout_s": 10})
    wait_until(lambda: marker.exists() and marker.read_text())
    grandchild = psutil.Process(int(marker.read_text()))
    d.call("pane.close", {"pane_id": stubborn["id"]})  # TERM ignored; shutdown comes before the 5 s kill
    kids = psutil.Process(d.proc.pid).children(recursive=True)
    assert d.stop() == 0
    gone, alive = psutil.wait_procs([*kids, grandchild], timeout=5)
    assert not alive, alive
