"""Breaker: catastrophic user screen rules must not hold the event loop (agents.md §5, issue #4).

Each search has a 50 ms time limit and a rule is disabled after 3 time-outs, but nothing
bounds one pane's *evaluation*: a user manifest (generic, no ``binaries``: it applies to
every generic pane) with 30 rules of ``(a+)+$`` makes one evaluation cost 30 × ~80 ms ≈ 2.4 s
on the loop, three times over before the rules are disabled (and again after every reload).
The sweep's 100 ms tick budget is only checked between panes. ``server.status`` then waits
for seconds.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

from tests.conftest import DaemonProc

PY = sys.executable


def _status_latency(d: DaemonProc, timeout: float = 30) -> float:
    t0 = time.monotonic()
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    try:
        s.connect(d.socket)
        s.sendall(b'{"protocol":"signaltty/1","id":"s","method":"server.status","params":{}}\n')
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
        json.loads(buf)
    except (TimeoutError, ValueError):
        return timeout
    finally:
        s.close()
    return time.monotonic() - t0


def test_many_catastrophic_rules_do_not_block_the_loop(tmp_root: Path) -> None:
    adir = tmp_root / "agents"
    adir.mkdir()
    rules = "".join(
        f'[[screen]]\nid = "r{i}"\nstate = "idle"\nregion = "screen"\nregex = [\'(a+)+$\']\n' for i in range(30)
    )
    (adir / "slow.toml").write_text('[agent]\nkind = "generic"\n' + rules)
    d = DaemonProc(tmp_root, {"SIGNALTTY_AGENTS_DIR": str(adir)})
    d.start()
    try:
        ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]["id"]
        prog = "import time\nwhile True:\n    print('a' * 70 + '!', flush=True)\n    time.sleep(0.2)\n"
        d.call("pane.spawn", {"workspace_id": ws, "argv": [PY, "-c", prog]})
        worst = 0.0
        end = time.monotonic() + 8
        while time.monotonic() < end:
            worst = max(worst, _status_latency(d))
            time.sleep(0.05)
        assert worst < 1.0, f"server.status took {worst:.2f} s while the sweep ran user rules"
        # and the rules that ran out of time are reported
        status = d.call("server.status")
        assert status["sweep"]["disabled_rules"], status["sweep"]
    finally:
        d.stop()
        d.kill_leftovers()
