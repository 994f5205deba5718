"""XDG/runtime path resolution and directory safety checks (system layer: I/O edge, stdlib only).

Every resolver applies desktop-and-service.md §1 in order: command-line flag, then environment,
then the XDG default. A variable that is set but empty counts as unset, and so does an empty
flag value. XDG variables holding a relative path are ignored too, as the XDG Base Directory
specification requires. Resolved paths are absolute (``~`` expanded, not symlink-resolved).

Spec: desktop-and-service.md §1.
"""

from __future__ import annotations

import os
import pwd
import stat
import sys
from pathlib import Path
from typing import Final

# desktop-and-service.md §1: sun_path is 108 bytes on Linux and 104 on macOS, one of them
# taken by the terminating NUL.
SUN_PATH_MAX_LINUX: Final = 107
SUN_PATH_MAX_MACOS: Final = 103

APP_DIR_NAME: Final = "signaltty"
SOCKET_NAME: Final = "signaltty.sock"
CONFIG_NAME: Final = "config.toml"
AGENTS_DIR_NAME: Final = "agents"
LOG_NAME: Final = "signaltty.log"

_DIR_MODE: Final = 0o700
_GROUP_OR_WORLD_WRITABLE: Final = stat.S_IWGRP | stat.S_IWOTH


class PathError(ValueError):
    """A path cannot be used: too long for a socket address, unsafe, or not creatable.

    The daemon treats it as a startup error and refuses to start with ``str(error)``.
    It never reaches the wire, so it has no protocol error code.
    """


# --------------------------------------------------------------------------- helpers


def _env(name: str) -> str | None:
    """Return ``$name``, or None when it is unset or empty (Spec: §1 "set-but-empty = unset")."""
    value = os.environ.get(name)
    return value or None


def _xdg(name: str) -> Path | None:
    """Return ``$name`` as a path when set, non-empty and absolute; otherwise None."""
    value = _env(name)
    if value is None or not os.path.isabs(value):
        return None
    return Path(value)


def _home() -> Path:
    """Return ``$HOME`` when non-empty, else the passwd home directory of the current uid."""
    home = _env("HOME")
    if home is None:
        home = pwd.getpwuid(os.getuid()).pw_dir
    return Path(home)


def _absolute(value: str | os.PathLike[str]) -> Path:
    """Expand ``~`` (with an empty ``$HOME`` treated as unset) and make ``value`` absolute."""
    text = os.fspath(value)
    if text == "~" or text.startswith("~/"):
        text = str(_home()) + text[1:]
    else:
        text = os.path.expanduser(text)
    return Path(os.path.abspath(text))


def _flag(value: str | os.PathLike[str] | None) -> Path | None:
    """Return a flag value as an absolute path, or None when it is absent or empty."""
    if value is None or os.fspath(value) == "":
        return None
    return _absolute(value)


# --------------------------------------------------------------------------- resolvers


def runtime_dir() -> Path:
    """Resolve the default runtime directory.

    Returns:
        ``$XDG_RUNTIME_DIR/signaltty``, else ``/tmp/signaltty-<uid>`` (also on macOS).

    Spec: desktop-and-service.md §1 "runtime dir".
    """
    base = _xdg("XDG_RUNTIME_DIR")
    if base is not None:
        return base / APP_DIR_NAME
    return Path("/tmp") / f"{APP_DIR_NAME}-{os.getuid()}"


def socket_path(flag: str | os.PathLike[str] | None = None) -> Path:
    """Resolve the daemon socket path (not checked; see :func:`check_socket_path`).

    Args:
        flag: value of ``--socket``; None or ``""`` means not given.

    Returns:
        ``--socket``, else ``$SIGNALTTY_SOCKET``, else ``<runtime dir>/signaltty.sock``,
        as an absolute path.

    Spec: desktop-and-service.md §1 "socket".
    """
    from signaltty.proto import sockpath

    return Path(sockpath.resolve(os.fspath(flag) if flag is not None else None))


def is_default_socket(flag: str | os.PathLike[str] | None = None) -> bool:
    """Tell whether :func:`socket_path` falls back to the default runtime dir.

    Args:
        flag: value of ``--socket``; None or ``""`` means not given.

    Returns:
        True when neither ``--socket`` nor ``$SIGNALTTY_SOCKET`` is given, i.e. the socket's
        directory must pass :func:`ensure_runtime_dir` with ``default=True``.

    Spec: desktop-and-service.md §1 (default vs custom runtime dir).
    """
    return _flag(flag) is None and _env("SIGNALTTY_SOCKET") is None


def state_dir(flag: str | os.PathLike[str] | None = None) -> Path:
    """Resolve the state directory.

    Args:
        flag: value of ``--state-dir``; None or ``""`` means not given.

    Returns:
        ``--state-dir``, else ``$XDG_STATE_HOME/signaltty``, else ``~/.local/state/signaltty``.

    Spec: desktop-and-service.md §1 "state dir".
    """
    chosen = _flag(flag)
    if chosen is not None:
        return chosen
    base = _xdg("XDG_STATE_HOME") or _home() / ".local" / "state"
    return base / APP_DIR_NAME


def config_dir() -> Path:
    """Resolve the configuration directory (the parent of the default config file).

    Returns:
        ``$XDG_CONFIG_HOME/signaltty``, else ``~/.config/signaltty``.

    Spec: desktop-and-service.md §1 "config file" and "agents dir" (``<config dir>``).
    """
    base = _xdg("XDG_CONFIG_HOME") or _home() / ".config"
    return base / APP_DIR_NAME


def config_file(flag: str | os.PathLike[str] | None = None) -> Path:
    """Resolve the configuration file.

    Args:
        flag: value of ``--config``; None or ``""`` means not given.

    Returns:
        ``--config``, else ``$XDG_CONFIG_HOME/signaltty/config.toml``, else
        ``~/.config/signaltty/config.toml``. The file may not exist.

    Spec: desktop-and-service.md §1 "config file".
    """
    return _flag(flag) or config_dir() / CONFIG_NAME


def agents_dir(flag: str | os.PathLike[str] | None = None, config_value: str | None = None) -> Path:
    """Resolve the user agents (manifest) directory.

    Args:
        flag: value of ``--agents-dir``; None or ``""`` means not given.
        config_value: ``agents.dir`` from config.toml; None or ``""`` (its default) means
            not set.

    Returns:
        ``--agents-dir``, else ``$SIGNALTTY_AGENTS_DIR``, else ``agents.dir``, else
        ``<config dir>/agents``.

    Spec: desktop-and-service.md §1 "agents dir", §10.1 ``[agents] dir``.
    """
    return (
        _flag(flag)
        or _flag(_env("SIGNALTTY_AGENTS_DIR"))
        or _flag(config_value)
        or config_dir() / AGENTS_DIR_NAME
    )


def data_dir() -> Path:
    """Resolve the data directory (tier 3).

    Returns:
        ``$XDG_DATA_HOME/signaltty``, else ``~/.local/share/signaltty``.

    Spec: desktop-and-service.md §1 "data dir".
    """
    base = _xdg("XDG_DATA_HOME") or _home() / ".local" / "share"
    return base / APP_DIR_NAME


def log_file(state: str | os.PathLike[str]) -> Path:
    """Return the log file inside a state directory.

    Args:
        state: the resolved state directory.

    Returns:
        ``<state dir>/signaltty.log``; its rotated copy is the same path plus ``.1``.

    Spec: desktop-and-service.md §1 "log file", §10.2.
    """
    return Path(state) / LOG_NAME


# --------------------------------------------------------------------------- socket length


def max_socket_path_bytes(platform: str | None = None) -> int:
    """Return the longest socket path (bytes, without the NUL) that fits ``sun_path``.

    Args:
        platform: a ``sys.platform`` value; None means the running platform.

    Returns:
        103 on macOS (``darwin``), 107 everywhere else (Linux).

    Spec: desktop-and-service.md §1 "socket".
    """
    platform = sys.platform if platform is None else platform
    return SUN_PATH_MAX_MACOS if platform == "darwin" else SUN_PATH_MAX_LINUX


def check_socket_path(path: str | os.PathLike[str]) -> None:
    """Refuse a socket path that does not fit a Unix socket address.

    Args:
        path: the socket path that will be passed to ``bind``/``connect``.

    Raises:
        PathError: the file-system encoding of ``path`` is longer than
            :func:`max_socket_path_bytes`; the message names the path, both lengths and
            the ways to shorten it.

    Spec: desktop-and-service.md §1 "socket" (the daemon refuses to start).
    """
    size = len(os.fsencode(path))
    limit = max_socket_path_bytes()
    if size > limit:
        raise PathError(
            f"socket path is {size} bytes, but a Unix socket address holds at most {limit}: "
            f"{os.fspath(path)} (use a shorter --socket, SIGNALTTY_SOCKET or XDG_RUNTIME_DIR)"
        )


# --------------------------------------------------------------------------- directories


def _make_private_dirs(path: Path) -> None:
    """Create ``path`` and its missing ancestors with mode 0700, tolerating a creation race.

    Raises:
        OSError: a directory cannot be created.
    """
    missing: list[Path] = []
    current = path
    while not os.path.lexists(current):
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, _DIR_MODE)
        except FileExistsError:
            continue
        # mkdir applies the umask; 0700 must hold exactly.
        os.chmod(directory, _DIR_MODE)


def ensure_runtime_dir(path: str | os.PathLike[str], *, default: bool) -> list[str]:
    """Create the socket's directory if missing, and vet an existing one.

    A missing directory is created with mode 0700 (missing ancestors too). Clients talk only
    to a socket whose directory is the user's own with mode 0700 (issue 10 §1), so:

    * an existing *default* runtime dir must be a real directory (not a symlink) owned by
      the current uid and writable by neither group nor others; group/other bits that
      grant no writing (0755, 0750…) are tightened to 0700 with a warning, since nobody
      else could have put anything in it;
    * the existing parent of a custom ``--socket`` is never chmod-ed (it may be ``/tmp``):
      it must already be owned by the current uid without group/other bits.

    Args:
        path: the directory that will hold the socket.
        default: True when ``path`` is :func:`runtime_dir` (no ``--socket`` and no
            ``$SIGNALTTY_SOCKET``); False for the parent of a custom socket.

    Returns:
        Warnings for the caller to log, e.g. ``["runtime dir /tmp/signaltty-1000 had mode
        0755; tightened to 0700"]``; empty when nothing was changed.

    Raises:
        PathError: the directory cannot be created or chmod-ed; ``path`` exists but is not a
            directory; it is owned by another uid; it is group/world-writable; (``default``)
            it is a symlink; (custom) it has any group/other bit.

    Spec: desktop-and-service.md §1, §9 "socket"; issue 10 §1 and §8.
    """
    from signaltty.proto.trust import private_dir_problem

    directory = Path(path)
    try:
        _make_private_dirs(directory)
        info = os.lstat(directory)
    except OSError as exc:
        raise PathError(f"cannot create runtime dir {directory}: {exc.strerror or exc}") from exc

    if default and stat.S_ISLNK(info.st_mode):
        raise PathError(
            f"refusing to use runtime dir {directory}: it is a symlink; remove it or set --socket"
        )
    if not default and stat.S_ISLNK(info.st_mode):
        try:
            info = os.stat(directory)
        except OSError as exc:
            raise PathError(f"cannot use socket dir {directory}: {exc.strerror or exc}") from exc
    if not stat.S_ISDIR(info.st_mode):
        raise PathError(f"cannot use {directory} for the socket: it is not a directory")
    uid = os.getuid()
    if not default:
        problem = private_dir_problem(info, str(directory), uid)
        if problem is not None:
            raise PathError(
                f"refusing socket dir: {problem}: clients only trust a socket in a private "
                "directory of yours (--socket, SIGNALTTY_SOCKET)"
            )
        return []

    if info.st_uid != uid:
        raise PathError(
            f"refusing to use runtime dir {directory}: it is owned by uid {info.st_uid}, "
            f"not by you (uid {uid}); remove it or set --socket"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & _GROUP_OR_WORLD_WRITABLE:
        raise PathError(
            f"refusing to use runtime dir {directory}: mode {mode:04o} is group- or "
            f"world-writable; run `chmod 700 {directory}` or set --socket"
        )
    if not mode & (stat.S_IRWXG | stat.S_IRWXO):
        return []
    try:
        os.chmod(directory, _DIR_MODE)
    except OSError as exc:
        raise PathError(f"cannot chmod runtime dir {directory}: {exc.strerror or exc}") from exc
    return [f"runtime dir {directory} had mode {mode:04o}; tightened to 0700"]


def ensure_state_dir(path: str | os.PathLike[str]) -> list[str]:
    """Create the state directory with mode 0700, or tighten an existing one to 0700.

    Symlinks are followed: the state dir lives under the user's home, which the user
    controls.

    Args:
        path: the resolved state directory.

    Returns:
        Warnings for the caller to log once configured, e.g.
        ``["state dir /home/u/.local/state/signaltty had mode 0755; tightened to 0700"]``;
        empty when nothing was changed.

    Raises:
        PathError: the directory cannot be created or chmod-ed, or ``path`` exists but is
            not a directory.

    Spec: desktop-and-service.md §1 (state dir), §8.1.
    """
    directory = Path(path)
    warnings: list[str] = []
    try:
        _make_private_dirs(directory)
        info = os.stat(directory)
        if not stat.S_ISDIR(info.st_mode):
            raise PathError(f"cannot use state dir {directory}: it is not a directory")
        mode = stat.S_IMODE(info.st_mode)
        if mode != _DIR_MODE:
            os.chmod(directory, _DIR_MODE)
            warnings.append(f"state dir {directory} had mode {mode:04o}; tightened to 0700")
    except OSError as exc:
        raise PathError(f"cannot prepare state dir {directory}: {exc.strerror or exc}") from exc
    return warnings
