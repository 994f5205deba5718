"""Which pane a process runs in: hook routing and the self-approval guard (psutil; blocking).

``find_pane`` walks the parent chain of a hook reporter (states.md §3.1 step 4: ≤ 64 hops,
first ancestor that is the child of a live pane; issue #3 "nested ``claude -p``").
``caller_origin`` decides whether a process answering a permission comes from a pane
(issue #10 item 3): by ancestry, by session, or by the ``SIGNALTTY_PANE`` it was started
with. Every function here reads ``/proc``: the server calls them in a worker thread.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Container, Mapping
from dataclasses import dataclass

import psutil

from signaltty.agents.process_name import program_name
from signaltty.system import subreaper
from signaltty.system.procref import ProcessRef, start_ticks

MAX_HOPS = 64
# caller_origin walks to init; a longer chain is refused rather than trusted (a person's
# terminal is a few dozen processes deep at most)
ORIGIN_MAX_HOPS = 1024


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


def cmdline(pid: int) -> list[str] | None:
    """The command line of ``pid`` (``/proc/<pid>/cmdline``), ``None`` when unreadable."""
    try:
        return list(psutil.Process(pid).cmdline())
    except (psutil.Error, OSError):
        return None


def is_alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# ---------------------------------------------------------------- self-approval guard

MAX_REMEMBERED = 4096


class PaneProcesses:
    """Every pane process this daemon started (pid → pane id, start time), kept after it exits.

    A pane's child is a session leader (``term.pty.spawn`` uses ``setsid``), so its pid is
    the session id of everything started in the pane that did not leave the session —
    including background jobs orphaned when the tool call that started them ended. Entries
    outlive the pane (its orphans do); at most ``MAX_REMEMBERED``, oldest dropped.
    Thread-safe: noted on the loop, read in worker threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pids: OrderedDict[int, tuple[str, float | None]] = OrderedDict()
        self._ids: OrderedDict[str, None] = OrderedDict()

    def note(self, pid: int, pane_id: str) -> None:
        """Remember a pane's child; reads its start time once (one ``/proc`` read, new pids
        only)."""
        with self._lock:
            known = self._pids.get(pid)
            if known is not None and known[0] == pane_id:
                return
        try:
            created: float | None = psutil.Process(pid).create_time()
        except (psutil.Error, OSError):
            created = None
        with self._lock:
            self._pids[pid] = (pane_id, created)
            self._pids.move_to_end(pid)
            self._ids[pane_id] = None
            self._ids.move_to_end(pane_id)
            while len(self._pids) > MAX_REMEMBERED:
                self._pids.popitem(last=False)
            while len(self._ids) > MAX_REMEMBERED:
                self._ids.popitem(last=False)

    def adopt(self, entries: object) -> None:
        """Take over ``[[pid, pane id, start time or None], …]`` from the image a restart
        replaced (issue 15); entries out of shape are skipped."""
        if not isinstance(entries, list):
            return
        with self._lock:
            for item in entries[-MAX_REMEMBERED:]:
                if (
                    isinstance(item, list)
                    and len(item) == 3
                    and type(item[0]) is int
                    and item[0] > 1
                    and isinstance(item[1], str)
                    and (item[2] is None or isinstance(item[2], (int, float)))
                ):
                    self._pids[item[0]] = (item[1], item[2])
                    self._ids[item[1]] = None

    def export(self) -> list[list[object]]:
        """What :meth:`adopt` reads."""
        with self._lock:
            return [[pid, pane_id, start] for pid, (pane_id, start) in self._pids.items()]

    def snapshot(self) -> tuple[dict[int, tuple[str, float | None]], frozenset[str]]:
        """``(leader pid → (pane id, start time or None), pane ids)`` as of now."""
        with self._lock:
            return dict(self._pids), frozenset(self._ids)


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a process that answers a permission comes from.

    Attributes:
        inside: True when it must be refused: it runs in a pane, or it cannot be vouched for.
        why: ``ancestry`` (descends from a live pane's process), ``session`` (in the session
            of a pane's process, e.g. an orphaned background job), ``environment`` (started
            with ``SIGNALTTY_PANE`` naming one of our panes, e.g. a tmux server started in a
            pane), ``gone`` (the process no longer exists), ``reused`` (its pid now belongs to
            a process started after the connection), ``adopted_before_restart`` (it descends
            from, or is in the session of, a pane process or adopted orphan of an earlier
            run of the daemon: ``pane_records``), or ``outside``.
        pane_id: the pane it was traced to, when there is one.
    """

    inside: bool
    why: str
    pane_id: str | None = None


def own_unit_cgroup() -> str | None:
    """The daemon's cgroup when it runs in its own systemd unit (``signaltty*.service``), else None.

    Under ``systemd --user`` every process the daemon starts (panes, their orphans, a
    ``setsid`` escape) stays in the unit's cgroup; a process of the person's session never
    is. Outside such a unit (started from a terminal) the cgroup is shared with the person's
    shell and says nothing, so it is not used. Reads ``/proc/self/cgroup`` (cgroup v2 line).
    """
    path = _cgroup(os.getpid())
    if path is None:
        return None
    leaf = path.rsplit("/", 1)[-1]
    return path if leaf.startswith("signaltty") and leaf.endswith(".service") else None


def cgroup_rule_off_reason(cgroup_file: str = "/proc/self/cgroup") -> str | None:
    """Why the cgroup rule (``own_unit_cgroup``) cannot apply on this host, or None.

    The rule reads the cgroup v2 line (``0::``) of ``/proc/self/cgroup`` (``cgroup_file``);
    a cgroup v1 ("legacy") host has none, so the rule is off there whatever unit the daemon
    runs in (attack pass 3, A11: the daemon logs this once at start).
    """
    try:
        with open(cgroup_file, encoding="utf-8", errors="replace") as fh:
            if any(line.startswith("0::") for line in fh):
                return None
    except OSError as exc:
        return f"/proc/self/cgroup unreadable: {exc.strerror or exc}"
    return "no cgroup v2 hierarchy (cgroup v1 host): /proc/self/cgroup has no 0:: line"


def _cgroup(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("0::"):
                    return line[3:].strip()
    except OSError:
        return None
    return None


def _person_started(
    pid: int, people: Mapping[int, float | None], ended: Mapping[int, float] | None = None
) -> bool:
    """True when ``pid`` is, or is in the session of, a process started for the person.

    Such a process is its own session leader; a terminal that forks its window and exits
    leaves the window in that session (the id stays reserved while a member lives). Once
    the leader is gone, a member counts only when it started before the leader ended
    (``ended``: leader pid → when the daemon saw it exit): a session that reuses the
    number later (after a pid wrap, made by a pane process) is not the person's (attack
    pass 8, A3); a gone leader whose end was not seen counts for nobody.
    """
    if pid in people and _same_process(pid, people[pid]):
        return True
    try:
        sid = os.getsid(pid)
    except OSError:
        return False
    if sid not in people:
        return False
    if psutil.pid_exists(sid):
        return _same_process(sid, people[sid])
    end = (ended or {}).get(sid)
    if end is None:
        return False
    try:
        return psutil.Process(pid).create_time() <= end + 0.01
    except (psutil.Error, OSError):
        return False


def person_process(
    pid: int, people: Mapping[int, float | None], ended: Mapping[int, float] | None = None
) -> bool:
    """True when ``pid`` is, or is in the session of, a terminal started for the person
    (``caller_origin``'s ``person_pids`` and ``person_ended``)."""
    return bool(people) and _person_started(pid, people, ended)


def kill_adopted_orphans(
    keep: Container[int],
    people: Mapping[int, float | None],
    ended: Mapping[int, float] | None = None,
) -> list[int]:
    """SIGKILL the daemon's adopted orphans and their descendants at shutdown, sparing the
    person's terminals (``subreaper.kill_adopted``; blocking). Returns the pids signalled."""
    return subreaper.kill_adopted(keep, lambda pid: person_process(pid, people, ended))


def _same_process(pid: int, created: float | None) -> bool:
    try:
        now = psutil.Process(pid).create_time()
    except (psutil.Error, OSError):
        return False
    return created is not None and abs(now - created) < 0.01


def caller_origin(
    pid: int,
    *,
    live_children: Mapping[int, str],
    sessions: Mapping[int, tuple[str, float | None]],
    pane_ids: Container[str],
    ref: ProcessRef | None = None,
    daemon_pid: int | None = None,
    person_pids: Mapping[int, float | None] | None = None,
    daemon_cgroup: str | None = None,
    before_restart: Mapping[int, int] | None = None,
    person_ended: Mapping[int, float] | None = None,
) -> Origin:
    """Trace the process ``pid`` (a socket peer or a D-Bus caller) to a pane, if any.

    Args:
        pid: the caller's pid (``SO_PEERCRED`` or ``GetConnectionUnixProcessID``).
        live_children: pid of each live pane's child → pane id.
        sessions: every pane child this daemon started → (pane id, its start time or
            None) (``PaneProcesses.snapshot``).
        pane_ids: every pane id this daemon has had.
        ref: what binds ``pid`` to the process that connected (``system.procref``: a
            pidfd, its exact start time, or the latest start time it can have). Checked
            before and after the walk: a process that exited is ``gone``, another one at
            the number is ``reused``. None (hook reporters, a notification server vouched
            for at its first use) trusts the number.
        daemon_pid: the daemon's pid. The daemon is a child subreaper, so anything that
            left a pane by double-forking (``setsid -f``, a tmux server) is re-parented to
            it: a caller descending from the daemon is ``daemon`` (inside) unless the walk
            passes a process the daemon started for the person first.
        person_pids: processes the daemon started for the person (the terminal opened by a
            notification click; ``desktop.terminal``) → start time; each is its own session
            leader, so a caller in such a session counts as the person's too.
        daemon_cgroup: the daemon's own systemd unit cgroup (``own_unit_cgroup``); a caller
            in it is ``service`` (inside).
        person_ended: when each of ``person_pids`` was seen to exit (``_person_started``).
        before_restart: pane leaders and adopted orphans of earlier runs of the daemon
            that still live, pid → start ticks (``pane_records``): a caller with one of
            them (same pid and start time) in its ancestry or as its session leader is
            ``adopted_before_restart`` (inside). After a restart the subreaper rule no
            longer sees them: they are re-parented to init (attack pass 3, A7).

    Returns:
        ``Origin``; ``inside`` for ancestry, session, environment (the caller's or any
        ancestor's ``SIGNALTTY_PANE``), daemon, service, gone, reused,
        adopted_before_restart, and — failing
        closed — ``deep`` (no root, daemon or person's terminal within ``ORIGIN_MAX_HOPS``
        processes) and ``broken`` (an ancestor vanished during the walk). Raises nothing.
    """
    if ref is not None and (lost := ref.verdict()) is not None:
        return Origin(True, lost)
    try:
        if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return Origin(True, "gone")
    except (psutil.Error, OSError):
        return Origin(True, "gone")
    origin = _walk(
        pid,
        live_children=live_children,
        sessions=sessions,
        pane_ids=pane_ids,
        daemon_pid=daemon_pid,
        person_pids=person_pids,
        daemon_cgroup=daemon_cgroup,
        before_restart=before_restart or {},
        person_ended=person_ended or {},
    )
    # the walk read /proc under a number: if the process left it meanwhile, what was read
    # may be another process's (the pidfd or start time says whether it still is ours)
    if not origin.inside and ref is not None and (lost := ref.verdict()) is not None:
        return Origin(True, lost)
    return origin


def _walk(
    pid: int,
    *,
    live_children: Mapping[int, str],
    sessions: Mapping[int, tuple[str, float | None]],
    pane_ids: Container[str],
    daemon_pid: int | None,
    person_pids: Mapping[int, float | None] | None,
    daemon_cgroup: str | None,
    before_restart: Mapping[int, int],
    person_ended: Mapping[int, float],
) -> Origin:
    """``caller_origin`` once ``pid`` is known to be the caller (same arguments)."""
    people = person_pids or {}
    chain: list[psutil.Process] = []
    from_daemon = by_person = reached_root = False
    current = pid
    for _ in range(ORIGIN_MAX_HOPS):
        if current <= 1:
            reached_root = True
            break
        pane_id = live_children.get(current)
        if pane_id is not None:
            return Origin(True, "ancestry", pane_id)
        if people and _person_started(current, people, person_ended):
            by_person = True
            break  # started by the daemon for the person: what is above it is the daemon
        if daemon_pid is not None and current == daemon_pid:
            from_daemon = True
            break
        try:
            step = psutil.Process(current)
            chain.append(step)
            current = step.ppid()
        except (psutil.Error, OSError):
            break  # an ancestor vanished mid-walk: the chain is broken (decided below)
    if not (reached_root or by_person or from_daemon):
        # fail closed: a chain deeper than any terminal's, or one that broke under the walk,
        # could hide the daemon or a pane above it (a 70-deep `sh` nest did)
        return Origin(True, "deep" if len(chain) >= ORIGIN_MAX_HOPS else "broken")
    for step in chain:
        try:
            # every ancestor's, not only the caller's: a tmux server started in a pane
            # keeps the pane's environment for the commands it runs
            named = step.environ().get("SIGNALTTY_PANE")
        except (psutil.Error, OSError):
            named = None  # unreadable (e.g. a hardened /proc): the walk still decides
        if named and named in pane_ids:
            return Origin(True, "environment", named)
    for member in (step.pid for step in chain):
        pane_id = _pane_session(member, live_children, sessions)
        if pane_id is not None:
            return Origin(True, "session", pane_id)
    if before_restart and _before_restart([step.pid for step in chain], before_restart):
        return Origin(True, "adopted_before_restart")
    if from_daemon:
        return Origin(True, "daemon")
    # the person's terminal opened by the daemon is in the daemon's unit cgroup too
    if daemon_cgroup is not None and not by_person and _cgroup(pid) == daemon_cgroup:
        return Origin(True, "service")
    return Origin(False, "outside")


def _pane_session(
    pid: int, live_children: Mapping[int, str], sessions: Mapping[int, tuple[str, float | None]]
) -> str | None:
    """The pane whose session ``pid`` is in, or None.

    A session id stays reserved while any member lives (Linux never hands out a pid still
    used as a session or group id). So a recorded leader pid names the pane's session when
    the leader is still that same process (same start time) or no process has the pid any
    more (its orphans keep the session id); a *different* process at that pid means the
    pane's session is over and the number now names someone else's session.
    """
    try:
        sid = os.getsid(pid)
    except OSError:
        return None
    entry = sessions.get(sid)
    if entry is None:
        return None
    pane_id, created = entry
    if sid in live_children:
        return pane_id
    try:
        now = psutil.Process(sid).create_time()
    except psutil.NoSuchProcess:
        return pane_id
    except (psutil.Error, OSError):
        return pane_id  # cannot tell: count it as the pane's (refusing is the safe side)
    return pane_id if created is not None and abs(now - created) < 0.01 else None


def _before_restart(pids: list[int], records: Mapping[int, int]) -> bool:
    """True when one of ``pids`` (a caller's chain) is a recorded process of an earlier run
    (same pid, same start ticks) or is in the session such a process leads.

    A session id stays reserved while a member lives, so a leader that no longer exists
    still names its session; a leader pid now held by a different process does not.
    """
    for pid in pids:
        recorded = records.get(pid)
        if recorded is not None and start_ticks(pid) == recorded:
            return True
        try:
            sid = os.getsid(pid)
        except OSError:
            continue
        recorded = records.get(sid)
        if recorded is None:
            continue
        leader = start_ticks(sid)
        if leader is None or leader == recorded:
            return True
    return False
