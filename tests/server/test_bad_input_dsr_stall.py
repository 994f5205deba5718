"""Breaker: cursor-position queries make the daemon parse pending output on the loop.

Without a viewer the daemon answers ``CSI 6 n`` itself (agents.md §7.5) from the screen
model's cursor; to know the cursor it calls ``settle_now()``/``screen.feed`` for everything
pending before the query — synchronously in the PTY reader callback, bypassing the drain
task's 10 ms slices and the reader backpressure. A program that writes 64 KB of
scroll-heavy output followed by ``ESC[6n`` in a loop (any TUI asks for the cursor; a hostile
file ``cat``-ed in a pane can too) held the loop ~0.3–0.9 s per chunk. With 8 such panes
(tail saving off, to separate this from the save stall) ``server.status`` waited 1–2 s
repeatedly; the same flood without the query stays under ~0.5 s.

Here: every ``server.status`` is answered (within the client's timeout) until each pane has
had its queries answered several times. How long each call waits is measured by
``bench/latency.py --scenarios dsr``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import DaemonProc, wait_until

PY = sys.executable
# Floods, asks for the cursor, and counts the answers it got (into the file argv[1]).
# (select, not O_NONBLOCK: stdin and stdout share one open file description, the PTY's)
FLOOD = (
    "import os, select, sys, tty\n"
    "tty.setraw(0)\n"
    'c = b"x\\n" * 32000 + b"\\x1b[6n"\n'
    "n = 0\n"
    "while True:\n"
    "    os.write(1, c)\n"
    "    while select.select([0], [], [], 0)[0]:\n"
    '        n += os.read(0, 4096).count(b"R")\n'
    '    with open(sys.argv[1] + ".tmp", "w") as fh:\n'
    "        fh.write(str(n))\n"
    '    os.replace(sys.argv[1] + ".tmp", sys.argv[1])\n'
)
ANSWERS = 5  # cursor reports each pane must have received


def _answers(path: Path) -> int:
    try:
        return int(path.read_text() or 0)
    except (OSError, ValueError):
        return 0


def test_cursor_queries_after_a_flood_do_not_stall_the_loop(tmp_root: Path) -> None:
    d = DaemonProc(tmp_root)
    d.write_config("[persistence]\nsave_tails = false\n")
    d.start()
    try:
        ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]["id"]
        counts = [tmp_root / f"answers-{i}" for i in range(8)]
        for path in counts:
            d.call("pane.spawn", {"workspace_id": ws, "argv": [PY, "-c", FLOOD, str(path)]})

        def answered_everywhere() -> bool:
            assert d.call("server.status")["pid"] == d.proc.pid  # answered meanwhile (5 s timeout)
            return all(_answers(p) >= ANSWERS for p in counts)

        wait_until(answered_everywhere, timeout=60, what=f"{ANSWERS} cursor reports in every pane")
    finally:
        d.stop()
        d.kill_leftovers()
