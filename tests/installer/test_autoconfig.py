"""Automatic configuration at pane.spawn/pane.split through the real daemon
(integrations.md §3; conftest sets $SIGNALTTY_INTEGRATION_HOME to the temp home)."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from pathlib import Path

import pytest

from signaltty.installer import codex as codex_installer
from signaltty.installer.command import managed_command
from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, wait_until
from tests.installer.helpers import snap
from tests.server.test_hooks_e2e import agent_bin

REPORTER = str(Path(sys.executable).parent / "signaltty")


def spawn(d: DaemonProc, name: str, *args: str, env: dict | None = None, plan: list | None = None) -> dict:
    prog = agent_bin(d.root, name)
    ws = d.call("workspace.create", {"name": name, "cwd": str(d.root)})["workspace"]
    argv = [str(prog), json.dumps(plan or []), *args]
    return d.call("pane.spawn", {"workspace_id": ws["id"], "argv": argv, "env": env,
                                 "cwd": str(d.root)})


def test_claude_configured_before_start_then_unchanged(daemon):
    env_file = daemon.root / "seen-env"
    r = spawn(daemon, "claude", plan=[{"spawn": ["sh", "-c", f'printf %s "$CLAUDE_CONFIG_DIR" > {env_file}']}])
    root = daemon.home / ".claude"
    assert r["integration"] == {"agent": "claude", "status": "configured", "changed": True}
    assert r["pane"]["integration"] == r["integration"]
    # $SIGNALTTY_INTEGRATION_HOME == $HOME here: Claude finds ~/.claude by itself, so no
    # CLAUDE_CONFIG_DIR is exported (it would also move Claude's ~/.claude.json)
    assert r["pane"]["agent"]["config_env"] == {}
    settings = json.loads((root / "settings.json").read_text())
    perm = settings["hooks"]["PermissionRequest"][0]["hooks"][0]
    assert perm == {"type": "command", "command": managed_command(REPORTER, "claude", "PermissionRequest"), "timeout": 125}
    wait_until(lambda: env_file.exists())
    assert env_file.read_text() == ""
    before = snap(root / "settings.json")
    r2 = spawn(daemon, "claude")
    assert r2["integration"] == {"agent": "claude", "status": "configured", "changed": False}
    assert snap(root / "settings.json") == before


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["--bare"], "disabled"),
        (["--setting-sources", "project,local"], "disabled"),
        (["--setting-sources=project"], "disabled"),
        (["--setting-sources=user,project"], "configured"),
    ],
)
def test_claude_launches_without_user_settings_are_disabled(daemon, args, status):
    r = spawn(daemon, "claude", *args)
    assert r["integration"]["status"] == status
    written = (daemon.home / ".claude" / "settings.json").exists()
    if status == "disabled":
        assert r["integration"] == {
            "agent": "claude", "status": "disabled", "changed": False,
            "notice": "claude: this launch disables user hooks/plugins; status integration is unavailable.",
        }
        assert not written
    else:
        assert written


def test_opencode_pure_disabled_plain_configured(daemon):
    r = spawn(daemon, "opencode", "--pure")
    assert r["integration"]["status"] == "disabled"
    plugin = daemon.root / "config" / "opencode" / "plugins" / "signaltty.js"  # $XDG_CONFIG_HOME
    assert not plugin.exists()
    r = spawn(daemon, "opencode")
    assert r["integration"] == {"agent": "opencode", "status": "configured", "changed": True}
    assert plugin.read_text().startswith("// signaltty hook-event shim for OpenCode")
    assert r["pane"]["agent"]["config_env"] == {}  # OpenCode finds that root by itself


def test_integration_home_root_exported_and_kept_on_resume(tmp_root):
    d = DaemonProc(tmp_root, {"SIGNALTTY_INTEGRATION_HOME": str(tmp_root / "ihome")})
    d.start()
    try:
        env_file = tmp_root / "seen-env"
        r = spawn(d, "claude", plan=[{"spawn": ["sh", "-c", f'printf %s "$CLAUDE_CONFIG_DIR" > {env_file}']}])
        root = tmp_root / "ihome" / ".claude"
        assert r["integration"]["changed"] is True
        assert (root / "settings.json").exists()
        assert r["pane"]["agent"]["config_env"] == {"CLAUDE_CONFIG_DIR": str(root)}
        assert wait_until(lambda: env_file.exists() and env_file.read_text()) == str(root)
        pid = r["pane"]["id"]
        d.call("report-session", {"pane_id": pid, "agent_session_id": "S1"})
        d.call("pane.signal", {"pane_id": pid, "signal": "KILL"})
        wait_until(lambda: d.call("pane.get", {"pane_id": pid})["pane"]["live"]["state"] == "exited")
        (root / "settings.json").unlink()
        res = d.call("pane.resume", {"pane_id": pid})
        assert res["integration"] == {"agent": "claude", "status": "configured", "changed": True}
        assert res["pane"]["agent"]["config_env"] == {"CLAUDE_CONFIG_DIR": str(root)}
        assert (root / "settings.json").exists()
    finally:
        d.stop()
        d.kill_leftovers()


def test_request_env_root_relative_to_cwd(daemon):
    r = spawn(daemon, "claude", env={"CLAUDE_CONFIG_DIR": "cfg/claude"})
    root = daemon.root / "cfg" / "claude"
    assert r["integration"]["changed"] is True
    assert (root / "settings.json").exists()
    assert r["pane"]["agent"]["config_env"] == {"CLAUDE_CONFIG_DIR": str(root)}
    assert not (daemon.home / ".claude").exists()


def test_setup_failure_keeps_terminal_usable(daemon):
    f = daemon.home / ".claude" / "settings.json"
    f.parent.mkdir()
    f.write_text("{broken")
    before = snap(f)
    r = spawn(daemon, "claude", plan=[{"print": "still here"}])
    integ = r["integration"]
    assert integ["status"] == "error"
    assert integ["changed"] is False
    assert integ["notice"].startswith(f"claude status setup failed: {f}: invalid JSON")
    assert integ["notice"].endswith(". The terminal remains available.")
    assert snap(f) == before
    pid = r["pane"]["id"]
    wait_until(lambda: "still here" in daemon.call("pane.read", {"pane_id": pid})["text"])
    assert daemon.call("pane.get", {"pane_id": pid})["pane"]["live"]["state"] != "exited"


def test_lock_held_gives_error_quickly(daemon):
    root = daemon.home / ".claude"
    root.mkdir()
    fd = os.open(root / ".settings.json.signaltty.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        r = spawn(daemon, "claude")
    finally:
        os.close(fd)
    assert r["integration"]["status"] == "error"
    assert "configuration is locked; retry" in r["integration"]["notice"]
    assert not (root / "settings.json").exists()


def test_codex_trust_notice_and_runtime_notice_merge(daemon):
    # the fake codex has no --no-daemon: the runtime notice turns the status to disabled
    r = spawn(daemon, "codex")
    integ = r["integration"]
    assert integ["agent"] == "codex"
    assert integ["status"] == "disabled"
    assert integ["changed"] is True
    assert integ["notice"].startswith(codex_installer.TRUST_NOTICE)
    assert integ["notice"].endswith("Codex: this version has no --no-daemon; hooks may be attributed to another terminal.")
    assert (daemon.home / ".codex" / "hooks.json").exists()
    assert "hooks = true" in (daemon.home / ".codex" / "config.toml").read_text()


def test_split_configures_and_plain_programs_have_no_integration(daemon):
    r = daemon.call("pane.spawn", {"workspace_id": daemon.call("workspace.create", {"name": "w"})["workspace"]["id"],
                                   "argv": ["sleep", "30"]})
    assert "integration" not in r
    assert r["pane"]["integration"] is None
    prog = agent_bin(daemon.root, "cursor-agent")
    s = daemon.call("pane.split", {"pane_id": r["pane"]["id"], "argv": [str(prog), "[]"]})
    assert s["integration"] == {"agent": "cursor", "status": "configured", "changed": True}
    assert json.loads((daemon.home / ".cursor" / "hooks.json").read_text())["version"] == 1


def test_agent_hint_does_not_choose_the_provider(daemon):
    ws = daemon.call("workspace.create", {"name": "h"})["workspace"]
    r = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "30"], "agent_hint": "claude"})
    assert "integration" not in r
    assert not (daemon.home / ".claude").exists()


def test_missing_program_writes_nothing(daemon):
    ws = daemon.call("workspace.create", {"name": "m"})["workspace"]
    with pytest.raises(SignalttyError) as exc:
        daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": [str(daemon.root / "nope" / "claude")]})
    assert exc.value.code == "SPAWN_FAILED"
    assert not (daemon.home / ".claude").exists()


def test_pi_and_gemini_configured_at_spawn(daemon):
    """Issue 11: Pi gets the managed extension, Gemini CLI (no builtin kind) its settings.json
    hooks, before they start; a foreign settings key and hook stay."""
    ext = daemon.home / ".pi" / "agent" / "extensions" / "signaltty.ts"
    r = spawn(daemon, "pi", "--no-extensions")  # Pi would not load it
    assert r["integration"]["status"] == "disabled"
    assert not ext.exists()
    r = spawn(daemon, "pi")
    assert r["integration"] == {"agent": "pi", "status": "configured", "changed": True}
    assert ext.read_text().startswith("// signaltty extension for Pi (managed by signaltty integration).")
    assert f"const REPORTER = {json.dumps(REPORTER)};" in ext.read_text()
    settings = daemon.home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    mine = {"type": "command", "command": "log-it", "timeout": 500}
    settings.write_text(json.dumps({"model": {"name": "x"}, "hooks": {"AfterAgent": [{"matcher": "*", "hooks": [mine]}]}}))
    r = spawn(daemon, "gemini")
    assert r["integration"] == {"agent": "gemini", "status": "configured", "changed": True}
    data = json.loads(settings.read_text())
    assert data["model"] == {"name": "x"}
    assert data["hooks"]["AfterAgent"][0]["hooks"] == [mine]
    ours = data["hooks"]["Notification"][0]["hooks"][0]
    assert ours["timeout"] == 10000  # Gemini's unit is ms
    assert ours["command"].startswith(f"'{REPORTER}' hook-event --agent gemini --event Notification --payload-stdin")
    assert " 2>/dev/null " in ours["command"]  # Gemini prints a hook's stderr into its transcript
    assert sorted(data["hooks"]) == ["AfterAgent", "AfterTool", "BeforeAgent", "Notification", "SessionStart"]
