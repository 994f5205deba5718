"""Differential test of the screen's fast path (Spec: agents.md §7.6; issue 12 "Correctness").

``PyteScreen`` skips most output (lazy window, line printer, cuts at clears of the alternate
screen). Every result the daemon reads must equal the reference — the same hardened pyte model
fed every byte (``PyteScreen(fast_forward=False)``) — whatever the chunking and whenever it is
read:

* rows, every cell's character and attributes (what screen rules and snapshots use), the main
  grid behind the alternate screen, ``snapshot_bytes``, ``tail``;
* the cursor (also a pending wrap), its attributes and visibility, the alternate screen flag,
  history, title and icon, modes, margins, tab stops, charsets, the DECSC slot and REP's
  character (they decide what later output does);
* the reply to every cursor-position query (``CSI 6 n``) at the byte where it was asked, done
  the way the pump does it (feed up to the query, drain, read the cursor);
* what the sweep sees: after draining all pending bytes, ``peek_rows`` equals the reference
  rows and ``take_dirty_rows`` reports every row that changed.

Streams: the four flood kinds (plain lines, SGR-heavy lines, a full-screen TUI that clears,
a TUI that only repaints rows), mixtures of them, every real screen capture in
tests/fixtures/real-agents, and 10⁴ generated adversarial streams (hypothesis).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from signaltty.term import osc
from signaltty.term.screen import PyteScreen
from signaltty.term.screen import history as history_mod

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real-agents"
CAPTURES = sorted(FIXTURES.glob("*/*_ansi.txt"))
ESC = "\x1b"


# --- observing a screen ----------------------------------------------------------------------


def _saved(model: Any) -> Any:
    s = model._saved
    if s is None:
        return None
    c = s.cursor
    return (
        c.x,
        c.y,
        c.attrs,
        c.hidden,
        id(s.g0_charset),
        id(s.g1_charset),
        s.charset,
        s.origin,
        s.wrap,
    )


def observe(screen: PyteScreen) -> dict[str, Any]:
    """Everything a reader can get from ``screen`` (all pending bytes applied)."""
    cols, rows = screen.size
    out: dict[str, Any] = {
        "lines": screen.lines(),
        "cursor": screen.cursor,
        "cursor_hidden": screen.cursor_hidden,
        "alt_screen": screen.alt_screen,
        "title": screen.title,
        "tail": screen.tail(100_000),
        "snapshot": screen.snapshot_bytes(),
    }
    m = screen.model
    out["cells"] = [[tuple(m.cell(y, x)) for x in range(cols)] for y in range(rows)]
    main = m.main_grid
    out["main"] = [
        [tuple(main[y][x]) if y in main else tuple(main.fill) for x in range(cols)]
        for y in range(rows)
    ]
    out["main_fill"] = tuple(m.buffer.fill)
    out["cursor_raw"] = (m.cursor.x, m.cursor.y, m.cursor.attrs)
    out["history"] = list(m.history)
    out["icon"] = m.icon_name
    out["mode"] = sorted(m.mode)
    out["margins"] = m.margins
    out["tabstops"] = sorted(m.tabstops)
    out["charsets"] = (id(m.g0_charset), id(m.g1_charset), m.charset)
    out["saved"] = _saved(m)
    out["last_char"] = m._last_char
    if m._main is not None:
        c = m._main[1]
        out["main_cursor"] = (c.x, c.y, c.attrs)
    out["faults"] = screen.faults
    return out


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


# --- driving both screens like the pump and the sweep do --------------------------------------


def cursor_queries(data: bytes) -> list[int]:
    """Offsets just after each ``CSI 6 n`` the OSC scanner reports (the pump's view)."""
    scanner = osc.OscScanner(hostname="h")
    items = scanner.feed(data)
    return [i.offset for i in items if isinstance(i, osc.Query) and i.kind == osc.QUERY_DSR_CURSOR]


class Run:
    """Feeds one stream to the fast screen and the reference and checks them as it goes."""

    def __init__(self, cols: int, rows: int, history: int, window: int) -> None:
        self.fast = PyteScreen(cols, rows, history_lines=history, window=window)
        self.ref = PyteScreen(cols, rows, history_lines=history, fast_forward=False)
        self.checks = 0

    def check(self, where: str) -> None:
        a, b = observe(self.fast), observe(self.ref)
        bad = diff(a, b)
        assert not bad, f"{where}: differs in {bad}: " + "; ".join(
            f"{k}: fast={a.get(k)!r:.300} ref={b.get(k)!r:.300}" for k in bad[:3]
        )
        self.checks += 1

    def sweep(self, where: str) -> None:
        """What the sweep does: drain everything pending, then read rows without applying."""
        before = self.fast.peek_rows()
        while self.fast.pending:
            self.fast.drain(2048)
        dirty = self.fast.take_dirty_rows()
        rows = self.fast.peek_rows()
        ref_rows = self.ref.lines()
        assert rows == ref_rows, f"{where}: peek_rows differs from the reference"
        if dirty is not None:
            changed = {y for y, (x, z) in enumerate(zip(before, rows, strict=True)) if x != z}
            assert changed <= dirty, f"{where}: dirty rows {dirty} miss {changed - dirty}"
        self.checks += 1

    def reply(self, where: str) -> None:
        """The cursor report the pump writes right after a query."""
        while self.fast.pending:
            self.fast.drain(2048)
        a, b = self.fast.cursor, self.ref.cursor
        assert a == b, f"{where}: cursor report {a} != reference {b}"
        self.checks += 1

    def feed(self, data: bytes, rng: random.Random, *, reads: float = 0.02) -> None:
        queries = set(cursor_queries(data))
        cuts = sorted(
            {0, len(data)}
            | queries
            | {
                rng.randrange(len(data) + 1)
                for _ in range(max(1, len(data) // rng.choice((64, 512, 4096))))
            }
        )
        forced = set(rng.sample(cuts[1:], min(3, len(cuts) - 1)))
        for a, b in itertools.pairwise(cuts):
            chunk = data[a:b]
            self.fast.feed(chunk)
            self.ref.feed(chunk)
            # The drain task: a few 2 KiB pieces, sometimes none (the lazy window fills).
            for _ in range(rng.randrange(4)):
                self.fast.drain(2048)
            if b in queries:
                self.reply(f"query at byte {b}")
            r = rng.random()
            if r < reads or b in forced:
                self.check(f"read at byte {b}")
            elif r < 2 * reads:
                self.sweep(f"sweep at byte {b}")
        self.sweep("end")
        self.check("end")


def run(
    data: bytes,
    *,
    cols: int,
    rows: int,
    history: int = 50,
    window: int = 4096,
    seed: int = 0,
    reads: float = 0.02,
) -> Run:
    r = Run(cols, rows, history, window)
    r.feed(data, random.Random(seed), reads=reads)
    return r


# --- stream classes ---------------------------------------------------------------------------

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "build", "test", "error"]


def sgr(rng: random.Random) -> str:
    return rng.choice(
        (
            f"{ESC}[38;5;{rng.randrange(256)}m",
            f"{ESC}[1;38;2;{rng.randrange(256)};{rng.randrange(256)};{rng.randrange(256)}m",
            f"{ESC}[{rng.choice((31, 32, 33, 90, 97))}m",
            f"{ESC}[48;5;{rng.randrange(256)}m",
            f"{ESC}[{rng.choice((1, 2, 3, 4, 7))}m",
            f"{ESC}[0m",
            f"{ESC}[m",
            f"{ESC}[0;1;{rng.choice((34, 35))}m",
            f"{ESC}[38:2::10:20:30m",
        )
    )


def plain_lines(rng: random.Random, n: int, cols: int) -> str:
    out = []
    for i in range(n):
        r = rng.random()
        if r < 0.05:
            line = ""
        elif r < 0.1:
            line = "x" * cols  # exactly full: pending wrap, then CR LF
        elif r < 0.2:
            line = "w" * rng.randint(cols + 1, 3 * cols)  # wraps
        else:
            line = f"{i:06d} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12)))
        out.append(line + "\r\n")
    return "".join(out)


def sgr_lines(rng: random.Random, n: int, cols: int) -> str:
    out = []
    for i in range(n):
        parts = [f"{ESC}[2;37m{i:06d}{ESC}[0m "]
        for _ in range(rng.randint(0, 10)):
            parts.append(f"{sgr(rng)}{rng.choice(WORDS)}{ESC}[0m ")
        if rng.random() < 0.1:
            parts.append(f"{ESC}]0;title {i}\x07")
        if rng.random() < 0.05:
            parts.append(sgr(rng))  # attributes left on across the line end
        out.append("".join(parts) + "\r\n")
    return "".join(out)


def tui_row(rng: random.Random, cols: int) -> str:
    inner = max(cols - 2, 1)
    text = " ".join(rng.choice(WORDS) for _ in range(inner))[:inner].ljust(inner)
    cut = rng.randint(0, inner)
    return f"{ESC}[38;5;244m│{sgr(rng)}{text[:cut]}{sgr(rng)}{text[cut:]}{ESC}[0m│"[: 4 * cols + 60]


def tui(
    rng: random.Random,
    frames: int,
    cols: int,
    rows: int,
    *,
    clear_every: int | None,
    decsc: bool = True,
) -> str:
    """Frames on the alternate screen; ``clear_every``: a full clear each N frames (None: the
    TUI repaints rows with CUP + EL and never clears); ``decsc``: a status line drawn between
    a cursor save and restore in some frames."""
    out = [f"{ESC}[?1049h{ESC}[?25l"]
    for f in range(frames):
        out.append(f"{ESC}[?2026h")
        if clear_every is not None and f % clear_every == 0:
            out.append(
                rng.choice(
                    (
                        f"{ESC}[H{ESC}[2J",
                        f"{ESC}[2J{ESC}[H",
                        f"{ESC}[1;1H{ESC}[2J",
                        f"{ESC}[2J{ESC}[3;2H",
                    )
                )
            )
            out.append("\r\n".join(tui_row(rng, cols) for _ in range(rows - 1)))
        else:
            for r in sorted(rng.sample(range(1, rows + 1), min(rows, rng.randint(1, 4)))):
                out.append(f"{ESC}[{r};1H{tui_row(rng, cols)}{ESC}[K")
        if decsc and rng.random() < 0.1:
            out.append(f"{ESC}7{ESC}[{rows};1H{ESC}[7m status {f} {ESC}[0m{ESC}8")
        if rng.random() < 0.05:
            out.append(f"{ESC}]2;frame {f}{ESC}\\")
        if rng.random() < 0.05:
            out.append(f"{ESC}(B{ESC}[m")
        out.append(f"{ESC}[{rows};1H{ESC}[7m{f'frame {f}'.ljust(cols - 1)}{ESC}[0m{ESC}[?2026l")
    out.append(f"{ESC}[?25h{ESC}[?1049l")
    return "".join(out)


def inplace_redraw(rng: random.Random, frames: int, cols: int) -> str:
    """An agent's status box on the main screen, erased upwards (``EL 2``, ``CUU``) and
    printed again every frame, with new output lines now and then (Claude Code style)."""
    out = [plain_lines(rng, 30, cols)]
    height = 0
    for f in range(frames):
        if height:
            out.append("\r" + f"{ESC}[2K{ESC}[1A" * (height - 1) + f"{ESC}[2K{ESC}[G")
        if rng.random() < 0.05:
            out.append(plain_lines(rng, rng.randint(1, 4), cols))
        box = [
            f"{ESC}[38;5;174m✻ {rng.choice(WORDS)}… ({f}s){ESC}[39m",
            "",
            f"{ESC}[2m╭{'─' * (cols - 2)}╮{ESC}[22m",
            f"│ > {rng.choice(WORDS)}".ljust(cols - 1) + "│",
            f"╰{'─' * (cols - 2)}╯",
        ][: rng.randint(2, 5)]
        out.append("\r\n".join(box))
        height = len(box)
    return "".join(out)


def mixed(rng: random.Random, cols: int, rows: int) -> str:
    parts = [
        plain_lines(rng, 120, cols),
        tui(rng, 30, cols, rows, clear_every=4),
        sgr_lines(rng, 80, cols),
        f"{ESC}[H{ESC}[2J",  # a main-screen clear
        plain_lines(rng, 60, cols),
        f"{ESC}[6n",
        tui(rng, 20, cols, rows, clear_every=None),
        f"{ESC}[3J",
        sgr_lines(rng, 60, cols),
        f"{ESC}[6n\r\nprompt$ ",
    ]
    return "".join(parts)


# Characters at each edge of repaint.NARROW_RANGES, in them (with agents' spinner and prompt
# glyphs) and just out of them (wide, zero-width, combining).
EDGE_NARROW = (
    "\u2027\u202f\u2030\u203a\u205e\u23f4\u23f5\u23ff\u25a0\u25cf\u25fc\u2722\u2727"
    "\u2729\u2733\u2736\u273b\u273d\u274b\u2758\u276f\u2794\u28ff\u00b7"
)
EDGE_ODD = "\u2028\u205f\u2060\u23f3\u2400\u25fd\u2721\u2728\u274c\u2757\u2795\ufe0f\u0301"


def glyph_repaint(rng: random.Random, n: int, cols: int, rows: int) -> str:
    """Spinner and status lines repainted in place (CUP, glyphs, sometimes EL) on the main
    screen, then on the alternate one, with characters from each edge of the narrow ranges;
    one line in 20 holds a character just outside them."""
    out = []
    for i in range(n):
        if i == n // 2:
            out.append(f"{ESC}[?1049h")
        y = rng.randrange(1, min(rows, 4) + 1)
        glyphs = "".join(rng.choice(EDGE_NARROW) for _ in range(rng.randint(1, 6)))
        if rng.random() < 0.05:
            glyphs += rng.choice(EDGE_ODD)
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4)))
        line = f"{glyphs} Doing… ({i}s · ↓ {i * 7} tokens) {words}"[: max(1, cols // 2)]
        x = rng.choice((1, 1, 2, cols // 3))
        erase = f"{ESC}[K" if rng.random() < 0.5 else ""  # without: a shorter line shows the tail
        out.append(f"{ESC}[{y};{x}H{sgr(rng) if rng.random() < 0.3 else ''}{line}{erase}")
        if rng.random() < 0.5:
            out.append(f"{ESC}[{rows};3H")
        else:  # the cursor stays where the glyphs left it: the next text goes on from there
            out.append(rng.choice(EDGE_NARROW) + rng.choice(WORDS))
    return "".join(out)


STREAMS: dict[str, Callable[[random.Random, int, int], str]] = {
    "plain": lambda rng, c, r: plain_lines(rng, 1500, c),
    "sgr": lambda rng, c, r: sgr_lines(rng, 800, c),
    "tui_clear": lambda rng, c, r: tui(rng, 300, c, r, clear_every=5),
    "tui_repaint": lambda rng, c, r: tui(rng, 200, c, r, clear_every=None),
    "inplace_redraw": lambda rng, c, r: inplace_redraw(rng, 300, c),
    "glyph_repaint": lambda rng, c, r: glyph_repaint(rng, 600, c, r),
    "mixed": mixed,
}


@pytest.mark.parametrize("kind", sorted(STREAMS))
@pytest.mark.parametrize(
    ("cols", "rows", "window"), [(40, 10, 1024), (80, 24, 8192), (33, 7, 131072)]
)
def test_stream_classes(kind: str, cols: int, rows: int, window: int) -> None:
    rng = random.Random(f"{kind}-{cols}")
    data = STREAMS[kind](rng, cols, rows).encode()
    r = run(data, cols=cols, rows=rows, history=60, window=window, seed=cols)
    assert r.checks >= 3


def test_fast_path_skips_what_it_should() -> None:
    """The fast path is real: on the stream classes it can skip, pyte draws a small part."""
    rng = random.Random(7)
    cases = {
        "plain": plain_lines(rng, 6000, 80),
        "sgr": sgr_lines(rng, 3000, 80),
        # A cursor save in the skipped part blocks a cut (its position needs the drawing).
        "tui_clear": tui(rng, 600, 80, 24, clear_every=5, decsc=False),
        # Frame elision: rows rewritten later in the window are not drawn.
        "tui_repaint": tui(rng, 1500, 80, 24, clear_every=None, decsc=False),
        "inplace_redraw": inplace_redraw(rng, 3000, 80),
    }
    for kind, text in cases.items():
        screen = PyteScreen(80, 24, window=16384)
        data = text.encode()
        for i in range(0, len(data), 4096):
            screen.feed(data[i : i + 4096])
            while screen.pending:
                screen.drain(2048)
        screen.lines()
        stats = screen.fast_forward_stats
        assert stats["skipped"] > 0.8 * len(text), (kind, stats)
        assert stats["drawn"] < 0.2 * len(text), (kind, stats)
        assert screen.faults == 0


def test_held_text_stays_bounded_and_nothing_is_lost() -> None:
    """Held text never exceeds the window plus one drained piece; what cannot be skipped is
    drawn (committed), not kept; every byte fed ends up applied or skipped."""
    rng = random.Random(11)
    window = 8192
    for text in (plain_lines(rng, 4000, 80), tui(rng, 400, 80, 24, clear_every=None)):
        screen = PyteScreen(80, 24, window=window)
        data = text.encode()
        for i in range(0, len(data), 65536):
            screen.feed(data[i : i + 65536])
            while screen.pending:
                screen.drain(2048)
                assert screen._lazy is not None
                assert screen._lazy.held <= window + 2048
        screen.lines()
        stats = screen.fast_forward_stats
        assert stats.get("skipped", 0) + stats.get("drawn", 0) == len(text), stats
        assert screen._lazy.held == 0
        assert screen._lazy.committed == 0


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_real_captures(path: Path) -> None:
    raw = path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    # Alone, and scrolled through history several times, and inside the alternate screen.
    for data in (raw, raw * 4, b"\x1b[?1049h" + (b"\x1b[H\x1b[2J" + raw) * 3 + b"\x1b[?1049l"):
        for window in (512, 65536):
            run(
                data,
                cols=120,
                rows=40,
                history=200,
                window=window,
                seed=len(data) + window,
                reads=0.05,
            )


def test_cursor_reports_at_the_byte_asked() -> None:
    rng = random.Random(3)
    parts = []
    for _ in range(400):
        parts.append(plain_lines(rng, rng.randint(0, 30), 30))
        parts.append(
            rng.choice(
                ("\x1b[6n", "ab\x1b[6n", "\x1b[?1049h\x1b[H\x1b[2Jxy\x1b[6n", "\x1b[?1049l\x1b[6n")
            )
        )
    data = "".join(parts).encode()
    r = run(data, cols=30, rows=6, history=20, window=256, seed=1)
    assert r.checks >= 400


# --- named cases (the research's list, and what fuzzing found) ------------------------------------

LINES = "".join(f"line {i}\r\n" for i in range(40))
CLEAR = "\x1b[H\x1b[2J"
REPAINT = "".join(
    f"\x1b[{r};1H\x1b[3{r}mrow {r} frame {f}\x1b[0m\x1b[K" for f in range(4) for r in (1, 3, 2)
)
NAMED: dict[str, tuple[str, int, int]] = {
    # (stream, cols, rows); each runs amid line floods and clears so the fast path is engaged.
    "esc_esc_clear": (LINES + "\x1b\x1b[2J" + LINES, 20, 5),
    "osc_title_with_esc_x": (
        "\x1b[?1049h" + CLEAR + "a\x1b]0;t\x1bxb\x07" + CLEAR + "z" + LINES,
        20,
        5,
    ),
    "colon_sgr": (LINES + "\x1b[38:2::255:0:0mred\x1b[4:3mcurly\r\n" + LINES, 20, 5),
    "c0_inside_csi": (
        LINES + "\x1b[1\r2mbold?\r\n" + LINES + "\x1b[?1049h\x1b[?10\r49h" + CLEAR + "x",
        20,
        5,
    ),
    "wide_at_last_column": (LINES + "abc中\r\n" + "x" * 19 + "中\r\n" + LINES, 20, 5),
    "combining_at_column_0": (LINES + "\u0301e\u0301\r\n" + LINES, 20, 5),
    "lf_only": ("".join(f"lf {i}\n" for i in range(60)) + LINES, 20, 5),
    "decawm_off_long_lines": (
        "\x1b[?7l" + "".join("y" * 50 + "\r\n" for _ in range(30)) + "\x1b[?7h" + LINES,
        20,
        5,
    ),
    "irm": ("\x1b[4h" + LINES + "ab\rX\r\n" + "\x1b[4l" + LINES, 20, 5),
    "lnm": ("\x1b[20h" + "".join(f"n {i}\n" for i in range(30)) + "\x1b[20l" + LINES, 20, 5),
    "scroll_region_il_dl": (
        LINES + "\x1b[2;4r\x1b[3H\x1b[2L\x1b[1M" + LINES + "\x1b[r" + LINES,
        20,
        5,
    ),
    "c1_csi": (LINES + "\u009b2J\u009bHc1\r\n" + LINES, 20, 5),
    "empty_param_margins_in_alt": ("\x1b[?1049h\x1b[1;2r\x1b[;r" + CLEAR + LINES + CLEAR, 3, 5),
    "zero_width_row_above_fold": ("xx\u200b \u00e9\u00e9\u00e9\u2764\ufe0f\r\n\r\n" + LINES, 7, 5),
    "rep_after_clear": ("\x1b[?1049hab\x1b[31mq" + CLEAR + "\x1b[5b" + CLEAR + "\x1b[3b", 20, 5),
    "rep_after_fold": (LINES + "\x1b[4b", 20, 5),
    "decsc_in_skipped_part": ("\x1b[?1049h\x1b[3;3H\x1b7" + CLEAR + "x" + CLEAR + "\x1b8y", 20, 5),
    "decrc_without_save": ("\x1b[?1049h\x1b[31m\x1b8" + CLEAR + "x", 20, 5),
    "tab_stop_set_then_clear": (
        "\x1b[?1049h\x1b[5G\x1bH" + CLEAR + "\ta\x1b[3g" + CLEAR + "\tb",
        20,
        5,
    ),
    "dec_graphics_then_rep": ("\x1b[?1049h\x1b(0q" + CLEAR + "\x1b[2b\x1b(B" + CLEAR + "x", 20, 5),
    "so_si": ("\x1b[?1049h\x1b)0\x0eqq\x0f" + CLEAR + "\x0eq\x1b[2b" + CLEAR, 20, 5),
    "ed3_in_alt": (LINES + "\x1b[?1049h" + CLEAR + "\x1b[3J" + CLEAR + "\x1b[?1049l", 20, 5),
    "ris_in_alt": ("\x1b[?1049h" + CLEAR + "\x1bc" + LINES, 20, 5),
    "decstr_in_alt": (
        "\x1b[?1049h\x1b[4h\x1b[31m\x1b7" + CLEAR + "\x1b[!p" + CLEAR + "\x1b8z",
        20,
        5,
    ),
    "decom_home": ("\x1b[?1049h\x1b[2;4r\x1b[?6h" + CLEAR + "x" + CLEAR + "y", 20, 5),
    "exactly_full_lines": (
        "".join("z" * 20 + "\r\n" for _ in range(30)) + "w" * 40 + "\r\n" + LINES,
        20,
        5,
    ),
    "coloured_erase_then_lines": (
        "\x1b[44m" + CLEAR + "\x1b[0m" + LINES + "\x1b[42m" + LINES,
        20,
        5,
    ),
    "decaln_then_lines": ("\x1b#8" + LINES, 20, 5),
    "title_in_lines": ("".join(f"\x1b]0;t{i}\x07l{i}\r\n" for i in range(30)), 20, 5),
    # Frame elision (repaint.py): rows rewritten in place, never cleared.
    "repaint_rows_el": ("\x1b[?1049h" + REPAINT * 3, 20, 5),
    "repaint_main_screen": (LINES + REPAINT * 3 + LINES, 20, 5),
    "repaint_full_row_then_el": ("\x1b[?1049h" + ("\x1b[2;1H" + "f" * 20 + "\x1b[K") * 4, 20, 5),
    "repaint_pending_wrap_kept": ("\x1b[?1049h" + ("\x1b[3;1H\x1b[33m" + "g" * 20) * 3, 20, 5),
    "repaint_rep_after_dead_write": (
        "\x1b[?1049h\x1b[1;1Hab\x1b[1;1H\x1b[31mxy\x1b[1;1H\x1b[Kq\x1b[2b" * 2,
        20,
        5,
    ),
    "repaint_wide_char_row": (
        "\x1b[?1049h\x1b[2;1Hab中cd" + ("\x1b[2;4Hz\x1b[2;3Hy\x1b[2;4Hw") * 3,
        20,
        5,
    ),
    "repaint_coloured_erase": (
        "\x1b[?1049h" + ("\x1b[44m\x1b[2;5H\x1b[K\x1b[0m\x1b[2;1Habc\x1b[42m\x1b[X") * 3,
        20,
        5,
    ),
    "repaint_ed2_sets_fill": (LINES + ("\x1b[45m\x1b[2Jab\x1b[0m\x1b[1;1Hcd\x1b[J") * 3, 20, 5),
    "repaint_relative_moves": (
        "\x1b[?1049h"
        + ("\x1b[3;3Hab\x1b[A\x1b[2Dcd\x1b[B\rxy\x1b[Cz\x08w\tq\x1b[E\x1b[F\x1b[5G\x1b[2d.") * 4,
        20,
        5,
    ),
    "repaint_modes_and_titles_skipped": (
        "\x1b[?1049h"
        + "".join(
            f"\x1b[1;1Hrow{i}\x1b[K\x1b[?25l\x1b[?7l\x1b]2;t{i}\x07\x1b[?2004h\x1b[?25h\x1b[?7h"
            for i in range(6)
        ),
        20,
        5,
    ),
    "repaint_ed3_skipped": (LINES + "\x1b[1;1Hx\x1b[K\x1b[3J\x1b[1;1Hy\x1b[K" * 2, 20, 5),
    "repaint_scroll_region": (
        LINES
        + "\x1b[2;4r"
        + ("\x1b[4;1Hab\x1b[K\n\x1b[4;1Hcd\x1b[K\x1bM\x1b[2;1Hz") * 3
        + "\x1b[r",
        20,
        5,
    ),
    "repaint_barriers": (
        "\x1b[?1049h"
        + "\x1b[1;1Hab\x1b7\x1b[1;1Hcd\x1b8e\x1b[1;1H\x1b[2Lfg\x1b[1;1H\x1b[1Phi\x1b[1;1H\x1b(0qq"
        + "\x1b(B\x1b[1;1H\x1b[4hjk\x1b[4l\x1b[1;1H\x1b[20hl\n\x1b[20l\x1b[1;1Hmn\x1b[Kop",
        20,
        5,
    ),
    "repaint_ed_partial": (
        "\x1b[?1049h" + ("\x1b[3;4Hab\x1b[1J\x1b[2;2Hcd\x1b[0J\x1b[4;1Hef\x1b[2K") * 3,
        20,
        5,
    ),
    # Found by fuzzing: a G1 designation back to the one the segment started with.
    "repaint_g1_designated_back": (
        "\x1b[?1049h" + ("\x1b[1;1Hab\x1b[K\x1b)B\x1b[1;1Hk\x1b[K\x1b)0\x1b[1;1Hm\x1b[K") * 2,
        20,
        5,
    ),
    "repaint_non_ascii_digit": (
        "\x1b[?1049h" + ("\x1b[2;1Hab\x1b[K\x1b[\u0661H\x1b[2;1Hc\x1b[K\x1b[3;\u0662Hd") * 2,
        20,
        5,
    ),
    # Identical mode events in a skipped stretch: only the last of each is replayed, so
    # the order of the last ones decides (cursor hidden at the end, DECSCNM off, ED 3).
    "repaint_mode_events_collapsed": (
        "\x1b[?1049h"
        + (
            "\x1b[?2026h\x1b[?25l\x1b[1;1Hab\x1b[K\x1b[?25h\x1b[?5h\x1b[3J\x1b[2;1Hc"
            "\x1b[?5l\x1b[?2026l"
        )
        * 4
        + "\x1b[?25l\x1b[1;1Hz\x1b[?25h\x1b[1;1Hq\x1b[?25l\x1b[1;1Hw\x1b[K",
        20,
        5,
    ),
    # The paint after a CUP takes only the narrow ranges: a narrow character outside them,
    # a wide one and a combining mark end it, and the paint element checks them.
    "repaint_cup_paint_outside_ranges": (
        "\x1b[?1049h"
        + ("\x1b[2;1Hab\u03b1\u03b2\x1b[K\x1b[2;1Hx\u4e2dy\x1b[K\x1b[3;5H\u00e9\u0301z\x1b[3;1Hk")
        * 3,
        20,
        5,
    ),
    "repaint_pending_wrap_moves": (
        "\x1b[?1049h" + ("\x1b[2;1H" + "h" * 20 + "\x1b[A\x1b[3;1H" + "i" * 20 + "\x1b[2K") * 3,
        20,
        5,
    ),
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_cases(name: str) -> None:
    text, cols, rows = NAMED[name]
    data = text.encode("utf-8")
    for window in (16, 64, 4096):
        for history in (0, 3, 50):
            r = Run(cols, rows, history, window)
            rng = random.Random(window + history)
            r.feed(data, rng, reads=0.3)
            # One byte at a time too: every split inside a sequence or a UTF-8 character.
            r = Run(cols, rows, history, window)
            for i in range(len(data)):
                r.fast.feed(data[i : i + 1])
                r.ref.feed(data[i : i + 1])
                r.fast.drain(1 + i % 7)
            r.check("one byte at a time")


# --- mutations: the harness catches a wrong fast path ------------------------------------------


def test_harness_catches_a_short_kept_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keeping fewer lines for pyte than scroll the placeholder rows away must be caught."""
    real = history_mod.plan

    def short(screen: Any, text: str, pos: int) -> Any:
        found = real(screen, text, pos)
        if found.kind != "fold":
            return found
        nxt = text.find("\r\n", found.upto)
        extra = history_mod.strip_re(text, found.upto, nxt)
        return found._replace(upto=nxt + 2, lines=[*found.lines, extra])

    monkeypatch.setattr(history_mod, "plan", short)
    data = sgr_lines(random.Random(1), 400, 40).encode()
    # Caught by what it changes (the screen), not by a fault in the mutation itself.
    with pytest.raises(AssertionError, match=r"differs in \['(?!faults)"):
        run(data, cols=40, rows=8, window=2048, reads=0.2)


def test_harness_catches_a_cut_at_a_screen_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Treating a switch of screens as harmless (skipping past it) must be caught."""
    from signaltty.term.screen import fastforward

    real = fastforward.csi_kind
    monkeypatch.setattr(
        fastforward, "csi_kind", lambda p, i, f: "skip" if f in "hl" else real(p, i, f)
    )
    rng = random.Random(2)
    data = (
        plain_lines(rng, 50, 30) + tui(rng, 20, 30, 6, clear_every=3) + plain_lines(rng, 5, 30)
    ).encode()
    data += b"\x1b[?1049h" + tui(rng, 10, 30, 6, clear_every=2).encode()
    with pytest.raises(AssertionError):
        run(data, cols=30, rows=6, window=1024, reads=0.3)


def test_a_fast_forward_bug_loses_no_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault inside a plan, or anywhere in the lazy window, is counted and the output is
    drawn by pyte instead: the screen still equals the reference."""
    from signaltty.term.screen import lazy as lazy_mod

    data = (
        plain_lines(random.Random(4), 300, 40) + tui(random.Random(5), 20, 40, 8, clear_every=3)
    ).encode()

    def boom(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("planted")

    for target, name in ((history_mod, "plan"), (lazy_mod.LazyFeed, "push")):
        with monkeypatch.context() as m:
            m.setattr(target, name, boom)
            fast = PyteScreen(40, 8, history_lines=50, window=1024)
            ref = PyteScreen(40, 8, history_lines=50, fast_forward=False)
            for i in range(0, len(data), 700):
                fast.feed(data[i : i + 700])
                ref.feed(data[i : i + 700])
                for _ in range(3):
                    fast.drain(512)
            assert fast.faults > 0
            a, b = observe(fast), observe(ref)
            del a["faults"], b["faults"]
            assert not diff(a, b), (name, diff(a, b))


# --- generated adversarial streams ---------------------------------------------------------------


class Genes:
    """Turns one hypothesis-drawn byte string into a terminal stream, fast (one draw per case;
    shorter and smaller genomes decode to simpler streams, so hypothesis still shrinks)."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.at = 0

    def next(self) -> int:
        if self.at >= len(self.raw):
            return 0
        self.at += 1
        return self.raw[self.at - 1]

    def pick(self, options: Any) -> Any:
        return options[self.next() % len(options)]

    def num(self) -> str:
        g = self.next() % 8
        return ("", "0", "1", "2", "3", str(self.next() % 12), str(self.next()), "99999")[g]

    def params(self) -> str:
        return ";".join(self.num() for _ in range(self.next() % 4))

    def token(self) -> str:
        g = self.next() % 40
        if g < 8:
            return self.pick(TEXTS) * (1 + self.next() % 3)
        if g < 12:
            return "\r\n"
        if g < 15:
            return f"{ESC}[{self.pick(SGR_PARAMS)}m"
        if g == 15:
            return f"{ESC}[{self.params()}{self.pick('HfJKABCDGdPX@LMSTbEFrgsu')}"
        if g == 16:
            return f"{ESC}[{self.pick(('', '?', '>', '<'))}{self.pick(MODES)}{self.pick('hl')}"
        if g in (17, 27, 28):
            return self.pick(CLEARS)
        if g == 18:
            return self.pick(("\x1b[?1049h", "\x1b[?1049l", "\x1b[?47h", "\x1b[?1047l"))
        if g == 19:
            return self.pick(ESCS)
        if g == 20:
            return self.pick(CONTROLS)
        if g == 21:
            return f"{ESC}]{self.pick(('0', '1', '2', '7', '8'))};{self.pick(TEXTS)}{self.pick((chr(7), ESC + chr(92), ESC + 'x', ''))}"
        if g == 22:
            return self.pick(PATHOLOGIES)
        if g == 23:
            return f"{ESC}[6n"
        if g == 24:
            return (
                "\r\n".join("line" * (self.next() % 4) for _ in range(1 + self.next() % 12))
                + "\r\n"
            )
        if g == 25:
            return self.pick(("\x1b[3J", "\x1b[?3J", "\x1b[2J", "\x1b[?2J", "\x1b[J", "\x1b[1J"))
        if g == 26:
            return f"{ESC}[{self.num()};{self.num()}r"
        return self.pick(TEXTS)

    def stream(self) -> bytes:
        # Half the streams run on the alternate screen, where clears can be skipped to.
        out = ["\x1b[?1049h"] if self.next() % 2 else []
        for _ in range(self.next() % 64):
            out.append(self.token())
        data = "".join(out).encode("utf-8", "surrogatepass")
        if self.next() % 8 == 0 and data:
            i = self.next() % len(data)
            data = data[:i] + bytes([0xC3, 0xFF, 0xE2, 0x94])[: 1 + self.next() % 4] + data[i:]
        return data

    def chunks(self, n: int) -> Iterator[int]:
        at = 0
        while at < n:
            at += 1 + self.next() % 24
            yield min(at, n)


TEXTS = (
    "ab",
    "hello world",
    "x" * 7,
    "中文",
    "e\u0301",
    "❤️",
    "\t",
    "a\tb",
    "│ok│",
    "😀",
    " ",
    "zz",
    "é",
    "\u200b",
    "ﬁ",
)
SGR_PARAMS = (
    "",
    "0",
    "1",
    "7",
    "31",
    "0;1;32",
    "38;5;0",
    "48;5;200",
    "38;2;1;2;3",
    "38:2::1:2:3",
    "4:3",
    ">4;2",
    "?25",
    "0;<",
    "39;49",
    "22;27",
)
MODES = (
    "1",
    "4",
    "6",
    "7",
    "20",
    "25",
    "1;6",
    "2004",
    "2026",
    "1049",
    "1047",
    "47",
    "3",
    "5",
    "7;4",
    "",
)
CLEARS = (
    "\x1b[H\x1b[2J",
    "\x1b[2J\x1b[H",
    "\x1b[1;1H\x1b[2J",
    "\x1b[2J\x1b[3;2H",
    "\x1b[H\x1b[?2J",
    "\x1b[5;5H\x1b[02J",
)
ESCS = (
    "\x1b7",
    "\x1b8",
    "\x1bc",
    "\x1bH",
    "\x1bD",
    "\x1bE",
    "\x1bM",
    "\x1b#8",
    "\x1b(0",
    "\x1b(B",
    "\x1b)0",
    "\x0e",
    "\x0f",
    "\x1b[s",
    "\x1b[u",
    "\x1b[!p",
    "\x1b[3g",
    "\x1b[g",
    "\x1b[5b",
    "\x1b[2b",
)
CONTROLS = (
    "\r",
    "\n",
    "\x08",
    "\x07",
    "\x0b",
    "\x0c",
    "\x00",
    "\x7f",
    "\x18",
    "\x1a",
    "\x85",
    "\x9b",
    "\xad",
    "\x1b\x1b",
)
PATHOLOGIES = (
    "\x1b[1\r2m",
    "\x1b[?10\r49h",
    "\x1b\x1b[2J",
    "\x1b]0;a\x1bxb\x07",
    "\x1b[38:2:",
    "\x1bP1;2qpayload\x1b\\",
    "\x1b_apc\x07\x1b\\",
    "\x1b[" + "1" * 300 + "m",
    "\x1b%G",
    "\x1b[1 q",
    "\x1b[>1;2c",
    "\x1b",
    "\x1b[",
)


@settings(
    max_examples=10_000,
    deadline=None,
    database=None,  # nothing written into the shared checkout
    phases=(Phase.generate, Phase.shrink),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.binary(min_size=0, max_size=400))
def test_adversarial_streams(genome: bytes) -> None:
    g = Genes(genome)
    cols = 3 + g.next() % 10
    rows = 1 + g.next() % 6
    hist = g.pick((0, 1, 3, 8))
    window = g.pick((16, 40, 100, 400))
    data = g.stream()
    _differential(g, data, cols, rows, hist, window)


# --- frame elision: generated repaint streams ----------------------------------------------------


class RepaintGenes(Genes):
    """Streams of in-place repaints on a small screen, so rows are rewritten often: absolute
    and relative moves, rows of SGR and text that fit, fill or overflow the row, erases,
    REP, modes and titles, and now and then a barrier (a scroll, a cursor save, a wide
    character, an inserted line, a charset) or a read."""

    def paint(self, cols: int) -> str:
        parts = []
        for _ in range(1 + self.next() % 2):
            if self.next() % 3 == 0:
                parts.append(f"{ESC}[{self.pick(SGR_PARAMS)}m")
            parts.append(
                self.pick(("ab", "xyz", "│", "─" * 3, "q" * cols, "w" * (cols // 2), "é", "k", "m"))
            )
        return "".join(parts)

    def repaint_token(self, cols: int, rows: int) -> str:
        g = self.next() % 96
        row = 1 + self.next() % (rows + 1)
        if g >= 32:  # mostly rows repainted in place
            g = 25 if g < 64 else 0
        if g < 8:
            tail = self.pick(("", f"{ESC}[K", f"{ESC}[0K", f"{ESC}[1K", f"{ESC}[2K", f"{ESC}[?K"))
            return f"{ESC}[{row};{self.pick(('1', '', str(1 + self.next() % cols)))}H{self.paint(cols)}{tail}"
        if g < 11:
            return self.paint(cols)
        if g == 11:
            return f"{ESC}[{self.num()}{self.pick('ABCDEFGdae`')}"
        if g == 12:
            return self.pick(("\r", "\n", "\x08", "\t", "\x0b", "\x07", "\x00", "\x85"))
        if g == 13:
            return f"{ESC}[{self.num()}{self.pick('KXJb')}"
        if g == 14:
            return self.pick(("\x1b[?2026h", "\x1b[?2026l", "\x1b[?25l", "\x1b[?25h", "\x1b[?7l"))
        if g == 15:
            return self.pick(("\x1b[?7h", "\x1b[20h", "\x1b[20l", "\x1b[4h", "\x1b[4l", "\x1b[?5h"))
        if g == 16:
            return f"{ESC}]2;{self.pick(TEXTS)}{self.pick((chr(7), ESC + chr(92)))}"
        if g == 17:
            return self.pick(ESCS)
        if g == 18:
            return self.pick(("中", "e\u0301", "❤️", "\u200b", "😀"))
        if g == 19:
            return self.pick(PATHOLOGIES)
        if g == 20:
            return f"{ESC}[{self.num()};{self.num()}r"
        if g == 21:
            return f"{ESC}[{self.num()}{self.pick('LMSTP@')}"
        if g == 22:
            return self.pick(("\x1b[3J", "\x1b[2J", "\x1b[?1049h", "\x1b[?1049l", "\x1bD", "\x1bM"))
        if g == 23:
            return f"{ESC}[6n"
        if g == 24:
            return self.pick(("\x1b(B", "\x1b)0", "\x1b)B", "\x1b(0", "\x0e", "\x0f"))
        return f"{ESC}[{row};1H{self.paint(cols)}{ESC}[K"

    def repaint_stream(self, cols: int, rows: int) -> bytes:
        out = ["\x1b[?1049h"] if self.next() % 2 else ["line\r\n" * (self.next() % 12)]
        for _ in range(self.next() % 96):
            out.append(self.repaint_token(cols, rows))
        return "".join(out).encode("utf-8", "surrogatepass")


@settings(
    max_examples=5_000,
    deadline=None,
    database=None,
    phases=(Phase.generate, Phase.shrink),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.binary(min_size=0, max_size=600))
def test_repaint_streams(genome: bytes) -> None:
    """Frame elision against the reference on generated repaint streams (kind d)."""
    g = RepaintGenes(genome)
    cols = 3 + g.next() % 14
    rows = 2 + g.next() % 5
    hist = g.pick((0, 3, 8))
    window = g.pick((16, 64, 256, 2048))
    data = g.repaint_stream(cols, rows)
    _differential(g, data, cols, rows, hist, window)


def _differential(g: Genes, data: bytes, cols: int, rows: int, hist: int, window: int) -> None:
    fast = PyteScreen(cols, rows, history_lines=hist, window=window)
    ref = PyteScreen(cols, rows, history_lines=hist, fast_forward=False)
    queries = set(cursor_queries(data))
    at = 0
    for end in sorted(set(g.chunks(len(data))) | queries):
        fast.feed(data[at:end])
        ref.feed(data[at:end])
        at = end
        for _ in range(g.next() % 3):
            fast.drain(1 + g.next() % 64)
        if end in queries:
            while fast.pending:
                fast.drain(64)
            assert fast.cursor == ref.cursor, f"cursor report at byte {end} of {data!r}"
        if g.next() % 16 == 0:
            while fast.pending:
                fast.drain(64)
            assert fast.peek_rows() == ref.lines(), f"peek_rows at byte {end} of {data!r}"
    a, b = observe(fast), observe(ref)
    bad = diff(a, b)
    assert not bad, (
        f"{bad} differ for {data!r} ({cols}x{rows}, history {hist}, window {window}): "
        + "; ".join(f"{k}: fast={a.get(k)!r:.200} ref={b.get(k)!r:.200}" for k in bad[:2])
    )
    # A wider screen shows what the rows hold past the old edge (an erased row's default
    # cell): a skipped erase of a whole row must show there too.
    wider = (cols + 1 + g.next() % 9, rows + g.next() % 3)
    fast.resize(*wider)
    ref.resize(*wider)
    a, b = observe(fast), observe(ref)
    bad = diff(a, b)
    assert not bad, (
        f"{bad} differ after a resize to {wider} for {data!r} ({cols}x{rows}, history {hist}, "
        f"window {window}): "
        + "; ".join(f"{k}: fast={a.get(k)!r:.200} ref={b.get(k)!r:.200}" for k in bad[:2])
    )


@pytest.mark.parametrize(
    ("chunks", "size", "window", "wider"),
    [
        ([b"b\x1b[42m", b"\x1b[f\x1b[K\x1b[99b"], (20, 5), 1024, (30, 6)),
        ([b"b\x1b[42m\x1b[f\x1b[K\x1b[99b"], (20, 5), 1024, (30, 6)),
        ([b"\x1b#8\x1bf\x1b[K[9b"], (3, 2), 4096, (30, 5)),
        ([b"\x1b[?1049h\x1b[42m\x1b[1;1H\x1b[K\x1b[m" + b"x" * 20], (20, 5), 16, (30, 5)),
        (
            [b"\x1b[?1049h" + b"\x1b[44m\x1b[2;1H\x1b[2K\x1b[m\x1b[2;1H" + b"y" * 20] * 3,
            (20, 5),
            64,
            (26, 5),
        ),
        # a plain erase still resets a row that a coloured erase before the segment left
        # (DECSC ends the first segment)
        (
            [b"\x1b[?1049h\x1b[42m\x1b[2;1H\x1b[2K\x1b[m\x1b7"]
            + [b"\x1b[2;1H\x1b[2K\x1b[2;1H" + b"z" * 20] * 3,
            (20, 5),
            4096,
            (27, 5),
        ),
    ],
)
def test_a_skipped_row_erase_shows_after_widening(
    chunks: list[bytes], size: tuple[int, int], window: int, wider: tuple[int, int]
) -> None:
    """An erase of a whole row also sets the row's default cell, which a wider screen shows:
    later text covering every visible cell does not make it dead (found by an attack pass)."""
    fast = PyteScreen(*size, window=window)
    ref = PyteScreen(*size, fast_forward=False)
    for chunk in chunks:
        fast.feed(chunk)
        ref.feed(chunk)
    assert not diff(observe(fast), observe(ref))
    fast.resize(*wider)
    ref.resize(*wider)
    bad = diff(observe(fast), observe(ref))
    assert not bad, bad


def test_harness_catches_a_wrong_event_collapse(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replaying the first of identical mode events instead of the last must be caught."""
    from signaltty.term.screen import repaint

    real = repaint.apply_skip

    def first_only(screen: Any, stream: Any, text: str, segment: Any, *rest: Any) -> None:
        seen: set[Any] = set()
        events = []
        for at, event in segment.events:
            if event not in seen:
                seen.add(event)
                events.append((at, event))
        real(screen, stream, text, segment._replace(events=events), *rest)

    monkeypatch.setattr(repaint, "apply_skip", first_only)
    text, cols, rows = NAMED["repaint_mode_events_collapsed"]
    with pytest.raises(AssertionError, match="differs"):
        run(text.encode(), cols=cols, rows=rows, window=4096, reads=0.0)


def test_harness_catches_a_wrong_elision(monkeypatch: pytest.MonkeyPatch) -> None:
    """Calling a write dead when a later write covers only part of it must be caught."""
    from signaltty.term.screen import repaint

    def overlap(screen: Any, segment: Any) -> bytearray:
        live = bytearray(len(segment.writes))
        cover: dict[int, int] = {}
        for index, y, first, stop in reversed(segment.spans):
            bits = (1 << stop) - (1 << first)
            if not cover.get(y, 0) & bits:  # wrong: any overlap counts as overwritten
                live[index] = 1
            cover[y] = cover.get(y, 0) | bits
        return live

    monkeypatch.setattr(repaint, "plan", overlap)
    data = tui(random.Random(8), 120, 30, 6, clear_every=None, decsc=False)
    data += "".join(f"\x1b[2;{c}Hab\x1b[2;{c + 1}Hc" for c in range(1, 20))
    with pytest.raises(AssertionError, match="differs"):
        run(data.encode(), cols=30, rows=6, window=1024, reads=0.2)
