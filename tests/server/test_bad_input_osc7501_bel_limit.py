"""Breaker: the 4096-byte limit of an OSC 7501 report counts the real terminator (agents.md §7.4).

"The whole sequence is at most 4096 bytes." ``ESC ] 7501 ;`` is 7 bytes; the terminator is
2 bytes for ST (``ESC \\``) but 1 byte for BEL. ``parse_report`` always adds 9 bytes of
framing, so a BEL-terminated report of exactly 4096 bytes (payload 4088) is discarded
although it is within the limit. The ST-terminated report of exactly 4096 bytes (payload
4087) is accepted, as it should be.
"""

from __future__ import annotations

import sys
import textwrap

from tests.conftest import DaemonProc, wait_until

PY = sys.executable


def _report(payload_len: int, state: str) -> bytes:
    head = f"state={state}:pad=".encode()
    return head + b"x" * (payload_len - len(head))


def _run(daemon: DaemonProc, seq: bytes) -> str:
    prog = textwrap.dedent(
        f"""
        import os, time, tty
        tty.setraw(0)
        os.write(1, {seq!r})
        time.sleep(60)
        """
    )
    ws = daemon.call("workspace.create", {"name": "w", "cwd": str(daemon.root)})["workspace"]["id"]
    return daemon.call("pane.spawn", {"workspace_id": ws, "argv": [PY, "-c", prog]})["pane"]["id"]


def _status(daemon: DaemonProc, pid: str):
    return daemon.call("pane.get", {"pane_id": pid})["pane"]["program_status"]


def test_st_terminated_report_of_4096_bytes_is_accepted(daemon: DaemonProc) -> None:
    payload = _report(4087, "working")
    seq = b"\x1b]7501;" + payload + b"\x1b\\"
    assert len(seq) == 4096
    pid = _run(daemon, seq)
    st = wait_until(lambda: _status(daemon, pid), timeout=10)
    assert st["state"] == "working"


def test_bel_terminated_report_of_4096_bytes_is_accepted(daemon: DaemonProc) -> None:
    payload = _report(4088, "working")
    seq = b"\x1b]7501;" + payload + b"\x07"
    assert len(seq) == 4096
    pid = _run(daemon, seq)
    st = wait_until(lambda: _status(daemon, pid), timeout=10)
    assert st["state"] == "working"
