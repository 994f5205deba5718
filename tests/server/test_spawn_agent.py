"""Catalog launches end to end: a real daemon, fake agent CLIs on its PATH (agents.md §4.4,
protocol.md §6 ``pane.spawn`` with ``agent``, ``agents.catalog``, desktop-and-service.md §5)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, holds_for, wait_until

PY = sys.executable

# Records its argv, a few env vars and the first line it reads from the terminal into
# out/<pane id>.json next to the tools directory, then idles.
FAKE = textwrap.dedent(
    """\
    #!{py}
    import json, os, sys, time
    out = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "out")
    path = os.path.join(out, os.environ.get("SIGNALTTY_PANE", "nopane") + ".json")
    rec = {{"argv": sys.argv, "t0": time.time(),
            "env": {{k: os.environ.get(k) for k in ("TERN_APPROVAL", "GOOSE_MODE", "PATH")}}}}
    def dump():
        with open(path + ".tmp", "w") as f:
            json.dump(rec, f)
        os.replace(path + ".tmp", path)
    dump()
    print("READY", flush=True)
    if os.environ.get("SIGNALTTY_TEST_EXIT"):
        sys.exit(0)
    line = sys.stdin.readline()
    rec["line"], rec["t1"] = line, time.time()
    dump()
    time.sleep(30)
    """
)

# User manifests: short after-start delays for the bundled aider/goose, and a fictional
# agent with every launch field (agents.md §4.5 "tern").
MANIFESTS = {
    "aider.toml": """
        [agent]
        id = "aider"
        kind = "generic"
        [launch]
        prompt = { mode = "after-start", delay_ms = 200 }
    """,
    "goose.toml": """
        [agent]
        id = "goose"
        kind = "generic"
        [launch]
        prompt = { mode = "after-start", delay_ms = 1500 }
    """,
    "tern.toml": """
        [agent]
        id = "tern"
        kind = "generic"
        display_name = "Tern"
        binaries = ["tern", "tern-cli"]
        order = 15
        [launch]
        detect = ["tern", "tern-cli"]
        requires = ["ternreq"]
        args = ["chat"]
        prompt = { mode = "flag", flag = "--ask" }
        bypass_args = ["--auto-approve"]
        bypass_env = { TERN_APPROVAL = "auto" }
        continue_args = ["--continue"]
    """,
    "ghost.toml": """
        [agent]
        id = "ghost"
        kind = "generic"
        [launch]
        detect = ["ghost-cli-not-installed"]
    """,
    "needy.toml": """
        [agent]
        id = "needy"
        kind = "generic"
        [launch]
        detect = ["needy"]
        requires = ["needy-helper-missing"]
    """,
}

TOOLS = ("claude", "opencode", "aider", "goose", "tern-cli", "ternreq", "needy")


def make_tool(bindir: Path, name: str) -> Path:
    path = bindir / name
    path.write_text(FAKE.format(py=PY))
    path.chmod(0o755)
    return path


def setup_root(root: Path, config: str | None = None) -> tuple[Path, dict[str, str]]:
    bindir = root / "tools" / "bin"
    bindir.mkdir(parents=True)
    (root / "tools" / "out").mkdir()
    for name in TOOLS:
        make_tool(bindir, name)
    agents = root / "agents"
    agents.mkdir()
    for name, text in MANIFESTS.items():
        (agents / name).write_text(textwrap.dedent(text))
    if config is not None:
        (root / "config" / "signaltty").mkdir(parents=True)
        (root / "config" / "signaltty" / "config.toml").write_text(config)
    env = {
        "SIGNALTTY_AGENTS_DIR": str(agents),
        "PATH": os.pathsep.join([str(bindir), str(Path(PY).parent), "/usr/bin", "/bin"]),
    }
    return bindir, env


@pytest.fixture
def agents_daemon(tmp_root: Path):
    bindir, env = setup_root(tmp_root)
    d = DaemonProc(tmp_root, env)
    d.bindir = bindir  # type: ignore[attr-defined]
    d.start()
    try:
        yield d
    finally:
        d.stop()
        assert not d.kill_leftovers()


def out_of(d: DaemonProc, pane_id: str, key: str = "argv") -> dict:
    path = d.root / "tools" / "out" / f"{pane_id}.json"

    def read() -> dict | None:
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return rec if key in rec else None

    return wait_until(read, timeout=15)


def workspace(d: DaemonProc) -> str:
    return d.call("workspace.create", {"name": "t", "cwd": str(d.root)})["workspace"]["id"]


def spawn(d: DaemonProc, **params) -> dict:
    return d.call("pane.spawn", {"workspace_id": workspace(d), **params})["pane"]


def bad(d: DaemonProc, method: str, params: dict) -> SignalttyError:
    with pytest.raises(SignalttyError) as exc:
        d.call(method, params)
    assert exc.value.code == "BAD_PARAMS", exc.value
    return exc.value


def log_lines(d: DaemonProc, pane_id: str) -> str:
    text = (d.state_dir / "signaltty.log").read_text(errors="replace")
    return "\n".join(line for line in text.splitlines() if pane_id in line)


# ---------------------------------------------------------------- argv launches


def test_claude_prompt_is_one_argv_element_and_kind_comes_from_entry(agents_daemon):
    d = agents_daemon
    p = spawn(d, agent="claude", prompt="hi there; rm -rf ~")
    exe = str(d.bindir / "claude")
    assert p["argv"] == [exe, "hi there; rm -rf ~"]
    agent = p["agent"]
    assert (agent["kind"], agent["catalog_id"], agent["display_name"]) == ("claude", "claude", "Claude Code")
    assert agent["launch_prefix"] == []
    rec = out_of(d, p["id"])
    assert rec["argv"] == [exe, "hi there; rm -rf ~"]
    assert rec["env"]["PATH"].split(os.pathsep)[0] == str(d.bindir)


def test_claude_bypass_adds_flag_and_launch_prefix(agents_daemon):
    d = agents_daemon
    p = spawn(d, agent="claude", bypass=True, prompt="go")
    assert p["argv"] == [str(d.bindir / "claude"), "--dangerously-skip-permissions", "go"]
    assert p["agent"]["launch_prefix"] == ["--dangerously-skip-permissions"]
    assert out_of(d, p["id"])["argv"][1:] == ["--dangerously-skip-permissions", "go"]
    # default without config: no bypass
    q = spawn(d, agent="claude")
    assert q["argv"] == [str(d.bindir / "claude")]
    assert q["agent"]["launch_prefix"] == []


def test_opencode_flag_mode_and_continue(agents_daemon):
    d = agents_daemon
    p = spawn(d, agent="opencode", prompt="fix the tests", **{"continue": True})
    assert p["argv"] == [str(d.bindir / "opencode"), "--continue", "--prompt", "fix the tests"]
    assert p["agent"]["kind"] == "opencode"
    assert p["agent"]["catalog_id"] == "opencode"
    assert out_of(d, p["id"])["argv"][1:] == ["--continue", "--prompt", "fix the tests"]


def test_user_entry_args_bypass_env_continue_flag_and_second_detect_name(agents_daemon):
    d = agents_daemon
    p = spawn(d, agent="tern", prompt="go", bypass=True, **{"continue": True})
    exe = str(d.bindir / "tern-cli")  # "tern" is not installed, "tern-cli" is
    assert p["argv"] == [exe, "chat", "--auto-approve", "--continue", "--ask", "go"]
    assert p["agent"]["kind"] == "generic"
    assert p["agent"]["catalog_id"] == "tern"
    assert p["agent"]["display_name"] == "Tern"
    assert p["agent"]["launch_prefix"] == ["--auto-approve"]
    rec = out_of(d, p["id"])
    assert rec["env"]["TERN_APPROVAL"] == "auto"  # catalog env is not subject to the request allow-list
    plain = spawn(d, agent="tern")
    assert plain["argv"] == [exe, "chat"]
    assert out_of(d, plain["id"])["env"]["TERN_APPROVAL"] is None


def test_split_with_agent(agents_daemon):
    d = agents_daemon
    src = spawn(d, argv=[PY, "-c", "import time; time.sleep(30)"])
    r = d.call("pane.split", {"pane_id": src["id"], "agent": "opencode", "prompt": "x"})
    assert r["pane"]["argv"] == [str(d.bindir / "opencode"), "--prompt", "x"]
    assert r["pane"]["agent"]["kind"] == "opencode"
    ws = d.call("workspace.get", {"workspace_id": src["workspace_id"]})["workspace"]
    assert ws["pane_ids"] == [src["id"], r["pane"]["id"]]


def test_agent_hint_overrides_entry_kind(agents_daemon):
    p = spawn(agents_daemon, agent="tern", agent_hint="pi")
    assert p["agent"]["kind"] == "pi"
    assert p["agent"]["catalog_id"] == "tern"


# ---------------------------------------------------------------- after-start


def test_after_start_prompt_is_pasted_then_entered(agents_daemon):
    d = agents_daemon
    t_spawn = time.time()
    p = spawn(d, agent="aider", prompt="hello there")
    assert p["argv"] == [str(d.bindir / "aider")]  # nothing of the prompt in argv
    rec = out_of(d, p["id"], key="line")
    # the terminal turns the CR into a newline (ICRNL): one line, markers around the text
    assert rec["line"] == "\x1b[200~hello there\x1b[201~\n"
    # 200 ms delay + 300 ms before Enter
    assert rec["t1"] - t_spawn >= 0.45
    wait_until(lambda: "agent.prompt_pasted" in log_lines(d, p["id"]), timeout=5)


def test_after_start_skipped_when_pane_exited_first(agents_daemon):
    d = agents_daemon
    p = spawn(d, agent="goose", prompt="never", env={"SIGNALTTY_TEST_EXIT": "1"})
    with d.client(timeout=None) as cl:
        cl.call("wait", {"pane_id": p["id"], "until": "exited", "timeout_s": 20})
    # a cancelled paste logs nothing, so the behaviour is a span: past the 1500 ms delay
    ends = ("agent.prompt_pasted", "agent.prompt_failed")
    holds_for(lambda: not any(e in log_lines(d, p["id"]) for e in ends), 2.0, what="no paste after exit")


def test_after_start_skipped_when_pane_closed_first(agents_daemon):
    d = agents_daemon
    p = spawn(d, agent="goose", prompt="never", bypass=True)
    rec = out_of(d, p["id"])
    assert rec["env"]["GOOSE_MODE"] == "auto"
    assert p["agent"]["launch_prefix"] == []
    d.call("pane.close", {"pane_id": p["id"]})
    holds_for(lambda: "agent.prompt_pasted" not in log_lines(d, p["id"]), 2.0,
              what="no paste after the close")  # a span, as above
    assert "line" not in json.loads((d.root / "tools" / "out" / f"{p['id']}.json").read_text())


# ---------------------------------------------------------------- errors


def test_launch_errors(agents_daemon):
    d = agents_daemon
    ws = workspace(d)
    err = bad(d, "pane.spawn", {"workspace_id": ws, "agent": "nope"})
    assert err.message == "unknown agent: nope"
    assert err.details == {"field": "agent"}
    err = bad(d, "pane.spawn", {"workspace_id": ws, "agent": "ghost"})
    assert err.message == "agent not installed: ghost"
    err = bad(d, "pane.spawn", {"workspace_id": ws, "agent": "gemini"})
    assert err.message == "agent not installed: gemini"
    err = bad(d, "pane.spawn", {"workspace_id": ws, "agent": "needy"})
    assert err.message == "agent not installed: needy"
    assert err.details == {"field": "agent", "missing_requires": ["needy-helper-missing"]}
    err = bad(d, "pane.spawn", {"workspace_id": ws, "agent": "aider", "continue": True})
    assert err.details == {"field": "continue"}
    err = bad(d, "pane.spawn", {"workspace_id": ws, "agent": "opencode", "bypass": True})
    assert err.details == {"field": "bypass"}
    for prompt in ("", "a\x00b", "x" * (32 * 1024 + 1)):
        err = bad(d, "pane.spawn", {"workspace_id": ws, "agent": "claude", "prompt": prompt})
        assert err.details == {"field": "prompt"}
    err = bad(d, "pane.spawn", {"workspace_id": ws, "argv": ["sh"], "prompt": "x"})
    assert "only valid with agent" in err.message
    err = bad(d, "pane.spawn", {"workspace_id": ws, "argv": ["sh"], "agent": "claude"})
    assert "exactly one" in err.message
    src = spawn(d, argv=[PY, "-c", "import time; time.sleep(30)"])
    err = bad(d, "pane.split", {"pane_id": src["id"], "agent": "nope"})
    assert err.message == "unknown agent: nope"
    err = bad(d, "pane.split", {"pane_id": src["id"], "prompt": "x"})  # default shell takes no prompt
    assert err.details == {"field": "prompt"}
    # nothing was created by the failures
    panes = d.call("pane.list")["panes"]
    assert [x["id"] for x in panes] == [src["id"]]


# ---------------------------------------------------------------- agents.catalog


def test_catalog_shape_order_and_installed_flags(agents_daemon):
    d = agents_daemon
    r = d.call("agents.catalog")
    assert r["path_hydration"] == {"state": "disabled", "added": []}
    rows = {x["id"]: x for x in r["agents"]}
    assert len(rows) >= 27 + 3  # bundled + tern, ghost, needy
    keys = [
        "id", "display_name", "kind", "source", "order", "installed", "command", "path",
        "missing_requires", "homepage", "install_url", "prompt_mode", "can_continue",
        "can_resume", "can_bypass", "integration",
    ]
    assert all(list(x) == keys for x in r["agents"])
    ids = [x["id"] for x in r["agents"]]
    ordered = [x for x in r["agents"] if x["order"] is not None]
    assert [x["order"] for x in ordered] == sorted(x["order"] for x in ordered)
    assert ids[: len(ordered)] == [x["id"] for x in ordered]  # unordered entries last, by id
    assert ids[len(ordered):] == sorted(ids[len(ordered):])
    assert ids[:3] == ["claude", "tern", "codex"]  # orders 10, 15 (user), 20

    claude = rows["claude"]
    assert claude["installed"]
    assert claude["path"] == str(d.bindir / "claude")
    assert claude["command"] == "claude"
    assert (claude["kind"], claude["source"], claude["prompt_mode"]) == ("claude", "bundled", "argv")
    assert claude["can_bypass"]
    assert claude["can_continue"]
    assert claude["can_resume"]
    assert claude["integration"] == "hooks"
    assert claude["homepage"].startswith("https://")
    assert rows["opencode"]["integration"] == "plugin"
    assert rows["opencode"]["prompt_mode"] == "flag"
    assert not rows["opencode"]["can_bypass"]
    assert rows["gemini"]["integration"] == "hooks"  # settings.json hooks (issue 11)
    assert not rows["gemini"]["installed"]
    assert rows["gemini"]["command"] == "gemini"
    assert rows["gemini"]["path"] is None
    assert rows["aider"]["installed"]
    assert rows["aider"]["source"] == "user"
    assert rows["aider"]["prompt_mode"] == "after-start"
    assert rows["aider"]["integration"] == "none"
    assert rows["tern"]["command"] == "tern-cli"
    assert rows["tern"]["installed"]
    needy = rows["needy"]
    assert not needy["installed"]
    assert needy["path"] == str(d.bindir / "needy")
    assert needy["missing_requires"] == ["needy-helper-missing"]


def test_catalog_cached_until_refresh_but_launch_sees_new_tool(agents_daemon):
    d = agents_daemon
    assert not {x["id"]: x for x in d.call("agents.catalog")["agents"]}["gemini"]["installed"]
    make_tool(d.bindir, "gemini")
    assert not {x["id"]: x for x in d.call("agents.catalog")["agents"]}["gemini"]["installed"]
    # a launch detects afresh
    p = spawn(d, agent="gemini", prompt="hi")
    assert p["argv"] == [str(d.bindir / "gemini"), "--prompt-interactive", "hi"]
    assert p["agent"]["catalog_id"] == "gemini"
    assert p["agent"]["kind"] == "generic"
    (d.bindir / "claude").unlink()
    r = d.call("agents.catalog", {"refresh": True})
    rows = {x["id"]: x for x in r["agents"]}
    assert rows["gemini"]["installed"]
    assert not rows["claude"]["installed"]
    assert r["path_hydration"]["state"] == "disabled"
    err = bad(d, "pane.spawn", {"workspace_id": workspace(d), "agent": "claude"})
    assert err.message == "agent not installed: claude"


def test_catalog_params_are_strict(agents_daemon):
    err = bad(agents_daemon, "agents.catalog", {"refresh": "yes"})
    assert err.details == {"field": "refresh"}


def test_refresh_rehydrates_path_from_login_shell(tmp_root):
    """A CLI installed into a new directory after start appears on ``refresh: true``."""
    _, env = setup_root(tmp_root)
    newdir = tmp_root / "tools" / "later"  # its out/ is tools/out
    pathfile = tmp_root / "shell-path"
    pathfile.write_text(env["PATH"])
    stub = tmp_root / "stubshell"
    stub.write_text(
        "#!/bin/sh\n"
        "echo 'rc noise'\n"
        f"printf '%s' __SIGNALTTY_PATH_BEGIN__; cat '{pathfile}'; printf '%s' __SIGNALTTY_PATH_END__\n"
    )
    stub.chmod(0o755)
    env["SHELL"] = str(stub)
    d = DaemonProc(tmp_root, env)
    del d.env["SIGNALTTY_SHELL_PATH"]
    d.start()
    try:
        def hydrated() -> dict | None:
            r = d.call("agents.catalog")
            return r if r["path_hydration"]["state"] != "pending" else None

        r = wait_until(hydrated, timeout=10)
        assert r["path_hydration"] == {"state": "done", "added": []}
        assert not {x["id"]: x for x in r["agents"]}["pi"]["installed"]
        newdir.mkdir(parents=True)
        make_tool(newdir, "pi")
        pathfile.write_text(f"{env['PATH']}:{newdir}")
        r = d.call("agents.catalog", {"refresh": True})
        assert r["path_hydration"] == {"state": "done", "added": [str(newdir)]}
        pi = {x["id"]: x for x in r["agents"]}["pi"]
        assert pi["installed"]
        assert pi["path"] == str(newdir / "pi")
        assert d.call("server.status")["path_hydration"]["added"] == [str(newdir)]
        p = spawn(d, agent="pi", prompt="hello")
        assert p["argv"] == [str(newdir / "pi"), "hello"]
        assert p["agent"]["kind"] == "pi"
        assert out_of(d, p["id"])["env"]["PATH"].endswith(str(newdir))
        # a second refresh keeps what the first added
        r = d.call("agents.catalog", {"refresh": True})
        assert r["path_hydration"] == {"state": "done", "added": [str(newdir)]}
    finally:
        d.stop()
        assert not d.kill_leftovers()


def test_automatic_permissions_default(tmp_root):
    bindir, env = setup_root(tmp_root, config="[agents]\nautomatic_permissions = true\n")
    d = DaemonProc(tmp_root, env)
    d.start()
    try:
        ws = workspace(d)
        p = d.call("pane.spawn", {"workspace_id": ws, "agent": "claude"})["pane"]
        assert p["argv"] == [str(bindir / "claude"), "--dangerously-skip-permissions"]
        assert p["agent"]["launch_prefix"] == ["--dangerously-skip-permissions"]
        p = d.call("pane.spawn", {"workspace_id": ws, "agent": "claude", "bypass": False})["pane"]
        assert p["argv"] == [str(bindir / "claude")]
        # only claude, codex and antigravity follow the config
        p = d.call("pane.spawn", {"workspace_id": ws, "agent": "tern"})["pane"]
        assert p["argv"] == [str(bindir / "tern-cli"), "chat"]
        # an entry without bypass flags is not an error by default
        p = d.call("pane.spawn", {"workspace_id": ws, "agent": "opencode"})["pane"]
        assert p["argv"] == [str(bindir / "opencode")]
    finally:
        d.stop()
        assert not d.kill_leftovers()


# ---------------------------------------------------------------- CLI


def test_cli_new_and_pane_spawn_with_agent(agents_daemon):
    d = agents_daemon
    r = d.cli("--json", "new", "--name", "demo", "--agent", "claude", "--prompt", "hi there", "--bypass")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    pane = d.call("pane.get", {"pane_id": out["pane_id"]})["pane"]
    assert pane["argv"] == [str(d.bindir / "claude"), "--dangerously-skip-permissions", "hi there"]
    r = d.cli(
        "--json", "pane", "spawn", "--workspace", out["workspace_id"], "--agent", "opencode",
        "--prompt", "go on", "--continue",
    )
    assert r.returncode == 0, r.stderr
    pane = json.loads(r.stdout)["pane"]
    assert pane["argv"] == [str(d.bindir / "opencode"), "--continue", "--prompt", "go on"]
    r = d.cli("--json", "pane", "split", pane["id"], "--agent", "claude", "--no-bypass", "--prompt", "x")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pane"]["argv"] == [str(d.bindir / "claude"), "x"]
    r = d.cli("--json", "pane", "split", pane["id"], "--label", "sh", "--", PY, "-c", "print(1)", "--agent")
    assert r.returncode == 0, r.stderr
    split = json.loads(r.stdout)["pane"]
    assert split["argv"] == [PY, "-c", "print(1)", "--agent"]
    assert split["label"] == "sh"
    r = d.cli("new", "--agent", "ghost")
    assert r.returncode == 1
    assert "agent not installed: ghost" in r.stderr
    # the failed launch left no empty workspace behind
    names = [w["name"] for w in d.call("workspace.list")["workspaces"]]
    assert names == ["demo"]


def test_cli_agents_catalog(agents_daemon):
    d = agents_daemon
    r = d.cli("agents", "catalog")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("PATH hydration: disabled")
    installed, _, missing = out.partition("not installed:")
    assert "claude" in installed
    assert str(d.bindir / "claude") in installed
    assert "gemini" in missing
    assert "https://github.com/google-gemini/gemini-cli" in missing
    assert "needs needy-helper-missing" in missing
    r = d.cli("--json", "agents", "catalog", "--refresh")
    assert r.returncode == 0, r.stderr
    assert {a["id"] for a in json.loads(r.stdout)["agents"]} >= {"claude", "gemini", "aider"}


def test_cli_agent_and_a_command_together_is_an_error(agents_daemon):
    d = agents_daemon
    r = d.cli("new", "--agent", "claude", "--", "extra", "args")
    assert r.returncode == 1
    assert "exactly one of argv or agent" in r.stderr
    assert d.call("pane.list")["panes"] == []  # nothing started, the workspace was closed again
