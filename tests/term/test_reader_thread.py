"""The native PTY reader thread (signaltty/term/_reader.c, term/reader_thread.py; issue 12):
real PTYs, real writer processes, the thread's buffer bound, its end and its removal."""

from __future__ import annotations

import contextlib
import errno
import os
import pty
import random
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from signaltty.term import reader_thread

if TYPE_CHECKING:
    from signaltty.term._reader import Reader

needs_reader = pytest.mark.skipif(
    not reader_thread.available(), reason="the reader thread module is not built"
)


@pytest.fixture(autouse=True)
def _enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The threads are on by default, unless ``SIGNALTTY_READER_THREADS=0`` is set for the test
    run; these tests use them whatever the environment says."""
    monkeypatch.setattr(reader_thread, "ENABLED", True)


def test_the_module_is_built_unless_switched_off() -> None:
    # tests/run.sh installs a compiler and builds it in place; only an explicit switch may
    # leave it out
    if os.environ.get("SIGNALTTY_PURE_PYTHON"):
        pytest.skip("switched off by the environment")
    assert reader_thread.available()


def test_on_unless_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_thread, "ENABLED", False)
    with _pty() as (master, _slave):
        assert reader_thread.open_reader(master) is None
    script = "from signaltty.term import reader_thread as r; print(r.ENABLED)"
    for value, expected in (("1", "True"), ("0", "False"), ("", "True"), (None, "True")):
        env = {k: v for k, v in os.environ.items() if k != "SIGNALTTY_READER_THREADS"}
        if value is not None:
            env["SIGNALTTY_READER_THREADS"] = value
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == expected


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def reader_threads() -> int:
    """This process's reader threads (named by _reader.c), other threads not counted."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/comm") as f:
            count += f.read().strip() == "signaltty-read"
    return count


def reader_threads_settle(expected: int, within_s: float = 5.0) -> int:
    """``reader_threads()`` once it equals ``expected`` (or when ``within_s`` ran out): a
    joined thread's ``/proc/self/task`` entry goes a moment after ``pthread_join`` returns
    (the kernel wakes the joiner before it releases the task), which a loaded machine shows."""
    deadline = time.monotonic() + within_s
    count = reader_threads()
    while count != expected and time.monotonic() < deadline:
        time.sleep(0.005)
        count = reader_threads()
    return count


@contextlib.contextmanager
def _pty() -> Iterator[tuple[int, int]]:
    master, slave = pty.openpty()
    os.set_blocking(master, False)
    try:
        yield master, slave
    finally:
        for fd in (master, slave):
            with contextlib.suppress(OSError):
                os.close(fd)


def _raw(slave: int) -> None:
    """No echo, no output processing: the bytes written come out of the master as they are."""
    import termios
    import tty

    tty.setraw(slave, termios.TCSANOW)


def _take_all(reader: Reader, rng: random.Random, within_s: float) -> bytes:
    """Take until the thread ended and its buffer is empty, in random limits."""
    got = bytearray()
    deadline = time.monotonic() + within_s
    while True:
        assert time.monotonic() < deadline, "timed out"
        ready, _, _ = select.select([reader.wake_fd], [], [], 1.0)
        chunk = reader.take(rng.choice([1, 7, 4096, 65536, 1 << 20]))
        got += chunk
        if ready and not chunk and not reader.running:
            return bytes(got)


@needs_reader
def test_every_byte_a_child_prints_arrives_once_and_in_order_then_the_end() -> None:
    rng = random.Random(17)
    payload = bytes(rng.getrandbits(8) for _ in range(3_000_000))
    with _pty() as (master, slave):
        _raw(slave)
        writer = subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"],
            stdin=subprocess.PIPE,
            stdout=slave,
        )
        os.close(slave)  # the child holds the only terminal side: its exit is the end (EIO)
        reader = reader_thread.open_reader(master)
        assert reader is not None
        try:
            feeder = threading.Thread(target=writer.communicate, args=(payload,))
            feeder.start()
            got = _take_all(reader, rng, within_s=60)
            feeder.join()
            assert got == payload
            assert reader.end == errno.EIO
            assert not reader.running
            assert reader.pending == 0
            # the end stays visible on the wake descriptor until the reader is closed
            assert select.select([reader.wake_fd], [], [], 0)[0]
        finally:
            reader.close()
            writer.wait(10)


@needs_reader
def test_the_buffer_is_bounded_and_the_writer_waits_on_the_pty() -> None:
    with _pty() as (master, slave):
        _raw(slave)
        os.set_blocking(slave, False)
        reader = reader_thread.open_reader(master)
        assert reader is not None
        try:
            written = 0
            stalled_since = None
            block = b"x" * 65536
            # write until the terminal side refuses more for a while: the thread's buffer and
            # the kernel's are full
            while stalled_since is None or time.monotonic() - stalled_since < 0.5:
                try:
                    written += os.write(slave, block)
                    stalled_since = None
                except BlockingIOError:
                    stalled_since = stalled_since or time.monotonic()
                    time.sleep(0.01)
                assert written < 64 * reader_thread.BUFFER_BYTES, "the buffer is not bounded"
            assert reader.pending == reader_thread.BUFFER_BYTES
            assert reader.running
            # taking frees room: the thread reads on
            assert len(reader.take(reader_thread.BUFFER_BYTES)) == reader_thread.BUFFER_BYTES
            deadline = time.monotonic() + 5
            while reader.pending == 0:
                assert time.monotonic() < deadline, "the thread did not read on"
                time.sleep(0.01)
        finally:
            reader.close()


@needs_reader
def test_halt_keeps_what_was_read_and_close_drops_it_and_ends_the_thread() -> None:
    with _pty() as (master, slave):
        _raw(slave)
        before = reader_threads()
        reader = reader_thread.open_reader(master)
        assert reader is not None
        assert reader_threads() == before + 1
        os.write(slave, b"abc" * 1000)
        deadline = time.monotonic() + 5
        while reader.pending < 3000:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        reader.halt()
        reader.halt()
        assert reader_threads_settle(before) == before
        assert not reader.running
        assert reader.end == 0
        os.write(slave, b"after")  # not the thread's any more: stays in the PTY
        assert reader.take(10) == b"abcabcabca"
        assert reader.take(1 << 20) == b"bc" + b"abc" * 996
        assert not select.select([reader.wake_fd], [], [], 0)[0]  # halted, empty: quiet
        assert os.read(master, 100) == b"after"
        reader.close()
        reader.close()
        assert reader.closed
        assert reader.wake_fd == -1
        assert reader.take(10) == b""
        os.write(slave, b"y" * 100)
        with _pty():  # a new descriptor may take any number: nothing polls the old one
            pass
        assert os.read(master, 1000) == b"y" * 100


@needs_reader
def test_a_dropped_reader_takes_its_thread_with_it_and_the_count_is_bounded() -> None:
    with _pty() as (master, _slave):
        before = reader_threads()
        readers = [reader_thread.open_reader(master) for _ in range(reader_thread.MAX_THREADS)]
        assert all(r is not None for r in readers)
        assert reader_thread.open_reader(master) is None  # the bound
        assert reader_threads() == before + reader_thread.MAX_THREADS
        readers.pop().close()  # type: ignore[union-attr]
        spare = reader_thread.open_reader(master)
        assert spare is not None
        del spare, readers  # not closed: freed, and the thread with them
        assert reader_threads_settle(before) == before
        assert reader_thread.open_reader(master) is not None  # the bound counts live ones


@needs_reader
def test_bad_arguments_are_refused() -> None:
    from signaltty.term._reader import Reader

    with pytest.raises(ValueError, match="open descriptor"):
        Reader(-1, reader_thread.BUFFER_BYTES)
    with _pty() as (master, _slave):
        with pytest.raises(ValueError, match="capacity"):
            Reader(master, 1024)
        with pytest.raises(TypeError):
            Reader("3", reader_thread.BUFFER_BYTES)
        reader = Reader(master, reader_thread.BUFFER_BYTES)
        try:
            with pytest.raises(ValueError, match="limit"):
                reader.take(-1)
            with pytest.raises(TypeError):
                reader.take("1")
            with pytest.raises(RuntimeError):
                reader.__init__(master, reader_thread.BUFFER_BYTES)  # type: ignore[misc]
        finally:
            reader.close()
        unstarted = Reader.__new__(Reader)
        assert unstarted.take(5) == b""
        assert not unstarted.running
        unstarted.close()


@needs_reader
def test_a_descriptor_that_is_not_open_ends_the_thread_with_its_error() -> None:
    with _pty():
        # a number nobody holds, above those the reader's own pipes may take
        spare = next(fd for fd in range(4000, 4100) if not _is_open(fd))
        reader = reader_thread.open_reader(spare)
        assert reader is not None
        try:
            deadline = time.monotonic() + 5
            while reader.running:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            assert reader.end == errno.EBADF
            assert select.select([reader.wake_fd], [], [], 0)[0]
        finally:
            reader.close()


@needs_reader
def test_halt_and_close_from_several_threads_at_once_are_safe() -> None:
    # One owner is the design, but a misuse must not free the buffer under a running thread
    # (found by the attack pass: close() during another thread's halt() freed it mid-read).
    with _pty() as (master, slave):
        _raw(slave)
        os.set_blocking(slave, False)
        stop = threading.Event()

        def flood() -> None:
            while not stop.is_set():
                with contextlib.suppress(BlockingIOError):
                    os.write(slave, b"x" * 4096)

        writer = threading.Thread(target=flood)
        writer.start()
        try:
            for _ in range(200):
                reader = reader_thread.open_reader(master)
                assert reader is not None
                reader.take(1 << 16)
                barrier = threading.Barrier(3)
                left: list[int] = []

                def halt(r: Reader = reader, b: threading.Barrier = barrier) -> None:
                    b.wait()
                    r.halt()

                def close(
                    r: Reader = reader,
                    b: threading.Barrier = barrier,
                    out: list[int] = left,
                ) -> None:
                    b.wait()
                    r.close()  # returns only once the thread is joined
                    out.append(reader_threads())

                workers = [threading.Thread(target=f) for f in (halt, close, close)]
                for w in workers:
                    w.start()
                for w in workers:
                    w.join()
                assert reader.closed
                assert reader.take(10) == b""
                assert len(left) == 2  # both close() calls returned
                assert max(left) <= 1  # the one thread there was, at most on its way out
                assert reader_threads_settle(0) == 0
                del reader
        finally:
            stop.set()
            writer.join()


@needs_reader
def test_a_blocking_master_is_made_non_blocking_so_a_halt_is_not_stuck_in_a_read() -> None:
    from signaltty.term._reader import Reader

    with _pty() as (master, _slave):
        os.set_blocking(master, True)
        reader = Reader(master, reader_thread.BUFFER_BYTES)
        try:
            assert not os.get_blocking(master)
            time.sleep(0.05)  # the thread is waiting: nothing was written
            done = threading.Event()
            halter = threading.Thread(target=lambda: (reader.halt(), done.set()))
            halter.start()
            assert done.wait(5), "halt() is stuck behind a read of a quiet master"
            halter.join()
            assert not reader.running
        finally:
            reader.close()
