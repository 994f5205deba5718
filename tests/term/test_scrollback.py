"""Scrollback against ``collections.deque(maxlen=…)``, the structure it replaced (issue 12,
"RSS per pane": rows stored in blocks of joined UTF-8, not one object a row)."""

from __future__ import annotations

import sys
from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from signaltty.term.screen.scrollback import BLOCK, Scrollback

rows = st.text(st.characters(codec="utf-8", exclude_characters="\n"), max_size=12).map(
    lambda row: row + " " * (len(row) % 3)  # trailing blanks, which rendering trims
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), rows),
        st.tuples(st.just("extend"), st.lists(rows, max_size=3 * BLOCK)),
        st.tuples(st.just("extend_lazily"), st.lists(rows, max_size=3 * BLOCK)),
        st.tuples(st.just("clear"), st.none()),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(maxlen=st.one_of(st.none(), st.integers(0, 3 * BLOCK)), ops=ops)
def test_it_holds_what_a_bounded_deque_holds(maxlen, ops):
    ours = Scrollback(maxlen)
    ref: deque[str] = deque(maxlen=maxlen)
    for op, arg in ops:
        getattr(ours, op)(*(() if arg is None else (arg,)))
        if op == "extend_lazily":  # the rows as rendered: right-trimmed of spaces
            ref.extend(row.rstrip(" ") for row in arg)
        else:
            getattr(ref, op)(*(() if arg is None else (arg,)))
        assert len(ours) == len(ref)
        assert list(ours) == list(ref)
    for i in range(-len(ref), len(ref)):
        assert ours[i] == ref[i]
    for i in (len(ref), -len(ref) - 1):
        try:
            ours[i]
        except IndexError:
            pass
        else:
            raise AssertionError(f"index {i} of {len(ref)} rows did not raise")


def test_a_row_with_a_line_feed_is_kept_as_one_row_and_surrogates_round_trip():
    ours = Scrollback(None)
    given_rows = [f"row {i}" for i in range(BLOCK)]
    given_rows[3] = "two\nlines"  # a hostile snapshot's history row
    given_rows[5] = "lone \ud800 surrogate"
    ours.extend(given_rows)
    got = list(ours)
    assert len(got) == BLOCK
    assert got[3] == "two lines"
    assert got[5] == "lone \ud800 surrogate"


def test_rows_cost_less_than_one_string_each():
    text = [f"{i:05d} " + "x" * 70 for i in range(5000)]
    ours = Scrollback(5000)
    ours.extend(text)
    held = sum(sys.getsizeof(b) for b in ours._blocks) + sum(sys.getsizeof(r) for r in ours._open)
    one_each = sum(sys.getsizeof(r) for r in text)
    assert held < 0.7 * one_each


def test_lazy_rows_that_drop_out_whole_are_never_made_into_rows():
    """A flood's folded runs (``extend_lazily``) that later runs push out are dropped as
    they came: only what is left is split, trimmed and put in blocks, on the first read."""
    ours = Scrollback(100)
    for run in range(50):
        ours.extend_lazily([f"run {run} row {i}   " for i in range(30)])
    assert len(ours) == 100
    assert len(ours._segments) == 4
    assert sum(count for _data, count in ours._segments) == 100  # no more rows held
    assert ours._segments[0][0].startswith(b"run 46 row 20   \n")
    assert not ours._blocks
    assert not ours._open
    got = list(ours)
    assert got == [f"run {run} row {i}" for run in range(46, 50) for i in range(30)][-100:]
    assert not ours._segments
    ours.append("after")
    assert ours[-1] == "after"
    assert ours[-2] == "run 49 row 29"
    assert len(ours) == 100
