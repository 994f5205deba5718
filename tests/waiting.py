"""Waiting on events in tests: poll a real condition with a deadline, never sleep blindly.

``wait_until`` is the synchronisation primitive of the suite: it returns as soon as the
condition holds and fails with what it waited for when it never does. ``holds_for`` is not
synchronisation: it checks a behaviour that is itself a span of time ("the pane stays
working for 3 s", "no grant arrives within the window") and fails at the first poll that
breaks it. Speed is measured in ``bench/``, not here (docs/decisions.md "Tests wait on
events").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_S = 0.05  # cheap enough for a status call per poll; far below every timeout used


def wait_until(
    pred: Callable[[], T], timeout: float = 10.0, interval: float = POLL_S, what: str | None = None
) -> T:
    """Poll ``pred`` until it returns a truthy value and return that value.

    Args:
        pred: the condition; called at least once, then every ``interval`` seconds.
        timeout: seconds before giving up (generous: the machines are shared).
        interval: seconds between polls.
        what: a short description of the event, for the failure message.

    Raises:
        AssertionError: the condition did not hold within ``timeout``; the message names
            ``what`` (or the predicate) and the last value seen.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            name = what or getattr(pred, "__name__", "condition")
            raise AssertionError(f"{name} not met within {timeout} s (last value: {value!r:.200})")
        time.sleep(interval)


def holds_for(
    pred: Callable[[], T], seconds: float, interval: float = POLL_S, what: str | None = None
) -> T:
    """Check that ``pred`` stays truthy for ``seconds``: the behaviour under test is a span
    of time (a delay that must not fire early, a window in which nothing may happen).

    Returns the last value. Raises AssertionError at the first poll where it is falsy.
    """
    end = time.monotonic() + seconds
    while True:
        value = pred()
        if not value:
            name = what or getattr(pred, "__name__", "condition")
            raise AssertionError(f"{name} broke before {seconds} s (value: {value!r:.200})")
        if time.monotonic() >= end:
            return value
        time.sleep(min(interval, max(0.0, end - time.monotonic())))
