"""Pane processes and adopted orphans, remembered across a daemon restart (blocking I/O).

Why (attack pass 3, A7): the self-approval guard knows a pane's escaped processes by what
this run of the daemon saw — its pane sessions (``ancestry.PaneProcesses``, in memory) and
the subreaper rule (the daemon is their ancestor). After a restart both are lost: the
orphans are re-parented to init and read as "outside every pane". So each run writes the
``(pid, start ticks)`` of its pane leaders and adopted orphans to ``pane-processes.json`` in
the state dir (at each spawn and each orphan scan, atomically) and the next run refuses a
caller with one of them in its ancestry or as its session leader
(``ancestry.caller_origin``'s ``before_restart``). A start time in clock ticks since boot
(``system.procref.start_ticks``) makes a record name one process: a reused pid has another.

File: ``{"version": 1, "processes": [[pid, start_ticks], …]}``, mode 0600. It is read as
hostile (a same-uid write could put anything there): at most ``MAX_BYTES`` and
``MAX_RECORDS``; anything malformed is dropped with a warning, never fatal. Records whose
process is gone or whose pid now has another start time are dropped when read; a leader
that is gone is kept while the number is free (its session id may still hold members).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Container, Iterable
from pathlib import Path

import structlog

from signaltty.system import subreaper
from signaltty.system.procref import start_ticks
from signaltty.system.statefile import (
    NotRegularFile,
    TooLarge,
    atomic_write,
    move_aside,
    read_bounded,
)

log = structlog.get_logger("signaltty.pane_records")

FILE_NAME = "pane-processes.json"
VERSION = 1
MAX_BYTES = 1 << 20
MAX_RECORDS = 8192


class PaneRecords:
    """The records of earlier runs (``earlier``) and this run's writer. Thread-safe.

    Two locks (attack pass 4, N5): ``_io_lock`` serialises the file's load and writes in
    worker threads; ``_leaders_lock`` guards ``_leaders`` only and is never held during
    file I/O, so ``note_leader`` on the event loop never waits for a worker's open/fsync.
    """

    def __init__(self, state_dir: Path | None) -> None:
        self._path = state_dir / FILE_NAME if state_dir is not None else None
        self._io_lock = threading.Lock()
        self._leaders_lock = threading.Lock()
        self._earlier: dict[int, int] | None = None
        self._leaders: dict[int, int] = {}  # this run's pane leaders, kept after they exit
        self._written: bytes | None = None

    def earlier(self) -> dict[int, int]:
        """Processes of earlier runs that may still live: pid → start ticks (loaded once;
        blocking: call from a worker thread)."""
        with self._io_lock:
            return dict(self._load_locked())

    def note_leader(self, pid: int) -> bool:
        """Remember a pane's process (a session leader) of this run; True when it is new
        (the caller then ``write``s). Reads its start time once (from /proc; no state-dir
        I/O, so safe on the event loop)."""
        ticks = start_ticks(pid)
        with self._leaders_lock:
            if ticks is None or self._leaders.get(pid) == ticks:
                return False
            # A number recorded with another start time was an earlier pane's: the kernel
            # gives no process a number that still names a live session, so that pane's
            # session is over and the new leader replaces its record.
            self._leaders.pop(pid, None)
            self._leaders[pid] = ticks
            while len(self._leaders) > MAX_RECORDS:
                del self._leaders[next(iter(self._leaders))]
            return True

    def write(self, adopted: Iterable[int] = (), children: Container[int] | None = None) -> None:
        """Replace the file with this run's pane leaders, the ``adopted`` orphans (read now)
        and the earlier runs' records, each kept while its number is not reused. Logs and
        returns on failure (blocking: a worker thread).

        ``children`` are this process's unreaped children (``subreaper.children()``, read
        here when None): their numbers cannot have been reused, so their start times are
        not read again. Every pane leader is one while its pane lives, and reading each one's
        ``/proc`` entry every 3 s was 40 % of an idle daemon's CPU with 200 panes (issue 12).
        """
        if self._path is None:
            return
        if children is None:
            children = subreaper.children()
        with self._io_lock:
            earlier = self._load_locked()
            current: dict[int, int] = {}
            for pid in adopted:
                ticks = start_ticks(pid)
                if ticks is not None:
                    current[pid] = ticks
            for pid, ticks in list(earlier.items()):
                if pid in children:
                    continue
                now = start_ticks(pid)
                if now is not None and now != ticks:
                    del earlier[pid]  # the number names another process now
            with self._leaders_lock:
                leaders = dict(self._leaders)
            reused = [
                pid
                for pid, ticks in leaders.items()
                if pid not in children and (now := start_ticks(pid)) is not None and now != ticks
            ]
            if reused:
                with self._leaders_lock:
                    for pid in reused:
                        if self._leaders.get(pid) == leaders[pid]:
                            del self._leaders[pid]
                for pid in reused:
                    del leaders[pid]
            merged = {**earlier, **leaders, **current}
            rows = list(merged.items())[-MAX_RECORDS:]
            data = json.dumps({"version": VERSION, "processes": rows}).encode()
            if data == self._written:
                return  # every 3 s scan: no fsync when nothing changed
            try:
                atomic_write(self._path, data)
            except OSError as exc:
                log.warning("pane_records.write_failed", path=str(self._path), error=str(exc))
                return
            self._written = data

    def _load_locked(self) -> dict[int, int]:
        if self._earlier is None:
            self._earlier = _read(self._path) if self._path is not None else {}
        return self._earlier


def _read(path: Path) -> dict[int, int]:
    """The still-valid records in ``path``; {} when absent or unreadable (warned). Never
    blocks: a FIFO, directory, symlink or device there is moved aside (N5)."""
    try:
        raw = read_bounded(path, MAX_BYTES)
    except FileNotFoundError:
        return {}
    except NotRegularFile as exc:
        try:
            aside = move_aside(path)
        except OSError as err:
            log.warning("pane_records.not_a_file", path=str(path), kind=exc.kind, error=str(err))
        else:
            log.warning(
                "pane_records.not_a_file", path=str(path), kind=exc.kind, moved_to=aside.name
            )
        return {}
    except TooLarge:
        log.warning("pane_records.too_large", path=str(path), limit=MAX_BYTES)
        return {}
    except OSError as exc:
        log.warning("pane_records.unreadable", path=str(path), error=str(exc))
        return {}
    try:
        doc = json.loads(raw)
        rows = doc["processes"] if isinstance(doc, dict) and doc.get("version") == VERSION else None
    except (ValueError, KeyError, RecursionError):  # 10⁵-deep nesting raises the latter
        rows = None
    if not isinstance(rows, list):
        log.warning("pane_records.malformed", path=str(path))
        return {}
    out: dict[int, int] = {}
    for row in rows[-MAX_RECORDS:]:
        if (
            isinstance(row, list)
            and len(row) == 2
            and all(type(x) is int for x in row)
            and 1 < row[0] < 1 << 22
            and row[1] >= 0
        ):
            pid, ticks = row
            now = start_ticks(pid)
            # gone: keep (a session id outlives its leader); same: keep; reused: drop
            if now is None or now == ticks:
                out[pid] = ticks
    return out
