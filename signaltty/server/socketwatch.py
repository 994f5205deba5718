"""Keep the socket path naming the daemon's own socket (issue 10 third attack pass, A8).

A process in a pane has the person's uid, so it can rename, delete or replace the socket
file in the daemon's 0700 directory and listen there itself. Clients inside panes refuse
such a server (``$SIGNALTTY_DAEMON``, proto/trust.py); clients outside panes (the person's
CLI, ``top``, status bars) cannot tell it from the daemon. So the daemon checks its path
every ``SOCKET_WATCH_S`` with ``lstat`` (device and inode of the file it bound): on any
change it logs ``socket.replaced``, tells the person (a pane-less warning notification,
at most every ``ALERT_EVERY_S``), removes whatever is at the path (in our own directory)
and listens there again. Connections already open stay; the old listening socket is
closed. A fight with a process that keeps re-taking the path is logged every time.

It re-binds only in a directory it can trust: before each re-bind the directory must be
private to us (our uid, mode 0700: the check the clients make, proto/trust.py) and
either the one it bound in (``lstat`` and ``stat`` device and inode unchanged) or a real
directory, not a symlink. A directory swapped for a symlink to another place, or made
open to others, is logged (``socket.dir_untrusted``) and left alone: binding there would
put the socket where others may reach it, or where clients refuse it (issue 10, fourth
attack pass, N7).
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final, Protocol

import structlog

from signaltty.core import rules
from signaltty.core.ids import new_id
from signaltty.proto.trust import private_dir_problem
from signaltty.server.store import Store

log = structlog.get_logger("signaltty.socket")

SOCKET_WATCH_S: Final = 1.0
ALERT_EVERY_S: Final = 300.0
# Notification.source of what the daemon says itself (protocol.md §4 lists the others).
SOURCE: Final = "daemon"


class Rebindable(Protocol):
    """What the watch needs from the listener (``Listener.rebind``)."""

    async def rebind(self, path: str) -> None: ...


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of ``path`` itself (a symlink is not followed); None when missing.

    Raises:
        OSError: other than a missing file (e.g. the directory became unreadable).
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


def _dir_identity(directory: Path) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """``(lstat, stat)`` (device, inode) pairs of ``directory``; None when it is missing or
    cannot be examined."""
    try:
        link, real = os.lstat(directory), os.stat(directory)
    except OSError:
        return None
    return (link.st_dev, link.st_ino), (real.st_dev, real.st_ino)


class SocketWatch:
    """Watches one socket path and listens there again when it is taken.

    Args:
        path: the socket path the daemon bound.
        listener: re-binds (``Listener.rebind``).
        store: where the warning notification goes (``notification.created``, an alert).
        active: False while shutting down (no re-binding then).
    """

    def __init__(
        self, *, path: Path, listener: Rebindable, store: Store, active: Callable[[], bool]
    ) -> None:
        self.path = path
        self.listener = listener
        self.store = store
        self.active = active
        self.bound = _identity(path)
        self.directory = _dir_identity(path.parent)  # the one place we re-bind in
        self.replaced = 0  # times the path was found taken (server.status could show it)
        self._alerted_at = float("-inf")
        self._failing: str | None = None  # the last re-binding error, until one succeeds

    @property
    def ino(self) -> int | None:
        """Inode of the socket file we bound last (shutdown unlinks only that one)."""
        return None if self.bound is None else self.bound[1]

    async def run(self) -> None:
        """Check every ``SOCKET_WATCH_S`` until cancelled."""
        while True:
            await asyncio.sleep(SOCKET_WATCH_S)
            await self.check()

    async def check(self) -> bool:
        """One check; True when the path had been taken (and re-binding was attempted)."""
        if not self.active():
            return False
        try:
            found = _identity(self.path)
        except OSError as exc:
            log.warning("socket.unreadable", socket=str(self.path), error=str(exc))
            return False
        if found == self.bound:
            return False
        what = "missing" if found is None else "another file"
        if self._failing is None:  # a new take-over, not the next round of a failing one
            self.replaced += 1
            log.warning("socket.replaced", socket=str(self.path), found=what, times=self.replaced)
            self._alert(what)
        untrusted = self._directory_problem()
        if untrusted is not None:
            if untrusted != self._failing:
                log.error("socket.dir_untrusted", socket=str(self.path), problem=untrusted)
            self._failing = untrusted
            return True
        try:
            if found is not None:
                os.unlink(self.path)  # our own 0700 directory: whatever is there is not ours
            await self.listener.rebind(str(self.path))
            self.bound = _identity(self.path)
        except OSError as exc:
            # e.g. a directory put at the path, the directory itself removed (logout), the
            # path re-taken in between: tried again every round, logged when the error changes
            if str(exc) != self._failing:
                log.error("socket.rebind_failed", socket=str(self.path), error=str(exc))
            self._failing = str(exc)
            return True
        self._failing = None
        log.warning("socket.rebound", socket=str(self.path))
        return True

    def _directory_problem(self) -> str | None:
        """Why the socket's directory may not hold our socket now, or None.

        It must be private to us (uid, mode 0700) and either the very directory we bound in
        or a real directory (not a symlink) made since, e.g. a runtime directory recreated
        at the next login: that one is then remembered.
        """
        directory = self.path.parent
        try:
            link = os.lstat(directory)
            problem = private_dir_problem(os.stat(directory), str(directory))
        except OSError as exc:
            return f"{directory} cannot be examined: {exc.strerror}"
        if problem is not None:
            return problem
        found = _dir_identity(directory)
        if found == self.directory:
            return None
        if stat.S_ISLNK(link.st_mode):
            return f"{directory} is now a symlink to another directory"
        self.directory = found
        return None

    def _alert(self, what: str) -> None:
        now = time.monotonic()
        if now - self._alerted_at < ALERT_EVERY_S:
            return
        self._alerted_at = now
        note = rules.NotificationInput(
            id=new_id("notif"),
            title="signaltty: its socket was taken over",
            body=(
                f"{self.path} was {'removed' if what == 'missing' else 'replaced'} by another "
                "process of yours (perhaps a tool in a pane); signaltty listens there again. "
                "Commands run meanwhile outside panes may have reached that process."
            ),
            severity="warning",
            source=SOURCE,
        )
        self.store.apply(rules.on_notification(None, note, now=self.store.now()))
