#!/usr/bin/env python3
"""Cost of ``signaltty hook-event`` as agents pay it on every hook (issue 12 goal: ≤ 2×).

Prints, against a running private daemon, the wall time of each case below, median and p95
over N runs, and each as a ratio to ``python -I -S -c pass`` measured in the same run (the
cases take turns run by run, so a change in the machine's load hits all of them alike):

* the installed console script, a status hook without payload (``UserPromptSubmit``/
  ``Stop`` alternating), as this benchmark measured it since issue 3;
* the same with the payload on stdin and ``$SIGNALTTY_DAEMON`` set, as the hooks that
  ``signaltty integration install`` writes run in a pane (payloads: the recorded Claude Code
  hooks in tests/fixtures/real-agents/claude/hook_samples.json);
* that status hook through a console script as pip < 25 writes it (its wrapper imports
  ``re``: what a fresh Debian/Ubuntu venv still installs), for reference;
* the entry point under ``python -I -S`` (no site-packages scan), for reference;
* server-side latency: from writing the request on an open connection to receiving the
  ``agent.*`` event on a subscribed connection, median and p95.

The reporter runs outside the pane it names, so the daemon drops its report
(``outside_pane``) after the same trust checks; the cost of applying one is the server line.
The package is byte-compiled first: an installed package is (pip compiles it), and with
``PYTHONDONTWRITEBYTECODE`` set every run would otherwise compile the fast path again.

Usage: ``python bench/hook.py [--runs 200] [--json]``.
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
from signaltty.proto import trust  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(REPO, "tests", "fixtures", "real-agents", "claude", "hook_samples.json")
GOAL = 2.0
BASELINE = "python -I -S -c pass (baseline)"
STATUS = "signaltty hook-event --payload-stdin (status hook in a pane)"


def _ms(seconds: float | None) -> float | None:
    """Seconds to milliseconds; None (no runs) stays None."""
    return None if seconds is None else seconds * 1e3


def console_script() -> str | None:
    """The ``signaltty`` script next to this interpreter (a venv's bin), else on ``$PATH``."""
    beside = os.path.join(os.path.dirname(sys.executable), "signaltty")
    return beside if os.access(beside, os.X_OK) else shutil.which("signaltty")


def old_pip_wrapper(path: str) -> None:
    """Write, at ``path``, a console script of the shape pip < 25 generates (it imports ``re``
    to strip a Windows suffix from ``argv[0]``), calling our console entry point."""
    with open(path, "w") as fh:
        fh.write(
            f"#!{sys.executable}\n"
            "import re\nimport sys\nfrom signaltty.cli.entry import script\n"
            "if __name__ == '__main__':\n"
            "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
            "    sys.exit(script())\n"
        )
    os.chmod(path, 0o700)


def run_once(argv: list[str], env: dict[str, str], stdin: bytes | None) -> float:
    """Wall seconds of one run of ``argv`` (which must exit 0)."""
    t0 = time.perf_counter()
    r = subprocess.run(
        argv,
        env=env,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    elapsed = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{argv} exited {r.returncode}: {r.stderr.decode()[-300:]}")
    return elapsed


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
    ap.add_argument(
        "--script",
        help="the signaltty console script to time (default: next to this python, else on $PATH);"
        " e.g. one a fresh venv's pip installed",
    )
    args = ap.parse_args()
    compileall.compile_dir(os.path.join(REPO, "signaltty"), quiet=1)
    with open(SAMPLES, "rb") as fh:
        samples = json.load(fh)
    payloads = {e: json.dumps(samples[e]).encode() for e in ("UserPromptSubmit", "Stop")}
    script = args.script or console_script()
    with BenchDaemon(prefix="sth-") as d:
        ws = d.call("workspace.create", {"name": "bench", "cwd": d.tmp})["workspace"]
        pane = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "3600"]})["pane"]
        env = dict(d.env, SIGNALTTY_PANE=pane["id"])
        assert d.proc is not None
        in_pane = dict(env, SIGNALTTY_DAEMON=trust.identity_token(d.proc.pid))
        hook = ["hook-event", "--agent", "claude", "--event", "{EVENT}"]
        # (name, argv, env, send the payload on stdin)
        cases: list[tuple[str, list[str], dict[str, str], bool]] = [
            (BASELINE, [sys.executable, "-I", "-S", "-c", "pass"], env, False)
        ]
        if script:
            old = d.path("signaltty-pip-lt-25")
            old_pip_wrapper(old)
            cases += [
                ("signaltty hook-event (console script, no payload)", [script, *hook], env, False),
                (STATUS, [script, *hook, "--payload-stdin"], in_pane, True),
                (
                    "  same, console script of pip < 25",
                    [old, *hook, "--payload-stdin"],
                    in_pane,
                    True,
                ),
            ]
        else:
            log("no signaltty console script next to this python or on $PATH: install it first")
        entry = (
            f"import sys; sys.path.insert(0, {REPO!r}); "
            "from signaltty.cli.entry import script; sys.exit(script())"
        )
        cases.append(
            (
                "  same, python -I -S -c (entry)",
                [sys.executable, "-I", "-S", "-c", entry, *hook, "--payload-stdin"],
                in_pane,
                True,
            )
        )
        results: dict[str, list[float]] = {name: [] for name, *_ in cases}
        log(f"timing {len(cases)} cases × {args.runs} runs, taking turns")
        for i in range(-5, args.runs):  # 5 rounds warm the page cache
            event = "Stop" if i % 2 else "UserPromptSubmit"
            for name, cmd, case_env, with_payload in cases:
                argv = [a.replace("{EVENT}", event) for a in cmd]
                took = run_once(argv, case_env, payloads[event] if with_payload else None)
                if i >= 0:
                    results[name].append(took)
        lat = server_latency(d, pane["id"], args.runs)
    base = median(results[BASELINE])
    base_p95 = percentile(results[BASELINE], 95)
    rows = []
    per_case: dict[str, dict[str, float | None]] = {}
    data: dict[str, object] = {"runs": args.runs, "machine": machine_info(), "cases": per_case}
    for name, values in results.items():
        med, p95 = median(values), percentile(values, 95)
        rows.append(
            [name, fmt(_ms(med)), fmt(_ms(p95)), fmt(ratio(med, base)), fmt(ratio(p95, base_p95))]
        )
        per_case[name] = {
            "median_ms": _ms(med),
            "p95_ms": _ms(p95),
            "ratio_to_baseline": ratio(med, base),
            "p95_ratio_to_baseline_p95": ratio(p95, base_p95),
        }
    rows.append(
        [
            "server: request → agent.* event",
            fmt(_ms(median(lat))),
            fmt(_ms(percentile(lat, 95))),
            "-",
            "-",
        ]
    )
    data["server_latency"] = {"median_ms": _ms(median(lat)), "p95_ms": _ms(percentile(lat, 95))}
    status = per_case.get(STATUS, {}).get("ratio_to_baseline")
    data["goal"] = {"ratio_max": GOAL, "status_hook_ratio": status}
    if args.json:
        dump_json(data)
        return 0
    print_table(
        f"hook-event cost ({args.runs} runs each, same run, {time.strftime('%Y-%m-%d %H:%M')})",
        ["case", "median ms", "p95 ms", "median ÷ baseline", "p95 ÷ baseline p95"],
        rows,
    )
    if status is not None:
        verdict = "met" if status <= GOAL else "NOT met"
        print(f"status hook ÷ bare python (medians): {status:.2f} — goal ≤ {GOAL:g}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
