"""Codex config.toml, OpenCode plugin file, provider homes, status and the CLI
(integrations.md §1.1, §1.3, §1.5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from signaltty.installer import api, codex, opencode
from signaltty.installer.errors import InstallError
from signaltty.installer.homes import provider_root
from tests.installer.helpers import REPORTER, snap

CONFIG = """\
# my codex config
model = "gpt-5"   # keep this comment

[hooks.state]
# Codex's own trust records
"abc" = { trusted = true }

[features]
# experimental bits
web_search = true
"""


def codex_home(tmp_path: Path, config: str | None) -> Path:
    root = tmp_path / ".codex"
    root.mkdir()
    if config is not None:
        (root / "config.toml").write_text(config)
    return root


def test_codex_flag_added_comments_and_trust_kept(tmp_path):
    root = codex_home(tmp_path, CONFIG)
    r = api.install("codex", REPORTER, home=tmp_path, env={})
    assert r.changed
    assert r.notice == codex.TRUST_NOTICE
    text = (root / "config.toml").read_text()
    assert text.startswith(CONFIG.rstrip("\n"))  # every byte of the user's file kept
    assert text[len(CONFIG):].strip() == "hooks = true"
    assert '"abc" = { trusted = true }' in text
    assert "# Codex's own trust records" in text
    before = snap(root / "config.toml")
    r = api.install("codex", REPORTER, home=tmp_path, env={})
    assert not r.changed
    assert r.notice is None
    assert snap(root / "config.toml") == before
    assert api.status("codex", home=tmp_path, env={})["feature_flag"] == "enabled"
    api.uninstall("codex", home=tmp_path, env={})
    assert snap(root / "config.toml") == before  # uninstall leaves config.toml alone


def test_codex_missing_config_created_with_flag(tmp_path):
    api.install("codex", REPORTER, home=tmp_path, env={})
    assert (tmp_path / ".codex/config.toml").read_text() == "[features]\nhooks = true\n"


@pytest.mark.parametrize(
    ("config", "notice", "flag"),
    [
        ("[features]\nhooks = false # I said no\n", codex.DISABLED_NOTICE, "disabled"),
        ("[features]\ncodex_hooks = false\n", codex.DISABLED_NOTICE, "disabled"),
        ("[features]\ncodex_hooks = true\n", None, "enabled"),
        ("features = 3\n", codex.NOT_A_TABLE_NOTICE, "absent"),
    ],
)
def test_codex_flag_never_enabled_or_forced(tmp_path, config, notice, flag):
    root = codex_home(tmp_path, config)
    before = snap(root / "config.toml")
    r = api.install("codex", REPORTER, home=tmp_path, env={})
    assert snap(root / "config.toml") == before
    if notice:
        assert notice in r.notice
    assert api.status("codex", home=tmp_path, env={})["feature_flag"] == flag


def test_codex_invalid_toml_refuses_everything(tmp_path):
    root = codex_home(tmp_path, "[features\nhooks = \n")
    before = snap(root / "config.toml")
    with pytest.raises(InstallError, match="invalid TOML"):
        api.install("codex", REPORTER, home=tmp_path, env={})
    assert snap(root / "config.toml") == before
    assert not (root / "hooks.json").exists()


def test_opencode_foreign_plugin_refused_and_left(tmp_path):
    f = tmp_path / ".config/opencode/plugins/signaltty.js"
    f.parent.mkdir(parents=True)
    f.write_text("export const Mine = async () => ({})\n")
    before = snap(f)
    with pytest.raises(InstallError, match="^plugins/signaltty.js already contains a plugin not managed by signaltty$"):
        api.install("opencode", REPORTER, home=tmp_path, env={})
    assert snap(f) == before
    r = api.uninstall("opencode", home=tmp_path, env={})
    assert not r.changed
    assert "not managed" in r.notice
    assert snap(f) == before
    assert api.status("opencode", home=tmp_path, env={}) == {"installed": False, "file": str(f), "foreign_plugin": True}


def test_opencode_plugin_rendered_and_refreshed(tmp_path):
    r = api.install("opencode", REPORTER, home=tmp_path, env={})
    text = Path(r.file).read_text()
    assert text.splitlines()[0] == opencode.MARKER
    assert f"const REPORTER = {json.dumps(REPORTER)};" in text
    assert "@SIGNALTTY" not in text
    assert api.install("opencode", "/other/signaltty", home=tmp_path, env={}).changed
    assert api.uninstall("opencode", home=tmp_path, env={}).changed
    assert not Path(r.file).exists()


def test_provider_homes_from_environment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {"HOME": "/h", "CLAUDE_CONFIG_DIR": "rel/claude", "CODEX_HOME": "/c", "OPENCODE_CONFIG_DIR": "/o",
           "XDG_CONFIG_HOME": "/x"}
    assert provider_root("claude", home=None, env=env) == tmp_path / "rel/claude"
    assert provider_root("codex", home=None, env=env) == Path("/c")
    assert provider_root("opencode", home=None, env=env) == Path("/o")
    assert provider_root("cursor", home=None, env=env) == Path("/h/.cursor")
    env2 = {"HOME": "/h", "CLAUDE_CONFIG_DIR": "", "OPENCODE_CONFIG_DIR": "", "XDG_CONFIG_HOME": "/x"}
    assert provider_root("claude", home=None, env=env2) == Path("/h/.claude")  # empty = unset
    assert provider_root("opencode", home=None, env=env2) == Path("/x/opencode")
    assert provider_root("opencode", home=None, env={"HOME": "/h"}) == Path("/h/.config/opencode")
    # --home isolates from the overrides; OpenCode still honours XDG_CONFIG_HOME
    assert provider_root("claude", home="/d", env=env) == Path("/d/.claude")
    assert provider_root("codex", home="/d", env=env) == Path("/d/.codex")
    assert provider_root("cursor", home="/d", env=env) == Path("/d/.cursor")
    assert provider_root("opencode", home="/d", env=env) == Path("/x/opencode")
    assert provider_root("opencode", home="/d", env={}) == Path("/d/.config/opencode")


def test_status_missing_events_and_disabled_hooks(tmp_path):
    f = tmp_path / ".claude/settings.json"
    api.install("claude", REPORTER, home=tmp_path, env={})
    data = json.loads(f.read_text())
    del data["hooks"]["Stop"]
    data["disableAllHooks"] = True
    f.write_text(json.dumps(data))
    s = api.status("claude", home=tmp_path, env={})
    assert s == {"installed": False, "file": str(f), "missing_events": ["Stop"], "trust": "provider_managed",
                 "hooks_disabled": True}


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "signaltty", *args], env=env, capture_output=True, text=True, timeout=30, check=False)


@pytest.fixture
def cli_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIGNALTTY_", "XDG_", "CLAUDE_", "CODEX_", "OPENCODE_", "PI_", "GEMINI_"))}
    env.update(HOME=str(tmp_path / "realhome"), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               CLAUDE_CONFIG_DIR=str(tmp_path / "ignored"), SIGNALTTY_AGENTS_DIR=str(tmp_path / "agents"),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    return env


def test_cli_install_status_uninstall(tmp_path, cli_env):
    home = tmp_path / "home"
    r = cli("integration", "install", "all", "--home", str(home), env=cli_env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"configured claude hooks ({home}/.claude/settings.json)"
    assert lines[2] == codex.TRUST_NOTICE
    assert lines[3] == f"configured opencode hooks ({tmp_path}/cfg/opencode/plugins/signaltty.js)"
    assert not (tmp_path / "ignored").exists()
    assert not (tmp_path / "realhome").exists()
    settings = json.loads((home / ".claude/settings.json").read_text())
    reporter = str(Path(sys.executable).parent / "signaltty")
    assert settings["hooks"]["Stop"][0]["hooks"][0]["command"].startswith(f"'{reporter}' hook-event")
    r = cli("integration", "install", "claude", "--home", str(home), env=cli_env)
    assert r.stdout.strip() == f"already configured claude hooks ({home}/.claude/settings.json)"
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "tern.toml").write_text('kind = "generic"\n')
    (agents / "bad.toml").write_text("kind = [\n")
    r = cli("integration", "status", "--home", str(home), env=cli_env)
    assert r.returncode == 0
    out = r.stdout.splitlines()
    assert out[:6] == [
        f"claude: installed ({home}/.claude/settings.json)",
        f"codex: installed ({home}/.codex/hooks.json)",
        f"opencode: installed ({tmp_path}/cfg/opencode/plugins/signaltty.js)",
        f"cursor: installed ({home}/.cursor/hooks.json)",
        f"pi: installed ({home}/.pi/agent/extensions/signaltty.ts)",
        f"gemini: installed ({home}/.gemini/settings.json)",
    ]
    assert out[6].startswith("manifest bad: BROKEN: ")
    assert out[6].endswith(f"({agents}/bad.toml)")
    assert out[7] == f"manifest tern: kind=generic ({agents}/tern.toml)"
    js = json.loads(cli("integration", "status", "--json", "--home", str(home), env=cli_env).stdout)
    assert js["codex"] == {"installed": True, "file": f"{home}/.codex/hooks.json", "missing_events": [],
                           "trust": "provider_review", "feature_flag": "enabled"}
    assert js["manifests"][1] == {"name": "tern", "manifest": {"file": f"{agents}/tern.toml", "kind": "generic", "ok": True}}
    assert js["manifests"][0]["manifest"]["ok"] is False
    assert js["manifests"][0]["manifest"]["error"]
    r = cli("integration", "uninstall", "cursor", "--home", str(home), "--json", env=cli_env)
    assert json.loads(r.stdout) == {"reports": [{"agent": "cursor", "file": f"{home}/.cursor/hooks.json", "changed": True}]}
    r = cli("integration", "uninstall", "cursor", "--home", str(home), env=cli_env)
    assert r.stdout.strip() == f"cursor hooks not installed ({home}/.cursor/hooks.json)"


def test_cli_error_exit_1_others_still_processed(tmp_path, cli_env):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude/settings.json").write_text("{oops")
    r = cli("integration", "install", "all", "--home", str(home), env=cli_env)
    assert r.returncode == 1
    assert r.stderr.startswith(f"signaltty: claude: {home}/.claude/settings.json: invalid JSON")
    assert "configured cursor hooks" in r.stdout
    assert (home / ".claude/settings.json").read_text() == "{oops"
    r = cli("integration", "status", "claude", "--home", str(home), env=cli_env)
    assert r.returncode == 0
    assert r.stdout.startswith("claude: not installed (")
    assert "invalid JSON" in r.stdout
    r = cli("integration", "install", "nope", env=cli_env)
    assert r.returncode == 2  # argparse usage error
    status = cli("integration", "status", "--home", str(home), env={**cli_env, "SIGNALTTY_AGENTS_DIR": str(tmp_path / "none")})
    assert status.stdout.splitlines()[-1] == f"manifests: none ({tmp_path}/none)"


@pytest.mark.parametrize(("agent", "example", "installed"), [
    ("claude", "claude/settings.example.json", ".claude/settings.json"),
    ("codex", "codex/hooks.example.json", ".codex/hooks.json"),
    ("cursor", "cursor/hooks.example.json", ".cursor/hooks.json"),
])
def test_shipped_examples_match_the_installer(tmp_path, agent, example, installed):
    from signaltty.system.resources import integration_template

    api.install(agent, "/usr/local/bin/signaltty", home=tmp_path, env={})
    assert (tmp_path / installed).read_text() == integration_template(example)
