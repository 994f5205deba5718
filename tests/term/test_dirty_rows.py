"""Row-level dirty tracking: a cache refreshed only on reported rows always equals the screen.

The screen-rule sweep re-renders only the rows ``take_dirty_rows`` reports (issue #4, "render
only dirty lines"), so an under-report would leave rules reading stale text. A seeded fuzzer
feeds typical TUI output (spinner redraws, cursor moves, erases, wide characters, scroll
regions, the alternate buffer, wrapping) and checks the cache against a full render after
every chunk.
"""

from __future__ import annotations

import random

import pytest

from signaltty.term.screen import PyteScreen

COLS, ROWS = 30, 8

PIECES = [
    b"hello",
    b"\r",
    b"\n",
    b"\r\n",
    "\u2819 Working".encode(),
    "\u4e16\u754c".encode(),  # wide characters
    "e\u0301".encode(),  # combining mark
    b"\x1b[K",
    b"\x1b[1K",
    b"\x1b[2K",
    b"\x1b[J",
    b"\x1b[1J",
    b"\x1b[2J",
    b"\x1b[3;5H",
    b"\x1b[H",
    b"\x1b[8;1H",
    b"\x1b[2X",
    b"\x1b[3P",
    b"\x1b[2@",
    b"\x1b[4b",
    b"\x1b[2L",
    b"\x1b[M",
    b"\x1b[2S",
    b"\x1b[T",
    b"\x1b[2;6r",
    b"\x1b[r",
    b"\x1bD",
    b"\x1bM",
    b"\x1b[?1049h",
    b"\x1b[?1049l",
    b"\x1b[4h",
    b"\x1b[4l",
    b"\x1b[?7l",
    b"\x1b[?7h",
    b"x" * 45,  # wraps
    b"\x1b[31mred\x1b[0m",
    b"\x1b#8",
    b"\x1bc",
    b"\x08\x08",
    b"\t",
]


def _check(seed: int, steps: int = 400) -> None:
    rnd = random.Random(seed)
    screen = PyteScreen(COLS, ROWS)
    screen.take_dirty_rows()
    cache = screen.peek_rows()
    for step in range(steps):
        chunk = b"".join(rnd.choice(PIECES) for _ in range(rnd.randint(1, 4)))
        screen.feed(chunk)
        screen.drain()
        if rnd.random() < 0.02:
            screen.resize(rnd.randint(10, 40), rnd.randint(3, 12))
        rows = screen.take_dirty_rows()
        if rows is None or len(cache) != screen.size[1]:
            cache = screen.peek_rows()
        else:
            for y in rows:
                cache[y] = screen.peek_rows([y])[0]
        assert cache == screen.peek_rows(), f"seed {seed} step {step}: stale rows after {chunk!r}"


@pytest.mark.parametrize("seed", range(25))
def test_cache_of_dirty_rows_matches_screen(seed: int) -> None:
    _check(seed)


def test_spinner_redraw_dirties_one_row() -> None:
    screen = PyteScreen(40, 10)
    screen.feed(b"line one\r\nline two\r\n")
    screen.drain()
    screen.take_dirty_rows()
    for frame in "\u280b\u2819\u2839":
        screen.feed(f"\r{frame} Working (3s)\x1b[K".encode())
        screen.drain()
        assert screen.take_dirty_rows() == {2}
    assert screen.take_dirty_rows() == set()


def test_pending_bytes_are_not_applied_by_a_peek() -> None:
    screen = PyteScreen(40, 10)
    screen.feed(b"queued")
    assert screen.peek_rows([0]) == [""]
    assert screen.pending == 6
