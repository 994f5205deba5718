"""Batched PTY reads (server/read_batch.py, issue 12): real PTYs, the real uvloop and asyncio
loops, and the pump of a real child process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import selectors
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import uvloop

from signaltty.core.model import Pane
from signaltty.server.bus import Bus
from signaltty.server.panes import PaneRuntime
from signaltty.server.read_batch import ReadBatcher, for_loop
from signaltty.server.store import Store
from signaltty.term import pty as ptymod

RUNNERS: dict[str, Callable[[Awaitable[Any]], Any]] = {
    "uvloop": uvloop.run,
    "asyncio": asyncio.run,
}


async def _until(check: Callable[[], bool], within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


class _Ptys:
    """Real PTY pairs: the test writes to the slave, the batcher reads the master."""

    def __init__(self, n: int) -> None:
        self.pairs = [pty.openpty() for _ in range(n)]
        for master, _slave in self.pairs:
            os.set_blocking(master, False)

    def write(self, i: int, data: bytes) -> None:
        os.write(self.pairs[i][1], data)

    def master(self, i: int) -> int:
        return self.pairs[i][0]

    def close(self, batcher: ReadBatcher | None = None) -> None:
        """Unregister the masters from ``batcher`` (before closing them), then close all."""
        for master, slave in self.pairs:
            if batcher is not None:
                batcher.remove(master)
            for fd in (master, slave):
                with contextlib.suppress(OSError):
                    os.close(fd)


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_masters_readable_by_the_end_of_the_delay_are_read_in_one_round(runner: str) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        batcher = ReadBatcher(loop, selectors.DefaultSelector(), delay_s=0.2)
        ptys = _Ptys(3)
        passes: list[int] = []  # bumped by a callback between loop passes
        reads: list[tuple[int, int, bytes]] = []

        def reader(i: int) -> Callable[[], None]:
            def on_readable() -> None:
                reads.append((i, len(passes), os.read(ptys.master(i), 1024)))
                loop.call_soon(passes.append, 1)

            return on_readable

        try:
            for i in range(3):
                batcher.add(ptys.master(i), reader(i))
            ptys.write(0, b"first")
            await asyncio.sleep(0.05)  # the round is armed and waits
            assert reads == []
            ptys.write(2, b"third")
            await _until(lambda: len(reads) == 2)
            await asyncio.sleep(0.05)
            # both in one pass of the loop; pane 1 printed nothing and was not read
            assert sorted((i, data) for i, _, data in reads) == [(0, b"first"), (2, b"third")]
            assert reads[0][1] == reads[1][1]
            # the next output arms the next round
            ptys.write(1, b"second")
            await _until(lambda: len(reads) == 3)
            assert reads[2][0] == 1
            assert reads[2][2] == b"second"
        finally:
            ptys.close(batcher)

    RUNNERS[runner](scenario())


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_reader_removed_or_failing_mid_round_costs_the_others_nothing(runner: str) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        batcher = ReadBatcher(loop, selectors.DefaultSelector(), delay_s=0.05)
        ptys = _Ptys(3)
        reads: list[int] = []

        def remover() -> None:
            # removes the other two: whichever of them the round had not reached yet is
            # not called (removing one already read is a no-op)
            reads.append(0)
            os.read(ptys.master(0), 1024)
            batcher.remove(ptys.master(1))
            batcher.remove(ptys.master(2))

        def failing() -> None:
            reads.append(1)
            raise RuntimeError("a pane's fault")

        try:
            batcher.add(ptys.master(0), remover)
            batcher.add(ptys.master(1), failing)
            batcher.add(ptys.master(2), lambda: reads.append(2))
            for i in range(3):
                ptys.write(i, b"x")
            await _until(lambda: 0 in reads)
            await asyncio.sleep(0.2)
            assert reads.count(0) == 1
            # 1 and 2 ran only if the selector listed them before 0: at most once each
            assert reads.count(1) <= 1
            assert reads.count(2) <= 1
            assert len(batcher) == 1
            # a failing reader does not stop the rounds: re-register it, it is called again
            # (level-triggered: its byte is still unread) and so is every later round
            reads.clear()
            batcher.add(ptys.master(1), failing)
            await _until(lambda: reads.count(1) >= 2)
        finally:
            ptys.close(batcher)

    RUNNERS[runner](scenario())


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_without_masters_the_loop_watches_nothing(runner: str) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        selector = selectors.DefaultSelector()
        batcher = ReadBatcher(loop, selector, delay_s=0.01)
        ptys = _Ptys(1)
        try:
            batcher.add(ptys.master(0), lambda: os.read(ptys.master(0), 1024))
            batcher.remove(ptys.master(0))
            assert len(batcher) == 0
            # nothing of the batcher's is left on the loop (asyncio's remove_reader says
            # False when the descriptor was not watched; uvloop's says nothing)
            if runner == "asyncio":
                assert loop.remove_reader(selector.fileno()) is False
            batcher.remove(ptys.master(0))  # twice: a no-op
        finally:
            ptys.close()

    RUNNERS[runner](scenario())


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_while_output_flows_rounds_follow_on_the_timer_and_a_quiet_round_watches_again(
    runner: str,
) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        batcher = ReadBatcher(loop, selectors.DefaultSelector(), delay_s=0.02)
        ptys = _Ptys(2)
        reads: list[tuple[int, bytes]] = []
        # (selector watched, next round armed) just after each round that read something
        after_round: list[tuple[bool, bool]] = []

        def note() -> None:
            after_round.append((batcher._watching, batcher._round is not None))

        def reader(i: int) -> Callable[[], None]:
            def on_readable() -> None:
                reads.append((i, os.read(ptys.master(i), 1024)))
                loop.call_soon(note)  # runs after the round, before the next I/O poll

            return on_readable

        try:
            for i in range(2):
                batcher.add(ptys.master(i), reader(i))
            assert batcher._watching
            for n in range(10):  # a steady trickle on both, faster than the rounds
                ptys.write(n % 2, b"%d;" % n)
                await asyncio.sleep(0.005)
            await _until(
                lambda: (
                    sum(len(d) for _, d in reads) == len(b"".join(b"%d;" % n for n in range(10)))
                )
            )
            got = {i: b"".join(d for j, d in reads if j == i) for i in range(2)}
            assert got == {0: b"0;2;4;6;8;", 1: b"1;3;5;7;9;"}
            # a round that read arms the next one itself and leaves the selector unwatched
            assert after_round
            assert set(after_round) == {(False, True)}
            # output stopped: a round finds nothing, and the selector is watched again
            await _until(lambda: batcher._watching)
            assert batcher._round is None
            ptys.write(1, b"again")
            await _until(lambda: reads[-1] == (1, b"again"))
        finally:
            ptys.close(batcher)
        assert batcher._round is None
        assert not batcher._watching

    RUNNERS[runner](scenario())


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_long_round_lets_the_loop_run_before_it_reads_the_rest(runner: str) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        batcher = ReadBatcher(loop, selectors.DefaultSelector(), delay_s=0.02)
        ptys = _Ptys(8)
        order: list[str] = []

        def reader(i: int) -> Callable[[], None]:
            def on_readable() -> None:
                os.read(ptys.master(i), 1024)
                order.append(f"read {i}")
                if len(order) == 1:
                    loop.call_soon(order.append, "loop")  # a request arriving meanwhile
                end = time.perf_counter() + 0.004  # a costly pane: 4 ms of work
                while time.perf_counter() < end:
                    pass

            return on_readable

        try:
            for i in range(8):
                batcher.add(ptys.master(i), reader(i))
            for i in range(8):
                ptys.write(i, b"x")
            await _until(lambda: sum(1 for o in order if o.startswith("read")) == 8)
            await asyncio.sleep(0.01)
            # every master read once, and the loop ran before the round had read them all
            assert sorted(o for o in order if o != "loop") == [f"read {i}" for i in range(8)]
            assert order.count("loop") == 1
            assert 0 < order.index("loop") < len(order) - 1
        finally:
            ptys.close(batcher)

    RUNNERS[runner](scenario())


# ---------------------------------------------------------------- the pump


def _pane(cols: int = 80, rows: int = 24) -> Pane:
    now = time.time()
    return Pane(
        id="pane_batch", workspace_id="ws_x", argv=["python"], cwd="/", launch_cwd="/",
        created_at=now, last_activity_at=now, cols=cols, rows=rows,
    )  # fmt: skip


class _Viewer:
    def __init__(self) -> None:
        self.data = bytearray()

    def deliver_data(self, pane_id: str, data: bytes, output_offset: int) -> None:
        self.data += data

    def detached(self, pane_id: str) -> None:
        pass


# Prints a numbered line every 20 ms; on "bulk\n" from its input prints 400 KB at once.
_PRINTER = r"""
import os, select, sys
i = 0
while True:
    r, _, _ = select.select([0], [], [], 0.02)
    if r:
        line = sys.stdin.readline()
        if not line or line.startswith("quit"):
            break
        if line.startswith("bulk"):
            sys.stdout.write(("B" * 79 + "\n") * 5000)
    sys.stdout.write(f"line {i}\n")
    sys.stdout.flush()
    i += 1
"""


async def test_the_pump_reads_quiet_panes_in_rounds_and_followed_or_bulk_ones_directly() -> None:
    store = Store(Bus())
    pane = _pane()
    store.panes[pane.id] = pane
    rt = PaneRuntime(store, pane)
    proc = ptymod.spawn(
        [sys.executable, "-c", _PRINTER], env=dict(os.environ), cwd="/", cols=80, rows=24
    )
    rt.start(proc)
    try:
        # small lines, nobody following: read in rounds, and every line reaches the screen
        await _until(lambda: rt.reads_batched and rt.output_offset > 200)
        assert for_loop(asyncio.get_running_loop()) is not None

        def last_line_number() -> int:
            rt.settle_now()
            numbers = [int(r.split()[1]) for r in rt.screen.peek_rows() if r.startswith("line ")]
            return max(numbers, default=-1)

        seen = last_line_number()
        await _until(lambda: last_line_number() >= seen + 5)
        assert rt.output_offset == len(rt.raw)  # no byte lost on the way

        # a viewer follows the pane: read as soon as output arrives, and it gets the bytes
        viewer = _Viewer()
        rt.viewers.add(viewer)
        rt.follow_live()
        assert not rt.reads_batched
        await _until(lambda: b"line" in viewer.data)
        rt.viewers.discard(viewer)
        await _until(lambda: rt.reads_batched)

        # bulk output: read directly while it lasts
        before_bulk = rt.output_offset
        await rt.write_input(b"bulk\n", 5.0)
        await _until(lambda: not rt.reads_batched)
        # every bulk byte read, and the numbered lines after it reach the screen (an offset
        # reached inside the bulk would leave only its rows on the screen)
        await _until(lambda: rt.output_offset > before_bulk + 400_000)

        def line_rows_on_screen() -> bool:
            rt.settle_now()
            return any(r.startswith("line ") for r in rt.screen.peek_rows())

        await _until(line_rows_on_screen)
        # and back to rounds once it has printed only small lines for a while
        await _until(lambda: rt.reads_batched, within_s=20)
    finally:
        with contextlib.suppress(Exception):
            await rt.write_input(b"quit\n", 5.0)
        await rt.wait_exit(10)
        rt.close()


# Prints a numbered line every 20 ms; after ``$ASK_AT`` seconds asks for the cursor position
# once (DSR 6), as a program that asks the terminal something mid-run does.
_ASKER = r"""
import os, sys, time
ask_at = time.monotonic() + float(os.environ["ASK_AT"])
asked = False
i = 0
while True:
    if not asked and time.monotonic() >= ask_at:
        sys.stdout.write("\x1b[6n")
        asked = True
    sys.stdout.write(f"line {i}\n")
    sys.stdout.flush()
    i += 1
    time.sleep(0.02)
"""


async def _started(script: str, env: dict[str, str] | None = None) -> tuple[Store, PaneRuntime]:
    store = Store(Bus())
    pane = _pane()
    store.panes[pane.id] = pane
    rt = PaneRuntime(store, pane)
    proc = ptymod.spawn(
        [sys.executable, "-c", script], env={**os.environ, **(env or {})}, cwd="/", cols=80, rows=24
    )
    rt.start(proc)
    return store, rt


async def _stop(rt: PaneRuntime) -> None:
    """A test's cleanup: kill the pane's program, wait for its exit, close the pane."""
    with contextlib.suppress(ProcessLookupError):
        rt.send_signal(9, group=True)
    await rt.wait_exit(10)
    rt.close()


def _last_line_number(rt: PaneRuntime) -> int:
    rt.settle_now()
    numbers = [int(r.split()[1]) for r in rt.screen.peek_rows() if r.startswith("line ")]
    return max(numbers, default=-1)


async def test_a_pane_that_only_prints_moves_to_the_slow_lane_until_someone_talks_to_it() -> None:
    store, rt = await _started(_PRINTER)
    try:
        await _until(lambda: rt.reads_batched and rt.output_offset > 200)
        assert not rt.reads_slowly  # a new pane: fast rounds while it starts
        await _until(lambda: rt.reads_slowly, within_s=15)
        # read 4 times a second now, and nothing is lost on the way
        seen = _last_line_number(rt)
        await _until(lambda: _last_line_number(rt) >= seen + 20)
        assert rt.output_offset == len(rt.raw)
        # a reader catches up first: what waits on the master is read at once (the offset
        # is compared across the call alone; a round may have just emptied the master, so
        # a few tries)
        caught = False
        for _ in range(50):
            await asyncio.sleep(0.03)
            before = rt.output_offset
            rt.catch_up()
            if rt.output_offset > before:
                caught = True
                break
        assert caught
        assert rt.reads_slowly  # a read is no talk to the program

        # input: the answer is read in the fast rounds at once
        await rt.write_input(b"hello\n", 5.0)
        assert rt.reads_batched
        assert not rt.reads_slowly
        await _until(lambda: rt.reads_slowly, within_s=15)

        # a client waiting for output: fast rounds while it waits (also without the nudge
        # the handler gives, from the next read on)
        ev = store.bus.waiter(rt.pane.id, output=True)
        await _until(lambda: not rt.reads_slowly)
        await asyncio.sleep(2.5)
        assert not rt.reads_slowly
        store.bus.drop_waiter(rt.pane.id, ev)
        await _until(lambda: rt.reads_slowly)

        # resized: the program redraws, read at once
        rt.resize(100, 30)
        assert not rt.reads_slowly
        assert rt.reads_batched
    finally:
        await _stop(rt)


# Prints a dot every 100 ms for ``$DENSE_AT`` seconds (the slow lane), then 40 titles in one
# write (a read with that many OSC items is capped at 1 KiB next time), then ``$TITLES`` more
# titles as fast as the PTY takes them, then "done".
_DENSE = r"""
import os, sys, time
end = time.monotonic() + float(os.environ["DENSE_AT"])
while time.monotonic() < end:
    sys.stdout.write("."); sys.stdout.flush(); time.sleep(0.1)
sys.stdout.write("".join(f"\x1b]0;t{i}\x07" for i in range(40))); sys.stdout.flush()
time.sleep(0.3)
sys.stdout.write("".join(f"\x1b]0;t{i:05d}\x07" for i in range(int(os.environ["TITLES"]))))
sys.stdout.write("done\n")
sys.stdout.flush()
time.sleep(60)
"""


async def test_a_flood_dense_with_osc_in_the_slow_lane_is_read_directly() -> None:
    titles = 4000  # 11 bytes each: 44 KB, 44 reads of 1 KiB (11 s in 250 ms rounds)
    store, rt = await _started(_DENSE, {"DENSE_AT": "3", "TITLES": str(titles)})
    try:
        await _until(lambda: rt.reads_slowly, within_s=15)
        await _until(lambda: b"t00000" in bytes(rt.raw), within_s=15)
        started = time.monotonic()
        await _until(lambda: b"done" in bytes(rt.raw)[-64:], within_s=30)
        # a read that filled its 1 KiB limit took it out of the rounds: the program is not
        # held to 1 KiB per 250 ms round (11 s for these 44 KB; well under 1 s read directly)
        assert time.monotonic() - started < 5
        assert rt.pane.title == f"t{titles - 1:05d}"
    finally:
        await _stop(rt)


async def test_a_terminal_query_takes_a_slow_pane_back_to_the_fast_rounds() -> None:
    store, rt = await _started(_ASKER, {"ASK_AT": "4"})
    lanes: list[bool] = []
    try:
        await _until(lambda: rt.reads_slowly, within_s=15)
        # the query comes at 4 s: fast rounds from that read on, and slow again 2 s later
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not (False in lanes and lanes[-1]):
            lanes.append(rt.reads_slowly)
            await asyncio.sleep(0.01)
        assert False in lanes
        assert lanes[-1]
        assert b"\x1b[6n" in bytes(rt.raw)
    finally:
        await _stop(rt)


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_closed_loop_takes_its_batcher_and_descriptor_with_it(runner: str) -> None:
    import gc

    from signaltty.server import read_batch

    async def one() -> None:
        assert for_loop(asyncio.get_running_loop()) is not None

    RUNNERS[runner](one())  # the first may create the loop machinery's own descriptors
    gc.collect()
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    kept = len(read_batch._BATCHERS)
    for _ in range(20):
        RUNNERS[runner](one())
    gc.collect()
    assert len(read_batch._BATCHERS) <= kept
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) <= before
