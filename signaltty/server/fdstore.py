"""Panes that outlive the daemon process under systemd: PTY masters in the fd store (issue 15
item 2).

Every live pane's PTY master is given to systemd (``FDSTORE=1``, named
``pty.<pane id>.<pid>.<start ticks>``) and taken back when the pane's program ends or the
pane closes. When the daemon crashes, or ``systemctl --user restart`` stops it, the unit's
``KillMode=process`` leaves the pane programs running, and systemd hands the masters back
at the next start: a pane whose program is still the same process (pid and start time)
comes back ``LIVE``. Its program is no longer the daemon's child (systemd reaps it), so when
it ends its exit code is not known: ``exit_code: null``.

``systemctl --user stop`` still ends every pane: on SIGTERM the daemon asks the service
manager which job stops it, and keeps the panes only for a ``restart`` job. Used only when
the unit says so (``SIGNALTTY_FDSTORE=1``, set by ``systemd/signaltty.service``) and
systemd's notify socket is there.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import struct
import termios
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from signaltty.system import procref, sdnotify

if TYPE_CHECKING:
    from signaltty.server.panes import PaneRuntime

log = structlog.get_logger("signaltty.fdstore")

HANDOVER_NAME = "handover"
_NAME = re.compile(r"pty\.([A-Za-z0-9_-]{1,64})\.(\d{1,10})\.(\d{1,20})")
_JOB_QUERY_S = 3.0


@dataclass(frozen=True, slots=True)
class KeptPty:
    """A PTY master systemd handed back, with the program it belonged to."""

    pane_id: str
    pid: int
    start_ticks: int
    fd: int

    def same_process(self) -> bool:
        """The pid still names the program the master was stored with."""
        return self.pid > 1 and procref.start_ticks(self.pid) == self.start_ticks

    def slave_path(self) -> str:
        """``/dev/pts/N`` of the master (``TIOCGPTN``), or ``""`` when it cannot be told."""
        try:
            raw = fcntl.ioctl(self.fd, termios.TIOCGPTN, b"\0\0\0\0")  # type: ignore[attr-defined]
        except (OSError, AttributeError):
            return ""
        return f"/dev/pts/{struct.unpack('I', raw)[0]}"


class PtyStore:
    """The daemon's side of the fd store."""

    def __init__(self) -> None:
        self.enabled = os.environ.get("SIGNALTTY_FDSTORE") == "1" and bool(
            os.environ.get("NOTIFY_SOCKET")
        )
        self._names: dict[str, str] = {}
        self.received: dict[str, KeptPty] = {}
        self.other_fds: list[int] = []
        # the handover document a `systemctl restart` left in the store (exact screens)
        self.handover_fd: int | None = None
        if self.enabled:
            for name, fd in sdnotify.listen_fds():
                m = _NAME.fullmatch(name)
                if name == HANDOVER_NAME and self.handover_fd is None:
                    self.handover_fd = fd
                    continue
                if m is None:
                    self.other_fds.append(fd)
                    continue
                kept = KeptPty(m[1], int(m[2]), int(m[3]), fd)
                self.received[kept.pane_id] = kept
                self._names[kept.pane_id] = name
        if self.handover_fd is not None:
            sdnotify.remove_fd(HANDOVER_NAME)  # read once: a later crash must not see it
        if self.received:
            log.info("fdstore.received", ptys=len(self.received))
        for fd in self.other_fds:  # not ours to use
            with contextlib.suppress(OSError):
                os.close(fd)

    def keep_document(self, fd: int) -> bool:
        """Put the handover document (``server/handover.py``) in the store for the next
        start; our fd is closed."""
        try:
            return self.enabled and sdnotify.store_fd(fd, HANDOVER_NAME)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)

    def keep(self, rt: PaneRuntime) -> None:
        """Give a just-started pane's PTY master to systemd."""
        proc = rt.proc
        if not self.enabled or proc is None or proc.master_fd < 0:
            return
        ticks = procref.start_ticks(proc.pid)
        if ticks is None:
            return
        name = f"pty.{rt.pane.id}.{proc.pid}.{ticks}"
        old = self._names.pop(rt.pane.id, None)
        if old is not None:
            sdnotify.remove_fd(old)
        if sdnotify.store_fd(proc.master_fd, name):
            self._names[rt.pane.id] = name

    def remember(self, rt: PaneRuntime) -> None:
        """A pane whose master systemd already keeps (the image before an in-place restart
        stored it): its name, so that :meth:`drop` can let it go."""
        proc = rt.proc
        if not self.enabled or proc is None:
            return
        ticks = procref.start_ticks(proc.pid)
        if ticks is not None:
            self._names[rt.pane.id] = f"pty.{rt.pane.id}.{proc.pid}.{ticks}"

    def drop(self, pane_id: str) -> None:
        """The pane's program ended or the pane closed: systemd lets the master go."""
        name = self._names.pop(pane_id, None)
        if name is not None:
            sdnotify.remove_fd(name)

    def on_event(self, _seq: int, name: str, payload: dict[str, Any]) -> None:
        """Bus observer: ``pane.exited`` and ``pane.closed`` drop the pane's master."""
        if name in ("pane.exited", "pane.closed"):
            pane_id = payload.get("pane_id")
            if isinstance(pane_id, str):
                self.drop(pane_id)

    async def restart_job(self) -> bool:
        """True when the service manager is restarting this unit (not stopping it): its job
        for the unit is of type ``restart`` (``systemctl --user list-jobs``; ≤ 3 s; any
        doubt is a stop)."""
        if not self.enabled or not self._names:
            return False
        unit = _own_unit()
        if unit is None:
            return False
        try:
            proc = await asyncio.create_subprocess_exec(
                "systemctl",
                "--user",
                "list-jobs",
                "--no-legend",
                "--no-pager",
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )
            async with asyncio.timeout(_JOB_QUERY_S):
                out, _ = await proc.communicate()
        except (OSError, TimeoutError):
            return False
        for line in out.decode("utf-8", "replace").splitlines():
            words = line.split()
            if len(words) >= 3 and words[1] == unit:
                log.info("fdstore.job", unit=unit, job=words[2])
                return words[2] in ("restart", "try-restart", "reload-or-restart")
        return False


def kill_unit_leftovers(keep_sessions: set[int]) -> list[int]:
    """At a start under the unit: SIGKILL every process left in the unit's cgroup that is
    neither this daemon nor in the session of a pane it kept — what escaped a pane of the
    daemon before (a ``setsid`` double fork the subreaper had adopted), a terminal it had
    opened. ``KillMode=mixed`` used to do this after a crash (docs/security.md, attack pass
    4, N2); ``KillMode=process`` keeps the panes alive, so the daemon does it for the rest.

    Returns:
        The pids killed (none outside such a unit).
    """
    procs = _unit_procs()
    me = os.getpid()
    killed = []
    for pid in procs:
        if pid == me:
            continue
        try:
            if os.getsid(pid) in keep_sessions:
                continue
            os.kill(pid, 9)
        except OSError:
            continue
        killed.append(pid)
    if killed:
        log.warning("fdstore.leftovers_killed", pids=killed)
    return killed


def _unit_procs() -> list[int]:
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return []
    path = next((line[3:] for line in text.splitlines() if line.startswith("0::")), None)
    if path is None or not path.rstrip("/").endswith(".service"):
        return []
    for root in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        try:
            with open(f"{root}{path}/cgroup.procs", encoding="utf-8") as fh:
                return [int(x) for x in fh.read().split()]
        except (OSError, ValueError):
            continue
    return []


def _own_unit() -> str | None:
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("0::"):
            base = line[3:].rstrip("/").rsplit("/", 1)[-1]
            return base if base.endswith(".service") else None
    return None
