"""PATH hydration finds what ``~/.bashrc`` adds when ``~/.bash_profile`` does not source it
(issue 11 item 11).

A login bash (``bash -ilc``) reads ``~/.bash_profile`` and never ``~/.bashrc``; every
terminal the person opens runs an interactive non-login bash, which reads ``~/.bashrc``. So a
tool installed by a script that appended to ``~/.bashrc`` (nvm, cargo, pipx) is on the PATH of
every terminal and was invisible to panes. Real ``bash`` with a temp ``HOME``; the stubs of
``test_shellpath.py`` cover the hostile-output handling of both probes (same reader).
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest

from signaltty.system import shellpath
from tests.conftest import DaemonProc, wait_until

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")


def _home(root: Path, *, profile_sources_rc: bool = False) -> tuple[Path, Path, Path]:
    """A HOME whose ``.bash_profile`` adds one dir and whose ``.bashrc`` adds another."""
    home = root / "home"
    home.mkdir(exist_ok=True)
    from_profile, from_rc = root / "from-profile", root / "from-bashrc"
    from_profile.mkdir()
    from_rc.mkdir()
    profile = f'PATH="{from_profile}:$PATH"; export PATH\n'
    if profile_sources_rc:
        profile += '[ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"\n'
    (home / ".bash_profile").write_text(profile)
    (home / ".bashrc").write_text(f'echo "rc noise"; PATH="{from_rc}:$PATH"; export PATH\n')
    return home, from_profile, from_rc


def _env(home: Path) -> dict[str, str]:
    assert BASH is not None
    return {"SHELL": BASH, "HOME": str(home), "PATH": "/usr/bin:/bin"}


def test_bashrc_dirs_are_found_when_bash_profile_does_not_source_it(tmp_path: Path) -> None:
    home, from_profile, from_rc = _home(tmp_path)
    r = asyncio.run(shellpath.hydrate(_env(home)))
    assert r.state == "done", r.reason
    # the login shell's PATH first, then what only the interactive shell adds
    assert str(from_profile) in r.added, r.added
    assert str(from_rc) in r.added, r.added
    assert r.added.index(str(from_profile)) < r.added.index(str(from_rc))
    assert r.path.startswith("/usr/bin:/bin:")


def test_a_bash_profile_sourcing_bashrc_gives_each_dir_once(tmp_path: Path) -> None:
    home, from_profile, from_rc = _home(tmp_path, profile_sources_rc=True)
    r = asyncio.run(shellpath.hydrate(_env(home)))
    assert r.state == "done", r.reason
    assert r.path.split(":").count(str(from_rc)) == 1
    assert r.path.split(":").count(str(from_profile)) == 1


def test_a_hanging_bashrc_keeps_the_login_path_within_the_limit(tmp_path: Path) -> None:
    # .bashrc never returns (read from a terminal that is not there, a slow network mount):
    # the login shell's PATH is still used and the whole hydration ends within the limit
    home, from_profile, _ = _home(tmp_path)
    (home / ".bashrc").write_text("sleep 100\n")
    t0 = time.monotonic()
    r = asyncio.run(shellpath.hydrate(_env(home), timeout_s=1.5))
    assert time.monotonic() - t0 < 1.5 + 2 * shellpath._REAP_S
    assert r.state == "done", r.reason
    assert str(from_profile) in r.added


def test_daemon_panes_get_the_bashrc_dirs(tmp_root: Path) -> None:
    home, _, from_rc = _home(tmp_root)
    assert BASH is not None
    d = DaemonProc(tmp_root, {"SHELL": BASH})
    del d.env["SIGNALTTY_SHELL_PATH"]
    d.start()
    try:
        wait_until(lambda: d.call("server.status")["path_hydration"]["state"] in ("done", "failed"))
        status = d.call("server.status")["path_hydration"]
        assert status["state"] == "done", status
        assert str(from_rc) in status["added"], status
        out = tmp_root / "path.txt"
        ws = d.call("workspace.create", {"name": "p"})["workspace"]
        d.call("pane.spawn", {"workspace_id": ws["id"],
                              "argv": ["sh", "-c", f"printf '%s' \"$PATH\" > {out}"]})
        wait_until(lambda: out.exists() and out.read_text())
        assert str(from_rc) in out.read_text().split(":")
    finally:
        d.stop()
    assert home.exists()
