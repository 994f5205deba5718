"""Breaker: saving the workspace applies every pane's pending screen bytes on the event loop.

``Daemon.save`` collects tails with ``rt.tail_text(5000)`` → ``PyteScreen.tail`` →
``_apply_all()``, which feeds *all* pending bytes (up to the 64 KiB pause threshold plus a
64 KiB read per pane) synchronously, bypassing the drain task's 10 ms slices. Scroll-heavy
output (``x\\n`` lines) is parsed at ~70 KB/s, so each flooding pane costs ~0.3 s of blocked
loop per save: with 8 such panes ``server.status`` waits ~2.5 s every time tails are saved
(with ``[persistence] save_tails = false`` the worst latency is ~0.45 s). The comment in
``save`` says "a pane that keeps printing must not delay a save"; it delays everything else.
"""

from __future__ import annotations

import sys
import time

from tests.conftest import DaemonProc

PY = sys.executable
FLOOD = 'import os, tty\ntty.setraw(0)\nc = b"x\\n" * 32000\nwhile True:\n    os.write(1, c)\n'


def test_tail_save_does_not_stall_the_loop_with_flooding_panes(daemon: DaemonProc) -> None:
    d = daemon
    ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]["id"]
    for _ in range(8):
        d.call("pane.spawn", {"workspace_id": ws, "argv": [PY, "-c", FLOOD]})
    worst = 0.0
    end = time.monotonic() + 14  # covers the first tail save (snapshot debounce 2 s, tails ≤ 10 s)
    with d.client(timeout=60) as c:
        while time.monotonic() < end:
            t0 = time.monotonic()
            c.call("server.status")
            worst = max(worst, time.monotonic() - t0)
            time.sleep(0.05)
    assert worst < 1.5, f"server.status took {worst:.2f} s (tail save fed pending screen bytes on the loop)"
