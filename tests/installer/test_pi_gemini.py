"""The Pi and Gemini CLI installers (issue 11): files, ownership, and the installed Pi
extension run under ``node`` in a real pane with the real ``signaltty hook-event``
(research real-agents.md §6, §7)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from signaltty.installer import api, pi
from signaltty.proto.envelope import SignalttyError
from tests.conftest import wait_until

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")
HOST = Path(__file__).parent / "node" / "load_pi.mjs"


def test_install_writes_one_managed_extension_and_leaves_a_foreign_one(tmp_path):
    home = tmp_path / "home"
    r = api.install("pi", "/opt/bin/signaltty", home=home, env={})
    ext = home / ".pi" / "agent" / "extensions" / "signaltty.ts"
    assert (r.file, r.changed) == (str(ext), True)
    text = ext.read_text()
    assert pi.is_managed(text)
    assert 'const REPORTER = "/opt/bin/signaltty";' in text
    assert not api.install("pi", "/opt/bin/signaltty", home=home, env={}).changed
    assert api.status("pi", home=home, env={})["installed"] is True
    # $PI_CODING_AGENT_DIR moves the root
    moved = api.install("pi", "/opt/bin/signaltty", env={"PI_CODING_AGENT_DIR": str(tmp_path / "agentdir")})
    assert moved.file == str(tmp_path / "agentdir" / "extensions" / "signaltty.ts")
    assert api.uninstall("pi", home=home, env={}).changed
    assert not ext.exists()
    ext.write_text("export default function mine(pi) {}\n")
    with pytest.raises(Exception, match="not managed by signaltty"):
        api.install("pi", "/opt/bin/signaltty", home=home, env={})
    report = api.uninstall("pi", home=home, env={})
    assert not report.changed
    assert report.notice
    assert ext.read_text().startswith("export default function mine")
    assert api.status("pi", home=home, env={}) == {"installed": False, "file": str(ext), "foreign_extension": True}


@needs_node
def test_extension_reports_turns_and_makes_confirm_dialogs_answerable(daemon):
    """session_start → idle, agent_start → working, agent_end → done; a confirm dialog of any
    extension blocks the pane with a native decision: answered in signaltty it closes with
    that answer, answered in the terminal it withdraws the request."""
    reporter = str(Path(sys.executable).parent / "signaltty")
    installed = Path(api.install("pi", reporter, home=daemon.root / "pi-home", env={}).file)
    ext = daemon.root / "signaltty-ext.mjs"  # node loads .ts only through Pi's loader
    ext.write_text(installed.read_text())
    box = daemon.root / "pi-box"
    box.mkdir()
    ws = daemon.call("workspace.create", {"name": "pi", "cwd": str(daemon.root)})["workspace"]
    pane_id = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": [NODE, str(HOST), str(ext), str(box)],
                                         "agent_hint": "pi"})["pane"]["id"]

    def get() -> dict[str, Any]:
        return daemon.call("pane.get", {"pane_id": pane_id})["pane"]

    def state() -> tuple[str, str]:
        return (get()["lifecycle"], get()["attention"])

    def listed() -> list[dict[str, Any]]:
        return daemon.call("permission.list", {"pane_id": pane_id})["permissions"]

    def result(k: int) -> Any:
        path = box / f"result-{k}.json"
        return json.loads(path.read_text()) if path.exists() else None

    sent = [0]

    def cmd(c: object) -> None:
        n = sent[0]
        sent[0] += 1
        (box / f"tmp-{n}").write_text(json.dumps(c))
        (box / f"tmp-{n}").rename(box / f"batch-{n}.json")
        if c != "exit":
            wait_until(lambda: (box / f"done-{n}").exists(), 30)

    cmd(["emit", "session_start", {"type": "session_start", "reason": "startup"}])
    wait_until(lambda: state() == ("idle", "none"), 15)
    assert get()["agent"]["agent_session_id"] == "pi-ses-1"
    assert get()["hooked"]
    cmd(["emit", "agent_start", {"type": "agent_start"}])
    wait_until(lambda: state() == ("working", "none"), 15)

    cmd(["confirm", "Permission required", "Allow: touch marker?"])
    wait_until(lambda: state() == ("blocked", "permission_required") and listed(), 15)
    (dec,) = listed()
    assert (dec["native"], dec["answerable"], dec["agent"]) == (True, True, "pi")
    assert "Allow: touch marker?" in dec["prompt"]
    assert get()["last_message"] == "Allow: touch marker?"
    daemon.call("decision.answer", {"pane_id": pane_id, "verdict": "allow"})
    wait_until(lambda: result(0) is not None, 15)
    assert result(0) is True
    assert state() == ("working", "none")

    cmd(["confirm", "Permission required", "Allow: rm x?"])
    wait_until(lambda: listed(), 15)
    daemon.call("decision.answer", {"pane_id": pane_id, "verdict": "deny"})
    wait_until(lambda: result(1) is not None, 15)
    assert result(1) is False

    # answered in the terminal: the request is withdrawn and the dialog's own answer stands
    cmd(["confirm", "Permission required", "Allow: ls?"])
    wait_until(lambda: listed(), 15)
    cmd(["tty", True])
    wait_until(lambda: result(2) is not None, 15)
    assert result(2) is True
    wait_until(lambda: listed() == [] and state() == ("working", "none"), 15)
    with pytest.raises(SignalttyError) as exc:
        daemon.call("decision.answer", {"pane_id": pane_id, "verdict": "deny"})
    assert exc.value.code == "NO_SUCH_DECISION"

    cmd(["emit", "agent_end", {"type": "agent_end"}])
    wait_until(lambda: state() == ("done", "unread"), 15)
    cmd("exit")
    wait_until(lambda: get()["live"]["state"] == "exited", 15)


def test_gemini_install_is_idempotent_and_uninstall_removes_only_ours(tmp_path):
    home = tmp_path / "home"
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    theirs = {"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "audit", "timeout": 100}]}
    settings.write_text(json.dumps({"hooks": {"BeforeTool": [theirs]}, "ide": {"enabled": False}}))
    r = api.install("gemini", "/opt/bin/signaltty", home=home, env={})
    assert (r.file, r.changed) == (str(settings), True)
    assert api.status("gemini", home=home, env={})["installed"] is True
    assert not api.install("gemini", "/opt/bin/signaltty", home=home, env={}).changed
    # $GEMINI_CLI_HOME names Gemini's home; the settings live in .gemini below it
    moved = api.install("gemini", "/opt/bin/signaltty", env={"GEMINI_CLI_HOME": str(tmp_path / "gh")})
    assert moved.file == str(tmp_path / "gh" / ".gemini" / "settings.json")
    assert api.uninstall("gemini", home=home, env={}).changed
    assert json.loads(settings.read_text()) == {"hooks": {"BeforeTool": [theirs]}, "ide": {"enabled": False}}
    assert api.status("gemini", home=home, env={})["installed"] is False
