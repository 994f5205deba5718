"""``ancestry.caller_origin``'s follow-up rules on real processes (issue 10 follow-up, item 3).

This test process stands in for the daemon (``daemon_pid``): its children descend from it.
Each rule is checked both ways: a descendant of the "daemon" is refused unless a process
started for the person is on the way; an ancestor's ``SIGNALTTY_PANE`` counts; a caller in
the daemon's unit cgroup is refused unless started for the person.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import psutil
import pytest

from signaltty.server import ancestry
from tests.conftest import wait_until


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen]]:
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def _origin(pid: int, **kw) -> ancestry.Origin:
    return ancestry.caller_origin(pid, live_children={}, sessions={}, pane_ids={"pane_x"}, **kw)


def _child_of(parent: subprocess.Popen) -> int:
    return wait_until(lambda: [c.pid for c in psutil.Process(parent.pid).children()], 10)[0]


def test_descendant_of_the_daemon_unless_started_for_the_person(procs) -> None:
    sh = subprocess.Popen(["sh", "-c", "sleep 60; :"], start_new_session=True)
    procs.append(sh)
    sleeper = _child_of(sh)
    assert _origin(sleeper) == ancestry.Origin(False, "outside")
    assert _origin(sleeper, daemon_pid=os.getpid()) == ancestry.Origin(True, "daemon")
    person = {sh.pid: psutil.Process(sh.pid).create_time()}
    assert _origin(sleeper, daemon_pid=os.getpid(), person_pids=person).inside is False
    # a stale record (another start time at that pid) vouches for nothing
    stale = {sh.pid: person[sh.pid] - 100}
    assert _origin(sleeper, daemon_pid=os.getpid(), person_pids=stale).why == "daemon"


def test_an_ancestors_pane_environment_counts(procs) -> None:
    env = {**os.environ, "SIGNALTTY_PANE": "pane_x"}
    sh = subprocess.Popen(["sh", "-c", "env -u SIGNALTTY_PANE sleep 60; :"], env=env)
    procs.append(sh)
    sleeper = _child_of(sh)
    wait_until(lambda: psutil.Process(sleeper).name() == "sleep", 10)
    assert "SIGNALTTY_PANE" not in psutil.Process(sleeper).environ()
    assert _origin(sleeper) == ancestry.Origin(True, "environment", "pane_x")


def test_the_daemons_unit_cgroup(procs) -> None:
    own = ancestry._cgroup(os.getpid())
    if own is None:
        pytest.skip("no cgroup v2 line in /proc/self/cgroup")
    sh = subprocess.Popen(["sh", "-c", "sleep 60; :"], start_new_session=True)
    procs.append(sh)
    sleeper = _child_of(sh)
    assert _origin(sleeper, daemon_cgroup=own).why == "service"
    assert _origin(sleeper, daemon_cgroup=own + "-other").inside is False
    person = {sh.pid: psutil.Process(sh.pid).create_time()}
    assert _origin(sleeper, daemon_cgroup=own, person_pids=person).inside is False


def test_a_gone_terminals_session_counts_only_for_what_it_started(procs) -> None:
    """A terminal started for the person that forked its window and exited leaves the window
    in its session; once the leader is gone, only members started before its exit count as
    the person's (attack pass 8, A3: a pane process that gets the number after a pid wrap
    and makes a session of it must not have its members trusted)."""
    import time

    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; exit 0"], stdout=subprocess.PIPE,
                              start_new_session=True, text=True)
    assert leader.stdout is not None
    window = int(leader.stdout.readline())
    started = psutil.Process(leader.pid).create_time()
    leader.wait()
    ended_at = time.time()
    try:
        wait_until(lambda: not psutil.pid_exists(leader.pid) or
                   psutil.Process(leader.pid).status() == psutil.STATUS_ZOMBIE, 10)
        assert os.getsid(window) == leader.pid
        people = {leader.pid: started}
        assert ancestry.person_process(window, people, {leader.pid: ended_at})
        # its end not seen: nobody in that session counts
        assert not ancestry.person_process(window, people, {})
        # a member started after the leader ended is not the person's
        assert not ancestry.person_process(window, people, {leader.pid: started - 1})
    finally:
        os.kill(window, 9)
