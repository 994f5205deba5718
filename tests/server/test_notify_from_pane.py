"""``notify`` from inside a pane speaks only for that pane (issue 10, third attack pass,
A13): real daemon, real shells in real PTYs running the real CLI. Naming another pane is
``FORBIDDEN`` and posts nothing; naming none marks the caller's own pane; a process outside
every pane (the person) may still name any pane."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import DaemonProc, wait_until
from tests.server.test_trust_answers import _shell_pane


def _notify_from_pane(d: DaemonProc, cmd: str, name: str) -> dict:
    out = d.root / f"notify-{name}"
    pane = _shell_pane(
        d, f"{cmd} >{out}.out 2>{out}.err; echo $? >{out}.rc; exec sleep 60", name
    )
    rc_file = Path(f"{out}.rc")
    rc = wait_until(lambda: (rc_file.exists() and rc_file.read_text().strip()) or None, 30)
    return {"pane": pane, "rc": int(rc), "stdout": Path(f"{out}.out").read_text(),
            "stderr": Path(f"{out}.err").read_text()}


def test_a_pane_cannot_notify_for_another_pane(daemon) -> None:
    victim = _shell_pane(daemon, "exec sleep 600", "claude")
    r = _notify_from_pane(
        daemon,
        f"signaltty notify --pane {victim} --severity warning --title 'Claude Code needs approval'",
        "attacker",
    )
    assert r["rc"] != 0, r
    assert "FORBIDDEN" in r["stderr"], r
    assert daemon.call("pane.get", {"pane_id": victim})["pane"]["attention"] == "none"


def test_a_pane_notifies_for_itself_by_default(daemon) -> None:
    other = _shell_pane(daemon, "exec sleep 600", "other")
    # no pane named at all (not even through $SIGNALTTY_PANE): the caller's own pane
    r = _notify_from_pane(
        daemon, "env -u SIGNALTTY_PANE signaltty --json notify --title 'build done'", "builder"
    )
    assert r["rc"] == 0, r
    assert json.loads(r["stdout"])["notification"]["title"] == "build done"
    pane = daemon.call("pane.get", {"pane_id": r["pane"]})["pane"]
    assert pane["attention"] == "unread", pane
    assert daemon.call("pane.get", {"pane_id": other})["pane"]["attention"] == "none"


def test_the_person_may_notify_for_any_pane(daemon) -> None:
    victim = _shell_pane(daemon, "exec sleep 600", "claude")
    r = daemon.cli("--json", "notify", "--pane", victim, "--title", "look at this")
    assert r.returncode == 0, r.stderr
    assert daemon.call("pane.get", {"pane_id": victim})["pane"]["attention"] == "unread"
