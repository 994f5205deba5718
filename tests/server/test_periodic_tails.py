"""A periodic save writes the output of a pane nobody reads, so a crash keeps it.

Output waits until a reader or the screen sweep applies it (server/panes.py), and a pane
with no screen rules has no sweep: before, its tail stayed empty at every periodic save and
only the shutdown save filled it, so after a crash (SIGKILL here) the restored pane showed
nothing (attack pass, session 20).
"""

from __future__ import annotations

import signal
import sys

import psutil

from tests.conftest import DaemonProc, wait_until

PY = sys.executable
# three lines, then it stays alive and quiet (no exit: nothing else applies its output)
PRINTER = (
    "import sys, time\n"
    "for i in range(1, 4):\n"
    "    print(f'line-{i}', flush=True); time.sleep(0.3)\n"
    "time.sleep(120)\n"
)


def test_a_pane_nobody_reads_is_in_the_periodic_tail_and_survives_a_crash(tmp_root):
    d = DaemonProc(tmp_root)
    d.start()
    try:
        ws = d.call("workspace.create", {"name": "t", "cwd": str(d.root)})["workspace"]
        pane = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": [PY, "-c", PRINTER]})
        pane_id = pane["pane"]["id"]
        tail = d.state_dir / "history" / f"{pane_id}.tail"
        # nothing reads the pane: only the periodic save (every 10 s) can have written this
        wait_until(
            lambda: tail.exists() and "line-3" in tail.read_text(errors="replace"),
            timeout=30,
            what="the pane's output in its saved tail",
        )
        assert "line-1\nline-2\nline-3" in tail.read_text()

        assert d.proc is not None
        d.children = psutil.Process(d.proc.pid).children(recursive=True)
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        d.proc = None
        d.kill_leftovers()

        d.start()
        read = d.call("pane.read", {"pane_id": pane_id, "mode": "tail", "lines": 50})
        assert "line-1\nline-2\nline-3" in read["text"]
    finally:
        d.stop()
        assert not d.kill_leftovers()
