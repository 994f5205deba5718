"""Issue 10 item 9: an editor saving in place during ``integration install`` never costs the
user their entries.

A real editor process (tests/fixtures/inplace_editor.py) saves the user's Claude settings in
a real temp home the way nano and ``cat >`` do — truncate, then write, sometimes in two
parts — while the installer merges signaltty's hooks into the same file, 200 times with
random timings (every other install starts right after the editor's truncation, inside
the window where the file is empty). After every round the file must be valid JSON holding the user's entries
from the editor's *latest* save (its ``marker``); signaltty's hooks may or may not be there
(an editor saving after the install legitimately drops them), and an install may refuse
("changed during setup; retry"), but no round may lose or roll back a user edit.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from signaltty.installer import api
from signaltty.installer.command import is_owned
from signaltty.installer.errors import InstallError
from tests.installer.helpers import REPORTER, no_temp_files

EDITOR = Path(__file__).resolve().parent.parent / "fixtures" / "inplace_editor.py"
ROUNDS = 200


def _busy_wait(seconds: float) -> None:
    import time

    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


def _problems(text: str, marker: int) -> list[str]:
    """What the user lost in ``text`` (empty when every user entry of save ``marker`` is there)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return [f"not JSON ({exc}): {text[:60]!r}"]
    out = []
    if doc.get("marker") != marker:
        out.append(f"marker {doc.get('marker')!r} instead of {marker} (an edit was lost)")
    if doc.get("model") != "opus" or doc.get("env") != {"USER_VAR": "keep me"}:
        out.append("user keys gone")
    if doc.get("permissions") != {"allow": ["Bash(ls:*)"]}:
        out.append("permissions gone")
    stop = (doc.get("hooks") or {}).get("Stop") or []
    commands = [h.get("command") for g in stop for h in g.get("hooks", [])]
    if "user-stop.sh" not in commands:
        out.append("the user's own Stop hook is gone")
    return out


def _ours(text: str) -> bool:
    hooks = json.loads(text).get("hooks") or {}
    return any(is_owned(h.get("command")) for g in hooks.get("PermissionRequest", []) for h in g.get("hooks", []))


def test_editor_saving_in_place_during_200_installs_loses_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    editor = subprocess.Popen(
        [sys.executable, str(EDITOR), str(settings), str(seed)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert editor.stdin is not None
    assert editor.stdout is not None
    outcomes: Counter[str] = Counter()
    losses: list[str] = []
    try:
        editor.stdin.write("0\n")
        editor.stdin.flush()
        assert editor.stdout.readline() == "truncated 0\n"
        assert editor.stdout.readline() == "saved 0\n"
        for marker in range(1, ROUNDS + 1):
            editor.stdin.write(f"{marker}\n")
            editor.stdin.flush()
            if marker % 2:
                _busy_wait(rng.uniform(0, 0.002))  # anywhere around the save
            else:
                # right inside the save: the file is empty until the editor writes
                assert editor.stdout.readline() == f"truncated {marker}\n"
            try:
                api.install("claude", REPORTER, home=home, env={})
                outcomes["installed"] += 1
            except InstallError as exc:
                # a refusal is allowed (the round's check below proves nothing was lost)
                outcomes["refused, retry" if "retry" in str(exc) else f"refused: {exc}"] += 1
            if marker % 2:
                assert editor.stdout.readline() == f"truncated {marker}\n"
            assert editor.stdout.readline() == f"saved {marker}\n"
            text = settings.read_text()
            problems = _problems(text, marker)
            if problems:
                losses.append(f"round {marker}: {'; '.join(problems)}")
            elif _ours(text):
                outcomes["both kept"] += 1
    finally:
        editor.stdin.close()
        editor.wait(10)
    assert losses == [], f"seed {seed}, {len(losses)} losses in {ROUNDS} rounds: {losses[:5]} {dict(outcomes)}"
    assert editor.returncode == 0
    # a half-written file is waited for, never refused as invalid JSON
    assert set(outcomes) <= {"installed", "refused, retry", "both kept"}, dict(outcomes)
    # the test exercised both outcomes: installs that stuck and editor saves that came after
    assert outcomes["both kept"] > 0, dict(outcomes)
    assert outcomes["installed"] > 0, dict(outcomes)
    assert no_temp_files(settings.parent)
    # with the editor gone, one more install keeps everything and adds ours
    api.install("claude", REPORTER, home=home, env={})
    final = settings.read_text()
    assert _problems(final, ROUNDS) == []
    assert _ours(final)
    assert os.stat(settings).st_mode & 0o777 == 0o600


# An editor that already holds the file open (opened before our rename) and saves through
# that descriptor when told to: ``go`` → truncate (``truncated``), pause, write (``saved``).
HOLDER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
print("opened", flush=True)
sys.stdin.readline()
os.ftruncate(fd, 0)
print("truncated", flush=True)
time.sleep(float(sys.argv[3]))
os.pwrite(fd, sys.argv[2].encode(), 0)
os.close(fd)
print("saved", flush=True)
"""


def _user_doc(marker: int) -> str:
    return json.dumps({
        "model": "opus", "env": {"USER_VAR": "keep me"}, "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "user-stop.sh"}]}]},
        "marker": marker,
    }, indent=2) + "\n"


def _save_right_after_our_rename(monkeypatch, settings: Path, content: str, pause_s: float) -> subprocess.Popen:
    """Start the holder on ``settings`` and make it save just after the installer's rename.

    The rename is the real ``os.replace``; the wrapper only tells the real editor process
    to save at that moment (and waits for it), which forces the interleaving that an editor
    otherwise hits by chance: its descriptor still names the replaced file.
    """
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(settings), content, str(pause_s)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdin is not None
    assert holder.stdout is not None
    assert holder.stdout.readline() == "opened\n"
    real_replace = os.replace
    fired: list[bool] = []

    def replace_then_save(src, dst, *args, **kwargs):
        real_replace(src, dst, *args, **kwargs)
        if Path(dst) == settings and not fired:
            fired.append(True)
            holder.stdin.write("go\n")
            holder.stdin.flush()
            assert holder.stdout.readline() == "truncated\n"
            if pause_s == 0:
                assert holder.stdout.readline() == "saved\n"

    monkeypatch.setattr(os, "replace", replace_then_save)
    return holder


def _home_with_user_file(tmp_path: Path) -> Path:
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(_user_doc(0))
    return settings


@pytest.mark.parametrize("pause_s", [0.0, 0.3], ids=["immediate", "slow writer"])
def test_a_save_landing_in_the_replaced_file_is_merged_again(tmp_path, monkeypatch, pause_s):
    settings = _home_with_user_file(tmp_path)
    holder = _save_right_after_our_rename(monkeypatch, settings, _user_doc(1), pause_s)
    try:
        assert api.install("claude", REPORTER, home=tmp_path / "home", env={}).changed
    finally:
        holder.stdin.close()
        holder.wait(10)
    text = settings.read_text()
    assert _problems(text, 1) == []
    assert _ours(text)
    assert no_temp_files(settings.parent)


def test_an_unparsable_save_in_the_replaced_file_is_put_back_and_refused(tmp_path, monkeypatch):
    settings = _home_with_user_file(tmp_path)
    broken = '{"model": "opus", "half written'
    holder = _save_right_after_our_rename(monkeypatch, settings, broken, 0.0)
    try:
        with pytest.raises(InstallError, match="invalid JSON"):
            api.install("claude", REPORTER, home=tmp_path / "home", env={})
    finally:
        holder.stdin.close()
        holder.wait(10)
    assert settings.read_text() == broken  # the user's latest bytes, not ours
    assert no_temp_files(settings.parent)
