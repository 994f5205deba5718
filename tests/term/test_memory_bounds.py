"""Memory the screen model may hold for hostile output (issue 12, "Bad input": the daemon
never holds more than its caps; found by the session 11 attack pass)."""

from __future__ import annotations

import tracemalloc

from signaltty.term.screen import PyteScreen, TolerantStream
from signaltty.term.screen.parser import _MEMO_PARAMS_MAX


def _same(fast: PyteScreen, slow: PyteScreen) -> None:
    assert fast.lines() == slow.lines()
    assert fast.cursor == slow.cursor


def test_a_flood_of_display_erases_holds_a_bounded_plan_and_draws_exactly():
    # every CSI J records a span per row in the repaint plan: 6 000 of them at 80 rows were
    # ~480 000 spans at once; the plan now ends a segment at 16 384
    data = b"\x1b[?1049h" + b"".join(
        b"\x1b[%d;%dHx\x1b[J" % (i % 80 + 1, i % 100 + 1) for i in range(6000)
    )
    tracemalloc.start()
    try:
        fast = PyteScreen(100, 80)
        fast.feed(data)
        fast.drain()
        fast.lines()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20  # 1.6 MB here; 22 MB before the bound
    slow = PyteScreen(100, 80, fast_forward=False)
    slow.feed(data)
    slow.drain()
    _same(fast, slow)


def test_long_parameter_strings_are_not_remembered():
    model = PyteScreen(80, 24)
    stream = TolerantStream(model.model)
    long_moves = b"".join(b"\x1b[" + b"%d" % (i % 20 + 1) + b";" * 200 + b"H" for i in range(500))
    short_moves = b"".join(b"\x1b[%d;%dH" % (i % 24 + 1, i % 80 + 1) for i in range(500))
    stream.feed(long_moves + short_moves + b"end")
    memo = stream._values_memo
    assert memo
    assert all(len(params) <= _MEMO_PARAMS_MAX for params in memo)
    assert model.model.cursor.x == 19 + 3  # "end" after the last move (row 20, column 20)
