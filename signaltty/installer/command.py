"""The managed hook command: rendering, ownership, reporter path (Spec: integrations.md §1.2).

Pure except :func:`cli_reporter` / :func:`daemon_reporter`, which look at the filesystem.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from signaltty.installer.errors import InstallError

MANAGED_SUFFIX: Final = " # signaltty hook-event (managed)"
MISSING_CLI: Final = "signaltty CLI is missing; install it or put it on PATH"

# integrations.md §1.2 table: provider → (events, default timeout s, PermissionRequest timeout s).
EVENTS: Final[Mapping[str, tuple[str, ...]]] = {
    # PostToolUse: the end of a tool a person allowed in the agent's own dialog resolves our
    # decision; Interrupt: Codex's Esc (issue 11 items 1 and 2).
    "claude": (
        "SessionStart",
        "UserPromptSubmit",
        "Notification",
        "PermissionRequest",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ),
    "codex": (
        "SessionStart",
        "UserPromptSubmit",
        "PermissionRequest",
        "Stop",
        "Interrupt",
        "SessionEnd",
    ),
    "cursor": ("sessionStart", "beforeSubmitPrompt", "stop", "sessionEnd"),
    "opencode": ("session.created", "session.status", "session.idle", "session.error"),
    # Gemini CLI (issue 11): the turn, its permission Notification and the tool run after it
    "gemini": ("SessionStart", "BeforeAgent", "Notification", "AfterTool", "AfterAgent"),
}
TIMEOUT_S: Final[Mapping[str, int]] = {"claude": 10, "codex": 3, "cursor": 10, "gemini": 10}
# integrations.md §4.1: the provider waits 125 s, the reporter's server wait is 120 s.
PERMISSION_TIMEOUT_S: Final = 125
WAITING_EVENT: Final = "PermissionRequest"


def quote(path: str) -> str:
    """Single-quote ``path`` for a POSIX shell (``'`` becomes ``'"'"'``)."""
    return "'" + path.replace("'", "'\"'\"'") + "'"


def waits(agent: str, event: str) -> bool:
    """Whether the hook for ``event`` uses ``--wait-for-answer`` (Claude/Codex
    PermissionRequest)."""
    return agent in ("claude", "codex") and event == WAITING_EVENT


def timeout_for(agent: str, event: str) -> int:
    """Provider timeout in seconds for ``agent``'s ``event`` hook (§1.2 table)."""
    return PERMISSION_TIMEOUT_S if waits(agent, event) else TIMEOUT_S[agent]


def managed_command(reporter: str, agent: str, event: str) -> str:
    """Return the managed command string, e.g. ``'/bin/signaltty' hook-event --agent claude
    --event Stop --payload-stdin # signaltty hook-event (managed)``.
    """
    wait = " --wait-for-answer" if waits(agent, event) else ""
    return (
        f"{quote(reporter)} hook-event --agent {agent} --event {event} --payload-stdin{wait}"
        f"{MANAGED_SUFFIX}"
    )


def is_owned(command: object) -> bool:
    """Whether a hook command belongs to signaltty.

    Owned: ends with the managed suffix, or is the legacy generated shape (program
    ``signaltty`` or an absolute ``…/signaltty``, ``hook-event``, a valid ``--agent``/
    ``--event`` pair, ``--payload-stdin``).

    Spec: integrations.md §1.2 "owned".
    """
    if not isinstance(command, str):
        return False
    if command.rstrip().endswith(MANAGED_SUFFIX.strip()):
        return True
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) < 2 or words[1] != "hook-event" or "--payload-stdin" not in words:
        return False
    prog = words[0]
    if prog != "signaltty" and not (os.path.isabs(prog) and prog.endswith("/signaltty")):
        return False
    agent = _option(words, "--agent")
    event = _option(words, "--event")
    return agent is not None and agent in EVENTS and event in EVENTS[agent]


def _option(words: list[str], name: str) -> str | None:
    for i, word in enumerate(words):
        if word == name and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


def cli_reporter(argv0: str | None = None) -> str:
    """The reporter path when installing from the CLI.

    Returns:
        ``abspath(sys.argv[0])`` when its basename is ``signaltty``, else
        ``shutil.which("signaltty")``.

    Raises:
        InstallError: neither exists (:data:`MISSING_CLI`).
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    if argv0 and os.path.basename(argv0) == "signaltty" and os.path.exists(argv0):
        return os.path.abspath(argv0)
    found = shutil.which("signaltty")
    if found is None:
        raise InstallError(MISSING_CLI)
    return os.path.abspath(found)


def daemon_reporter(path: str | None = None) -> str:
    """The reporter path inside the daemon: ``signaltty`` next to ``sys.executable``, else on PATH.

    Raises:
        InstallError: none found (:data:`MISSING_CLI`).
    """
    beside = Path(sys.executable).parent / "signaltty"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("signaltty", path=path if path is not None else os.environ.get("PATH"))
    if found is None:
        raise InstallError(MISSING_CLI)
    return os.path.abspath(found)
