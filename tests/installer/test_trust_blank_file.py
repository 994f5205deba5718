"""A slow in-place save of any length never loses the person's settings (issue 10, third
attack pass, A5).

A real writer process truncates the person's Claude settings (``O_TRUNC``, like ``cmd >
settings.json``) and writes them back through the same descriptor only when told to. The
blank file is made 2.5 s, 5 s or a minute old (its mtime, the only age the installer can see)
before the real installer — ``integration install`` or the daemon's automatic configuration
at a spawn — runs on it. It must refuse with the file untouched: a rename over the blank
file would send the writer's bytes to an unlinked inode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from signaltty.installer import api
from signaltty.installer.errors import InstallError
from tests.conftest import DaemonProc
from tests.installer.helpers import REPORTER, no_temp_files
from tests.installer.test_autoconfig import spawn
from tests.installer.test_inplace_editor import _ours, _problems, _user_doc

# truncate (O_TRUNC, like `>`), say so, wait for a line on stdin, write through the same fd
HELD = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
print("truncated", flush=True)
sys.stdin.readline()
os.write(fd, sys.argv[2].encode())
os.close(fd)
print("saved", flush=True)
"""


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """``settings.json`` truncated by a real writer that has not written yet."""
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(_user_doc(0))
    writer = subprocess.Popen([sys.executable, "-c", HELD, str(settings), _user_doc(1)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    try:
        assert writer.stdout.readline() == "truncated\n"
        yield settings, writer
    finally:
        writer.kill()
        writer.wait(10)


def _finish(writer: subprocess.Popen[str]) -> None:
    assert writer.stdin is not None
    assert writer.stdout is not None
    writer.stdin.write("go\n")
    writer.stdin.flush()
    assert writer.stdout.readline() == "saved\n"
    writer.wait(10)


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


@pytest.mark.parametrize("age_s", [2.5, 5.0, 60.0])
def test_install_on_a_blank_file_under_a_slow_save_keeps_every_user_key(
    held: tuple[Path, subprocess.Popen[str]], age_s: float
) -> None:
    settings, writer = held
    _age(settings, age_s)
    with pytest.raises(InstallError, match="is empty; not changing it — run again when it has"):
        api.install("claude", REPORTER, home=settings.parent.parent, env={})
    assert settings.read_bytes() == b""
    assert no_temp_files(settings.parent)
    _finish(writer)
    assert _problems(settings.read_text(), 1) == []  # the writer's save is the file
    # with content back, the install merges and keeps every user key
    api.install("claude", REPORTER, home=settings.parent.parent, env={})
    assert _problems(settings.read_text(), 1) == []
    assert _ours(settings.read_text())


def test_an_untouched_empty_file_is_refused_then_merged_once_it_has_content(tmp_path: Path) -> None:
    """Nobody writing: still refused (no age tells the two apart), the file kept as is."""
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("")
    _age(settings, 3600)
    ino = settings.stat().st_ino
    with pytest.raises(InstallError, match="is empty; not changing it"):
        api.install("claude", REPORTER, home=tmp_path / "home", env={})
    assert settings.read_bytes() == b""
    assert settings.stat().st_ino == ino
    settings.write_text("{}\n")
    api.install("claude", REPORTER, home=tmp_path / "home", env={})
    assert _ours(settings.read_text())


@pytest.mark.parametrize("age_s", [2.5, 5.0])
def test_a_spawn_during_a_slow_save_keeps_every_user_key(daemon: DaemonProc, age_s: float) -> None:
    """The daemon's automatic configuration (every agent spawn) follows the same rule."""
    settings = daemon.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(_user_doc(0))
    writer = subprocess.Popen([sys.executable, "-c", HELD, str(settings), _user_doc(1)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "truncated\n"
        _age(settings, age_s)
        r = spawn(daemon, "claude")
        assert r["integration"]["status"] == "error", r["integration"]
        assert "is empty; not changing it" in r["integration"]["notice"]
        assert settings.read_bytes() == b""
        _finish(writer)
    finally:
        writer.kill()
        writer.wait(10)
    assert _problems(settings.read_text(), 1) == []
    r2 = spawn(daemon, "claude")
    assert r2["integration"]["status"] == "configured", r2["integration"]
    doc = settings.read_text()
    assert _problems(doc, 1) == []
    assert _ours(doc)
    assert json.loads(doc)["model"] == "opus"
