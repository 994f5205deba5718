"""Frame elision (signaltty/term/screen/repaint.py): what it skips and where it stops.

The proof that elision is exact is the differential test (test_screen_differential.py); these
tests pin the parts a reader relies on: the width ranges it trusts, the barriers, and that a
repainting TUI is mostly skipped.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from signaltty.term.screen import PyteScreen, fastforward, repaint
from signaltty.term.screen.cells import _WIDTH
from signaltty.term.screen.state import HardenedScreen


def test_narrow_ranges_are_one_cell_wide() -> None:
    """The ranges the fast width check trusts agree with the model's widths (a wcwidth
    upgrade that changed one would make elision follow the cursor wrongly)."""
    for first, last in repaint.NARROW_RANGES:
        wide = [hex(c) for c in range(first, last + 1) if _WIDTH[chr(c)] != 1]
        assert not wide, (hex(first), hex(last), wide[:5])


def _screen() -> HardenedScreen:
    screen = HardenedScreen(20, 5)
    screen.set_mode(1049, private=True)
    return screen


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("\x1b[5;1H\n", "scroll"),
        ("\x1b[1;18Habcd", "wrap"),
        ("\x1b[1;1H中", "wide"),
        ("\x1b7", "state"),
        ("\x1b[2L", "rows"),
        ("\x1b[4h", "mode"),
        ("\x1b(0", "charset"),
        ("\x1b[1\r2m", "pathology"),
        ("\x1b[!p", "decstr"),
    ],
)
def test_barriers_end_a_segment(text: str, reason: str) -> None:
    before = "\x1b[2;1Hok\x1b[K"
    seg = repaint.scan(_screen(), before + text + "\x1b[2;1Hzz", 0)
    assert seg.blocker is not None
    assert seg.blocker[0] == reason
    assert seg.blocker[1] == seg.end
    assert len(before) <= seg.end < len(before) + len(text)


def test_a_write_is_dead_only_when_fully_overwritten() -> None:
    screen = _screen()
    text = "\x1b[2;1Habcd\x1b[2;1Hxy\x1b[3;5Hq\x1b[3;1H\x1b[2K"
    seg = repaint.scan(screen, text, 0)
    assert seg.blocker is None
    assert seg.end == len(text)
    live = repaint.plan(screen, seg)
    # "abcd" is only half covered by "xy": live; "q" is erased by EL 2: dead.
    assert list(live) == [1, 1, 0, 1]


def test_a_repainting_tui_is_mostly_skipped() -> None:
    rows = [f"\x1b[{r};1H\x1b[3{r % 8}mrow {r} frame {{f}}\x1b[0m\x1b[K" for r in range(1, 6)]
    text = "\x1b[?1049h" + "".join(row.format(f=f) for f in range(2000) for row in rows)
    screen = PyteScreen(20, 5)
    data = text.encode()
    for i in range(0, len(data), 4096):
        screen.feed(data[i : i + 4096])
        while screen.pending:
            screen.drain(2048)
    assert screen.lines()[0] == "row 1 frame 1999"
    stats = screen.fast_forward_stats
    assert stats["skipped"] > 0.9 * len(text), stats
    assert stats["elided"] > 0
    assert screen.faults == 0


@settings(max_examples=500, deadline=None)
@given(
    params=st.text(alphabet=st.characters(min_codepoint=0x30, max_codepoint=0x3F), max_size=6),
    inter=st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x2F), max_size=2),
    before=st.text(max_size=20),
)
@example(params="2", inter="", before="x")
@example(params="?2", inter="", before="")
def test_a_window_without_ed_has_no_clear(params: str, inter: str, before: str) -> None:
    """``fastforward.may_clear`` lets a window skip the clear scan: every ED the scan reads
    as a clear of the grid must be seen by it."""
    seq = f"\x1b[{params}{inter}J"
    text = before + seq
    if fastforward.csi_kind(params, inter, "J") == "clear":
        assert fastforward.may_clear(text, len(before))
    assert not fastforward.may_clear(before.replace("\x1b", "") + "\x1b[5;1Hab\x1b[K", 0)
