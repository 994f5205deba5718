"""The handover between a daemon and the image it ``exec``s into (``signaltty restart``).

Two parts cross the ``exec``:

* the **fd table**, in the environment variable ``SIGNALTTY_HANDOVER`` (small JSON): the
  writer's pid and start time (only the image it execs shares both), the state-dir lock,
  the listening socket, each live pane's ``pid``/PTY master/slave path, the connections
  whose calls the new image answers, and the fd of the document. It alone is
  enough to keep every pane program running: without a readable document the panes come
  back ``LIVE`` from the snapshot saved just before the switch.
* the **document**, a sealed memfd (an unlinked file where there is no memfd): everything
  else — the store (as the snapshot format plus runtime fields), the event seq and replay
  ring, each pane's screen state, raw ring and output offset, pending native waits, the
  self-approval guard's process lists.

Both are read as hostile input (a same-uid process could have reached the fds between the
``exec`` and the new image's hardening): sizes bounded, every field type-checked, an fd
accepted only when it is open and of the expected kind. Spec: issue 15 items 1 and 5.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from signaltty.system.procref import start_ticks

ENV: Final = "SIGNALTTY_HANDOVER"
FORMAT: Final = 1
# the fd table: one entry per pane and held connection
_TABLE_MAX: Final = 256 * 1024
# the document: screens (≈ 0.2–1 MB each at most) and raw rings (≤ 256 KiB) of every pane
DOC_MAX: Final = 1 << 30
_ID_MAX: Final = 64


class HandoverError(ValueError):
    """The fd table or the document cannot be used; ``str()`` says why."""


@dataclass(frozen=True, slots=True)
class PtyEntry:
    """A live pane's process and PTY master, as inherited."""

    pane_id: str
    pid: int
    master_fd: int
    slave_path: str


@dataclass(frozen=True, slots=True)
class HeldEntry:
    """A connection whose in-flight call the new image answers."""

    fd: int
    key: str  # decision id of a native wait, or "restart"
    req_id: str  # the call's request id, as the client sent it


@dataclass(slots=True)
class FdTable:
    """What ``SIGNALTTY_HANDOVER`` names."""

    doc_fd: int | None = None
    lock_fd: int | None = None
    listen_fd: int | None = None
    ptys: list[PtyEntry] = field(default_factory=list)
    held: list[HeldEntry] = field(default_factory=list)

    def fds(self) -> list[int]:
        """Every fd named, for making them inheritable (old side) or closing the unused."""
        out = [fd for fd in (self.doc_fd, self.lock_fd, self.listen_fd) if fd is not None]
        out += [p.master_fd for p in self.ptys]
        out += [h.fd for h in self.held]
        return out

    def encode(self) -> str:
        return json.dumps(
            {
                "format": FORMAT,
                # exec keeps the pid and its start time: only the image we exec reads it
                "from": [os.getpid(), start_ticks(os.getpid())],
                "doc": self.doc_fd,
                "lock": self.lock_fd,
                "listen": self.listen_fd,
                "ptys": [[p.pane_id, p.pid, p.master_fd, p.slave_path] for p in self.ptys],
                "held": [[h.fd, h.key, h.req_id] for h in self.held],
            },
            separators=(",", ":"),
        )


def parse_table(text: str) -> FdTable:
    """Read ``SIGNALTTY_HANDOVER``; every fd must be open and of its kind.

    Raises:
        HandoverError: not the format, or any entry out of shape.
    """
    if len(text) > _TABLE_MAX:
        raise HandoverError("fd table too large")
    try:
        d = json.loads(text)
    except (ValueError, RecursionError):
        raise HandoverError("fd table is not JSON") from None
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise HandoverError("fd table of an unknown format")
    if d.get("from") != [os.getpid(), start_ticks(os.getpid())]:
        # an ordinary start with the variable in its environment (attack pass 8, B1): its
        # fds are not a lock, a listener or PTYs of ours, and its pids not our panes
        raise HandoverError("fd table not written by this process before its exec")
    table = FdTable(
        doc_fd=_fd(d.get("doc"), stat.S_ISREG, optional=True),
        lock_fd=_fd(d.get("lock"), stat.S_ISREG, optional=True),
        listen_fd=_fd(d.get("listen"), stat.S_ISSOCK, optional=True),
    )
    seen: set[int] = set(table.fds())
    for item in _items(d.get("ptys"), 4):
        pane_id = _ident(item[0])
        pid = item[1]
        if type(pid) is not int or pid <= 1:
            raise HandoverError("pane pid out of range")
        master = _fd(item[2], stat.S_ISCHR)
        assert master is not None
        slave = item[3]
        if not isinstance(slave, str) or not slave.startswith("/dev/") or len(slave) > 64:
            raise HandoverError("slave path out of shape")
        table.ptys.append(PtyEntry(pane_id, pid, master, slave))
        seen.add(master)
    for item in _items(d.get("held"), 3):
        fd = _fd(item[0], stat.S_ISSOCK)
        assert fd is not None
        if not isinstance(item[2], str) or len(item[2]) > 256:
            raise HandoverError("request id out of shape")
        table.held.append(HeldEntry(fd, _ident(item[1]), item[2]))
        seen.add(fd)
    if len(seen) != len(table.fds()):
        raise HandoverError("an fd is named twice")
    return table


def _items(value: object, width: int) -> list[list[Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > 10_000:
        raise HandoverError("fd table list out of shape")
    for item in value:
        if not isinstance(item, list) or len(item) != width:
            raise HandoverError("fd table entry out of shape")
    return value


def _ident(value: object) -> str:
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= _ID_MAX
        or not all(c.isascii() and (c.isalnum() or c in "_-") for c in value)
    ):
        raise HandoverError("id out of shape")
    return value


def _fd(value: object, kind: Any, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if type(value) is not int or not 2 < value < 1 << 20:
        raise HandoverError("fd out of range")
    try:
        mode = os.fstat(value).st_mode
    except OSError:
        raise HandoverError(f"fd {value} is not open") from None
    if not kind(mode):
        raise HandoverError(f"fd {value} is not of the expected kind")
    return value


# ---------------------------------------------------------------- the document


def write_doc(doc: dict[str, Any], scratch_dir: Path) -> int:
    """Write ``doc`` to a sealed memfd (an unlinked file in ``scratch_dir`` where memfd is
    missing) and return its fd, positioned at 0.

    Raises:
        OSError: no memory or disk for it.
    """
    # lone surrogates (non-UTF-8 names read from the system) become \\u escapes
    data = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "backslashreplace"
    )
    memfd_create = getattr(os, "memfd_create", None)
    fd: int
    if memfd_create is not None:
        fd = memfd_create("signaltty-handover", os.MFD_ALLOW_SEALING)
    else:
        fd, name = tempfile.mkstemp(prefix=".handover-", dir=scratch_dir)
        os.unlink(name)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        seals = getattr(fcntl, "F_ADD_SEALS", None)
        if memfd_create is not None and seals is not None:
            # nobody, us included, can change it after this
            fcntl.fcntl(
                fd,
                seals,
                fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE,
            )
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_doc(fd: int) -> dict[str, Any]:
    """Read and close the document fd.

    Raises:
        HandoverError: too large, unreadable, not JSON, or not format 1.
    """
    try:
        size = os.fstat(fd).st_size
        if size > DOC_MAX:
            raise HandoverError(f"document of {size} bytes is over the cap")
        chunks = []
        offset = 0
        while offset < size:
            chunk = os.pread(fd, min(size - offset, 1 << 24), offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
    except OSError as exc:
        raise HandoverError(f"cannot read the document: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    try:
        doc = json.loads(b"".join(chunks))
    except (ValueError, RecursionError):
        raise HandoverError("document is not JSON") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise HandoverError("document of an unknown format")
    return doc
