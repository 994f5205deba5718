"""``signaltty service install|uninstall|status`` through the real CLI, in a hermetic home
(desktop-and-service.md §3.1, §3.3, §4.1, §4.2). ``systemctl`` is a recording stand-in on
PATH here; the real user manager is exercised in test_systemd_user.py."""

from __future__ import annotations

import configparser
import json
import os
import plistlib
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from signaltty.system import service
from tests.conftest import DaemonProc
from tests.system.test_service_files import _verify

FAKE_SYSTEMCTL = """#!/bin/sh
echo "$*" >> "$FAKE_SYSTEMCTL_LOG"
case "$2" in
  is-active) cat "$FAKE_SYSTEMCTL_STATE" 2>/dev/null || echo inactive; [ "$(cat "$FAKE_SYSTEMCTL_STATE" 2>/dev/null)" = active ] ;;
  is-enabled) echo enabled ;;
  start) echo active > "$FAKE_SYSTEMCTL_STATE" ;;
  disable) echo inactive > "$FAKE_SYSTEMCTL_STATE" ;;
esac
exit 0
"""


class Home:
    def __init__(self, root: Path, with_systemctl: bool = True) -> None:
        self.root = root
        self.d = DaemonProc(root)
        bindir = root / "fakebin"
        bindir.mkdir()
        self.log = root / "systemctl.log"
        self.state = root / "systemctl.state"
        if with_systemctl:
            fake = bindir / "systemctl"
            fake.write_text(FAKE_SYSTEMCTL)
            fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
        exe_dir = str(Path(sys.executable).parent)
        self.d.env.update(
            XDG_DATA_HOME=str(root / "data"),
            FAKE_SYSTEMCTL_LOG=str(self.log),
            FAKE_SYSTEMCTL_STATE=str(self.state),
            PATH=os.pathsep.join([str(bindir), exe_dir, "/usr/bin", "/bin"])
            if with_systemctl
            else os.pathsep.join([exe_dir, str(_bin_without_systemctl(root))]),
        )
        self.unit = root / "config" / "systemd" / "user" / "signaltty.service"
        self.dbus = root / "data" / "dbus-1" / "services" / "dev.signaltty.Signaltty.service"

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.d.cli(*args)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


def _bin_without_systemctl(root: Path) -> Path:
    """A PATH dir with sh and friends but no systemctl."""
    d = root / "nosysbin"
    d.mkdir()
    for tool in ("sh", "env", "cat"):
        found = shutil.which(tool)
        if found:
            (d / tool).symlink_to(found)
    return d


def _ini(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return parser


def test_install_writes_unit_and_activation_and_starts(tmp_root, tmp_path):
    h = Home(tmp_root)
    r = h.cli("service", "install")
    assert r.returncode == 0, r.stderr
    exe = shutil.which("signaltty", path=h.d.env["PATH"])
    text = h.unit.read_text()
    assert text.splitlines()[0] == service.MARKER
    unit = _ini(text)
    assert unit["Service"]["ExecStart"] == f"{exe} daemon"
    assert os.path.isabs(exe)
    assert unit["Service"]["Type"] == "notify"
    assert unit["Service"]["KillMode"] == "process"
    assert unit["Service"]["ExecReload"].endswith(" restart")
    result = _verify(text, tmp_path)
    assert result.stderr == ""
    assert result.returncode == 0
    act = _ini(h.dbus.read_text())["D-BUS Service"]
    assert dict(act) == {
        "Name": "dev.signaltty.Signaltty",
        "Exec": f"{exe} daemon",
        "SystemdService": "signaltty.service",
    }
    assert h.calls() == [
        "--user is-active signaltty",
        "--user daemon-reload",
        "--user enable signaltty",
        "--user start signaltty",
    ]
    st = json.loads(h.cli("service", "status", "--json").stdout)
    assert st == {
        "platform": "linux",
        "manager": "systemd",
        "unit_file": str(h.unit),
        "installed": True,
        "managed": True,
        "enabled": True,
        "active": True,
        "exec": exe,
        "exec_exists": True,
        "dbus_activation_file": str(h.dbus),
    }


def test_reinstall_never_restarts(tmp_root):
    h = Home(tmp_root)
    assert h.cli("service", "install").returncode == 0
    h.log.unlink()
    r = h.cli("service", "install")
    assert r.returncode == 0
    assert "unchanged" in r.stdout
    assert "restart with" not in r.stdout
    assert "--user start signaltty" not in h.calls()
    assert not any("restart" in c for c in h.calls())
    h.unit.write_text(
        h.unit.read_text().replace("RestartSec=2", "RestartSec=3")
    )  # an older version
    r = h.cli("service", "install")
    assert "restart with: systemctl --user restart signaltty (live panes will end)" in r.stdout
    assert not any("restart" in c or c.endswith("start signaltty") for c in h.calls())


def test_foreign_unit_needs_force(tmp_root):
    h = Home(tmp_root)
    h.unit.parent.mkdir(parents=True)
    h.unit.write_text("[Service]\nExecStart=/usr/bin/mine\n")
    r = h.cli("service", "install")
    assert r.returncode == 1
    assert "--force" in r.stderr
    assert h.unit.read_text() == "[Service]\nExecStart=/usr/bin/mine\n"
    assert h.calls() == []
    r = h.cli("service", "install", "--force", "--no-enable", "--no-start", "--no-dbus-activation")
    assert r.returncode == 0, r.stderr
    assert h.unit.read_text().startswith(service.MARKER)
    assert not h.dbus.exists()
    assert h.calls() == ["--user is-active signaltty", "--user daemon-reload"]


def test_without_systemctl_files_and_manual_commands(tmp_root):
    h = Home(tmp_root, with_systemctl=False)
    r = h.cli("service", "install")
    assert r.returncode == 0
    assert h.unit.exists()
    assert h.dbus.exists()
    assert (
        "systemctl not found; run: systemctl --user daemon-reload; systemctl --user enable signaltty"
        in r.stderr
    )


def test_uninstall_refuses_live_panes_then_removes(tmp_root):
    h = Home(tmp_root)
    assert h.cli("service", "install").returncode == 0
    h.d.start()
    try:
        ws = h.d.call("workspace.create", {"name": "x"})["workspace"]
        h.d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "30"]})
        r = h.cli("service", "uninstall")
        assert r.returncode == 1
        assert "live panes" in r.stderr
        assert h.unit.exists()
        r = h.cli("service", "uninstall", "--force")
        assert r.returncode == 0, r.stderr
    finally:
        h.d.stop()
    assert not h.unit.exists()
    assert not h.dbus.exists()
    assert "--user disable --now signaltty" in h.calls()
    st = json.loads(h.cli("service", "status", "--json").stdout)
    assert st["installed"] is False
    assert st["dbus_activation_file"] is None


def test_plist_round_trips(tmp_path):
    data = service.render_plist("/Applications/sig naltty/bin/signaltty", tmp_path / "st&ate")
    plist = plistlib.loads(data)
    assert plist["ProgramArguments"] == ["/Applications/sig naltty/bin/signaltty", "daemon"]
    assert plist["StandardErrorPath"] == str(tmp_path / "st&ate" / "daemon.out")
    assert plist["Label"] == "dev.signaltty.daemon"
    assert plist["LimitLoadToSessionType"] == "Aqua"
    assert plistlib.loads(plistlib.dumps(plist)) == plist


@pytest.mark.parametrize("exe", ["/opt/my tools/signaltty", "/opt/100%/signaltty"])
def test_unusual_executable_paths_render_valid_units(exe, tmp_path):
    text = service.render_unit(exe)
    line = next(x for x in text.splitlines() if x.startswith("ExecStart="))
    assert line in (f'ExecStart="{exe}" daemon', "ExecStart=/opt/100%%/signaltty daemon")
