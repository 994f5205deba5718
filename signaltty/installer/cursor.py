"""Cursor Agent: flat managed hooks in ``~/.cursor/hooks.json`` (Spec: integrations.md §1.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from signaltty.installer import jsonfile, merge, safefile
from signaltty.installer.command import EVENTS, managed_command, timeout_for
from signaltty.installer.report import Report

AGENT = "cursor"


def hooks_file(root: Path) -> Path:
    return root / "hooks.json"


def install(
    root: Path, reporter: str, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S
) -> Report:
    """Merge flat managed entries (``"version": 1`` added when absent).

    Raises:
        InstallError: see :func:`signaltty.installer.safefile.edit`.
    """
    want = {e: (managed_command(reporter, AGENT, e), timeout_for(AGENT, e)) for e in EVENTS[AGENT]}
    file, changed = jsonfile.edit_json(
        hooks_file(root), lambda r, f: merge.install_flat(r, f, want), lock_timeout_s=lock_timeout_s
    )
    return Report(AGENT, str(file), changed)


def uninstall(root: Path, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S) -> Report:
    """Remove owned entries only.

    Raises:
        InstallError: see :func:`signaltty.installer.safefile.edit`.
    """
    file, changed = jsonfile.edit_json(
        hooks_file(root), merge.uninstall_flat, lock_timeout_s=lock_timeout_s
    )
    return Report(AGENT, str(file), changed)


def status(root: Path) -> dict[str, Any]:
    """``{installed, file, missing_events}``.

    Raises:
        InstallError: unreadable or malformed file.
    """
    file, data = jsonfile.read_object(hooks_file(root))
    missing = merge.missing_events(data, EVENTS[AGENT], grouped=False)
    return {"installed": not missing, "file": str(file), "missing_events": missing}
