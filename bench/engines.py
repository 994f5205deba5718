#!/usr/bin/env python3
"""Screen engines side by side: CPU cost of taking in each flood kind, and agreement with pyte.

Measures, in this process, the CPU seconds each screen engine needs to take in the same
output (``bench/flood.py``'s four kinds, with LF turned into CR LF as a PTY does), read the
way the daemon reads (64 KiB chunks drained in 2 KiB pieces, the screen read every
``--read-every`` MB and at the end):

* ``pyte``     — ``PyteScreen(fast_forward=False)``: the hardened pyte model, every byte drawn;
* ``pyte+ff``  — ``PyteScreen()``: the same model with the lazy window and fast-forward;
* ``pyavt``    — asciinema's avt (Rust) through pyavt, if installed (``Vt.feed_str``);
* ``pyghostty``— libghostty-vt through pyghostty, if installed (``Terminal.feed``).

In the same run, for scale: the raw PTY reader's wall MB/s and tmux's MB per server
CPU-second on the same file (``flood.raw_pty_read``/``flood.tmux_run``). These compare an
in-process ingest with whole programs, so they bound rather than predict the daemon's figures
(``flood.py`` measures the daemon).

``--agree`` also feeds a mixed corpus (the four kinds at a small size, every real capture in
tests/fixtures/real-agents) to each engine and counts the reads whose visible text or cursor
differs from the pyte reference (the daemon's model, which screen rules were written against).

Run: ``python bench/engines.py --size-mb 20 --agree`` (``--json`` for a report on stdout).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as h
import flood
from signaltty.term.screen import PyteScreen

COLS, ROWS = flood.COLS, flood.ROWS
CHUNK = 64 * 1024
PIECE = 2048
REPO = Path(__file__).resolve().parents[1]


class Engine(Protocol):
    """One engine behind a tiny common surface: feed bytes, read rows and cursor."""

    name: str

    def feed(self, data: bytes) -> None: ...

    def rows(self) -> list[str]: ...

    def cursor(self) -> tuple[int, int]: ...


class Pyte:
    def __init__(self, cols: int, rows: int, fast_forward: bool) -> None:
        self.name = "pyte+ff" if fast_forward else "pyte"
        self.s = PyteScreen(cols, rows, fast_forward=fast_forward)

    def feed(self, data: bytes) -> None:
        s = self.s
        s.feed(data)
        while s.pending:
            s.drain(PIECE)

    def rows(self) -> list[str]:
        return self.s.lines()

    def cursor(self) -> tuple[int, int]:
        return self.s.cursor


class Avt:
    name = "pyavt"

    def __init__(self, cols: int, rows: int) -> None:
        import avt

        self.vt = avt.Vt(cols, rows, scrollback_limit=5000)
        import codecs

        self.dec = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes) -> None:
        self.vt.feed_str(self.dec.decode(data))

    def rows(self) -> list[str]:
        return [line.text.rstrip(" ") for line in self.vt.view()]

    def cursor(self) -> tuple[int, int]:
        c = self.vt.cursor
        return (c.row, c.col)


class Ghostty:
    name = "pyghostty"

    def __init__(self, cols: int, rows: int) -> None:
        import pyghostty

        self.t = pyghostty.Terminal(cols=cols, rows=rows, scrollback=5000)
        self.n = rows

    def feed(self, data: bytes) -> None:
        self.t.feed(data)

    def rows(self) -> list[str]:
        out = self.t.text().split("\n")
        return [r.rstrip(" ") for r in out] + [""] * (self.n - len(out))

    def cursor(self) -> tuple[int, int]:
        x, y = self.t.cursor
        return (y, x)


def engines(cols: int, rows: int) -> list[Callable[[], Engine]]:
    found: list[Callable[[], Engine]] = [
        lambda: Pyte(cols, rows, False),
        lambda: Pyte(cols, rows, True),
    ]
    try:
        import avt  # noqa: F401

        found.append(lambda: Avt(cols, rows))
    except ImportError:
        h.log("pyavt not installed: skipped")
    try:
        import pyghostty  # noqa: F401

        found.append(lambda: Ghostty(cols, rows))
    except ImportError:
        h.log("pyghostty not installed: skipped")
    return found


def ingest(
    make: Callable[[], Engine], data: bytes, read_every: int, limit_s: float
) -> dict[str, Any]:
    """CPU seconds to take in ``data`` (stops early after ``limit_s`` and scales)."""
    engine = make()
    t0 = time.process_time()
    next_read = read_every
    done = 0
    for i in range(0, len(data), CHUNK):
        engine.feed(data[i : i + CHUNK])
        done = min(len(data), i + CHUNK)
        if done >= next_read:
            engine.rows()
            next_read += read_every
        if time.process_time() - t0 > limit_s:
            break
    engine.rows()
    cpu = time.process_time() - t0
    return {
        "cpu_s": cpu,
        "mb": done / h.MB,
        "mb_per_cpu_s": done / h.MB / cpu,
        "partial": done < len(data),
    }


def corpus() -> list[tuple[str, bytes, int, int]]:
    """(name, bytes, cols, rows): the four kinds small, and the real captures."""
    out: list[tuple[str, bytes, int, int]] = []
    with tempfile.TemporaryDirectory(prefix="stg-") as tmp:
        for kind in flood.KINDS:
            path = os.path.join(tmp, kind)
            flood.generate(kind, path, 300_000, 2)
            out.append(
                (f"kind {kind}", Path(path).read_bytes().replace(b"\n", b"\r\n"), COLS, ROWS)
            )
    for cap in sorted((REPO / "tests" / "fixtures" / "real-agents").glob("*/*_ansi.txt")):
        raw = cap.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        out.append((f"{cap.parent.name}/{cap.stem}", raw, 120, 40))
    return out


def agreement(makers: dict[str, Callable[[int, int], Engine]]) -> dict[str, Any]:
    """Reads (every 16 KiB and at the end) whose rows or cursor differ from the pyte reference."""
    result: dict[str, Any] = {
        name: {"reads": 0, "text_differs": 0, "cursor_differs": 0, "streams_differ": []}
        for name in makers
    }
    for label, data, cols, rows in corpus():
        ref = Pyte(cols, rows, False)
        others = {name: make(cols, rows) for name, make in makers.items()}
        bad: dict[str, bool] = dict.fromkeys(makers, False)
        step = 16 * 1024
        for i in range(0, len(data), step):
            piece = data[i : i + step]
            ref.feed(piece)
            want_rows, want_cursor = ref.rows(), ref.cursor()
            for name, eng in others.items():
                eng.feed(piece)
                r = result[name]
                r["reads"] += 1
                if eng.rows() != want_rows:
                    r["text_differs"] += 1
                    bad[name] = True
                if eng.cursor() != want_cursor:
                    r["cursor_differs"] += 1
                    bad[name] = True
        for name, b in bad.items():
            if b:
                result[name]["streams_differ"].append(label)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size-mb", type=float, default=20.0, help="input per kind (default 20)")
    ap.add_argument("--kinds", default="a,b,c,d")
    ap.add_argument("--read-every", type=float, default=4.0, help="MB between reads (default 4)")
    ap.add_argument(
        "--limit-s", type=float, default=60.0, help="CPU seconds per engine and kind before scaling"
    )
    ap.add_argument("--no-tmux", action="store_true")
    ap.add_argument("--agree", action="store_true", help="also count reads that differ from pyte")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    report: dict[str, Any] = {"benchmark": "engines", "machine": h.machine_info(), "kinds": {}}
    makers = engines(COLS, ROWS)
    with tempfile.TemporaryDirectory(prefix="ste-") as tmp:
        for kind in kinds:
            path = os.path.join(tmp, f"in-{kind}")
            nbytes = flood.generate(kind, path, int(args.size_mb * h.MB), args.seed)
            mb = nbytes / h.MB
            data = Path(path).read_bytes().replace(b"\n", b"\r\n")
            entry: dict[str, Any] = {"name": flood.KINDS[kind], "mb": round(mb, 2)}
            raw = flood.raw_pty_read(path)
            entry["raw_mb_s"] = mb / raw["wall_s"]
            tm = None if args.no_tmux else flood.tmux_run(path, tmp)
            if tm is not None:
                entry["tmux_mb_s"] = mb / tm["wall_s"]
                entry["tmux_mb_per_cpu_s"] = h.ratio(mb, tm["cpu_s"])
            for make in makers:
                name = make().name
                r = ingest(make, data, int(args.read_every * h.MB), args.limit_s)
                r["per_tmux_cpu"] = h.ratio(r["mb_per_cpu_s"], entry.get("tmux_mb_per_cpu_s"))
                r["per_raw"] = h.ratio(r["mb_per_cpu_s"], entry["raw_mb_s"])
                entry[name] = r
                h.log(
                    f"{kind}: {name} {r['mb_per_cpu_s']:.1f} MB per CPU s "
                    f"(x{h.fmt(r['per_tmux_cpu'])} tmux)"
                )
            report["kinds"][kind] = entry
    if args.agree:
        by_name: dict[str, Callable[[int, int], Engine]] = {"pyavt": Avt, "pyghostty": Ghostty}
        native: dict[str, Callable[[int, int], Engine]] = {}
        for make in makers[2:]:
            eng = make()
            native[eng.name] = by_name[eng.name]
        ff: dict[str, Callable[[int, int], Engine]] = {"pyte+ff": lambda c, r: Pyte(c, r, True)}
        report["agreement"] = agreement({**ff, **native})
    report["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    out = sys.stderr if args.json else sys.stdout
    names = [m().name for m in makers]
    rows = []
    for kind, e in report["kinds"].items():
        row: list[Any] = [f"{kind} {e['name']}", e["mb"], e["raw_mb_s"], e.get("tmux_mb_per_cpu_s")]
        for n in names:
            row += [e[n]["mb_per_cpu_s"], e[n]["per_tmux_cpu"]]
        rows.append(row)
    header = ["kind", "MB", "raw MB/s", "tmux MB/cpu-s"]
    for n in names:
        header += [f"{n} MB/cpu-s", "÷ tmux"]
    h.print_table(
        f"engines: {args.size_mb:g} MB per kind, {report['machine']['date']}", header, rows, out
    )
    if "agreement" in report:
        h.print_table(
            "reads differing from the pyte reference (mixed corpus)",
            ["engine", "reads", "text differs", "cursor differs", "streams"],
            [
                [
                    n,
                    a["reads"],
                    a["text_differs"],
                    a["cursor_differs"],
                    ", ".join(a["streams_differ"][:8]),
                ]
                for n, a in report["agreement"].items()
            ],
            out,
        )
    if args.json:
        h.dump_json(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
