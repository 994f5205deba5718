"""Small reads held back and processed together (signaltty/server/held_output.py, issue 12).

A held read must never delay an answer: every read the OSC scanner would report a query in,
and every read that ends inside an escape sequence, goes through the pump at once. The scanner
itself is the oracle here. The pane-level behaviour (nothing lost, nothing reordered, viewers
and waits see what they saw before) is what the rest of tests/server checks with real daemons.
"""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from signaltty.server.held_output import HeldOutput, needs_pump_now
from signaltty.term import osc

_PIECES = [
    b"\x1b[c", b"\x1b[0c", b"\x1b[5n", b"\x1b[6n", b"\x1b]10;?\x07", b"\x1b]11;?\x1b\\",
    b"\x1b]7501;?\x07", b"\x1b[38;5;2m", b"\x1b[?2026h", b"\x1b[12;5H", b"\x1b[K", b"\x1b",
    b"\x1b[", b"\x1b[6", b"\x1b]", b"\x1bP", b"text ", b"\r\n", b"\x07", "✻ Doing…".encode(),
    b"\r", b"\x18", b"\x1a", b"\x80", b"6", b"n", b"c", b"[", b";", b"?", b"\x1b(",
    b"\x1b]0;title\x07", b"\x1b]2;x\x1b\\", b"\x1b]104\x07", b"\x1b]1", b"0;?", b"\x1b\\",
    b"\x1b]9;4;1;50\x07", b"\x1b]777;notify;a;b\x07", b"\x1b]7", b"501;?", b"\x07",
]  # fmt: skip


@settings(max_examples=5000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12), st.integers(0, 40))
def test_a_read_with_a_query_or_a_cut_sequence_is_never_held(pieces: list[bytes], cut: int) -> None:
    data = b"".join(pieces)
    data = data[: len(data) - min(cut, len(data))] if cut % 3 == 0 else data
    items = osc.OscScanner().feed(data)
    scanner = osc.OscScanner()
    scanner.feed(data)
    if any(isinstance(item, osc.Query) for item in items):
        assert needs_pump_now(data), data
    if not scanner.at_ground:
        assert needs_pump_now(data), data


def test_plain_frames_and_titles_may_be_held() -> None:
    frame = b"\x1b[?2026h\x1b[10;1H\x1b[2m\xe2\x9c\xbb Doing\x1b[0m\x1b[K\x1b[14;3H\x1b[?2026l"
    assert not needs_pump_now(frame)
    assert not needs_pump_now(b"plain text\r\n")
    assert not needs_pump_now(b"\x1b]0;\xe2\xa0\x8b codex\x07" + frame)
    assert needs_pump_now(b"\x1b]0;half a tit")


def test_one_timer_flushes_every_holder_once() -> None:
    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        batch = HeldOutput(loop, hold_s=0.01)
        flushed: list[str] = []

        class Pane:
            def __init__(self, name: str) -> None:
                self.name = name

            def flush_held(self) -> None:
                flushed.append(self.name)

        a, b, c = Pane("a"), Pane("b"), Pane("c")
        batch.add(a)
        batch.add(b)
        batch.add(a)
        batch.add(c)
        batch.discard(c)  # flushed on its own meanwhile
        await asyncio.sleep(0.05)
        batch.add(c)
        await asyncio.sleep(0.05)
        return flushed

    assert asyncio.run(scenario()) == ["a", "b", "c"]
