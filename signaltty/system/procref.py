"""A pid bound to one process: which process, not which number (Linux; stdlib only).

Why: the self-approval guard (issue 10 item 3) traces the process that answers a permission.
The kernel names that process by a pid recorded when it connected (``SO_PEERCRED``,
``GetConnectionUnixProcessID``). A pid is a number the kernel hands out again once its
process is reaped, so a pane process can connect, pass the connection to a child, exit and
let some process of the person's take the number (attack pass 3, A1/A2). A ``ProcessRef``
remembers which process the number meant:

* a pidfd (``SO_PEERPIDFD``, Linux ≥ 6.5): while it polls not-readable the process has not
  exited, and a live process keeps its pid, so the number still names it;
* else the exact start time (``/proc/<pid>/stat`` field 22, clock ticks since boot) read when
  the connection was accepted, which must be unchanged;
* else an upper bound on the start time (D-Bus: the moment the bus connection's unique name
  appeared; the process that connected was started before it connected).

Start times are in clock ticks since boot (``CLOCK_BOOTTIME``; proc(5) ``starttime``), so
they compare with ``boot_ticks_now``.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time
from dataclasses import dataclass
from typing import Final

# asm-generic/socket.h; Python 3.11's socket module lacks the name
SO_PEERPIDFD: Final = int(getattr(socket, "SO_PEERPIDFD", 77))
# the start time recorded for a process that was already gone when the ref was taken
GONE: Final = -1
_TICKS: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def start_ticks(pid: int) -> int | None:
    """Start time of process ``pid`` in clock ticks since boot, or None when it does not exist.

    A zombie still has one (it is not reaped); callers that care check liveness apart.
    Source: proc(5), ``/proc/<pid>/stat`` field 22; the name (field 2) may hold spaces and
    parentheses, so fields are counted after its last ``)``.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return None
    try:
        rest = raw[raw.rindex(b")") + 1 :].split()
        return int(rest[19])  # rest[0] is field 3 (state)
    except (ValueError, IndexError):
        return None


def boot_ticks_now() -> int:
    """Now, in the clock of ``start_ticks`` (``CLOCK_BOOTTIME`` in clock ticks, rounded up:
    a process started before this call never reads later than it)."""
    ns = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    per_tick = 1_000_000_000 // _TICKS
    return -(-ns // per_tick)


class Pidfd:
    """An owned pidfd, safe to poll from a worker thread while its owner may close it.

    A closed one reads as exited (the safe side: a closed connection's caller is gone).
    """

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._fd is None

    def exited(self) -> bool:
        """True once the process has exited (a pidfd polls readable then; pidfd_open(2))."""
        with self._lock:
            if self._fd is None:
                return True
            poller = select.poll()
            poller.register(self._fd, select.POLLIN)
            return bool(poller.poll(0))

    def close(self) -> None:
        """Close the fd (idempotent)."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


def peer_pidfd(sock: socket.socket) -> Pidfd | None:
    """A pidfd for the process that connected ``sock`` (``SO_PEERPIDFD``), or None when the
    kernel (< 6.5) or platform lacks it. The caller owns it and must ``close`` it."""
    try:
        fd = sock.getsockopt(socket.SOL_SOCKET, SO_PEERPIDFD)
    except OSError:
        return None
    if fd < 0:
        return None
    with contextlib.suppress(OSError):
        os.set_inheritable(fd, False)
    return Pidfd(fd)


@dataclass(frozen=True, slots=True)
class ProcessRef:
    """A caller's pid and what binds it to one process.

    Attributes:
        pid: the number the kernel or the bus reported.
        pidfd: a pidfd for that process (strongest; owned by whoever made the ref).
        start_ticks: its exact start time when the ref was taken (``GONE`` when it no
            longer existed then).
        born_by: the latest start time the real caller can have (D-Bus: when its unique
            name appeared).
    """

    pid: int
    pidfd: Pidfd | None = None
    start_ticks: int | None = None
    born_by: int | None = None

    @classmethod
    def of_socket(cls, sock: socket.socket, pid: int) -> ProcessRef:
        """The ref for an accepted connection's peer ``pid`` (call at accept time): a
        pidfd where the kernel gives one, else the exact start time read now."""
        pidfd = peer_pidfd(sock)
        if pidfd is not None:
            return cls(pid, pidfd=pidfd)
        ticks = start_ticks(pid)
        return cls(pid, start_ticks=GONE if ticks is None else ticks)

    def verdict(self) -> str | None:
        """None while ``pid`` still names the process the ref was taken for, else why not:
        ``gone`` (it exited) or ``reused`` (another process has the number). Reads /proc."""
        if self.pidfd is not None:
            return "gone" if self.pidfd.exited() else None
        now = start_ticks(self.pid)
        if now is None or self.start_ticks == GONE:
            return "gone"
        if self.start_ticks is not None and now != self.start_ticks:
            return "reused"
        if self.born_by is not None and now > self.born_by:
            return "reused"
        return None

    def close(self) -> None:
        """Release the pidfd, if any (idempotent)."""
        if self.pidfd is not None:
            self.pidfd.close()
