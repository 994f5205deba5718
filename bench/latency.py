#!/usr/bin/env python3
"""How long other clients wait while one pane or client does something costly.

The figures that the "bad input" tests used to assert as wall-clock bounds (issue 14 item 6;
the tests now check only that every call is answered). Each scenario runs on its **own
private daemon** (``_harness.BenchDaemon``) and probes ``server.status`` on one connection
every ``--probe-ms`` (20) ms while the load runs; the ``idle`` scenario (nothing running) is
measured first in the same run, and every scenario's p99 and max are printed as a ratio to
its figures (1.0 = as fast as an idle daemon).

Scenarios (``--scenarios``, comma-separated; default all):

* ``idle`` — the baseline: no pane, ``--seconds`` of probes.
* ``rules`` — a user manifest (generic, no ``binaries``) with 30 screen rules ``(a+)+$`` and
  one pane printing ``a``×70 + ``!`` every 0.2 s: the sweep tries the rules until they are
  disabled; ``--seconds`` window. Extra: seconds until ``sweep.disabled_rules`` showed them.
* ``dsr`` — 8 panes writing 64 KB of ``x\\n`` followed by ``CSI 6 n`` in a loop (tail saving
  off); ``--seconds`` window.
* ``save`` — 8 panes writing 64 KB of ``x\\n`` in a loop, tails saved; a window of at least
  14 s (snapshot debounce 2 s + tail period ≤ 10 s). Extra: seconds until every tail was saved.
* ``patterns`` — ``agents.reload`` of a user file of 40 000 screen patterns; probes while the
  reload runs. Extra: the reload's seconds.
* ``binaries`` — a user file of 80 000 ``binaries`` and 100 ``sleep`` panes with
  ``proc_refresh_s = 2``; ``--seconds`` window (several refreshes).
* ``regex-wait`` — ``pane.wait_for_output`` with ``(x+x+)+y`` over 5000 lines of a pane
  printing ``x``×79 lines; probes while the call runs. Extra: seconds until the budget ended
  it (``BAD_PARAMS``).
* ``hook-storm`` — 1000 ``hook-event`` requests written at once on one connection; probes
  while their answers come back. Extra: the storm's seconds.
* ``osc`` — one pane writing 10⁴ OSC sequences a second (a new title, an OSC 9 and an
  OSC 777 notification and a 9;4 progress report in turn, 1 000 every 0.1 s) beside an idle
  pane whose hooks are timed; ``--seconds`` window. Extra: the hook round trips' p99 and
  max, the daemon's CPU % and RSS growth over the window.

``--screen`` adds an in-process table (no daemon): the screen engine draining 64 KiB of each
sequence that cost pyte 0.8.2 seconds to minutes, after a full 120x40 screen, and the
50 000-mark combining flood, each as a ratio to 64 KiB of plain text drained the same way in
the same run.

Usage: ``python bench/latency.py [--scenarios idle,dsr] [--seconds 8] [--screen] [--json]``.
A table on stdout; with ``--json`` a JSON report on stdout and the table on stderr. Exit 1
when a probe went unanswered for 60 s, the daemon died or left processes behind.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import psutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _harness as h  # noqa: E402

PY = sys.executable
FLOOD = 'import os, tty\ntty.setraw(0)\nc = b"x\\n" * 32000\nwhile True:\n    os.write(1, c)\n'
DSR_FLOOD = FLOOD.replace("32000\n", '32000 + b"\\x1b[6n"\n')  # the same, asking for the cursor
RULES_PROG = (
    "import time\nwhile True:\n    print('a' * 70 + '!', flush=True)\n    time.sleep(0.2)\n"
)
X_FLOOD = (
    "import sys, time\nwhile True:\n    sys.stdout.write(('x' * 79 + '\\n') * 100)\n"
    "    sys.stdout.flush()\n    time.sleep(0.05)\n"
)
OSC_FLOOD = (
    "import os, time\ni = 0\nwhile True:\n    t0 = time.monotonic()\n    out = []\n"
    "    for _ in range(1000):\n        i += 1\n        k = i % 4\n"
    "        if k == 0:\n            out.append(f'\\x1b]0;title {i}\\x07')\n"
    "        elif k == 1:\n            out.append(f'\\x1b]9;note {i}\\x07')\n"
    "        elif k == 2:\n            out.append(f'\\x1b]9;4;1;{i % 100}\\x07')\n"
    "        else:\n            out.append(f'\\x1b]777;notify;t{i};body\\x1b\\\\')\n"
    "    os.write(1, ''.join(out).encode())\n"
    "    time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))\n"
)
PROBE_TIMEOUT_S = 60.0


class Prober:
    """``server.status`` on one connection every ``interval`` s in a thread; latencies in s."""

    def __init__(self, d: h.BenchDaemon, interval: float) -> None:
        self.d = d
        self.interval = interval
        self.latencies: list[float] = []
        self.unanswered = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Prober:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(PROBE_TIMEOUT_S + 5)

    def _run(self) -> None:
        with self.d.client(timeout=PROBE_TIMEOUT_S) as c:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                try:
                    c.call("server.status")
                except (OSError, TimeoutError):
                    self.unanswered += 1
                    return
                self.latencies.append(time.perf_counter() - t0)
                self._stop.wait(self.interval)


def _workspace(d: h.BenchDaemon) -> str:
    return str(d.call("workspace.create", {"name": "lat", "cwd": d.tmp})["workspace"]["id"])


def _spawn(d: h.BenchDaemon, ws: str, argv: list[str]) -> str:
    return str(d.call("pane.spawn", {"workspace_id": ws, "argv": argv})["pane"]["id"])


def _agents(name: str, text: str) -> Callable[[str], dict[str, str]]:
    """A BenchDaemon ``setup``: a user agents dir holding ``name`` with ``text``."""

    def setup(tmp: str) -> dict[str, str]:
        adir = os.path.join(tmp, "agents")
        os.makedirs(adir, exist_ok=True)
        with open(os.path.join(adir, name), "w") as fh:
            fh.write(text)
        return {"SIGNALTTY_AGENTS_DIR": adir}

    return setup


def _until(pred: Callable[[], bool], limit: float, every: float = 0.1) -> float | None:
    """Seconds until ``pred`` held (polled every ``every`` s), None after ``limit`` s."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if pred():
            return time.monotonic() - t0
        time.sleep(every)
    return None


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        t0 = time.monotonic()
        try:
            out["result"] = fn()
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            out["error"] = getattr(exc, "code", None) or f"{type(exc).__name__}: {exc}"[:80]
        out["seconds"] = time.monotonic() - t0

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


# ---------------------------------------------------------------- scenarios
# Each returns (daemon options, run(d, seconds) -> extra figures); the prober runs meanwhile.


def sc_idle(d: h.BenchDaemon, seconds: float) -> dict[str, Any]:
    time.sleep(seconds)  # the window: nothing runs
    return {}


def sc_rules(d: h.BenchDaemon, seconds: float) -> dict[str, Any]:
    _spawn(d, _workspace(d), [PY, "-c", RULES_PROG])

    def disabled() -> bool:
        return bool(d.call("server.status")["sweep"]["disabled_rules"])

    took = _until(disabled, seconds)
    if took is None or took < seconds:
        time.sleep(seconds - (took or seconds))
    return {"disabled_after_s": took}


def sc_dsr(d: h.BenchDaemon, seconds: float) -> dict[str, Any]:
    ws = _workspace(d)
    for _ in range(8):
        _spawn(d, ws, [PY, "-c", DSR_FLOOD])
    time.sleep(seconds)
    return {}


def sc_save(d: h.BenchDaemon, seconds: float) -> dict[str, Any]:
    ws = _workspace(d)
    ids = [_spawn(d, ws, [PY, "-c", FLOOD]) for _ in range(8)]
    hist = os.path.join(d.tmp, "state", "history")
    window = max(seconds, 14.0)
    took = _until(lambda: all(os.path.exists(os.path.join(hist, f"{i}.tail")) for i in ids), window)
    if took is not None and took < window:
        time.sleep(window - took)
    return {"tails_saved_after_s": took}


def sc_patterns(d: h.BenchDaemon, seconds: float) -> dict[str, Any]:
    pats = ",".join(f'"q{i}"' for i in range(40000))
    with open(os.path.join(d.tmp, "agents", "many.toml"), "w") as fh:
        fh.write(
            '[agent]\nkind = "generic"\nbinaries = ["many"]\n'
            f'[[screen]]\nid = "a"\nstate = "idle"\nregex = [{pats}]\n'
        )
    with d.client(timeout=300) as c:
        t, out = _in_thread(lambda: c.call("agents.reload"))
        t.join(300)
    return {"reload_s": out.get("seconds"), "error": out.get("error")}


def sc_binaries(d: h.BenchDaemon, seconds: float) -> dict[str, Any]:
    ws = _workspace(d)
    for _ in range(100):
        _spawn(d, ws, ["sleep", "600"])
    time.sleep(seconds)
    return {}


def sc_regex_wait(d: h.BenchDaemon, seconds: float) -> dict[str, Any]:
    pane = _spawn(d, _workspace(d), [PY, "-c", X_FLOOD])
    d.call("pane.wait_for_output", {"pane_id": pane, "match": "x" * 79, "timeout_s": 30})
    params = {"pane_id": pane, "match": "(x+x+)+y", "regex": True, "lines": 5000, "timeout_s": 120}
    with d.client(timeout=None) as c:
        t, out = _in_thread(lambda: c.call("pane.wait_for_output", params))
        t.join(130)
    return {"ended_after_s": out.get("seconds"), "outcome": out.get("error") or "matched"}


def sc_hook_storm(d: h.BenchDaemon, seconds: float) -> dict[str, Any]:
    pane = _spawn(d, _workspace(d), ["sleep", "600"])
    lines = b"".join(
        json.dumps(
            {
                "protocol": "signaltty/1",
                "id": str(i),
                "method": "hook-event",
                "params": {
                    "agent": "claude",
                    "event": "UserPromptSubmit" if i % 2 else "Stop",
                    "pane_id": pane,
                    "payload": {"session_id": "S1"},
                },
            }
        ).encode()
        + b"\n"
        for i in range(1000)
    )

    def storm() -> int:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(PROBE_TIMEOUT_S)
        try:
            s.connect(d.sock)
            s.sendall(lines)
            got = b""
            while got.count(b"\n") < 1000:
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                got += chunk
            return got.count(b"\n")
        finally:
            s.close()

    t, out = _in_thread(storm)
    t.join(PROBE_TIMEOUT_S + 5)
    return {"storm_s": out.get("seconds"), "answers": out.get("result"), "error": out.get("error")}


def sc_osc(d: h.BenchDaemon, seconds: float) -> dict[str, Any]:
    ws = _workspace(d)
    quiet = _spawn(d, ws, ["sleep", "600"])
    _spawn(d, ws, [PY, "-c", OSC_FLOOD])
    proc = psutil.Process(d.proc.pid) if d.proc else None
    rss0 = proc.memory_info().rss if proc else 0
    cpu0 = sum(proc.cpu_times()[:2]) if proc else 0.0
    hooks: list[float] = []
    end = time.monotonic() + seconds
    with d.client(timeout=PROBE_TIMEOUT_S) as c:
        while time.monotonic() < end:
            t0 = time.perf_counter()
            params = {"agent": "claude", "event": "Stop", "pane_id": quiet}
            c.call("hook-event", params | {"payload": {"session_id": "S1"}})
            hooks.append(time.perf_counter() - t0)
            time.sleep(0.05)
    cpu = (sum(proc.cpu_times()[:2]) - cpu0) if proc else 0.0
    hooks.sort()
    return {
        "hook_p50_ms": round(hooks[len(hooks) // 2] * 1000, 1) if hooks else None,
        "hook_p99_ms": round(hooks[int(0.99 * (len(hooks) - 1))] * 1000, 1) if hooks else None,
        "hook_max_ms": round(hooks[-1] * 1000, 1) if hooks else None,
        "hooks": len(hooks),
        "cpu_pct": round(100 * cpu / seconds, 1),
        "rss_growth_mb": round(((proc.memory_info().rss if proc else 0) - rss0) / 1e6, 1),
    }


SCENARIOS: dict[str, tuple[dict[str, Any], Callable[[h.BenchDaemon, float], dict[str, Any]]]] = {
    "idle": ({}, sc_idle),
    "rules": (
        {
            "setup": _agents(
                "slow.toml",
                '[agent]\nkind = "generic"\n'
                + "".join(
                    f'[[screen]]\nid = "r{i}"\nstate = "idle"\nregion = "screen"\n'
                    "regex = ['(a+)+$']\n"
                    for i in range(30)
                ),
            )
        },
        sc_rules,
    ),
    "dsr": ({"config": "[persistence]\nsave_tails = false\n"}, sc_dsr),
    "save": ({}, sc_save),
    "patterns": ({"setup": _agents("keep.toml", '[agent]\nkind = "generic"\n')}, sc_patterns),
    "binaries": (
        {
            "config": "[server]\nproc_refresh_s = 2\n",
            "setup": _agents(
                "bins.toml",
                '[agent]\nkind = "generic"\nbinaries = ['
                + ",".join(f'"tool{i}"' for i in range(80000))
                + "]\n",
            ),
        },
        sc_binaries,
    ),
    "regex-wait": ({}, sc_regex_wait),
    "hook-storm": ({}, sc_hook_storm),
    "osc": ({}, sc_osc),
}


def run_scenario(name: str, seconds: float, probe_ms: float) -> dict[str, Any]:
    opts, fn = SCENARIOS[name]
    h.log(f"{name}: starting a daemon")
    with h.BenchDaemon(prefix="stl-", **opts) as d:
        with Prober(d, probe_ms / 1000) as probe:
            extra = fn(d, seconds)
        alive = d.alive()
    lat = probe.latencies
    return {
        "scenario": name,
        "calls": len(lat),
        "p50_ms": _ms(h.percentile(lat, 50)),
        "p99_ms": _ms(h.percentile(lat, 99)),
        "max_ms": _ms(max(lat) if lat else None),
        "unanswered": probe.unanswered,
        "daemon_alive": alive,
        "leftovers": len(d.leftovers),
        "extra": extra,
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


# ---------------------------------------------------------------- screen (in process)

SCREEN_UNITS: list[tuple[str, bytes]] = [
    ("DECALN", b"\x1b#8"),
    ("DECSCNM on/off", b"\x1b[?5h\x1b[?5l"),
    ("ED 2", b"\x1b[2J"),
    ("SGR + ED 2", b"\x1b[41m\x1b[2J"),
    ("REP 65535", b"x\x1b[65535b"),
    ("ICH huge", b"\x1b[99999999@"),
    ("CUP huge", b"\x1b[999999999;999999999H"),
    ("IL 9999", b"\x1b[9999L"),
    ("SU 9999", b"\x1b[9999S"),
    ("DECSC", b"\x1b7"),
    ("LF", b"\n"),
]


def screen_table(runs: int) -> list[dict[str, Any]]:
    """Seconds to drain 64 KiB of each unit on a full 120x40 screen, median of ``runs``."""
    from signaltty.term.screen import PyteScreen

    def drain(data: bytes, cols: int = 120, rows: int = 40, fill: bool = True) -> float:
        screen = PyteScreen(cols, rows)
        if fill:
            screen.feed(b"x" * (cols * rows))
            screen.lines()
        screen.feed(data)
        t0 = time.perf_counter()
        screen.lines()
        return time.perf_counter() - t0

    def med(data: bytes, **kw: Any) -> float:
        return h.median([drain(data, **kw) for _ in range(runs)]) or 0.0

    def fill(unit: bytes) -> bytes:
        return (unit * (65536 // len(unit) + 1))[:65536]

    base = med(fill(b"plain text "))
    rows = [{"case": "plain text (baseline)", "ms": base * 1000, "ratio": 1.0}]
    for name, unit in SCREEN_UNITS:
        t = med(fill(unit))
        rows.append({"case": name, "ms": t * 1000, "ratio": h.ratio(t, base)})
    marks = b"a" + "\u0301".encode() * 50_000
    plain = b"a" * len(marks)
    t_marks = med(marks, cols=20, rows=5, fill=False)
    t_plain = med(plain, cols=20, rows=5, fill=False)
    rows.append(
        {
            "case": "50 000 combining marks (÷ as many plain bytes)",
            "ms": t_marks * 1000,
            "ratio": h.ratio(t_marks, t_plain),
        }
    )
    return rows


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--scenarios", default=",".join(SCENARIOS), help="comma-separated; idle always runs first"
    )
    ap.add_argument(
        "--seconds", type=float, default=8.0, help="window of the timed scenarios (default 8)"
    )
    ap.add_argument(
        "--probe-ms", type=float, default=20.0, help="pause between status probes (default 20)"
    )
    ap.add_argument("--screen", action="store_true", help="also the in-process screen table")
    ap.add_argument(
        "--screen-runs", type=int, default=3, help="runs per screen case (median; default 3)"
    )
    ap.add_argument("--json", action="store_true", help="JSON on stdout (the table goes to stderr)")
    args = ap.parse_args(argv)
    names = [n for n in args.scenarios.split(",") if n]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenarios: {', '.join(unknown)} (known: {', '.join(SCENARIOS)})")
    names = ["idle"] + [n for n in names if n != "idle"]

    report: dict[str, Any] = {
        "benchmark": "latency",
        "machine": h.machine_info(),
        "window_s": args.seconds,
    }
    results: list[dict[str, Any]] = []
    failed = False
    with h.terminate_on_signals():
        for name in names:
            r = run_scenario(name, args.seconds, args.probe_ms)
            results.append(r)
            failed |= bool(r["unanswered"] or not r["daemon_alive"] or r["leftovers"])
            p99, worst = h.fmt(r["p99_ms"], 1), h.fmt(r["max_ms"], 1)
            h.log(f"{name}: p99 {p99} ms, max {worst} ms {r['extra']}")
        if args.screen:
            report["screen"] = screen_table(args.screen_runs)
    idle = results[0]
    for r in results:
        r["p99_ratio"] = h.ratio(r["p99_ms"], idle["p99_ms"])
        r["max_ratio"] = h.ratio(r["max_ms"], idle["max_ms"])
    report["scenarios"] = results
    report["machine"]["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]

    out = sys.stderr if args.json else sys.stdout
    h.print_table(
        "server.status while the load runs (ratios ÷ the idle daemon of this run)",
        ["scenario", "calls", "p50 ms", "p99 ms", "max ms", "p99 ÷ idle", "max ÷ idle", "extra"],
        [
            [
                r["scenario"],
                r["calls"],
                r["p50_ms"],
                r["p99_ms"],
                r["max_ms"],
                r["p99_ratio"],
                r["max_ratio"],
                ", ".join(f"{k}={h.fmt(v)}" for k, v in r["extra"].items() if v is not None),
            ]
            for r in results
        ],
        out,
    )
    if args.screen:
        h.print_table(
            "screen engine, 64 KiB after a full 120x40 screen (ratio ÷ plain text, same run)",
            ["case", "ms", "ratio"],
            [[r["case"], r["ms"], r["ratio"]] for r in report["screen"]],
            out,
        )
    if args.json:
        h.dump_json(report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
