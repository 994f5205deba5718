"""Which pane a hook reporter runs in: the parent chain of ``client_pid`` (psutil).

Spec: states.md §3.1 step 4 (≤ 64 hops, first ancestor that is the child of a live pane);
issue #3 "nested ``claude -p``" (see ``docs/decisions.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import psutil

from signaltty.agents.process_name import program_name

MAX_HOPS = 64


@dataclass(frozen=True, slots=True)
class Chain:
    """The reporter's ancestry up to the pane's child process.

    Attributes:
        pane_id: the pane whose child is an ancestor of the reporter, or ``None``.
        pids: reporter first, pane child last (empty when no pane matched).
        names: program names (agents.md §3.2) of ``pids``, same order.
    """

    pane_id: str | None
    pids: tuple[int, ...] = ()
    names: tuple[str, ...] = ()


def find_pane(client_pid: int, child_panes: Mapping[int, str]) -> Chain:
    """Walk up from ``client_pid`` until a pane's child process is found (≤ 64 hops)."""
    pids: list[int] = []
    names: list[str] = []
    pid = client_pid
    for _ in range(MAX_HOPS):
        if pid <= 1:
            break
        try:
            proc = psutil.Process(pid)
            cmdline = proc.cmdline()
            ppid = proc.ppid()
        except (psutil.Error, OSError):
            break
        pids.append(pid)
        names.append(program_name(cmdline) if cmdline else "")
        pane_id = child_panes.get(pid)
        if pane_id is not None:
            return Chain(pane_id, tuple(pids), tuple(names))
        pid = ppid
    return Chain(None)


def agent_process(chain: Chain, agent_names: frozenset[str]) -> int | None:
    """The agent process a hook belongs to: the nearest ancestor whose program is the agent.

    The reporter itself (``pids[0]``) is skipped. ``None`` when no ancestor is recognizable
    (e.g. a hook wrapper that renames itself), in which case the nested-session rule does not
    apply.
    """
    for pid, name in zip(chain.pids[1:], chain.names[1:], strict=False):
        if name in agent_names:
            return pid
    return None


def is_alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
