"""The real agent CLIs (npm) run with the configuration our installer writes and call the
real reporter (issue 5 "Real agents"). No model is reachable (127.0.0.1:9): the session
hooks fire before the first model request, which is all this tier needs.

Opt-in: set ``SIGNALTTY_REAL_AGENTS_DIR`` to an npm prefix holding the CLIs; when they are
missing there and ``npm`` is available they are installed with
``npm install --prefix DIR @anthropic-ai/claude-code @openai/codex opencode-ai``. Unset, or
npm/network unavailable → skipped at once. Facts and versions: docs/agents.md.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from signaltty.installer import api
from tests.conftest import DaemonProc, wait_until

pytestmark = [
    pytest.mark.realagents,
    pytest.mark.skipif(not os.environ.get("SIGNALTTY_REAL_AGENTS_DIR"), reason="set SIGNALTTY_REAL_AGENTS_DIR to run"),
]
REPORTER = str(Path(sys.executable).parent / "signaltty")
PACKAGES = ("@anthropic-ai/claude-code", "@openai/codex", "opencode-ai")
OFFLINE_MODEL = "http://127.0.0.1:9"


@functools.cache
def _prefix() -> Path | None:
    value = os.environ.get("SIGNALTTY_REAL_AGENTS_DIR")
    if not value:
        return None
    prefix = Path(value)
    if all((prefix / "node_modules" / ".bin" / b).exists() for b in ("claude", "codex", "opencode")):
        return prefix
    if shutil.which("npm") is None:
        return None
    r = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", *PACKAGES],
                       capture_output=True, timeout=900, check=False)
    return prefix if r.returncode == 0 else None


def real_bin(name: str) -> str:
    prefix = _prefix()
    if prefix is None:
        pytest.skip("real agent CLIs unavailable (set SIGNALTTY_REAL_AGENTS_DIR; needs npm and network)")
    return str(prefix / "node_modules" / ".bin" / name)


# Runs in the pane: takes the test's environment from a file (the pane keeps only its own
# SIGNALTTY_* context) and becomes the CLI, so the CLI and its hooks run inside the pane.
LAUNCHER = """
import json, os, sys
env = json.load(open(sys.argv[1]))
env.update({k: v for k, v in os.environ.items() if k.startswith("SIGNALTTY_")})
os.chdir(env.pop("_CWD"))
os.execve(sys.argv[2], sys.argv[2:], env)
"""


def pane_for(d: DaemonProc, hint: str) -> str:
    """A workspace for ``hint``'s run; the pane itself is spawned by ``run_until_session``."""
    return d.call("workspace.create", {"name": hint, "cwd": str(d.root)})["workspace"]["id"]


def run_until_session(d: DaemonProc, workspace_id: str, argv: list[str], env: dict[str, str], cwd: Path) -> dict:
    """Run a real CLI in a pane (hooks are routed by the reporter's process, so it must run
    inside one) until our hooks reported its session."""
    env_file = cwd / f".env-{workspace_id}.json"
    env_file.write_text(json.dumps({k: v for k, v in env.items() if not k.startswith("SIGNALTTY_PANE")} | {"_CWD": str(cwd)}))
    # `python -c` as the pane's program: the daemon's automatic configuration (which keys on
    # the executable) stays out of the way of the configuration this test installed
    pane_id = d.call("pane.spawn", {"workspace_id": workspace_id, "argv": [sys.executable, "-c", LAUNCHER, str(env_file), *argv],
                                    "cwd": str(cwd)})["pane"]["id"]
    try:
        return wait_until(lambda: (p := d.call("pane.get", {"pane_id": pane_id})["pane"])["agent"]["agent_session_id"]
                          and p["lifecycle"] == "working" and p, timeout=60)
    finally:
        d.call("pane.close", {"pane_id": pane_id, "signal": "KILL"})


def base_env(d: DaemonProc, home: Path) -> dict[str, str]:
    env = {k: v for k, v in d.env.items() if not k.startswith(("CLAUDE_", "CODEX_", "OPENCODE_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               XDG_CACHE_HOME=str(home / ".cache"), XDG_STATE_HOME=str(home / ".local/state"))
    return env


def test_claude_code_runs_installed_hooks(daemon, tmp_root):
    claude = real_bin("claude")
    home, work = tmp_root / "ch", tmp_root / "work"
    work.mkdir()
    assert api.install("claude", REPORTER, home=home, env={}).changed
    env = base_env(daemon, home) | {
        "ANTHROPIC_BASE_URL": OFFLINE_MODEL, "ANTHROPIC_API_KEY": "sk-ant-mock-" + "0" * 30,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}
    p = run_until_session(daemon, pane_for(daemon, "claude"), [claude, "-p", "hello"], env, work)
    assert p["hooked"] is True
    assert p["agent"]["kind"] == "claude"


def test_codex_runs_installed_hooks(daemon, tmp_root):
    codex = real_bin("codex")
    home, work = tmp_root / "xh", tmp_root / "work"
    work.mkdir()
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text(
        f'# mine\nmodel = "mock-model"\nmodel_provider = "mock"\napproval_policy = "on-request"\n'
        f'check_for_update_on_startup = false\n\n[model_providers.mock]\nname = "Mock"\n'
        f'base_url = "{OFFLINE_MODEL}/v1"\nenv_key = "MOCK_API_KEY"\nwire_api = "responses"\n'
        f'request_max_retries = 0\nstream_max_retries = 0\n\n[projects."{work}"]\ntrust_level = "trusted"\n')
    assert api.install("codex", REPORTER, home=home, env={}).changed
    env = base_env(daemon, home) | {"CODEX_HOME": str(codex_home), "MOCK_API_KEY": "x"}
    features = subprocess.run([codex, "features", "list"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert features.returncode == 0
    assert any(line.split()[:1] == ["hooks"] and line.split()[-1] == "true"
                                            for line in features.stdout.splitlines())
    # hook trust is Codex's own review: this test alone bypasses it for one invocation
    argv = [codex, "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", "hello"]
    p = run_until_session(daemon, pane_for(daemon, "codex"), argv, env, work)
    assert p["hooked"] is True
    assert p["agent"]["kind"] == "codex"


def test_opencode_loads_installed_plugin(daemon, tmp_root):
    opencode = real_bin("opencode")
    home, work = tmp_root / "oh", tmp_root / "work"
    work.mkdir()
    assert api.install("opencode", REPORTER, home=home, env={}).changed
    (home / ".config/opencode/opencode.json").write_text(
        '{"provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock", "options": '
        f'{{"baseURL": "{OFFLINE_MODEL}/v1", "apiKey": "mock-key"}}, "models": {{"mock-model": '
        '{"name": "Mock Model", "tool_call": true, "limit": {"context": 128000, "output": 4096}}}}}, '
        '"enabled_providers": ["mock"], "model": "mock/mock-model", "small_model": "mock/mock-model", '
        '"autoupdate": false, "share": "disabled"}\n')
    env = base_env(daemon, home) | {
        "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1"}
    p = run_until_session(daemon, pane_for(daemon, "opencode"), [opencode, "run", "hello"], env, work)
    assert p["agent"]["agent_session_id"].startswith("ses_")
    assert p["hooked"] is True
