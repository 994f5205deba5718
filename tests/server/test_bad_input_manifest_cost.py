"""Breaker: user manifests that are valid TOML but cost the daemon its event loop.

Issue #4 "Bad input": a bad manifest is contained and explained, never fatal, and the
daemon never blocks its loop for long. Two manifests break that today:

* a counted repeat such as ``a{1000000000}`` compiles instantly with ``re`` but the ``regex``
  library (used for its time-out) expands it while compiling: the daemon spends all its CPU
  and memory (GBs within seconds) in ``load_catalog`` on the event loop — at start it never
  becomes ready, on ``agents.reload``/SIGHUP it stops answering;
* a 0.9 MB file with 100 000 tiny patterns (under the 1 MiB cap) takes ~20 s to compile,
  synchronously on the loop: every client waits that long.

Here: ``server.status`` is answered (within a 5 s timeout) throughout; how long each call
waits is measured by ``bench/latency.py --scenarios patterns,binaries``.
"""

from __future__ import annotations

import json
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from tests.conftest import DaemonProc, wait_until


def _raw_call(d: DaemonProc, method: str, timeout: float) -> dict | None:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    try:
        s.connect(d.socket)
        s.sendall((json.dumps({"protocol": "signaltty/1", "id": "r", "method": method, "params": {}}) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                return None
            buf += chunk
        return json.loads(buf)
    except TimeoutError:
        return None
    finally:
        s.close()


def _answered_while(d: DaemonProc, action: Callable[[], object]) -> object:
    """Run ``action`` in a thread; every ``server.status`` sent meanwhile must be answered
    within 5 s. Returns what ``action`` returned."""
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(action()), daemon=True)
    t.start()
    while t.is_alive():
        assert _raw_call(d, "server.status", timeout=5) is not None, "server.status not answered"
        t.join(0.05)
    return result[0] if result else None


def test_counted_repeat_bomb_is_a_failure_not_a_hang(tmp_root: Path) -> None:
    adir = tmp_root / "agents"
    adir.mkdir()
    d = DaemonProc(tmp_root, {"SIGNALTTY_AGENTS_DIR": str(adir)})
    d.start()
    try:
        (adir / "bomb.toml").write_text(
            '[agent]\nkind = "generic"\nbinaries = ["bomb"]\n'
            '[[screen]]\nid = "busy"\nstate = "working"\nregex = ["a{1000000000}"]\n'
        )
        r = _raw_call(d, "agents.reload", timeout=5)
        assert r is not None, "agents.reload did not answer within 5 s (regex compile bomb on the loop)"
        assert r["ok"]
        files = {Path(f["file"]).name for f in r["result"]["failures"]}
        ids = {m["id"] for m in r["result"]["manifests"]}
        # either refused as a failure, or accepted cheaply — but the daemon must answer
        assert "bomb.toml" in files or "bomb" in ids
        assert _raw_call(d, "server.status", timeout=2) is not None
    finally:
        if d.proc is not None and d.proc.poll() is None:
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            d.proc = None
        d.stop()
        d.kill_leftovers()


def test_huge_pattern_list_does_not_stall_the_loop(tmp_root: Path) -> None:
    adir = tmp_root / "agents"
    adir.mkdir()
    d = DaemonProc(tmp_root, {"SIGNALTTY_AGENTS_DIR": str(adir)})
    d.start()
    try:
        pats = ",".join(f'"q{i}"' for i in range(40000))
        (adir / "many.toml").write_text(
            '[agent]\nkind = "generic"\nbinaries = ["many"]\n'
            f'[[screen]]\nid = "a"\nstate = "idle"\nregex = [{pats}]\n'
        )
        assert (adir / "many.toml").stat().st_size < 1 << 20
        r = _answered_while(d, lambda: _raw_call(d, "agents.reload", timeout=120))
        assert isinstance(r, dict), r
        assert r["ok"], r
        files = {Path(f["file"]).name for f in r["result"]["failures"]}
        assert "many.toml" in files or "many" in {m["id"] for m in r["result"]["manifests"]}
    finally:
        if d.proc is not None and d.proc.poll() is None:
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
            d.proc = None
        d.stop()
        d.kill_leftovers()


def test_huge_binaries_list_does_not_stall_every_process_refresh(tmp_root: Path) -> None:
    """The 10 s process refresh runs ``catalog.detect(process_name)`` for every live pane on
    the loop, a linear scan (twice: specific kinds, then generic) over every ``binaries``
    entry. One 0.95 MB user file with 80 000 names and 100 idle panes blocks the loop for
    seconds every refresh."""
    adir = tmp_root / "agents"
    adir.mkdir()
    bins = ",".join(f'"tool{i}"' for i in range(80000))
    (adir / "bins.toml").write_text(f'[agent]\nkind = "generic"\nbinaries = [{bins}]\n')
    assert (adir / "bins.toml").stat().st_size < 1 << 20
    d = DaemonProc(tmp_root, {"SIGNALTTY_AGENTS_DIR": str(adir)})
    d.start()
    try:
        ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]["id"]
        for _ in range(100):  # "sh" until a refresh reads /proc and finds "sleep"
            d.call("pane.spawn", {"workspace_id": ws, "argv": ["sh", "-c", "exec sleep 120"]})

        def refreshed() -> bool:
            assert _raw_call(d, "server.status", timeout=5) is not None, "status not answered"
            return all(p["process_name"] == "sleep" for p in d.call("pane.list")["panes"])

        # a refresh ran over every pane (detection against the 80 000 names) meanwhile
        wait_until(refreshed, timeout=60, what="a process refresh over all 100 panes")
    finally:
        d.stop()
        d.kill_leftovers()
