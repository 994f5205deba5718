"""Gemini CLI: managed hooks in ``<root>/settings.json`` (issue 11; research real-agents.md §7).

``<root>`` is ``$GEMINI_CLI_HOME/.gemini`` or ``~/.gemini``. Gemini reads Claude-shaped
grouped hooks (``hooks.<Event>: [{matcher, hooks: [{type, command, timeout}]}]``) with the
timeout in **milliseconds**; an empty matcher matches every tool. Nothing waits: Gemini runs
its ``Notification`` hook before it draws the permission dialog, so a waiting hook would hide
the dialog, and its ``BeforeTool`` hook can deny a tool but not allow one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from signaltty.installer import jsonfile, merge, safefile
from signaltty.installer.command import EVENTS, MANAGED_SUFFIX, managed_command, timeout_for
from signaltty.installer.report import Report

AGENT = "gemini"
MS_PER_S: Final = 1000


def command_for(reporter: str, event: str) -> str:
    """The managed command with the reporter's feedback line dropped: Gemini prints a hook's
    stderr into its transcript (``ℹ accepted gemini:AfterAgent …``)."""
    base = managed_command(reporter, AGENT, event)
    assert base.endswith(MANAGED_SUFFIX)
    return base[: -len(MANAGED_SUFFIX)] + " 2>/dev/null" + MANAGED_SUFFIX


def settings_file(root: Path) -> Path:
    return root / "settings.json"


def install(
    root: Path, reporter: str, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S
) -> Report:
    """Merge the managed hooks of every Gemini event (timeouts in ms, Gemini's unit).

    Raises:
        InstallError: see :func:`signaltty.installer.safefile.edit`.
    """
    want = {e: (command_for(reporter, e), timeout_for(AGENT, e) * MS_PER_S) for e in EVENTS[AGENT]}
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
    """``{installed, file, missing_events, hooks_disabled}``.

    Raises:
        InstallError: unreadable or malformed file.
    """
    file, data = jsonfile.read_object(settings_file(root))
    missing = merge.missing_events(data, EVENTS[AGENT], grouped=True)
    hooks_config = data.get("hooksConfig")
    disabled = isinstance(hooks_config, dict) and hooks_config.get("enabled") is False
    return {
        "installed": not missing,
        "file": str(file),
        "missing_events": missing,
        "hooks_disabled": disabled,
    }
