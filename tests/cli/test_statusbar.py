"""``signaltty status --format waybar|i3blocks|tmux`` through the real CLI against a real
daemon with panes in known states; without a daemon, with a stranger's socket and with a
daemon that never answers (issue 13 §11, docs/status-bars.md)."""

from __future__ import annotations

import json
import os
import socket
import sys

import pytest

from tests.cli.test_top import _pane, _permission_agent, _spawn, _verdict
from tests.conftest import DaemonProc, wait_until

PY = sys.executable


def bar(d: DaemonProc, fmt: str, env: dict[str, str] | None = None) -> tuple[str, str]:
    """Run the bar command; it must exit 0 whatever happens. Returns (stdout, stderr)."""
    r = d.cli("status", "--format", fmt) if env is None else _cli_env(d, env, fmt)
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr


def _cli_env(d: DaemonProc, env: dict[str, str], fmt: str):
    import subprocess

    return subprocess.run(
        [PY, "-m", "signaltty", "status", "--format", fmt],
        env={**d.env, **env},
        capture_output=True,
        text=True,
        timeout=30,
        cwd=str(d.root),
    )


def test_bars_count_panes_needing_you(daemon):
    job = _spawn(daemon, "build", [PY, "-c", "print('ok')"], "job<b>&")
    _spawn(daemon, "shell", ["cat"], "quiet")
    perm, log = _permission_agent(daemon, "p", "make deploy")
    wait_until(
        lambda: (_pane(daemon, perm)["pending_decision"] or {}).get("answerable"), timeout=20
    )
    wait_until(lambda: _pane(daemon, job)["attention"] == "unread", timeout=20)

    out, err = bar(daemon, "waybar")
    assert out.count("\n") == 1
    assert err == ""
    w = json.loads(out)
    assert w["text"] == "1 perm · 1 unread"
    assert w["class"] == w["alt"] == "permission"
    assert w["percentage"] == 67  # 2 of 3 panes need you
    tip = w["tooltip"].splitlines()
    assert tip[:2] == ["1 permission_required", "1 unread"]
    assert "permission_required: claude [p]" in tip
    assert "unread: python [job&lt;b&gt;&amp;]" in tip  # Pango markup escaped

    out, _ = bar(daemon, "i3blocks")
    assert out.splitlines() == ["1 perm · 1 unread", "P1 U1", "#FF8700"]

    out, _ = bar(daemon, "tmux")
    assert out == "#[fg=colour208,bold]1 perm#[default] #[fg=cyan]1 unread#[default]\n"

    # nothing needs you any more: idle
    daemon.call("pane.mark_seen", {"pane_id": job})
    daemon.call("decision.answer", {"pane_id": perm, "verdict": "deny"})
    assert _verdict(log)["behavior"] == "deny"
    wait_until(lambda: _pane(daemon, perm)["attention"] == "none", timeout=10)
    w = json.loads(bar(daemon, "waybar")[0])
    assert (w["text"], w["class"], w["percentage"]) == ("idle", "idle", 0)
    assert w["tooltip"] == "signaltty: 3 panes, none needs you"
    assert bar(daemon, "i3blocks")[0].splitlines() == ["idle", "idle", "#8A8A8A"]
    assert bar(daemon, "tmux")[0] == "#[fg=colour244]idle#[default]\n"


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        (
            "waybar",
            '{"text": "off", "alt": "off", "tooltip": "signaltty: the daemon is not running", '
            '"class": "off", "percentage": 0}\n',
        ),
        ("i3blocks", "off\noff\n#6C6C6C\n"),
        ("tmux", "#[fg=colour242]off#[default]\n"),
    ],
)
def test_no_daemon_is_a_quiet_off(daemon, tmp_root, fmt, expected):
    gone = tmp_root / "gone"
    gone.mkdir(mode=0o700)
    out, err = bar(daemon, fmt, {"SIGNALTTY_SOCKET": str(gone / "s.sock")})
    assert (out, err) == (expected, "")
    # a missing runtime directory too (the daemon never ran)
    out, err = bar(daemon, fmt, {"SIGNALTTY_SOCKET": str(tmp_root / "nowhere" / "s.sock")})
    assert (out, err) == (expected, "")


def test_untrusted_socket_and_silent_daemon_say_na(daemon, tmp_root):
    open_dir = tmp_root / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o755)  # group/other may enter: not a socket to trust
    planted = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        # a socket that is there (a missing one is simply "no daemon": off)
        planted.bind(str(open_dir / "s.sock"))
        planted.listen(1)
        out, err = bar(daemon, "waybar", {"SIGNALTTY_SOCKET": str(open_dir / "s.sock")})
    finally:
        planted.close()
    w = json.loads(out)
    assert (w["text"], w["class"]) == ("n/a", "unavailable")
    assert "mode 0755" in w["tooltip"]
    assert "mode 0755" in err

    # a listener of ours that never answers: the bar gives up after its limit, it does not hang
    quiet = tmp_root / "quiet"
    quiet.mkdir(mode=0o700)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        srv.bind(str(quiet / "s.sock"))
        srv.listen(1)
        out, err = bar(daemon, "tmux", {"SIGNALTTY_SOCKET": str(quiet / "s.sock")})
    finally:
        srv.close()
    assert out == "#[fg=colour242]n/a#[default]\n"
    assert "no answer within 2 s" in err


def test_status_without_format_is_unchanged(daemon):
    r = daemon.cli("status")
    assert r.returncode == 0
    assert r.stdout.startswith("signaltty ")
    r = daemon.cli("status", "--format", "polybar")
    assert r.returncode == 2
    assert "invalid choice" in r.stderr


def test_an_unreachable_watched_host_is_said_in_every_format() -> None:
    """A watched host's prompt that cannot be answered now (issue 16): the bar says the host
    is offline instead of only counting it."""
    from signaltty.cli import statusbar

    panes = [
        {"id": "devbox/pane_1", "host": "devbox", "reachable": False, "attention": "none"},
        {"id": "pane_2", "attention": "permission_required", "title": "api"},
    ]
    assert statusbar.tmux(panes).endswith(" · devbox offline")
    assert statusbar.i3blocks(panes).splitlines()[0] == "1 perm · devbox offline"
    assert "devbox offline" in json.loads(statusbar.waybar(panes))["text"]
    for p in panes:
        p["reachable"] = True
    assert "offline" not in statusbar.tmux(panes)
