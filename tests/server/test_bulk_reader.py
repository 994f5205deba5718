"""The pump with a native reader thread for panes printing in bulk (server/panes.py,
term/reader_thread.py; issue 12): real child processes on real PTYs, the real uvloop loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from signaltty.core.model import Pane
from signaltty.server import term_replies
from signaltty.server.bus import Bus
from signaltty.server.panes import PaneRuntime
from signaltty.server.store import Store
from signaltty.term import pty as ptymod
from signaltty.term import reader_thread
from signaltty.term.screen import PyteScreen
from tests.term.test_reader_thread import reader_threads as _threads
from tests.term.test_reader_thread import reader_threads_settle as _threads_settle

needs_reader = pytest.mark.skipif(
    not reader_thread.available(), reason="the reader thread module is not built"
)


@pytest.fixture(autouse=True)
def _enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The threads are on by default, unless ``SIGNALTTY_READER_THREADS=0`` is set for the
    test run; these tests use them whatever the environment says, and one test hides the
    module to check the loop's own path."""
    monkeypatch.setattr(reader_thread, "ENABLED", True)


async def _until(check: Callable[[], bool], within_s: float = 20.0) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


def _runtime(argv: list[str], cols: int = 80, rows: int = 24) -> PaneRuntime:
    store = Store(Bus())
    now = time.time()
    pane = Pane(
        id="pane_bulk", workspace_id="ws_x", argv=argv, cwd="/", launch_cwd="/",
        created_at=now, last_activity_at=now, cols=cols, rows=rows,
    )  # fmt: skip
    store.panes[pane.id] = pane
    rt = PaneRuntime(store, pane)
    rt.start(ptymod.spawn(argv, env=dict(os.environ), cwd="/", cols=cols, rows=rows))
    return rt


class _Viewer:
    """Collects every byte the pump delivers, in order; ``delay_s`` makes it a slow one."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.data = bytearray()
        self.offsets_ok = True
        self.delay_s = delay_s

    def deliver_data(self, pane_id: str, data: bytes, output_offset: int) -> None:
        # output_offset is where the stream stands after this chunk
        self.offsets_ok &= output_offset == len(self.data) + len(data)
        self.data += data
        if self.delay_s:
            time.sleep(self.delay_s)  # the loop is held up: the thread's buffer fills

    def detached(self, pane_id: str) -> None:
        pass


@contextlib.asynccontextmanager
async def _followed(script: str) -> AsyncIterator[tuple[PaneRuntime, _Viewer]]:
    """A pane running ``python -c script`` followed by a passive viewer; the child is killed
    and reaped afterwards."""
    rt = _runtime([sys.executable, "-c", script])
    viewer = _Viewer()
    rt.viewers.add(viewer)
    rt.set_watching(viewer, False)
    try:
        yield rt, viewer
    finally:
        rt.close()
        rt.terminate(9)
        await rt.wait_exit(10)


@contextlib.contextmanager
def _no_reader_threads(on: bool) -> Iterator[None]:
    """``on``: the module is hidden, every pane is read on the loop (the fallback)."""
    saved = reader_thread._Reader
    if on:
        reader_thread._Reader = None
    try:
        yield
    finally:
        reader_thread._Reader = saved


# Bursts of numbered lines with pauses longer than the bulk hold between them (the pane goes
# in and out of thread mode), small lines in between, then an exit right after a burst.
_BURSTS = r"""
import sys, time
n = 0
def lines(count, width):
    global n
    out = []
    for _ in range(count):
        out.append(f"L{n:07d} " + "x" * width + "\n")
        n += 1
    sys.stdout.write("".join(out))
    sys.stdout.flush()
for burst in range(4):
    lines(6000, 60)
    for _ in range(8):
        time.sleep(0.06)
        lines(1, 10)
lines(9000, 60)
"""


@needs_reader
async def test_every_byte_arrives_once_and_in_order_across_thread_mode_switches() -> None:
    before = _threads()
    rt = _runtime([sys.executable, "-c", _BURSTS])
    viewer = _Viewer()
    rt.viewers.add(viewer)
    rt.set_watching(viewer, False)
    modes: set[bool] = set()
    exited = asyncio.get_running_loop().create_future()
    rt.on_exit_hooks.append(lambda _rt: exited.done() or exited.set_result(None))
    try:

        async def sample() -> None:
            while not exited.done():
                modes.add(rt.reads_by_thread)
                await asyncio.sleep(0.002)

        sampler = asyncio.get_running_loop().create_task(sample())
        await asyncio.wait_for(exited, 60)
        await sampler
        assert modes == {True, False}  # it went in and out of thread mode
        text = bytes(viewer.data).replace(b"\r\n", b"\n")
        numbers = [int(m) for m in re.findall(rb"^L(\d{7}) ", text, re.M)]
        assert numbers == list(range(4 * 6008 + 9000))
        assert viewer.offsets_ok
        assert rt.output_offset == len(viewer.data)
        # the exit came after the last line: it is on the screen when the exit is known
        rt.settle_now()
        assert any(row.startswith(f"L{numbers[-1]:07d} ") for row in rt.screen.peek_rows())
        assert not rt.reads_by_thread
    finally:
        rt.close()
    assert _threads_settle(before) == before


@pytest.mark.parametrize("threads", ["thread", "loop"])
async def test_a_flood_s_last_screen_is_there_when_its_exit_is_published(
    threads: str, tmp_path: Path
) -> None:
    if threads == "thread" and not reader_thread.available():
        pytest.skip("the reader thread module is not built")
    # a TUI repainting its rows in colour: the screen's costliest bytes, so the pump is
    # behind (paused) when the program exits
    flood = tmp_path / "flood.txt"
    body = b"".join(
        b"\x1b[%d;1H\x1b[3%dmframe %06d row %02d " % (y + 1, y % 8, f, y)
        + b"q" * 90
        + b"\x1b[0m\x1b[K"
        for f in range(3000)
        for y in range(40)
    )
    flood.write_bytes(body + b"\x1b[41;1HFINAL-MARKER")
    with _no_reader_threads(threads == "loop"):
        rt = _runtime([shutil.which("cat") or "/bin/cat", str(flood)], cols=120, rows=41)
        seen: list[tuple[int, bool]] = []

        def at_exit(rt: PaneRuntime) -> None:
            rt.settle_now()
            seen.append((rt.output_offset, any("FINAL-MARKER" in r for r in rt.screen.peek_rows())))

        rt.on_exit_hooks.append(at_exit)
        used_thread = False
        try:
            while not seen:
                used_thread |= rt.reads_by_thread
                await asyncio.sleep(0.002)
                assert rt.proc is not None
        finally:
            rt.close()
    assert used_thread == (threads == "thread")
    offset, marker = seen[0]
    expected = len(body) + len(b"\x1b[41;1HFINAL-MARKER")
    assert (offset, marker) == (expected, True)


@needs_reader
async def test_the_thread_is_gone_after_close_and_the_master_is_not_read_by_it() -> None:
    before = _threads()
    rt = _runtime([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('z' * 4096)"])
    try:
        await _until(lambda: rt.reads_by_thread)
        assert _threads() == before + 1
    finally:
        rt.close()
    assert not rt.reads_by_thread
    assert _threads_settle(before) == before
    rt.terminate(9)
    await rt.wait_exit(10)


@needs_reader
async def test_a_thread_s_bytes_go_through_the_pump_before_a_handover() -> None:
    # Floods, then stops inside an escape sequence. With the loop held up, the thread's buffer
    # fills; the handover's pause must put those bytes through the pump before it reads the
    # master, and a resume goes on with the next byte.
    script = (
        "import sys, time\n"
        "sys.stdout.write(''.join(f'{i:06d}' + 'w' * 64 + '\\n' for i in range(20000)))\n"
        "sys.stdout.write('END\\x1b[3')\n"
        "sys.stdout.flush()\n"
        "time.sleep(0.5)\n"
        "sys.stdout.write('1mtail')\n"
        "sys.stdout.flush()\n"
        "time.sleep(30)\n"
    )
    expected = (
        "".join(f"{i:06d}" + "w" * 64 + "\r\n" for i in range(20000)) + "END\x1b[31mtail"
    ).encode()
    before = _threads()
    async with _followed(script) as (rt, viewer):
        await _until(lambda: rt.reads_by_thread)
        time.sleep(0.3)  # noqa: ASYNC251 - the loop is held up on purpose; the thread reads on
        assert rt._bulk_reader is not None
        assert rt._bulk_reader.pending > 0
        rt.pause_for_handover(5.0)
        assert not rt.reads_by_thread
        assert _threads_settle(before) == before
        assert len(viewer.data) > 0
        assert expected.startswith(viewer.data)
        assert rt.output_offset == len(viewer.data)
        rt.resume_reading()
        await _until(lambda: len(viewer.data) >= len(expected))
        assert bytes(viewer.data) == expected
        rt.settle_now()
        assert any(r.startswith("ENDtail") for r in rt.screen.peek_rows())


@needs_reader
async def test_a_trickle_after_a_burst_reaches_the_pane_when_the_thread_is_halted() -> None:
    # The burst starts a thread; the trickle after it keeps a few bytes in its buffer when the
    # hold ends, so it is halted holding bytes. Taking the last of them quiets its wake pipe:
    # the pump must go back to the master then, not wait for a wake-up that never comes
    # (found by the attack pass: the pane's output stopped until the child exited).
    script = (
        "import os, time\n"
        "os.write(1, b'B' * 65536)\n"
        "for i in range(600):\n"
        "    os.write(1, b'line %05d\\n' % i)\n"
        "    time.sleep(0.002)\n"
        "os.write(1, b'DONE-MARKER\\n')\n"
        "time.sleep(30)\n"
    )

    async def once() -> None:
        async with _followed(script) as (rt, viewer):
            await _until(lambda: rt.reads_by_thread)
            await asyncio.sleep(0.05)  # the burst is taken; the trickle goes on
            # the hold's timer comes while the trickle's bytes wait in the thread's buffer
            # (the loop held up): it halts the thread holding them
            time.sleep(0.05)  # noqa: ASYNC251 - on purpose
            reader = rt._bulk_reader
            assert reader is not None
            assert 0 < reader.pending < 2048
            rt._direct_until = 0.0
            rt._check_bulk()
            assert not reader.running
            assert rt.reads_by_thread  # its bytes are taken first
            await _until(lambda: b"DONE-MARKER" in viewer.data, within_s=15)
            numbers = [int(m) for m in re.findall(rb"line (\d{5})", bytes(viewer.data))]
            assert numbers == list(range(600))

    for _ in range(3):
        await once()


# ---------------------------------------------------------------- the exit's drain (attack pass)

# A scroll-heavy flood, a cursor query nobody answers, then a program status report and a
# marker, and the exit: the query's reply is deferred while the screen catches up.
_QUERY_THEN_EXIT = r"""
import os, time, tty
tty.setraw(0)
os.write(1, b"x\n" * 32000 + b"\x1b[6n")
time.sleep(0.05)
os.write(1, b"\x1b]7501;state=blocked:kind=permission:msg=Allow?\x1b\\FINAL-MARKER\r\n")
"""


@pytest.mark.parametrize("threads", ["thread", "loop"])
async def test_an_exit_while_a_cursor_report_is_deferred_comes_after_the_last_output(
    threads: str,
) -> None:
    if threads == "thread" and not reader_thread.available():
        pytest.skip("the reader thread module is not built")
    with _no_reader_threads(threads == "loop"):
        rt = _runtime([sys.executable, "-c", _QUERY_THEN_EXIT])
        at_exit: dict[str, object] = {}

        def hook(rt: PaneRuntime) -> None:
            rt.settle_now()
            at_exit["offset"] = rt.output_offset
            at_exit["final"] = any("FINAL-MARKER" in r for r in rt.screen.peek_rows())

        rt.on_exit_hooks.append(hook)
        try:
            await _until(lambda: bool(at_exit))
            await asyncio.sleep(0.5)
            rt.settle_now()
            # everything was read before the exit, and nothing came after it: the exited
            # pane is not turned back into one waiting for a permission
            assert at_exit == {"offset": rt.output_offset, "final": True}
            assert not rt.pane.live
            assert rt.pane.program_status is None or rt.pane.lifecycle != "blocked"
        finally:
            rt.close()
            rt.terminate(9)
            await rt.wait_exit(10)


async def test_a_fault_while_draining_at_exit_still_applies_the_exit() -> None:
    rt = _runtime([sys.executable, "-c", "import os, time\ntime.sleep(0.3)\nos.write(1, b'bye')\n"])
    rt._paused = True  # the last output is still in the PTY at the exit
    rt._stop_reading()

    def listener(data: bytes) -> None:
        raise RuntimeError("a listener's bug")

    rt.add_output_listener(listener)
    try:
        assert await rt.wait_exit(10)
        await asyncio.sleep(0.1)
        assert not rt.pane.live
    finally:
        rt.close()


_QUERY_AFTER_TUI = r"""
import os, time, tty
tty.setraw(0)
os.write(1, b"".join(
    b"\x1b[%d;1H\x1b[3%dmBEFORE %06d row %02d " % (y + 1, y % 8, f, y) + b"q" * 50 + b"\x1b[0m\x1b[K"
    for f in range(150) for y in range(24)) + b"\x1b[24;1H\r\n")
os.write(1, b"\x1b[6n" + b"".join(b"HELD %06d\r\n" % i for i in range(200)))
os.write(1, b"".join(b"AFTER %06d %s\r\n" % (i, b"w" * 50) for i in range(3000)))
time.sleep(30)
"""


@needs_reader
async def test_a_handover_puts_a_deferred_report_s_held_bytes_before_the_thread_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A colour TUI flood puts the screen behind, so the cursor query's reply is deferred and
    # the rest of its read is held; the thread reads on meanwhile. The handover's pause must
    # put the held bytes on the screen before the thread's (found by the attack pass).
    monkeypatch.setattr(term_replies, "_CURSOR_SYNC_BYTES", 0)  # any backlog defers it

    async def once() -> bool:
        """False when the screen had caught up at the query (not deferred: try again)."""
        rt = _runtime([sys.executable, "-c", _QUERY_AFTER_TUI])
        seen = bytearray()
        rt.add_output_listener(seen.extend)  # no viewer: the daemon answers the query
        try:
            deadline = time.monotonic() + 5
            while rt._reply_job is None or not rt._reply_job.deferred:
                if time.monotonic() > deadline:
                    return False
                await asyncio.sleep(0)  # one loop turn: the deferred part takes only a few
            assert rt.reads_by_thread
            time.sleep(0.2)  # noqa: ASYNC251 - the loop held up: the thread buffers what follows
            rt.pause_for_handover(2.0)
            rt.settle_now()
            reference = PyteScreen(80, 24)
            reference.feed(bytes(seen))
            while reference.pending:
                reference.drain(1 << 20)
            assert rt.screen.peek_rows() == reference.peek_rows()
            return True
        finally:
            rt.close()
            rt.terminate(9)
            await rt.wait_exit(10)

    for _ in range(4):
        if await once():
            return
    pytest.fail("the cursor report was never deferred in four tries")
