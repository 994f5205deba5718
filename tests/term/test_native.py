"""The native loops (signaltty/term/screen/_native.c) against their pure-Python forms.

Each native function must give exactly what the regex form it replaces gives, on generated
input built from the pieces that decide a simple run or a paint (sequence openers, their
terminators, parameter bytes at the 256 limit, OSC payloads at a small ``osc_max``, C0 and C1
controls, DEL, non-ASCII, astral and lone-surrogate characters) and at every start position.
The screen model's own differential test (test_screen_differential.py) runs with the native
loops when they are built; ``test_the_screen_is_the_same_with_and_without_native`` feeds the
same streams through both forms of the model.
"""

from __future__ import annotations

import os
import random
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from signaltty.core.limits import MAX_OSC_PAYLOAD
from signaltty.term import osc as osc_mod
from signaltty.term.screen import PyteScreen
from signaltty.term.screen import fastforward as fastforward_mod
from signaltty.term.screen import history as history_mod
from signaltty.term.screen import repaint as repaint_mod

try:
    from signaltty.term.screen import _native
except ImportError:  # pragma: no cover - reported by test_the_native_module_is_built
    _native = None  # type: ignore[assignment]

needs_native = pytest.mark.skipif(_native is None, reason="the native module is not built")


def test_the_native_module_is_built() -> None:
    """The install (tests/run.sh: ``pip install -e .``) compiles the module; a missing one
    means the daemon runs the slow forms, which this suite would otherwise not notice."""
    assert _native is not None, (
        "signaltty/term/screen/_native.c was not compiled: install a C compiler and the "
        "Python headers, then `pip install -e .` again (the build hook prints the reason)"
    )


def test_the_daemon_uses_the_native_forms_unless_told_not_to() -> None:
    if os.environ.get("SIGNALTTY_PURE_PYTHON"):
        assert history_mod._strip is history_mod.strip_re
        assert repaint_mod._NATIVE_STRIP is None
        assert repaint_mod._NATIVE_ROWS is None
        assert repaint_mod._NATIVE_PLAN is None
        assert fastforward_mod._NATIVE_HARMLESS is None
    else:
        assert history_mod._strip is getattr(_native, "strip", None)
        assert repaint_mod._NATIVE_STRIP is getattr(_native, "strip", None)
        assert history_mod._NATIVE_SIMPLE_END is getattr(_native, "simple_end", None)
        assert repaint_mod._NATIVE_ROWS is getattr(_native, "scan_rows", None)
        assert repaint_mod._NATIVE_PLAN is getattr(_native, "plan_live", None)
        assert fastforward_mod._NATIVE_HARMLESS is getattr(_native, "harmless_end", None)


PIECES = (
    "a", "hello ", "~", " ", "\xa0", "é", "│", "中", "😀", "\ud800", "\x7f", "\x80", "\x9b",
    "\x9f", "\x00", "\x07", "\t", "\r", "\n", "\r\n", "\r\n", "\x1b", "\x1b[", "\x1b]", "\x1b\\",
    "[", "]", "m", "\\", "0", "1;2", ";", ":", "?", "<", "38;5;200", "\x1b[m", "\x1b[0m",
    "\x1b[1;31m", "\x1b[38:2::1:2:3m", "\x1b[" + "1" * 255 + "m", "\x1b[" + "1" * 256 + "m",
    "\x1b[" + "1" * 257 + "m", "\x1b]0;title\x07", "\x1b]2;t\x1b\\", "\x1b]8;;x\x07",
    "\x1b]" + "p" * 5 + "\x07", "\x1b]ab\x1bc\x07", "\x1b]é\x85\x07", "\x1b]a\x7fb\x07", "\x1b]\x1f\x07", "\x1b[K", "\x1b[5;3H",
)  # fmt: skip
OSC_MAXES = (0, 1, 4, 5, 6, MAX_OSC_PAYLOAD)


def simple_run_re(osc_max: int) -> re.Pattern[str]:
    """history's simple-run regex with another OSC payload bound."""
    return re.compile(
        history_mod._SIMPLE_RUN.pattern.replace(f"{{0,{MAX_OSC_PAYLOAD}}}", f"{{0,{osc_max}}}")
    )


RUNS = {k: simple_run_re(k) for k in OSC_MAXES}
assert RUNS[MAX_OSC_PAYLOAD].pattern == history_mod._SIMPLE_RUN.pattern
assert all(RUNS[k].pattern != history_mod._SIMPLE_RUN.pattern for k in OSC_MAXES[:-1])
# What ``strip`` does on any text (its docstring), as a regex.
STRIP_ANY = re.compile(r"\x1b\].*?(?:\x07|\x1b\\)|\x1b(?!\])[^m]*m", re.S)


def examples(n: int) -> Any:
    """Hypothesis settings of these tests: ``n`` examples, no deadline, nothing stored."""
    return settings(
        max_examples=n,
        deadline=None,
        database=None,  # nothing written into the shared checkout
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def texts() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@needs_native
@examples(4000)
@given(texts(), st.integers(-3, 400), st.sampled_from(OSC_MAXES))
def test_simple_end_is_the_regex(text: str, pos: int, osc_max: int) -> None:
    m = RUNS[osc_max].match(text, pos)
    expected = m.end() if m is not None else min(max(pos, 0), len(text))
    assert _native.simple_end(text, pos, osc_max) == expected
    if osc_max == MAX_OSC_PAYLOAD:
        assert history_mod.simple_end(text, pos) == history_mod.simple_end_re(text, pos)


@needs_native
@examples(4000)
@given(texts(), st.integers(-3, 60), st.integers(-3, 400))
def test_strip_is_the_regex(text: str, start: int, stop: int) -> None:
    lo = min(max(start, 0), len(text))
    hi = min(max(stop, 0), len(text))
    got = _native.strip(text, start, stop)
    assert got == STRIP_ANY.sub("", text[lo:hi])
    # A canonical str: the same hash and kind as the str Python builds for it.
    assert hash(got) == hash("".join(list(got)))
    # On a simple run, history's pure form; on a paint, repaint's.
    end = history_mod.simple_end_re(text, lo)
    assert _native.strip(text, lo, end) == history_mod.strip_re(text, lo, end)
    paint = re.compile(repaint_mod._PAINT).match(text, lo)
    if paint is not None:
        assert _native.strip(text, lo, paint.end()) == repaint_mod._STRIP_SGR.sub("", paint.group())


@needs_native
def test_wide_storage_kinds_and_long_runs() -> None:
    """Runs much longer than the generated ones, in each str storage kind."""
    rng = random.Random(7)
    for extra in ("", "é", "中", "😀"):
        parts = []
        for _ in range(3000):
            parts.append(rng.choice(PIECES[:9] + (extra, "\r\n", "\x1b[1;31m", "\x1b]0;t\x07")))
        text = "".join(parts)
        for pos in (0, 1, 17, len(text) // 2):
            end = history_mod.simple_end_re(text, pos)
            assert _native.simple_end(text, pos, MAX_OSC_PAYLOAD) == end
            assert _native.strip(text, pos, end) == history_mod.strip_re(text, pos, end)


@needs_native
def test_bad_arguments_raise() -> None:
    with pytest.raises(TypeError):
        _native.simple_end(b"x", 0, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _native.strip("x", 0)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="osc_max"):
        _native.simple_end("x", 0, -1)
    with pytest.raises(OverflowError):
        _native.strip("x", 0, 1 << 80)


def _streams() -> list[tuple[str, bytes]]:
    from tests.term import test_screen_differential as d

    rng = random.Random(11)
    return [
        ("sgr_lines", d.sgr_lines(rng, 500, 50).encode()),
        ("plain_lines", d.plain_lines(rng, 500, 50).encode()),
        ("tui", d.tui(rng, 40, 50, 10, clear_every=5).encode()),
        ("inplace_redraw", d.inplace_redraw(rng, 40, 50).encode()),
        ("mixed", d.mixed(rng, 50, 10).encode()),
    ]


def _feed(data: bytes) -> dict[str, Any]:
    from tests.term.test_screen_differential import observe

    screen = PyteScreen(50, 10, history_lines=200, window=2048)
    for i in range(0, len(data), 1500):
        screen.feed(data[i : i + 1500])
        screen.drain(2048)
    return observe(screen)


@needs_native
@pytest.mark.parametrize(
    ("name", "data"), _streams(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_the_screen_is_the_same_with_and_without_native(
    name: str, data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    native = _feed(data)
    with monkeypatch.context() as m:
        m.setattr(history_mod, "_strip", history_mod.strip_re)
        m.setattr(history_mod, "_NATIVE_SIMPLE_END", None)
        m.setattr(repaint_mod, "_NATIVE_STRIP", None)
        m.setattr(repaint_mod, "_NATIVE_ROWS", None)
        m.setattr(repaint_mod, "_NATIVE_PLAN", None)
        m.setattr(fastforward_mod, "_NATIVE_HARMLESS", None)
        pure = _feed(data)
    assert native["faults"] == 0
    assert native == pure


# --- repaint.scan and repaint.plan --------------------------------------------------------------

ROW_PIECES = (
    "\x1b[H", "\x1b[1;1H", "\x1b[2;5H", "\x1b[3H", "\x1b[;7H", "\x1b[0;0f", "\x1b[9999;9999H",
    "\x1b[12345H", "\x1b[2;H", "\x1b[1;2;3H", "\x1b[K", "\x1b[0K", "\x1b[00K", "\x1b[1K",
    "\x1b[2K", "\x1b[m", "\x1b[0m", "\x1b[1;31m", "\x1b[38;5;200m", "\x1b[48;2;1;2;3m",
    "\x1b[" + "1" * 256 + "m", "\x1b[" + "1" * 257 + "m", "\x1b[?2026h", "\x1b[?2026l",
    "\x1b[?25l", "\x1b[?25h", "\x1b[?1049h", "\x1b[?6h", "\x1b[4h", "\x1b[3J", "\x1b[2J", "\x1b[J",
    "\x1b[5X", "\x1b[3b", "\x1b[2C", "\x1b[A", "\x1b[6n", "\x1b[>c", "\x1b[1 q", "\x1b[1!p",
    "\x1b[" + " " * 17 + "q", "\x1b[", "\x1b", "\x1b]0;t\x07", "\x1b(B", "\x1b(0", "\x1b7",
    "ab", "hello", "x" * 9, "│", "─┼─", "⠿", "é", "\xa0", "中", "😀", "e\u0301", "\u200b",
    "\r", "\n", "\t", "\x08", "\x07", "\x0e", "\x7f", "\x9b",
    # each edge of the narrow ranges (repaint.NARROW_RANGES, _native.c is_narrow)
    "\x1f", "\x20", "\x7e", "\x9f", "\xa0", "\xff", "\u0100", "\u200f", "\u2010", "\u2027",
    "\u2028", "\u218f", "\u2190", "\u21ff", "\u2200", "\u24ff", "\u2500", "\u259f", "\u25a0",
    "\u27ff", "\u2800", "\u28ff", "\u2900", "\u202f", "\u2030", "\u205e", "\u205f",
    "\u23f3", "\u23f4", "\u23ff", "\u2400", "\u25fc", "\u25fd", "\u2721", "\u2722",
    "\u2727", "\u2728", "\u2729", "\u274b", "\u274c", "\u2757", "\u2758", "\u2794",
    "\u2795", "\u2733\ufe0f",
)  # fmt: skip
# The screen before the segment: plain, a wide character's right half on a row, a row whose
# default cell is coloured, a coloured fill, the cursor's background coloured.
PRES = (
    "",
    "\x1b[3;2H\x1b[1;32mpre\x1b[0m",
    "\x1b[2;1H中文\x1b[H",
    "\x1b[2;1H\x1b[41m\x1b[2K\x1b[0m\x1b[H",
    "\x1b[44m\x1b[2J\x1b[0m",
    "\x1b[45m",
)


def _segments(
    text: str, cols: int, rows: int, native: bool, mp: pytest.MonkeyPatch, pre: str = ""
) -> Any:
    with mp.context() as m:
        if not native:
            m.setattr(repaint_mod, "_NATIVE_ROWS", None)
            m.setattr(repaint_mod, "_NATIVE_PLAN", None)
            m.setattr(repaint_mod, "_NATIVE_STRIP", None)
        screen = PyteScreen(cols, rows, fast_forward=False)
        screen.feed(pre.encode())
        while screen.pending:
            screen.drain(4096)
        model = screen.model
        out = []
        pos = 0
        # Twice over: the second pass meets memoized CSI operations (repaint._OPS).
        for _ in range(2):
            pos = 0
            while pos < len(text):
                segment = repaint_mod.scan(model, text, pos)
                out.append((segment, bytes(repaint_mod.plan(model, segment))))
                if segment.blocker is None:
                    break
                pos = max(segment.blocker[2], pos + 1)
        return out


@needs_native
@examples(3000)
@given(
    text=st.lists(st.sampled_from(ROW_PIECES), max_size=60).map("".join),
    cols=st.integers(2, 14),
    rows=st.integers(2, 6),
    pre=st.sampled_from(PRES),
)
def test_scan_and_plan_are_the_python_loop(
    text: str, cols: int, rows: int, pre: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    native = _segments(text, cols, rows, True, monkeypatch, pre)
    assert native == _segments(text, cols, rows, False, monkeypatch, pre)


@needs_native
@pytest.mark.parametrize("cols", [3, 6])
def test_every_row_repaint_at_every_column(cols: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row repaint (CUP, paint, EL) at each column and width, written twice so that the
    first is dead or alive, after each screen state: the edges a generator rarely meets."""
    for pre in PRES:
        for lead in ("", "\x1b[2K", "\x1b[48;5;1m"):
            for col in range(1, cols + 1):
                for width in range(1, cols + 2):
                    for el in ("", "\x1b[K"):
                        row = f"\x1b[2;{col}H" + "y" * width + el
                        text = lead + row + f"\x1b[2;{col}H" + "z" * (cols - col + 1)
                        native = _segments(text, cols, 3, True, monkeypatch, pre)
                        assert native == _segments(text, cols, 3, False, monkeypatch, pre), text


@needs_native
def test_a_screen_wider_than_the_native_bound_uses_python(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\x1b[1;1Hab\x1b[K\x1b[1;1Hcd"
    wide = _segments(text, 10_001, 3, True, monkeypatch)
    assert wide == _segments(text, 10_001, 3, False, monkeypatch)
    with pytest.raises(ValueError, match="10000"):
        _native.scan_rows(text, 0, 10_001, 3, 0, 0, "", [], [], [], {}, 10)


@needs_native
def test_native_codes_match_repaint() -> None:
    assert (repaint_mod.WRITE, repaint_mod.PINNED) == (1, 2)
    assert (repaint_mod._FREE_OP, repaint_mod._EVENT_OP) == (0, 12)
    assert repaint_mod.NARROW_RANGES == (
        (0x20, 0x7E),
        (0xA0, 0xFF),
        (0x2010, 0x2027),
        (0x2030, 0x205E),
        (0x2190, 0x21FF),
        (0x23F4, 0x23FF),
        (0x2500, 0x25FC),
        (0x2722, 0x2727),
        (0x2729, 0x274B),
        (0x2758, 0x2794),
        (0x2800, 0x28FF),
    )  # fmt: skip (the same ranges are written in _native.c's is_narrow)


@needs_native
def test_native_repaint_rejects_bad_records() -> None:
    with pytest.raises(ValueError, match="outside"):
        _native.plan_live([(0, 1, 1, 0, 0, "")], [(0, 5, 0, 1)], 2, 2, b"\0\0", b"\0\0")
    with pytest.raises(ValueError, match="byte per row"):
        _native.plan_live([], [], 4, 2, b"", b"")
    with pytest.raises(ValueError, match="2 x 2"):
        _native.scan_rows("x", 0, 1, 1, 0, 0, "", [], [], [], {}, 10)
    # found by the attack pass: sizes and a cursor that overflowed the arithmetic
    with pytest.raises(ValueError, match="cursor"):
        _native.scan_rows("ab", 0, 80, 24, 2**63 - 1, 0, "", [], [], [], {}, 10)
    with pytest.raises(ValueError, match="2 x 2"):
        _native.scan_rows("\x1b[1;1H\x1b[K", 0, 2**63 - 1, 24, 0, 0, "", [], [], [], {}, 10)
    with pytest.raises(ValueError, match="bad screen size"):
        _native.plan_live([], [], 100_000, 100_000, b"", b"")
    # a write's kind too large for a C long: a clean answer, no exception left set
    assert _native.plan_live([(0, 1, 2**100, 0, 0, "")], [(0, 0, 0, 1)], 1, 1, b"\0", b"\0") == (
        bytearray(b"\x01")
    )
    # a kind that equals PINNED the way Python compares (repaint.plan: ``write[2] == PINNED``)
    assert _native.plan_live([(0, 1, 2.0, 0, 0, "")], [], 1, 1, b"\0", b"\0") == bytearray(b"\x01")
    with pytest.raises(TypeError, match="ints"):
        _native.plan_live([(0, 1, 1, 0, 0, "")], [(0, 0, 0, 1.0)], 1, 1, b"\0", b"\0")


@needs_native
def test_a_memoized_operation_that_runs_code_is_not_trusted() -> None:
    """An ``ops`` value whose items are not exact ints (their ``__index__`` could free the
    tuple being read; attack pass): the native loop leaves the element to Python."""
    ops: dict[str, Any] = {}

    class Evil:
        def __index__(self) -> int:
            ops.clear()
            return 0

    ops["\x1b[6n"] = (Evil(), 0, 0, "")
    assert _native.scan_rows("\x1b[6n", 0, 80, 24, 0, 0, "", [], [], [], ops, 100) == (0, 0, 0, "")
    assert "\x1b[6n" in ops  # never called


# --- fastforward._HARMLESS -----------------------------------------------------------------------

HARMLESS_PIECES = (
    "a", "text ", "é", "中", "😀", "\ud800", "\x00", "\x07", "\x0d", "\x0e", "\x0f", "\x10",
    "\x18", "\x1a", "\x1c", "\x7f", "\x80", "\x9f", "\xa0", "\x1b", "\x1b[", "[", "m", "J",
    "0", "2", "3", "00", ";", "?", "<", "!", "p", " ", "\x1b[m", "\x1b[1;31m", "\x1b[?25m",
    "\x1b[5;5H", "\x1b[K", "\x1b[2K", "\x1b[J", "\x1b[0J", "\x1b[1J", "\x1b[2J", "\x1b[02J",
    "\x1b[002;1J", "\x1b[3J", "\x1b[23J", "\x1b[32J", "\x1b[;J", "\x1b[2;J", "\x1b[g", "\x1b[3g",
    "\x1b[h", "\x1b[4l", "\x1b[1;5r", "\x1b[s", "\x1b[u", "\x1b[t", "\x1b[q", "\x1b[1:2H",
    "\x1b[?25l", "\x1b[?1049h", "\x1b[?2J", "\x1b[?1;2K", "\x1b[?1$p", "\x1b[?m", "\x1b[?:1K",
    "\x1b[>c", "\x1b[<0;1;2M", "\x1b[=1c", "\x1b[>" + "1" * 255 + "c", "\x1b[>" + "1" * 256 + "c",
    "\x1b[" + "1" * 256 + "H", "\x1b[" + "1" * 257 + "H", "\x1b[" + "1" * 256 + "m",
    "\x1b[1 q", "\x1b[!p", "\x1b[1!p", "\x1b[!!p", "\x1b[" + " " * 16 + "q", "\x1b[" + " " * 17 + "q",
    "\x1b[1 ", "\x1b7", "\x1b8", "\x1bH", "\x1bc", "\x1bD", "\x1bM", "\x1b=", "\x1b\\",
    "\x1b/", "\x1b(B", "\x1b#8", "\x1b]0;t\x07", "\x1b^", "\x1bPq#0\x1b\\", "\x1bXsos\x1b\\",
    "\x1b_apc\x18\x1b\\", "\x1b^pm\x1a", "\x1bP\x1bx", "\x1b`", "\x1bb", "\x1bd", "\x1b~",
    "\x1b\x7f", "\x1b\x1b",
)  # fmt: skip


@needs_native
@examples(5000)
@given(st.lists(st.sampled_from(HARMLESS_PIECES), max_size=40).map("".join), st.integers(-2, 300))
def test_harmless_end_is_the_regex(text: str, pos: int) -> None:
    m = fastforward_mod._HARMLESS.match(text, pos)
    assert m is not None
    assert _native.harmless_end(text, pos) == m.end()


@needs_native
def test_harmless_end_every_escape_pair() -> None:
    """ESC followed by each character up to U+00FF, then by each CSI final and marker."""
    for a in range(0x100):
        for tail in ("", "x", "\x1b\\", "a\x1ab\x1b\\", "a\x18\x1b\\", "a\x1bb\x1b\\"):
            text = "ok\x1b" + chr(a) + tail
            m = fastforward_mod._HARMLESS.match(text, 0)
            assert m is not None
            assert _native.harmless_end(text, 0) == m.end(), repr(text)
    for marker in ("", "?", "<", "0", "2", "3", "1;", "!"):
        for final in range(0x20, 0x80):
            text = f"\x1b[{marker}{chr(final)}z"
            m = fastforward_mod._HARMLESS.match(text, 0)
            assert m is not None
            assert _native.harmless_end(text, 0) == m.end(), repr(text)


# ---------------------------------------------------------------- osc.py's quiet check, repaint's stubs

LOUD_PIECES = [
    b"\x1b", b"0", b"[", b"5", b"6", b"]", b"P", b"X", b"^", b"_", b"c", b"n", b"\x07",
    b"\x01", b"\x02", b"\x00", b"\x7f", b"\x18", b"\x9b", b"\xff", b"a", b"m", b";", b"\r\n",
]  # fmt: skip


def _loud_python(chunk: bytes) -> bool:
    return b"\x07" in chunk or b"\x01\x02" in chunk.translate(
        osc_mod._QUIET_TABLE, osc_mod._QUIET_DELETE
    )


@needs_native
@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(LOUD_PIECES), max_size=30).map(b"".join))
def test_loud_is_the_translation(chunk: bytes) -> None:
    assert _native.loud(chunk) is _loud_python(chunk)


@needs_native
def test_loud_every_byte_pair_and_the_daemon_uses_it() -> None:
    for a in range(256):
        for b in range(256):
            for chunk in (bytes([a, b]), bytes([a, 1, 0x7F, b]), bytes([a, 0x1B, b])):
                assert _native.loud(chunk) is _loud_python(chunk), chunk
    assert _native.loud(b"") is False
    with pytest.raises(TypeError):
        _native.loud("text")  # type: ignore[arg-type]
    expected = None if os.environ.get("SIGNALTTY_PURE_PYTHON") else _native.loud
    assert osc_mod.OscScanner()._loud is expected


class _Str(str):
    pass


@needs_native
def test_has_stub_is_the_python_check() -> None:
    from pyte.screens import Char

    def python(row: dict[int, Any]) -> bool:
        return "" in map(repaint_mod._DATA, row.values())

    rng = random.Random(5)
    for _ in range(2000):
        row = {
            x: Char(rng.choice(["a", "", "字", " ", _Str(""), _Str("b")]), "red")
            for x in range(rng.randint(0, 6))
        }
        assert _native.has_stub(row) is python(row), row
    assert _native.has_stub({0: ("", "x")})
    assert not _native.has_stub({0: ("a",)})
    assert _native.has_stub({0: [""]})
    assert not _native.has_stub({0: "ab"})
    with pytest.raises(TypeError):
        _native.has_stub([Char("")])  # type: ignore[arg-type]
    with pytest.raises((TypeError, IndexError)):
        _native.has_stub({0: ()})
