"""``snapshot.json`` and tail files: debounced atomic writes, restore at start.

Writes go through a temp file (0600) → write → fsync → ``os.replace`` → fsync of the
directory, in a worker thread; the JSON is serialized on the loop first so the thread never
sees live objects. A failed write is logged and retried at the next flush.
Spec: desktop-and-service.md §8.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from signaltty import __version__
from signaltty.agents.catalog import Catalog, load_catalog
from signaltty.agents.resume import clean_launch, clean_restored
from signaltty.core.ids import slugify, unique_handle
from signaltty.core.limits import (
    COLS_MAX,
    COLS_MIN,
    MAX_LABEL,
    MAX_LAST_MESSAGE,
    MAX_NOTIFICATION_BODY,
    MAX_NOTIFICATION_TITLE,
    MAX_TITLE,
    MAX_WORKSPACE_NAME,
    ROWS_MAX,
    ROWS_MIN,
    TAIL_FILE_BYTES,
)
from signaltty.core.model import Notification, Pane, Workspace, iso
from signaltty.core.sanitize import sanitize_text
from signaltty.server.autoconfig import config_vars
from signaltty.system.statefile import (
    NotRegularFile,
    TooLarge,
    atomic_write,
    atomic_write_many,
    move_aside,
    read_bounded,
    read_tail,
)

__all__ = ["atomic_write"]  # kept importable from here for older callers

log = structlog.get_logger("signaltty.persistence")

SNAPSHOT_VERSION = 1


def cap_tail(text: str, limit: int = TAIL_FILE_BYTES) -> str:
    """Keep the last lines of ``text`` whose sizes (line length + 1) add up to ≤ ``limit``."""
    out: list[str] = []
    total = 0
    for line in reversed(text.split("\n")):
        total += len(line.encode("utf-8", "replace")) + 1
        if total > limit:
            break
        out.append(line)
    return "\n".join(reversed(out))


def serialize_snapshot(
    workspaces: list[Workspace], panes: list[Pane], notifications: list[Notification], now: float
) -> bytes:
    """The ``snapshot.json`` bytes (2-space JSON, persisted fields only)."""
    doc = {
        "version": SNAPSHOT_VERSION,
        "saved_at": iso(now),
        "server_version": __version__,
        "workspaces": [w.to_wire() for w in workspaces],
        "panes": [p.to_wire(persist=True) for p in panes],
        "notifications": [n.to_wire() for n in notifications],
    }
    # A lone surrogate (a non-UTF-8 path read from the system) becomes a JSON \u escape:
    # the file stays valid UTF-8 and reads back to the same string.
    return json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8", "backslashreplace") + b"\n"


@dataclass
class Restored:
    """What a snapshot gave back: records plus tails, and what went wrong."""

    workspaces: list[Workspace] = field(default_factory=list)
    panes: list[Pane] = field(default_factory=list)
    notifications: list[Notification] = field(default_factory=list)
    tails: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class CorruptSnapshot(ValueError):
    """A snapshot that cannot be used as a whole: the one failure :func:`parse_snapshot` raises.

    :func:`load_snapshot` answers it by moving the file aside as ``snapshot.<aside>-<ts>``
    and starting empty (desktop-and-service.md §8.3; issue 10 §8).

    Attributes:
        aside: ``"corrupt"`` (unparsable, wrong shape, version not an integer) or
            ``"unsupported-v<N>"`` (another integer version, 0 ≤ N < 10⁶).
    """

    def __init__(self, reason: str, aside: str = "corrupt") -> None:
        super().__init__(reason)
        self.aside = aside


# Far above any real snapshot (512 panes of a few kB each); a bigger file is not read.
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
# Versions this large are not a future format but damage: "corrupt", not "unsupported-v…".
_MAX_VERSION = 1_000_000


def _stamp() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime())


def _preview(value: Any) -> str:
    """A short, printable rendering of a hostile value for an error message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@functools.cache
def _bundled_catalog() -> Catalog:
    return load_catalog(None)


def _clean_launch(pane: Pane, catalog: Catalog) -> list[str]:
    """:func:`clean_launch` with the pane's catalog entry and provider variables."""
    info = pane.agent
    entry = catalog.entry(info.catalog_id) if info.catalog_id else None
    bypass = tuple(entry.launch.bypass_args) if entry is not None else ()
    program = pane.argv[0] if pane.argv else None
    return clean_launch(pane, bypass, config_vars(program, info.kind))


def parse_snapshot(raw: bytes, catalog: Catalog | None = None) -> Restored:
    """Read the records of a ``snapshot.json`` (pure: no I/O; tails are not read).

    The document must be a JSON object whose ``version`` is the integer 1. Within it,
    everything is hostile and handled record by record: a container that is not a list is
    ignored, and a workspace, pane or notification that cannot be read (mistyped fields,
    an id that is not a plain ``[A-Za-z0-9_-]`` string, a duplicate, a pane of a missing
    workspace) is skipped; each skip adds one line to ``errors``.

    Args:
        raw: the file's bytes (UTF-8, or any encoding ``json.loads`` detects).
        catalog: the active agents catalog: a pane's ``launch_prefix`` must be its entry's
            bypass args (``None``: the bundled manifests only). See :func:`clean_launch`.

    Returns:
        The records that could be read, cleaned and repaired (§8.3), and the errors.

    Raises:
        CorruptSnapshot: not JSON (or nested too deep), not an object, or a ``version``
            other than the integer 1. Nothing else escapes.

    Spec: desktop-and-service.md §8.3; issue 10 §8.
    """
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        # ValueError covers JSONDecodeError, UnicodeDecodeError and over-long integers.
        raise CorruptSnapshot(f"not readable JSON: {_preview(str(exc))}") from None
    if not isinstance(doc, dict):
        raise CorruptSnapshot("snapshot root is not an object")
    if "version" not in doc:
        raise CorruptSnapshot("snapshot has no version")
    version = doc["version"]
    # bool is an int in Python (True == 1): only a real integer names a format.
    if type(version) is not int or not 0 <= version < _MAX_VERSION:
        raise CorruptSnapshot(f"snapshot version {_preview(version)} is not a format version")
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshot(
            f"unsupported snapshot version {version}", aside=f"unsupported-v{version}"
        )

    out = Restored()
    records: dict[str, list[Any]] = {}
    for key in ("workspaces", "panes", "notifications"):
        value = doc.get(key)
        if value is None:
            value = []
        if not isinstance(value, list):
            out.errors.append(f"snapshot field {key!r} is not a list; ignored")
            value = []
        records[key] = value
    # Records come from disk and may be anything: each one that cannot be read (any error,
    # e.g. OverflowError for 1e999) is skipped and logged, never fatal (§8.3).
    for d in records["workspaces"]:
        try:
            ws = _clean_workspace(Workspace.from_wire(d))
        except Exception as exc:  # noqa: BLE001
            out.errors.append(f"workspace skipped: {_preview(exc)}")
            continue
        if any(w.id == ws.id for w in out.workspaces):
            out.errors.append(f"duplicate workspace {ws.id} skipped")
            continue
        out.workspaces.append(ws)
    ws_ids = {w.id for w in out.workspaces}
    seen: set[str] = set()
    for d in records["panes"]:
        try:
            pane = _clean_pane(Pane.from_wire(d))
        except Exception as exc:  # noqa: BLE001
            out.errors.append(f"pane skipped: {_preview(exc)}")
            continue
        # session ids, resume argv and cwds reach a child's argv/cwd (issue 10 item 4)
        out.errors.extend(f"pane {pane.id}: {problem}" for problem in clean_restored(pane))
        # launch flags and environment reach the resumed agent (issue 10, attack 3, A4)
        problems = _clean_launch(pane, catalog if catalog is not None else _bundled_catalog())
        out.errors.extend(f"pane {pane.id}: {problem}" for problem in problems)
        if pane.id in seen:
            out.errors.append(f"duplicate pane {pane.id} skipped")
            continue
        if pane.workspace_id not in ws_ids:
            out.errors.append(f"pane {pane.id} of missing workspace {pane.workspace_id} skipped")
            continue
        seen.add(pane.id)
        out.panes.append(pane)
    for d in records["notifications"]:
        try:
            out.notifications.append(_clean_notification(Notification.from_wire(d)))
        except Exception as exc:  # noqa: BLE001
            out.errors.append(f"notification skipped: {_preview(exc)}")
    _repair_workspaces(out, records["workspaces"])
    return out


def _unused_name(state_dir: Path, tag: str) -> Path:
    """``snapshot.<tag>-<ts>``, or with ``.1``, ``.2``… when that name is taken."""
    base = f"snapshot.{tag}-{_stamp()}"
    candidate = state_dir / base
    n = 0
    while os.path.lexists(candidate):
        n += 1
        candidate = state_dir / f"{base}.{n}"
    return candidate


def _move_aside(state_dir: Path, path: Path, tag: str, reason: str, out: Restored) -> None:
    try:
        aside = _unused_name(state_dir, tag)
        os.replace(path, aside)
    except OSError as exc:
        out.errors.append(f"{reason}; could not move it aside: {exc.strerror or exc}")
        return
    out.errors.append(f"{reason}; moved to {aside.name}")


def load_snapshot(state_dir: Path, catalog: Catalog | None = None) -> Restored:
    """Read ``snapshot.json`` and the pane tails (desktop-and-service.md §8.3).

    Missing → empty. A file that :func:`parse_snapshot` refuses as a whole (or that cannot
    be read, or is over ``MAX_SNAPSHOT_BYTES``) is renamed ``snapshot.corrupt-<ts>`` (another
    integer version: ``snapshot.unsupported-v<N>-<ts>``) and the daemon starts empty. When
    only some records were skipped, the readable ones are restored and the file's original
    bytes are kept as ``snapshot.corrupt-<ts>``, since the next save rewrites
    ``snapshot.json`` without them. Every problem is one line in ``errors``. ``catalog``:
    see :func:`parse_snapshot`.

    Raises:
        Nothing: no snapshot content stops the daemon (issue 10 §8).
    """
    path = state_dir / "snapshot.json"
    # Never blocks on a FIFO, never follows a symlink, never reads past the bound (N5).
    try:
        raw = read_bounded(path, MAX_SNAPSHOT_BYTES)
    except FileNotFoundError:
        return Restored()
    except NotRegularFile as exc:
        out = Restored()
        why = f"snapshot.json is a {exc.kind}, not a regular file"
        _move_aside(state_dir, path, "corrupt", why, out)
        return out
    except TooLarge:
        out = Restored()
        why = f"snapshot larger than {MAX_SNAPSHOT_BYTES} bytes"
        _move_aside(state_dir, path, "corrupt", why, out)
        return out
    except OSError as exc:
        out = Restored()
        _move_aside(state_dir, path, "corrupt", f"cannot read snapshot: {exc.strerror or exc}", out)
        return out
    try:
        out = parse_snapshot(raw, catalog)
    except CorruptSnapshot as exc:
        out = Restored()
        _move_aside(state_dir, path, exc.aside, f"corrupt snapshot ({exc})", out)
        return out
    except Exception as exc:  # noqa: BLE001 - a reader bug must not stop every start
        out = Restored()
        _move_aside(state_dir, path, "corrupt", f"unreadable snapshot ({_preview(exc)})", out)
        return out
    if out.errors:
        try:
            copy = _unused_name(state_dir, "corrupt")
            atomic_write(copy, raw)
            count = len(out.errors)
            out.errors.append(f"{count} snapshot problem(s); original kept as {copy.name}")
        except OSError as exc:
            out.errors.append(f"could not keep a copy of the snapshot: {exc.strerror or exc}")
    hist = state_dir / "history"
    if not _real_dir(hist):
        if os.path.lexists(hist):
            out.errors.append("history is not a directory (a symlink?); no tails restored")
        return out
    for pane in out.panes:
        tail = hist / f"{pane.id}.tail"
        try:
            # tails are written capped; never trust a bigger file, a FIFO or a symlink
            out.tails[pane.id] = read_tail(tail, TAIL_FILE_BYTES).decode("utf-8", "replace")
        except FileNotFoundError:
            pass
        except NotRegularFile as exc:
            out.errors.append(f"tail of pane {pane.id} is a {exc.kind}; not restored")
            with contextlib.suppress(OSError):
                move_aside(tail)
        except OSError:
            pass
    return out


def _real_dir(path: Path) -> bool:
    """A directory itself, not a symlink to one (tails are never written through a link)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def _check_id(value: str, what: str) -> str:
    """Ids become file names (tails): only plain ``[A-Za-z0-9_-]`` ids are restored."""
    if not _ID_RE.fullmatch(value):
        raise ValueError(f"invalid {what} id {value[:40]!r}")
    return value


def _clean_workspace(ws: Workspace) -> Workspace:
    _check_id(ws.id, "workspace")
    ws.name = sanitize_text(ws.name, MAX_WORKSPACE_NAME) or "workspace"
    if ws.handle and slugify(ws.handle) != ws.handle:
        ws.handle = ""
    if not (os.path.isabs(ws.cwd) and "\x00" not in ws.cwd):
        ws.cwd = "/"
    return ws


def _clean_pane(pane: Pane) -> Pane:
    _check_id(pane.id, "pane")
    _check_id(pane.workspace_id, "workspace")
    pane.cols = max(COLS_MIN, min(COLS_MAX, pane.cols))
    pane.rows = max(ROWS_MIN, min(ROWS_MAX, pane.rows))
    pane.title = sanitize_text(pane.title, MAX_TITLE) or "shell"
    if pane.label is not None:
        pane.label = sanitize_text(pane.label, MAX_LABEL) or None
    if pane.last_message is not None:
        pane.last_message = sanitize_text(pane.last_message, MAX_LAST_MESSAGE) or None
    return pane


def _clean_notification(note: Notification) -> Notification:
    note.title = sanitize_text(note.title, MAX_NOTIFICATION_TITLE)
    if note.body is not None:
        note.body = sanitize_text(note.body, MAX_NOTIFICATION_BODY, multiline=True)
    return note


def _repair_workspaces(out: Restored, raw_records: list[Any]) -> None:
    """Missing ``pane_ids`` → panes by ``created_at``; missing handle → a unique one (id order)."""
    # Only string ids can be restored workspaces (an array id is unhashable: issue 10 §8).
    raw_ws = {
        d["id"]: d for d in raw_records if isinstance(d, dict) and isinstance(d.get("id"), str)
    }
    by_ws: dict[str, list[Pane]] = {}
    for pane in out.panes:
        by_ws.setdefault(pane.workspace_id, []).append(pane)
    taken: set[str] = set()
    for ws in sorted(out.workspaces, key=lambda w: w.id):
        if ws.handle in taken:
            ws.handle = ""  # duplicate handle: the later id gets a fresh one below
        elif ws.handle:
            taken.add(ws.handle)
    for ws in sorted(out.workspaces, key=lambda w: w.id):
        mine = by_ws.get(ws.id, [])
        if "pane_ids" not in raw_ws.get(ws.id, {}):
            ws.pane_ids = [p.id for p in sorted(mine, key=lambda p: p.created_at)]
        else:
            known = {p.id for p in mine}
            listed = list(dict.fromkeys(p for p in ws.pane_ids if p in known))
            ws.pane_ids = listed + [p.id for p in mine if p.id not in listed]
        if not ws.handle or "_" in ws.handle:
            ws.handle = unique_handle(ws.name, taken)
            taken.add(ws.handle)


def _tail_bytes(text: str) -> bytes:
    return cap_tail(text).encode("utf-8", "replace")


def write_snapshot(state_dir: Path, data: bytes, tails: dict[str, str], keep: set[str]) -> None:
    """Worker-thread part of a save: snapshot, changed tails, removal of stale tails.

    Raises:
        OSError: any write failed (the caller logs and retries later).
    """
    atomic_write(state_dir / "snapshot.json", data)
    hist = state_dir / "history"
    if os.path.lexists(hist) and not _real_dir(hist):
        move_aside(hist)  # a file, FIFO or symlink planted there (attack pass 4, N5)
    if tails or keep:
        hist.mkdir(mode=0o700, exist_ok=True)
    if tails:
        atomic_write_many(hist, {f"{pid}.tail": _tail_bytes(text) for pid, text in tails.items()})
    if hist.is_dir():
        for entry in hist.iterdir():
            if entry.suffix == ".tail" and entry.stem not in keep:
                with contextlib.suppress(OSError):
                    entry.unlink()
