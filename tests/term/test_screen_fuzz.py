"""Seeded fuzzing of the hardened pyte screen (Spec: agents.md §7.6; style guide "Fuzz invariant").

Random terminal output (text of every width, controls, CSI with random private markers,
intermediates, colon sub-parameters and huge numbers, OSC, DCS/SOS/PM/APC, charset
designations, DECALN, mode changes, invalid UTF-8) is fed to ``PyteScreen`` and must:

* never raise and never reach the fault counter (each fault class the fuzzer found in pyte
  0.8.2 is fixed in ``HardenedScreen``/``TolerantStream`` and has a named regression test in
  test_screen.py);
* give the same screen for any chunking and drain slicing as for one big feed;
* keep the model inside its bounds (rows, columns, cursor, history);
* survive resizes at random points and round-trip through ``snapshot_bytes``.

Iteration counts are bounded so this file runs in well under 20 s.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from signaltty.term.screen import PyteScreen

_PRINTABLE = [chr(c) for c in range(0x20, 0x7F)]
_EXOTIC = list("中文字한글😀❤➜─│╭é∂ß") + [
    "\u0301",  # combining acute
    "\u0308",  # combining diaeresis
    "\u200d",  # zero width joiner
    "\ufe0f",  # variation selector 16
    "\u200b",  # zero width space
    "\u00ad",  # soft hyphen
    "\u1161",  # Hangul jungseong (width 0, not combining)
    "\ufffd",
]
_CONTROLS = [
    "\r",
    "\n",
    "\t",
    "\b",
    "\x07",
    "\x0b",
    "\x0c",
    "\x0e",
    "\x0f",
    "\x00",
    "\x7f",
    "\x01",
    "\x18",
    "\x1a",
    "\x85",
    "\x9b",
    "\x9c",
    "\x9d",
    "\x90",
    "\x1b\x1b",
]
_CSI_FINALS = [chr(c) for c in range(0x40, 0x7F)]
_ESC_TAILS = [
    "(0",
    "(B",
    ")0",
    ")B",
    "*0",
    "%G",
    "%@",
    "#8",
    "#3",
    "7",
    "8",
    "c",
    "D",
    "E",
    "H",
    "M",
    "=",
    ">",
    "Z",
    "\\",
    " F",
    "(",
    "#",
]
_MODES = [1, 3, 4, 5, 6, 7, 12, 20, 25, 47, 66, 1000, 1004, 1006, 1047, 1049, 2004, 2026]


class _Gen:
    """Builds one adversarial byte stream from a seeded ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def number(self) -> str:
        r = self.rng.random()
        if r < 0.45:
            return str(self.rng.randint(0, 12))
        if r < 0.75:
            return str(self.rng.randint(0, 300))
        if r < 0.93:
            return str(self.rng.randint(0, 10**10))
        if r < 0.97:
            return ""
        return "9" * self.rng.randint(20, 600)

    def params(self, count: int | None = None) -> str:
        rng = self.rng
        count = rng.randint(0, 6) if count is None else count
        seps = [";", ";", ";", ":"]
        out = ""
        for i in range(count):
            if i:
                out += rng.choice(seps)
            out += self.number()
        return out

    def csi(self) -> str:
        rng = self.rng
        marker = rng.choice(["", "", "", "", "?", "?", ">", "<", "=", "!"])
        inter = rng.choice(["", "", "", "", "", " ", "$", "!", '"', "'", "  "])
        return "\x1b[" + marker + self.params() + inter + rng.choice(_CSI_FINALS)

    def near_limits(self) -> str:
        """Sequences right at the parser's caps (256 parameter characters, 8192 OSC
        characters), where the regex fast path and the state machine must agree."""
        rng = self.rng
        kind = rng.random()
        if kind < 0.4:
            body = "1;" * rng.randint(124, 132) + "7"
            return f"\x1b[{body}{rng.choice('mCHJ')}x"
        if kind < 0.8:
            return "\x1b[" + "0" * rng.randint(250, 260) + f"5{rng.choice('CDG@b')}x"
        title = "t" * rng.randint(8188, 8194)
        return "\x1b]2;" + title + rng.choice(["\x07", "\x1b\\"])

    def sgr(self) -> str:
        rng = self.rng
        kind = rng.random()
        if kind < 0.3:
            body = ";".join(
                str(rng.choice([0, 1, 3, 4, 5, 7, 9, 22, 23, 24, 27, 29, 39, 49]))
                for _ in range(rng.randint(0, 4))
            )
        elif kind < 0.5:
            body = f"{rng.choice([30, 37, 41, 47, 90, 97, 100, 105, 107])}"
        elif kind < 0.7:
            body = f"{rng.choice([38, 48])};5;{rng.randint(0, 300)}"
        elif kind < 0.85:
            body = f"{rng.choice([38, 48])};2;{rng.randint(0, 300)};{rng.randint(0, 255)};{rng.randint(0, 255)}"
        else:
            body = rng.choice(
                ["38:2::255:0:0", "48:5:17", "4:3", "4:0", "38:2:1:2:3", "58:2::1:2:3", "1:2"]
            )
        return f"\x1b[{body}m"

    def mode(self) -> str:
        rng = self.rng
        modes = ";".join(str(rng.choice(_MODES)) for _ in range(rng.randint(1, 3)))
        return f"\x1b[{rng.choice(['?', '?', ''])}{modes}{rng.choice('hl')}"

    def structural(self) -> str:
        rng = self.rng

        def n() -> int:
            return rng.choice([0, 1, 2, 3, 5, 40, 9999, 99999999])

        return rng.choice(
            [
                f"\x1b[{n()};{n()}H",
                f"\x1b[{n()}J",
                f"\x1b[{n()}K",
                f"\x1b[{n()}@",
                f"\x1b[{n()}P",
                f"\x1b[{n()}L",
                f"\x1b[{n()}M",
                f"\x1b[{n()}S",
                f"\x1b[{n()}T",
                f"\x1b[{n()}X",
                f"\x1b[{n()}b",
                f"\x1b[{n()};{n()}r",
                "\x1b[r",
                f"\x1b[{n()}d",
                f"\x1b[{n()}G",
                f"\x1b[{n()}A",
                f"\x1b[{n()}B",
                f"\x1b[{n()}C",
                f"\x1b[{n()}D",
                f"\x1b[{n()}E",
                f"\x1b[{n()}F",
                f"\x1b[{n()}g",
                "\x1b[s",
                "\x1b[u",
                "\x1b[!p",
                "\x1b[3J",
            ]
        )

    def text(self) -> str:
        rng = self.rng
        pool = _PRINTABLE if rng.random() < 0.6 else _PRINTABLE + _EXOTIC * 3
        return "".join(rng.choice(pool) for _ in range(rng.randint(1, 40)))

    def string_seq(self) -> str:
        rng = self.rng
        intro = rng.choice(["\x1b]", "\x1b]", "\x1bP", "\x1b_", "\x1b^", "\x1bX"])
        code = rng.choice(["0;", "2;", "1;", "8;;", "133;A", "7501;", "R", "P", "", "10;?"])
        body = "".join(
            rng.choice(_PRINTABLE + _EXOTIC + ["\x1b", "\n", "\x07"])
            for _ in range(rng.randint(0, 30))
        )
        end = rng.choice(["\x07", "\x1b\\", "", "\x18", "\x1b[1m"])
        return intro + code + body + end

    def piece(self) -> bytes:
        rng = self.rng
        r = rng.random()
        if r < 0.28:
            s = self.text()
        elif r < 0.40:
            s = rng.choice(_CONTROLS) * rng.randint(1, 3)
        elif r < 0.52:
            s = self.csi()
        elif r < 0.62:
            s = self.sgr()
        elif r < 0.70:
            s = self.mode()
        elif r < 0.82:
            s = self.structural()
        elif r < 0.88:
            s = self.string_seq()
        elif r < 0.93:
            s = "\x1b" + rng.choice(_ESC_TAILS)
        elif r < 0.94:
            s = self.near_limits()
        else:
            # Raw bytes: invalid UTF-8, C1 bytes, truncated sequences.
            return bytes(
                rng.randint(0x80, 0xFF) if rng.random() < 0.7 else rng.randint(0, 0x7F)
                for _ in range(rng.randint(1, 6))
            )
        return s.encode("utf-8")

    def stream(self, pieces: int) -> bytes:
        return b"".join(self.piece() for _ in range(pieces))


def _state(screen: PyteScreen) -> dict[str, Any]:
    model = screen.model
    cols, rows = screen.size
    return {
        "lines": screen.lines(),
        "cells": [[model.cell(y, x) for x in range(cols)] for y in range(rows)],
        "cursor": (model.cursor.y, model.cursor.x, model.cursor.attrs, model.cursor.hidden),
        "alt": model.alt_active,
        "history": list(model.history),
        "mode": set(model.mode),
        "margins": model.margins,
        "title": model.title,
        "charsets": (model.charset, model.g0_charset, model.g1_charset),
        "tabs": set(model.tabstops),
    }


def _check_bounds(screen: PyteScreen) -> None:
    model = screen.model
    cols, rows = screen.size
    lines = screen.lines()
    assert len(lines) == rows
    for grid in {id(model.buffer): model.buffer, id(model.main_grid): model.main_grid}.values():
        assert all(0 <= y < rows for y in grid), sorted(grid)
        for cells in grid.values():
            assert all(0 <= x < cols for x in cells), sorted(cells)
            for cell in cells.values():
                assert len(cell.data) <= 8
    assert 0 <= model.cursor.y < rows
    assert 0 <= model.cursor.x <= cols
    row, col = screen.cursor
    assert 0 <= row < rows
    assert 0 <= col < cols
    assert model.history.maxlen is not None
    assert len(model.history) <= model.history.maxlen
    assert all(stop < cols for stop in model.tabstops)
    if model.margins is not None:
        assert 0 <= model.margins.top < model.margins.bottom < rows
    assert len(model.title) <= 8192


def _feed_sliced(screen: PyteScreen, data: bytes, rng: random.Random) -> None:
    pos = 0
    while pos < len(data):
        size = rng.choice([1, 2, 3, 5, 7, 16, 64, 333, 4096])
        screen.feed(data[pos : pos + size])
        pos += size
        if rng.random() < 0.5:
            screen.drain(rng.choice([1, 2, 3, 17, 100, 16384]))


@pytest.mark.parametrize("seed", range(24))
def test_fuzz_never_faults_and_chunking_is_invisible(seed: int) -> None:
    """Any chunking and slicing of the same bytes gives the same screen, with no fault."""
    rng = random.Random(seed)
    gen = _Gen(rng)
    for _ in range(6):
        cols, rows = rng.randint(1, 50), rng.randint(1, 14)
        data = gen.stream(rng.randint(20, 160))
        whole = PyteScreen(cols, rows, history_lines=50)
        whole.feed(data)
        expected = _state(whole)
        sliced = PyteScreen(cols, rows, history_lines=50)
        _feed_sliced(sliced, data, rng)
        assert _state(sliced) == expected, data
        assert whole.faults == 0, (whole.fault_classes, data)
        assert sliced.faults == 0, (sliced.fault_classes, data)
        _check_bounds(whole)


@pytest.mark.parametrize("seed", range(24, 40))
def test_fuzz_byte_by_byte_matches_whole_feed(seed: int) -> None:
    """One byte per drain forces the character-level state machine everywhere."""
    rng = random.Random(seed)
    data = _Gen(rng).stream(120)
    cols, rows = rng.randint(2, 40), rng.randint(2, 10)
    whole = PyteScreen(cols, rows)
    whole.feed(data)
    single = PyteScreen(cols, rows)
    single.feed(data)
    while single.pending:
        single.drain(1)
    assert _state(single) == _state(whole), data
    assert single.faults == 0
    assert whole.faults == 0


@pytest.mark.parametrize("seed", range(40, 56))
def test_fuzz_resizes_reads_and_snapshots_keep_invariants(seed: int) -> None:
    """Resizes between feeds, reads and snapshots never raise and keep the model in bounds;
    every snapshot, fed to a fresh screen of the same size, reproduces the cells and cursor."""
    rng = random.Random(seed)
    gen = _Gen(rng)
    screen = PyteScreen(rng.randint(1, 60), rng.randint(1, 16), history_lines=30)
    for _ in range(25):
        screen.feed(gen.stream(rng.randint(5, 40)))
        action = rng.random()
        if action < 0.3:
            screen.resize(rng.randint(1, 60), rng.randint(1, 16))
        elif action < 0.5:
            screen.tail(rng.randint(0, 50))
            screen.screen_text()
        screen.take_dirty()
        _check_bounds(screen)
        cols, rows = screen.size
        copy = PyteScreen(cols, rows)
        copy.feed(screen.snapshot_bytes())
        a, b = screen.model, copy.model
        assert [[a.cell(y, x) for x in range(cols)] for y in range(rows)] == [
            [b.cell(y, x) for x in range(cols)] for y in range(rows)
        ]
        expected_row = a.cursor.y
        if a.margins is not None and a.mode & {6 << 5}:
            # Origin mode with the cursor outside the region (only DECRC can put it there):
            # no sequence can place it there again, so the snapshot clamps it into the region.
            expected_row = min(max(expected_row, a.margins.top), a.margins.bottom)
        assert (expected_row, a.cursor.x, a.cursor.hidden, a.cursor.attrs) == (
            b.cursor.y,
            b.cursor.x,
            b.cursor.hidden,
            b.cursor.attrs,
        )
        assert copy.alt_screen == screen.alt_screen
        assert copy.faults == 0
    assert screen.faults == 0, screen.fault_classes
