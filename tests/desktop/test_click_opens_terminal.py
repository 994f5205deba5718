"""Clicking a notification opens the person's terminal attached to the pane (issue 13 item 6).

End to end on a private bus: the test notification server "clicks" the body (action
``default``); the daemon starts the terminal command from ``[desktop] terminal`` (or
``$TERMINAL``). The terminal here is a stand-in written by the test: it records its argv,
then does what a terminal does — runs the command it was given in a new PTY — until the
attach client shows the pane's screen, detaches with Ctrl+] and exits. So the argv is not
only well-formed, it really attaches to this daemon's pane. A terminal command that does
not exist is logged and the pane is still marked seen.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import DaemonProc, wait_until
from tests.desktop.busfix import NotificationServer, PrivateBus

MARKER = "pane-marker-4711"

# A terminal emulator reduced to what matters: run argv in a PTY, show it, let the user
# press Ctrl+] once the pane is on screen.
STAND_IN = """#!{python}
import json, os, pty, select, sys, time
args = sys.argv[1:]
record = {{"argv": sys.argv, "cwd": os.getcwd(),
          "env": {{k: os.environ.get(k) for k in ("NOTIFY_SOCKET", "SIGNALTTY_SOCKET")}}}}
while args and args[0] in ("--title", "-e"):
    args = args[2:] if args[0] == "--title" else args[1:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(args[0], args)
out, sent, deadline = b"", False, time.monotonic() + 20
while time.monotonic() < deadline:
    if select.select([fd], [], [], 0.2)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    if not sent and {marker!r}.encode() in out:
        os.write(fd, b"\\x1d")  # Ctrl+]: detach
        sent = True
_, status = os.waitpid(pid, 0)
record["output"] = out.decode("utf-8", "replace")[-4000:]
record["status"] = status
tmp = {out_path!r} + ".tmp"
with open(tmp, "w") as fh:
    json.dump(record, fh)
os.replace(tmp, {out_path!r})
"""


def _stand_in(root: Path) -> tuple[Path, Path]:
    script, record = root / "fake-term", root / "fake-term.json"
    script.write_text(
        STAND_IN.format(python=sys.executable, marker=MARKER, out_path=str(record))
    )
    script.chmod(0o755)
    return script, record


def _daemon(root: Path, bus: PrivateBus, config: str, **env: str) -> DaemonProc:
    (root / "config" / "signaltty").mkdir(parents=True, exist_ok=True)
    (root / "config" / "signaltty" / "config.toml").write_text(
        "[notifications]\nsettle_ms = 100\n" + config
    )
    d = DaemonProc(root, {**bus.env(), "SIGNALTTY_DBUS": "0", "SIGNALTTY_NOTIFY": "1", **env})
    for key in ("DISPLAY", "WAYLAND_DISPLAY", "TERMINAL"):  # deterministic: the test sets them
        if key not in env:
            d.env.pop(key, None)
    d.start()
    return d


def _notified_pane(d: DaemonProc, server: NotificationServer) -> tuple[str, int]:
    wait_until(lambda: d.call("server.status")["notifications"]["available"])
    ws = d.call("workspace.create", {"name": "click"})["workspace"]
    code = f"print({MARKER!r}, flush=True); import time; time.sleep(60)"
    pane = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": [sys.executable, "-c", code]})
    pane_id = pane["pane"]["id"]
    wait_until(lambda: MARKER in d.call("pane.read", {"pane_id": pane_id})["text"])
    d.call("notify", {"pane_id": pane_id, "title": "Build", "body": "done", "severity": "warning"})
    nid, info = server.wait_shown(lambda i: i["summary"].endswith("· Build"))
    assert "default" in info["actions"][0::2]  # the body click is offered
    assert d.call("pane.get", {"pane_id": pane_id})["pane"]["attention"] == "warning"
    return pane_id, nid


def _log(d: DaemonProc) -> list[dict]:
    text = (d.state_dir / "signaltty.log").read_text()
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _events(d: DaemonProc, name: str) -> list[dict]:
    return [e for e in _log(d) if e.get("event") == name]


@pytest.mark.parametrize("how", ["config", "TERMINAL"])
def test_click_opens_the_terminal_attached_to_the_pane(tmp_root, bus, notif_server, how):
    notif_server.reset()
    script, record = _stand_in(tmp_root)
    if how == "config":
        conf = f'[desktop]\nterminal = ["{script}", "--title", "st {{pane}}"]\n'
        d = _daemon(tmp_root, bus, conf)
    else:
        d = _daemon(tmp_root, bus, "", TERMINAL=str(script))
    try:
        pane_id, nid = _notified_pane(d, notif_server)
        notif_server.press(nid, "default")
        rec = json.loads(wait_until(lambda: record.exists() and record.read_text(), timeout=30))
        argv = rec["argv"]
        before = ["--title", f"st {pane_id}"] if how == "config" else ["-e"]
        assert argv[: 1 + len(before)] == [str(script), *before]
        attach = argv[1 + len(before) :]
        # the daemon's own signaltty (console script or python -m), told which socket
        assert attach[-5:] == ["--socket", d.socket, "pane", "attach", pane_id], attach
        assert attach[0] in (str(Path(sys.executable).parent / "signaltty"), sys.executable)
        # the command really attached: the pane's screen came through, then it detached
        assert MARKER in rec["output"], rec["output"]
        assert "detached" in rec["output"], rec["output"]
        assert rec["status"] == 0
        assert rec["env"] == {"NOTIFY_SOCKET": None, "SIGNALTTY_SOCKET": None}
        assert rec["cwd"] == str(d.home)
        pane = d.call("pane.get", {"pane_id": pane_id})["pane"]
        assert pane["attention"] == "none"
        assert pane["live"] == {"state": "live"}
        # reaped by the daemon; no DISPLAY here, which is said once per click
        wait_until(lambda: _events(d, "desktop.terminal_exited"))
        assert _events(d, "desktop.terminal_exited")[0]["exit_code"] == 0
        assert len(_events(d, "desktop.terminal_no_display")) == 1
    finally:
        d.stop()
        assert not d.kill_leftovers()


def test_terminal_that_does_not_exist_is_logged_and_the_pane_still_seen(
    tmp_root, bus, notif_server
):
    notif_server.reset()
    missing = tmp_root / "no-such-terminal"
    d = _daemon(tmp_root, bus, f'[desktop]\nterminal = ["{missing}", "-e"]\n', DISPLAY=":99")
    try:
        pane_id, nid = _notified_pane(d, notif_server)
        notif_server.press(nid, "default")
        failed = wait_until(lambda: _events(d, "desktop.terminal_failed"))
        assert failed[0]["pane_id"] == pane_id
        reason = failed[0]["reason"]
        assert "No such file or directory" in reason, reason
        assert str(missing) in reason, reason
        assert "from config" in reason
        assert d.call("pane.get", {"pane_id": pane_id})["pane"]["attention"] == "none"
        assert not _events(d, "desktop.terminal_no_display")  # DISPLAY is set here
        assert not any("Traceback" in str(e) for e in _log(d))
        assert d.call("server.status")["notifications"]["available"] is True
    finally:
        d.stop()
        assert not d.kill_leftovers()


def test_terminal_setting_is_strict(tmp_root, bus):
    """A string instead of an argv list makes the config invalid (defaults, config_error)."""
    d = _daemon(tmp_root, bus, '[desktop]\nterminal = "foot -e"\n', SIGNALTTY_NOTIFY="0")
    try:
        err = d.call("server.status")["config_error"]
        assert err
        assert "desktop.terminal" in err
        assert "valid list" in err
    finally:
        d.stop()
