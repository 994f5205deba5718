"""Who is on the other end of the daemon socket (stdlib only: the hook fast path imports it).

A client proves, before sending a byte, that the socket belongs to its own daemon:

* the socket's directory is owned by the client's effective uid and has no group or other
  permission bits (mode 0700), so no other user can have put a socket there, and
* the process listening on the connected socket runs as that uid (``SO_PEERCRED`` on
  Linux; ``LOCAL_PEERCRED``/``getpeereid`` on macOS and the BSDs), and
* inside a pane (``$SIGNALTTY_DAEMON`` set by the daemon that started it), that process is
  that very daemon: same pid, same start time (:func:`daemon_identity_problem`). A pane
  process has the person's uid and can re-bind the socket path; it cannot change the
  environment the agent was started with.

A reporter that is about to obey a verdict asks one thing more
(:func:`verdict_source_problem`): without ``$SIGNALTTY_DAEMON`` the server must be one of its
own ancestors, so an agent outside every pane never obeys whatever holds the socket path;
and the process that listens must still be alive with that pid (its pidfd), since a dead
listener's pid may have been taken by one of those ancestors.

The second check is the one that holds against races (a directory swapped between the
``stat`` and the ``connect``); the first refuses a foreign ``/tmp/signaltty-<uid>`` before
even connecting. The effective uid is compared on both sides: it is what owns files the
daemon creates and what ``SO_PEERCRED`` reports.

``peer_uid`` lives here rather than in ``signaltty.system`` because the clients are in
``signaltty.proto``, which must not import the layers above it; ``signaltty.system.peercred``
re-exports it for the listener.

Spec: protocol.md §1 "Socket security"; issue 10 §1 (clients authenticate the daemon) and
its third attack pass, A8 (a socket re-bound from a pane).
"""

from __future__ import annotations

# ``_socket``, not ``socket`` (which loads ``enum`` and ``selectors``, ~3 ms): the hook fast
# path imports this module (issue 12). Same constants; ``socket.socket`` is its subclass.
import _socket as socket
import errno
import os
import stat
import struct
import sys

# Linux <sys/socket.h>: struct ucred {pid_t pid; uid_t uid; gid_t gid;}; uid_t is unsigned.
_UCRED = struct.Struct("iII")
# Linux fills ucred with uid (uid_t)-1 when there is no peer: an unconnected socket or a
# socket of another family (TCP).
_NO_UID = 0xFFFFFFFF
# macOS <sys/un.h> and <sys/ucred.h>.
_SOL_LOCAL = 0
_LOCAL_PEERCRED = getattr(socket, "LOCAL_PEERCRED", 0x001)
_XUCRED_VERSION = 0
# struct xucred {u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16];}
_XUCRED = struct.Struct("IIh16I")
_LOCAL_PEERPID = getattr(socket, "LOCAL_PEERPID", 0x002)
_PID = struct.Struct("i")
# Group and other bits: any of them lets another user list, enter or write the directory.
_NOT_PRIVATE = stat.S_IRWXG | stat.S_IRWXO


def peer_uid(sock: socket.socket) -> int | None:
    """Return the uid of the process on the other end of a connected ``AF_UNIX`` socket.

    Args:
        sock: an accepted, connected or socketpair Unix stream socket (or an object with
            the same ``getsockopt``/``fileno``, e.g. asyncio's transport socket).

    Returns:
        The peer's effective uid, or None when the platform offers no mechanism, the socket
        is not a connected Unix socket (Linux then reports uid ``(uid_t)-1``), or the call
        fails. For a listening server the uid is the one it had when it called ``listen``.

    Raises:
        Nothing.

    Spec: protocol.md §1 "Socket security" (Linux ``SO_PEERCRED``, macOS
    ``LOCAL_PEERCRED``/``getpeereid``).
    """
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is not None:
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, so_peercred, _UCRED.size)
        except OSError:
            return None
        if len(raw) != _UCRED.size:
            return None
        _pid, uid, _gid = _UCRED.unpack(raw)
        return None if uid == _NO_UID else int(uid)
    if sys.platform == "darwin":
        uid = _local_peercred_uid(sock)
        if uid is not None:
            return uid
    return _getpeereid_uid(sock)


def _local_peercred_uid(sock: socket.socket) -> int | None:
    """Read the peer uid with ``getsockopt(SOL_LOCAL, LOCAL_PEERCRED)`` (macOS)."""
    try:
        raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, _XUCRED.size)
    except OSError:
        return None
    return _xucred_uid(raw)


def _xucred_uid(raw: bytes) -> int | None:
    """Return ``cr_uid`` of a packed ``struct xucred``, or None for a short or unknown layout."""
    if len(raw) < _XUCRED.size:
        return None
    version, uid, *_groups = _XUCRED.unpack_from(raw)
    if version != _XUCRED_VERSION:
        return None
    return int(uid)


def _getpeereid_uid(sock: socket.socket) -> int | None:
    """Call libc ``getpeereid(fd, &euid, &egid)`` through ctypes; None if libc lacks it."""
    try:
        import ctypes
    except ImportError:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        getpeereid = getattr(libc, "getpeereid", None)
        if getpeereid is None:
            return None
        euid = ctypes.c_uint32()
        egid = ctypes.c_uint32()
        if getpeereid(sock.fileno(), ctypes.byref(euid), ctypes.byref(egid)) != 0:
            return None
    except OSError:
        return None
    return None if euid.value == _NO_UID else int(euid.value)


def private_dir_problem(info: os.stat_result, directory: str, uid: int | None = None) -> str | None:
    """Say why a directory cannot hold our socket, or None when it can.

    Args:
        info: ``os.stat`` (or ``lstat``) of ``directory``.
        directory: its path, for the message.
        uid: the uid that must own it; None means ``os.geteuid()``.

    Returns:
        None for a directory owned by ``uid`` without group/other bits (mode 0700, 0500…);
        otherwise one sentence, e.g. ``"/tmp/signaltty-1000 is owned by uid 1001, not by
        you (uid 1000)"`` or ``"/tmp/x has mode 0755; it must be 0700 (no group or other
        access)"``.

    Spec: issue 10 §1 (the socket's directory is owned by the user, mode 0700).
    """
    me = os.geteuid() if uid is None else uid
    if not stat.S_ISDIR(info.st_mode):
        return f"{directory} is not a directory"
    if info.st_uid != me:
        return f"{directory} is owned by uid {info.st_uid}, not by you (uid {me})"
    mode = stat.S_IMODE(info.st_mode)
    if mode & _NOT_PRIVATE:
        return f"{directory} has mode {mode:04o}; it must be 0700 (no group or other access)"
    return None


def socket_dir_problem(path: str) -> str | None:
    """Check the directory holding the socket ``path`` (symlinks followed).

    Returns:
        None when it is private to us; a sentence from :func:`private_dir_problem` otherwise.

    Raises:
        OSError: the directory cannot be examined (e.g. ``FileNotFoundError``: no daemon).
    """
    directory = os.path.dirname(os.path.abspath(path))
    return private_dir_problem(os.stat(directory), directory)


def server_problem(sock: socket.socket, path: str) -> str | None:
    """Check who listens on a connected socket.

    Returns:
        None when the server runs as our effective uid; otherwise a sentence naming its uid
        (or saying it cannot be known).
    """
    me = os.geteuid()
    uid = peer_uid(sock)
    if uid is None:
        return f"cannot tell which user runs the server on {path}"
    if uid != me:
        return f"the server on {path} runs as uid {uid}, not as you (uid {me})"
    return None


# ---------------------------------------------------------------- the daemon a pane belongs to

# Set by the daemon in every pane's environment (server/spawning.py): "<pid>:<start ticks>".
# A process in a pane cannot change the environment the agent (and so its hook reporter)
# was started with, but it can take over the socket path (same uid, same 0700 directory):
# inside a pane, the uid checks above cannot tell the daemon from an impostor; this can.
DAEMON_ENV = "SIGNALTTY_DAEMON"
# /proc/<pid>/stat is one short line: pid, (comm ≤ 64 bytes), then 50 numbers.
_STAT_READ = 4096
# Fields after the closing ")" of comm: field 3 (state) is index 0, so field 22 is index 19.
_STARTTIME_INDEX = 22 - 3
# Field 4 (ppid).
_PPID_INDEX = 4 - 3
_MAX_PID = 1 << 22  # PID_MAX_LIMIT (linux/threads.h)
# Ancestors walked at most: far more than any real chain (daemon → shell → agent → hook
# runner → reporter is about five), and a bound on a corrupt or looping /proc.
_MAX_ANCESTORS = 64
_SHOWN = 64  # characters of a malformed value quoted back


def _stat_numbers(pid: int, *indexes: int) -> tuple[int, ...] | None:
    """Fields of ``/proc/<pid>/stat`` after comm (index 0 is field 3), as integers.

    Returns:
        The values, or None when there is no such process, no ``/proc`` (macOS), or the
        line cannot be parsed. Raises nothing.
    """
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, _STAT_READ)
    except OSError:
        return None
    finally:
        os.close(fd)
    # comm (field 2) may hold spaces and ")": the fields resume after the last ")"
    fields = data[data.rfind(b")") + 1 :].split()
    try:
        return tuple(int(fields[i]) for i in indexes)
    except (IndexError, ValueError):
        return None


def process_start_ticks(pid: int) -> int | None:
    """Return when process ``pid`` started, in clock ticks after boot (``/proc`` only).

    Field 22 of ``/proc/<pid>/stat`` (proc(5) ``starttime``). It stays readable for a
    non-dumpable process (``PR_SET_DUMPABLE`` 0 hides ``environ`` and ``mem``, not this),
    and a pid reused by a later process has a later start time.

    Returns:
        The tick count, or None when there is no such process, no ``/proc`` (macOS), or the
        line cannot be parsed. Raises nothing.
    """
    numbers = _stat_numbers(pid, _STARTTIME_INDEX)
    return None if numbers is None else numbers[0]


def ancestors(pid: int | None = None) -> list[tuple[int, int]]:
    """``(pid, start ticks)`` of the parent of ``pid`` (default: this process), its parent,
    and so on up to init, from ``/proc/<pid>/stat`` fields 4 (ppid) and 22 (starttime).

    At most ``_MAX_ANCESTORS`` entries; the walk stops early at a process that vanished or
    cannot be read. A parent that started after its child is a reused pid (the real parent
    exited): the walk stops there too, since that process is not an ancestor.

    Returns:
        The chain, nearest first; empty without ``/proc`` (macOS). Raises nothing.
    """
    chain: list[tuple[int, int]] = []
    current = _stat_numbers(os.getpid() if pid is None else pid, _PPID_INDEX, _STARTTIME_INDEX)
    while current is not None and len(chain) < _MAX_ANCESTORS:
        parent, child_ticks = current
        if parent <= 0:
            break
        up = _stat_numbers(parent, _PPID_INDEX, _STARTTIME_INDEX)
        if up is None or up[1] > child_ticks:
            break
        chain.append((parent, up[1]))
        current = up
    return chain


def identity_token(pid: int | None = None) -> str:
    """The ``SIGNALTTY_DAEMON`` value naming process ``pid`` (default: this process).

    Returns:
        ``"<pid>:<start ticks>"``, or ``"<pid>:"`` where ``/proc`` is missing (macOS):
        clients there compare the pid only.
    """
    pid = os.getpid() if pid is None else pid
    ticks = process_start_ticks(pid)
    return f"{pid}:" if ticks is None else f"{pid}:{ticks}"


def parse_identity(value: str) -> tuple[int, int | None] | None:
    """Parse a ``SIGNALTTY_DAEMON`` value.

    Returns:
        ``(pid, ticks)`` (ticks None for ``"<pid>:"``), or None when malformed: anything
        but ASCII digits, one colon and optional digits, a pid of 0 or above the kernel's
        limit.
    """
    pid_text, colon, ticks_text = value.partition(":")
    if not colon or not _digits(pid_text) or (ticks_text and not _digits(ticks_text)):
        return None
    pid = int(pid_text)
    if not 0 < pid <= _MAX_PID:
        return None
    return pid, int(ticks_text) if ticks_text else None


def _digits(text: str) -> bool:
    # str.isdigit() also takes "²" and other Unicode digits; int() would reject some
    return 0 < len(text) <= 20 and all("0" <= ch <= "9" for ch in text)


def peer_pid(sock: socket.socket) -> int | None:
    """Return the pid of the server on a connected ``AF_UNIX`` client socket.

    For a listening server the kernel records the process that called ``listen``
    (``SO_PEERCRED`` on Linux, ``LOCAL_PEERPID`` on macOS).

    Returns:
        The pid (> 0), or None when the platform offers neither or the call fails.
    """
    so_peercred = getattr(socket, "SO_PEERCRED", None)
    try:
        if so_peercred is not None:
            raw = sock.getsockopt(socket.SOL_SOCKET, so_peercred, _UCRED.size)
            pid = _UCRED.unpack(raw)[0] if len(raw) == _UCRED.size else 0
        elif sys.platform == "darwin":
            raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID, _PID.size)
            pid = _PID.unpack(raw)[0] if len(raw) == _PID.size else 0
        else:
            return None
    except OSError:
        return None
    return int(pid) if pid > 0 else None


def daemon_identity_problem(
    sock: socket.socket, path: str, expected: str | None = None
) -> str | None:
    """Inside a pane, check that the server is the very daemon that started the pane.

    Args:
        sock: the connected client socket.
        path: the socket path, for the message.
        expected: the ``SIGNALTTY_DAEMON`` value; None reads the environment. Unset (or
            None there): no check, the uid checks alone apply (outside panes).

    Returns:
        None when the variable is unset or the server's pid (``SO_PEERCRED``) and that
        process's start time match it; otherwise one sentence. A malformed value, a pid
        that cannot be read and a start time that cannot be read all fail closed. Where
        there is no ``/proc`` (macOS) and the value carries no start time, the pid alone
        is compared.

    Spec: issue 10 third pass, A8 (a pane process re-binding the socket path).
    """
    value = os.environ.get(DAEMON_ENV) if expected is None else expected
    if value is None:
        return None
    parsed = parse_identity(value)
    if parsed is None:
        shown = ascii(value[:_SHOWN])
        return (
            f"${DAEMON_ENV} is malformed ({shown}; expected <pid>:<start ticks>), so the "
            f"server on {path} cannot be checked (`env -u {DAEMON_ENV}` to run outside the "
            "pane's daemon)"
        )
    want_pid, want_ticks = parsed
    pid = peer_pid(sock)
    if pid is None:
        return f"cannot tell which process runs the server on {path}"
    if pid != want_pid:
        return (
            f"the server on {path} is process {pid}, not this pane's daemon (pid {want_pid},"
            f" ${DAEMON_ENV}): something else took over the socket"
        )
    if want_ticks is not None:
        ticks = process_start_ticks(pid)
        if ticks is None:
            return f"cannot read the start time of process {pid} (the server on {path})"
        if ticks != want_ticks:
            return (
                f"the server on {path} is a later process with pid {pid}, not this pane's "
                "daemon (its start time differs)"
            )
    return None


# asm-generic/socket.h (Linux ≥ 6.5); Python 3.11's socket module lacks the name. A copy of
# signaltty.system.procref's constant: proto must not import system.
_SO_PEERPIDFD = 77
_FDINFO_READ = 4096  # /proc/self/fdinfo/<pidfd> is a few short lines


def _peer_pidfd(sock: socket.socket) -> int | None:
    """A pidfd for the process that called ``listen`` on the server's socket.

    Returns:
        The fd (the caller closes it), or None when the kernel (< 6.5) or the platform has
        no ``SO_PEERPIDFD`` (``ENOPROTOOPT``; any error on a platform without ``/proc``).

    Raises:
        OSError: the kernel has the option but gives no pidfd (older 6.x kernels refuse one,
            ``EINVAL``/``ESRCH``, for a process that has exited and been reaped).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        fd = int(sock.getsockopt(socket.SOL_SOCKET, _SO_PEERPIDFD))
    except OSError as exc:
        if exc.errno in (errno.ENOPROTOOPT, errno.EOPNOTSUPP):
            return None
        raise
    if fd < 0:
        raise OSError(errno.ESRCH, "no pidfd")
    os.set_inheritable(fd, False)
    return fd


def _pidfd_pid(fd: int) -> int | None:
    """The pid a pidfd names now (``Pid:`` of ``/proc/self/fdinfo/<fd>``), or None once its
    process has exited and been reaped (the kernel shows ``-1``) or the line is unreadable.

    A process that has not been reaped keeps its pid, so a positive answer read at time t
    means the pidfd's process held that pid from its start until t. Raises nothing.
    """
    try:
        with open(f"/proc/self/fdinfo/{fd}", "rb") as fh:
            data = fh.read(_FDINFO_READ)
    except OSError:
        return None
    for line in data.splitlines():
        if line.startswith(b"Pid:"):
            try:
                pid = int(line[4:])
            except ValueError:
                return None
            return pid if pid > 0 else None
    return None


def is_signaltty_daemon(pid: int) -> bool:
    """True when ``/proc/<pid>/cmdline`` reads as ``signaltty daemon``: one argument whose
    base name starts with ``signaltty`` (the console script, or ``-m signaltty``), followed
    later by the argument ``daemon``. Raises nothing; False without ``/proc``.

    Used only where the kernel gives no pidfd (before Linux 6.5). The daemon is not dumpable
    (pane processes cannot ptrace it to rewrite its arguments); the ancestor that took a
    dead listener's pid is the agent or its hook runner, whose arguments do not read so.
    """
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            args = fh.read(_STAT_READ).split(b"\0")
    except OSError:
        return False
    for i, arg in enumerate(args):
        if os.path.basename(arg).startswith(b"signaltty") and b"daemon" in args[i + 1 :]:
            return True
    return False


def _listener_problem(sock: socket.socket, path: str, pid: int) -> tuple[str | None, int | None]:
    """Check that the process that listens on the server's socket is alive and has ``pid``.

    Returns:
        ``(problem, pidfd)``: problem None when it holds, else one sentence; pidfd is the
        open pidfd (None without ``SO_PEERPIDFD``) the caller keeps open while it compares
        and then closes. Raises nothing.
    """
    try:
        fd = _peer_pidfd(sock)
    except OSError:
        return f"the process that listens on {path} (pid {pid}) has exited", None
    if fd is None:
        return None, None
    now = _pidfd_pid(fd)
    if now != pid:
        return f"the process that listens on {path} (pid {pid}) has exited", fd
    return None, fd


def verdict_source_problem(sock: socket.socket, path: str) -> str | None:
    """Check that a verdict read from this connection may be obeyed by an agent.

    A reporter obeys the server's ``native_verdict`` only when the server is provably its
    own daemon: with ``$SIGNALTTY_DAEMON`` set, :func:`daemon_identity_problem` already
    checked it when connecting (pid and start time); without it (an agent in an ordinary
    terminal with hooks installed globally, or a hook runner that cleaned the environment),
    the server's pid (``SO_PEERCRED``) must be one of this process's ancestors with the same
    start time before and after the check. Every process in a pane descends from its daemon
    (the daemon spawns panes and is their subreaper), so this costs a pane agent nothing; a
    same-uid process holding the socket path is no ancestor of an agent it wants to fool.

    ``SO_PEERCRED`` names the process that called ``listen``, which may have exited and its
    pid been taken by one of our ancestors (attack pass 5, H1). So the listener must still
    be alive with that pid: its pidfd (``SO_PEERPIDFD``, held open across the comparison)
    must show the pid after the ancestor walk; a live, unreaped process keeps its pid, and
    it listened before we connected, so the ancestor we found is that process. Where the
    kernel has no pidfds (< 6.5), the ancestor must also read as a signaltty daemon
    (:func:`is_signaltty_daemon`). The ``$SIGNALTTY_DAEMON`` path gets the same liveness
    check.

    Returns:
        None when a verdict may be used; otherwise one sentence. Raises nothing.

    Spec: issue 10, fourth attack pass, N1 (a reporter outside panes) and N6 (a reporter
    whose environment lost ``$SIGNALTTY_DAEMON``); fifth pass, H1 (a dead listener's pid).
    """
    pid = peer_pid(sock)
    if pid is None:
        return f"cannot tell which process runs the server on {path}"
    problem, fd = _listener_problem(sock, path, pid)
    try:
        if problem is None:
            problem = _source_problem(sock, path, pid, without_pidfd=fd is None)
        if problem is None and fd is not None and _pidfd_pid(fd) != pid:
            problem = f"the process that listens on {path} (pid {pid}) has exited"
        return problem
    finally:
        if fd is not None:
            os.close(fd)


def _source_problem(sock: socket.socket, path: str, pid: int, *, without_pidfd: bool) -> str | None:
    """The identity half of :func:`verdict_source_problem` (liveness is checked around it;
    ``without_pidfd``: it could not be, so an ancestor must also be a signaltty daemon)."""
    if os.environ.get(DAEMON_ENV) is not None:
        return daemon_identity_problem(sock, path)
    for ancestor, ticks in ancestors():
        if ancestor == pid:
            if process_start_ticks(pid) != ticks:
                return f"process {pid} (the server on {path}) changed while it was checked"
            if without_pidfd and not is_signaltty_daemon(pid):
                break  # perhaps a dead listener's pid, taken by our agent or its shell
            return None
    return (
        f"the server on {path} (process {pid}) is not a signaltty daemon this process runs "
        f"under, and ${DAEMON_ENV} is unset"
    )
