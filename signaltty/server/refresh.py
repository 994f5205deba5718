"""Process refresh: every ``proc_refresh_s`` seconds, one process-table scan for all panes.

In a worker thread: one ``system.proctable.snapshot()`` (one ``psutil.process_iter`` pass),
the foreground walk of every live pane on that snapshot (``agents.foreground``), then the
command line and cwd of each chosen process and whether that cwd is a directory. Back on the
loop: kind detection of the program name (injectable ``detect``) and ``core.refresh
.on_process_refresh`` applied through ``store.apply`` for each pane that is still the same
live process. A failing pane or a failing scan is logged; the task keeps running.
Spec: agents.md §3.3, states.md §3.6, README "Background loops".
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from signaltty.agents.foreground import foreground_name, foreground_pid
from signaltty.agents.registry import builtin_kind, display_name_for
from signaltty.core.model import Pane
from signaltty.core.refresh import Detection, on_process_refresh
from signaltty.system import proctable

if TYPE_CHECKING:
    from signaltty.server.daemon import Daemon

log = structlog.get_logger("signaltty.refresh")

Detect = Callable[[str], Detection | None]
ForegroundHook = Callable[[Pane, str | None], None]


def builtin_detect(program: str) -> Detection | None:
    """Kind detection by builtin names only (agents.md §3.1 step 3).

    Returns:
        ``Detection(kind, None, display name)`` for ``claude codex opencode cursor-agent pi``,
        ``None`` for anything else (no catalog yet: unknown programs change nothing).
    """
    kind = builtin_kind(program)
    if kind is None:
        return None
    return Detection(kind, None, display_name_for(kind))


@dataclass(frozen=True, slots=True)
class Observation:
    """What the worker thread saw for one pane.

    Attributes:
        root_pid: the pane's child pid the walk started from.
        pid: the foreground process (``None``: the child was not in the snapshot).
        process_name: its program name (agents.md §3.2), ``None`` when unreadable.
        cwd: its working directory, ``None`` when unreadable.
        cwd_is_dir: ``cwd`` is an existing directory.
    """

    root_pid: int
    pid: int | None
    process_name: str | None
    cwd: str | None
    cwd_is_dir: bool


def scan(roots: dict[str, int]) -> dict[str, Observation]:
    """One snapshot, then the walk and the reads for every pane (blocking: worker thread).

    Args:
        roots: pane id → the pane's child pid.

    Returns:
        pane id → ``Observation``. A process that exits between the scan and the reads
        gives ``None`` values for that pane only.

    Raises:
        Whatever ``proctable.snapshot()`` raises for a failed pass (the caller logs it).

    Spec: agents.md §3.3 steps 1–3.
    """
    table = proctable.snapshot()
    out: dict[str, Observation] = {}
    for pane_id, root in roots.items():
        pid = foreground_pid(table, root)
        if pid is None:
            out[pane_id] = Observation(root, None, None, None, False)
            continue
        seen = table.procs.get(pid)
        cmdline, cwd = proctable.read_process(pid, seen.create_time if seen else None)
        try:
            is_dir = cwd is not None and os.path.isdir(cwd)
        except (OSError, ValueError):
            is_dir = False
        out[pane_id] = Observation(root, pid, foreground_name(cmdline), cwd, is_dir)
    return out


class ProcessRefresher:
    """The periodic process refresh of one daemon.

    Attributes:
        detect: program name → ``Detection`` or ``None`` (default ``builtin_detect``; the
            catalog-based detection replaces it).
        last_foreground: pane id → the process name seen at the previous refresh (``None``:
            unknown). While ``on_foreground`` callbacks run it still holds the previous
            value, so a callback can tell whether the foreground program changed.
        on_foreground: called as ``cb(pane, process_name)`` after each pane's refresh
            (every period, changed or not; ``process_name`` may be ``None``). Exceptions are
            logged and ignored.
    """

    def __init__(self, daemon: Daemon, detect: Detect | None = None) -> None:
        self.daemon = daemon
        self.detect: Detect = detect or builtin_detect
        self.last_foreground: dict[str, str | None] = {}
        self.on_foreground: list[ForegroundHook] = []
        self.scans = 0
        self._lock = asyncio.Lock()

    @property
    def period_s(self) -> float:
        """Seconds between refreshes (``[server] proc_refresh_s``, 2–300, default 10)."""
        return float(self.daemon.config.server.proc_refresh_s)

    async def run(self) -> None:
        """Refresh every ``period_s`` until cancelled (started by the daemon as a background task)."""
        while True:
            await asyncio.sleep(self.period_s)
            try:
                await self.refresh_now()
            except asyncio.CancelledError:
                raise
            except Exception:  # the refresh never stops for good
                log.exception("refresh.failed")

    def _roots(self) -> dict[str, int]:
        roots: dict[str, int] = {}
        for pane_id, rt in list(self.daemon.runtimes.items()):
            proc = rt.proc
            if proc is not None and rt.pane.live and proc.pid > 0:
                roots[pane_id] = proc.pid
        return roots

    async def refresh_now(self) -> int:
        """Run one refresh now (one scan) and apply it; concurrent calls run one after another.

        Returns:
            The number of panes whose observation was applied (0 when the scan failed).

        Raises:
            Nothing but ``CancelledError``: a failed scan or pane is logged.

        Spec: agents.md §3.3, states.md §3.6.
        """
        async with self._lock:
            roots = self._roots()
            for gone in set(self.last_foreground) - set(self.daemon.runtimes):
                del self.last_foreground[gone]
            if not roots:
                return 0
            try:
                seen = await asyncio.to_thread(scan, roots)
            except Exception:
                log.exception("refresh.scan_failed", panes=len(roots))
                return 0
            self.scans += 1
            applied = 0
            for pane_id, obs in seen.items():
                try:
                    if self._apply(pane_id, obs):
                        applied += 1
                except Exception:  # one pane never stops the others
                    log.exception("refresh.pane_failed", pane_id=pane_id)
            return applied

    def _apply(self, pane_id: str, obs: Observation) -> bool:
        rt = self.daemon.runtimes.get(pane_id)
        pane = self.daemon.store.panes.get(pane_id)
        # The pane may have exited, closed or been resumed while the thread ran.
        if rt is None or pane is None or rt.proc is None or rt.proc.pid != obs.root_pid:
            return False
        if not pane.live:
            return False
        name = obs.process_name
        detection = self.detect(name) if name else None
        effects = on_process_refresh(
            pane, process_name=name, cwd=obs.cwd, cwd_is_dir=obs.cwd_is_dir, detection=detection
        )
        if effects:
            self.daemon.store.apply(effects)
        for cb in list(self.on_foreground):
            try:
                cb(pane, name)
            except Exception:
                log.exception("refresh.foreground_hook_failed", pane_id=pane_id)
        self.last_foreground[pane_id] = name
        return True
