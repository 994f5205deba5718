"""The daemon says when the screen model's native loops are missing (docs/decisions.md,
"Session 14"): a plain `pip install .` hides the build hook's warning, so the daemon's own log
is where a user learns that the install found no C compiler."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import DaemonProc


@pytest.mark.parametrize("pure", [True, False])
def test_the_daemon_warns_when_the_native_loops_are_missing(tmp_root: Path, pure: bool) -> None:
    d = DaemonProc(tmp_root, {"SIGNALTTY_PURE_PYTHON": "1"} if pure else {})
    d.start()
    try:
        ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]
        argv = ["printf", "\\033[2;3H\\033[31mred\\033[K\\n"]
        pane = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": argv})
        pane_id = pane["pane"]["id"]
        d.call("wait", {"pane_id": pane_id, "until": "exited", "timeout_s": 20})
        text = d.call("pane.read", {"pane_id": pane_id, "mode": "screen"})["text"]
        assert "red" in text  # either way the same screen
    finally:
        d.stop()
        assert not d.kill_leftovers()
    log = (tmp_root / "daemon.stderr").read_text(errors="replace")
    assert ("screen.native_missing" in log) == pure, log[-2000:]
    if pure:
        assert "python3-dev" in log
