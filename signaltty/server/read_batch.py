"""Batched PTY reads: the output of panes nobody follows live is read in rounds.

With one ``loop.add_reader`` per pane, every write of every program wakes the daemon: 200
spinners at 10 fps are 2 000 wake-ups a second, each paying the loop's and the interpreter's
cold start after the program's own turn on the CPU. ``ReadBatcher`` keeps such panes' masters
in a private selector (epoll on Linux, kqueue on macOS) whose own descriptor the loop watches:
the first output to arrive arms a ``READ_BATCH_S`` timer, and when it fires every master that
is readable by then is read once, in one pass. Measured on 200 spinner PTYs: 27.5 µs of
daemon CPU per read one by one, 17.6 µs in 10 ms rounds (issue 12, docs/benchmarks.md). A
round that read something arms the next one itself; only a round that finds nothing to read
goes back to watching the selector (session 19: one wake-up per round instead of two).

Output is late by at most ``READ_BATCH_S``; the pump (``server/panes.py``) therefore reads a
pane directly while a viewer or listener follows it or while it prints in bulk.
"""

from __future__ import annotations

import asyncio
import contextlib
import selectors
import time
import weakref
from collections.abc import Callable
from typing import Final, cast

import structlog

log = structlog.get_logger("signaltty.read_batch")

# How long the first readable master of a round waits for others (seconds).
READ_BATCH_S: Final = 0.010
# A round reads for this long at most before it lets the loop run (seconds).
ROUND_SLICE_S: Final = 0.010
# The slow lane's rounds (seconds): panes that keep printing small amounts while nobody
# follows them or writes to them (the pump decides, ``server/panes.py``). A spinner at 10 fps
# is then read 4 times a second, 2.5 frames at a time, instead of once per frame: the daemon
# spent 14 % of a core on 200 such panes with 10 ms rounds and 9 % with 250 ms (session 19).
SLOW_BATCH_S: Final = 0.250

_BATCHERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[float, ReadBatcher | None]] = (
    weakref.WeakKeyDictionary()
)


def for_loop(loop: asyncio.AbstractEventLoop, delay_s: float = READ_BATCH_S) -> ReadBatcher | None:
    """The loop's batcher with rounds of ``delay_s`` (``READ_BATCH_S`` or ``SLOW_BATCH_S``),
    made on first use; None where the platform's selector has no descriptor of its own to
    watch (then every pane is read directly)."""
    batchers = _BATCHERS.setdefault(loop, {})
    try:
        return batchers[delay_s]
    except KeyError:
        pass
    selector = selectors.DefaultSelector()
    # A weak proxy: the batcher is the value of a weak-keyed table, and a strong reference to
    # its key would keep every loop (and its selector's descriptor) alive for good.
    weak_loop = cast("asyncio.AbstractEventLoop", weakref.proxy(loop))
    batcher = ReadBatcher(weak_loop, selector, delay_s) if hasattr(selector, "fileno") else None
    if batcher is None:
        selector.close()
    batchers[delay_s] = batcher
    return batcher


class ReadBatcher:
    """Masters read in rounds (see module docstring).

    Args:
        loop: the running loop; the batcher's descriptor is watched only while it holds a
            master and no round is due.
        selector: a selector with ``fileno()``; the batcher owns it.
        delay_s: how long a round waits after the first output (``READ_BATCH_S``).
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        selector: selectors.BaseSelector,
        delay_s: float = READ_BATCH_S,
    ) -> None:
        self._loop = loop
        self._selector = selector
        self._fd: int = selector.fileno()  # type: ignore[attr-defined]
        self._delay_s = delay_s
        self._watching = False
        self._round: asyncio.Handle | None = None  # the next round, or a round's rest

    def __len__(self) -> int:
        return len(self._selector.get_map())

    def add(self, fd: int, on_readable: Callable[[], None]) -> None:
        """Read ``fd`` in rounds: ``on_readable()`` runs once per round while it is readable.

        Raises:
            KeyError: ``fd`` is registered already.
            OSError, ValueError: the selector refused ``fd`` (closed, not pollable).
        """
        self._selector.register(fd, selectors.EVENT_READ, on_readable)
        self._watch()

    def remove(self, fd: int) -> None:
        """Stop reading ``fd``; a no-op when it is not registered. Call it before closing
        ``fd``: a closed descriptor's number may come back for another pane."""
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(fd)
        if not self._selector.get_map():
            self._unwatch()
            if self._round is not None:
                self._round.cancel()
                self._round = None

    def _watch(self) -> None:
        if not self._watching and self._round is None:
            self._loop.add_reader(self._fd, self._on_output)
            self._watching = True

    def _unwatch(self) -> None:
        if self._watching:
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_reader(self._fd)
            self._watching = False

    def _on_output(self) -> None:
        self._unwatch()
        self._round = self._loop.call_later(self._delay_s, self._read_round)

    def _read_round(self) -> None:
        self._round = None
        try:
            ready = [key for key, _events in self._selector.select(0)]
        except (OSError, ValueError):
            log.exception("read_batch.select_failed")
            ready = []
        self._read_keys(ready)

    def _read_keys(self, ready: list[selectors.SelectorKey]) -> None:
        """Call the readers of ``ready`` for ``ROUND_SLICE_S`` at most; the rest in the loop's
        next turn, so that requests and other panes run in between (a slow round holds up to
        250 ms of every slow pane's output: 100 panes retitling 300 times a second held the
        loop 120–200 ms in one callback, the session 19 attack pass)."""
        self._round = None
        fd_map = self._selector.get_map()
        deadline = time.perf_counter() + ROUND_SLICE_S
        last = len(ready) - 1
        for i, key in enumerate(ready):
            # an earlier reader of this round may have removed (or replaced) this one
            if fd_map.get(key.fd) is not key:
                continue
            try:
                key.data()
            except Exception:  # noqa: BLE001 - one pane's fault must not cost the others their round
                log.exception("read_batch.reader_failed", fd=key.fd)
            if i < last and time.perf_counter() >= deadline:
                self._round = self._loop.call_soon(self._read_keys, ready[i + 1 :])
                return
        if not fd_map:
            return
        if ready:
            # Output is flowing: the next round comes on the timer alone. Watching the
            # selector again would cost the loop a second wake-up (and the watch's own
            # set-up and teardown) for every round while every spinner keeps printing.
            self._round = self._loop.call_later(self._delay_s, self._read_round)
        else:
            self._watch()
