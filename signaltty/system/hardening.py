"""Process hardening at daemon start: not dumpable, no inherited daemon identity, Yama.

Why (issue 10 third attack pass, A6): a process in a pane has the person's uid. While the
daemon is *dumpable* (the default), such a process can ``ptrace`` it (``gdb -p``) and read
its ``/proc/<pid>/mem`` and ``environ`` unless the Yama LSM restricts ptrace
(``kernel.yama.ptrace_scope`` ≥ 1). ``prctl(PR_SET_DUMPABLE, 0)`` closes that for the
daemon itself (root's ``CAP_SYS_PTRACE`` aside); the cost is that the daemon leaves no core
dump. Panes are not affected: ``execve`` of a program the user can read resets the flag
to 1, so agents and what they run stay debuggable. ``/proc/<pid>/stat`` stays readable,
which the clients' identity check (``proto.trust.process_start_ticks``) relies on.

Without Yama, a pane process can still attach to any *other* process of the person's (their
shell, their editor) and make it act outside every pane: out of reach for signaltty,
docs/security.md "Out of reach".
"""

from __future__ import annotations

import os
import sys
from typing import Final

from signaltty.proto import trust
from signaltty.system import libc

PR_GET_DUMPABLE: Final = 3  # linux/prctl.h
PR_SET_DUMPABLE: Final = 4
YAMA_PTRACE_SCOPE: Final = "/proc/sys/kernel/yama/ptrace_scope"
# kernel.yama.ptrace_scope: 0 classic (any same-uid process), 1 descendants only, 2 admin
# only, 3 none (Documentation/admin-guide/LSM/Yama.rst).
YAMA_CLASSIC: Final = 0


def _prctl(option: int, arg: int = 0) -> int | None:
    """Call ``prctl(option, arg, 0, 0, 0)``; None off Linux or when libc cannot be loaded."""
    if not sys.platform.startswith("linux"):
        return None
    return libc.prctl(option, arg)


def set_not_dumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)`` for this process (Linux).

    Returns:
        True when the flag is now 0; False off Linux or when the call failed. Raises nothing.
    """
    return _prctl(PR_SET_DUMPABLE, 0) == 0 and is_dumpable() is False


def is_dumpable() -> bool | None:
    """This process's dumpable flag (``PR_GET_DUMPABLE``); None off Linux or on failure."""
    result = _prctl(PR_GET_DUMPABLE)
    if result is None or result < 0:
        return None
    return result != 0


def ptrace_scope() -> int | None:
    """``kernel.yama.ptrace_scope`` (0–3), or None when Yama is absent or unreadable."""
    try:
        with open(YAMA_PTRACE_SCOPE, "rb") as f:
            return int(f.read(16).strip())
    except (OSError, ValueError):
        return None


def status() -> dict[str, object]:
    """``server.status.hardening``: ``{"dumpable": bool | None, "ptrace_scope": int | "absent"}``.

    ``dumpable`` is read from the kernel at each call (None off Linux).
    """
    scope = ptrace_scope()
    return {"dumpable": is_dumpable(), "ptrace_scope": "absent" if scope is None else scope}


def harden_daemon() -> list[str]:
    """Daemon start: drop an inherited ``$SIGNALTTY_DAEMON``, make the process non-dumpable.

    ``$SIGNALTTY_DAEMON`` names the daemon a pane belongs to; a daemon started inside a
    pane must not pass its parent's to the terminals and helpers it starts (its panes get
    their own, server/spawning.py).

    Returns:
        Warnings to log, one sentence each: the dumpable flag could not be cleared (Linux),
        Yama is absent or in classic mode (``ptrace_scope`` 0). Raises nothing.
    """
    os.environ.pop(trust.DAEMON_ENV, None)
    warnings: list[str] = []
    if not sys.platform.startswith("linux"):
        return warnings
    if not set_not_dumpable():
        warnings.append(
            "could not make the daemon non-dumpable (prctl PR_SET_DUMPABLE): pane "
            "processes may ptrace it"
        )
    scope = ptrace_scope()
    if scope is None:
        warnings.append(
            "this kernel has no Yama LSM: a pane process can ptrace any other process of "
            "yours (not the daemon); a kernel with Yama and kernel.yama.ptrace_scope=1 "
            "prevents it (docs/security.md)"
        )
    elif scope == YAMA_CLASSIC:
        warnings.append(
            "Yama ptrace_scope is 0 (classic): a pane process can ptrace any other process "
            "of yours (not the daemon); set kernel.yama.ptrace_scope=1 to prevent it"
        )
    return warnings
