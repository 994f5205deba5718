"""Safe edits of a provider file: lock, checks, atomic replace (OS layer;
Spec: integrations.md §1.4).

One entry point, :func:`edit`: resolve symlinks, refuse anything that is not a regular file
or is over 4 MiB, take ``.<name>.signaltty.lock`` with a bounded wait, read, let the caller
compute the new text, and replace the file atomically (temp file with the original
permissions, ``fsync``, a last check that the file is still the one read — same inode,
stat and bytes —, ``os.replace``, directory ``fsync``). Identical content is never written,
so bytes and mtime stay unchanged. An editor saving in place meanwhile is detected before
and after the rename and its save is kept (see "in-place editors" below).
"""

from __future__ import annotations

import contextlib
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
    # Not ctime: renaming over a file changes the replaced inode's ctime (its link count),
    # which is not a write. Timestamps are coarse (a clock tick), so bytes are compared too.
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _changed_error(target: Path) -> InstallError:
    return InstallError(f"{target} changed during setup; retry")


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ------------------------------------------------------------------ in-place editors
#
# An editor that saves in place (nano, `cat >`, many IDEs) opens the file with O_TRUNC and
# then writes. Our replace is a rename, so an editor that opened the file *before* the
# rename keeps writing into the old inode, which is no longer the file: its save would be
# lost, and a read that fell between its truncation and its write would have made us merge
# into an empty file (the user's entries gone). So the edit keeps a descriptor on every
# inode it reads or replaces and compares them (identity and bytes: timestamps are coarse)
# right before the rename and right after it. A save that landed in the replaced inode is
# read back from it and the edit is redone on top of it; an unparsable file is only refused
# once it stayed unchanged for SETTLE_S, and a blank file is never replaced (see EMPTY).
# When the file keeps changing, the edit gives up with "changed during setup; retry" and the
# user's latest bytes in place.

# A blank or unparsable file must stay unchanged this long before it is trusted (s).
SETTLE_S: Final = 0.05
_POLL_S: Final = 0.002
# A blank file is never replaced or removed, however old: a slow in-place save
# (`slow_cmd > settings.json`) truncates, then writes maybe seconds or minutes later through
# the descriptor it holds; after a rename its bytes go to an unlinked inode and are lost.
# No age tells a finished empty file from a save under way (issue 10: 2.5 s and 5 s saves
# lost the person's settings when a blank file was trusted after 2 s). Writing through the
# same inode instead would leave the late writer's bytes followed by the tail of ours (it
# writes from offset 0, not O_APPEND): a broken file. So the edit is refused, file untouched.
EMPTY: Final = "{target} is empty; not changing it — run again when it has content"
# Attempts and total time one edit may spend retrying behind a busy editor.
MAX_ATTEMPTS: Final = 10
EDIT_BUDGET_S: Final = 2.0


class _Seen:
    """One inode as read: an open descriptor on it, its stat, its bytes (``fd`` None: absent)."""

    __slots__ = ("data", "fd", "st")

    def __init__(self, fd: int | None, st: os.stat_result | None, data: bytes | None) -> None:
        self.fd, self.st, self.data = fd, st, data

    def unchanged(self) -> bool:
        """Same identity and same bytes as when read (an absent file: trivially)."""
        if self.fd is None or self.st is None:
            return True
        return (
            _identity(os.fstat(self.fd)) == _identity(self.st) and _pread_all(self.fd) == self.data
        )

    def is_at(self, target: Path) -> bool:
        """``target`` is this inode (or is still absent when this is the absent file)."""
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            return self.fd is None
        return self.st is not None and st.st_ino == self.st.st_ino and st.st_dev == self.st.st_dev

    def blank(self) -> bool:
        return self.data is not None and not self.data.strip()

    def refresh(self) -> None:
        """Re-read the same inode (after it changed)."""
        if self.fd is not None:
            self.st = os.fstat(self.fd)
            self.data = _pread_all(self.fd)


def _pread_all(fd: int, limit: int = MAX_FILE_BYTES + 1) -> bytes:
    parts: list[bytes] = []
    offset = 0
    while offset < limit:
        chunk = os.pread(fd, min(1 << 20, limit - offset), offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def _open_seen(target: Path, opened: list[int]) -> _Seen:
    """Open and read what is at ``target`` now (its descriptor joins ``opened``)."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return _Seen(None, None, None)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _changed_error(target) from None  # became a symlink since resolve()
        raise InstallError(f"{target}: {exc.strerror}") from None
    opened.append(fd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise InstallError(f"{target} is not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise InstallError(f"{target} is larger than 4 MiB")
    data = _pread_all(fd)
    if len(data) > MAX_FILE_BYTES:
        raise InstallError(f"{target} is larger than 4 MiB")
    return _Seen(fd, st, data)


def _moves_within(seen: _Seen, target: Path | None, seconds: float) -> bool:
    """True when ``seen`` changes, or ``target`` stops naming it, within ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        if not seen.unchanged() or (target is not None and not seen.is_at(target)):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)


def _settle(seen: _Seen, deadline: float, *, expect_content: bool) -> None:
    """Wait until ``seen`` stays unchanged for SETTLE_S, then re-read it.

    With ``expect_content`` (a file that had content was truncated: its writer has more to
    say) a blank file is waited on until it changes. Never past ``deadline``.
    """
    while True:
        seen.refresh()
        quiet_until = time.monotonic() + SETTLE_S
        while seen.unchanged():
            now = time.monotonic()
            if now >= deadline or (now >= quiet_until and not (expect_content and seen.blank())):
                return
            time.sleep(_POLL_S)


def _write_temp(target: Path, data: bytes, mode: int, opened: list[int]) -> tuple[Path, _Seen]:
    """A durable temp file next to ``target`` holding ``data`` (its fd stays open)."""
    tmp = target.parent / f".{target.name}.signaltty-{os.getpid()}-{next(_counter)}"
    try:
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, NEW_FILE_MODE)
    except OSError as exc:
        raise InstallError(f"{target.parent}: {exc.strerror}") from None
    opened.append(fd)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        return tmp, _Seen(fd, os.fstat(fd), data)
    except OSError as exc:
        _unlink_quietly(tmp)
        raise InstallError(f"{target}: {exc.strerror}") from None


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _install_file(tmp: Path, target: Path, victim: _Seen) -> bool:
    """Put ``tmp`` at ``target`` if ``target`` is still ``victim``; False when it is not.

    An absent target is created with ``link`` (fails if someone created it meanwhile);
    a present one is replaced with ``rename``.
    """
    if victim.fd is None:
        try:
            os.link(tmp, target)
        except FileExistsError:
            return False
        os.unlink(tmp)
        return True
    os.replace(tmp, target)
    return True


def _put_back(target: Path, user: _Seen, ours: _Seen, opened: list[int]) -> None:
    """Give up: put the user's latest bytes back where our file is (only if it still is)."""
    if user.data is None or user.st is None or not ours.is_at(target) or not ours.unchanged():
        return
    tmp, _ = _write_temp(target, user.data, stat.S_IMODE(user.st.st_mode), opened)
    os.replace(tmp, target)
    _fsync_dir(target.parent)


def _decode(target: Path, data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InstallError(f"{target}: not UTF-8 text") from None


def _edit_locked(target: Path, transform: Transform) -> bool:
    """The read → transform → replace loop of :func:`edit` (the lock is held)."""
    deadline = time.monotonic() + EDIT_BUDGET_S
    opened: list[int] = []
    tmp: Path | None = None
    try:
        # base: what we merge into; victim: what we replace
        base = victim = _open_seen(target, opened)
        for _ in range(MAX_ATTEMPTS):
            if time.monotonic() >= deadline:
                break
            if base is victim and base.blank() and _moves_within(base, target, SETTLE_S):
                base = victim = _open_seen(target, opened)  # truncated, being written: read again
                continue
            try:
                old = _decode(target, base.data)
                new = transform(old)
            except InstallError:
                # unparsable may mean half-written: only a file that stays so is refused
                if (
                    base is victim
                    and base.data is not None
                    and _moves_within(base, target, SETTLE_S)
                ):
                    base = victim = _open_seen(target, opened)
                    continue
                if base is not victim:
                    _put_back(target, base, victim, opened)  # the user's save, as they wrote it
                raise  # refused with the file untouched: nothing of a later save is lost
            if base is victim and (new is None or new == old or (new is DELETE and old is None)):
                return False
            if base.blank():
                # its writer may still be on the way (see EMPTY): never replaced nor removed
                if base is not victim:
                    _put_back(target, base, victim, opened)
                raise InstallError(EMPTY.format(target=target))
            if isinstance(new, _Delete):
                if not (victim.is_at(target) and victim.unchanged()):
                    base = victim = _open_seen(target, opened)
                    continue
                os.unlink(target)
                if victim.unchanged():
                    _fsync_dir(target.parent)
                    return True
                # an in-place save landed in the file just removed: put it back, refuse
                _settle(victim, deadline, expect_content=not victim.blank())
                mode = stat.S_IMODE(victim.st.st_mode) if victim.st is not None else NEW_FILE_MODE
                tmp, _ = _write_temp(target, victim.data or b"", mode, opened)
                if not _install_file(tmp, target, _Seen(None, None, None)):
                    _unlink_quietly(tmp)
                tmp = None
                raise _changed_error(target)
            text = old if new is None else new
            assert isinstance(text, str)
            mode_from = base.st or victim.st
            mode = stat.S_IMODE(mode_from.st_mode) if mode_from is not None else NEW_FILE_MODE
            tmp, ours = _write_temp(target, text.encode("utf-8"), mode, opened)
            # last look before the rename: the file is still the one we read, byte for byte
            if not (victim.is_at(target) and victim.unchanged() and base.unchanged()):
                _unlink_quietly(tmp)
                tmp = None
                base = victim = _open_seen(target, opened)
                continue
            if not _install_file(tmp, target, victim):
                _unlink_quietly(tmp)
                tmp = None
                base = victim = _open_seen(target, opened)
                continue
            tmp = None
            # A save that opened the old inode before the rename writes into it afterwards.
            # A blank old file hides the truncation, so it is watched for SETTLE_S.
            quiet = victim.unchanged() and not (
                victim.blank() and _moves_within(victim, None, SETTLE_S)
            )
            if quiet:
                _fsync_dir(target.parent)
                return True
            _settle(victim, deadline, expect_content=not victim.blank())
            base, victim = victim, ours  # redo the edit on the user's save, replacing ours
        if base is not victim:
            _put_back(target, base, victim, opened)
        raise _changed_error(target)
    except OSError as exc:
        raise InstallError(f"{target}: {exc.strerror}") from None
    finally:
        if tmp is not None:
            _unlink_quietly(tmp)
        for fd in opened:
            os.close(fd)


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
            ``<file> changed during setup; retry``, ``<file> is empty; not changing it — run
            again when it has content`` (a blank file that would change: an in-place save may
            still be writing it), an error from ``transform``, or an OS error while writing.
            The file is untouched in every case.

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
        return target, _edit_locked(target, transform)
    finally:
        os.close(fd)
