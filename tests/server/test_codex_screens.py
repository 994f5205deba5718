"""Codex before any hook (issue 11 items 4 and 5), with the fake agent installed as ``codex``
in a real pane: what the bundled rules and OSC 7501 reports make of its start-up.

- Item 4: the "Hooks need review" dialog (real 0.171.0 screen,
  tests/fixtures/real-agents/codex/10_hooks_review.txt) reads ``blocked/input_required``
  and the pane's last message (what the notification shows) says what to choose.
- Item 5: a spinner title and an idle report before anyone gave Codex input are its
  start-up, not a turn: the pane reads ``idle/none``, never ``done/unread``; the same
  signals after input are a finished turn.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tests.conftest import REPO, DaemonProc, wait_until
from tests.server.test_hooks_e2e import agent_bin

REVIEW = REPO / "tests" / "fixtures" / "real-agents" / "codex" / "10_hooks_review.txt"
SPINNER_TITLE = "\x1b]0;\u280b work\x07"


def report(payload: str) -> str:
    return f"\x1b]7501;{payload}\x1b\\"


def spawn_codex(d: DaemonProc, plan: list[dict[str, Any]]) -> str:
    prog = agent_bin(d.root, "codex")
    ws = d.call("workspace.create", {"name": "codex", "cwd": str(d.root)})["workspace"]
    pane = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": [str(prog), json.dumps(plan)],
                                 "cols": 120, "rows": 40})["pane"]
    return pane["id"]


def get(d: DaemonProc, pane_id: str) -> dict[str, Any]:
    return d.call("pane.get", {"pane_id": pane_id})["pane"]


def test_hooks_review_dialog_reads_blocked_and_says_what_to_do(daemon: DaemonProc, tmp_root: Path) -> None:
    gate = tmp_root / "gate-review"
    pid = spawn_codex(daemon, [{"print": "\x1b[2J\x1b[H" + REVIEW.read_text().rstrip("\n")},
                               {"wait_file": str(gate)}])
    try:
        p = wait_until(lambda: (q := get(daemon, pid))["lifecycle"] == "blocked" and q, timeout=10)
        assert p["attention"] == "input_required"
        assert p["agent"]["kind"] == "codex"
        assert "2. Trust all and continue" in (p["last_message"] or "")
        assert daemon.call("pane.explain", {"pane_id": pid})["matched"]["id"] == "hooks_review"
    finally:
        gate.touch()


def test_startup_signals_without_input_never_read_done(daemon: DaemonProc, tmp_root: Path) -> None:
    g0, g1, g2 = (tmp_root / f"gate-{n}" for n in range(3))
    pid = spawn_codex(daemon, [
        {"print": SPINNER_TITLE + "\x1b[2J\x1b[H  >_ OpenAI Codex (v0.171.0)"},  # start-up spinner title
        {"wait_file": str(g0)},
        {"print": report("state=idle:app=codex")},  # its idle report
        {"wait_file": str(g1)},
        {"print": report("state=working:app=codex")},  # a turn, after input
        {"sleep": 0.3},
        {"print": report("state=idle:app=codex")},
        {"wait_file": str(g2)},
    ])
    try:
        wait_until(lambda: get(daemon, pid)["lifecycle"] == "working", timeout=10)  # the spinner title
        g0.touch()
        p = wait_until(lambda: (q := get(daemon, pid))["authority"] == "program_status" and q, timeout=10)
        assert (p["lifecycle"], p["attention"]) == ("idle", "none")
        # input (a prompt typed at the terminal), then the same signals: a finished turn
        daemon.call("pane.input", {"pane_id": pid, "data_b64": base64.b64encode(b"hello\r").decode()})
        g1.touch()
        p = wait_until(lambda: (q := get(daemon, pid))["lifecycle"] == "done" and q, timeout=10)
        assert p["attention"] == "unread"
    finally:
        for g in (g0, g1, g2):
            g.touch()
