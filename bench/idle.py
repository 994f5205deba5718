#!/usr/bin/env python3
"""Idle benchmark: what N idle ``bash`` panes cost the daemon, against the same daemon with 0 panes.

A private daemon is started in a temp dir. After a short settle time its CPU (user + system of
the daemon process itself, children excluded, psutil ``cpu_times`` delta) is measured over a
``--seconds`` window with 0 panes, and its RSS read at the end of the window. Then ``--panes``
panes running ``bash --norc --noprofile -i`` are spawned, each is waited for until its prompt is
on the screen, and after the settle time the same figures are measured over a second window of
the same length. Nothing talks to the daemon during a window (psutil only reads /proc).

Also reported: voluntary context switches of the daemon per second (≈ loop wake-ups) and its open
file descriptors. Run ``python bench/idle.py --quick`` for a check (10 s, 50 panes), ``--json``
for machine-readable output (the table then goes to stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as h

BASH = ["bash", "--norc", "--noprofile", "-i"]


def measure(d: h.BenchDaemon, seconds: float) -> dict[str, Any]:
    """CPU %, RSS and wake-ups of the daemon over a quiet window of ``seconds``."""
    assert d.ps is not None
    ctx0 = d.ps.num_ctx_switches()
    cpu0 = d.cpu_seconds()
    t0 = time.perf_counter()
    time.sleep(seconds)
    cpu1 = d.cpu_seconds()
    wall = time.perf_counter() - t0
    ctx1 = d.ps.num_ctx_switches()
    return {
        "window_s": wall,
        "cpu_s": cpu1 - cpu0,
        "cpu_pct": (cpu1 - cpu0) / wall * 100.0,
        "rss_mb": d.rss_mb(),
        "wakeups_per_s": (ctx1.voluntary - ctx0.voluntary) / wall,
        "fds": d.ps.num_fds(),
        "threads": d.ps.num_threads(),
    }


def spawn_panes(d: h.BenchDaemon, n: int, ready_timeout: float) -> dict[str, Any]:
    """Spawn ``n`` bash panes and wait until each shows its prompt."""
    with d.client() as c:
        ws_id = c.call("workspace.create", {"name": "idle", "cwd": d.tmp})["workspace"]["id"]
        t0 = time.perf_counter()
        pane_ids = [
            c.call("pane.spawn", {"workspace_id": ws_id, "argv": BASH, "cols": 80, "rows": 24})[
                "pane"
            ]["id"]
            for _ in range(n)
        ]
        spawned = time.perf_counter() - t0
        waiting = set(pane_ids)
        deadline = time.monotonic() + ready_timeout
        while waiting and time.monotonic() < deadline:
            for pane_id in list(waiting):
                text = c.call("pane.read", {"pane_id": pane_id, "mode": "screen"})["text"]
                if "$" in text or "#" in text:
                    waiting.discard(pane_id)
            if waiting:
                time.sleep(0.2)
        ready = time.perf_counter() - t0
        status = c.call("server.status")
    d.note_children()
    return {
        "pane_ids": pane_ids,
        "spawn_s": spawned,
        "ready_s": ready,
        "not_ready": len(waiting),
        "live_panes": status.get("live_panes"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--panes", type=int, default=None, help="idle bash panes (default 200; 50 with --quick)"
    )
    ap.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="length of each window (default 60; 10 with --quick)",
    )
    ap.add_argument(
        "--settle",
        type=float,
        default=None,
        help="quiet time before each window (default 10; 3 with --quick)",
    )
    ap.add_argument("--quick", action="store_true", help="10 s windows, 50 panes: a quick check")
    ap.add_argument(
        "--json", action="store_true", help="print JSON on stdout (the table goes to stderr)"
    )
    args = ap.parse_args(argv)
    panes = args.panes if args.panes is not None else (50 if args.quick else 200)
    seconds = args.seconds if args.seconds is not None else (10.0 if args.quick else 60.0)
    settle = args.settle if args.settle is not None else (3.0 if args.quick else 10.0)

    report: dict[str, Any] = {
        "benchmark": "idle",
        "machine": h.machine_info(),
        "panes": panes,
        "window_s": seconds,
        "settle_s": settle,
        "argv": BASH,
    }
    failed = False
    with h.terminate_on_signals(), h.BenchDaemon(prefix="sti-") as d:
        h.log(
            f"daemon pid {d.proc.pid if d.proc else '?'}; settling {settle:g} s, then {seconds:g} "
            "s with 0 panes"
        )
        time.sleep(settle)
        report["baseline"] = base = measure(d, seconds)
        h.log(f"0 panes: cpu {base['cpu_pct']:.2f} %, RSS {base['rss_mb']:.1f} MB")
        h.log(f"spawning {panes} x {' '.join(BASH)}")
        sp = spawn_panes(d, panes, ready_timeout=max(60.0, panes * 0.5))
        report["spawn"] = {k: v for k, v in sp.items() if k != "pane_ids"}
        h.log(
            f"{panes} panes spawned in {sp['spawn_s']:.1f} s, prompts after {sp['ready_s']:.1f} "
            f"s; settling {settle:g} s, then {seconds:g} s"
        )
        if sp["not_ready"]:
            h.log(f"WARNING: {sp['not_ready']} panes showed no prompt")
            failed = True
        time.sleep(settle)
        report["loaded"] = load = measure(d, seconds)
        h.log(f"{panes} panes: cpu {load['cpu_pct']:.2f} %, RSS {load['rss_mb']:.1f} MB")
        status = d.call("server.status")
        report["live_panes_after"] = status.get("live_panes")
        if status.get("live_panes") != panes:
            h.log(
                f"WARNING: {status.get('live_panes')} live panes after the window, expected {panes}"
            )
            failed = True
        t = time.perf_counter()
        with d.client() as c:
            for pane_id in sp["pane_ids"]:
                c.call("pane.close", {"pane_id": pane_id, "signal": "KILL"})
        report["close_s"] = time.perf_counter() - t
        d.note_children()
    report["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["daemon_exit_code"] = d.exit_code
    report["leftover_processes"] = d.leftovers
    report["temp_dir_removed"] = not os.path.exists(d.tmp)
    if d.leftovers or not report["temp_dir_removed"]:
        failed = True
    report["ratios"] = {
        "cpu": h.ratio(load["cpu_pct"], base["cpu_pct"]),
        "rss": h.ratio(load["rss_mb"], base["rss_mb"]),
        "wakeups": h.ratio(load["wakeups_per_s"], base["wakeups_per_s"]),
    }
    report["per_pane"] = {
        "rss_kb": (load["rss_mb"] - base["rss_mb"]) * 1000.0 / panes if panes else None,
        "cpu_pct": (load["cpu_pct"] - base["cpu_pct"]) / panes if panes else None,
    }

    out = sys.stderr if args.json else sys.stdout

    def row(name: str, m: dict[str, Any]) -> list[Any]:
        return [
            name,
            h.fmt(m["cpu_s"], 3),
            h.fmt(m["cpu_pct"], 3),
            m["rss_mb"],
            m["wakeups_per_s"],
            m["fds"],
            m["threads"],
        ]

    r = report["ratios"]
    rows = [
        row("0 panes", base),
        row(f"{panes} bash panes", load),
        ["ratio", h.fmt(r["cpu"]), h.fmt(r["cpu"]), h.fmt(r["rss"]), h.fmt(r["wakeups"]), "", ""],
    ]
    h.print_table(
        f"idle: {seconds:g} s windows, {report['machine']['cpus']} cpus, "
        f"{report['machine']['date']}",
        ["daemon", "cpu s", "cpu %", "RSS MB", "wakeups/s", "fds", "threads"],
        rows,
        out,
    )
    print(
        f"per pane: {h.fmt(report['per_pane']['rss_kb'], 1)} kB RSS, "
        f"{h.fmt(report['per_pane']['cpu_pct'], 4)} % cpu; "
        f"spawn {sp['spawn_s']:.1f} s, prompts after {sp['ready_s']:.1f} s, close "
        f"{report['close_s']:.1f} s\n",
        file=out,
    )
    if args.json:
        h.dump_json(report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
