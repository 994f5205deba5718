"""The daemon as a child subreaper, and reaping the orphans it adopts (Linux; blocking calls).

Why: a pane process that leaves its pane by double-forking (``setsid -f``, a tmux server,
``nohup … &`` in a subshell) would otherwise be re-parented to init and look like any
process of the person's. With ``PR_SET_CHILD_SUBREAPER`` it is re-parented to the daemon,
so the self-approval guard sees where it came from (``ancestry.caller_origin``,
``daemon_pid``). Issue 10 follow-up, item 3.

The cost: adopted orphans become the daemon's children and must be reaped. Pane children
are reaped by their own watchers (``term.pty``: a pidfd per child and ``waitpid(pid)``),
asyncio subprocesses by the loop, each for its own pid; nothing here may take their exit
status. So only zombies that are (a) not a pane's process and (b) still unreaped at two
scans ``ORPHAN_SCAN_S`` apart are reaped with ``waitpid(pid, WNOHANG)`` — an owner that
waits for its child reaps it within the loop's next turn, long before that.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Container

import psutil

from signaltty.system import libc

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
ORPHAN_SCAN_S = 3.0


def become_subreaper() -> bool:
    """Mark this process a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER, 1)``).

    Returns:
        True when set; False off Linux or when the call failed (the guard then relies on
        sessions and environments only). Raises nothing.
    """
    if not sys.platform.startswith("linux"):
        return False
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1) == 0


class OrphanReaper:
    """Reaps adopted orphans that exited, never a child some other code waits for."""

    def __init__(
        self, record: Callable[[frozenset[int], frozenset[int]], None] | None = None
    ) -> None:
        """``record`` is given the live adopted orphans and every child of this process
        (unreaped: their numbers are not free) after each scan, in the scan's thread: the
        daemon persists the orphans for the next run (``server.pane_records``)."""
        self._seen: set[int] = set()
        self._record = record
        self.adopted: frozenset[int] = frozenset()

    def scan(self, keep: Container[int]) -> list[int]:
        """One scan (call every ``ORPHAN_SCAN_S``; reads ``/proc``, run it off the loop).

        Args:
            keep: pids whose status belongs to someone else (every live pane's process).

        Returns:
            The pids reaped by this scan. ``adopted`` then holds the live children that are
            not in ``keep`` (adopted orphans, and any helper the daemon runs right now).
        """
        zombies: set[int] = set()
        live: set[int] = set()
        kids = children()
        for pid in kids:
            if pid in keep:
                continue
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    zombies.add(pid)
                else:
                    live.add(pid)
            except psutil.Error:
                continue
        self.adopted = frozenset(live)
        if self._record is not None:
            self._record(self.adopted, frozenset(kids))
        reaped = []
        for pid in zombies & self._seen:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if done:
                reaped.append(pid)
        self._seen = zombies - set(reaped)
        return reaped


def kill_adopted(keep: Container[int], spare: Callable[[int], bool]) -> list[int]:
    """SIGKILL every adopted orphan and all its descendants (shutdown; blocking, ≤ ~3 s).

    Why (attack pass 3, A7): once the daemon exits, its adopted orphans are re-parented to
    init and nothing says they came from a pane. Nothing a pane started outlives the daemon
    (as ``_stop_children`` does for pane process groups).

    Args:
        keep: this process's children that are not orphans (pane processes; their own
            watchers reap them).
        spare: True for a child that must survive (a terminal started for the person).

    Returns:
        The pids signalled. Zombie children are reaped. Raises nothing.
    """
    killed: list[int] = []
    for _ in range(3):  # a fork racing the first sweep is re-parented to us: sweep again
        targets: list[psutil.Process] = []
        for pid in children():
            if pid in keep or spare(pid):
                continue
            try:
                top = psutil.Process(pid)
                targets.extend([top, *top.children(recursive=True)])
            except psutil.Error:
                continue
        live = []
        for proc in targets:
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    proc.kill()  # psutil checks the pid still names this process
                    live.append(proc)
            except psutil.Error:
                continue
        killed.extend(p.pid for p in live)
        psutil.wait_procs(targets, timeout=1.0)
        _reap_zombies(keep)
        if not live:
            break
    return killed


def _reap_zombies(keep: Container[int]) -> None:
    for pid in children():
        if pid not in keep:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)


def children() -> set[int]:
    """This process's direct children. ``/proc/self/task/*/children`` costs one read per
    thread (the scan runs every few seconds, whatever the number of processes on the
    machine); where the kernel lacks it, psutil's walk of the whole process table."""
    out: set[int] = set()
    try:
        tasks = os.listdir("/proc/self/task")
        for tid in tasks:
            with open(f"/proc/self/task/{tid}/children") as f:
                out.update(int(x) for x in f.read().split())
        return out
    except (OSError, ValueError):
        try:
            return {c.pid for c in psutil.Process(os.getpid()).children()}
        except psutil.Error:
            return set()
