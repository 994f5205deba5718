"""When each bus connection appeared: a bound on its process's start time (attack pass 3, A1).

``GetConnectionUnixProcessID`` is the pid of whoever opened a bus connection, recorded when
it connected. That process may hand the connection to a child and exit, and the number may
go to another process. dbus-daemon < 1.15.8 offers no pidfd (``ProcessFD`` in
``GetConnectionCredentials``), so the rule here is a time bound: the process that opened a
connection was started before the connection's unique name appeared on the bus. A process
at that pid started *after* the name appeared is not the one that connected (``reused``).

Appearances are watched with the ``NameOwnerChanged`` signal (old owner empty). A name seen
appear gets the boot-clock time we observed it (``procref.boot_ticks_now``, later than the
real moment by our own latency). A name that appeared before we started watching gets the
time the watch started: its process, and any process that reused its pid before then,
started before the watch; a reuse after the watch started is caught. See docs/security.md
("pid reuse") for what this leaves open.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Final

from signaltty.system.procref import boot_ticks_now

# old owner empty: a name (unique ``:1.42`` or well-known) got its first owner
MATCH_APPEARED: Final = (
    "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
    "member='NameOwnerChanged',path='/org/freedesktop/DBus',arg1=''"
)
MAX_NAMES: Final = 65536


class NameBirths:
    """Unique name → boot ticks at which we saw it appear (bounded; oldest forgotten)."""

    def __init__(self) -> None:
        self._born: OrderedDict[str, int] = OrderedDict()
        self._watch_start: int | None = None

    def start(self) -> None:
        """Call once the bus delivers ``NameOwnerChanged`` to us (after ``AddMatch``'s
        reply). A new connection starts over: names may have come and gone meanwhile."""
        self._born.clear()
        self._watch_start = boot_ticks_now()

    def observe(self, body: tuple[Any, ...]) -> None:
        """Feed a ``NameOwnerChanged`` body ``(name, old_owner, new_owner)``."""
        if len(body) != 3 or not all(isinstance(x, str) for x in body):
            return
        name, old, new = body
        if not name.startswith(":"):
            return
        if new and not old:
            self._born[name] = boot_ticks_now()
            self._born.move_to_end(name)
            while len(self._born) > MAX_NAMES:
                self._born.popitem(last=False)
        elif not new:
            self._born.pop(name, None)

    def born_by(self, unique_name: str) -> int:
        """The latest start time (boot ticks) the process that opened ``unique_name`` can
        have. A forgotten or never-seen name gets the watch's start (the stricter bound
        when the name is newer: refusing, never trusting, is the failure mode); before
        ``start`` it is now."""
        seen = self._born.get(unique_name)
        if seen is not None:
            return seen
        return self._watch_start if self._watch_start is not None else boot_ticks_now()
