"""The foreground program of a pane, from a process-table snapshot (pure; agents.md §3.3 step 2).

Start at the pane's child process; while the current process is a shell (``sh bash zsh fish
dash``, a login shell's leading ``-`` ignored) and has children, move to its newest child
(largest ``create_time``), at most ``MAX_DEPTH`` moves. The walk only reads the snapshot
(``signaltty/system/proctable.py`` builds it with one scan); the shell test uses the name
the scan recorded (``comm``), so no process is read during the walk. The chosen process's
command line is then named with ``process_name.program_name`` (runtime unwrapping).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Final, Protocol

from signaltty.agents.process_name import program_name

SHELLS: Final = frozenset({"sh", "bash", "zsh", "fish", "dash"})
# At most this many moves from the pane's child down to a descendant.
MAX_DEPTH: Final = 8


class ProcLike(Protocol):
    """One process of a snapshot (``system.proctable.ProcInfo`` fits)."""

    @property
    def pid(self) -> int: ...

    @property
    def create_time(self) -> float: ...

    @property
    def name(self) -> str: ...


class TableLike(Protocol):
    """A snapshot: processes by pid and parent pid → child pids (``ProcTable`` fits)."""

    @property
    def procs(self) -> Mapping[int, ProcLike]: ...

    @property
    def children(self) -> Mapping[int, Sequence[int]]: ...


def is_shell(name: str) -> bool:
    """True when ``name`` (a basename or path, ``-bash`` for a login shell) is a shell.

    Spec: agents.md §3.3 step 2 (``sh bash zsh fish dash``).
    """
    return os.path.basename(name).removeprefix("-") in SHELLS


def foreground_pid(table: TableLike, root_pid: int) -> int | None:
    """Return the pid of a pane's foreground program.

    Args:
        table: the snapshot (``procs`` by pid, ``children`` by parent pid).
        root_pid: the pane's child process.

    Returns:
        The last process of the walk: the root itself when it is not a shell or has no
        (live) children, else the newest child, repeated at most ``MAX_DEPTH`` times. Ties
        on ``create_time`` go to the larger pid. ``None`` when ``root_pid`` is not in the
        snapshot (it exited before the scan).

    Spec: agents.md §3.3 step 2.
    """
    procs = table.procs
    current = procs.get(root_pid)
    if current is None:
        return None
    for _ in range(MAX_DEPTH):
        if not is_shell(current.name):
            break
        kids = [procs[c] for c in table.children.get(current.pid, ()) if c in procs]
        if not kids:
            break
        current = max(kids, key=lambda p: (p.create_time, p.pid))
    return current.pid


def foreground_name(cmdline: Sequence[str] | None) -> str | None:
    """The ``process_name`` of the chosen process's command line (``None`` when unreadable).

    Runtimes are named after what they run (``python3 /x/claude`` → ``claude``); an empty
    result (empty ``argv[0]``) is ``None``. Spec: agents.md §3.2, §3.3 step 3.
    """
    if not cmdline:
        return None
    return program_name(cmdline) or None
