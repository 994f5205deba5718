"""Open the person's terminal on a pane: what runs when a notification is clicked.

:func:`terminal_argv` is pure (the choice of terminal and the argv); :func:`open_terminal`
starts it. Never through a shell: the argv goes to ``exec`` as a list, and the pane id is
checked against :data:`PANE_ID_RE` first, so it can be neither an option nor a shell word.
The one exception is macOS Terminal, which runs a *command line* (``do script``): there
every word is ``shlex``-quoted and the AppleScript string escaped.

The terminal gets the daemon's own environment (minus what belongs to the service manager),
so under systemd it sees only what the user manager had when the daemon started: without
``DISPLAY``/``WAYLAND_DISPLAY`` there a graphical terminal cannot open, which is logged
(``desktop.terminal_no_display``) with the fix. Issue 13 item 6; docs/desktop.md
"Clicking a notification".
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import structlog

from signaltty.system import sdnotify

log = structlog.get_logger("signaltty.notify")

# Ids the daemon makes (``pane_<32 hex>``) and any id a snapshot may restore; never a
# leading ``-``, no space, quote or shell metacharacter.
PANE_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")
ATTACH_MARK: Final = "{attach}"
PANE_MARK: Final = "{pane}"
# Fallbacks when ``desktop.terminal`` is unset, in order: (program, arguments before the
# command). ``-e`` is the Debian x-terminal-emulator contract and what ``$TERMINAL`` users
# rely on (i3-sensible-terminal, sway's examples); xdg-terminal-exec takes the command as is.
FALLBACKS: Final = (("xdg-terminal-exec", ()), ("x-terminal-emulator", ("-e",)))
# Inherited variables that belong to the service manager, not to a terminal.
SCRUBBED_ENV: Final = sdnotify.SERVICE_MANAGER_ENV | {"SIGNALTTY_SOCKET", "SIGNALTTY_PANE"}
STDERR_KEPT: Final = 2048  # bytes of a failed terminal's stderr kept for the log


class NoTerminal(Exception):
    """No terminal to run: none configured and none of the fallbacks found."""


class TerminalFailed(Exception):
    """The terminal program could not be started (missing, not executable, …)."""


@dataclass(frozen=True, slots=True)
class Launch:
    """What to execute.

    Attributes:
        argv: the full argv (``argv[0]`` as configured or found).
        source: where the terminal came from: ``config``, ``$TERMINAL``,
            ``xdg-terminal-exec``, ``x-terminal-emulator`` or ``macos``.
    """

    argv: list[str]
    source: str


def attach_argv(
    pane_id: str, socket_path: str, executable: str | None = None, *, host: str | None = None
) -> list[str]:
    """The command that attaches to ``pane_id`` on the daemon at ``socket_path``.

    Args:
        pane_id: checked against :data:`PANE_ID_RE`.
        socket_path: the daemon's socket, passed with ``--socket`` so a terminal started
            without ``$SIGNALTTY_SOCKET`` reaches this daemon.
        executable: the Python running the daemon (default ``sys.executable``); the
            ``signaltty`` script next to it is used when present, else ``python -m signaltty``.
        host: a watched host's ssh target: attach to its pane ``pane_id`` through
            ``--host`` (docs/remote.md) instead of this daemon's socket.

    Returns:
        e.g. ``["/venv/bin/signaltty", "--socket", "/run/…/signaltty.sock", "pane",
        "attach", "pane_3f…"]``.

    Raises:
        ValueError: a pane id outside :data:`PANE_ID_RE`.
    """
    if not PANE_ID_RE.fullmatch(pane_id):
        raise ValueError(f"not a pane id: {pane_id[:80]!r}")
    python = executable or sys.executable
    script = Path(python).parent / "signaltty"
    head = [str(script)] if os.access(script, os.X_OK) else [python, "-m", "signaltty"]
    if host is not None:
        return [*head, "--host", host, "pane", "attach", pane_id]
    return [*head, "--socket", socket_path, "pane", "attach", pane_id]


def terminal_argv(
    configured: Sequence[str] | None,
    attach: Sequence[str],
    pane_id: str,
    *,
    env: Mapping[str, str],
    which: Callable[[str], str | None] = shutil.which,
    platform: str = sys.platform,
) -> Launch:
    """Choose the terminal and build its argv (pure but for ``which``).

    Order: ``configured`` (config ``desktop.terminal``), then ``$TERMINAL`` (split like a
    shell would, then ``-e`` and the command), then ``xdg-terminal-exec <command>``, then
    ``x-terminal-emulator -e <command>``; on macOS without either of the first two,
    Terminal through ``osascript``.

    In ``configured``, an element that is exactly ``{attach}`` is replaced by the attach
    command's words (for terminals that want it in the middle), otherwise they are appended;
    ``{pane}`` inside any element is replaced by the pane id (window titles, app ids).

    Args:
        configured: the ``desktop.terminal`` argv, or None.
        attach: :func:`attach_argv`.
        pane_id: the pane (already checked by :func:`attach_argv`).
        env: the environment to read ``TERMINAL`` from.
        which: ``shutil.which`` (tests pass their own PATH).
        platform: ``sys.platform``.

    Raises:
        NoTerminal: nothing configured and no fallback found (the message lists what was tried).
    """
    if configured:
        argv: list[str] = []
        spliced = False
        for part in configured:
            if part == ATTACH_MARK:
                argv += attach
                spliced = True
            else:
                argv.append(part.replace(PANE_MARK, pane_id))
        return Launch(argv if spliced else [*argv, *attach], "config")
    term = env.get("TERMINAL", "").strip()
    if term:
        try:
            words = shlex.split(term)
        except ValueError:
            words = [term]
        if words:
            return Launch([*words, "-e", *attach], "$TERMINAL")
    if platform == "darwin":
        return Launch(macos_terminal_argv(attach), "macos")
    for program, before in FALLBACKS:
        found = which(program)
        if found:
            return Launch([found, *before, *attach], program)
    raise NoTerminal(
        "no terminal to open: set [desktop] terminal in config.toml, or $TERMINAL "
        "(xdg-terminal-exec and x-terminal-emulator were not found)"
    )


def macos_terminal_argv(attach: Sequence[str]) -> list[str]:
    """``osascript`` argv that opens a Terminal window running ``attach`` and raises it.

    Terminal runs a command *line*, so each word is ``shlex``-quoted; the line is then put
    in an AppleScript string literal (``\\`` and ``"`` escaped).
    """
    line = shlex.join(attach)
    literal = '"' + line.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return [
        "osascript",
        "-e",
        f'tell application "Terminal" to do script {literal}',
        "-e",
        'tell application "Terminal" to activate',
    ]


def terminal_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without the service manager's variables (:data:`SCRUBBED_ENV`)."""
    return {k: v for k, v in base.items() if k not in SCRUBBED_ENV}


async def open_terminal(
    pane_id: str,
    socket_path: str,
    configured: Sequence[str] | None,
    *,
    env: Mapping[str, str] | None = None,
    host: str | None = None,
) -> asyncio.subprocess.Process:
    """Start the terminal on ``pane_id``; returns the started process (not waited for).

    stdin, stdout are ``/dev/null``; stderr is a pipe (read by :func:`watch_terminal`). The
    terminal runs in its own session in the home directory, so it neither gets the
    daemon's signals nor keeps a directory busy.

    Raises:
        ValueError: a bad pane id. NoTerminal: nothing to run. TerminalFailed: the program
        could not be started (missing, not executable); the message names it and where it
        came from (``config``, ``$TERMINAL``, …).
    """
    base = dict(os.environ if env is None else env)
    attach = attach_argv(pane_id, socket_path, host=host)
    launch = terminal_argv(configured, attach, pane_id, env=base)
    if sys.platform != "darwin" and not (base.get("DISPLAY") or base.get("WAYLAND_DISPLAY")):
        log.warning(
            "desktop.terminal_no_display",
            reason="neither DISPLAY nor WAYLAND_DISPLAY is set in the daemon's environment; "
            "a graphical terminal may not open (under systemd: systemctl --user "
            "import-environment DISPLAY WAYLAND_DISPLAY, then restart the service)",
        )
    try:
        proc = await asyncio.create_subprocess_exec(
            *launch.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=terminal_env(base),
            cwd=_start_dir(base),
            start_new_session=True,
        )
    except OSError as exc:
        raise TerminalFailed(
            f"cannot start the terminal {launch.argv[0][:200]!r} (from {launch.source}): "
            f"{exc.strerror or exc}"
        ) from None
    log.info(
        "desktop.terminal_started",
        pane_id=pane_id,
        source=launch.source,
        program=launch.argv[0][:200],
        pid=proc.pid,
    )
    return proc


async def watch_terminal(proc: asyncio.subprocess.Process, pane_id: str) -> int:
    """Reap the terminal; log a non-zero exit with the end of its stderr (sanitized).

    A terminal that forks a window and returns (gnome-terminal) ends at once; one that
    owns its window (foot, xterm) ends when the window closes.

    Returns:
        The exit status (negative: killed by that signal).
    """
    kept = b""
    if proc.stderr is not None:
        while chunk := await proc.stderr.read(65536):
            kept = (kept + chunk)[-STDERR_KEPT:]
    code = await proc.wait()
    log.info("desktop.terminal_exited", pane_id=pane_id, pid=proc.pid, exit_code=code)
    if code != 0:
        from signaltty.core.sanitize import sanitize_text

        log.warning(
            "desktop.terminal_failed",
            pane_id=pane_id,
            exit_code=code,
            stderr=sanitize_text(kept.decode("utf-8", "replace"), 600, multiline=True),
        )
    return code


def _start_dir(env: Mapping[str, str]) -> str:
    """The terminal's working directory: ``$HOME`` when it is a directory, else ``/``."""
    home = env.get("HOME")
    return home if home and os.path.isdir(home) else "/"
