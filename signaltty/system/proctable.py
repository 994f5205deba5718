"""One process-table snapshot per refresh, and reading one chosen process (psutil; blocking).

The process refresh (agents.md §3.3) takes **one** ``psutil.process_iter`` pass per period and
builds the parent→children map in Python; it never walks ``Process.children()`` per pane.
The pass asks for ``pid ppid create_time name status``: on Linux all five come from
``/proc/<pid>/stat`` parsed once per process (psutil's ``oneshot``), so ``name`` (for the
shell test of the walk, ``agents/foreground.py``) and ``status`` (zombies are left out: they
have no command line and no cwd) cost no extra scan. Only the one process chosen per pane is
read further (``read_process``: command line and cwd).

Both functions block (``/proc`` reads): the server calls them in a worker thread.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import psutil

# What the single scan reads for every process.
SCAN_ATTRS = ("pid", "ppid", "create_time", "name", "status")


@dataclass(frozen=True, slots=True)
class ProcInfo:
    """One process of the snapshot.

    Attributes:
        pid: process id.
        ppid: parent process id (0 when unknown).
        create_time: start time, seconds since the epoch (psutil ``create_time``; the walk
            only compares these, newest = largest).
        name: the kernel's process name (``comm``, possibly extended by psutil from the
            command line); ``""`` when unreadable.
    """

    pid: int
    ppid: int
    create_time: float
    name: str


@dataclass(frozen=True, slots=True)
class ProcTable:
    """A process-table snapshot: processes by pid and the parent→children map.

    Attributes:
        procs: every non-zombie process seen by the scan, by pid.
        children: pid → pids of its children (scan order); only parents with children.
    """

    procs: Mapping[int, ProcInfo] = field(default_factory=dict)
    children: Mapping[int, tuple[int, ...]] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Iterable[ProcInfo]) -> ProcTable:
        """Build the snapshot from process rows (pure; also used by tests on synthetic rows).

        A row whose pid repeats replaces the earlier one. Children whose parent is absent are
        kept in ``children`` under the parent's pid all the same.
        """
        procs: dict[int, ProcInfo] = {}
        for row in rows:
            procs[row.pid] = row
        kids: dict[int, list[int]] = {}
        for row in procs.values():
            if row.ppid != row.pid:
                kids.setdefault(row.ppid, []).append(row.pid)
        return cls(procs, {ppid: tuple(pids) for ppid, pids in kids.items()})


def _as_float(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def snapshot() -> ProcTable:
    """Take one process-table snapshot (ONE ``psutil.process_iter`` pass; blocking).

    Returns:
        ``ProcTable`` of every readable, non-zombie process. Processes that vanish during the
        pass are skipped by psutil; fields it may not read are ``0``/``0.0``/``""``.

    Raises:
        Nothing for single processes; an unexpected failure of the whole pass
        (``psutil.Error``, ``OSError``) propagates to the caller, which logs it.

    Spec: agents.md §3.3 step 1.
    """
    rows: list[ProcInfo] = []
    for proc in psutil.process_iter(list(SCAN_ATTRS), ad_value=None):
        info = proc.info
        pid = info.get("pid")
        if not isinstance(pid, int) or info.get("status") == psutil.STATUS_ZOMBIE:
            continue
        ppid = info.get("ppid")
        name = info.get("name")
        rows.append(
            ProcInfo(
                pid=pid,
                ppid=ppid if isinstance(ppid, int) else 0,
                create_time=_as_float(info.get("create_time")),
                name=name if isinstance(name, str) else "",
            )
        )
    return ProcTable.from_rows(rows)


def read_process(pid: int, create_time: float | None = None) -> tuple[list[str] | None, str | None]:
    """Read the command line and cwd of one process (blocking; never raises).

    Args:
        pid: the process chosen by the walk.
        create_time: the start time seen in the snapshot; when given and the process now
            has another one, the pid was reused since the scan and nothing is read.

    Returns:
        ``(cmdline, cwd)``: the argument list (``None`` when unreadable or empty, e.g. a
        zombie or a kernel thread) and the absolute working directory (``None`` when
        unreadable). A process that exited since the scan gives ``(None, None)``.

    Spec: agents.md §3.3 step 3 ("failures keep previous values" is the caller's part).
    """
    try:
        proc = psutil.Process(pid)
        if create_time is not None and abs(proc.create_time() - create_time) > 0.01:
            return None, None
    except (psutil.Error, OSError, ValueError):
        return None, None
    cmdline: list[str] | None
    try:
        cmdline = [str(a) for a in proc.cmdline()] or None
    except (psutil.Error, OSError):
        cmdline = None
    cwd: str | None
    try:
        cwd = proc.cwd() or None
    except (psutil.Error, OSError):
        cwd = None
    return cmdline, cwd


def read_cwd(pid: int) -> str | None:
    """The working directory of ``pid`` (blocking; never raises; ``None`` when unreadable).

    On Linux one ``readlink`` of ``/proc/<pid>/cwd``; elsewhere psutil.
    """
    if sys.platform.startswith("linux"):
        try:
            return os.readlink(f"/proc/{pid}/cwd") or None
        except (OSError, ValueError):
            return None
    try:
        return psutil.Process(pid).cwd() or None
    except (psutil.Error, OSError, ValueError):
        return None
