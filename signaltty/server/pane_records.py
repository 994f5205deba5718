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
from collections.abc import Iterable
from pathlib import Path

import structlog

from signaltty.server.persistence import atomic_write
from signaltty.system.procref import start_ticks

log = structlog.get_logger("signaltty.pane_records")

FILE_NAME = "pane-processes.json"
VERSION = 1
MAX_BYTES = 1 << 20
MAX_RECORDS = 8192


class PaneRecords:
    """The records of earlier runs (``earlier``) and this run's writer. Thread-safe."""

    def __init__(self, state_dir: Path | None) -> None:
        self._path = state_dir / FILE_NAME if state_dir is not None else None
        self._lock = threading.Lock()
        self._earlier: dict[int, int] | None = None
        self._leaders: dict[int, int] = {}  # this run's pane leaders, kept after they exit
        self._written: bytes | None = None

    def earlier(self) -> dict[int, int]:
        """Processes of earlier runs that may still live: pid → start ticks (loaded once)."""
        with self._lock:
            return dict(self._load_locked())

    def note_leader(self, pid: int) -> bool:
        """Remember a pane's process (a session leader) of this run; True when it is new
        (the caller then ``write``s). Reads its start time once."""
        with self._lock:
            if pid in self._leaders:
                return False
            ticks = start_ticks(pid)
            if ticks is None:
                return False
            self._leaders[pid] = ticks
            while len(self._leaders) > MAX_RECORDS:
                del self._leaders[next(iter(self._leaders))]
            return True

    def write(self, adopted: Iterable[int] = ()) -> None:
        """Replace the file with this run's pane leaders, the ``adopted`` orphans (read now)
        and the earlier runs' records, each kept while its number is not reused. Logs and
        returns on failure."""
        if self._path is None:
            return
        with self._lock:
            earlier = self._load_locked()
            current: dict[int, int] = {}
            for pid in adopted:
                ticks = start_ticks(pid)
                if ticks is not None:
                    current[pid] = ticks
            for records in (earlier, self._leaders):
                for pid, ticks in list(records.items()):
                    now = start_ticks(pid)
                    if now is not None and now != ticks:
                        del records[pid]  # the number names another process now
            merged = {**earlier, **self._leaders, **current}
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
    """The still-valid records in ``path``; {} when absent or unreadable (warned)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        log.warning("pane_records.unreadable", path=str(path), error=str(exc))
        return {}
    if len(raw) > MAX_BYTES:
        log.warning("pane_records.too_large", path=str(path), limit=MAX_BYTES)
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
