#!/usr/bin/env python3
"""Cost of ``signaltty hook-event`` as agents pay it on every hook (issue #3 "Performance").

Prints, for a status hook (``UserPromptSubmit``/``Stop`` alternating) against a running
private daemon:

* wall time of the installed ``signaltty hook-event`` process, median and p95 over N runs,
  as a ratio to ``python -I -S -c pass`` measured in the same run (goal ≤ 2×);
* the same entry point under ``python -I -S`` (no site-packages scan), for reference;
* server-side latency: from writing the request on an open connection to receiving the
  ``agent.*`` event on a subscribed connection, median and p95.

Usage: ``python bench/hook.py [--runs 200] [--json]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _harness import BenchDaemon, dump_json, fmt, log, median, percentile, print_table, ratio  # noqa: E402


def _ms(seconds: float | None) -> float | None:
    """Seconds to milliseconds; None (no runs) stays None."""
    return None if seconds is None else seconds * 1e3


def time_runs(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    """Wall seconds of ``runs`` sequential runs of ``cmd`` (each must exit 0)."""
    out: list[float] = []
    for i in range(runs):
        argv = [a.replace("{EVENT}", "Stop" if i % 2 else "UserPromptSubmit") for a in cmd]
        t0 = time.perf_counter()
        r = subprocess.run(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        out.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise RuntimeError(f"{argv} exited {r.returncode}: {r.stderr.decode()[-300:]}")
    return out


def server_latency(d: BenchDaemon, pane_id: str, runs: int) -> list[float]:
    """Request written → ``agent.*`` event received, on already-open connections."""
    sub = d.client(timeout=None)
    sub.call("subscribe", {"events": ["agent.*"]})
    req = d.client(timeout=None)
    out: list[float] = []
    for i in range(runs):
        event = "Stop" if i % 2 else "UserPromptSubmit"
        t0 = time.perf_counter()
        req.send("hook-event", {"agent": "claude", "event": event, "pane_id": pane_id})
        ev = sub.next_event(timeout=10)
        out.append(time.perf_counter() - t0)
        assert ev is not None
        assert ev["event"].startswith("agent."), ev
        req.read_message(timeout=10)
    sub.close()
    req.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    script = shutil.which("signaltty") or ""
    with BenchDaemon(prefix="sth-") as d:
        ws = d.call("workspace.create", {"name": "bench", "cwd": d.tmp})["workspace"]
        pane = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "3600"]})["pane"]
        env = dict(d.env, SIGNALTTY_PANE=pane["id"])
        hook_args = ["hook-event", "--agent", "claude", "--event", "{EVENT}"]
        cases = [("python -I -S -c pass (baseline)", [sys.executable, "-I", "-S", "-c", "pass"])]
        if script:
            cases.append(("signaltty hook-event (console script)", [script, *hook_args]))
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        entry = (
            f"import sys; sys.path.insert(0, {repo!r}); "
            "from signaltty.cli.entry import main; sys.exit(main(sys.argv[1:]))"
        )
        cases.append(
            (
                "python -I -S (entry) hook-event",
                [sys.executable, "-I", "-S", "-c", entry, *hook_args],
            )
        )
        env_run = env
        results: dict[str, list[float]] = {}
        for name, cmd in cases:
            time_runs(cmd, env_run, 5)  # warm the page cache
            log(f"timing {name} × {args.runs}")
            results[name] = time_runs(cmd, env_run, args.runs)
        lat = server_latency(d, pane["id"], args.runs)
    base = median(results[cases[0][0]])
    rows = []
    per_case: dict[str, dict[str, float | None]] = {}
    data: dict[str, object] = {"runs": args.runs, "cases": per_case}
    for name, values in results.items():
        med, p95 = median(values), percentile(values, 95)
        rows.append([name, fmt(_ms(med)), fmt(_ms(p95)), fmt(ratio(med, base))])
        per_case[name] = {
            "median_ms": _ms(med),
            "p95_ms": _ms(p95),
            "ratio_to_baseline": ratio(med, base),
        }
    rows.append(
        [
            "server: request → agent.* event",
            fmt(_ms(median(lat))),
            fmt(_ms(percentile(lat, 95))),
            "-",
        ]
    )
    data["server_latency"] = {"median_ms": _ms(median(lat)), "p95_ms": _ms(percentile(lat, 95))}
    if args.json:
        dump_json(data)
    else:
        print_table(
            f"hook-event cost ({args.runs} runs each)",
            ["case", "median ms", "p95 ms", "× baseline"],
            rows,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
