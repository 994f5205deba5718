"""``agents.list``/``agents.reload``, SIGHUP and the ``agents.reloaded`` event against a real
daemon whose ``SIGNALTTY_AGENTS_DIR`` is a temp dir; a user manifest's hook maps driving a real
pane through the real ``signaltty hook-event`` reporter (protocol.md §6; agents.md §4.2–§4.5).

"Unlistable directory": tests may run as root, where ``chmod 000`` denies nothing, so the agents
path is replaced by a regular file — ``os.scandir`` then raises ``NotADirectoryError``, the same
``OSError`` path a permission error takes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from signaltty.agents.catalog import BUNDLED_DIR
from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, wait_until
from tests.server.test_hooks_e2e import Agent, hook

TERN = r"""
[agent]
id = "tern"
kind = "generic"
display_name = "Tern"
binaries = ["tern", "tern-bin-*"]
order = 60

[launch]
detect = ["tern", "tern-cli"]
args = ["chat"]
prompt = { mode = "flag", flag = "--ask" }

[session]
key = "conversation.id"
resume = ["tern", "chat", "--resume", "{id}"]

[lifecycle.TurnStarted]
lifecycle = "working"
attention = "none"

[lifecycle.NeedsApproval]
lifecycle = "blocked"
attention = "permission_required"
message = "approval requested"

[lifecycle.TurnFinished]
lifecycle = "done"
attention = "unread"
message = "turn complete"

[title_status]
working = ['^[\u2800-\u28ff] ']

[[screen]]
id = "busy_footer"
state = "working"
lines = 6
regex = ['esc to interrupt']
priority = 100
"""

N_BUNDLED = len(list(BUNDLED_DIR.glob("*.toml")))


@pytest.fixture
def agents_daemon(tmp_root: Path) -> Iterator[DaemonProc]:
    adir = tmp_root / "agents"
    adir.mkdir()
    (adir / "tern.toml").write_text(TERN)
    (adir / "broken.toml").write_text('[agent]\nkind = "generic"\n[[screen]]\nid = "busy"\nstate = "working"\nregion = "bottm"\nregex = ["x"]\n')
    d = DaemonProc(tmp_root, {"SIGNALTTY_AGENTS_DIR": str(adir)})
    d.start()
    try:
        yield d
    finally:
        d.stop()
        assert not d.kill_leftovers()


def ids(listing: dict) -> dict[str, str]:
    return {m["id"]: m["source"] for m in listing["manifests"]}


def test_list_shows_bundled_user_and_failures(agents_daemon: DaemonProc) -> None:
    d = agents_daemon
    adir = d.root / "agents"
    r = d.call("agents.list")
    assert r["dir"] == str(adir)
    assert ids(r)["tern"] == "user"
    assert len(r["manifests"]) == N_BUNDLED + 1
    assert all(src == "bundled" for i, src in ids(r).items() if i != "tern")
    tern = next(m for m in r["manifests"] if m["id"] == "tern")
    assert tern == {
        "file": str(adir / "tern.toml"),
        "id": "tern",
        "kind": "generic",
        "source": "user",
        "display_name": "Tern",
        "binaries": ["tern", "tern-bin-*"],
        "screen_rules": 2,
        "hook_overrides": ["NeedsApproval", "TurnFinished", "TurnStarted"],
    }
    assert r["failures"] == [
        {"file": str(adir / "broken.toml"), "error": "[[screen]] 'busy': unknown region 'bottm'"}
    ]
    # the CLI: human table and --json
    out = d.cli("agents", "list")
    assert out.returncode == 0, out.stderr
    assert "tern" in out.stdout
    assert "user" in out.stdout
    assert "unknown region 'bottm'" in out.stdout
    assert json.loads(d.cli("--json", "agents", "list").stdout) == r
    # a reload with a failed file is applied, listed, and exits 1 for scripts
    out = d.cli("agents", "reload")
    assert out.returncode == 1, out.stderr
    assert "unknown region 'bottm'" in out.stdout


def test_reload_swaps_and_emits_event(agents_daemon: DaemonProc) -> None:
    d = agents_daemon
    adir = d.root / "agents"
    sub = d.client(timeout=10)
    sub.call("subscribe", {"events": ["agents.*"]})
    (adir / "broken.toml").write_text('[agent]\nkind = "generic"\ndisplay_name = "Fixed"\n')
    (adir / "tern.toml").unlink()
    (adir / "gemini.toml").write_text('[agent]\nkind = "generic"\ndisplay_name = "My Gemini"\n')
    r = d.call("agents.reload")
    assert "tern" not in ids(r)
    assert ids(r)["broken"] == "user"
    assert r["failures"] == []
    if "gemini" in {p.stem for p in BUNDLED_DIR.glob("*.toml")}:
        assert ids(r)["gemini"] == "user"
    assert next(m for m in r["manifests"] if m["id"] == "gemini")["display_name"] == "My Gemini"
    ev = sub.next_event(timeout=10)
    assert ev["event"] == "agents.reloaded"
    assert ev["payload"] == {"manifests": r["manifests"], "failures": r["failures"]}
    assert d.call("agents.list") == r
    # the reporter no longer knows tern
    with pytest.raises(SignalttyError) as ei:
        d.call("hook-event", {"agent": "tern", "event": "TurnStarted"})
    assert ei.value.code == "BAD_PARAMS"
    assert "unknown agent" in ei.value.message
    # the CLI reload prints the new table
    out = d.cli("agents", "reload")
    assert out.returncode == 0
    assert "My Gemini" not in out.stdout
    assert "broken" in out.stdout
    sub.close()


def test_sighup_reloads(agents_daemon: DaemonProc) -> None:
    d = agents_daemon
    adir = d.root / "agents"
    sub = d.client(timeout=10)
    sub.call("subscribe", {"events": ["agents.reloaded"]})
    (adir / "broken.toml").unlink()
    (adir / "kestrel.toml").write_text('[agent]\nkind = "pi"\nbinaries = ["kestrel"]\n')
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)
    ev = sub.next_event(timeout=10)
    assert ev["event"] == "agents.reloaded"
    assert ev["payload"]["failures"] == []
    r = d.call("agents.list")
    assert ids(r)["kestrel"] == "user"
    assert "tern" in ids(r)
    assert d.proc.poll() is None  # SIGHUP never stops the daemon
    sub.close()


def test_unlistable_dir_keeps_active_set(agents_daemon: DaemonProc) -> None:
    d = agents_daemon
    adir = d.root / "agents"
    before = d.call("agents.list")
    shutil.move(adir, d.root / "agents.away")
    adir.write_text("not a directory")
    with pytest.raises(SignalttyError) as ei:
        d.call("agents.reload")
    assert ei.value.code == "IO_ERROR"
    assert str(adir) in ei.value.message
    assert d.call("agents.list") == before
    # SIGHUP with the same problem: logged, set kept, daemon alive
    assert d.proc is not None
    d.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "agents.reload_failed" in d.stderr(), timeout=10)
    assert d.call("agents.list") == before
    assert d.proc.poll() is None
    out = d.cli("agents", "reload")
    assert out.returncode == 1
    assert "IO_ERROR" in out.stderr
    # a missing directory is fine: no user manifests
    adir.unlink()
    r = d.call("agents.reload")
    assert set(ids(r).values()) == {"bundled"}
    assert r["failures"] == []


def test_unlistable_dir_at_start_is_not_fatal(tmp_root: Path) -> None:
    afile = tmp_root / "agents-file"
    afile.write_text("x")
    d = DaemonProc(tmp_root, {"SIGNALTTY_AGENTS_DIR": str(afile)})
    d.start()
    try:
        r = d.call("agents.list")
        assert r["dir"] == str(afile)
        assert len(r["manifests"]) == N_BUNDLED
        assert r["failures"][0]["file"] == str(afile)
        assert "cannot list directory" in r["failures"][0]["error"]
    finally:
        d.stop()
        assert not d.kill_leftovers()


def test_agents_dir_flag_beats_env(tmp_root: Path) -> None:
    env_dir = tmp_root / "env-agents"
    flag_dir = tmp_root / "flag-agents"
    for p, name in ((env_dir, "from-env"), (flag_dir, "from-flag")):
        p.mkdir()
        (p / f"{name}.toml").write_text('[agent]\nkind = "generic"\n')
    d = DaemonProc(tmp_root, {"SIGNALTTY_AGENTS_DIR": str(env_dir)})
    d.start("--agents-dir", str(flag_dir))
    try:
        r = d.call("agents.list")
        assert r["dir"] == str(flag_dir)
        assert "from-flag" in ids(r)
        assert "from-env" not in ids(r)
    finally:
        d.stop()
        assert not d.kill_leftovers()


def test_user_manifest_maps_hooks_for_a_real_pane(agents_daemon: DaemonProc) -> None:
    """agents.md §4.5: ``hook-event --agent tern`` drives lifecycle through the three maps."""
    d = agents_daemon
    a = Agent(
        d,
        [
            hook("TurnStarted", {"conversation": {"id": "T-1"}}, agent="tern"),
            hook("NeedsApproval", {"conversation": {"id": "T-1"}}, agent="tern"),
            hook("TurnStarted", {"conversation": {"id": "T-1"}}, agent="tern"),  # approved: clears
            hook("TurnFinished", {"conversation": {"id": "T-1"}}, agent="tern"),
            hook("Unmapped", {}, agent="tern"),
        ],
        name="tern",
    )
    log = a.wait_entries(5)
    assert [e["rc"] for e in log] == [0] * 5, log
    assert [e["stderr"].strip() for e in log[:4]] == [
        "accepted tern:TurnStarted lifecycle=working attention=none",
        "accepted tern:NeedsApproval lifecycle=blocked attention=permission_required",
        "accepted tern:TurnStarted lifecycle=working attention=none",
        "accepted tern:TurnFinished lifecycle=done attention=unread",
    ]
    assert log[4]["stderr"].strip() == "dropped tern:Unmapped (unrecognized_hook)"  # generic: only mapped events
    pane = a.get()
    assert pane["lifecycle"] == "done"
    assert pane["attention"] == "unread"
    assert pane["last_message"] == "turn complete"
    assert pane["agent"]["agent_session_id"] == "T-1"
    assert pane["agent"]["resume_argv"][1:] == ["chat", "--resume", "T-1"]
    assert os.path.basename(pane["agent"]["resume_argv"][0]) == "tern"


def test_direct_hook_event_mapping_and_unknown(agents_daemon: DaemonProc) -> None:
    d = agents_daemon
    ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]
    pane = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
    r = d.call("hook-event", {"agent": "tern", "event": "TurnStarted", "pane_id": pane["id"], "payload": {}})
    assert r["accepted"]
    assert (r["lifecycle"], r["attention"]) == ("working", "none")
    with pytest.raises(SignalttyError) as ei:
        d.call("hook-event", {"agent": "nonesuch", "event": "X", "pane_id": pane["id"]})
    assert ei.value.code == "BAD_PARAMS"
    assert "unknown agent" in ei.value.message
    d.call("pane.close", {"pane_id": pane["id"], "signal": "KILL"})


def test_resume_uses_the_manifest_template(agents_daemon: DaemonProc) -> None:
    """agents.md §3.4: the merged manifest's ``[session] resume`` is the template."""
    d = agents_daemon
    tern = d.root / "bin" / "tern"
    tern.parent.mkdir()
    tern.write_text("#!/bin/sh\necho \"tern args: $*\"\nexec sleep 60\n")
    tern.chmod(0o755)
    ws = d.call("workspace.create", {"name": "w", "cwd": str(d.root)})["workspace"]
    pane = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": [str(tern)]})["pane"]
    assert pane["agent"]["catalog_id"] == "tern"
    assert pane["agent"]["kind"] == "generic"
    d.call("hook-event", {"agent": "tern", "event": "TurnStarted", "pane_id": pane["id"],
                          "payload": {"conversation": {"id": "T-9"}}})
    d.call("pane.signal", {"pane_id": pane["id"], "signal": "KILL"})
    wait_until(lambda: d.call("pane.get", {"pane_id": pane["id"]})["pane"]["live"]["state"] == "exited")
    r = d.call("pane.resume", {"pane_id": pane["id"]})
    assert r["pane"]["agent"]["resume_argv"] == [str(tern), "chat", "--resume", "T-9"]
    text = wait_until(lambda: "tern args" in (t := d.call("pane.read", {"pane_id": pane["id"]})["text"]) and t)
    assert "tern args: chat --resume T-9" in text
