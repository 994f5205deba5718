"""``SleepWatch`` (server/sleep.py): what counts as asleep, and who is told.

The clocks are real; the kernel's suspend time is given by a function the test controls
where a jump of ``CLOCK_BOOTTIME`` (a real suspend) cannot be produced by a test.
tests/system/test_logind.py covers logind's window end to end.
"""

from __future__ import annotations

import sys
import time

import pytest

from signaltty.server.sleep import SleepWatch, kernel_suspended_s


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CLOCK_BOOTTIME is Linux's")
def test_kernel_suspended_is_boottime_minus_monotonic() -> None:
    first = kernel_suspended_s()
    time.sleep(0.05)
    second = kernel_suspended_s()
    assert first >= -0.01  # the two clocks are read one after the other
    # awake time moves both clocks alike: no suspend is seen while the test runs
    assert second - first == pytest.approx(0.0, abs=0.005)


def test_kernel_suspend_shifts_wall_timers_but_not_the_awake_clock() -> None:
    suspended = [100.0]
    watch = SleepWatch(suspended=lambda: suspended[0])
    shifts: list[float] = []
    watch.listeners.append(shifts.append)
    watch.poll()
    assert shifts == []  # what was suspended before the daemon started does not count
    awake = watch.awake()
    suspended[0] += 600.0  # a ten-minute suspend
    watch.poll()
    watch.poll()
    assert shifts == [pytest.approx(600.0)]
    # CLOCK_MONOTONIC stood still during that suspend: the awake clock needs no correction
    assert watch.awake() - awake < 0.5
    assert watch.asleep_s() == pytest.approx(600.0)


def test_logind_window_stops_the_awake_clock() -> None:
    watch = SleepWatch(suspended=lambda: 0.0)
    shifts: list[float] = []
    watch.listeners.append(shifts.append)
    before = watch.awake()
    watch.begin()
    assert watch.asleep
    time.sleep(0.3)
    assert watch.awake() - before < 0.05
    watch.end()
    assert not watch.asleep
    assert sum(shifts) == pytest.approx(0.3, abs=0.1)
    time.sleep(0.1)
    assert watch.awake() - before == pytest.approx(0.1, abs=0.05)


def test_a_failing_listener_does_not_stop_the_others() -> None:
    suspended = [0.0]
    watch = SleepWatch(suspended=lambda: suspended[0])
    seen: list[float] = []

    def broken(_shift: float) -> None:
        raise RuntimeError("boom")

    watch.listeners.extend([broken, seen.append])
    suspended[0] = 5.0
    watch.poll()
    assert seen == [pytest.approx(5.0)]
