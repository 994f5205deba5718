"""``signaltty integration status`` reads the user agents dir as the daemon does (fifth trust
attack pass, L1): a FIFO named ``*.toml`` there is reported at once, not read (reading it
blocked until a writer came, for ever); an oversized file is not read whole; a symlink to a
regular manifest is followed, as the daemon's loader follows it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from signaltty.installer import api
from tests.installer.test_providers import cli, cli_env  # noqa: F401 - fixture


def test_status_names_a_fifo_and_an_oversized_manifest_and_finishes(
    tmp_path: Path, cli_env: dict[str, str],  # noqa: F811
) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    os.mkfifo(agents / "evil.toml")
    with (agents / "huge.toml").open("wb") as f:  # sparse: its size alone refuses it
        f.truncate(api.MAX_MANIFEST_BYTES + 1)
    (tmp_path / "real.toml").write_text('kind = "generic"\n')
    (agents / "linked.toml").symlink_to(tmp_path / "real.toml")
    try:
        r = cli("integration", "status", "--home", str(tmp_path / "home"), env=cli_env)
    except subprocess.TimeoutExpired:
        raise AssertionError("integration status hung on the FIFO") from None
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stdout.splitlines() if line.startswith("manifest ")]
    assert lines[0] == (
        f"manifest evil: BROKEN: evil.toml is a fifo, not a regular file ({agents}/evil.toml)"
    ), lines
    assert lines[1].startswith("manifest huge: BROKEN: huge.toml has 1048577 bytes"), lines
    assert lines[1].endswith(f"({agents}/huge.toml)")
    assert lines[2] == f"manifest linked: kind=generic ({agents}/linked.toml)"
    assert len(lines) == 3


def test_a_symlink_loop_is_broken_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "loop.toml").symlink_to(tmp_path / "loop.toml")
    (out,) = api.manifests(tmp_path)
    assert out["name"] == "loop"
    assert out["manifest"]["ok"] is False
    assert out["manifest"]["error"]
