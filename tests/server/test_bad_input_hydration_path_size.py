"""Breaker: a login-shell PATH the kernel cannot pass to a child (desktop-and-service.md §5).

Hydration accepts a "PATH" of up to 256 KiB, but Linux refuses any single environment
string longer than 128 KiB (``MAX_ARG_STRLEN``) with E2BIG. An rc file whose PATH is, say,
~200 KiB of distinct absolute directories is merged into the daemon's PATH, and from then on
**every** ``pane.spawn`` fails with ``SPAWN_FAILED: Argument list too long`` — the daemon can
no longer start anything. Expected: such a PATH is refused by hydration (state ``failed``,
PATH kept), or trimmed, so spawning keeps working.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import DaemonProc, wait_until

B, E = "__SIGNALTTY_PATH_BEGIN__", "__SIGNALTTY_PATH_END__"


def test_oversized_login_path_does_not_break_spawning(tmp_root: Path) -> None:
    segs = ":".join(f"/nonexistent/tools/dir{i:05d}" for i in range(7000))  # ~200 KiB
    assert 128 * 1024 < len(segs) < 256 * 1024
    (tmp_root / "path.txt").write_text(segs)
    sh = tmp_root / "fakesh"
    sh.write_text(f"#!/bin/sh\nprintf '%s' {B}\ncat {tmp_root / 'path.txt'}\nprintf '%s' {E}\n")
    sh.chmod(0o755)
    d = DaemonProc(tmp_root, {"SIGNALTTY_SHELL_PATH": "1", "SHELL": str(sh)})
    d.start()
    try:
        wait_until(lambda: d.call("server.status")["path_hydration"]["state"] != "pending", timeout=10)
        ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]["id"]
        pane = d.call("pane.spawn", {"workspace_id": ws, "argv": ["sh", "-c", "echo started; sleep 30"]})["pane"]
        wait_until(lambda: "started" in d.call("pane.read", {"pane_id": pane["id"]})["text"], timeout=10)
    finally:
        d.stop()
        d.kill_leftovers()


def test_refresh_with_a_hanging_shell_reports_the_outcome_not_pending(tmp_root: Path) -> None:
    """``agents.catalog {refresh: true}`` waits ≤ 5 s for the probe, whose own limit is 5 s:
    the two timers race and the answer says ``pending`` although the probe is killed at that
    very moment (a moment later ``server.status`` says ``failed``)."""
    sh = tmp_root / "fakesh"
    sh.write_text("#!/bin/sh\nexec sleep 60\n")
    sh.chmod(0o755)
    d = DaemonProc(tmp_root, {"SIGNALTTY_SHELL_PATH": "1", "SHELL": str(sh)})
    d.start()
    try:
        wait_until(lambda: d.call("server.status")["path_hydration"]["state"] == "failed", timeout=10)
        with d.client(timeout=20) as c:
            r = c.call("agents.catalog", {"refresh": True})
        assert r["path_hydration"]["state"] == "failed", r["path_hydration"]
    finally:
        d.stop()
        d.kill_leftovers()
