"""Installer edge cases on real files in temp homes; each refusal compares bytes before/after
(integrations.md §1.3, §1.4; issue 5 "Bad input")."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from signaltty.installer import api, command, jsonfile, safefile
from signaltty.installer.errors import InstallError
from tests.installer.helpers import REPORTER, no_temp_files, snap

ALL = ("claude", "codex", "opencode", "cursor")
HOOK_FILE = {
    "claude": ".claude/settings.json",
    "codex": ".codex/hooks.json",
    "opencode": ".config/opencode/plugins/signaltty.js",
    "cursor": ".cursor/hooks.json",
}


def install(agent: str, home: Path, reporter: str = REPORTER):
    return api.install(agent, reporter, home=home, env={})


def load(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("agent", ALL)
def test_fresh_install_then_noop_reinstall_keeps_bytes_and_mtime(tmp_path, agent):
    r = install(agent, tmp_path)
    f = tmp_path / HOOK_FILE[agent]
    assert r.changed
    assert r.file == str(f)
    assert os.stat(f).st_mode & 0o777 == 0o600
    for d in (f.parent, *f.parent.parents):
        if d == tmp_path:
            break
        assert os.stat(d).st_mode & 0o777 == 0o700, d
    if f.suffix == ".json":
        assert f.read_text().endswith("}\n")
        assert '\n  "hooks": {' in f.read_text()
    before = snap(f)
    time.sleep(0.01)  # not synchronisation: lets the clock move so a rewrite changes mtime_ns
    again = install(agent, tmp_path)
    assert not again.changed
    assert snap(f) == before
    assert api.status(agent, home=tmp_path, env={})["installed"] is True
    assert no_temp_files(f.parent)


def test_claude_managed_commands_and_timeouts(tmp_path):
    install("claude", tmp_path)
    hooks = load(tmp_path / ".claude/settings.json")["hooks"]
    assert list(hooks) == list(command.EVENTS["claude"])
    perm = hooks["PermissionRequest"][0]["hooks"][0]
    assert perm == {
        "type": "command",
        "command": (
            "'/opt/sig nal'\"'\"'tty/bin/signaltty' hook-event --agent claude --event PermissionRequest "
            "--payload-stdin --wait-for-answer # signaltty hook-event (managed)"
        ),
        "timeout": 125,
    }
    stop = hooks["Stop"][0]
    assert stop["matcher"] == ""
    assert stop["hooks"][0]["timeout"] == 10
    assert "--wait-for-answer" not in stop["hooks"][0]["command"]
    codex = tmp_path / "c"
    install("codex", codex)
    ch = load(codex / ".codex/hooks.json")["hooks"]
    assert ch["PermissionRequest"][0]["hooks"][0]["timeout"] == 125
    assert ch["Stop"][0]["hooks"][0]["timeout"] == 3
    assert "Notification" not in ch


def test_foreign_hooks_kept_stale_owned_rewritten_in_place(tmp_path):
    f = tmp_path / ".claude/settings.json"
    f.parent.mkdir(parents=True)
    original = {
        "model": "opus",
        "hooks": {
            "Stop": [
                {"matcher": "", "hooks": [
                    {"type": "command", "command": "notify-send done"},
                    {"type": "command", "command": "/old/bin/signaltty hook-event --agent claude --event Stop --payload-stdin", "timeout": 5},
                ]},
            ],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}],
        },
        "zeta": [1, 2],
    }
    f.write_text(json.dumps(original, indent=4))
    assert install("claude", tmp_path).changed
    data = load(f)
    assert list(data) == ["model", "hooks", "zeta"]
    assert data["zeta"] == [1, 2]
    assert data["hooks"]["PreToolUse"] == original["hooks"]["PreToolUse"]
    stop = data["hooks"]["Stop"]
    assert len(stop) == 1  # rewritten in place, no new group
    assert stop[0]["hooks"][0] == {"type": "command", "command": "notify-send done"}
    assert stop[0]["hooks"][1]["command"] == command.managed_command(REPORTER, "claude", "Stop")
    assert stop[0]["hooks"][1]["timeout"] == 10
    # a new reporter path refreshes every owned command in place
    install("claude", tmp_path, reporter="/new/signaltty")
    assert load(f)["hooks"]["Stop"][0]["hooks"][1]["command"].startswith("'/new/signaltty' hook-event")


def test_uninstall_removes_only_owned_also_in_mixed_groups(tmp_path):
    f = tmp_path / ".claude/settings.json"
    install("claude", tmp_path)
    data = load(f)
    managed_stop = data["hooks"]["Stop"][0]["hooks"][0]
    data["hooks"]["Stop"].insert(0, {"matcher": "", "hooks": [{"type": "command", "command": "mine"}, dict(managed_stop)]})
    data["hooks"]["Notification"][0]["extra"] = True  # a managed group the user annotated
    data["hooks"]["Custom"] = []
    data["other"] = {"x": 1}
    f.write_text(json.dumps(data))
    r = api.uninstall("claude", home=tmp_path, env={})
    assert r.changed
    after = load(f)
    assert after["other"] == {"x": 1}
    assert after["hooks"]["Stop"] == [{"matcher": "", "hooks": [{"type": "command", "command": "mine"}]}]
    assert after["hooks"]["Notification"] == [{"matcher": "", "hooks": [], "extra": True}]
    assert after["hooks"]["Custom"] == []  # untouched: it was empty before
    assert set(after["hooks"]) == {"Stop", "Notification", "Custom"}
    before = snap(f)
    assert not api.uninstall("claude", home=tmp_path, env={}).changed
    assert snap(f) == before


def test_uninstall_leaves_empty_hooks_object(tmp_path):
    install("claude", tmp_path)
    api.uninstall("claude", home=tmp_path, env={})
    assert load(tmp_path / ".claude/settings.json") == {"hooks": {}}


def test_uninstall_without_files_creates_nothing(tmp_path):
    for agent in ALL:
        assert not api.uninstall(agent, home=tmp_path, env={}).changed
    assert list(tmp_path.iterdir()) == []


BAD_JSON = [
    ("malformed", b'{"hooks": {'),
    ("array root", b"[1, 2]\n"),
    ("hooks not an object", b'{"hooks": []}\n'),
    ("event not an array", b'{"hooks": {"Stop": {"command": "x"}}}\n'),
    ("not utf-8", b'{"a": "\xff"}'),
]


@pytest.mark.parametrize("agent", ["claude", "codex", "cursor"])
@pytest.mark.parametrize(("case", "content"), BAD_JSON, ids=[c for c, _ in BAD_JSON])
@pytest.mark.parametrize("action", ["install", "uninstall"])
def test_malformed_json_refused_untouched(tmp_path, agent, case, content, action):
    f = tmp_path / HOOK_FILE[agent]
    f.parent.mkdir(parents=True)
    f.write_bytes(content)
    before = snap(f)
    if action == "install":
        act = functools.partial(install, agent, tmp_path)
    else:
        act = functools.partial(api.uninstall, agent, home=tmp_path, env={})
    with pytest.raises(InstallError) as exc:
        act()
    assert str(f) in str(exc.value)
    assert snap(f) == before
    assert no_temp_files(f.parent)


@pytest.mark.parametrize("agent", ALL)
def test_fifo_and_directory_refused(tmp_path, agent):
    f = tmp_path / HOOK_FILE[agent]
    f.parent.mkdir(parents=True)
    os.mkfifo(f)
    with pytest.raises(InstallError, match="not a regular file"):
        install(agent, tmp_path)  # must not block on the FIFO
    f.unlink()
    f.mkdir()
    with pytest.raises(InstallError, match="not a regular file"):
        install(agent, tmp_path)
    assert f.is_dir()
    assert list(f.iterdir()) == []


def test_file_over_4_mib_refused(tmp_path):
    f = tmp_path / ".claude/settings.json"
    f.parent.mkdir(parents=True)
    f.write_text('{"pad": "' + "x" * (4 * 1024 * 1024) + '"}')
    before = snap(f)
    with pytest.raises(InstallError, match="larger than 4 MiB"):
        install("claude", tmp_path)
    assert snap(f) == before


def test_exactly_4_mib_accepted(tmp_path):
    f = tmp_path / ".cursor/hooks.json"
    f.parent.mkdir(parents=True)
    body = '{"pad": "' + "x" * (4 * 1024 * 1024 - 12) + '"}'
    f.write_text(body)
    assert f.stat().st_size <= safefile.MAX_FILE_BYTES
    assert install("cursor", tmp_path).changed


def test_symlink_resolved_target_edited_link_kept(tmp_path):
    real = tmp_path / "dotfiles" / "claude-settings.json"
    real.parent.mkdir()
    real.write_text('{"theme": "dark"}\n')
    os.chmod(real, 0o644)
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    r = install("claude", tmp_path)
    assert r.file == str(real)
    assert link.is_symlink()
    assert os.readlink(link) == str(real)
    assert load(real)["theme"] == "dark"
    assert "hooks" in load(real)
    assert os.stat(real).st_mode & 0o777 == 0o644  # permissions preserved
    assert (real.parent / ".claude-settings.json.signaltty.lock").exists()


def _make_read_only(directory):
    """chmod for ordinary users; a read-only bind mount for root (who ignores modes)."""
    import subprocess

    if os.geteuid() != 0:
        os.chmod(directory, 0o500)
        return lambda: os.chmod(directory, 0o700)
    ok = subprocess.run(["mount", "--bind", str(directory), str(directory)], capture_output=True).returncode == 0
    ok = ok and subprocess.run(["mount", "-o", "remount,ro,bind", str(directory)], capture_output=True).returncode == 0
    if not ok:
        subprocess.run(["umount", str(directory)], capture_output=True)
        if os.environ.get("CI"):
            pytest.fail("cannot make a read-only bind mount as root")
        pytest.skip("cannot make a read-only bind mount here")
    return lambda: subprocess.run(["umount", str(directory)], check=True)


def test_symlink_to_read_only_location(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    real = ro / "settings.json"
    real.write_text("{}\n")
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    before = snap(real)
    undo = _make_read_only(ro)
    try:
        with pytest.raises(InstallError):
            install("claude", tmp_path)
    finally:
        undo()
    assert snap(real) == before


def test_read_only_file_is_replaced_with_same_mode(tmp_path):
    f = tmp_path / ".cursor/hooks.json"
    f.parent.mkdir(parents=True)
    f.write_text("{}")
    os.chmod(f, 0o444)
    install("cursor", tmp_path)
    assert os.stat(f).st_mode & 0o777 == 0o444
    assert load(f)["version"] == 1


def test_lock_held_elsewhere_gives_bounded_error(tmp_path):
    f = tmp_path / ".claude/settings.json"
    f.parent.mkdir(parents=True)
    f.write_text("{}\n")
    before = snap(f)
    code = (
        "import fcntl,os,sys,time; fd=os.open(sys.argv[1], os.O_RDWR|os.O_CREAT, 0o600); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(30)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(f.parent / ".settings.json.signaltty.lock")],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.monotonic()
        with pytest.raises(InstallError, match="^configuration is locked; retry$"):
            install("claude", tmp_path)
        # a limit that fired: the 0.1 s lock wait, not the holder's 30 s (generous bound)
        assert time.monotonic() - t0 < 10
    finally:
        holder.kill()
        holder.wait()
    assert snap(f) == before
    assert install("claude", tmp_path).changed  # free again


def test_concurrent_external_edit_detected(tmp_path):
    f = tmp_path / ".cursor/hooks.json"
    f.parent.mkdir(parents=True)
    f.write_text('{"hooks": {}}\n')
    saves = iter(range(1000))

    def sneaky(root, file):
        # another editor saves the file (new content each time) while we compute our change
        f.write_text(json.dumps({"hooks": {}, "edited": next(saves)}) + "\n")
        root["x"] = 1

    with pytest.raises(InstallError, match=r"hooks.json changed during setup; retry$"):
        jsonfile.edit_json(f, sneaky)
    # every attempt saw a newer save; the last one is what the file holds
    assert load(f) == {"hooks": {}, "edited": safefile.MAX_ATTEMPTS - 1}
    assert no_temp_files(f.parent)


def test_concurrent_external_edit_once_is_merged(tmp_path):
    """Issue 10 item 9: a save between our read and our rename is retried, not lost."""
    f = tmp_path / ".cursor/hooks.json"
    f.parent.mkdir(parents=True)
    f.write_text('{"hooks": {}}\n')
    seen = []

    def sneaky(root, file):
        seen.append(dict(root))
        if len(seen) == 1:
            f.write_text('{"hooks": {}, "edited": "elsewhere"}\n')
        root["x"] = 1

    assert jsonfile.edit_json(f, sneaky)[1]
    assert seen == [{"hooks": {}}, {"hooks": {}, "edited": "elsewhere"}]
    assert load(f) == {"hooks": {}, "edited": "elsewhere", "x": 1}
    assert no_temp_files(f.parent)


def test_file_appearing_during_setup_is_merged(tmp_path):
    f = tmp_path / "new.json"
    seen = []

    def transform(old):
        seen.append(old)
        if old is None:
            f.write_text('{"user": 1}')  # another program creates it meanwhile
            return "{}\n"
        return old + "\n"

    assert safefile.edit(f, transform)[1]
    assert seen == [None, '{"user": 1}']
    assert f.read_text() == '{"user": 1}\n'


def test_file_appearing_during_setup_every_time_is_refused(tmp_path):
    f = tmp_path / "new.json"
    saves = iter(range(1000))

    def transform(old):
        f.write_text(json.dumps({"n": next(saves)}))
        return "{}\n"

    with pytest.raises(InstallError, match="changed during setup; retry"):
        safefile.edit(f, transform)
    assert json.loads(f.read_text()) == {"n": safefile.MAX_ATTEMPTS - 1}


def test_cursor_version_added_or_kept(tmp_path):
    install("cursor", tmp_path)
    data = load(tmp_path / ".cursor/hooks.json")
    assert data["version"] == 1
    assert data["hooks"]["stop"] == [{"command": command.managed_command(REPORTER, "cursor", "stop"), "timeout": 10}]
    other = tmp_path / "o"
    (other / ".cursor").mkdir(parents=True)
    (other / ".cursor/hooks.json").write_text('{"version": 2, "hooks": {"stop": [{"command": "say hi"}]}}')
    install("cursor", other)
    data = load(other / ".cursor/hooks.json")
    assert data["version"] == 2
    assert data["hooks"]["stop"][0] == {"command": "say hi"}
    assert len(data["hooks"]["stop"]) == 2
    api.uninstall("cursor", home=other, env={})
    assert load(other / ".cursor/hooks.json") == {"version": 2, "hooks": {"stop": [{"command": "say hi"}]}}


def test_legacy_ownership_rules():
    owned = command.is_owned
    assert owned("signaltty hook-event --agent claude --event Stop --payload-stdin")
    assert owned("/usr/local/bin/signaltty hook-event --agent cursor --event stop --payload-stdin")
    assert owned("anything # signaltty hook-event (managed)")
    assert not owned("signaltty hook-event --agent claude --event Stop")  # no --payload-stdin
    assert not owned("signaltty hook-event --agent claude --event stop --payload-stdin")  # wrong event
    assert not owned("bin/signaltty hook-event --agent claude --event Stop --payload-stdin")  # relative
    assert not owned("mysignaltty hook-event --agent claude --event Stop --payload-stdin")
    assert not owned(None)
    assert not owned("echo 'unterminated")
