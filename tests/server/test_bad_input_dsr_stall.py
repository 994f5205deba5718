"""Breaker: cursor-position queries make the daemon parse pending output on the loop.

Without a viewer the daemon answers ``CSI 6 n`` itself (agents.md §7.5) from the screen
model's cursor; to know the cursor it calls ``settle_now()``/``screen.feed`` for everything
pending before the query — synchronously in the PTY reader callback, bypassing the drain
task's 10 ms slices and the reader backpressure. A program that writes 64 KB of
scroll-heavy output followed by ``ESC[6n`` in a loop (any TUI asks for the cursor; a hostile
file ``cat``-ed in a pane can too) holds the loop ~0.3–0.9 s per chunk. With 8 such panes
(tail saving off, to separate this from the save stall) ``server.status`` waits 1–2 s
repeatedly; the same flood without the query stays under ~0.5 s.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.conftest import DaemonProc

PY = sys.executable
FLOOD = 'import os, tty\ntty.setraw(0)\nc = b"x\\n" * 32000 + b"\\x1b[6n"\nwhile True:\n    os.write(1, c)\n'


def test_cursor_queries_after_a_flood_do_not_stall_the_loop(tmp_root: Path) -> None:
    cfg = tmp_root / "config" / "signaltty"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text("[persistence]\nsave_tails = false\n")
    d = DaemonProc(tmp_root)
    d.start()
    try:
        ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]["id"]
        for _ in range(8):
            d.call("pane.spawn", {"workspace_id": ws, "argv": [PY, "-c", FLOOD]})
        worst = 0.0
        end = time.monotonic() + 12
        with d.client(timeout=60) as c:
            while time.monotonic() < end:
                t0 = time.monotonic()
                c.call("server.status")
                worst = max(worst, time.monotonic() - t0)
                time.sleep(0.05)
        assert worst < 1.0, f"server.status took {worst:.2f} s while panes asked for the cursor"
    finally:
        d.stop()
        d.kill_leftovers()
