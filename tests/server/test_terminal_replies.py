"""Terminal query replies written by the daemon to the PTY (agents.md §7.4, §7.5).

A probe program in a real PTY (raw mode) waits for a trigger byte, writes a burst of
queries, collects whatever the "terminal" answers for a moment and prints it. Without a
viewer the daemon answers every query, with the OSC replies before DA1; with a viewer
attached only the OSC 7501 query is answered by the daemon (the viewer's terminal answers
the rest through ``pane.input``).
"""

from __future__ import annotations

import base64
import sys
import textwrap

from tests.conftest import DaemonProc, wait_until

PY = sys.executable

PROBE = textwrap.dedent(
    r"""
    import os, select, sys, time, tty
    tty.setraw(0)
    os.write(1, b"probe ready\r\n")
    os.read(0, 1)
    os.write(1, b"\x1b[c\x1b]10;?\x07\x1b[5n\x1b[3;7H\x1b[6n\x1b]11;?\x1b\\\x1b]7501;?\x1b\\")
    got = b""
    deadline = time.time() + 1.5
    while time.time() < deadline:
        r, _, _ = select.select([0], [], [], 0.1)
        if r:
            got += os.read(0, 256)
    os.write(1, b"\x1b[10;1HREPLY=" + got.hex().encode() + b"\r\n")
    time.sleep(30)
    """
)


def _spawn_probe(daemon: DaemonProc) -> str:
    (daemon.root / "probe.py").write_text(PROBE, encoding="utf-8")
    ws = daemon.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pid = daemon.call("pane.spawn", {"workspace_id": ws, "argv": [PY, str(daemon.root / "probe.py")], "cols": 300})["pane"]["id"]
    wait_until(lambda: "probe ready" in daemon.call("pane.read", {"pane_id": pid})["text"])
    return pid


def _reply(daemon: DaemonProc, pid: str) -> bytes:
    def got() -> str | None:
        text = daemon.call("pane.read", {"pane_id": pid, "mode": "screen"})["text"]
        for line in text.splitlines():
            if line.startswith("REPLY="):
                return line[6:].strip()
        return None

    return bytes.fromhex(wait_until(got, timeout=10))


def _trigger(daemon: DaemonProc, pid: str) -> None:
    daemon.call("pane.input", {"pane_id": pid, "data_b64": base64.b64encode(b"g").decode()})


def test_without_a_viewer_every_query_is_answered_osc_first_da1_last(daemon: DaemonProc) -> None:
    pid = _spawn_probe(daemon)
    _trigger(daemon, pid)
    assert _reply(daemon, pid) == (
        b"\x1b]10;rgb:ffff/ffff/ffff\x07"
        b"\x1b[0n"
        b"\x1b[3;7R"
        b"\x1b]11;rgb:0000/0000/0000\x1b\\"
        b"\x1b]7501;?\x1b\\"
        b"\x1b[?62;22c"
    )


def test_with_a_viewer_only_the_program_status_query_is_answered(daemon: DaemonProc) -> None:
    pid = _spawn_probe(daemon)
    viewer = daemon.client(timeout=None)
    try:
        viewer.call("pane.attach", {"pane_id": pid})
        _trigger(daemon, pid)
        assert _reply(daemon, pid) == b"\x1b]7501;?\x1b\\"
    finally:
        viewer.close()


FLOOD_PROBE = textwrap.dedent(
    r"""
    import os, select, sys, time, tty
    tty.setraw(0)
    os.write(1, b"probe ready\r\n")
    os.read(0, 1)
    flood = b"".join(b"line %d\n" % i for i in range(20000))
    os.write(1, flood + b"\x1b]10;?\x07\x1b[3;7H\x1b[6n" + b"abc\x1b[6n" + flood[:30000]
             + b"\x1b[5;2H\x1b[6n\x1b]7501;?\x1b\\" + b"\x1b[2J\x1b[1;1H")
    got = b""
    deadline = time.time() + 4
    while time.time() < deadline:
        r, _, _ = select.select([0], [], [], 0.1)
        if r:
            got += os.read(0, 256)
    os.write(1, b"\x1b[10;1HREPLY=" + got.hex().encode() + b"\r\n")
    time.sleep(30)
    """
)


def test_cursor_reports_after_a_backlog_are_exact_and_in_order(daemon: DaemonProc) -> None:
    # hundreds of KB precede the queries: the daemon answers from a task that parses the
    # backlog in slices (the loop is not blocked), and the positions are still exact
    (daemon.root / "probe.py").write_text(FLOOD_PROBE, encoding="utf-8")
    ws = daemon.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pid = daemon.call("pane.spawn", {"workspace_id": ws, "argv": [PY, str(daemon.root / "probe.py")], "cols": 300})["pane"]["id"]
    wait_until(lambda: "probe ready" in daemon.call("pane.read", {"pane_id": pid})["text"])
    _trigger(daemon, pid)
    assert _reply(daemon, pid) == (
        b"\x1b]10;rgb:ffff/ffff/ffff\x07\x1b[3;7R\x1b[3;10R\x1b[5;2R\x1b]7501;?\x1b\\"
    )
