#!/usr/bin/env python3
"""Flood benchmark: ``cat`` of a large file into one pane, throughput and loop responsiveness.

For each input kind (a: plain lines, b: SGR-heavy text, c: TUI-like redraw stream of a 120x40
frame with a full clear every 8th frame, d: the same TUI repainting rows without ever clearing)
this generates a deterministic file of ``--size-mb`` MB in the temp dir and measures:

* **raw**: a minimal Python reader of a PTY running the same ``cat`` (64 KiB reads, no
  processing) — the ceiling the kernel PTY allows on this machine (median of ``--raw-runs``);
* **tmux** (if installed): on a private server socket (started first with an idle session, so
  its pid and CPU time can be read), ``new-session -d -x 120 -y 40 'cat FILE; tmux wait -S done'``
  followed by ``wait-for done``: wall time and the server's CPU seconds; killed afterwards;
* **signaltty**: a private daemon, ``pane.spawn`` of ``cat FILE`` (120x40) until
  ``wait {until: exited}`` returns, then ``pane.read mode=screen`` must show the file's last line
  (time to that reported too); meanwhile a separate client calls ``server.status`` every ~20 ms
  and the p50/p99/max of its latency is reported, with the daemon's CPU time and peak RSS.

Throughput is file bytes / wall seconds (1 MB = 10^6 bytes); ratios are signaltty / raw and
signaltty / tmux measured in the same run, and the CPU ratio is MB per daemon CPU-second ÷ MB
per tmux-server CPU-second (issue 12's first goal: ≥ 1.5). ``--repeat N`` runs tmux and
signaltty N times per kind and reports medians. Run ``python bench/flood.py --quick`` for a check,
``--json`` for machine-readable output (the table then goes to stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import itertools
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from typing import Any

import psutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as h
from signaltty.proto.client import Client

COLS, ROWS = 120, 40
READ_BYTES = 64 * 1024
KINDS = {
    "a": "plain lines",
    "b": "SGR-heavy text",
    "c": "TUI redraw 120x40",
    "d": "TUI repaint, no clear",
}
ESC = "\x1b"
_WORDS_TEXT = (
    "the quick brown fox jumps over lazy dog lorem ipsum dolor sit amet consectetur "
    "adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua build "
    "test deploy error warning info debug request response handler session token cache index "
    "query update commit branch merge rebase diff patch file path module import return yield "
    "async await function class method value result status pending running finished failed "
    "retry"
)
_WORDS = _WORDS_TEXT.split()


# ------------------------------------------------------------------ input generation


def end_marker(kind: str, seed: int) -> str:
    return f"FLOOD-END kind={kind} seed={seed} ok"


def _plain_bodies(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        words: list[str] = []
        width = rng.randint(30, 100)
        while sum(len(w) + 1 for w in words) < width:
            words.append(rng.choice(_WORDS))
        out.append(" ".join(words))
    return out


def _sgr(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.35:
        return f"{ESC}[38;5;{rng.randrange(256)}m"
    if r < 0.55:
        return f"{ESC}[1;38;2;{rng.randrange(256)};{rng.randrange(256)};{rng.randrange(256)}m"
    if r < 0.7:
        return f"{ESC}[{rng.choice((31, 32, 33, 34, 35, 36, 91, 92, 93, 94))}m"
    if r < 0.8:
        return f"{ESC}[48;5;{rng.randrange(256)};38;5;{rng.randrange(256)}m"
    if r < 0.9:
        return f"{ESC}[{rng.choice((1, 2, 3, 4, 7))}m"
    return f"{ESC}[0m"


def _sgr_bodies(rng: random.Random, n: int) -> list[str]:
    out = []
    for _ in range(n):
        parts: list[str] = []
        width = 0
        limit = rng.randint(30, 100)
        while width < limit:
            w = rng.choice(_WORDS)
            parts.append(f"{_sgr(rng)}{w}{ESC}[0m ")
            width += len(w) + 1
        out.append("".join(parts))
    return out


def _tui_rows(rng: random.Random, n: int) -> list[str]:
    """Rows of exactly COLS visible cells (ASCII + box drawing) with 3-8 colour segments."""
    out = []
    for _ in range(n):
        cells = COLS - 2
        parts = [f"{ESC}[38;5;244m│"]
        segs = rng.randint(3, 8)
        cuts = sorted(rng.sample(range(1, cells), segs - 1))
        bounds = [0, *cuts, cells]
        for a, b in itertools.pairwise(bounds):
            text = " ".join(rng.choice(_WORDS) for _ in range(b - a))[: b - a].ljust(b - a)
            parts.append(_sgr(rng) + text)
        parts.append(f"{ESC}[0m{ESC}[38;5;244m│{ESC}[0m")
        out.append("".join(parts))
    return out


def generate(kind: str, path: str, size: int, seed: int) -> int:
    """Write the input file of ``kind``; return its size in bytes (>= ``size``)."""
    rng = random.Random(f"{seed}-{kind}")
    written = 0
    with open(path, "wb") as f:

        def put(text: str) -> None:
            nonlocal written
            data = text.encode()
            f.write(data)
            written += len(data)

        if kind in ("a", "b"):
            bodies = _plain_bodies(rng, 4096) if kind == "a" else _sgr_bodies(rng, 4096)
            prefix = "{:09d} " if kind == "a" else ESC + "[2;37m{:09d}" + ESC + "[0m "
            i = 0
            while written < size:
                picks = rng.choices(bodies, k=8192)
                put("".join(prefix.format(i + k) + body + "\n" for k, body in enumerate(picks)))
                i += len(picks)
            put(end_marker(kind, seed) + "\n")
        elif kind in ("c", "d"):
            rows = _tui_rows(rng, 2048)
            spinner = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
            put(f"{ESC}[?1049h{ESC}[?25l")
            frame = 0
            while written < size:
                batch: list[str] = []
                for _ in range(256):
                    frame += 1
                    out = [f"{ESC}[?2026h"]
                    if kind == "d" and frame == 1:
                        # d: the first frame paints every row with CUP, and nothing ever clears
                        for r, row in enumerate(rng.choices(rows, k=ROWS - 1), 1):
                            out.append(f"{ESC}[{r};1H{row}{ESC}[K")
                    elif kind == "c" and frame % 8 == 1:
                        # full repaint: home + clear, rows separated by CR LF
                        out.append(f"{ESC}[H{ESC}[2J")
                        out.append("\r\n".join(rng.choices(rows, k=ROWS - 1)))
                    else:
                        # partial repaint: CUP to a few rows, rewrite them, erase to end of line
                        for r in sorted(rng.sample(range(1, ROWS), rng.randint(3, 12))):
                            out.append(f"{ESC}[{r};1H{rng.choice(rows)}{ESC}[K")
                    mark = spinner[frame % len(spinner)]
                    status = f" {mark} working · frame {frame:08d} · {rng.choice(_WORDS)}"
                    out.append(f"{ESC}[{ROWS};1H{ESC}[7m{status.ljust(COLS - 1)}{ESC}[0m")
                    out.append(f"{ESC}[{ROWS - 2};3H{ESC}[?2026l")
                    batch.append("".join(out))
                put("".join(batch))
            put(f"{ESC}[?2026h{ESC}[20;1H{ESC}[2K{end_marker(kind, seed)}{ESC}[?2026l")
    return os.path.getsize(path)


# ------------------------------------------------------------------ baselines


def _set_winsize(fd: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))


def raw_pty_read(path: str) -> dict[str, Any]:
    """``cat path`` in a fresh PTY, read with 64 KiB reads and thrown away; wall seconds."""
    t0 = time.perf_counter()
    master, slave = os.openpty()
    _set_winsize(master)
    proc = subprocess.Popen(
        ["cat", path],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        close_fds=True,
    )
    os.close(slave)
    total = 0
    try:
        while True:
            try:
                chunk = os.read(master, READ_BYTES)
            except OSError:  # EIO: the slave side is closed and drained
                break
            if not chunk:
                break
            total += len(chunk)
    finally:
        os.close(master)
        proc.wait()
    return {"wall_s": time.perf_counter() - t0, "pty_bytes": total}


def tmux_run(path: str, tmp: str) -> dict[str, Any] | None:
    """Time ``cat`` in a detached 120x40 tmux session on a private server; None without tmux.

    The server is started first with an idle session so that its pid is known: ``cpu_s`` is
    the server's own user + system CPU seconds during the flood (``cat`` excluded)."""
    tmux = shutil.which("tmux")
    if tmux is None:
        return None
    sock = os.path.join(tmp, "tmux.sock")
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    env.update(SHELL="/bin/sh", TERM=env.get("TERM") or "xterm-256color")
    base = [tmux, "-S", sock, "-f", "/dev/null"]
    inner = f"cat '{path}'; '{tmux}' -S '{sock}' wait-for -S done"
    try:
        subprocess.run(
            [
                *base,
                "new-session",
                "-d",
                "-s",
                "idle",
                "-x",
                str(COLS),
                "-y",
                str(ROWS),
                "sleep 100000",
            ],
            env=env,
            check=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        out = subprocess.run(
            [*base, "display-message", "-p", "#{pid}"],
            env=env,
            check=True,
            timeout=60,
            capture_output=True,
            text=True,
        )
        server = psutil.Process(int(out.stdout.strip()))
        cpu0 = server.cpu_times()
        t0 = time.perf_counter()
        # new-session and wait-for in one client invocation: no race with a fast cat.
        subprocess.run(
            [
                *base,
                "new-session",
                "-d",
                "-s",
                "flood",
                "-x",
                str(COLS),
                "-y",
                str(ROWS),
                inner,
                ";",
                "wait-for",
                "done",
            ],
            env=env,
            check=True,
            timeout=3600,
            stdin=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - t0
        cpu1 = server.cpu_times()
    finally:
        subprocess.run(
            [*base, "kill-server"],
            check=False,
            env=env,
            stderr=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        with contextlib.suppress(FileNotFoundError):
            os.unlink(sock)
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    return {"wall_s": wall, "cpu_s": cpu}


# ------------------------------------------------------------------ signaltty


class StatusProbe(threading.Thread):
    """A separate client calling ``server.status`` every ~``interval`` s; latencies in ms."""

    def __init__(
        self, d: h.BenchDaemon, interval: float = 0.02, call_timeout: float = 60.0
    ) -> None:
        super().__init__(name="status-probe", daemon=True)
        self.d = d
        self.interval = interval
        self.call_timeout = call_timeout
        self.samples: list[tuple[float, float]] = []  # (start offset s, latency ms)
        self.peak_rss_mb = 0.0
        self.errors: list[str] = []
        self._halt = threading.Event()
        self.t0 = time.perf_counter()

    def stop(self) -> None:
        self._halt.set()
        self.join(self.call_timeout + 5)

    def run(self) -> None:
        try:
            client = Client(self.d.sock, timeout=5.0)
        except OSError as exc:
            self.errors.append(f"connect: {exc}")
            return
        with client:
            while not self._halt.is_set():
                start = time.perf_counter()
                try:
                    req = client.send("server.status")
                    while True:
                        msg = client.read_message(timeout=self.call_timeout)
                        if msg is None:
                            raise ConnectionError("daemon closed the connection")
                        if msg.get("type") != "event" and msg.get("id") == req:
                            break
                    if not msg.get("ok"):
                        self.errors.append(f"error: {msg.get('error')}")
                except (TimeoutError, OSError) as exc:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                    return
                end = time.perf_counter()
                self.samples.append((start - self.t0, (end - start) * 1000.0))
                with contextlib.suppress(Exception):
                    self.peak_rss_mb = max(self.peak_rss_mb, self.d.rss_mb())
                self._halt.wait(max(0.0, self.interval - (time.perf_counter() - start)))

    def summary(self) -> dict[str, Any]:
        lat = [s[1] for s in self.samples]
        worst = max(self.samples, key=lambda s: s[1]) if self.samples else None
        return {
            "calls": len(lat),
            "p50_ms": h.percentile(lat, 50),
            "p99_ms": h.percentile(lat, 99),
            "max_ms": max(lat) if lat else None,
            "max_at_s": worst[0] if worst else None,
            "over_100ms": sum(1 for x in lat if x > 100),
            "worst": [
                [round(t, 3), round(ms, 1)]
                for t, ms in sorted(self.samples, key=lambda s: -s[1])[:5]
            ],
            "errors": self.errors[:5],
        }


def start_profiler(pid: int, out: str, native: bool = False) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` of the daemon until SIGINT (``--native``: C frames too, uvloop's
    and the interpreter's); None when py-spy is not installed."""
    spy = shutil.which("py-spy")
    if spy is None:
        h.log("--profile: py-spy not found (pip install py-spy); not profiling")
        return None
    fmt = "flamegraph" if out.endswith(".svg") else "raw"
    # py-spy reads C stacks only from a paused process: --native cannot be --nonblocking
    return subprocess.Popen(
        [spy, "record", "--pid", str(pid), "--rate", "200", "--format", fmt]
        + ["--output", out]
        + (["--native"] if native else ["--nonblocking"]),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def stop_profiler(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def signaltty_run(
    d: h.BenchDaemon,
    ws_id: str,
    path: str,
    marker: str,
    timeout_s: float,
    profile: str | None = None,
    native: bool = False,
) -> dict[str, Any]:
    """One flood into one pane of the running daemon ``d``; ``profile``: py-spy output file."""
    # Idle status latency first, for comparison.
    idle = StatusProbe(d)
    idle.start()
    time.sleep(1.0)
    idle.stop()
    probe = StatusProbe(d)
    cpu0 = d.cpu_seconds()
    rss0 = d.rss_mb()
    result: dict[str, Any] = {"idle_status": idle.summary()}
    spy = start_profiler(d.proc.pid, profile, native) if profile and d.proc else None
    with d.client(timeout=None) as c:
        probe.start()
        t0 = time.perf_counter()
        probe.t0 = t0
        pane = c.call(
            "pane.spawn", {"workspace_id": ws_id, "argv": ["cat", path], "cols": COLS, "rows": ROWS}
        )
        pane_id = pane["pane"]["id"]
        try:
            res = c.call("wait", {"pane_id": pane_id, "until": "exited", "timeout_s": timeout_s})
            t_exit = time.perf_counter() - t0
            result["wait"] = res
        except Exception as exc:  # noqa: BLE001 - reported, the run goes on to clean up
            result["error"] = f"wait: {type(exc).__name__}: {exc}"
            t_exit = None
        screen = c.call("pane.read", {"pane_id": pane_id, "mode": "screen"})
        t_screen = time.perf_counter() - t0
        probe.stop()
        stop_profiler(spy)
        result["cpu_s"] = d.cpu_seconds() - cpu0
        result["rss_before_mb"] = rss0
        result["rss_peak_mb"] = max(probe.peak_rss_mb, d.rss_mb())
        result["screen_ok"] = marker in screen.get("text", "")
        if not result["screen_ok"]:
            result["screen_tail"] = screen.get("text", "")[-400:]
        with contextlib.suppress(Exception):
            c.call("pane.close", {"pane_id": pane_id, "signal": "KILL"})
    result["wall_s"] = t_exit
    result["screen_s"] = t_screen
    result["status"] = probe.summary()
    result["daemon_alive"] = d.alive()
    # A fault the screen model caught makes the rest of that pane's output take the slow
    # path: a run that is slow for that reason says so (the daemon logs "screen.fault").
    result["screen_faults"] = [
        line for line in d.output_tail(100_000).splitlines() if "screen.fault" in line
    ]
    return result


# ------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--size-mb",
        type=float,
        default=None,
        help="input size per kind in MB (default 200; 20 with --quick)",
    )
    ap.add_argument(
        "--kinds",
        default="a,b,c,d",
        help="comma list of a (plain), b (SGR), c (TUI with clears), d (TUI repainting rows); "
        "default a,b,c,d",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run raw, tmux and signaltty N times per kind (medians)",
    )
    ap.add_argument("--quick", action="store_true", help="20 MB inputs, one raw run: a quick check")
    ap.add_argument(
        "--raw-runs",
        type=int,
        default=None,
        help="raw PTY reader runs per kind, median taken (default 3, 1 with --quick)",
    )
    ap.add_argument("--no-tmux", action="store_true", help="skip the tmux comparison")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="max seconds for one signaltty flood (default 900)",
    )
    ap.add_argument(
        "--json", action="store_true", help="print JSON on stdout (the table goes to stderr)"
    )
    ap.add_argument(
        "--profile",
        metavar="DIR",
        help="py-spy record the daemon during each flood into DIR/flood-<kind>.txt "
        "(collapsed stacks; or .svg with --profile-svg)",
    )
    ap.add_argument(
        "--profile-native", action="store_true", help="--profile with C frames (py-spy --native)"
    )
    ap.add_argument(
        "--profile-svg",
        action="store_true",
        help="write flame graph SVGs instead of collapsed stacks",
    )
    args = ap.parse_args(argv)
    size_mb = args.size_mb if args.size_mb is not None else (20.0 if args.quick else 200.0)
    raw_runs = args.raw_runs if args.raw_runs is not None else (1 if args.quick else 3)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        ap.error(f"unknown kinds {bad}; use a comma list of {','.join(KINDS)}")
    size = int(size_mb * h.MB)

    report: dict[str, Any] = {
        "benchmark": "flood",
        "machine": h.machine_info(),
        "size_mb": size_mb,
        "raw_runs": raw_runs,
        "repeat": args.repeat,
        "status_interval_ms": 20,
        "kinds": {},
    }
    failed = False
    with h.terminate_on_signals(), h.BenchDaemon(prefix="stf-") as d:
        report["daemon_pid"] = d.proc.pid if d.proc else None
        ws_id = d.call("workspace.create", {"name": "flood", "cwd": d.tmp})["workspace"]["id"]
        for kind in kinds:
            path = d.path(f"in-{kind}.txt")
            t = time.perf_counter()
            nbytes = generate(kind, path, size, args.seed)
            h.log(
                f"{kind} ({KINDS[kind]}): generated {nbytes / h.MB:.1f} MB in "
                f"{time.perf_counter() - t:.1f} s"
            )
            mb = nbytes / h.MB
            entry: dict[str, Any] = {"name": KINDS[kind], "file_mb": round(mb, 3)}

            reps: list[dict[str, Any]] = []
            for rep in range(args.repeat):
                one: dict[str, Any] = {}
                raws = [raw_pty_read(path) for _ in range(raw_runs)]
                raw_wall = h.median([r["wall_s"] for r in raws])
                assert raw_wall is not None, "--raw-runs must be at least 1"
                one["raw"] = {
                    "wall_s": raw_wall,
                    "runs_s": [r["wall_s"] for r in raws],
                    "pty_bytes": raws[0]["pty_bytes"],
                    "mb_s": mb / raw_wall,
                }
                h.log(f"{kind}#{rep + 1}: raw PTY reader {mb / raw_wall:.1f} MB/s")

                if not args.no_tmux:
                    tm = tmux_run(path, d.tmp)
                    if tm is not None:
                        tm["mb_s"] = mb / tm["wall_s"]
                        tm["mb_per_cpu_s"] = h.ratio(mb, tm["cpu_s"])
                        h.log(
                            f"{kind}#{rep + 1}: tmux {tm['mb_s']:.1f} MB/s, server "
                            f"{tm['cpu_s']:.2f} CPU s"
                        )
                    one["tmux"] = tm

                h.log(f"{kind}#{rep + 1}: signaltty flood of {mb:.0f} MB ...")
                prof = None
                if args.profile:
                    os.makedirs(args.profile, exist_ok=True)
                    prof = os.path.join(
                        os.path.abspath(args.profile),
                        f"flood-{kind}.{'svg' if args.profile_svg else 'txt'}",
                    )
                st = signaltty_run(
                    d,
                    ws_id,
                    path,
                    end_marker(kind, args.seed),
                    args.timeout,
                    prof,
                    args.profile_native,
                )
                if prof:
                    st["profile"] = prof
                if st["wall_s"]:
                    st["mb_s"] = mb / st["wall_s"]
                    st["mb_s_screen"] = mb / st["screen_s"]
                    st["cpu_s_per_mb"] = st["cpu_s"] / mb
                    st["mb_per_cpu_s"] = h.ratio(mb, st["cpu_s"])
                one["signaltty"] = st
                tmux = one.get("tmux") or {}
                one["ratio_raw"] = h.ratio(st.get("mb_s"), one["raw"]["mb_s"])
                one["ratio_tmux"] = h.ratio(st.get("mb_s"), tmux.get("mb_s"))
                one["ratio_cpu_tmux"] = h.ratio(st.get("mb_per_cpu_s"), tmux.get("mb_per_cpu_s"))
                s = st["status"]
                h.log(
                    f"{kind}#{rep + 1}: signaltty {h.fmt(st.get('mb_s'))} MB/s "
                    f"(x{h.fmt(one['ratio_raw'], 3)} raw), "
                    f"{h.fmt(st.get('mb_per_cpu_s'))} MB per CPU s "
                    f"(x{h.fmt(one['ratio_cpu_tmux'])} tmux), "
                    f"screen {h.fmt(st['screen_s'])} s ok={st['screen_ok']}, status p50/p99/max "
                    f"{h.fmt(s['p50_ms'], 1)}/{h.fmt(s['p99_ms'], 1)}/{h.fmt(s['max_ms'], 1)} ms "
                    f"over {s['calls']} calls"
                )
                for line in st["screen_faults"][-3:]:
                    h.log(f"{kind}#{rep + 1}: {line[:300]}")
                if not st["screen_ok"] or st.get("error") or s["errors"] or not st["daemon_alive"]:
                    failed = True
                reps.append(one)
                if not d.alive():
                    break
            # The run whose CPU ratio is the median stands for the kind; every run is kept.
            ordered = sorted(
                reps, key=lambda r: r.get("ratio_cpu_tmux") or r.get("ratio_raw") or 0.0
            )
            mid = ordered[len(ordered) // 2]
            entry.update(mid)
            entry["runs"] = reps
            for key in ("ratio_raw", "ratio_tmux", "ratio_cpu_tmux"):
                entry[f"{key}_all"] = [r.get(key) for r in reps]
                entry[key] = h.median([r[key] for r in reps if r.get(key) is not None])
            report["kinds"][kind] = entry
            os.unlink(path)
            if not d.alive():
                h.log(f"daemon died:\n{d.output_tail()}")
                failed = True
                break
    report["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["daemon_exit_code"] = d.exit_code
    report["leftover_processes"] = d.leftovers
    report["temp_dir_removed"] = not os.path.exists(d.tmp)
    if d.leftovers or not report["temp_dir_removed"]:
        failed = True

    out = sys.stderr if args.json else sys.stdout
    rows = []
    for kind, e in report["kinds"].items():
        st, s = e["signaltty"], e["signaltty"]["status"]
        rows.append(
            [
                f"{kind} {e['name']}",
                e["file_mb"],
                e["raw"]["mb_s"],
                (e.get("tmux") or {}).get("mb_s"),
                st.get("mb_s"),
                e["ratio_raw"],
                e["ratio_tmux"],
                (e.get("tmux") or {}).get("cpu_s"),
                st["cpu_s"],
                e.get("ratio_cpu_tmux"),
                st["wall_s"],
                st["screen_s"],
                "yes" if st["screen_ok"] else "NO",
                s["p50_ms"],
                s["p99_ms"],
                s["max_ms"],
                st["rss_peak_mb"],
            ]
        )
    h.print_table(
        f"flood: {size_mb:g} MB per kind, {report['machine']['cpus']} cpus, "
        f"{report['machine']['date']}"
        + "".join(f", {k}={v}" for k, v in report["machine"]["engine_env"].items()),
        [
            "kind",
            "MB",
            "raw MB/s",
            "tmux MB/s",
            "stty MB/s",
            "/raw",
            "/tmux",
            "tmux cpu s",
            "stty cpu s",
            "MB/cpu ÷ tmux",
            "exit s",
            "screen s",
            "screen ok",
            "st p50 ms",
            "st p99 ms",
            "st max ms",
            "peak RSS MB",
        ],
        rows,
        out,
    )
    idle_rows = [
        [
            k,
            e["signaltty"]["idle_status"]["p50_ms"],
            e["signaltty"]["idle_status"]["p99_ms"],
            e["signaltty"]["status"]["calls"],
            e["signaltty"]["status"]["over_100ms"],
        ]
        for k, e in report["kinds"].items()
    ]
    h.print_table(
        "server.status without flood (1 s before each run) and calls > 100 ms during it",
        ["kind", "idle p50 ms", "idle p99 ms", "flood calls", "calls > 100 ms"],
        idle_rows,
        out,
    )
    if args.json:
        h.dump_json(report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
