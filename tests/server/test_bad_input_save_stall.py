"""Breaker: saving the workspace applies every pane's pending screen bytes on the event loop.

``Daemon.save`` collects tails with ``rt.tail_text(5000)`` → ``PyteScreen.tail`` →
``_apply_all()``, which fed *all* pending bytes (up to the 64 KiB pause threshold plus a
64 KiB read per pane) synchronously, bypassing the drain task's 10 ms slices. Scroll-heavy
output (``x\\n`` lines) is parsed at ~70 KB/s, so each flooding pane cost ~0.3 s of blocked
loop per save: with 8 such panes ``server.status`` waited ~2.5 s every time tails were saved
(with ``[persistence] save_tails = false`` the worst latency was ~0.45 s). The comment in
``save`` says "a pane that keeps printing must not delay a save"; it delayed everything else.

Here: every ``server.status`` is answered (within the client's timeout) until the tails of
all flooding panes have been saved. How long each call waits is measured by
``bench/latency.py --scenarios save``.
"""

from __future__ import annotations

import sys

from tests.conftest import DaemonProc, wait_until

PY = sys.executable
FLOOD = 'import os, tty\ntty.setraw(0)\nc = b"x\\n" * 32000\nwhile True:\n    os.write(1, c)\n'


def test_tail_save_does_not_stall_the_loop_with_flooding_panes(daemon: DaemonProc) -> None:
    d = daemon
    ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]["id"]
    spawn = {"workspace_id": ws, "argv": [PY, "-c", FLOOD]}
    ids = [d.call("pane.spawn", spawn)["pane"]["id"] for _ in range(8)]
    history = d.state_dir / "history"

    def tails_saved() -> bool:
        assert d.call("server.status")["pid"] == d.proc.pid  # answered meanwhile (5 s timeout)
        return all((history / f"{pane_id}.tail").exists() for pane_id in ids)

    # the first tail save comes after the snapshot debounce (2 s) and the tail period (≤ 10 s)
    wait_until(tails_saved, timeout=60, what="the tails of every flooding pane saved")
    # the floods end here, not in the daemon's shutdown: eight of them made its final save
    # settle for seconds, and once (loaded machine) outlast the fixture's 15 s stop
    for pane_id in ids:
        d.call("pane.close", {"pane_id": pane_id, "signal": "KILL"})
