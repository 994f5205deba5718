"""The process-wide glyph table: bounded by its glyphs, and shared by every screen (issue 12,
"RSS per pane": a table cycling through more attribute sets than it kept gave every screen its
own copy of equal glyphs, 176 KB a pane under bench/panes.py's mixed output)."""

from __future__ import annotations

import random

from signaltty.term.screen import HardenedScreen, TolerantStream, state


def _sgr_heavy(seed: int, sets: int, chars: str) -> bytes:
    """``sets`` distinct 256-colour foreground/background pairs, each drawing ``chars``."""
    rng = random.Random(seed)
    pairs = rng.sample([(f, b) for f in range(256) for b in range(256)], sets)
    out = [f"\x1b[38;5;{f};48;5;{b}m{chars}\x1b[0m\r\n" for f, b in pairs]
    return "".join(out).encode()


def _cells(screen: HardenedScreen) -> list[object]:
    return [cell for row in screen.buffer.values() for cell in row.values() if cell.data != " "]


def _glyph_count() -> int:
    return sum(len(g) for g in state._GLYPHS.sets.values())


def test_screens_fed_the_same_colourful_output_share_their_glyphs():
    data = _sgr_heavy(1, 1500, "abc")  # more attribute sets than the old bound of 1024
    one = HardenedScreen(80, 24)
    two = HardenedScreen(80, 24)
    for screen in (one, two):
        TolerantStream(screen).feed(data)
    a, b = _cells(one), _cells(two)
    assert len(a) == len(b) > 0
    assert all(x is y for x, y in zip(a, b, strict=True))


def test_the_table_never_holds_more_glyphs_than_its_bound_and_counts_them_exactly():
    screen = HardenedScreen(200, 24)
    stream = TolerantStream(screen)
    chars = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 40))  # 40 wide characters a set
    for seed in range(4):
        stream.feed(_sgr_heavy(seed, 1000, chars))
        table = state._GLYPHS
        assert _glyph_count() == table.glyphs <= table.max_glyphs
        assert len(table.sets) <= table.max_sets


def test_a_set_that_fills_up_and_starts_again_keeps_the_count_exact():
    screen = HardenedScreen(200, 24)
    many = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 5000))  # over one set's 4096
    TolerantStream(screen).feed(f"\x1b[38;5;99m{many}\x1b[0m".encode())
    assert _glyph_count() == state._GLYPHS.glyphs
