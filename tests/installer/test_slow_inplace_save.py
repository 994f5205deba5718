"""A slow in-place save (``slow_cmd > settings.json``) never loses the user's entries
(issue 10 follow-up, item 4).

A real writer process truncates the user's Claude settings, then writes them back 0.3, 0.6
or 1.0 s later through the same descriptor, as a shell redirection of a slow command does.
The real installer runs in between, while the file is empty: it must refuse ("changed
during setup; retry") with the file untouched, or merge — never put its own file in place
so that the user's write goes to an unlinked inode.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from signaltty.installer import api, safefile
from signaltty.installer.errors import InstallError
from tests.installer.helpers import REPORTER, no_temp_files
from tests.installer.test_inplace_editor import _ours, _problems, _user_doc

# truncate (O_TRUNC, like `>`), say so, wait, then write through the same descriptor
SLOW = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
print("truncated", flush=True)
time.sleep(float(sys.argv[3]))
os.write(fd, sys.argv[2].encode())
os.close(fd)
print("saved", flush=True)
"""


@pytest.mark.parametrize("delay_s", [0.3, 0.6, 1.0])
def test_install_during_a_slow_in_place_save_keeps_the_users_entries(tmp_path: Path, delay_s: float) -> None:
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(_user_doc(0))
    writer = subprocess.Popen([sys.executable, "-c", SLOW, str(settings), _user_doc(1), str(delay_s)],
                              stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    try:
        assert writer.stdout.readline() == "truncated\n"
        assert settings.read_bytes() == b""  # the installer starts inside the empty window
        refusal: str | None = None
        try:
            api.install("claude", REPORTER, home=tmp_path / "home", env={})
            outcome = "installed"
        except InstallError as exc:
            refusal = str(exc)
            outcome = "refused"
        # refusing is fine, but only with one of the two messages that say why
        assert refusal is None or "changed during setup; retry" in refusal or refusal == safefile.EMPTY.format(
            target=settings), refusal
        assert writer.stdout.readline() == "saved\n"
    finally:
        writer.wait(10)
    text = settings.read_text()
    assert _problems(text, 1) == [], (outcome, text[:200])  # the user's save is the file
    assert no_temp_files(settings.parent)
    # with the save finished, a retry merges
    api.install("claude", REPORTER, home=tmp_path / "home", env={})
    final = settings.read_text()
    assert _problems(final, 1) == []
    assert _ours(final)


# An empty file nobody writes is refused too (issue 10, A5): see test_trust_blank_file.py.
