"""Claude Code: managed hooks in ``<root>/settings.json`` (Spec: integrations.md §1.1–§1.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from signaltty.installer import jsonfile, merge, safefile
from signaltty.installer.command import EVENTS, managed_command, timeout_for
from signaltty.installer.report import Report

AGENT = "claude"


def settings_file(root: Path) -> Path:
    return root / "settings.json"


def install(
    root: Path, reporter: str, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S
) -> Report:
    """Merge the managed hooks of every Claude event (``PermissionRequest`` waits, 125 s).

    Raises:
        InstallError: see :func:`signaltty.installer.safefile.edit`.
    """
    want = {e: (managed_command(reporter, AGENT, e), timeout_for(AGENT, e)) for e in EVENTS[AGENT]}
    file, changed = jsonfile.edit_json(
        settings_file(root),
        lambda r, f: merge.install_grouped(r, f, want),
        lock_timeout_s=lock_timeout_s,
    )
    return Report(AGENT, str(file), changed)


def uninstall(root: Path, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S) -> Report:
    """Remove owned commands only.

    Raises:
        InstallError: see :func:`signaltty.installer.safefile.edit`.
    """
    file, changed = jsonfile.edit_json(
        settings_file(root), merge.uninstall_grouped, lock_timeout_s=lock_timeout_s
    )
    return Report(AGENT, str(file), changed)


def status(root: Path) -> dict[str, Any]:
    """``{installed, file, missing_events, trust: "provider_managed", hooks_disabled}``.

    Raises:
        InstallError: unreadable or malformed file.
    """
    file, data = jsonfile.read_object(settings_file(root))
    missing = merge.missing_events(data, EVENTS[AGENT], grouped=True)
    return {
        "installed": not missing,
        "file": str(file),
        "missing_events": missing,
        "trust": "provider_managed",
        "hooks_disabled": data.get("disableAllHooks") is True,
    }
