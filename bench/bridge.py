#!/usr/bin/env python3
"""Cost of ``signaltty bridge``, which ssh starts on the remote host for every ``--host``
command (issue 16 item 1: it must start fast).

Against a running private daemon, the wall time of one connection through the bridge (start
it, send ``server.status`` on stdin, read the answer, EOF, exit), median and p95 over N runs,
as a ratio to ``python -I -S -c pass`` measured in the same run (the cases take turns run by
run, so a change in the machine's load hits all of them alike); for reference, the same
request made by the full CLI (``signaltty --json status``, what the local side of ``--host``
loads) and a hook report (``hook-event``, the budget the bridge shares: issue 12).
ssh's own cost (key exchange, or a ControlMaster round trip) comes on top and is not
measured here.

Usage: ``python bench/bridge.py [--runs 100] [--json]``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _harness import (  # noqa: E402
    BenchDaemon,
    dump_json,
    fmt,
    log,
    machine_info,
    median,
    percentile,
    print_table,
    ratio,
)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = "python -I -S -c pass (baseline)"
BRIDGE = "signaltty bridge (one server.status)"
REQUEST = (
    json.dumps({"protocol": "signaltty/1", "id": "b", "method": "server.status", "params": {}})
    + "\n"
).encode()


def run_once(argv: list[str], env: dict[str, str], stdin: bytes | None) -> float:
    """Wall seconds of one run of ``argv`` (which must exit 0 and, given a request, answer)."""
    t0 = time.perf_counter()
    r = subprocess.run(
        argv,
        env=env,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
    )
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{argv} exited {r.returncode}: {r.stderr.decode()[-300:]}")
    if stdin is not None and b'"ok":true' not in r.stdout.replace(b" ", b""):
        raise RuntimeError(f"{argv} gave no answer: {r.stdout[-300:]!r}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    compileall.compile_dir(os.path.join(REPO, "signaltty"), quiet=1)
    beside = os.path.join(os.path.dirname(sys.executable), "signaltty")
    script = beside if os.access(beside, os.X_OK) else shutil.which("signaltty")
    if script is None:
        log("no signaltty console script next to this python or on $PATH: install it first")
        return 1
    with BenchDaemon(prefix="stb-") as d:
        env = dict(d.env)
        cases: list[tuple[str, list[str], bytes | None]] = [
            (BASELINE, [sys.executable, "-I", "-S", "-c", "pass"], None),
            (BRIDGE, [script, "bridge"], REQUEST),
            ("  signaltty --json status (full CLI)", [script, "--json", "status"], None),
            (
                "  signaltty hook-event (no pane, for reference)",
                [script, "hook-event", "--agent", "claude", "--event", "Stop"],
                None,
            ),
        ]
        results: dict[str, list[float]] = {name: [] for name, *_ in cases}
        log(f"timing {len(cases)} cases × {args.runs} runs, taking turns")
        for i in range(-5, args.runs):  # 5 rounds warm the page cache
            for name, argv, stdin in cases:
                took = run_once(argv, env, stdin)
                if i >= 0:
                    results[name].append(took)
    base = median(results[BASELINE])
    base_p95 = percentile(results[BASELINE], 95)
    rows = []
    per_case: dict[str, dict[str, float | None]] = {}
    for name, values in results.items():
        med, p95 = median(values), percentile(values, 95)
        ms = (None if med is None else med * 1e3, None if p95 is None else p95 * 1e3)
        rows.append(
            [name, fmt(ms[0]), fmt(ms[1]), fmt(ratio(med, base)), fmt(ratio(p95, base_p95))]
        )
        per_case[name] = {
            "median_ms": ms[0],
            "p95_ms": ms[1],
            "ratio_to_baseline": ratio(med, base),
            "p95_ratio_to_baseline_p95": ratio(p95, base_p95),
        }
    if args.json:
        dump_json({"runs": args.runs, "machine": machine_info(), "cases": per_case})
        return 0
    print_table(
        f"bridge cost ({args.runs} runs each, same run, {time.strftime('%Y-%m-%d %H:%M')})",
        ["case", "median ms", "p95 ms", "median ÷ baseline", "p95 ÷ baseline p95"],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
