"""Breaker: catastrophic user screen rules must not hold the event loop (agents.md §5, issue #4).

Each search has a 50 ms time limit and a rule is disabled after 3 time-outs, but nothing
bounds one pane's *evaluation*: a user manifest (generic, no ``binaries``: it applies to
every generic pane) with 30 rules of ``(a+)+$`` makes one evaluation cost 30 × ~80 ms ≈ 2.4 s
on the loop, three times over before the rules are disabled (and again after every reload).
The sweep's 100 ms tick budget is only checked between panes. ``server.status`` then waits
for seconds.

Here: every ``server.status`` is answered (within the client's timeout) until the rules are
disabled. How long each call waits is measured by ``bench/latency.py --scenarios rules``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import DaemonProc, wait_until

PY = sys.executable


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
        # the program's own pace: a new line every 0.2 s keeps the sweep re-evaluating
        prog = "import time\nwhile True:\n    print('a' * 70 + '!', flush=True)\n    time.sleep(0.2)\n"
        d.call("pane.spawn", {"workspace_id": ws, "argv": [PY, "-c", prog]})
        # each poll is a status call that must be answered (5 s client timeout) while the
        # sweep tries the rules; the rules that ran out of time end up reported
        status = wait_until(lambda: (s := d.call("server.status"))["sweep"]["disabled_rules"] and s,
                            timeout=30, what="the catastrophic rules disabled")
        disabled = status["sweep"]["disabled_rules"]
        assert all(r.startswith("slow.toml:r") for r in disabled), disabled
    finally:
        d.stop()
        d.kill_leftovers()
