#!/usr/bin/env python3
"""N panes replaying recorded real agent turns at recorded speed (issue 12: "20 panes replaying
recorded real Claude Code / Codex working turns at recorded speed: daemon CPU ÷ tmux server's
≤ 1.0").

The recordings are ``bench/fixtures/replay/{claude,codex}_turn.json.gz``, made by
``bench/record_turn.py`` from the pinned real CLIs against the real-agent tier's fake model:
one working turn each (prompt, 3 s working indicator, a permission dialog answered, a shell
command, a ~2 KB streamed markdown answer), 120x40. Every pane runs ``bench/_replay_player.py``:
the CLI's start-up screen once, then the turn in a loop at its recorded pace with
``--gap-ms`` (2000) of silence before each prompt, each copy starting at a different point of
the loop (copy i at i/N).

For each recording, in the same run and one after the other (the order alternates between
repetitions):

* **signaltty**: a private daemon (``_harness.BenchDaemon``), N panes of the player;
* **tmux**: a private server (``tmux -S <tmp>/tmux.sock -f /dev/null``, status line off, so
  windows are 120x40 like the panes), started with an idle window so its pid is known, then N
  windows of the same player.

After ``--settle`` seconds (5; the start-up screens are drawn), the CPU seconds (user + system,
children excluded: the players' own CPU is the same on both sides) of the daemon and of the
tmux server are read over a ``--seconds`` window (30; 10 with ``--quick``). Printed: each as
% of one core, and the ratio daemon ÷ tmux (goal ≤ 1.0), medians over ``--repeat`` runs with
the range. A side's figure counts only if every player was still running at the end of its
window.

Usage: ``python bench/replay.py [--panes 20] [--repeat 3] [--recordings claude,codex]
[--json] [--quick] [--profile DIR] [--daemon-config TOML]``; ``--profile DIR`` runs ``py-spy
record`` on the daemon during each signaltty window (``DIR/replay-<recording>-<n>.txt``,
collapsed stacks; it slows the daemon, so that run's figures are not the benchmark's);
``--daemon-config`` gives the private daemon a ``config.toml`` (what a setting costs).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

import psutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as h
import flood

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "replay")
PLAYER = os.path.join(HERE, "_replay_player.py")
COLS, ROWS = 120, 40


def _player_argv(recording: str, i: int, n: int, gap_ms: float) -> list[str]:
    return [sys.executable, "-I", "-S", PLAYER, recording, f"{i / n:.4f}", str(gap_ms)]


def _players_alive(root: psutil.Process) -> int:
    count = 0
    with contextlib.suppress(psutil.Error):
        for child in root.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if PLAYER in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                    count += 1
    return count


def start_profiler(pid: int, out: str) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` (collapsed stacks, 1000 Hz: the daemon is busy only a few % of the
    time) of the daemon until SIGINT; None when py-spy is in neither PATH nor the venv."""
    spy = shutil.which("py-spy") or shutil.which("py-spy", path=os.path.dirname(sys.executable))
    if spy is None:
        h.log("--profile: py-spy not found (pip install py-spy); not profiling")
        return None
    return subprocess.Popen(
        [spy, "record", "--pid", str(pid), "--rate", "1000", "--format", "raw", "--output", out],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _window(cpu: Any, settle: float, seconds: float) -> tuple[float, float]:
    """Sleep ``settle``, then CPU seconds and wall seconds of ``cpu()`` over ``seconds``."""
    time.sleep(settle)
    c0, t0 = cpu(), time.monotonic()
    time.sleep(seconds)
    return cpu() - c0, time.monotonic() - t0


def signaltty_side(recording: str, n: int, args: argparse.Namespace, profile: str | None
                   ) -> dict[str, Any]:
    config = None
    if args.daemon_config:
        with open(args.daemon_config) as fh:
            config = fh.read()
    with h.BenchDaemon(prefix="strp-", config=config) as d:
        ws = d.call("workspace.create", {"name": "replay"})["workspace"]["id"]
        ids = []
        for i in range(n):
            pane = d.call("pane.spawn", {"workspace_id": ws, "argv": _player_argv(
                recording, i, n, args.gap_ms), "cols": COLS, "rows": ROWS})["pane"]
            ids.append(str(pane["id"]))
        assert d.proc is not None
        assert d.ps is not None
        spy = start_profiler(d.proc.pid, profile) if profile else None
        try:
            cpu, wall = _window(d.cpu_seconds, args.settle, args.seconds)
        finally:
            flood.stop_profiler(spy)
        alive = _players_alive(d.ps)
        rss = d.rss_mb()
        d.note_children()
        for pid in ids:
            with contextlib.suppress(Exception):
                d.call("pane.close", {"pane_id": pid, "signal": "KILL"})
        daemon_ok = d.alive()
    return {"cpu_s": round(cpu, 3), "wall_s": round(wall, 2), "core_pct": 100.0 * cpu / wall,
            "players_alive": alive, "rss_mb": round(rss, 1), "ok": daemon_ok and alive == n,
            "leftovers": d.leftovers}


def tmux_side(recording: str, n: int, args: argparse.Namespace, tmp: str) -> dict[str, Any]:
    tmux = shutil.which("tmux")
    assert tmux is not None
    sock = os.path.join(tmp, "tmux.sock")
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    env.update(SHELL="/bin/sh", TERM=env.get("TERM") or "xterm-256color")
    base = [tmux, "-S", sock, "-f", "/dev/null"]

    def run(*a: str) -> str:
        return subprocess.run([*base, *a], env=env, check=True, capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL).stdout

    server: psutil.Process | None = None
    try:
        run("new-session", "-d", "-s", "idle", "-x", str(COLS), "-y", str(ROWS), "sleep 100000",
            ";", "set", "-g", "status", "off", ";", "set", "-g", "default-size", f"{COLS}x{ROWS}")
        server = psutil.Process(int(run("display-message", "-p", "#{pid}").strip()))
        for i in range(n):
            run("new-window", "-d", "-t", "idle", "--", *_player_argv(recording, i, n, args.gap_ms))
        size = run("display-message", "-p", "-t", "idle:1", "#{pane_width}x#{pane_height}").strip()
        srv = server

        def cpu() -> float:
            t = srv.cpu_times()
            return float(t.user + t.system)

        cpu_s, wall = _window(cpu, args.settle, args.seconds)
        alive = _players_alive(server)
        rss = server.memory_info().rss / h.MB
    finally:
        children: list[psutil.Process] = []
        if server is not None:
            with contextlib.suppress(psutil.Error):
                children = server.children(recursive=True)
        subprocess.run([*base, "kill-server"], env=env, capture_output=True, timeout=60,
                       check=False)
        _, left = psutil.wait_procs(children, timeout=5)
        for p in left:
            with contextlib.suppress(psutil.Error):
                p.kill()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(sock)
    return {"cpu_s": round(cpu_s, 3), "wall_s": round(wall, 2), "core_pct": 100.0 * cpu_s / wall,
            "players_alive": alive, "rss_mb": round(rss, 1), "pane_size": size,
            "ok": alive == n and size == f"{COLS}x{ROWS}", "leftovers": [p.pid for p in left]}


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}" if values else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--panes", type=int, default=None, help="panes per side (20; 5 with --quick)")
    ap.add_argument("--seconds", type=float, default=None, help="measured window (30; 10 quick)")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds before the window")
    ap.add_argument("--gap-ms", type=float, default=2000.0, help="silence before each prompt")
    ap.add_argument("--repeat", type=int, default=1, help="runs per recording (medians)")
    ap.add_argument("--recordings", default="claude,codex", help="comma-separated")
    ap.add_argument("--quick", action="store_true", help="5 panes, 10 s windows")
    ap.add_argument("--profile", metavar="DIR", help="py-spy the daemon during each window")
    ap.add_argument("--daemon-config", metavar="TOML",
                    help="config.toml of the private daemon (e.g. to see what a setting costs)")
    ap.add_argument("--json", action="store_true", help="JSON on stdout (the table goes to stderr)")
    args = ap.parse_args(argv)
    n = args.panes or (5 if args.quick else 20)
    args.seconds = args.seconds or (10.0 if args.quick else 30.0)
    if shutil.which("tmux") is None:
        print("tmux is not installed: the baseline cannot be measured", file=sys.stderr)
        return 1
    machine = h.machine_info()
    results: dict[str, list[dict[str, Any]]] = {}
    failed = False
    with h.terminate_on_signals():
        for name in args.recordings.split(","):
            recording = os.path.join(FIXTURES, f"{name}_turn.json.gz")
            results[name] = []
            for rep in range(args.repeat):
                profile = None
                if args.profile:
                    os.makedirs(args.profile, exist_ok=True)
                    profile = os.path.join(os.path.abspath(args.profile),
                                           f"replay-{name}-{rep + 1}.txt")
                one: dict[str, Any] = {}
                order = ("signaltty", "tmux") if rep % 2 == 0 else ("tmux", "signaltty")
                for side in order:
                    if side == "signaltty":
                        one[side] = signaltty_side(recording, n, args, profile)
                    else:
                        with tempfile.TemporaryDirectory(prefix="strt-", dir="/tmp") as tmp:
                            one[side] = tmux_side(recording, n, args, tmp)
                    h.log(f"{name}#{rep + 1} {side}: {one[side]['core_pct']:.2f} % of a core, "
                          f"{one[side]['players_alive']}/{n} players")
                one["ratio"] = h.ratio(one["signaltty"]["cpu_s"], one["tmux"]["cpu_s"])
                one["load_avg"] = [round(x, 2) for x in os.getloadavg()]
                failed |= not (one["signaltty"]["ok"] and one["tmux"]["ok"])
                failed |= bool(one["signaltty"]["leftovers"] or one["tmux"]["leftovers"])
                h.log(f"{name}#{rep + 1}: daemon ÷ tmux = {h.fmt(one['ratio'])}")
                results[name].append(one)
    rows = []
    summary: dict[str, Any] = {}
    for name, runs in results.items():
        st = [r["signaltty"]["core_pct"] for r in runs]
        tm = [r["tmux"]["core_pct"] for r in runs]
        ratios = [r["ratio"] for r in runs if r["ratio"] is not None]
        summary[name] = {"signaltty_core_pct": h.median(st), "tmux_core_pct": h.median(tm),
                         "ratio": h.median(ratios), "ratio_all": ratios}
        rows.append([name, h.fmt(h.median(st)), _spread(st), h.fmt(h.median(tm)), _spread(tm),
                     h.fmt(h.median(ratios)), _spread(ratios), "≤ 1.0"])
    out = sys.stderr if args.json else sys.stdout
    h.print_table(
        f"bench/replay.py, {n} panes per side, {args.seconds:.0f} s windows, {args.repeat} run(s)",
        ["recording", "stty %core", "range", "tmux %core", "range", "stty ÷ tmux", "range", "goal"],
        rows, out)
    if args.json:
        h.dump_json({"machine": machine, "panes": n, "seconds": args.seconds,
                     "settle": args.settle, "gap_ms": args.gap_ms, "repeat": args.repeat,
                     "daemon_config": args.daemon_config,
                     "load_avg_at_end": [round(x, 2) for x in os.getloadavg()],
                     "summary": summary, "runs": results})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
