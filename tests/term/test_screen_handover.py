"""A screen handed across a restart (term/screen/handover.py, issue 15 item 1).

The state goes through JSON and into a new screen; from then on both screens get the same
bytes and must agree on everything a reader can observe (the differential test's
``observe``), and both must agree with a reference screen that never was handed over.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from signaltty.term.screen import PyteScreen
from signaltty.term.screen.handover import export_state, import_state
from tests.term.test_screen_differential import (
    CAPTURES,
    STREAMS,
    Genes,
    RepaintGenes,
    diff,
    observe,
)


def _hand_over(screen: PyteScreen, data: bytes, at: int, hist: int) -> tuple[PyteScreen, int]:
    """Feed ``data[:at]``, then on byte by byte until the parser rests (as the daemon reads
    on before it hands over); return the new screen and where the bytes stopped."""
    screen.feed(data[:at])
    state = export_state(screen)
    while state is None:
        assert at < len(data), "the parser never rested"
        screen.feed(data[at : at + 1])
        at += 1
        state = export_state(screen)
    return import_state(json.loads(json.dumps(state)), history_lines=hist), at


def _check(data: bytes, cols: int, rows: int, hist: int, cut: int, window: int = 4096) -> None:
    old = PyteScreen(cols, rows, history_lines=hist, window=window)
    ref = PyteScreen(cols, rows, history_lines=hist, fast_forward=False)
    ref.feed(data)
    # an unfinished sequence at the very end never rests: hand over before it
    data += b"\x1b\\x"
    new, at = _hand_over(old, data, cut, hist)
    old.feed(data[at:])
    new.feed(data[at:])
    ref.feed(b"\x1b\\x")
    a, b, r = observe(old), observe(new), observe(ref)
    for obs in (a, b, r):
        del obs["faults"]
    assert not diff(a, b), (diff(a, b), data, cut)
    assert not diff(b, r), (diff(b, r), data, cut)


@pytest.mark.parametrize("kind", sorted(STREAMS))
def test_stream_classes_survive_a_handover(kind: str) -> None:
    rng = random.Random(kind)
    data = STREAMS[kind](rng, 40, 10).encode()
    for cut in (0, 1, len(data) // 3, len(data) // 2, len(data) - 1):
        _check(data, 40, 10, 200, cut)


@pytest.mark.parametrize("path", CAPTURES[:12], ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_real_captures_survive_a_handover(path: Path) -> None:
    data = path.read_bytes()
    for cut in (len(data) // 4, len(data) // 2, len(data) * 3 // 4):
        _check(data, 120, 40, 500, cut)


@settings(
    max_examples=3_000,
    deadline=None,
    database=None,
    phases=(Phase.generate, Phase.shrink),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.binary(min_size=0, max_size=400), st.booleans())
def test_generated_streams_survive_a_handover(genome: bytes, repaint: bool) -> None:
    if repaint:
        rg = RepaintGenes(genome)
        cols, rows = 3 + rg.next() % 14, 2 + rg.next() % 5
        hist = rg.pick((0, 3, 8))
        data = rg.repaint_stream(cols, rows)
        cut = rg.next() * len(data) // 256
    else:
        g = Genes(genome)
        cols, rows = 3 + g.next() % 10, 1 + g.next() % 6
        hist = g.pick((0, 1, 3, 8))
        data = g.stream()
        cut = g.next() * len(data) // 256
    _check(data, cols, rows, hist, cut, window=64)


def test_mid_sequence_is_not_exported() -> None:
    screen = PyteScreen(20, 5)
    screen.feed(b"ab\x1b[3")
    assert export_state(screen) is None
    screen.feed(b"1m")
    assert export_state(screen) is not None
    screen.feed("é".encode()[:1])
    assert export_state(screen) is None


def _valid_state() -> dict[str, object]:
    screen = PyteScreen(30, 6, history_lines=50)
    screen.feed(
        "\x1b]2;t\x07l1\r\nl2\x1b[31;1mred\x1b7\x1b[2;5r\x1b(0q\x1b(B\x1b[?1049h\x1b[44malt 中".encode()
    )
    state = export_state(screen)
    assert state is not None
    return state


def test_bad_states_raise_value_error_only() -> None:
    """Every field of a corrupt state is refused with ValueError (the daemon then falls back
    to the saved tail), never another exception and never a screen out of bounds."""
    good = _valid_state()
    import_state(json.loads(json.dumps(good)), history_lines=50)
    rng = random.Random(15)
    bad_values: list[object] = [None, -1, 10**9, "x" * 300, [], {}, [1, 2], True, 1.5, "B"]

    def paths(obj: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        out = [prefix]
        if isinstance(obj, dict):
            for k, v in obj.items():
                out += paths(v, (*prefix, k))
        elif isinstance(obj, list):
            for i, v in enumerate(obj[:4]):
                out += paths(v, (*prefix, i))
        return out

    every = [p for p in paths(good) if p]
    refused = 0
    for _ in range(1500):
        state = json.loads(json.dumps(good))
        where = rng.choice(every)
        node = state
        for key in where[:-1]:
            node = node[key]  # type: ignore[index]
        node[where[-1]] = rng.choice(bad_values)  # type: ignore[index]
        try:
            screen = import_state(state, history_lines=50)
        except ValueError:
            refused += 1
            continue
        cols, rows = screen.size
        assert 1 <= cols <= 500
        assert 1 <= rows <= 200
        screen.feed(b"more\r\n\x1b[2J\x1b[?1049l")
        assert len(screen.lines()) == rows
    assert refused > 500
    for junk in (None, [], "x", {"format": 2}, {"format": 1}):
        with pytest.raises(ValueError, match="format|object|columns"):
            import_state(junk)
