"""Safe edits of a provider file: lock, checks, atomic replace (OS layer; Spec: integrations.md §1.4).

One entry point, :func:`edit`: resolve symlinks, refuse anything that is not a regular file
or is over 4 MiB, take ``.<name>.signaltty.lock`` with a bounded wait, read, let the caller
compute the new text, and replace the file atomically (temp file with the original
permissions, ``fsync``, re-``stat`` of the original, ``os.replace``, directory ``fsync``).
Identical content is never written, so bytes and mtime stay unchanged.
"""

from __future__ import annotations

import errno
import fcntl
import itertools
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from signaltty.installer.errors import InstallError

# integrations.md §1.4: files larger than 4 MiB are refused.
MAX_FILE_BYTES: Final = 4 * 1024 * 1024
# integrations.md §1.4 "lock": non-blocking retries for at most 100 ms.
LOCK_TIMEOUT_S: Final = 0.1
_LOCK_RETRY_S: Final = 0.01
DIR_MODE: Final = 0o700
NEW_FILE_MODE: Final = 0o600
LOCKED: Final = "configuration is locked; retry"


class _Delete:
    """Sentinel returned by a transform to remove the file."""


DELETE: Final = _Delete()
Transform = Callable[[str | None], "str | _Delete | None"]
_counter = itertools.count(1)


def resolve(path: str | os.PathLike[str]) -> Path:
    """The final target of ``path`` (every symlink resolved), absolute."""
    return Path(os.path.realpath(os.path.abspath(path)))


def check(target: Path) -> os.stat_result | None:
    """``lstat`` the resolved target and refuse what must not be edited.

    Returns:
        The stat result, or None when the file does not exist.

    Raises:
        InstallError: not a regular file (FIFO, directory, device), or larger than 4 MiB.
    """
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InstallError(f"{target}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InstallError(f"{target} is not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise InstallError(f"{target} is larger than 4 MiB")
    return st


def read_text(target: Path) -> tuple[str | None, os.stat_result | None]:
    """Read a checked file without locking (status, pre-validation).

    Raises:
        InstallError: see :func:`check`; unreadable or not UTF-8.
    """
    if check(target) is None:
        return None, None
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise InstallError(f"{target}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise InstallError(f"{target} is not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise InstallError(f"{target} is larger than 4 MiB")
        data = fh.read(MAX_FILE_BYTES + 1)
    try:
        return data.decode("utf-8"), st
    except UnicodeDecodeError:
        raise InstallError(f"{target}: not UTF-8 text") from None


def _lock(directory: Path, name: str, timeout_s: float) -> int:
    path = directory / f".{name}.signaltty.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, NEW_FILE_MODE)
    except OSError as exc:
        raise InstallError(f"{path}: {exc.strerror}") from None
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                os.close(fd)
                raise InstallError(LOCKED) from None
            time.sleep(_LOCK_RETRY_S)


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _unchanged_since(target: Path, before: os.stat_result | None) -> None:
    try:
        now = os.stat(target)
    except FileNotFoundError:
        now = None
    if (before is None) != (now is None) or (
        before is not None and now is not None and _identity(before) != _identity(now)
    ):
        raise InstallError(f"{target} changed during setup; retry")


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace(target: Path, text: str, before: os.stat_result | None) -> None:
    mode = stat.S_IMODE(before.st_mode) if before is not None else NEW_FILE_MODE
    tmp = target.parent / f".{target.name}.signaltty-{os.getpid()}-{next(_counter)}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, NEW_FILE_MODE)
    except OSError as exc:
        raise InstallError(f"{target.parent}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        _unchanged_since(target, before)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise InstallError(f"{target}: {exc.strerror}") from None
        raise
    _fsync_dir(target.parent)


def _make_dirs(directory: Path) -> None:
    """Create ``directory`` and every missing parent with mode 0700 (§1.4)."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:
            pass
        except OSError as exc:
            raise InstallError(f"{path}: {exc.strerror}") from None


def edit(
    path: str | os.PathLike[str], transform: Transform, *, lock_timeout_s: float = LOCK_TIMEOUT_S
) -> tuple[Path, bool]:
    """Edit one provider file safely.

    Args:
        path: the provider file (may be a symlink; its final target is edited).
        transform: ``old text or None (missing) → new text``, ``None`` for no change, or
            :data:`DELETE` to remove the file. May raise :class:`InstallError`.
        lock_timeout_s: bounded wait for the advisory lock (s).

    Returns:
        ``(resolved target, changed)``; ``changed`` is False when nothing was written.

    Raises:
        InstallError: refused file (see :func:`check`), ``configuration is locked; retry``,
            ``<file> changed during setup; retry``, an error from ``transform``, or an OS
            error while writing. The file is untouched in every case.

    Spec: integrations.md §1.4.
    """
    target = resolve(path)
    check(target)
    if not target.parent.is_dir():
        if transform(None) in (None, DELETE):
            return target, False
        _make_dirs(target.parent)
    fd = _lock(target.parent, target.name, lock_timeout_s)
    try:
        old, before = read_text(target)
        new = transform(old)
        if new is None or new == old or (new is DELETE and old is None):
            return target, False
        if isinstance(new, _Delete):
            _unchanged_since(target, before)
            try:
                os.unlink(target)
            except OSError as exc:
                raise InstallError(f"{target}: {exc.strerror}") from None
            _fsync_dir(target.parent)
            return target, True
        _replace(target, new, before)
        return target, True
    finally:
        os.close(fd)
