"""Screen model tests (Spec: agents.md §7.6; protocol.md §5 pane.read/pane.attach, §9 limits).

Each pyte 0.8.2 fault fixed by ``HardenedScreen``/``TolerantStream`` has a test named
``test_fault_*`` here; test_screen_fuzz.py hunts for new ones.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyte
import pytest
from pyte.screens import Char

from signaltty.core.limits import HISTORY_LINES, MAX_OSC_PAYLOAD, SCREEN_SLICE_BYTES
from signaltty.term.screen import (
    HardenedScreen,
    PendingBytes,
    PyteScreen,
    TailText,
    TolerantStream,
    VirtualScreen,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real-agents"
CAPTURES = sorted(FIXTURES.glob("*/*_ansi.txt"))


def make(data: bytes | str = b"", cols: int = 20, rows: int = 5, **kwargs: Any) -> PyteScreen:
    screen = PyteScreen(cols, rows, **kwargs)
    screen.feed(data.encode() if isinstance(data, str) else data)
    return screen


def grid(screen: PyteScreen) -> list[list[Char]]:
    model = screen.model
    cols, rows = screen.size
    return [[model.cell(y, x) for x in range(cols)] for y in range(rows)]


def full_state(screen: PyteScreen) -> tuple[Any, ...]:
    model = screen.model
    return (
        screen.lines(),
        grid(screen),
        (model.cursor.y, model.cursor.x, model.cursor.attrs, model.cursor.hidden),
        model.alt_active,
        list(model.history),
        set(model.mode),
        model.margins,
        model.title,
    )


def capture_bytes(path: Path) -> bytes:
    """A tmux ``capture-pane -e`` dump as a PTY would carry it: CRLF, no final newline."""
    raw = path.read_bytes()
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    return raw.replace(b"\n", b"\r\n")


# --- basics and the interface -----------------------------------------------------------------


def test_pyte_screen_implements_virtual_screen() -> None:
    screen = PyteScreen()
    assert isinstance(screen, VirtualScreen)
    assert screen.size == (80, 24)
    assert screen.lines() == [""] * 24
    assert screen.cursor == (0, 0)
    assert not screen.cursor_hidden
    assert not screen.alt_screen
    assert screen.faults == 0


def test_lines_and_screen_text_are_right_trimmed() -> None:
    screen = make("hello   \r\n\r\n  world  \r\n")
    assert screen.lines() == ["hello", "", "  world", "", ""]
    assert screen.screen_text() == "hello\n\n  world"
    assert screen.cursor == (3, 0)


def test_feed_is_lazy_until_drained_or_read() -> None:
    screen = PyteScreen(20, 5, fast_forward=False)
    screen.feed(b"abc")
    screen.feed(bytearray(b"def"))
    assert screen.pending == 6
    assert screen.drain(4) == 4
    assert screen.pending == 2
    assert screen.lines()[0] == "abcdef"  # reads apply the rest first
    assert screen.pending == 0
    assert screen.drain(SCREEN_SLICE_BYTES) == 0
    assert screen.drain(0) == 0


def test_fast_forward_drains_to_zero_in_bounded_steps() -> None:
    """With fast-forward a drained piece may be held back (to see whether it can be skipped)
    and still count as pending; every call makes progress and the total reaches 0."""
    screen = PyteScreen(20, 5)
    screen.feed(b"abc")
    screen.feed(bytearray(b"def"))
    assert screen.pending == 6
    assert screen.drain(4) == 4
    assert screen.pending == 6  # 2 undecoded bytes, 4 chars held (nothing skipped yet)
    steps = 0
    while screen.pending:
        assert screen.drain(4) > 0
        steps += 1
    assert steps <= 3
    assert screen.peek_rows([0]) == ["abcdef"]
    assert screen.drain(SCREEN_SLICE_BYTES) == 0
    assert screen.drain(0) == 0


def test_drain_is_costly_exactly_when_the_next_piece_fills_the_window() -> None:
    """The pump starts a drain that resolves the lazy window in a slice of its own
    (server/panes.py): the flag is true for the piece that fills the window, and the
    resolve then happens in that drain."""
    screen = PyteScreen(20, 5, window=64)
    screen.feed(b"x" * 100)
    assert not screen.drain_is_costly(16)
    assert screen.drain(16) == 16
    assert screen.drain(16) == 16
    assert screen.drain(16) == 16
    assert screen.fast_forward_stats.get("resolves", 0) == 0
    assert screen.drain_is_costly(16)  # 48 held + 16 = the window
    assert not screen.drain_is_costly(15)
    screen.drain(16)
    assert screen.fast_forward_stats["resolves"] == 1
    assert not PyteScreen(20, 5, fast_forward=False).drain_is_costly(1 << 20)


def test_feed_copies_a_reused_buffer() -> None:
    screen = PyteScreen(20, 5)
    buf = bytearray(b"abc")
    screen.feed(buf)
    buf[:] = b"xyz"
    assert screen.lines()[0] == "abc"


def test_pending_bytes_take_splits_chunks() -> None:
    pending = PendingBytes()
    for chunk in (b"abc", b"", b"defgh", memoryview(b"ij")):
        pending.append(chunk)
    assert len(pending) == 10
    assert pending.take(2) == b"ab"
    assert pending.take(4) == b"cdef"
    assert pending.take(100) == b"ghij"
    assert pending.take(1) == b""
    assert len(pending) == 0


def test_cursor_position_hidden_and_pending_wrap() -> None:
    screen = make("\x1b[3;7H")
    assert screen.cursor == (2, 6)
    screen.feed(b"\x1b[?25l")
    assert screen.cursor_hidden
    screen.feed(b"\x1b[?25h\x1b[1;1H" + b"x" * 20)
    assert not screen.cursor_hidden
    assert screen.model.cursor.x == 20  # pending wrap, as pyte models it
    assert screen.cursor == (0, 19)  # reported on the last column, as xterm does


def test_take_dirty_reports_visible_changes_only() -> None:
    screen = PyteScreen(20, 5)
    assert screen.take_dirty()  # a new screen is "changed"
    assert not screen.take_dirty()
    screen.feed(b"x")
    assert screen.take_dirty()
    assert not screen.take_dirty()
    screen.feed(b"\x1b[3;3H\x1b[?25l")  # cursor only
    assert not screen.take_dirty()
    screen.feed(b"\x1b[?1049h")
    assert screen.take_dirty()
    screen.resize(30, 6)
    assert screen.take_dirty()
    screen.feed(b"\x1b[2J")
    assert screen.take_dirty()


def test_reset_returns_to_initial_state() -> None:
    screen = make("a\r\nb\r\nc\r\nd\r\ne\r\nf\x1b[?1049h\x1b[31m", rows=3)
    screen.feed(b"\xe4\xb8")  # half a character in the decoder
    screen.drain(2)
    screen.feed(b"pending")
    screen.reset()
    assert screen.pending == 0
    assert screen.lines() == ["", "", ""]
    assert screen.tail(10) == TailText("", False)
    assert not screen.alt_screen
    screen.feed(b"ok")
    assert screen.lines()[0] == "ok"  # no U+FFFD from the dropped half character


# --- UTF-8 --------------------------------------------------------------------------------------


def test_pyte_arrow_title_is_not_cut_by_its_0x9c_byte() -> None:
    """pyte's "➜" case: U+279C is E2 9E 9C in UTF-8, and 0x9C is C1 ST in Latin-1."""
    for terminator in (b"\x07", b"\x1b\\"):
        data = b"\x1b]0;\xe2\x9e\x9c title" + terminator + b"\xe2\x9e\x9c ok"
        for split in range(len(data) + 1):
            screen = PyteScreen(20, 3)
            screen.feed(data[:split])
            screen.drain(SCREEN_SLICE_BYTES)
            screen.feed(data[split:])
            assert screen.title == "➜ title"
            assert screen.lines()[0] == "➜ ok"


def test_utf8_split_inside_a_character_and_invalid_bytes() -> None:
    data = "é中😀".encode()
    screen = PyteScreen(20, 3)
    for byte in data:
        screen.feed(bytes([byte]))
        screen.drain(1)
    assert screen.lines()[0] == "é中😀"
    bad = make(b"a\xff\xfeb\xc3(c\xe4\xb8", cols=20, rows=3)
    assert bad.lines()[0] == "a\ufffd\ufffdb\ufffd(c"  # the trailing half waits for more
    assert bad.faults == 0


def test_fault_esc_percent_at_does_not_switch_to_latin1() -> None:
    """pyte 0.8.2: ``ESC % @`` makes later feeds decode as Latin-1."""
    screen = make(b"\x1b%@")
    screen.feed("é".encode())
    assert screen.lines()[0] == "é"


def test_c1_code_points_are_ignored() -> None:
    """U+0080-U+009F are not controls here (as tmux and the OSC scanner treat them); pyte
    0.8.2 started a CSI at U+009B and an OSC at U+009D."""
    screen = make("a\u009b2Jb\u009d0;t\u0007c\u0085d".encode())
    assert screen.lines()[0] == "a2Jb0;tcd"


# --- pyte 0.8.2 faults: handler signatures and crashes --------------------------------------------

SEQUENCES_THAT_RAISED = [
    b"\x1b[?1r",  # set_margins(private=True)
    b"\x1b[?6n",  # report_device_status(private=True)
    b"\x1b[?2A",  # cursor_up(private=True)
    b"\x1b[1;2;3H",  # cursor_position with 3 params
    b"\x1b[1;2;3r",  # set_margins with 3 params
    b"\x1b[2;3A",
    b"\x1b[1;2C",
    b"\x1b[?5C",
    b"\x1b[1;2;3d",
    b"\x1b[1;2G",
    b"\x1b[1;2@",
    b"\x1b[1;2P",
    b"\x1b[1;2X",
    b"\x1b[1;2L",
    b"\x1b[1;2M",
    b"\x1b[1;2E",
    b"\x1b[1;2F",
    b"\x1b[1;2g",
    b"\x1b[?3g",
    b"\x1b[1;2c",
    b"\x1b[5;6n",
    b"\x1b[?1m",
    b"\x1b[?1;2K",  # erase_in_line got multiple values for 'private'
    b"\x1b[4J",  # erase_in_display: UnboundLocalError
    b"\x1b[5K",  # erase_in_line: UnboundLocalError
    b"\x1b[?6h\x1b[5d",  # cursor_to_line: AssertionError under DECOM without margins
    b"\x1b[?6h\x1b[6n",  # report_device_status: AssertionError under DECOM without margins
]


@pytest.mark.parametrize("sequence", SEQUENCES_THAT_RAISED)
def test_fault_handler_signatures_never_raise_or_drop_the_rest(sequence: bytes) -> None:
    """pyte 0.8.2 raises (TypeError, UnboundLocalError, AssertionError) and drops the rest of
    the feed. Here the text after the sequence is always drawn and nothing is counted."""
    screen = make(b"ab" + sequence + b"\x1b[1;1Hcd")
    assert screen.lines()[0].startswith("cd")
    assert screen.faults == 0


@pytest.mark.parametrize("sequence", SEQUENCES_THAT_RAISED)
def test_fault_handlers_tolerate_pyte_own_stream(sequence: bytes) -> None:
    """The handlers themselves accept extra and private parameters: even pyte's stock
    ByteStream, which dispatches ``CSI ? 1 r`` as ``set_margins(1, private=True)``, cannot
    make them raise."""
    screen = HardenedScreen(20, 5)
    stream = pyte.ByteStream(screen)
    stream.feed(b"ab" + sequence + b"\x1b[1;1Hcd")
    assert screen.render_row(0).startswith("cd")


def test_private_forms_of_non_mode_sequences_are_ignored() -> None:
    screen = make(b"\x1b[3;3H\x1b[?2A\x1b[?1;1H\x1b[?5C\x1b[?1r")
    assert screen.cursor == (2, 2)
    assert screen.model.margins is None


def test_fault_orphan_wide_stub_renders() -> None:
    """pyte 0.8.2: ``display`` raises IndexError after ``中x`` then ``\\ra``. Overwriting half
    of a wide character blanks the other half (xterm); stray stubs are skipped."""
    screen = make("中x\ra".encode())
    assert screen.lines()[0] == "a x"
    screen.feed("\x1b[2;1H中\x1b[2;2Hb".encode())  # overwrite the right half
    assert screen.lines()[1] == " b"
    model = HardenedScreen(6, 1)
    model.buffer[0][2] = Char("")  # an orphan stub placed directly
    model.buffer[0][3] = Char("z")
    assert model.render_row(0) == "  z"
    assert model.display == ["  z   "]


def test_fault_zero_width_and_controls_do_not_stop_drawing() -> None:
    """pyte 0.8.2 stops drawing a text run at VS16, ZWJ, other width-0 non-combining
    characters and unprintable controls, and drops the rest of the run."""
    screen = make("❤️ ok\r\na\u200db c\r\nab\x01cd\r\nx\u1161y".encode(), cols=20, rows=5)
    assert screen.lines()[:4] == ["❤️ ok", "a\u200db c", "abcd", "x\u1161y"]
    family = make("👨\u200d👩 z".encode())
    assert family.lines()[0] == "👨\u200d👩 z"


def test_combining_marks_join_the_previous_cell() -> None:
    screen = make("e\u0301 中\u0301x\r\n\u0301y".encode())
    assert screen.lines()[0] == "é 中\u0301x"  # NFC where a composition exists
    assert screen.lines()[1] == "y"  # at column 0 a mark has nothing to join


def test_fault_combining_flood_is_bounded() -> None:
    """pyte re-normalizes an ever-growing cell per mark (quadratic): the cell stays small.
    (How long the flood takes: ``bench/latency.py --screen``.)"""
    screen = make(b"a" + "\u0301".encode() * 50_000)
    text = screen.lines()[0]
    assert text.startswith("á")
    assert len(text) <= 8


def test_wide_character_at_the_last_column_wraps() -> None:
    screen = make("abcd中".encode(), cols=5, rows=2)
    assert screen.lines() == ["abcd", "中"]


# --- pyte 0.8.2 faults: the tokenizer -----------------------------------------------------------


@pytest.mark.parametrize(
    "sequence",
    [
        b"\x1b[<1u",  # kitty keyboard pop: pyte drew "1u"
        b"\x1b[=1;1u",
        b"\x1b[>1u",
        b"\x1b[>4;2m",  # modifyOtherKeys: pyte set underline
        b"\x1b[ q",
        b"\x1b[2 q",
        b"\x1b[?2004$p",
        b"\x1b[>c",
        b"\x1b[>0q",
        b"\x1b[1$}",
        b"\x1b[1 2m",  # parameter after intermediate: invalid, ignored
        b"\x1bP+q544e\x1b\\",  # DCS (XTGETTCAP): pyte drew "+q544e"
        b"\x1bPtmux;\x1b\x1b]0;x\x07\x1b\\",
        b"\x1b_Gi=1;AAAA\x1b\\",  # APC (kitty graphics)
        b"\x1b^privacy\x1b\\",
        b"\x1bXsos\x1b\\",
        b"\x1b]8;;https://example.com\x1b\\",
        b"\x1b]133;A\x07",
    ],
)
def test_fault_unknown_sequences_are_not_drawn(sequence: bytes) -> None:
    screen = make(b"a" + sequence + b"b")
    assert screen.lines()[0] == "ab"
    assert screen.model.cell(0, 1) == Char("b")


def test_fault_colon_sgr_is_parsed() -> None:
    """pyte 0.8.2 ended the CSI at ``:`` and drew the rest (``2::255:0:0m``)."""
    screen = make(b"\x1b[38:2::255:0:0mA\x1b[48:5:17;4:3mB\x1b[4:0mC\x1b[38:2:1:2:3mD")
    model = screen.model
    assert screen.lines()[0] == "ABCD"
    assert model.cell(0, 0).fg == "ff0000"
    assert model.cell(0, 1).bg == "00005f"
    assert model.cell(0, 1).underscore
    assert not model.cell(0, 2).underscore
    assert model.cell(0, 3).fg == "010203"


def test_sgr_matches_pyte_vocabulary() -> None:
    screen = make(
        b"\x1b[1;3;4;5;7;9;31;42mA\x1b[0;38;5;174;48;2;1;2;3mB\x1b[95;105mC\x1b[38;5;300mD"
    )
    a, b, c, d = (screen.model.cell(0, x) for x in range(4))
    assert a == Char("A", "red", "green", True, True, True, True, True, True)
    assert b == Char("B", "d78787", "010203")
    assert c == Char("C", "brightmagenta", "brightmagenta")  # pyte spells bg 105 "bfightmagenta"
    assert d.fg == "brightmagenta"  # out-of-range colour ignored


def test_fault_huge_digit_runs_do_not_raise_value_error() -> None:
    """pyte 0.8.2: int() of more than 4300 digits raises ValueError and drops the feed."""
    screen = make(b"a\x1b[" + b"9" * 100_000 + b"Cb\x1b[" + b"1;" * 5000 + b"mc")
    assert screen.lines()[0] == "abc"
    assert screen.faults == 0


def test_sequences_split_anywhere_and_controls_inside_csi() -> None:
    data = b"x\x1b[2\r;4Hy"  # CR inside a CSI is executed (VT500 parser)
    assert make(data).lines()[:2] == ["x", "   y"]
    assert make(b"\x1b[1;\x18Hz").lines()[0] == "Hz"  # CAN aborts the sequence
    assert make(b"\x1b\x1b[2Cq").lines()[0] == "  q"  # ESC restarts the sequence
    assert make("\x1bé!".encode()).lines()[0] == "é!"  # ESC + non-ASCII: ESC dropped


def test_osc_ended_by_another_escape_is_dropped() -> None:
    screen = make(b"\x1b]0;lost\x1b[1mB\x1b]2;kept\x1b\\")
    assert screen.lines()[0] == "B"
    assert screen.model.cell(0, 0).bold
    assert screen.title == "kept"


@pytest.mark.parametrize(
    ("length", "kept"), [(MAX_OSC_PAYLOAD, True), (MAX_OSC_PAYLOAD + 1, False)]
)
def test_osc_payload_cap(length: int, kept: bool) -> None:
    """agents.md §7: over the cap (8192) the OSC is aborted; tested at N and N+1."""
    body = "0;" + "t" * (length - 2)
    for whole in (True, False):
        screen = PyteScreen(20, 2)
        data = f"\x1b]{body}\x07after".encode()
        if whole:
            screen.feed(data)
        else:
            for i in range(0, len(data), 1000):
                screen.feed(data[i : i + 1000])
                screen.drain(1000)
        assert screen.title == (body[2:] if kept else "")
        assert screen.lines()[0] == "after"


def test_nel_returns_to_column_zero() -> None:
    assert make(b"abc\x1bEd").lines()[:2] == ["abc", "d"]


def test_dec_special_graphics_charset() -> None:
    screen = make(b"\x1b(0lqqk\x1b(B x\x0eq\x0fq")
    assert screen.lines()[0] == "┌──┐ x─q"


# --- pyte 0.8.2 faults: denial of service ------------------------------------------------------


@pytest.mark.parametrize(
    "unit",
    [
        b"\x1b#8",  # DECALN: pyte rewrote every cell (48 s per 16 KiB at 120x40)
        b"\x1b[?5h\x1b[?5l",  # DECSCNM: pyte rewrote every cell (17 s per 10 KiB)
        b"\x1b[2J",  # pyte touched every written cell
        b"\x1b[41m\x1b[2J",
        b"x\x1b[65535b",  # REP
        b"\x1b[99999999@",
        b"\x1b[999999999;999999999H",
        b"\x1b[9999L",
        b"\x1b[9999S",
        b"\x1b7",
        b"\n",
    ],
)
def test_fault_one_sequence_cannot_take_seconds(unit: bytes) -> None:
    """64 KiB of the sequence on a full 120x40 screen drains without a fault (these took
    from seconds to minutes in pyte 0.8.2; the time per sequence, against plain text in the
    same run, is measured by ``bench/latency.py --screen``)."""
    screen = make(b"x" * 4800, cols=120, rows=40)
    screen.lines()
    screen.feed((unit * (65536 // len(unit) + 1))[:65536])
    assert len(screen.lines()) == 40
    assert screen.faults == 0


def test_fault_save_cursor_has_one_slot() -> None:
    """pyte 0.8.2 pushes every DECSC onto an unbounded stack; xterm has one slot, and DECRC
    can restore it more than once."""
    screen = make(b"\x1b[2;2H\x1b7" * 1000 + b"\x1b[5;5H\x1b8x\x1b8y")
    assert screen.model.savepoints == []
    assert screen.lines()[1] == " y"


def test_restore_without_save_homes_the_cursor() -> None:
    assert make(b"\x1b[3;3H\x1b8z").lines()[0] == "z"


def test_rep_repeats_up_to_the_end_of_the_row() -> None:
    screen = make(b"ab\x1b[3bc\x1b[999bd", cols=10, rows=2)
    assert screen.lines() == ["abbbbccccc", "d"]


def test_fault_deccolm_does_not_resize_the_model() -> None:
    screen = make(b"abc\x1b[?3h")
    assert screen.size == (20, 5)
    assert screen.lines()[0] == "abc"


def test_fault_tab_stops_follow_resizes() -> None:
    """pyte 0.8.2 neither adds stops when the screen grows nor drops stale ones beyond a
    smaller width (the cursor then left the grid)."""
    screen = make(b"", cols=20, rows=2)
    screen.resize(40, 2)
    screen.feed(b"\x1b[1;21H\tx")
    assert screen.cursor == (0, 25)
    screen.resize(10, 2)
    screen.feed(b"\x1b[1;9H\ty")
    assert screen.lines()[0] == "         y"
    assert screen.model.cursor.x <= 10


def test_fault_erase_paints_only_the_background() -> None:
    """pyte 0.8.2 painted the cursor's bold/underline/reverse onto erased cells, and only onto
    cells that had been written; erases here use the background colour (BCE) everywhere."""
    screen = make(b"abc\x1b[1;4;7;41m\x1b[2K\x1b[2;1H\x1b[J")
    for y in (0, 1, 4):
        for x in (0, 19):
            assert screen.model.cell(y, x) == Char(" ", bg="red")


def test_fault_ed3_clears_history_not_the_screen() -> None:
    screen = make("1\r\n2\r\n3\r\n4", rows=2)
    assert list(screen.model.history) == ["1", "2"]
    screen.feed(b"\x1b[3J")
    assert screen.lines() == ["3", "4"]
    assert list(screen.model.history) == []


def test_fault_line_feed_below_the_scroll_region() -> None:
    """pyte 0.8.2 pulled a cursor below the region back up to the bottom margin."""
    screen = make(b"\x1b[1;2r\x1b[4;1Ha\n\rb\n\rc", rows=5)
    assert screen.lines() == ["", "", "", "a", "c"]  # below the region: no scroll at the bottom
    assert screen.cursor == (4, 1)
    down = make(b"\x1b[2;3r\x1b[5;1H\x1b[Bz", rows=5)
    assert down.lines()[4] == "z"  # pyte 0.8.2 moved the cursor up to the margin
    above = make(b"\x1b[3;4r\x1b[1;1H\x1b[5Bx\x1b[2;1H\x1b[9Ay", rows=5)
    assert above.lines()[3] == "x"  # CUD from above the region stops at its bottom margin
    assert above.cursor == (0, 1)  # CUU from above the top margin stops at row 0


def test_fault_delete_lines_clears_rows_when_rows_below_are_blank() -> None:
    """pyte 0.8.2 kept the cursor row when the rows below it had never been written."""
    screen = make(b"Xd\x1b[1M")
    assert screen.lines()[0] == ""


def test_margins_reset_homes_the_cursor() -> None:
    screen = make(b"\x1b[3;4H\x1b[r")
    assert screen.cursor == (0, 0)


def test_erase_at_pending_wrap_erases_the_last_column() -> None:
    screen = make(b"abcde\x1b[K", cols=5, rows=2)
    assert screen.lines() == ["abcd", ""]
    screen.feed(b"Z")  # the erase ended the pending wrap: no wrap to the next row
    assert screen.lines() == ["abcdZ", ""]


class _RecordingScreen(HardenedScreen):
    replies: list[str]

    def write_process_input(self, data: str) -> None:
        self.replies.append(data)


def test_write_process_input_is_a_no_op() -> None:
    """Replies come only from term/replies.py (agents.md §7.5): the base hook does nothing and
    no query reaches it."""
    HardenedScreen(10, 2).write_process_input("\x1b[?6c")
    screen = _RecordingScreen(10, 2)
    screen.replies = []
    TolerantStream(screen).feed(b"\x1b[c\x1b[0c\x1b[5n\x1b[6n\x1b[>c")
    assert screen.replies == []
    assert screen.render_row(0) == ""


# --- last line of defence ---------------------------------------------------------------------


class _ExplodingScreen(HardenedScreen):
    def cursor_up(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    def draw(self, data: str, *args: Any, **kwargs: Any) -> None:
        if "!" in data:
            cut = data.index("!")
            super().draw(data[:cut])
            self.draw_progress = cut
            raise ZeroDivisionError
        super().draw(data)


@pytest.mark.parametrize("bytewise", [False, True])
def test_unexpected_exception_is_counted_and_the_rest_is_fed(bytewise: bool) -> None:
    screen = _ExplodingScreen(20, 2)
    stream = TolerantStream(screen)
    data = b"ab\x1b[Acd\x1b[1mef!gh"
    for piece in [bytes([b]) for b in data] if bytewise else [data]:
        stream.feed(piece)
    assert screen.render_row(0) == "abcdefgh"
    assert screen.cell(0, 5).bold
    assert stream.fault_classes == {"RuntimeError": 1, "ZeroDivisionError": 1}
    assert stream.faults == 2
    assert stream._taking_plain_text


def test_pyte_screen_counts_faults(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = PyteScreen(20, 2)

    def boom(*_args: Any) -> None:
        raise KeyError("x")

    monkeypatch.setattr(screen._stream, "_dispatch_csi", boom)
    screen.feed(b"a\x1b[5Cb")
    assert screen.lines()[0] == "ab"
    assert screen.faults == 1
    assert screen.fault_classes == {"KeyError": 1}


# --- resize -------------------------------------------------------------------------------------


def test_resize_fewer_rows_pushes_top_rows_to_history() -> None:
    screen = make("r0\r\nr1\r\nr2\r\nr3\r\nr4")
    screen.resize(20, 3)
    assert screen.size == (20, 3)
    assert screen.lines() == ["r2", "r3", "r4"]
    assert list(screen.model.history) == ["r0", "r1"]
    assert screen.cursor == (2, 2)


def test_resize_fewer_rows_drops_blank_rows_below_the_cursor_first() -> None:
    screen = make("r0\r\nr1")
    screen.resize(20, 3)
    assert screen.lines() == ["r0", "r1", ""]
    assert list(screen.model.history) == []
    assert screen.cursor == (1, 2)
    screen.resize(20, 1)
    assert screen.lines() == ["r1"]
    assert list(screen.model.history) == ["r0"]


def test_resize_more_rows_adds_blank_rows_at_the_bottom() -> None:
    screen = make("a\r\nb", rows=2)
    screen.resize(20, 4)
    assert screen.lines() == ["a", "b", "", ""]
    assert screen.cursor == (1, 1)


def test_resize_columns_clips_and_blanks_split_wide_characters() -> None:
    screen = make("abcd中ef".encode(), cols=10, rows=2)
    screen.resize(5, 2)
    assert screen.lines() == ["abcd", ""]
    assert screen.cursor == (0, 4)
    screen.resize(12, 2)
    screen.feed(b"\x1b[1;11Hxy")
    assert screen.lines()[0] == "abcd      xy"


def test_resize_applies_pending_bytes_first_and_validates() -> None:
    screen = PyteScreen(10, 2)
    screen.feed(b"0123456789ab")
    screen.resize(5, 2)
    assert screen.lines() == ["01234", "ab"]
    with pytest.raises(ValueError, match="at least 1x1"):
        screen.resize(0, 2)
    with pytest.raises(ValueError, match="at least 1x1"):
        PyteScreen(3, 0)


def test_resize_in_alt_screen_resizes_the_saved_main_grid() -> None:
    screen = make("m0\r\nm1\r\nm2\r\nm3\r\nm4\x1b[?1049h\x1b[Halt")
    screen.resize(20, 3)
    assert screen.lines()[0] == "alt"
    screen.feed(b"\x1b[?1049l")
    assert screen.lines() == ["m2", "m3", "m4"]
    assert list(screen.model.history) == ["m0", "m1"]


def test_resize_after_decaln_adds_blank_rows() -> None:
    screen = make(b"\x1b#8", cols=3, rows=2)
    screen.resize(3, 3)
    assert screen.lines() == ["EEE", "EEE", ""]


# --- history ----------------------------------------------------------------------------------


def test_history_ring_is_bounded() -> None:
    screen = make("\r\n".join(f"line{i}" for i in range(10)), rows=2, history_lines=3)
    assert list(screen.model.history) == ["line5", "line6", "line7"]
    assert screen.model.history.maxlen == 3
    assert PyteScreen().model.history.maxlen == HISTORY_LINES


@pytest.mark.parametrize("scrolled", [HISTORY_LINES, HISTORY_LINES + 1])
def test_history_limit_at_n_and_n_plus_one(scrolled: int) -> None:
    """protocol.md §9: 5000 rendered lines per pane."""
    rows = 2
    screen = make("\r\n".join(str(i) for i in range(scrolled + rows)), cols=10, rows=rows)
    history = screen.model.history
    assert len(history) == HISTORY_LINES
    assert history[0] == str(scrolled - HISTORY_LINES)
    assert history[-1] == str(scrolled - 1)


def test_history_only_from_the_top_of_the_main_grid() -> None:
    # Region starting at row 0 (Codex's inline viewport): scrolled-off rows are kept.
    top = make(b"a\r\nb\r\nc\x1b[1;2r\x1b[2;1H\n", rows=4)
    assert list(top.model.history) == ["a"]
    # Region below row 0: nothing is kept.
    inner = make(b"a\r\nb\r\nc\x1b[2;3r\x1b[3;1H\n", rows=4)
    assert list(inner.model.history) == []
    # Alternate screen: nothing is kept.
    alt = make(b"\x1b[?1049h1\r\n2\r\n3\r\n4\r\n5", rows=2)
    assert list(alt.model.history) == []
    # SU keeps, DL does not.
    su = make(b"a\r\nb\x1b[S", rows=2)
    assert list(su.model.history) == ["a"]
    dl = make(b"a\r\nb\x1b[H\x1b[M", rows=2)
    assert list(dl.model.history) == []
    assert dl.lines() == ["b", ""]


def test_history_rows_are_rendered_and_trimmed() -> None:
    screen = make("\x1b[31m中x  \x1b[0m\r\n\r\nz".encode(), cols=10, rows=1)
    assert list(screen.model.history) == ["中x", ""]


# --- tail -------------------------------------------------------------------------------------


def test_tail_combines_history_and_grid_and_sets_truncated() -> None:
    screen = make("h0\r\nh1\r\ng0\r\ng1\r\n", rows=3)  # the cursor row is empty
    assert list(screen.model.history) == ["h0", "h1"]
    assert screen.lines() == ["g0", "g1", ""]
    everything = screen.tail(100)
    assert everything == TailText("h0\nh1\ng0\ng1", False)
    assert screen.tail(4) == TailText("h0\nh1\ng0\ng1", False)
    assert screen.tail(3) == TailText("h1\ng0\ng1", True)
    assert screen.tail(1) == TailText("g1", True)
    assert screen.tail(0) == TailText("", True)
    assert PyteScreen(10, 3).tail(5) == TailText("", False)


def test_tail_keeps_empty_rows_between_text() -> None:
    screen = make("a\r\n\r\nb", rows=5)
    assert screen.tail(10) == TailText("a\n\nb", False)


def test_tail_reads_the_main_grid_while_the_alternate_screen_is_shown() -> None:
    screen = make("main\x1b[?1049h\x1b[Hfull screen app")
    assert screen.lines()[0] == "full screen app"
    assert screen.tail(10) == TailText("main", False)


# --- alternate screen -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [1049, 1047, 47])
def test_alt_screen_saves_and_restores_the_main_grid(mode: int) -> None:
    screen = make(f"main\r\nprompt$ \x1b[?{mode}h".encode())
    assert screen.alt_screen
    assert screen.lines() == [""] * 5  # text written before the switch is not shown
    assert screen.cursor == (1, 8)
    screen.feed(b"\x1b[Hvim\x1b[3;3H")
    assert screen.lines()[0] == "vim"
    screen.feed(f"\x1b[?{mode}l".encode())
    assert not screen.alt_screen
    assert screen.lines()[:2] == ["main", "prompt$"]
    assert screen.cursor == (1, 8)


def test_alt_screen_flag_survives_repeats_and_ris_leaves_it() -> None:
    screen = make(b"\x1b[?1049h\x1b[?1049h\x1b[?47h")
    assert screen.alt_screen
    screen.feed(b"\x1b[?47l")
    assert not screen.alt_screen
    screen.feed(b"\x1b[?1049lx")  # leaving twice is harmless
    assert screen.lines()[0] == "x"
    screen.feed(b"\x1b[?1049h\x1bc")
    assert not screen.alt_screen


# --- snapshot ---------------------------------------------------------------------------------

SNAPSHOT_SCENES: dict[str, bytes | str] = {
    "colors": b"\x1b[31mred\x1b[42mgreen\x1b[0m \x1b[1;3;4;5;7;9mall\x1b[0m\r\n"
    b"\x1b[38;5;174m256\x1b[48;5;16mbg\x1b[0m \x1b[38;2;1;2;3mtrue\x1b[0m \x1b[95mbr\x1b[105mbg",
    "wide": "中文 e\u0301 ❤️ 👨\u200d👩 x\r\n\x1b[31m中\x1b[0m".encode(),
    "bce": b"\x1b[44m\x1b[2J\x1b[0m\x1b[3;1H\x1b[41m\x1b[K\x1b[0mtext\x1b[2;5H\x1b[43m\x1b[3X",
    "hidden-cursor-and-attrs": b"abc\x1b[?25l\x1b[4;7H\x1b[1;33;44m",
    "pending-wrap": b"\x1b[2;1H" + b"w" * 20,
    "pending-wrap-wide": "\x1b[2;1H" + "x" * 18 + "中",
    "alt": b"main\x1b[?1049h\x1b[2;2Halt\x1b[32m",
    "margins-origin": b"top\x1b[2;4r\x1b[?6h\x1b[2;3Hin",
    "modes": b"\x1b[?7l\x1b[4h\x1b[20h\x1b[?5h\x1b[?2004h\x1b[?1h\x1b[?1000;1006hab",
    "decaln": b"\x1b#8\x1b[3;3Hx",
    "charsets": b"\x1b(0lqk\x1b)B\x0e",
    "empty": b"",
}


def _round_trip(screen: PyteScreen) -> PyteScreen:
    cols, rows = screen.size
    copy = PyteScreen(cols, rows)
    copy.feed(screen.snapshot_bytes())
    assert copy.faults == 0
    return copy


def _assert_same_terminal(a: PyteScreen, b: PyteScreen) -> None:
    assert b.lines() == a.lines()
    assert grid(b) == grid(a)
    ma, mb = a.model, b.model
    assert (mb.cursor.y, mb.cursor.x, mb.cursor.attrs, mb.cursor.hidden) == (
        ma.cursor.y,
        ma.cursor.x,
        ma.cursor.attrs,
        ma.cursor.hidden,
    )
    assert b.alt_screen == a.alt_screen
    assert mb.margins == ma.margins
    keys = {
        pyte.modes.DECAWM,
        pyte.modes.IRM,
        pyte.modes.LNM,
        pyte.modes.DECOM,
        pyte.modes.DECSCNM,
        pyte.modes.DECTCEM,
    } | {m << 5 for m in (1, 1000, 1006, 2004)}
    assert mb.mode & keys == ma.mode & keys
    assert (mb.charset, mb.g0_charset, mb.g1_charset) == (ma.charset, ma.g0_charset, ma.g1_charset)


@pytest.mark.parametrize("scene", sorted(SNAPSHOT_SCENES))
def test_snapshot_round_trip(scene: str) -> None:
    """protocol.md §5 pane.attach: the snapshot, written to a fresh terminal of the same size,
    reproduces characters, attributes per cell, cursor position and visibility."""
    screen = make(SNAPSHOT_SCENES[scene], cols=20, rows=5)
    snapshot = screen.snapshot_bytes()
    assert snapshot.startswith(b"\x1b[?25l\x1b[0m")
    assert b"\x1b[H\x1b[2J" in snapshot
    copy = _round_trip(screen)
    _assert_same_terminal(screen, copy)
    # Later output lands the same way on both.
    tail = b"Z\x1b[1mY\r\nq"
    screen.feed(tail)
    copy.feed(tail)
    _assert_same_terminal(screen, copy)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_snapshot_round_trip_of_real_captures(capture: Path) -> None:
    screen = make(capture_bytes(capture), cols=120, rows=40)
    _assert_same_terminal(screen, _round_trip(screen))


def test_snapshot_clamps_a_cursor_outside_the_origin_region() -> None:
    """Found by the fuzzer: under DECOM a DECRC can leave the cursor above the region, which no
    CUP can express; the snapshot clamps it into the region instead of emitting ``CSI 0;1H``."""
    # Save at (0, 0) in origin mode without margins, set margins, restore.
    screen = make(b"\x1b[?6h\x1b7\x1b[2;4r\x1b8")
    model = screen.model
    assert model.margins is not None
    assert pyte.modes.DECOM in model.mode
    assert model.cursor.y == 0 < model.margins.top
    snapshot = screen.snapshot_bytes()
    assert b"\x1b[0;" not in snapshot
    assert b"\x1b[-" not in snapshot
    copy = _round_trip(screen)
    assert copy.cursor == (model.margins.top, 0)
    assert copy.model.margins == model.margins
    assert pyte.modes.DECOM in copy.model.mode


# --- slicing ----------------------------------------------------------------------------------

_TRICKY = (
    (
        "plain ascii \x1b[1;31mbold red\x1b[0m é中😀❤️ e\u0301\r\n"
        "\x1b]0;title ➜\x07\x1b]2;st\x1b\\\x1bP+q544e\x1b\\\x1b[<1u\x1b[38:2::1:2:3mX\x1b[0m\r\n"
        "\x1b[?1049h\x1b[2J\x1b[Halt\x1b[?1049l\x1b[5;3r\x1b[5;1H\n\n\x1b[r\x1b(0lqk\x1b(B\t|\x1b#8"
        "\x1b[3;3H\x1b[2@\x1b[P\x1b[X\x1b[K\x1b[1J\x1b[L\x1b[M\x1b[S\x1b[T\x1b[2b\x1b7\x1b8\x1bM\x1bD"
    ).encode()
    + b"\xff\xc3(\x1b["
    + b"7" * 300
    + b"m!"
)


def test_every_split_point_gives_the_same_screen() -> None:
    whole = make(_TRICKY, cols=30, rows=6)
    expected = full_state(whole)
    assert whole.faults == 0
    for split in range(len(_TRICKY) + 1):
        screen = PyteScreen(30, 6)
        screen.feed(_TRICKY[:split])
        screen.drain(SCREEN_SLICE_BYTES)
        screen.feed(_TRICKY[split:])
        assert full_state(screen) == expected, split


@pytest.mark.parametrize("seed", range(4))
def test_random_slices_of_real_output_give_the_same_screen(seed: int) -> None:
    rng = random.Random(seed)
    data = b"".join(capture_bytes(path) + b"\x1b[H\x1b[2J" for path in CAPTURES) + _TRICKY
    whole = make(data, cols=120, rows=40)
    sliced = PyteScreen(120, 40)
    pos = 0
    while pos < len(data):
        size = rng.choice([1, 2, 3, 7, 64, 1000, 4096, 70000])
        sliced.feed(data[pos : pos + size])
        pos += size
        while sliced.pending and rng.random() < 0.7:
            sliced.drain(rng.choice([1, 5, 333, SCREEN_SLICE_BYTES]))
    assert full_state(sliced) == full_state(whole)


def test_drain_returns_bytes_applied_in_bounded_slices() -> None:
    screen = PyteScreen(20, 5, fast_forward=False)
    screen.feed(b"x" * 40_000)
    applied = []
    while screen.pending:
        applied.append(screen.drain(SCREEN_SLICE_BYTES))
    assert applied == [16384, 16384, 7232]


def test_fast_forward_drain_draws_in_bounded_slices() -> None:
    """Output that cannot be skipped is still drawn at most one slice per call."""
    screen = PyteScreen(20, 5)
    screen.feed(b"x" * 40_000)
    drawn_before = 0
    calls = 0
    while screen.pending:
        assert 0 < screen.drain(SCREEN_SLICE_BYTES) <= SCREEN_SLICE_BYTES
        drawn = screen.fast_forward_stats.get("drawn", 0)
        assert drawn - drawn_before <= SCREEN_SLICE_BYTES
        drawn_before = drawn
        calls += 1
    assert calls <= 6
    assert screen.fast_forward_stats["drawn"] == 40_000


# --- real captures ----------------------------------------------------------------------------


@pytest.mark.skipif(not CAPTURES, reason="real-agents fixtures not available")
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_real_capture_plain_text_matches(capture: Path) -> None:
    """tmux ``capture-pane -e`` dumps fed to a 120x40 screen give the ``capture-pane -p`` text
    (right-trimmed). No differences had to be excused."""
    screen = make(capture_bytes(capture), cols=120, rows=40)
    expected = capture.with_name(capture.name.replace("_ansi.txt", ".txt"))
    want = [line.rstrip(" ") for line in expected.read_text(encoding="utf-8").split("\n")][:40]
    want += [""] * (40 - len(want))
    assert screen.lines() == want
    assert screen.faults == 0
