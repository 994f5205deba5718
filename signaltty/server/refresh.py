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

import structlog

from signaltty.agents.foreground import foreground_name, foreground_pid
from signaltty.agents.registry import builtin_kind, display_name_for
from signaltty.core.model import Pane
from signaltty.core.refresh import Detection, on_process_refresh
from signaltty.server.config import Config
from signaltty.server.ports import Runtimes
from signaltty.server.store import Store
from signaltty.system import proctable

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


NameCache = dict[tuple[int, float, str], "str | None"]


def scan(roots: dict[str, int], names: NameCache | None = None) -> dict[str, Observation]:
    """One snapshot, then the walk and the reads for every pane (blocking: worker thread).

    Args:
        roots: pane id → the pane's child pid.
        names: program names of processes seen by earlier scans, keyed by (pid, start time,
            kernel name) — an ``exec`` changes the kernel name — so a foreground program that
            stays in front costs one cwd read per scan instead of a command-line read too.
            Updated in place; entries of processes gone from the snapshot are dropped.

    Returns:
        pane id → ``Observation``. A process that exits between the scan and the reads
        gives ``None`` values for that pane only.

    Raises:
        Whatever ``proctable.snapshot()`` raises for a failed pass (the caller logs it).

    Spec: agents.md §3.3 steps 1–3.
    """
    table = proctable.snapshot()
    names = {} if names is None else names
    used: set[tuple[int, float, str]] = set()
    out: dict[str, Observation] = {}
    for pane_id, root in roots.items():
        pid = foreground_pid(table, root)
        if pid is None:
            out[pane_id] = Observation(root, None, None, None, False)
            continue
        seen = table.procs.get(pid)
        key = (pid, seen.create_time, seen.name) if seen else None
        if key is not None and key in names:
            name, cwd = names[key], proctable.read_cwd(pid)
        else:
            cmdline, cwd = proctable.read_process(pid, seen.create_time if seen else None)
            name = foreground_name(cmdline)
            if key is not None and name is not None:
                names[key] = name
        if key is not None:
            used.add(key)
        try:
            is_dir = cwd is not None and os.path.isdir(cwd)
        except (OSError, ValueError):
            is_dir = False
        out[pane_id] = Observation(root, pid, name, cwd, is_dir)
    for key in [k for k in names if k not in used]:
        del names[key]
    return out


# Quiet periods are skipped, but at least every FULL_EVERY-th period scans (60 s by default).
FULL_EVERY = 6


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

    def __init__(
        self, *, store: Store, config: Config, runtimes: Runtimes, detect: Detect | None = None
    ) -> None:
        self.store = store
        self.config = config
        self.runtimes = runtimes
        self.detect: Detect = detect or builtin_detect
        self.last_foreground: dict[str, str | None] = {}
        self.on_foreground: list[ForegroundHook] = []
        self.scans = 0
        self._names: NameCache = {}
        self._offsets: dict[str, int] = {}
        self._rescan = False
        self._lock = asyncio.Lock()

    @property
    def period_s(self) -> float:
        """Seconds between refreshes (``[server] proc_refresh_s``, 2–300, default 10)."""
        return float(self.config.server.proc_refresh_s)

    async def run(self) -> None:
        """Refresh every ``period_s`` until cancelled (started by the daemon as a background task).

        A period in which no live pane printed anything is skipped: starting a program,
        leaving one or changing directory in a shell always shows something on the screen.
        Every ``FULL_EVERY``-th period scans anyway, for changes nothing announced, and so
        does the period after ``detection_changed``.
        """
        periods = 0
        while True:
            await asyncio.sleep(self.period_s)
            periods += 1
            # the output check runs every period: it also records the offsets
            quiet = not self._output_since_last()
            if periods % FULL_EVERY and quiet and not self._rescan:
                continue
            self._rescan = False
            try:
                await self.refresh_now()
            except asyncio.CancelledError:
                raise
            except Exception:  # the refresh never stops for good
                log.exception("refresh.failed")

    def detection_changed(self) -> None:
        """The catalog changed (``agents.reload``, SIGHUP): the next period scans even when no
        pane printed anything, so a user manifest naming a renamed binary that is already
        running (silently) in a pane applies at the next refresh (issue 11 item 11)."""
        self._rescan = True

    def _output_since_last(self) -> bool:
        offsets = {pane_id: rt.output_offset for pane_id, rt in self.runtimes.items() if rt.live}
        changed = offsets != self._offsets
        self._offsets = offsets
        return changed

    def _roots(self) -> dict[str, int]:
        roots: dict[str, int] = {}
        for pane_id, rt in list(self.runtimes.items()):
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
            for gone in set(self.last_foreground) - set(self.runtimes):
                del self.last_foreground[gone]
            if not roots:
                return 0
            try:
                seen = await asyncio.to_thread(scan, roots, self._names)
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
        rt = self.runtimes.get(pane_id)
        pane = self.store.panes.get(pane_id)
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
            self.store.apply(effects)
        for cb in list(self.on_foreground):
            try:
                cb(pane, name)
            except Exception:
                log.exception("refresh.foreground_hook_failed", pane_id=pane_id)
        if name != self.last_foreground.get(pane_id):
            self.store.touched.add(pane_id)  # its screen rules may differ now
        self.last_foreground[pane_id] = name
        return True
