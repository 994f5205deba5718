#!/usr/bin/env python3
"""Many panes at once, and memory per pane (issue 12: the "200 panes printing at once" and
"RSS per pane after 300 KB of mixed output; memory returned after panes close" rows).

Every figure is a ratio against a baseline measured in the same run:

* **CPU per MB, N panes ÷ one pane**: a fresh daemon runs one pane ``cat`` of a mixed file
  of N×S bytes, then (another fresh daemon) N panes at once, each ``cat`` of an S-byte
  mixed file. Daemon CPU seconds per MB of output, the second ÷ the first. This ratio is
  not the cost of concurrency: the N×S-byte stream lets the lazy window skip most bytes
  (its history is full, so older lines cannot matter), an S-byte one does not, and each of
  the N panes adds its start, exit and screen read (about 3 ms here).
* **N panes at once ÷ one after another** (the goal's figure, ≤ 1.1: the cost of a byte must
  not grow with the number of panes, e.g. by the garbage collector walking every pane's
  objects): the same N S-byte panes, in a third fresh daemon started one after another
  (each exited and read before the next starts, its screen kept), CPU of the concurrent run
  ÷ CPU of this one: same bytes, same panes, only the concurrency differs.
* **RSS per pane**: a fresh daemon's RSS, then N panes each printing the same 300 KB of
  mixed output (plain lines, SGR-heavy text, a TUI with clears; bench/flood.py's kinds a, b,
  c) and staying alive, every screen read once; (RSS − RSS before) ÷ N. The same N windows
  in a private tmux server give tmux's figure (server RSS − RSS with one idle session) ÷ N.
  Goal: ≤ tmux's.
* **Memory returned**: the same daemon after every pane is closed: (peak − after) ÷
  (peak − before); 1.0 means everything the panes took was given back to the system. The
  tmux server's figure (every printing window killed, the idle session kept) is the
  same-run baseline.

Usage: ``python bench/panes.py [--panes 200] [--size-kb 256] [--json]``;
``--quick``: 50 panes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from typing import Any

import psutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as h
import flood

MIXED_KB = 300
MB = 1e6


def mixed_file(path: str, size: int, seed: int) -> int:
    """Kinds a, b and c of bench/flood.py, about a third of ``size`` bytes each, one after
    the other; each part is cut at a line end (flood's generator writes in large batches),
    the TUI part then leaves the alternate screen. Returns the size written."""
    with open(path, "wb") as out:
        for kind in ("a", "b", "c"):
            part = f"{path}.{kind}"
            flood.generate(kind, part, max(1, size // 3), seed)
            with open(part, "rb") as f:
                data = f.read(max(1, size // 3))
            os.unlink(part)
            # a line end (a, b) or the end of a frame (c: before its ESU)
            cut = data.rfind(b"\n") + 1 if kind != "c" else data.rfind(b"\x1b[?2026l")
            out.write(data[:cut] if cut > 0 else data)
            out.write(b"\x1b[0m\x1b[?2026l")
        out.write(b"\x1b[?1049l\x1b[?25h\r\nend of mixed output\r\n")
    return os.path.getsize(path)


def _spawn(d: h.BenchDaemon, ws: str, argv: list[str]) -> str:
    pane = d.call(
        "pane.spawn",
        {"workspace_id": ws, "argv": argv, "cols": flood.COLS, "rows": flood.ROWS},
    )["pane"]
    return str(pane["id"])


def _wait_exited(d: h.BenchDaemon, pane_ids: list[str], timeout: float = 600) -> None:
    with d.client(timeout=None) as c:
        for pid in pane_ids:
            c.call("wait", {"pane_id": pid, "until": "exited", "timeout_s": timeout})


def cpu_per_mb(n: int, size: int, seed: int) -> dict[str, Any]:
    """One pane printing ``n × size`` bytes, then ``n`` panes printing ``size`` bytes each at
    once, then the same ``n`` panes one after another (``seq``)."""
    out: dict[str, Any] = {}
    for label, panes, each in (("one", 1, n * size), ("many", n, size), ("seq", n, size)):
        with h.BenchDaemon(prefix="stpn-") as d:
            path = d.path("in.txt")
            got = mixed_file(path, each, seed)
            ws = d.call("workspace.create", {"name": "w"})["workspace"]["id"]
            cpu0 = d.cpu_seconds()
            t0 = time.monotonic()
            ids: list[str] = []
            if label == "seq":  # one connection for the waits, as _wait_exited uses
                with d.client(timeout=None) as c:
                    for _ in range(panes):
                        ids.append(_spawn(d, ws, ["cat", path]))
                        c.call("wait", {"pane_id": ids[-1], "until": "exited", "timeout_s": 600})
            ids = ids or [_spawn(d, ws, ["cat", path]) for _ in range(panes)]
            _wait_exited(d, ids)
            for pid in ids:  # every screen applied: what the person would read
                d.call("pane.read", {"pane_id": pid, "mode": "screen"})
            wall = time.monotonic() - t0
            cpu = d.cpu_seconds() - cpu0
            mb = got * panes / MB
            out[label] = {"panes": panes, "mb": round(mb, 2), "cpu_s": round(cpu, 3),
                          "cpu_s_per_mb": cpu / mb, "wall_s": round(wall, 2)}
            h.log(f"{label}: {panes} pane(s), {mb:.1f} MB, {cpu:.2f} CPU s, {wall:.1f} s")
    out["ratio"] = h.ratio(out["many"]["cpu_s_per_mb"], out["one"]["cpu_s_per_mb"])
    out["ratio_concurrent"] = h.ratio(out["many"]["cpu_s"], out["seq"]["cpu_s"])
    return out


def _rss(ps: psutil.Process) -> float:
    return ps.memory_info().rss / (1024 * 1024)


def signaltty_memory(n: int, seed: int) -> dict[str, Any]:
    with h.BenchDaemon(prefix="stpm-") as d:
        path = d.path("mixed.txt")
        mixed_file(path, MIXED_KB * 1000, seed)
        ws = d.call("workspace.create", {"name": "w"})["workspace"]["id"]
        time.sleep(1.0)
        before = d.rss_mb()
        done = d.path("printed")
        os.mkdir(done)
        ids = []
        for i in range(n):
            script = f"cat '{path}'; : > '{done}/{i}'; exec sleep 100000"
            ids.append(_spawn(d, ws, ["sh", "-c", script]))
        deadline = time.monotonic() + 600
        while len(os.listdir(done)) < n and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in ids:
            d.call("pane.read", {"pane_id": pid, "mode": "screen"})
        time.sleep(2.0)  # the sweep and the flusher have run over every pane
        peak = d.rss_mb()
        d.note_children()
        for pid in ids:
            d.call("pane.close", {"pane_id": pid, "signal": "KILL"})
        time.sleep(5.0)
        after = d.rss_mb()
        per_pane = (peak - before) / n
        returned = (peak - after) / (peak - before) if peak > before else None
        h.log(f"signaltty: RSS {before:.1f} → {peak:.1f} MB with {n} panes → {after:.1f} MB closed")
        return {"rss_before_mb": round(before, 2), "rss_peak_mb": round(peak, 2),
                "rss_after_close_mb": round(after, 2), "per_pane_mb": per_pane,
                "returned": returned}


def tmux_memory(n: int, seed: int, tmp: str) -> dict[str, Any] | None:
    tmux = shutil.which("tmux")
    if tmux is None:
        return None
    path = os.path.join(tmp, "mixed.txt")
    mixed_file(path, MIXED_KB * 1000, seed)
    sock = os.path.join(tmp, "tmux.sock")
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    env.update(SHELL="/bin/sh", TERM=env.get("TERM") or "xterm-256color")
    base = [tmux, "-S", sock, "-f", "/dev/null"]

    def run(*args: str) -> str:
        return subprocess.run([*base, *args], env=env, check=True, capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL).stdout

    try:
        run("new-session", "-d", "-s", "idle", "-x", str(flood.COLS), "-y", str(flood.ROWS),
            "sleep 100000")
        ps = psutil.Process(int(run("display-message", "-p", "#{pid}").strip()))
        time.sleep(1.0)
        before = _rss(ps)
        done = os.path.join(tmp, "tmux-printed")
        os.mkdir(done)
        for i in range(n):
            script = f"cat '{path}'; : > '{done}/{i}'; exec sleep 100000"
            run("new-window", "-d", "-t", "idle", script)
        deadline = time.monotonic() + 600
        while len(os.listdir(done)) < n and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2.0)
        peak = _rss(ps)
        for i in range(1, n + 1):  # every printing window; the idle session's stays
            run("kill-window", "-t", f"idle:{i}")
        left = len(run("list-windows", "-t", "idle").splitlines())
        if left != 1:
            raise RuntimeError(f"tmux: {left} windows left after killing the printing ones")
        time.sleep(5.0)
        after = _rss(ps)
        returned = (peak - after) / (peak - before) if peak > before else None
        h.log(f"tmux: RSS {before:.1f} → {peak:.1f} MB with {n} windows → {after:.1f} MB closed")
        return {"rss_before_mb": round(before, 2), "rss_peak_mb": round(peak, 2),
                "rss_after_close_mb": round(after, 2), "per_pane_mb": (peak - before) / n,
                "returned": returned}
    finally:
        subprocess.run([*base, "kill-server"], env=env, capture_output=True, timeout=60)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--panes", type=int, default=None, help="panes at once (200; 50 with --quick)")
    ap.add_argument("--size-kb", type=int, default=256, help="output per pane in the CPU phase")
    ap.add_argument("--quick", action="store_true", help="50 panes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="JSON on stdout (the table goes to stderr)")
    ap.add_argument("--memory-only", action="store_true", help="skip the CPU phases")
    args = ap.parse_args(argv)
    n = args.panes or (50 if args.quick else 200)
    with h.terminate_on_signals():
        cpu = None if args.memory_only else cpu_per_mb(n, args.size_kb * 1000, args.seed)
        mem = signaltty_memory(n, args.seed)
        with h.BenchDaemon(prefix="stpt-") as scratch:  # only for its temp dir and cleanup
            tmux = tmux_memory(n, args.seed, scratch.tmp)
    rows = [] if cpu is None else [
        ["CPU s per MB, 1 pane", h.fmt(cpu["one"]["cpu_s_per_mb"], 4), "", ""],
        [f"CPU s per MB, {n} panes at once", h.fmt(cpu["many"]["cpu_s_per_mb"], 4),
         h.fmt(cpu["ratio"]), "(÷ 1 pane; not the goal's figure)"],
        [f"CPU s per MB, the {n} panes one after another", h.fmt(cpu["seq"]["cpu_s_per_mb"], 4),
         h.fmt(cpu["ratio_concurrent"]), "≤ 1.1 (at once ÷ this)"],
    ]
    rows += [
        [f"RSS per pane after {MIXED_KB} KB mixed (MB)", h.fmt(mem["per_pane_mb"], 3),
         h.fmt(h.ratio(mem["per_pane_mb"], tmux["per_pane_mb"]) if tmux else None),
         "≤ 1.0 (÷ tmux)"],
        ["tmux RSS per pane (MB)", h.fmt(tmux["per_pane_mb"], 3) if tmux else "-", "", ""],
        ["memory returned after close", h.fmt(mem["returned"]), "", "1.0"],
        ["tmux memory returned after close",
         h.fmt(tmux["returned"]) if tmux and tmux["returned"] is not None else "-", "", ""],
    ]
    out = sys.stderr if args.json else sys.stdout
    h.print_table(f"bench/panes.py, {n} panes", ["figure", "value", "ratio", "goal"], rows, out)
    if args.json:
        h.dump_json({"machine": h.machine_info(), "code": h.code_version(), "panes": n,
                     "cpu": cpu, "signaltty_memory": mem, "tmux_memory": tmux})
    return 0


if __name__ == "__main__":
    sys.exit(main())
