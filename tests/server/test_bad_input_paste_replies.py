"""Breaker: terminal replies are written into the middle of an after-start prompt paste.

An ``after-start`` entry gets its prompt as ``ESC[200~`` + prompt + ``ESC[201~`` through the
pane's input queue (agents.md §4.4). A long prompt does not fit in the PTY's input buffer,
so the queue writes it in pieces as the program reads. Terminal replies (DA1, DSR, OSC 7501
``?``; agents.md §7.4–§7.5) are written straight to the master the moment a query is
scanned, *past* the queued rest of the paste, so the program receives reply sequences
inside its prompt text. A terminal keeps its own writes in order; the pasted prompt must
arrive intact.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import DaemonProc, wait_until

PY = sys.executable

PROG = r'''#!{py}
import os, select, time, tty
tty.setraw(0)
time.sleep(1.5)  # the paste fills the input buffer meanwhile
got = b""
t = time.time()
while time.time() - t < 6:
    r, _, _ = select.select([0], [], [], 0.2)
    if r:
        got += os.read(0, 512)
        # like a TUI probing the terminal while it starts up
        os.write(1, b"\x1b[c\x1b[6n\x1b]7501;?\x1b\\")
open({out!r}, "wb").write(got)
time.sleep(30)
'''


def test_after_start_paste_is_not_interleaved_with_terminal_replies(tmp_root: Path) -> None:
    agents = tmp_root / "agents"
    agents.mkdir()
    bindir = tmp_root / "bin"
    bindir.mkdir()
    out = tmp_root / "got.bin"
    tool = bindir / "paster"
    tool.write_text(PROG.format(py=PY, out=str(out)))
    tool.chmod(0o755)
    (agents / "paster.toml").write_text(
        '[agent]\nkind = "generic"\nbinaries = ["paster"]\n'
        '[launch]\nprompt = { mode = "after-start", delay_ms = 200 }\n'
    )
    d = DaemonProc(tmp_root, {"SIGNALTTY_AGENTS_DIR": str(agents), "PATH": f"{bindir}:/usr/bin:/bin"})
    d.start()
    try:
        ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]["id"]
        prompt = "".join(chr(ord("a") + i % 26) for i in range(30000))
        d.call("pane.spawn", {"workspace_id": ws, "agent": "paster", "prompt": prompt})
        wait_until(out.exists, timeout=20)
        got = out.read_bytes()
        start, end = got.find(b"\x1b[200~"), got.find(b"\x1b[201~")
        assert start == 0, got[:80]
        assert end > 0, got[:80]
        inner = got[start + 6 : end]
        n_esc = inner.count(b"\x1b")
        assert inner == prompt.encode(), (
            f"pasted prompt corrupted: {len(inner)} bytes instead of {len(prompt)}, "
            f"{n_esc} escape sequences inside"
        )
    finally:
        d.stop()
        d.kill_leftovers()
