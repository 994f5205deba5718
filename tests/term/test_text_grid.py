"""``_TextGrid`` (rows held as text until asked for) against a ``_Grid`` whose rows were built
at once: every access the screen model makes gives the same rows (issue 12, flood kind a)."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st
from pyte.screens import Char, StaticDefaultDict

from signaltty.term.screen import PyteScreen
from signaltty.term.screen.cells import _BLANK, _Grid, _TextGrid

FILL = Char(" ", bg="red")
texts = st.dictionaries(st.integers(0, 7), st.text("ab é│ ", min_size=1, max_size=6), max_size=6)
rows = st.integers(0, 9)
ops = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["get", "item", "text", "in", "pop", "del", "setdefault"]), rows),
        st.tuples(st.just("set"), rows),
        st.tuples(
            st.sampled_from(["len", "items", "keys", "values", "iter", "clear", "copy", "eq"]),
            st.none(),
        ),
        st.tuples(st.just("update"), st.lists(rows, max_size=3)),
    ),
    max_size=25,
)


def built(text: str) -> StaticDefaultDict[int, Char]:
    row = StaticDefaultDict[int, Char](_BLANK)
    row.update({x: _BLANK._replace(data=c) for x, c in enumerate(text)})
    return row


def plain(grid: dict[int, StaticDefaultDict[int, Char]]) -> dict[int, list[Char]]:
    return {y: [row[x] for x in range(8)] for y, row in dict.items(grid)}


def apply(grid: _Grid, op: str, arg: object) -> object:
    if op == "get":
        row = grid.get(arg)
        return None if row is None else [row[x] for x in range(8)]
    if op == "item":
        return [grid[arg][x] for x in range(8)]
    if op == "text":
        return grid.text(arg, 8)
    if op == "in":
        return arg in grid
    if op == "pop":
        row = grid.pop(arg, None)
        return None if row is None else [row[x] for x in range(8)]
    if op == "del":
        if arg in grid:
            del grid[arg]
        return None
    if op == "setdefault":
        return [grid.setdefault(arg, built("new"))[x] for x in range(8)]
    if op == "set":
        grid[arg] = built(f"set{arg}")
        return None
    if op == "len":
        return len(grid)
    if op == "items":
        return sorted((y, [row[x] for x in range(8)]) for y, row in grid.items())
    if op == "keys":
        return sorted(grid.keys())
    if op == "values":
        return sorted([row[x] for x in range(8)] for row in grid.values())
    if op == "iter":
        return sorted(grid)
    if op == "clear":
        grid.clear()
        return None
    if op == "copy":
        return plain(copy.copy(grid))
    if op == "eq":
        return grid == _Grid(FILL)
    if op == "update":
        grid.update({y: built(f"up{y}") for y in arg})  # type: ignore[attr-defined]
        return None
    raise AssertionError(op)


@settings(max_examples=400, deadline=None)
@given(held=texts, stored=st.dictionaries(st.integers(8, 9), st.text("xy", max_size=3)), ops=ops)
def test_a_text_grid_acts_as_the_grid_it_stands_for(held, stored, ops):
    ours = _TextGrid(FILL, dict(held))
    ref = _Grid(FILL)
    for y, text in held.items():
        ref[y] = built(text)
    for y, text in stored.items():
        ours[y] = built(text)
        ref[y] = built(text)
    for op, arg in ops:
        assert apply(ours, op, arg) == apply(ref, op, arg), (op, arg)
        assert len(ours) == len(ref)
        assert all(ours.text(y, 8) == ref.text(y, 8) for y in range(10))
    ours_rows = {y: [row[x] for x in range(8)] for y, row in ours.items()}
    assert ours_rows == plain(ref)
    assert not ours.texts


def test_a_flood_leaves_rows_as_text_and_a_read_shows_them():
    screen = PyteScreen(40, 10)
    lines = "".join(f"line {i:05d} of the flood   \r\n" for i in range(3000))
    screen.feed(lines.encode())
    screen.drain(1 << 20)
    model = screen._screen  # no read yet: the fold's rows are held as text
    assert isinstance(model.buffer, _TextGrid)
    assert model.buffer.texts
    assert screen.lines()[-2:] == ["line 02999 of the flood", ""]
    assert model.history[-1] == f"line {3000 - 10:05d} of the flood"
    assert screen.cursor == (9, 0)  # (row, column)
    screen.feed(b"\x1b[2;1Hx")  # drawing into a held row builds it
    assert screen.lines()[1] == "xine 02992 of the flood"


def test_an_unbounded_history_keeps_every_folded_row():
    """``history_lines=None`` keeps every row (the fold used to bound it at 5 000)."""
    fast = PyteScreen(80, 24, history_lines=None)
    ref = PyteScreen(80, 24, history_lines=None, fast_forward=False)
    data = "".join(f"{i}\r\n" for i in range(20000)).encode()
    for screen in (fast, ref):
        for at in range(0, len(data), 4096):
            screen.feed(data[at : at + 4096])
            while screen.pending:
                screen.drain(16384)
    assert fast.lines() == ref.lines()
    assert list(fast.model.history) == list(ref.model.history)
    assert len(fast.model.history) == 20000 - 23


def test_a_line_feed_in_a_cell_reaches_history_as_without_the_fold():
    """A cell holding a line feed (only a hostile snapshot makes one) leaves for history
    the way pyte's own scrolling puts it there, when a fold pushes its row out."""
    screens = [PyteScreen(20, 5), PyteScreen(20, 5, fast_forward=False)]
    for screen in screens:
        screen.feed(b"top\r\nrow\r\n\r\n\r\n")
        screen.model.buffer[0][1] = Char("\n")
        screen.model.buffer[1][5] = Char("\n")
        for at in range(0, 300):
            screen.feed(f"line {at}\r\n".encode())
        while screen.pending:
            screen.drain(1 << 16)
    fast, ref = (list(screen.model.history) for screen in screens)
    assert fast == ref
    assert fast[0] == "t p"  # stored in a block: the line feed is a space there
    assert screens[0].fast_forward_stats["lines"] > 0
