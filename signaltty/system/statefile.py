"""Open, read and replace files in the state dir without trusting what is at the path.

Why (attack pass 4, N5): a same-uid process can put a FIFO, a directory, a symlink (to
``/dev/zero``, say) or a huge sparse file where the daemon keeps ``snapshot.json``,
``pane-processes.json``, the tails, ``daemon.lock`` or ``signaltty.log``. A plain ``open``
blocks on a FIFO forever and a plain ``read`` of ``/dev/zero`` never ends, which froze the
daemon. Every state file is therefore opened with ``O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC``
(a FIFO opens at once or fails, a symlink is refused with ``ELOOP``), ``fstat``-checked to
be a regular file, and read only up to a bound. What is not a regular file is moved aside
(``<name>.bad-<UTC stamp>``) so the next start finds the path free.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
import time
from pathlib import Path

_OPEN_FLAGS = os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


class NotRegularFile(OSError):
    """The path holds something other than a regular file (FIFO, directory, symlink, device).

    Attributes:
        kind: a word for what is there ("fifo", "directory", "symlink", "device", "socket").
    """

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{path.name} is a {kind}, not a regular file")
        self.kind = kind


class TooLarge(OSError):
    """The file is bigger than the caller's bound; nothing was read."""

    def __init__(self, path: Path, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"{path.name} has {size} bytes (limit {limit})")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"


def open_regular(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open`` that never blocks, never follows a final symlink and returns only a
    regular file's fd (``O_NONBLOCK`` has no effect on regular files, so it is left set).

    Raises:
        FileNotFoundError: nothing there (without ``O_CREAT``).
        NotRegularFile: a FIFO, directory, symlink, socket or device is at ``path``.
        OSError: any other failure.
    """
    try:
        fd = os.open(path, flags | _OPEN_FLAGS, mode)
    except OSError as exc:
        # ELOOP: a symlink (O_NOFOLLOW); EISDIR: a directory opened for writing;
        # ENXIO: a FIFO without a reader opened for writing (O_NONBLOCK).
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.ENODEV):
            try:
                st_mode = os.lstat(path).st_mode
            except OSError:
                raise exc from None
            if not stat.S_ISREG(st_mode):
                raise NotRegularFile(path, _kind(st_mode)) from None
        raise
    try:
        st_mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(st_mode):
        os.close(fd)
        raise NotRegularFile(path, _kind(st_mode))
    return fd


def read_bounded(path: Path, limit: int) -> bytes:
    """The whole of the regular file at ``path``, at most ``limit`` bytes.

    Raises:
        FileNotFoundError: nothing there.
        NotRegularFile: not a regular file (see :func:`open_regular`).
        TooLarge: its size (``fstat``, so a sparse file is caught unread) is over ``limit``.
        OSError: any other read failure.
    """
    fd = open_regular(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise TooLarge(path, size, limit)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # grew while being read
            raise TooLarge(path, total, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_tail(path: Path, limit: int) -> bytes:
    """The last ``limit`` bytes of the regular file at ``path`` (a huge file is not read
    whole). Raises as :func:`open_regular`."""
    fd = open_regular(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        os.lseek(fd, max(0, size - limit), os.SEEK_SET)
        chunks: list[bytes] = []
        total = 0
        while total < limit:
            chunk = os.read(fd, min(1 << 20, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def aside_name(path: Path, tag: str = "bad") -> Path:
    """``<name>.<tag>-<UTC stamp>`` next to ``path``, with ``.1``, ``.2``… when taken."""
    base = f"{path.name}.{tag}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}"
    candidate = path.with_name(base)
    n = 0
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{base}.{n}")
    return candidate


def move_aside(path: Path, tag: str = "bad") -> Path:
    """Rename whatever is at ``path`` (not following a symlink) to :func:`aside_name`.

    Returns:
        The new path.

    Raises:
        OSError: the rename failed.
    """
    target = aside_name(path, tag)
    os.rename(path, target)
    return target


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably (mode 0600).

    The temp file has a fresh random name created with ``O_EXCL`` (never an existing FIFO
    or symlink); ``rename`` replaces a symlink or FIFO at ``path`` itself, not its target.
    A directory at ``path`` is moved aside (:func:`move_aside`) and the rename retried.

    Raises:
        OSError: the write failed; ``path`` is unchanged.
    """
    atomic_write_many(path.parent, {path.name: data})


# Temp files a batch keeps open between its writes and its syncs (bounds the fds it uses).
_BATCH_FDS = 64


def atomic_write_many(directory: Path, files: dict[str, bytes]) -> None:
    """:func:`atomic_write` for several files of one directory, with one directory ``fsync``.

    Files go in batches: each temp file of a batch is written, then each is ``fsync``-ed,
    then each is renamed over its name; the directory is synced once at the end. So every
    file is replaced only by complete, durable data, as with :func:`atomic_write`. Why: on
    ext4 every ``fsync`` of a file or directory commits the journal; 200 tails saved one by
    one took twice the CPU of one batch (issue 12, docs/benchmarks.md "session 20").

    Args:
        directory: where the files are.
        files: name (no ``/``) → the file's new content.

    Raises:
        OSError: a write or rename failed. Files renamed before it hold their new content,
            the others are unchanged, and no temp file is left.
    """
    items = list(files.items())
    for at in range(0, len(items), _BATCH_FDS):
        _write_batch(directory, items[at : at + _BATCH_FDS])
    if items:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _write_batch(directory: Path, items: list[tuple[str, bytes]]) -> None:
    staged: list[tuple[str, str]] = []  # (name, temp path): written, synced, not yet renamed
    fds: list[int] = []
    try:
        for name, data in items:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
            fds.append(fd)
            staged.append((name, tmp))
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        for fd in fds:
            os.fsync(fd)
        while fds:
            os.close(fds.pop())
        while staged:
            name, tmp = staged[-1]
            _install(tmp, directory / name)
            staged.pop()
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        for _name, tmp in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _install(tmp: str, path: Path) -> None:
    """Rename ``tmp`` over ``path``; a directory planted at ``path`` is moved aside first."""
    try:
        os.replace(tmp, path)
    except OSError as exc:
        if exc.errno not in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST) or not (
            os.path.isdir(path) and not os.path.islink(path)
        ):
            raise
        move_aside(path)
        os.replace(tmp, path)
