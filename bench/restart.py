#!/usr/bin/env python3
"""``signaltty restart`` (issue 15): how long the call takes and how long pane output pauses.

N panes each print a monotonic timestamp every 10 ms. The daemon is restarted R times, one
second apart. Figures, each against a baseline measured in the same run:

* **restart call, ms**: from sending ``server.restart`` to the new image's answer; baseline:
  ``daemon --check`` alone (the new code's start-up, which the restart runs first) and a
  ``server.status`` round trip.
* **switch, ms**: how long no pane's output is read — from the old image pausing its readers
  to the new image restored (``server.restarted.switch_ms``); the programs go on writing into
  their PTYs meanwhile.
* **program held up, ms**: the largest gap between consecutive timestamps a pane's program
  wrote around each restart, ÷ the largest gap in the same panes during as long a stretch
  without a restart (scheduling jitter of the 10 ms ticker on this machine): a program is
  held up only if its PTY buffer fills during the switch.
* **lost or doubled lines**: must be 0 (the timestamps read back are in order, one per tick).

Usage: ``python bench/restart.py [--panes 10] [--rounds 5] [--json]``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as h

TICKER = (
    "import time, sys\n"
    "i = 0\n"
    "while True:\n"
    "    i += 1\n"
    "    sys.stdout.write(f'T {i} {time.monotonic():.6f}\\n'); sys.stdout.flush()\n"
    "    time.sleep(0.01)\n"
)
_LINE = re.compile(r"^T (\d+) (\d+\.\d+)$", re.M)


def _ticks(d: h.BenchDaemon, pane_id: str) -> list[tuple[int, float]]:
    text = d.call("pane.read", {"pane_id": pane_id, "lines": 5000})["text"]
    return [(int(a), float(b)) for a, b in _LINE.findall(text)]


def _max_gap(ticks: list[tuple[int, float]], start: float, end: float) -> float:
    inside = [t for _, t in ticks if start <= t <= end]
    return max((b - a for a, b in zip(inside, inside[1:], strict=False)), default=0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--panes", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with h.terminate_on_signals(), h.BenchDaemon() as d:
        ws = d.call("workspace.create", {"name": "b", "cwd": d.tmp})["workspace"]
        panes = [
            d.call(
                "pane.spawn",
                {"workspace_id": ws["id"], "argv": [sys.executable, "-c", TICKER]},
            )["pane"]["id"]
            for _ in range(args.panes)
        ]
        time.sleep(1.5)
        quiet_start = time.monotonic()
        time.sleep(args.rounds * 1.0)
        quiet_end = time.monotonic()
        status_ms, check_ms, call_ms, switch_ms, windows = [], [], [], [], []
        for _ in range(3):
            t0 = time.perf_counter()
            d.call("server.status")
            status_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "signaltty", "daemon", "--check", "--state-dir",
                 d.path("state")],
                env=d.env, cwd="/", capture_output=True, check=True,
            )
            check_ms.append((time.perf_counter() - t0) * 1000)
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            start = time.monotonic()
            with d.client(timeout=None) as c:
                answer = c.call("server.restart")
            call_ms.append((time.perf_counter() - t0) * 1000)
            switch_ms.append(answer["switch_ms"])
            windows.append((start - 0.2, time.monotonic() + 0.3))
            assert answer["panes_kept"] == args.panes, answer
            time.sleep(1.0)
        time.sleep(0.5)
        pauses, quiet, broken = [], [], 0
        for pane_id in panes:
            ticks = _ticks(d, pane_id)
            numbers = [n for n, _ in ticks]
            if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
                broken += 1
            quiet.append(_max_gap(ticks, quiet_start, quiet_end))
            pauses += [_max_gap(ticks, a, b) for a, b in windows]
    result = {
        "machine": h.machine_info(),
        "code": h.code_version(),
        "panes": args.panes,
        "rounds": args.rounds,
        "restart_call_ms": h.median(call_ms),
        "check_ms": h.median(check_ms),
        "status_ms": h.median(status_ms),
        "restart_vs_check": h.ratio(h.median(call_ms), h.median(check_ms)),
        "switch_ms": h.median(switch_ms),
        "switch_ms_max": max(switch_ms),
        "pause_ms_max": max(pauses) * 1000,
        "pause_ms_median": (h.median(pauses) or 0) * 1000,
        "quiet_gap_ms_max": max(quiet) * 1000,
        "pause_vs_quiet": h.ratio(max(pauses), max(quiet)),
        "panes_with_lost_or_doubled_lines": broken,
    }
    if args.json:
        h.dump_json(result)
    else:
        h.print_table(
            "signaltty restart",
            ["figure", "value", "against the same run's baseline"],
            [
                ("restart call (median)", f"{h.fmt(result['restart_call_ms'], 0)} ms",
                 f"{h.fmt(result['restart_vs_check'])}x daemon --check "
                 f"({h.fmt(result['check_ms'], 0)} ms)"),
                ("switch: no pane read (median / max)",
                 f"{h.fmt(result['switch_ms'], 0)} / {h.fmt(result['switch_ms_max'], 0)} ms",
                 f"{h.fmt(h.ratio(result['switch_ms'], result['status_ms']))}x a status round trip "
                 f"({h.fmt(result['status_ms'], 1)} ms)"),
                ("program held up (max / median)",
                 f"{h.fmt(result['pause_ms_max'], 0)} / {h.fmt(result['pause_ms_median'], 0)} ms",
                 f"{h.fmt(result['pause_vs_quiet'])}x the largest gap without a restart "
                 f"({h.fmt(result['quiet_gap_ms_max'], 0)} ms)"),
                ("panes with lost or doubled lines", str(broken), "goal 0"),
            ],
        )
    return 0 if broken == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
