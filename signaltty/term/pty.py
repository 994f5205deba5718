"""Spawn programs in PTYs, resize, signal, and watch for their exit (Linux + macOS).

The child gets a new session and opens the slave **by path** after ``setsid``, so the slave
becomes its controlling terminal and Ctrl-C (``^C`` → SIGINT to the foreground process group)
reaches any program, not only shells that grab a ctty themselves. Exit is watched with
``os.pidfd_open`` where available (uvloop refuses SIGCHLD handlers, and ``waitpid(-1)`` would
steal other code's children); elsewhere one waiter thread per child blocks in ``waitpid(pid)``.

Spec: protocol.md §5 (``pane.spawn``, ``pane.resize``, ``pane.signal``), issue #2 §4.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import select
import shutil
import signal
import struct
import termios
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

# Signals whose disposition the child must not inherit from the daemon (Python ignores
# SIGPIPE; a daemon started with `&` from a non-interactive shell ignores SIGINT/SIGQUIT).
_RESET_SIGNALS = tuple(
    getattr(signal, name)
    for name in (
        "SIGPIPE",
        "SIGINT",
        "SIGQUIT",
        "SIGTERM",
        "SIGHUP",
        "SIGXFSZ",
        "SIGCHLD",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGUSR1",
        "SIGUSR2",
        "SIGWINCH",
    )
    if hasattr(signal, name)
)

# Serializes the short chdir window around posix_spawn (Python exposes no chdir file action).
_spawn_lock = threading.Lock()


class SpawnError(OSError):
    """The PTY could not be created or the program could not be started."""


@dataclass(slots=True)
class PtyProcess:
    """A child running on a PTY: ``pid`` (also its session and process-group id) and
    ``master_fd``."""

    pid: int
    master_fd: int
    slave_path: str


def resolve_program(name: str, path_env: str, cwd: str) -> str:
    """Find the executable for ``argv[0]``.

    Args:
        name: ``argv[0]``; with a ``/`` it is taken relative to ``cwd``; bare names are
            looked up on ``path_env`` (the pane's PATH, not the daemon's).

    Raises:
        SpawnError: ``ENOENT`` "command not found: NAME" / ``EACCES`` not executable.
    """
    if "/" in name:
        prog = name if os.path.isabs(name) else os.path.normpath(os.path.join(cwd, name))
        if not os.path.exists(prog):
            raise SpawnError(errno.ENOENT, f"command not found: {name}")
        if os.path.isdir(prog) or not os.access(prog, os.X_OK):
            raise SpawnError(errno.EACCES, f"not executable: {name}")
        return prog
    found = shutil.which(name, path=path_env)
    if found is None:
        raise SpawnError(errno.ENOENT, f"command not found: {name}")
    return os.path.abspath(found)


def set_winsize(fd: int, cols: int, rows: int) -> None:
    """TIOCSWINSZ on ``fd``; the kernel sends SIGWINCH to the foreground process group."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    cols: int,
    rows: int,
) -> PtyProcess:
    """Start ``argv`` on a new PTY of ``cols``×``rows`` cells.

    ``argv[0]`` must already be resolved (see ``resolve_program``). The master is
    non-blocking and close-on-exec.

    Raises:
        SpawnError: PTY allocation or exec failed (``errno`` set).
    """
    try:
        master, slave = os.openpty()
    except OSError as exc:
        raise SpawnError(exc.errno, f"cannot allocate a PTY: {exc.strerror}") from exc
    try:
        slave_path = os.ttyname(slave)
        set_winsize(master, cols, rows)
        attrs = termios.tcgetattr(slave)
        attrs[3] |= termios.ECHO | termios.ICANON | termios.ISIG | termios.IEXTEN
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        file_actions = [
            (os.POSIX_SPAWN_OPEN, 0, slave_path, os.O_RDWR, 0),
            (os.POSIX_SPAWN_DUP2, 0, 1),
            (os.POSIX_SPAWN_DUP2, 0, 2),
        ]
        with _spawn_lock:
            old = os.getcwd() if os.path.isdir(".") else None
            os.chdir(cwd)
            try:
                pid = os.posix_spawn(
                    argv[0],
                    list(argv),
                    dict(env),
                    file_actions=file_actions,
                    setsid=True,
                    setsigdef=_RESET_SIGNALS,
                    setsigmask=(),
                )
            finally:
                if old is not None:
                    os.chdir(old)
    except OSError as exc:
        os.close(master)
        raise SpawnError(exc.errno or errno.EIO, f"cannot start {argv[0]}: {exc.strerror}") from exc
    finally:
        os.close(slave)
    os.set_blocking(master, False)
    return PtyProcess(pid=pid, master_fd=master, slave_path=slave_path)


def decode_status(status: int) -> int | None:
    """Wait status → exit code; killed by signal N → ``128 + N`` (protocol.md §4 ``live``)."""
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return None


def try_reap(pid: int) -> tuple[bool, int | None]:
    """Non-blocking ``waitpid(pid)``: ``(exited, code)``; a vanished child is ``(True, None)``."""
    try:
        wpid, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True, None
    if wpid == 0:
        return False, None
    return True, decode_status(status)


class ExitWatcher:
    """Calls ``on_exit(code)`` once on the loop when ``pid`` ends, then reaps it.

    Linux: a pidfd registered with ``loop.add_reader``. Elsewhere: a daemon thread blocked in
    ``waitpid(pid, 0)`` that hands the status to the loop.

    ``child=False`` watches a process that is not ours to reap (a pane program kept across a
    daemon crash by systemd's fd store, issue 15 item 2): its end is seen through the pidfd
    and reported with code ``None`` — the status went to whoever reaps it. Linux only: without
    a pidfd the end of such a process is never seen.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        pid: int,
        on_exit: Callable[[int | None], None],
        *,
        child: bool = True,
    ) -> None:
        self._loop = loop
        self._pid = pid
        self._on_exit = on_exit
        self._child = child
        self._done = False
        self._pidfd: int | None = None
        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is not None:
            try:
                self._pidfd = pidfd_open(pid)
            except OSError:
                self._pidfd = None
        if self._pidfd is not None:
            loop.add_reader(self._pidfd, self._on_pidfd)
            # The child may have exited before the reader was registered.
            self._on_pidfd()
        elif child:
            threading.Thread(target=self._wait_thread, name=f"wait-{pid}", daemon=True).start()

    def _on_pidfd(self) -> None:
        if self._done:
            return
        if not self._child:
            assert self._pidfd is not None
            if select.select([self._pidfd], [], [], 0)[0]:  # readable once the process ended
                self._finish(None)
            return
        exited, code = try_reap(self._pid)
        if exited:
            self._finish(code)

    def _wait_thread(self) -> None:
        try:
            _, status = os.waitpid(self._pid, 0)
            code: int | None = decode_status(status)
        except ChildProcessError:
            code = None
        with contextlib.suppress(RuntimeError):  # the loop closed during shutdown
            self._loop.call_soon_threadsafe(self._finish, code)

    def _finish(self, code: int | None) -> None:
        if self._done:
            return
        self._done = True
        self.close()
        self._on_exit(code)

    def close(self) -> None:
        """Stop watching (idempotent); the pidfd is closed."""
        if self._pidfd is not None:
            with contextlib.suppress(RuntimeError, ValueError):
                self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None


def signal_child(pid: int, sig: int, *, group: bool, master_fd: int | None) -> None:
    """Send ``sig`` to the child, or to the PTY's foreground process group (``tcgetpgrp``).

    Raises:
        ProcessLookupError: nothing to signal.
    """
    if group:
        pgid = None
        if master_fd is not None:
            try:
                pgid = os.tcgetpgrp(master_fd)
            except OSError:
                pgid = None
        if pgid is None or pgid <= 0:
            pgid = os.getpgid(pid)
        os.killpg(pgid, sig)
    else:
        os.kill(pid, sig)
