#!/usr/bin/env python3
"""Sweep benchmark: what the 500 ms screen-rule sweep and the process refresh cost the daemon.

Issue #4 "Performance": 200 panes redrawing a spinner/status line at 10 fps plus 200 idle panes;
goal ≤ 10 % of one core while busy, ≤ 0.3 % while idle. One private daemon, three phases, each
measured over a quiet ``--seconds`` window after ``--settle`` seconds:

* **A baseline**: 0 panes.
* **B idle**: ``--idle`` panes of ``bash --norc --noprofile -i`` (waited for until their prompt
  shows and the sweep has stopped evaluating them for 2 s). This window's CPU is the *idle*
  figure; it contains the process refreshes that fall in it (every ``server.proc_refresh_s``,
  10 s by default: 6 in a 60 s window).
* **C busy**: the idle panes stay and ``--busy`` spinner panes are added: a ``bash -c`` loop
  that draws a Claude Code-like screen once, then redraws its activity line
  (``✻ Doing… (12s · ↓ 345 tokens)``, CUP + ``CSI K``) 10 times a second with builtins only —
  ``printf`` and ``read -t`` on the PTY (which waits without forking), on a schedule from
  ``$EPOCHREALTIME`` so the rate does not drift. The token counter is the frame number: the
  screens read just before and just after the window give the frame rate achieved.

Every pane is spawned with ``agent_hint: "claude"`` (``--hint``), so the sweep evaluates the
bundled Claude Code rules (the largest bundled set) for each pane whose screen changed.

Per window (psutil reads /proc; the only requests are one ``server.status`` just before and
just after it): daemon CPU (user + system of the daemon process, children excluded) as a
percentage of one core, split into the loop thread and the other threads (``asyncio.to_thread``
workers: the process-refresh scans, snapshot writes); wake-ups/s; RSS; the sweep's counters from
``server.status`` (ticks, evaluations, total tick time = ``mean_tick_ms × ticks``, so the window
mean is Δtotal / Δticks, and Δtotal / Δevaluations is the sweep time per evaluation; tick times
are wall time on the loop); events emitted (Δ ``seq``); the CPU of the spinner and of the idle
shells themselves (not the daemon's cost).

After windows B and C the per-tick time is sampled on its own for ``--tick-sample`` seconds:
``server.status`` every 0.25 s, one ``last_tick_ms`` per distinct tick (p50/p99/max), outside
the CPU windows so the polling does not count in them.

The refresh cost is measured directly: ``signaltty.server.refresh.scan`` (the function the
daemon's worker thread runs: one process-table snapshot, the foreground walk, the cmdline/cwd
reads) is called ``--scan-runs`` times in this process on the daemon's live pane processes,
timed with ``time.process_time``; the daemon's non-loop CPU in window B (where nothing else
runs off the loop) is the cross-check.

``--profile FILE`` records the daemon with ``py-spy`` (if installed; ``--gil --nonblocking``:
only the thread that holds the GIL is sampled, so the samples follow CPU use, not waits) for
one more window after C (collapsed stacks in FILE) and prints where the samples fall (feeding
the screens, the sweep and its rule evaluation, the snapshot, the refresh, …). Run
``python bench/sweep.py --quick`` for a check (50 + 50 panes, 10 s windows), ``--json`` for
machine-readable output (the table then goes to stderr).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import psutil

import _harness as h
from signaltty.server.refresh import scan

BASH_IDLE = ["bash", "--norc", "--noprofile", "-i"]
SPINNER_NAME = "stb-spinner"  # $0 of the spinner scripts: how their processes are found
GOAL_BUSY_PCT = 10.0
GOAL_IDLE_PCT = 0.3

# The spinner draws rows 1-16 (activity line on row 10, prompt box on rows 13-15, footer 16).
LAST_ROW = 16

# $1 cols, $2 frames per second. Draws a Claude Code 2.1-like turn in progress once, then only
# the activity line. No external command is run, so the loop never forks.
SPINNER_SCRIPT = r"""
cols=$1; period=$((1000000 / $2))
g=('·' '✢' '✳' '✶' '✻' '✽' '✻' '✶' '✳' '✢')
printf -v rule '%*s' "$cols" ''; rule=${rule// /─}
printf '\e[2J\e[H'
printf '%s\r\n' \
  ' ▐▛███▜▌   Claude Code v2.1.197' \
  '▝▜█████▛▘  Opus 4.8 (1M context) · API Usage Billing' \
  '  ▘▘ ▝▝    /tmp/project' '' \
  '❯ run the test suite and fix what fails' '' \
  '● Running the tests, then reading the failures.' ''
printf '\e[11;1H  ⎿  Tip: Start with small features or bug fixes\r\n\r\n'
printf '%s\r\n❯ \r\n%s\r\n' "$rule" "$rule"
printf '  esc to interrupt · ← for agents'
i=0; next=${EPOCHREALTIME//[!0-9]/}
while :; do
  printf '\e[10;1H%s Doing… (%ds · ↓ %d tokens)\e[K\e[14;3H' "${g[i % 10]}" "$SECONDS" "$i"
  i=$((i + 1)); next=$((next + period)); now=${EPOCHREALTIME//[!0-9]/}; d=$((next - now))
  if ((d > 0)); then
    printf -v t '%d.%06d' $((d / 1000000)) $((d % 1000000)); read -r -t "$t"
  else
    next=$now
  fi
done
"""
_FRAME = re.compile(r"↓ (\d+) tokens")


# ------------------------------------------------------------------ panes


def spawn(
    d: h.BenchDaemon,
    ws_id: str,
    argv: list[str],
    n: int,
    size: tuple[int, int],
    hint: str | None,
) -> tuple[list[str], float]:
    """Spawn ``n`` panes of ``argv``; (pane ids, seconds the requests took)."""
    params: dict[str, Any] = {"workspace_id": ws_id, "argv": argv, "cols": size[0], "rows": size[1]}
    if hint:
        params["agent_hint"] = hint
    t0 = time.perf_counter()
    with d.client() as c:
        ids = [c.call("pane.spawn", params)["pane"]["id"] for _ in range(n)]
    d.note_children()
    return ids, time.perf_counter() - t0


def wait_screens(d: h.BenchDaemon, pane_ids: list[str], ready: Any, timeout: float) -> int:
    """Poll ``pane.read mode=screen`` until ``ready(text)`` for every pane; number not ready."""
    waiting = set(pane_ids)
    deadline = time.monotonic() + timeout
    with d.client() as c:
        while waiting and time.monotonic() < deadline:
            for pane_id in list(waiting):
                if ready(c.call("pane.read", {"pane_id": pane_id, "mode": "screen"})["text"]):
                    waiting.discard(pane_id)
            if waiting:
                time.sleep(0.2)
    d.note_children()
    return len(waiting)


def wait_sweep_quiet(d: h.BenchDaemon, quiet_s: float, timeout: float) -> float | None:
    """Seconds until the sweep's evaluation count has stood still for ``quiet_s`` (the new
    panes' first evaluations are done), None on timeout."""
    t0 = time.monotonic()
    last, since = -1, t0
    with d.client() as c:
        while time.monotonic() - t0 < timeout:
            evals = int((c.call("server.status").get("sweep") or {}).get("evaluations", 0))
            now = time.monotonic()
            if evals != last:
                last, since = evals, now
            elif now - since >= quiet_s:
                return now - t0
            time.sleep(0.25)
    return None


def read_frames(d: h.BenchDaemon, pane_ids: list[str]) -> tuple[dict[str, int], float]:
    """Frame counter shown by each spinner pane, and the mean time of the reads."""
    out: dict[str, int] = {}
    t0 = time.perf_counter()
    with d.client() as c:
        for pane_id in pane_ids:
            m = _FRAME.search(c.call("pane.read", {"pane_id": pane_id, "mode": "screen"})["text"])
            if m:
                out[pane_id] = int(m.group(1))
    return out, (t0 + time.perf_counter()) / 2


def pane_procs(d: h.BenchDaemon) -> dict[str, list[psutil.Process]]:
    """The daemon's direct children (the pane processes), grouped as ``busy``/``idle``."""
    assert d.ps is not None
    groups: dict[str, list[psutil.Process]] = {"busy": [], "idle": []}
    for child in d.ps.children(recursive=False):
        try:
            cmd = child.cmdline()
        except psutil.Error:
            continue
        groups["busy" if SPINNER_NAME in cmd else "idle"].append(child)
    return groups


def procs_cpu(procs: list[psutil.Process]) -> dict[int, float]:
    out: dict[int, float] = {}
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        out[p.pid] = t.user + t.system
    return out


# ------------------------------------------------------------------ measurement


def daemon_cpu(d: h.BenchDaemon) -> tuple[float, float]:
    """(total, loop thread) CPU seconds of the daemon; the loop thread's id is the pid."""
    assert d.ps is not None
    total = d.cpu_seconds()
    main = 0.0
    for t in d.ps.threads():
        if t.id == d.ps.pid:
            main = t.user_time + t.system_time
    return total, main


def sweep_totals(status: dict[str, Any]) -> dict[str, float]:
    sw = status.get("sweep") or {}
    ticks = int(sw.get("ticks", 0))
    return {
        "ticks": ticks,
        "evaluations": int(sw.get("evaluations", 0)),
        "tick_ms_total": float(sw.get("mean_tick_ms", 0.0)) * ticks,
        "max_tick_ms": float(sw.get("max_tick_ms", 0.0)),
        "seq": int(status.get("seq", 0)),
    }


def measure(d: h.BenchDaemon, seconds: float, busy_ids: list[str]) -> dict[str, Any]:
    """One quiet window of ``seconds``: daemon CPU split, sweep counters, pane programs' CPU."""
    assert d.ps is not None
    frames0, tf0 = read_frames(d, busy_ids) if busy_ids else ({}, 0.0)
    groups = pane_procs(d)
    s0 = sweep_totals(d.call("server.status"))
    ctx0 = d.ps.num_ctx_switches().voluntary
    kids0 = {g: procs_cpu(p) for g, p in groups.items()}
    total0, main0 = daemon_cpu(d)
    t0 = time.perf_counter()
    time.sleep(seconds)
    total1, main1 = daemon_cpu(d)
    wall = time.perf_counter() - t0
    kids1 = {g: procs_cpu(p) for g, p in groups.items()}
    ctx1 = d.ps.num_ctx_switches().voluntary
    s1 = sweep_totals(d.call("server.status"))
    frames1, tf1 = read_frames(d, busy_ids) if busy_ids else ({}, 0.0)

    def pct(cpu_s: float) -> float:
        return cpu_s / wall * 100.0

    ticks = s1["ticks"] - s0["ticks"]
    evals = s1["evaluations"] - s0["evaluations"]
    tick_ms = s1["tick_ms_total"] - s0["tick_ms_total"]
    kids = {
        g: sum(kids1[g][pid] - c0 for pid, c0 in kids0[g].items() if pid in kids1[g])
        for g in groups
    }
    fps = None
    if frames1:
        deltas = [frames1[p] - frames0[p] for p in frames1 if p in frames0]
        if deltas and tf1 > tf0:
            fps = sum(deltas) / len(deltas) / (tf1 - tf0)
    return {
        "window_s": wall,
        "cpu_s": total1 - total0,
        "cpu_pct": pct(total1 - total0),
        "loop_cpu_pct": pct(main1 - main0),
        "other_threads_cpu_pct": pct((total1 - total0) - (main1 - main0)),
        "wakeups_per_s": (ctx1 - ctx0) / wall,
        "rss_mb": d.rss_mb(),
        "threads": d.ps.num_threads(),
        "ticks": ticks,
        "evaluations": evals,
        "evaluations_per_tick": evals / ticks if ticks else None,
        "tick_mean_ms": tick_ms / ticks if ticks else None,
        "ms_per_evaluation": tick_ms / evals if evals else None,
        "sweep_pct": tick_ms / 1000.0 / wall * 100.0,
        "max_tick_ms_since_start": s1["max_tick_ms"],
        "max_tick_rose_in_window": s1["max_tick_ms"] > s0["max_tick_ms"],
        "events": s1["seq"] - s0["seq"],
        "busy_panes_cpu_pct": pct(kids["busy"]),
        "idle_panes_cpu_pct": pct(kids["idle"]),
        "spinner_fps": fps,
    }


def sample_ticks(d: h.BenchDaemon, seconds: float) -> dict[str, Any]:
    """``last_tick_ms`` of each distinct tick seen by polling ``server.status`` every 0.25 s."""
    seen: dict[int, float] = {}
    deadline = time.monotonic() + seconds
    with d.client() as c:
        while time.monotonic() < deadline:
            sw = c.call("server.status").get("sweep") or {}
            seen[int(sw.get("ticks", 0))] = float(sw.get("last_tick_ms", 0.0))
            time.sleep(0.25)
    ms = list(seen.values())
    return {
        "ticks": len(ms),
        "p50_ms": h.percentile(ms, 50),
        "p99_ms": h.percentile(ms, 99),
        "max_ms": max(ms) if ms else None,
    }


def time_scan(d: h.BenchDaemon, runs: int) -> dict[str, Any]:
    """CPU and wall time of ``refresh.scan`` over the daemon's pane processes, in this process."""
    assert d.ps is not None
    roots = {f"p{n}": c.pid for n, c in enumerate(d.ps.children(recursive=False))}
    cpu: list[float] = []
    wall: list[float] = []
    seen = 0
    for _ in range(runs):
        c0, w0 = time.process_time(), time.perf_counter()
        out = scan(roots)
        cpu.append((time.process_time() - c0) * 1000.0)
        wall.append((time.perf_counter() - w0) * 1000.0)
        seen = sum(1 for o in out.values() if o.process_name)
    return {
        "roots": len(roots),
        "named": seen,
        "processes": len(psutil.pids()),
        "cpu_ms_median": h.median(cpu),
        "cpu_ms_max": max(cpu) if cpu else None,
        "wall_ms_median": h.median(wall),
    }


# ------------------------------------------------------------------ profile


# Buckets of the profile summary: the first pattern found in a stack (root first) names it.
_BUCKETS = (
    ("sweep", ("tick (signaltty/server/sweep.py",)),
    ("process refresh", ("signaltty/server/refresh.py", "signaltty/system/proctable.py")),
    ("snapshot/tails", ("save (signaltty/server/daemon.py", "persistence.py")),
    (
        "screen feed (drain)",
        (
            "_drain (signaltty/server/panes.py",
            "drain (signaltty/term/screen.py",
            "TolerantStream.feed",
        ),
    ),
    ("PTY read + OSC scan", ("_read_once", "_on_readable")),
    ("event loop (uvloop, native)", ("Runner.run (asyncio/runners.py",)),
    (
        "requests",
        (
            "signaltty/server/router.py",
            "signaltty/server/handlers/",
            "signaltty/server/listener.py",
        ),
    ),
)

# Parts of the sweep's samples.
_SWEEP_PARTS = (
    ("rule evaluation", "evaluate (signaltty/core/screen_rules.py"),
    ("dirty rows → row text", "_refresh_rows (signaltty/server/sweep.py"),
    ("state change (store.apply)", "apply (signaltty/server/store.py"),
)


def profile_summary(path: str) -> dict[str, Any]:
    """Share of py-spy samples per bucket (and the top leaf functions) of a collapsed-stack file."""
    buckets: collections.Counter[str] = collections.Counter()
    sweep_parts: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    total = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not count.isdigit():
                continue
            n = int(count)
            total += n
            name = "other"
            for bucket, pats in _BUCKETS:
                if bucket.startswith("event loop"):
                    # Only when no Python frame runs above the loop (uvloop's own C code).
                    if stack.rsplit(";", 1)[-1].startswith(pats[0]):
                        name = bucket
                        break
                    continue
                if any(p in stack for p in pats):
                    name = bucket
                    break
            buckets[name] += n
            if name == "sweep":
                for part, pat in _SWEEP_PARTS:
                    if pat in stack:
                        sweep_parts[part] += n
                        break
                else:
                    sweep_parts["other"] += n
            leaves[stack.rsplit(";", 1)[-1]] += n
    return {
        "samples": total,
        "buckets": {k: v / total for k, v in buckets.most_common()} if total else {},
        "sweep_parts": {k: v / total for k, v in sweep_parts.most_common()} if total else {},
        "top_leaves": [[k, v / total] for k, v in leaves.most_common(12)] if total else [],
    }


def record_profile(d: h.BenchDaemon, out: str, seconds: float) -> dict[str, Any] | None:
    spy = shutil.which("py-spy")
    if spy is None or d.proc is None:
        h.log("--profile: py-spy not found (pip install py-spy); not profiling")
        return None
    proc = subprocess.Popen(
        [
            spy,
            "record",
            "--pid",
            str(d.proc.pid),
            "--rate",
            "250",
            "--nonblocking",
            "--gil",
            "--format",
            "raw",
            "--output",
            out,
            "--duration",
            str(int(seconds)),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _, err = proc.communicate(timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    if proc.returncode != 0 or not os.path.exists(out):
        h.log(f"py-spy failed ({proc.returncode}): {err.decode(errors='replace')[-400:]}")
        return None
    return profile_summary(out)


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--busy", type=int, default=None, help="spinner panes (200; 50 with --quick)")
    ap.add_argument("--idle", type=int, default=None, help="idle bash panes (200; 50 with --quick)")
    ap.add_argument("--fps", type=int, default=10, help="spinner frames per second (10)")
    ap.add_argument(
        "--seconds", type=float, default=None, help="window length (60; 10 with --quick)"
    )
    ap.add_argument(
        "--settle",
        type=float,
        default=None,
        help="quiet time before each window (10; 3 with --quick)",
    )
    ap.add_argument(
        "--tick-sample",
        type=float,
        default=None,
        help="tick sampling after B and C (10 s; 5 with --quick)",
    )
    ap.add_argument("--scan-runs", type=int, default=5, help="direct refresh.scan timings (5)")
    ap.add_argument("--size", default="120x40", help="pane size COLSxROWS (120x40)")
    ap.add_argument("--hint", default="claude", help="agent_hint of every pane ('' for none)")
    ap.add_argument(
        "--profile", metavar="FILE", help="py-spy collapsed stacks of one more busy window"
    )
    ap.add_argument("--quick", action="store_true", help="50 + 50 panes, 10 s windows")
    ap.add_argument("--json", action="store_true", help="JSON on stdout (the table goes to stderr)")
    args = ap.parse_args(argv)
    n_busy = args.busy if args.busy is not None else (50 if args.quick else 200)
    n_idle = args.idle if args.idle is not None else (50 if args.quick else 200)
    seconds = args.seconds if args.seconds is not None else (10.0 if args.quick else 60.0)
    settle = args.settle if args.settle is not None else (3.0 if args.quick else 10.0)
    tick_s = args.tick_sample if args.tick_sample is not None else (5.0 if args.quick else 10.0)
    cols, _, rows = args.size.partition("x")
    size = (int(cols), int(rows))
    if size[1] < LAST_ROW:
        ap.error(f"--size: at least {LAST_ROW} rows")
    hint = args.hint or None
    spinner = [
        "bash",
        "--norc",
        "--noprofile",
        "-c",
        SPINNER_SCRIPT,
        SPINNER_NAME,
        str(size[0]),
        str(args.fps),
    ]

    report: dict[str, Any] = {
        "benchmark": "sweep",
        "machine": h.machine_info(),
        "busy_panes": n_busy,
        "idle_panes": n_idle,
        "fps": args.fps,
        "size": list(size),
        "hint": hint,
        "window_s": seconds,
        "settle_s": settle,
        "goals_pct": {"busy": GOAL_BUSY_PCT, "idle": GOAL_IDLE_PCT},
    }
    failed = False
    with h.terminate_on_signals(), h.BenchDaemon(prefix="sts-") as d:
        status = d.call("server.status")
        report["daemon"] = {"pid": status.get("pid"), "version": status.get("version")}
        with d.client() as c:
            ws_id = c.call("workspace.create", {"name": "sweep", "cwd": d.tmp})["workspace"]["id"]
        h.log(
            f"daemon pid {status.get('pid')}; settling {settle:g} s, then A: {seconds:g} s with 0 "
            "panes"
        )
        time.sleep(settle)
        report["A"] = a = measure(d, seconds, [])
        h.log(f"A 0 panes: cpu {a['cpu_pct']:.3f} %")

        idle_ids, t = spawn(d, ws_id, BASH_IDLE, n_idle, size, hint)
        bad = wait_screens(d, idle_ids, lambda s: "$" in s or "#" in s, max(60.0, n_idle * 0.5))
        h.log(
            f"B: {n_idle} idle panes spawned in {t:.1f} s ({bad} without prompt); settling, then "
            f"{seconds:g} s"
        )
        failed |= bad > 0
        report["B_sweep_quiet_after_s"] = quiet = wait_sweep_quiet(d, 2.0, 60.0)
        if quiet is None:
            h.log("WARNING: the sweep kept evaluating idle panes for 60 s")
        time.sleep(settle)
        report["B"] = b = measure(d, seconds, [])
        h.log(
            f"B idle: cpu {b['cpu_pct']:.3f} % (other threads {b['other_threads_cpu_pct']:.3f} %)"
        )
        report["B_ticks"] = sample_ticks(d, tick_s)

        busy_ids, t = spawn(d, ws_id, spinner, n_busy, size, hint)
        bad = wait_screens(d, busy_ids, lambda s: "tokens)" in s, max(60.0, n_busy * 0.5))
        h.log(
            f"C: {n_busy} spinner panes spawned in {t:.1f} s ({bad} not drawing); settling, then "
            f"{seconds:g} s"
        )
        failed |= bad > 0
        time.sleep(settle)
        report["C"] = c_ = measure(d, seconds, busy_ids)
        h.log(
            f"C busy: cpu {c_['cpu_pct']:.2f} %, sweep {c_['sweep_pct']:.2f} %, "
            f"tick {h.fmt(c_['tick_mean_ms'])} ms, {h.fmt(c_['evaluations_per_tick'], 1)} "
            "evals/tick, "
            f"spinners {h.fmt(c_['spinner_fps'], 2)} fps"
        )
        report["C_ticks"] = sample_ticks(d, tick_s)
        report["scan"] = time_scan(d, args.scan_runs)
        h.log(
            f"refresh.scan of {report['scan']['roots']} panes: "
            f"{h.fmt(report['scan']['cpu_ms_median'], 1)} ms CPU"
        )
        if args.profile:
            h.log(f"profiling the busy daemon for {seconds:g} s with py-spy")
            report["profile"] = record_profile(d, args.profile, seconds)

        status = d.call("server.status")
        report["live_panes_after"] = status.get("live_panes")
        if status.get("live_panes") != n_busy + n_idle:
            h.log(f"WARNING: {status.get('live_panes')} live panes, expected {n_busy + n_idle}")
            failed = True
        with d.client() as c:
            for pane_id in idle_ids + busy_ids:
                c.call("pane.close", {"pane_id": pane_id, "signal": "KILL"})
        d.note_children()
    report["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["daemon_exit_code"] = d.exit_code
    report["leftover_processes"] = d.leftovers
    report["temp_dir_removed"] = not os.path.exists(d.tmp)
    failed |= bool(d.leftovers) or not report["temp_dir_removed"]

    scan_ms = report["scan"]["cpu_ms_median"]
    period = 10.0  # server.proc_refresh_s default; the private daemon has no config.toml
    report["refresh"] = {
        "period_s": period,
        "scan_cpu_ms": scan_ms,
        "pct_of_core": scan_ms / 1000.0 / period * 100.0 if scan_ms is not None else None,
    }
    report["goals_met"] = {
        "busy": c_["cpu_pct"] <= GOAL_BUSY_PCT,
        "idle": b["cpu_pct"] <= GOAL_IDLE_PCT,
    }

    out = sys.stderr if args.json else sys.stdout

    def row(name: str, m: dict[str, Any]) -> list[Any]:
        return [
            name,
            h.fmt(m["cpu_pct"], 3),
            h.fmt(h.ratio(m["cpu_pct"], a["cpu_pct"])),
            h.fmt(m["loop_cpu_pct"], 3),
            h.fmt(m["other_threads_cpu_pct"], 3),
            h.fmt(m["sweep_pct"], 3),
            h.fmt(m["tick_mean_ms"], 3),
            h.fmt(m["evaluations_per_tick"], 1),
            h.fmt(m["events"] / m["window_s"], 1),
            h.fmt(m["wakeups_per_s"], 1),
            h.fmt(m["rss_mb"], 1),
        ]

    h.print_table(
        f"sweep: {n_busy} spinner + {n_idle} idle panes ({size[0]}x{size[1]}, hint {hint}), "
        f"{seconds:g} s windows, {report['machine']['cpus']} cpus, load "
        f"{report['machine']['load_avg_at_start']}, "
        f"{report['machine']['date']}",
        [
            "phase",
            "cpu %",
            "÷ A",
            "loop %",
            "threads %",
            "sweep %",
            "tick ms",
            "evals/tick",
            "events/s",
            "wakeups/s",
            "RSS MB",
        ],
        [row("A 0 panes", a), row(f"B {n_idle} idle", b), row(f"C +{n_busy} busy", c_)],
        out,
    )
    bt, ct = report["B_ticks"], report["C_ticks"]
    sc = report["scan"]
    h.print_table(
        "goals, tick samples and refresh",
        ["figure", "measured", "goal", "met"],
        [
            [
                "idle cpu % (B)",
                h.fmt(b["cpu_pct"], 3),
                f"≤ {GOAL_IDLE_PCT}",
                "yes" if report["goals_met"]["idle"] else "NO",
            ],
            [
                "busy cpu % (C)",
                h.fmt(c_["cpu_pct"], 2),
                f"≤ {GOAL_BUSY_PCT:g}",
                "yes" if report["goals_met"]["busy"] else "NO",
            ],
            [
                "B tick p50/p99/max ms",
                f"{h.fmt(bt['p50_ms'], 3)}/{h.fmt(bt['p99_ms'], 3)}/{h.fmt(bt['max_ms'], 3)}",
                "",
                "",
            ],
            [
                "C tick p50/p99/max ms",
                f"{h.fmt(ct['p50_ms'], 2)}/{h.fmt(ct['p99_ms'], 2)}/{h.fmt(ct['max_ms'], 2)}",
                "",
                "",
            ],
            [
                f"refresh.scan CPU ms ({sc['roots']} panes, {sc['processes']} procs)",
                h.fmt(sc["cpu_ms_median"], 1),
                "",
                "",
            ],
            [
                f"refresh every {period:g} s, % of a core",
                h.fmt(report["refresh"]["pct_of_core"], 3),
                "",
                "",
            ],
            ["C sweep ms per evaluation", h.fmt(c_["ms_per_evaluation"], 3), "", ""],
            ["spinner fps achieved", h.fmt(c_["spinner_fps"], 2), f"{args.fps}", ""],
            ["spinners' own cpu % (C)", h.fmt(c_["busy_panes_cpu_pct"], 2), "", ""],
            ["idle shells' own cpu % (C)", h.fmt(c_["idle_panes_cpu_pct"], 3), "", ""],
        ],
        out,
    )
    if report.get("profile"):
        prof = report["profile"]
        h.print_table(
            f"py-spy: {prof['samples']} samples of the busy daemon ({args.profile})",
            ["where", "share"],
            [[k, f"{v * 100:.1f} %"] for k, v in prof["buckets"].items()]
            + [[f"  sweep: {k}", f"{v * 100:.1f} %"] for k, v in prof["sweep_parts"].items()],
            out,
        )
        h.print_table(
            "top leaf functions",
            ["function", "share"],
            [[k[:100], f"{v * 100:.1f} %"] for k, v in prof["top_leaves"]],
            out,
        )
    if args.json:
        h.dump_json(report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
