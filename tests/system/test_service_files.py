"""Service-manager files and their loader (Spec: desktop-and-service.md §3.1, §3.3, §4.1)."""

from __future__ import annotations

import configparser
import os
import plistlib
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from signaltty.system import resources

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "systemd" / "signaltty.service"
PLIST = REPO / "launchd" / "dev.signaltty.daemon.plist"
DBUS = REPO / "contrib" / "dbus" / "dev.signaltty.Signaltty.service"


def _ini(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string(text)
    return parser


# --------------------------------------------------------------------------- systemd unit


def test_unit_content() -> None:
    text = UNIT.read_text(encoding="utf-8")
    assert text.splitlines()[0] == "# managed by signaltty service install"
    unit = _ini(text)
    assert unit.sections() == ["Unit", "Service", "Install"]
    assert dict(unit["Unit"]) == {"Description": "signaltty agent terminal supervisor"}
    assert dict(unit["Service"]) == {
        "Type": "notify",
        "NotifyAccess": "main",
        "ExecStart": "%h/.local/bin/signaltty daemon",
        "ExecReload": "%h/.local/bin/signaltty restart",
        "Restart": "on-failure",
        "RestartSec": "2",
        "TimeoutStartSec": "30",
        "TimeoutStopSec": "15",
        "KillMode": "process",
        "FileDescriptorStoreMax": "4096",
        "KillSignal": "SIGTERM",
        "WatchdogSec": "30",
        "Environment": "SIGNALTTY_SERVICE=systemd SIGNALTTY_FDSTORE=1",
    }
    assert dict(unit["Install"]) == {"WantedBy": "default.target"}


def _systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("systemd-analyze is required when CI is set")
        pytest.skip("systemd-analyze not installed")
    return found


def _verify(unit_text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``systemd-analyze --user verify`` on ``unit_text`` saved as signaltty.service.

    A user-scope manager needs $XDG_RUNTIME_DIR (else "Failed to initialize manager: No
    such device or address"). A private 0700 runtime dir and an empty HOME keep the run
    independent of any real session and of the user's own units and drop-ins.
    """
    tool = _systemd_analyze()
    unit_dir = tmp_path / "units"
    unit_dir.mkdir()
    unit_file = unit_dir / "signaltty.service"
    unit_file.write_text(unit_text, encoding="utf-8")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SYSTEMD_", "XDG_")) and k not in ("HOME", "NOTIFY_SOCKET")
    }
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(runtime))
    return subprocess.run(
        [tool, "--user", "verify", str(unit_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# An existing absolute executable, as `service install` renders it.
_EXEC_START = f"{sys.executable} -m signaltty daemon"


def _with_exec_start(text: str, command: str) -> str:
    reload = command.removesuffix(" daemon") + " restart"
    lines = [
        f"ExecStart={command}"
        if line.startswith("ExecStart=")
        else f"ExecReload={reload}"
        if line.startswith("ExecReload=")
        else line
        for line in text.splitlines()
    ]
    return "\n".join(lines) + "\n"


def test_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    text = _with_exec_start(UNIT.read_text(encoding="utf-8"), _EXEC_START)
    result = _verify(text, tmp_path)
    assert result.stderr == ""
    assert result.returncode == 0


def test_systemd_analyze_verify_would_catch_a_bad_key(tmp_path: Path) -> None:
    """Control case: the harness above really surfaces systemd's complaints."""
    text = _with_exec_start(UNIT.read_text(encoding="utf-8"), _EXEC_START)
    result = _verify(text.replace("KillMode=process", "KilMode=process"), tmp_path)
    assert "KilMode" in result.stderr


# --------------------------------------------------------------------------- launchd plist

PLIST_KEYS = {
    "Label",
    "ProgramArguments",
    "RunAtLoad",
    "KeepAlive",
    "ThrottleInterval",
    "ProcessType",
    "LimitLoadToSessionType",
    "ExitTimeOut",
    "EnvironmentVariables",
    "StandardErrorPath",
}


def test_plist_content() -> None:
    plist = plistlib.loads(PLIST.read_bytes())
    assert set(plist) == PLIST_KEYS
    assert plist["Label"] == "dev.signaltty.daemon"
    assert plist["ProgramArguments"] == ["@SIGNALTTY_BIN@", "daemon"]
    assert plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["ThrottleInterval"] == 5
    assert plist["ProcessType"] == "Interactive"
    assert plist["LimitLoadToSessionType"] == "Aqua"
    assert plist["ExitTimeOut"] == 15
    assert plist["EnvironmentVariables"] == {"SIGNALTTY_SERVICE": "launchd"}
    assert plist["StandardErrorPath"] == "@STATE_DIR@/daemon.out"


# --------------------------------------------------------------------------- D-Bus activation


def test_dbus_activation_file() -> None:
    service = _ini(DBUS.read_text(encoding="utf-8"))
    assert service.sections() == ["D-BUS Service"]
    assert dict(service["D-BUS Service"]) == {
        "Name": "dev.signaltty.Signaltty",
        "Exec": "/usr/bin/env signaltty daemon",
        "SystemdService": UNIT.name,
    }


# --------------------------------------------------------------------------- resources


@pytest.mark.parametrize(
    ("name", "path"),
    [
        (resources.SYSTEMD_UNIT, UNIT),
        (resources.LAUNCHD_PLIST, PLIST),
        (resources.DBUS_ACTIVATION, DBUS),
    ],
)
def test_service_template_from_checkout(name: str, path: Path) -> None:
    assert resources.service_template(name) == path.read_text(encoding="utf-8")


def test_source_dirs_match_pyproject_force_include() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    force = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    service = {
        target.removeprefix("signaltty/_service/"): source
        for source, target in force.items()
        if target.startswith("signaltty/_service/")
    }
    assert service == dict(resources.SERVICE_SOURCE_DIRS)
    assert force["integrations"] == "signaltty/_integrations"


@pytest.mark.parametrize(
    "name",
    ["", "/etc/passwd", "systemd/../../etc/passwd", "systemd", "other/x.service", "systemd//x"],
)
def test_service_template_rejects_bad_names(name: str) -> None:
    with pytest.raises(ValueError, match="invalid"):
        resources.service_template(name)


def test_missing_templates_raise_file_not_found() -> None:
    with pytest.raises(FileNotFoundError):
        resources.service_template("systemd/nope.service")
    with pytest.raises(FileNotFoundError):
        resources.integration_template("nope/missing.tmpl")
    with pytest.raises(ValueError, match="invalid"):
        resources.integration_template("../pyproject.toml")


def test_installed_package_data_wins(tmp_path: Path) -> None:
    """A wheel layout (signaltty/_service/…, signaltty/_integrations/…) is read first."""
    site = tmp_path / "site"
    shutil.copytree(
        REPO / "signaltty", site / "signaltty", ignore=shutil.ignore_patterns("__pycache__")
    )
    packaged = site / "signaltty" / "_service" / "systemd"
    packaged.mkdir(parents=True)
    (packaged / "signaltty.service").write_text("PACKAGED UNIT\n", encoding="utf-8")
    integrations = site / "signaltty" / "_integrations" / "opencode"
    integrations.mkdir(parents=True)
    (integrations / "signaltty.js.tmpl").write_text("PACKAGED SHIM\n", encoding="utf-8")
    script = (
        "from signaltty.system import resources as r\n"
        "print(r.service_template(r.SYSTEMD_UNIT), end='')\n"
        "print(r.integration_template('opencode/signaltty.js.tmpl'), end='')\n"
        "try:\n"
        "    r.service_template(r.LAUNCHD_PLIST)\n"
        "except FileNotFoundError:\n"
        "    print('NO PLIST')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(site)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout == "PACKAGED UNIT\nPACKAGED SHIM\nNO PLIST\n"


def test_rendered_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    """The unit as ``signaltty service install`` writes it (absolute executable)."""
    from signaltty.system import service

    text = service.render_unit(sys.executable)
    assert f"ExecStart={sys.executable} daemon" in text.splitlines()
    assert f"ExecReload={sys.executable} restart" in text.splitlines()
    result = _verify(text, tmp_path)
    assert result.stderr == ""
    assert result.returncode == 0
