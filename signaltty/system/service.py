"""``signaltty service``: install, remove and inspect the user service (system layer).

Renders the packaged templates with the absolute path of the installed executable, writes
them atomically, and drives ``systemctl --user`` or ``launchctl`` when present (otherwise
the manual commands are printed). It never restarts a running daemon by itself.
Spec: desktop-and-service.md §3.1 (unit), §3.3 (D-Bus activation), §4.1 (plist), §4.2.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from signaltty.system import paths, resources

MARKER: Final = "# managed by signaltty service install"
UNIT_NAME: Final = "signaltty.service"
DBUS_FILE_NAME: Final = "dev.signaltty.Signaltty.service"
PLIST_LABEL: Final = "dev.signaltty.daemon"
COMMAND_TIMEOUT_S: Final = 30.0
RESTART_HINT: Final = "restart with: systemctl --user restart signaltty (live panes will end)"

# argv → (returncode, stdout, stderr); returncode 127 when the program is missing.
Runner = Callable[[list[str]], tuple[int, str, str]]


class ServiceError(Exception):
    """A refusal (foreign unit, live panes); ``str()`` is the message, exit code 1."""


@dataclass
class Report:
    """What a command did: lines for people, warnings, and the JSON result."""

    lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


def run_command(argv: list[str]) -> tuple[int, str, str]:
    """Run a service-manager command (30 s timeout); never raises."""
    try:
        r = subprocess.run(
            argv,
            check=False,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        return 127, "", f"{argv[0]}: not found"
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, "", str(exc)
    return r.returncode, r.stdout, r.stderr


# ---------------------------------------------------------------- locations


def platform_name() -> str:
    """``darwin`` or ``linux`` (anything else is treated like Linux)."""
    return "darwin" if sys.platform == "darwin" else "linux"


def manager() -> str:
    """``systemd`` | ``launchd`` | ``none``: the user service manager command available."""
    if platform_name() == "darwin":
        return "launchd" if shutil.which("launchctl") else "none"
    return "systemd" if shutil.which("systemctl") else "none"


def unit_path() -> Path:
    """``$XDG_CONFIG_HOME/systemd/user/signaltty.service`` (else under ``~/.config``)."""
    return paths.config_dir().parent / "systemd" / "user" / UNIT_NAME


def dbus_activation_path() -> Path:
    """``$XDG_DATA_HOME/dbus-1/services/dev.signaltty.Signaltty.service``."""
    return paths.data_dir().parent / "dbus-1" / "services" / DBUS_FILE_NAME


def plist_path() -> Path:
    """``~/Library/LaunchAgents/dev.signaltty.daemon.plist``."""
    return Path.home() / "Library" / "LaunchAgents" / f"{PLIST_LABEL}.plist"


def service_file() -> Path:
    return plist_path() if platform_name() == "darwin" else unit_path()


def executable() -> str:
    """Absolute path of the ``signaltty`` executable (``which``, else ``argv[0]``)."""
    found = shutil.which("signaltty")
    return os.path.abspath(found or sys.argv[0])


# ---------------------------------------------------------------- rendering


def _systemd_quote(path: str) -> str:
    text = path.replace("%", "%%")
    if any(c.isspace() or c in "\"'\\" for c in text):
        text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def render_unit(exe: str) -> str:
    """The systemd unit with ``ExecStart=<exe> daemon`` (§3.1) and ``ExecReload=<exe>
    restart`` (issue 15)."""
    lines = resources.service_template(resources.SYSTEMD_UNIT).splitlines()
    out = []
    for ln in lines:
        if ln.startswith("ExecStart="):
            ln = f"ExecStart={_systemd_quote(exe)} daemon"
        elif ln.startswith("ExecReload="):
            ln = f"ExecReload={_systemd_quote(exe)} restart"
        out.append(ln)
    return "\n".join(out) + "\n"


def render_dbus_activation(exe: str) -> str:
    """The D-Bus activation file with ``Exec=<exe> daemon`` (§3.3)."""
    lines = resources.service_template(resources.DBUS_ACTIVATION).splitlines()
    out = [f"Exec={shlex.quote(exe)} daemon" if ln.startswith("Exec=") else ln for ln in lines]
    return "\n".join(out) + "\n"


def render_plist(exe: str, state_dir: Path) -> bytes:
    """The LaunchAgent plist with the executable and state dir filled in (§4.1)."""
    data = plistlib.loads(resources.service_template(resources.LAUNCHD_PLIST).encode())
    data["ProgramArguments"] = [exe, "daemon"]
    data["StandardErrorPath"] = str(state_dir / "daemon.out")
    return plistlib.dumps(data)


def _write_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` (0644) unless identical; returns whether the file changed."""
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return True


def _is_managed(path: Path) -> bool:
    try:
        if path.suffix == ".plist":
            label: object = plistlib.loads(path.read_bytes()).get("Label")
            return label == PLIST_LABEL
        return MARKER in path.read_text(errors="replace").splitlines()[:3]
    except (OSError, ValueError, IndexError):
        return False


# ---------------------------------------------------------------- daemon probe


def _daemon_status() -> dict[str, Any] | None:
    """``server.status`` of a daemon on the default socket, or ``None``."""
    from signaltty.proto.client import Client, default_socket

    try:
        with Client(default_socket(None), timeout=2.0) as cl:
            return cl.call("server.status")
    except Exception:  # noqa: BLE001 - no daemon
        return None


# ---------------------------------------------------------------- commands


def install(
    *,
    enable: bool = True,
    start: bool = True,
    dbus_activation: bool = True,
    force: bool = False,
    run: Runner = run_command,
) -> Report:
    """``service install`` (§4.2).

    Raises:
        ServiceError: an existing unit/plist not written by signaltty and no ``force``.
    """
    exe = executable()
    report = Report()
    target = service_file()
    if target.exists() and not _is_managed(target) and not force:
        raise ServiceError(
            f"{target} exists and was not written by signaltty; use --force to replace it"
        )
    if platform_name() == "darwin":
        return _install_launchd(exe, target, report, run)
    has_manager = manager() == "systemd"
    was_active = has_manager and _systemctl(run, "is-active", "signaltty")[1].strip() == "active"
    changed = _write_atomic(target, render_unit(exe).encode())
    report.lines.append(f"{'wrote' if changed else 'unchanged'} {target}")
    act = dbus_activation_path()
    if dbus_activation:
        act_changed = _write_atomic(act, render_dbus_activation(exe).encode())
        report.lines.append(f"{'wrote' if act_changed else 'unchanged'} {act}")
    report.data = {
        "unit_file": str(target),
        "exec": exe,
        "changed": changed,
        "dbus_activation_file": str(act) if dbus_activation else None,
    }
    # Asked before `start`: afterwards the daemon answering may be the unit's own, and this
    # process's environment says nothing about how that daemon was started.
    foreign = _daemon_status() if start and not was_active else None
    steps: list[list[str]] = [["daemon-reload"]]
    if enable:
        steps.append(["enable", "signaltty"])
    if start and not was_active:
        steps.append(["start", "signaltty"])
    if not has_manager:
        report.warnings.append(
            "systemctl not found; run: "
            + "; ".join("systemctl --user " + " ".join(s) for s in steps)
        )
    else:
        for i, step in enumerate(steps):
            rc, _out, err = _systemctl(run, *step)
            if rc != 0:
                rest = "; ".join("systemctl --user " + " ".join(s) for s in steps[i:])
                report.warnings.append(
                    f"systemctl --user {' '.join(step)} failed: {err.strip()[:200]}; run: {rest}"
                )
                break
            report.lines.append(f"systemctl --user {' '.join(step)}")
    if was_active and changed:
        report.lines.append(RESTART_HINT)
    if foreign is not None:
        report.warnings.append(
            f"a daemon not started by systemd (pid {foreign.get('pid')}) is listening on "
            f"{foreign.get('socket')}; the unit cannot start until `signaltty shutdown`"
        )
    return report


def _install_launchd(exe: str, target: Path, report: Report, run: Runner) -> Report:
    changed = _write_atomic(target, render_plist(exe, paths.state_dir()))
    report.lines.append(f"{'wrote' if changed else 'unchanged'} {target}")
    report.data = {
        "unit_file": str(target),
        "exec": exe,
        "changed": changed,
        "dbus_activation_file": None,
    }
    argv = ["launchctl", "bootstrap", f"gui/{os.getuid()}", str(target)]
    if manager() != "launchd":
        report.warnings.append("launchctl not found; run: " + " ".join(argv))
    else:
        rc, _out, err = run(argv)
        if rc != 0:
            report.warnings.append(f"{' '.join(argv)} failed: {err.strip()[:200]}")
        else:
            report.lines.append(" ".join(argv))
    return report


def uninstall(*, force: bool = False, run: Runner = run_command) -> Report:
    """``service uninstall`` (§4.2).

    Raises:
        ServiceError: the daemon reports live panes and no ``force``.
    """
    running = _daemon_status()
    if running is not None and running.get("live_panes") and not force:
        raise ServiceError(
            f"the daemon has {running['live_panes']} live panes; use --force to uninstall anyway"
        )
    report = Report()
    target = service_file()
    if platform_name() == "darwin":
        argv = ["launchctl", "bootout", f"gui/{os.getuid()}/{PLIST_LABEL}"]
        if manager() == "launchd":
            run(argv)
        target.unlink(missing_ok=True)
        report.lines.append(f"removed {target}")
        return report
    if manager() == "systemd":
        rc, _out, err = _systemctl(run, "disable", "--now", "signaltty")
        if rc != 0:
            report.warnings.append(
                f"systemctl --user disable --now signaltty failed: {err.strip()[:200]}"
            )
    else:
        report.warnings.append("systemctl not found; run: systemctl --user disable --now signaltty")
    for path in (target, dbus_activation_path()):
        if path.exists() and (path != target or _is_managed(path) or force):
            path.unlink()
            report.lines.append(f"removed {path}")
    if manager() == "systemd":
        _systemctl(run, "daemon-reload")
    return report


def status(*, run: Runner = run_command) -> dict[str, Any]:
    """``service status`` keys of §4.2."""
    mgr = manager()
    target = service_file()
    installed = target.exists()
    exe: str | None = None
    if installed:
        exe = _installed_exec(target)
    enabled = active = False
    if mgr == "systemd":
        enabled = _systemctl(run, "is-enabled", "signaltty")[1].strip() == "enabled"
        active = _systemctl(run, "is-active", "signaltty")[1].strip() == "active"
    elif mgr == "launchd":
        rc = run(["launchctl", "print", f"gui/{os.getuid()}/{PLIST_LABEL}"])[0]
        enabled = active = rc == 0
    act = dbus_activation_path()
    return {
        "platform": platform_name(),
        "manager": mgr,
        "unit_file": str(target),
        "installed": installed,
        "managed": installed and _is_managed(target),
        "enabled": enabled,
        "active": active,
        "exec": exe,
        "exec_exists": bool(exe and os.path.isfile(exe) and os.access(exe, os.X_OK)),
        "dbus_activation_file": str(act) if act.exists() else None,
    }


def _installed_exec(target: Path) -> str | None:
    try:
        if target.suffix == ".plist":
            args = plistlib.loads(target.read_bytes()).get("ProgramArguments") or []
            return str(args[0]) if args else None
        for line in target.read_text(errors="replace").splitlines():
            if line.startswith("ExecStart="):
                words = shlex.split(line.removeprefix("ExecStart=").replace("%%", "%"))
                return words[0] if words else None
    except (OSError, ValueError):
        return None
    return None


def _systemctl(run: Runner, *args: str) -> tuple[int, str, str]:
    return run(["systemctl", "--user", *args])
