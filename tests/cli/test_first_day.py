"""Issue 13 follow-ups found by a new user, end to end through the real CLI and daemon."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DaemonProc, wait_until

PY = sys.executable


def _subscribers(d: DaemonProc, n: int) -> list[subprocess.Popen[bytes]]:
    procs = [
        subprocess.Popen([PY, "-m", "signaltty", "subscribe"], env=d.env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=str(d.root))
        for _ in range(n)
    ]
    wait_until(lambda: d.call("server.status")["connections"]["open"] >= n + 1, timeout=20)
    return procs


def _daemon_log(d: DaemonProc) -> str:
    text = d.stderr()
    for f in d.state_dir.glob("*.log*"):
        text += f.read_text(errors="replace")
    return text


@pytest.mark.parametrize("how", ["sigint", "shutdown_force"])
def test_shutdown_with_subscribers_is_clean(tmp_root: Path, how: str):
    d = DaemonProc(tmp_root)
    d.start()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs = _subscribers(d, 3)
        assert d.proc is not None
        if how == "sigint":
            d.proc.send_signal(signal.SIGINT)
        else:
            r = d.cli("shutdown", "--force")
            assert r.returncode == 0, r.stderr
        assert d.proc.wait(20) == 0
        for p in procs:
            p.wait(20)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        d.stop()
        d.kill_leftovers()
    log = _daemon_log(d)
    assert "shutdown.complete" in log, log
    assert "Traceback" not in log, log
    assert "CancelledError" not in log, log
    assert "[error]" not in log, log


def jcli(d: DaemonProc, *args: str) -> dict:
    r = d.cli("--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ---------------------------------------------------------------- attach without a terminal


def test_attach_without_a_terminal_is_refused_like_tmux(daemon):
    pid = jcli(daemon, "new", "--", "cat")["pane_id"]
    before = daemon.call("workspace.list")["workspaces"]
    for args in (("pane", "attach", pid), ("new", "--attach", "--", "cat")):
        # stdin a file, stdout a pipe: nothing that could be a terminal
        r = subprocess.run([PY, "-m", "signaltty", *args], env=daemon.env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=30, cwd=str(daemon.root))
        assert r.returncode == 1, r
        assert b"not a terminal" in r.stderr, r.stderr
        assert r.stderr.count(b"\n") == 1, r.stderr
        assert r.stdout == b"", r
        assert b"\x1b" not in r.stderr, r
    # the refused `new --attach` created no workspace
    assert daemon.call("workspace.list")["workspaces"] == before
    assert daemon.call("pane.get", {"pane_id": pid})["pane"]["live"] == {"state": "live"}
    daemon.cli("pane", "close", pid)


# ---------------------------------------------------------------- a socket that does not exist


def test_missing_socket_reads_as_no_daemon(tmp_root: Path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNALTTY_", "XDG_"))}
    env.update(HOME=str(tmp_root), XDG_RUNTIME_DIR=str(tmp_root / "run"))
    for sock in ("/nonexistent", str(tmp_root / "gone" / "s.sock")):
        r = subprocess.run([PY, "-m", "signaltty", "--socket", sock, "status"], env=env,
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 1
        assert r.stderr.startswith(f"signaltty: cannot connect to {sock}: No such file"), r.stderr
        assert "not your signaltty daemon" not in r.stderr, r.stderr
        assert "mode" not in r.stderr, r.stderr
        r = subprocess.run([PY, "-m", "signaltty", "--socket", sock, "status", "--format", "tmux"], env=env,
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r
        assert "off" in r.stdout, r
        assert r.stderr == "", r
        r = subprocess.run([PY, "-m", "signaltty", "--json", "--socket", sock, "status"], env=env,
                           capture_output=True, text=True, timeout=30)
        assert json.loads(r.stderr)["error"]["code"] == "NO_DAEMON", r.stderr


# ---------------------------------------------------------------- --json usage errors


@pytest.mark.parametrize(
    "argv",
    [["--json", "pane", "bogus"], ["pane", "get", "--json"], ["--json", "status", "--format", "nope"],
     ["--json", "new", "-e", "NOEQUALS"]],
)
def test_json_usage_errors_are_json(argv, tmp_root: Path):
    env = {**os.environ, "SIGNALTTY_SOCKET": str(tmp_root / "none.sock")}
    r = subprocess.run([PY, "-m", "signaltty", *argv], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert r.stdout == ""
    err = json.loads(r.stderr)
    assert err["error"]["code"] == "USAGE", err
    assert err["error"]["message"].startswith("signaltty"), err
    # without --json: argparse's usage text, as before
    plain = [a for a in argv if a != "--json"]
    r = subprocess.run([PY, "-m", "signaltty", *plain], env=env, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("usage: "), r.stderr


# ---------------------------------------------------------------- --keys and a trailing id


def test_keys_do_not_swallow_a_trailing_pane_id(daemon):
    pid = jcli(daemon, "new", "--", "cat")["pane_id"]
    short = pid[:13]
    r = daemon.cli("pane", "input", "--data", "first", "--keys", "Enter", short)
    assert r.returncode == 0, r.stderr
    r = daemon.cli("pane", "input", "--keys", "Enter", pid)  # the full id too
    assert r.returncode == 0, r.stderr
    r = daemon.cli("pane", "wait-output", pid, "--match", "first", "--timeout", "20")
    assert r.returncode == 0, r.stderr
    # no id anywhere: a usage error that shows the right order, nothing typed
    r = daemon.cli("pane", "input", "--keys", "Enter")
    assert r.returncode == 2, r.stderr
    assert "pane input ID --keys" in r.stderr, r.stderr
    daemon.cli("pane", "close", pid)


# ---------------------------------------------------------------- config errors


def test_config_errors_all_reported_and_warned_by_detach(tmp_root: Path):
    d = DaemonProc(tmp_root)
    cfg = tmp_root / "config" / "signaltty" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("[server]\nidle_timeout_s = \"soon\"\n[notifications]\nmode = \"loud\"\n")
    r = d.cli("daemon", "--detach", "--state-dir", str(d.state_dir))
    try:
        assert r.returncode == 0, r.stderr
        assert "warning: config error" in r.stderr, r.stderr
        assert "server.idle_timeout_s" in r.stderr, r.stderr
        assert "notifications.mode" in r.stderr, r.stderr
        err = d.call("server.status")["config_error"]
        assert "server.idle_timeout_s" in err
        assert "notifications.mode" in err
    finally:
        d.cli("shutdown", "--force")
        wait_until(lambda: not Path(d.socket).exists(), timeout=20)


def test_explicit_missing_config_is_an_error_default_missing_is_fine(tmp_root: Path):
    d = DaemonProc(tmp_root)
    missing = tmp_root / "missing.toml"
    for extra in ([], ["--detach"]):
        r = d.cli("daemon", *extra, "--config", str(missing), "--state-dir", str(d.state_dir))
        assert r.returncode == 1, r
        assert r.stdout == "", r
        assert r.stderr == f"signaltty: config file {missing}: no such file\n", r.stderr
        assert not Path(d.socket).exists()
    d.start()  # no config file at the default path: fine
    try:
        assert d.call("server.status").get("config_error") is None
    finally:
        d.stop()


def test_detach_failure_has_one_prefix(daemon):
    """A second daemon on the same state dir fails; its reason is not double-prefixed."""
    other = str(daemon.root / "other.sock")
    r = daemon.cli("--socket", other, "daemon", "--detach", "--state-dir", str(daemon.state_dir))
    assert r.returncode == 1
    assert r.stderr.startswith("signaltty: server did not start: "), r.stderr
    assert r.stderr.count("signaltty:") == 1, r.stderr


# ---------------------------------------------------------------- smaller things


def test_workspace_id_prefixes_resolve_like_pane_ids(daemon):
    a = jcli(daemon, "new", "--name", "alpha", "--", "cat")
    b = jcli(daemon, "new", "--name", "beta", "--", "cat")
    wa, wb = a["workspace_id"], b["workspace_id"]
    common = 3  # "ws_"
    while wa[common] == wb[common]:
        common += 1
    got = jcli(daemon, "workspace", "get", wa[: common + 1])
    assert got["workspace"]["id"] == wa
    got = jcli(daemon, "pane", "list", "--workspace", wb[: common + 1])
    assert [p["id"] for p in got["panes"]] == [b["pane_id"]]
    r = daemon.cli("workspace", "get", "ws_")  # matches both? no: "ws_" alone abbreviates nothing
    assert r.returncode == 1, r.stderr
    assert "NO_SUCH_WORKSPACE" in r.stderr, r.stderr
    # an ambiguous prefix: an error listing the matches (17 workspaces: two share a first hex digit)
    by_first: dict[str, list[str]] = {}
    for w in [wa, wb] + [daemon.call("workspace.create", {"name": f"x{i}"})["workspace"]["id"] for i in range(15)]:
        by_first.setdefault(w[:4], []).append(w)
    prefix, shared = next((k, v) for k, v in by_first.items() if len(v) > 1)
    r = daemon.cli("workspace", "get", prefix)
    assert r.returncode == 1, r.stderr
    assert "AMBIGUOUS" in r.stderr, r.stderr
    assert all(w in r.stderr for w in shared), r.stderr
    assert jcli(daemon, "workspace", "get", "alpha")["workspace"]["id"] == wa  # handles still work
    for p in (a["pane_id"], b["pane_id"]):
        daemon.cli("pane", "close", p)


def test_plain_status_shows_notifications_and_dbus(daemon):
    r = daemon.cli("status")
    assert r.returncode == 0, r.stderr
    # the fixture turns both off through the environment
    assert "notifications off (notifications.enabled = false, or SIGNALTTY_NOTIFY=0)" in r.stdout, r.stdout
    assert "D-Bus      off (dbus.enabled = false, or SIGNALTTY_DBUS=0)" in r.stdout, r.stdout


def test_hook_event_help_states_the_wait_timeout_limit():
    r = subprocess.run([PY, "-m", "signaltty", "hook-event", "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    assert "--wait-timeout SECONDS" in r.stdout
    assert "1 to 120 (default 120)" in r.stdout, r.stdout
    assert "hidden_wait_s" in r.stdout, r.stdout


@pytest.mark.parametrize(("command", "absent", "present"), [
    (["completion"], ["--json", "--socket"], ["--install", "SHELL"]),
    (["top"], ["--json"], ["--socket"]),
])
def test_help_offers_only_options_that_do_something(command, absent, present):
    r = subprocess.run([PY, "-m", "signaltty", *command, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0
    assert not [a for a in absent if a in r.stdout], r.stdout
    assert all(p in r.stdout for p in present), r.stdout
