"""Catalog launch: detection on PATH (real files in temp dirs) and argv building (agents.md §4.4)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from signaltty.agents import launch
from signaltty.proto.envelope import SignalttyError


def entry(
    id: str = "tern",
    *,
    kind: str = "generic",
    detect: tuple[str, ...] = ("tern",),
    command: str | None = None,
    requires: tuple[str, ...] = (),
    args: tuple[str, ...] = (),
    mode: str = "argv",
    separator: str | None = None,
    flag: str | None = None,
    delay_ms: int = 3000,
    bypass_args: tuple[str, ...] = (),
    bypass_env: dict[str, str] | None = None,
    continue_args: tuple[str, ...] = (),
    order: int | None = 10,
    resume: tuple[str, ...] | None = None,
    rules: tuple = (),
    lifecycle: dict | None = None,
) -> SimpleNamespace:
    """A stand-in with the agreed CatalogEntry/LaunchSpec attribute names."""
    return SimpleNamespace(
        id=id,
        kind=kind,
        display_name=id.title(),
        binaries=detect,
        order=order,
        homepage=None,
        install_url=None,
        source="bundled",
        file=f"{id}.toml",
        session_key=None,
        resume=resume,
        lifecycle=lifecycle or {},
        rules=rules,
        launch=SimpleNamespace(
            command=command or (detect[0] if detect else id),
            detect=detect,
            requires=requires,
            args=args,
            prompt=SimpleNamespace(mode=mode, separator=separator, flag=flag, delay_ms=delay_ms),
            bypass_args=bypass_args,
            bypass_env=bypass_env or {},
            continue_args=continue_args,
        ),
    )


def exe(directory: Path, name: str, mode: int = 0o755) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(mode)
    return path


# ---------------------------------------------------------------- find_on_path


def test_finds_executable_in_first_directory_that_has_it(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    exe(b, "tern")
    exe(a, "tern")
    assert launch.find_on_path("tern", f"{a}:{b}") == str(a / "tern")
    assert launch.find_on_path("tern", f"{tmp_path / 'missing'}:{b}") == str(b / "tern")


def test_non_executable_file_is_skipped(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    exe(a, "tern", 0o644)
    assert launch.find_on_path("tern", str(a)) is None
    exe(b, "tern")
    assert launch.find_on_path("tern", f"{a}:{b}") == str(b / "tern")


def test_directory_named_like_the_tool_is_skipped(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "tern").mkdir(parents=True)
    (a / "tern").chmod(0o755)
    assert launch.find_on_path("tern", str(a)) is None
    exe(b, "tern")
    assert launch.find_on_path("tern", f"{a}:{b}") == str(b / "tern")


def test_symlink_to_executable_is_found_and_not_resolved(tmp_path):
    target = exe(tmp_path / "lib" / "pkg", "cli.js")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "tern").symlink_to(target)
    # the link's own path: its basename is what kind detection reads
    assert launch.find_on_path("tern", str(bindir)) == str(bindir / "tern")


def test_dangling_symlink_and_link_to_directory_are_skipped(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "tern").symlink_to(tmp_path / "nowhere")
    (tmp_path / "d").mkdir()
    (bindir / "tern2").symlink_to(tmp_path / "d")
    assert launch.find_on_path("tern", str(bindir)) is None
    assert launch.find_on_path("tern2", str(bindir)) is None


def test_empty_and_relative_path_entries_are_ignored(tmp_path, monkeypatch):
    exe(tmp_path / "rel", "tern")
    monkeypatch.chdir(tmp_path)
    exe(tmp_path, "here")
    assert launch.find_on_path("tern", "rel::.") is None
    assert launch.find_on_path("here", ":.:") is None
    assert launch.find_on_path("tern", f"::{tmp_path / 'rel'}:") == str(tmp_path / "rel" / "tern")


def test_names_with_slash_or_dots_are_never_found(tmp_path):
    exe(tmp_path / "sub", "tern")
    assert launch.find_on_path("sub/tern", str(tmp_path)) is None
    assert launch.find_on_path("", str(tmp_path)) is None
    assert launch.find_on_path("..", str(tmp_path / "sub")) is None
    assert launch.find_on_path("x\x00", str(tmp_path)) is None


def test_path_entry_that_is_a_file_or_unreadable_dir(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    locked = tmp_path / "locked"
    exe(locked, "tern")
    good = tmp_path / "good"
    exe(good, "tern")
    locked.chmod(0)
    try:
        got = launch.find_on_path("tern", f"{f}:{locked}:{good}")
        # root may search a mode-000 directory; anyone else falls through to the next entry
        assert got in (str(locked / "tern"), str(good / "tern"))
        if os.geteuid() != 0:
            assert got == str(good / "tern")
    finally:
        locked.chmod(0o755)


# ---------------------------------------------------------------- installed


def test_first_detect_name_found_wins(tmp_path):
    d = tmp_path / "bin"
    exe(d, "tern-cli")
    e = entry(detect=("tern", "tern-cli", "tern-x"))
    got = launch.installed(e, str(d))
    assert got == launch.Installed(True, "tern-cli", str(d / "tern-cli"), [])
    exe(d, "tern-x")
    assert launch.installed(e, str(d)).command == "tern-cli"
    exe(d, "tern")
    assert launch.installed(e, str(d)).command == "tern"


def test_missing_requires_make_it_not_installed_but_command_is_reported(tmp_path):
    d = tmp_path / "bin"
    exe(d, "tern")
    e = entry(requires=("node", "git"))
    got = launch.installed(e, str(d))
    assert not got.installed
    assert got.command == "tern"
    assert got.path == str(d / "tern")
    assert got.missing_requires == ["node", "git"]
    exe(d, "git")
    assert launch.installed(e, str(d)).missing_requires == ["node"]
    exe(tmp_path / "other", "node")
    assert launch.installed(e, f"{d}:{tmp_path / 'other'}").installed


def test_no_detect_name_found(tmp_path):
    got = launch.installed(entry(), str(tmp_path))
    assert got == launch.Installed(False, None, None, [])


def test_empty_detect_falls_back_to_command(tmp_path):
    exe(tmp_path, "ternctl")
    e = entry(detect=(), command="ternctl")
    assert launch.installed(e, str(tmp_path)).path == str(tmp_path / "ternctl")


def test_cache_is_keyed_by_path_value_and_cleared_on_refresh(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    e = entry()
    cache = launch.DetectionCache()
    assert not cache.get(e, str(a)).installed
    exe(a, "tern")
    assert not cache.get(e, str(a)).installed  # cached until refresh
    cache.clear()
    assert cache.get(e, str(a)).installed
    exe(b, "tern")
    assert cache.get(e, f"{b}:{a}").path == str(b / "tern")  # another PATH value: detected anew
    (b / "tern").unlink()
    assert cache.fresh(e, f"{b}:{a}").path == str(a / "tern")  # launches never trust the cache
    assert cache.get(e, f"{b}:{a}").path == str(a / "tern")


def test_cache_follows_changed_entry_names(tmp_path):
    exe(tmp_path, "tern2")
    cache = launch.DetectionCache()
    assert not cache.get(entry(detect=("tern",)), str(tmp_path)).installed
    assert cache.get(entry(detect=("tern", "tern2")), str(tmp_path)).installed


# ---------------------------------------------------------------- argv building

EXE = "/opt/bin/tern"


def test_argv_mode_plain():
    plan = launch.build_argv(entry(), EXE, prompt="hi there", bypass=None, continue_=None)
    assert plan == launch.LaunchPlan([EXE, "hi there"], {}, None, 3000, [])


def test_argv_mode_with_separator_keeps_prompt_one_element():
    e = entry(mode="argv", separator="--")
    plan = launch.build_argv(e, EXE, prompt="-rf; echo $HOME", bypass=False, continue_=False)
    assert plan.argv == [EXE, "--", "-rf; echo $HOME"]


def test_argv_mode_without_separator_refuses_option_like_prompt():
    with pytest.raises(SignalttyError) as exc:
        launch.build_argv(entry(), EXE, prompt="--help", bypass=None, continue_=None)
    assert exc.value.code == "BAD_PARAMS"
    assert exc.value.details == {"field": "prompt"}


def test_flag_mode():
    e = entry(mode="flag", flag="--prompt")
    plan = launch.build_argv(e, EXE, prompt="fix it\nplease", bypass=None, continue_=None)
    assert plan.argv == [EXE, "--prompt", "fix it\nplease"]
    assert plan.paste is None


def test_after_start_mode_has_no_argv_part():
    e = entry(mode="after-start", delay_ms=1500)
    plan = launch.build_argv(e, EXE, prompt="hello", bypass=None, continue_=None)
    assert plan.argv == [EXE]
    assert plan.paste == "hello"
    assert plan.delay_ms == 1500
    assert launch.paste_bytes("héllo") == "\x1b[200~héllo\x1b[201~".encode()


def test_after_start_prompt_may_not_carry_paste_markers():
    e = entry(mode="after-start")
    for bad in ("a\x1b[201~b", "\x1b[200~x"):
        with pytest.raises(SignalttyError) as exc:
            launch.build_argv(e, EXE, prompt=bad, bypass=None, continue_=None)
        assert exc.value.details == {"field": "prompt"}
    # harmless as one argv element
    assert launch.build_argv(entry(), EXE, prompt="a\x1b[201~", bypass=None, continue_=None).argv[1] == "a\x1b[201~"


def test_no_prompt_no_prompt_part():
    for mode, flag in (("argv", None), ("flag", "-i"), ("after-start", None)):
        plan = launch.build_argv(entry(mode=mode, flag=flag), EXE, prompt=None, bypass=None, continue_=None)
        assert plan.argv == [EXE]
        assert plan.paste is None


def test_full_order_args_bypass_continue_prompt():
    e = entry(
        args=("chat",),
        mode="flag",
        flag="--ask",
        bypass_args=("--auto-approve",),
        bypass_env={"TERN_APPROVAL": "auto"},
        continue_args=("--continue",),
    )
    plan = launch.build_argv(e, EXE, prompt="go", bypass=True, continue_=True)
    assert plan.argv == [EXE, "chat", "--auto-approve", "--continue", "--ask", "go"]
    assert plan.env_add == {"TERN_APPROVAL": "auto"}
    assert plan.launch_prefix == ["--auto-approve"]
    off = launch.build_argv(e, EXE, prompt="go", bypass=False, continue_=False)
    assert off.argv == [EXE, "chat", "--ask", "go"]
    assert off.env_add == {}
    assert off.launch_prefix == []


def test_multi_word_bypass_args_stay_separate_elements():
    e = entry(id="antigravity", bypass_args=("--dangerously-skip-permissions", "--mode", "accept-edits"))
    plan = launch.build_argv(e, EXE, prompt=None, bypass=True, continue_=None)
    assert plan.argv == [EXE, "--dangerously-skip-permissions", "--mode", "accept-edits"]
    assert plan.launch_prefix == ["--dangerously-skip-permissions", "--mode", "accept-edits"]


def test_env_only_bypass_has_empty_launch_prefix():
    e = entry(id="goose", bypass_env={"GOOSE_MODE": "auto"})
    plan = launch.build_argv(e, EXE, prompt=None, bypass=True, continue_=None)
    assert plan.argv == [EXE]
    assert plan.env_add == {"GOOSE_MODE": "auto"}
    assert plan.launch_prefix == []


@pytest.mark.parametrize("key", ["PATH", "SIGNALTTY_PANE", "A=B", ""])
def test_bypass_env_may_not_replace_reserved_variables(key):
    e = entry(bypass_env={key: "x"})
    with pytest.raises(SignalttyError) as exc:
        launch.build_argv(e, EXE, prompt=None, bypass=True, continue_=None)
    assert exc.value.details == {"field": "bypass"}


def test_bypass_default_follows_config_only_for_three_ids():
    flags = ("--yolo",)
    for agent_id in ("claude", "codex", "antigravity"):
        e = entry(id=agent_id, bypass_args=flags)
        assert launch.build_argv(e, EXE, prompt=None, bypass=None, continue_=None, automatic_permissions=True).argv == [EXE, "--yolo"]
        assert launch.build_argv(e, EXE, prompt=None, bypass=None, continue_=None, automatic_permissions=False).argv == [EXE]
        assert launch.build_argv(e, EXE, prompt=None, bypass=False, continue_=None, automatic_permissions=True).argv == [EXE]
    other = entry(id="gemini", bypass_args=flags)
    assert launch.build_argv(other, EXE, prompt=None, bypass=None, continue_=None, automatic_permissions=True).argv == [EXE]
    assert launch.build_argv(other, EXE, prompt=None, bypass=True, continue_=None).argv == [EXE, "--yolo"]
    assert launch.default_bypass("claude", True)
    assert not launch.default_bypass("gemini", True)


def test_default_bypass_on_entry_without_bypass_is_silently_off():
    e = entry(id="claude")  # e.g. a user override that removed the flags
    plan = launch.build_argv(e, EXE, prompt=None, bypass=None, continue_=None, automatic_permissions=True)
    assert plan.argv == [EXE]
    assert plan.launch_prefix == []


def test_explicit_bypass_on_entry_without_bypass_is_an_error():
    with pytest.raises(SignalttyError) as exc:
        launch.build_argv(entry(id="pi"), EXE, prompt=None, bypass=True, continue_=None)
    assert exc.value.code == "BAD_PARAMS"
    assert "no bypass" in exc.value.message
    assert exc.value.details == {"field": "bypass"}


def test_continue_without_continue_args_is_an_error():
    with pytest.raises(SignalttyError) as exc:
        launch.build_argv(entry(), EXE, prompt=None, bypass=None, continue_=True)
    assert exc.value.code == "BAD_PARAMS"
    assert exc.value.details == {"field": "continue"}
    codex = entry(id="codex", continue_args=("resume", "--last"))
    assert launch.build_argv(codex, EXE, prompt=None, bypass=None, continue_=True).argv == [EXE, "resume", "--last"]


@pytest.mark.parametrize(
    ("prompt", "ok"),
    [
        ("x", True),
        ("", False),
        ("a\x00b", False),
        ("é" * (16 * 1024), True),  # 32 KiB in UTF-8 bytes exactly
        ("é" * (16 * 1024) + "x", False),
        ("x" * (32 * 1024 + 1), False),
    ],
)
def test_prompt_limits(prompt, ok):
    for mode in ("argv", "after-start"):
        e = entry(mode=mode)
        if ok:
            launch.build_argv(e, EXE, prompt=prompt, bypass=None, continue_=None)
        else:
            with pytest.raises(SignalttyError) as exc:
                launch.build_argv(e, EXE, prompt=prompt, bypass=None, continue_=None)
            assert exc.value.code == "BAD_PARAMS"
            assert exc.value.details == {"field": "prompt"}


# ---------------------------------------------------------------- agents.catalog rows


def test_catalog_row_shape_and_flags(tmp_path):
    exe(tmp_path, "tern")
    e = entry(continue_args=("--continue",), bypass_env={"A": "b"}, mode="flag", flag="--ask")
    row = launch.catalog_row(e, launch.installed(e, str(tmp_path)))
    assert list(row) == [
        "id", "display_name", "kind", "source", "order", "installed", "command", "path",
        "missing_requires", "homepage", "install_url", "prompt_mode", "can_continue",
        "can_resume", "can_bypass", "integration",
    ]
    assert row["installed"]
    assert row["path"] == str(tmp_path / "tern")
    assert row["prompt_mode"] == "flag"
    assert row["can_continue"]
    assert row["can_bypass"]
    assert not row["can_resume"]
    assert row["integration"] == "none"


def test_integration_and_resume_by_kind():
    assert launch.integration_of(entry(kind="claude")) == "hooks"
    assert launch.integration_of(entry(kind="codex")) == "hooks"
    assert launch.integration_of(entry(kind="cursor")) == "hooks"
    assert launch.integration_of(entry(kind="opencode")) == "plugin"
    assert launch.integration_of(entry(kind="pi", rules=(object(),))) == "screen"
    assert launch.integration_of(entry(kind="generic", lifecycle={"TurnStarted": object()})) == "hooks"
    assert launch.integration_of(entry(kind="generic")) == "none"
    assert launch.can_resume(entry(kind="claude"))
    assert launch.can_resume(entry(kind="generic", resume=("tern", "--resume", "{id}")))
    assert not launch.can_resume(entry(kind="generic"))


def test_catalog_rows_ordered_by_order_then_id(tmp_path):
    entries = [entry("b", order=20), entry("z", order=None), entry("a", order=20), entry("c", order=10), entry("y", order=None)]
    rows = launch.catalog_rows(entries, str(tmp_path), launch.DetectionCache())
    assert [r["id"] for r in rows] == ["c", "a", "b", "y", "z"]


def test_catalog_row_command_when_not_installed():
    row = launch.catalog_row(entry(detect=("tern", "tern-cli")), launch.Installed(False, None, None, []))
    assert row["command"] == "tern"
    assert row["path"] is None
    assert not row["installed"]
    nothing = entry(detect=())
    nothing.launch.command = ""  # an entry that names no program (catalog LaunchSpec)
    assert launch.catalog_row(nothing, launch.Installed(False, None, None, []))["command"] is None


# ---------------------------------------------------------------- the bundled catalog


@pytest.mark.parametrize(
    ("agent_id", "bypass", "expected"),
    [
        # agents.md §4.6, one row each: [detect name, *args, *bypass, prompt part]
        ("claude", True, ["claude", "--dangerously-skip-permissions", "P"]),
        ("codex", True, ["codex", "--dangerously-bypass-approvals-and-sandbox", "P"]),
        ("opencode", False, ["opencode", "--prompt", "P"]),
        ("cursor", True, ["cursor-agent", "--yolo", "P"]),
        ("pi", False, ["pi", "P"]),
        ("gemini", True, ["gemini", "--yolo", "--prompt-interactive", "P"]),
        ("copilot", True, ["copilot", "--yolo", "-i", "P"]),
        ("droid", True, ["droid", "--auto", "high", "P"]),
        ("kilo", False, ["kilo"]),
        ("qodercli", False, ["qodercli", "--prompt-interactive", "P"]),
        ("muse", False, ["muse"]),
        (
            "antigravity",
            True,
            ["agy", "--dangerously-skip-permissions", "--mode", "accept-edits", "-i", "P"],
        ),
        ("grok", True, ["grok", "--yolo", "--", "P"]),
        ("aider", True, ["aider", "--yes-always"]),
        ("goose", False, ["goose"]),
        ("amp", True, ["amp", "--dangerously-allow-all"]),
        ("kiro", True, ["kiro-cli", "chat", "--tui", "--trust-all-tools"]),
        ("crush", True, ["crush", "--yolo"]),
        ("auggie", False, ["auggie"]),
        ("cline", True, ["cline", "--auto-approve", "true"]),
        ("continue", True, ["cn", "--allow", "*"]),
        ("kimi", True, ["kimi", "--yolo"]),
        ("mistral-vibe", True, ["vibe", "--agent", "auto-approve"]),
        ("qwen-code", True, ["qwen", "--approval-mode", "yolo"]),
        ("omp", False, ["omp", "P"]),
        ("hermes", True, ["hermes", "chat", "--yolo", "--query", "P"]),
        ("codebuff", False, ["codebuff"]),
    ],
)
def test_bundled_entries_launch_as_specified(tmp_path, agent_id, bypass, expected):
    catalog_mod = pytest.importorskip("signaltty.agents.catalog")
    e = catalog_mod.load_catalog(None).entry(agent_id)
    assert e is not None, agent_id
    exe(tmp_path, expected[0])
    found = launch.installed(e, str(tmp_path))
    assert found.installed
    assert found.command == expected[0]
    plan = launch.build_argv(e, found.path, prompt="P", bypass=bypass, continue_=None)
    assert plan.argv == [str(tmp_path / expected[0]), *expected[1:]]
    assert (plan.paste == "P") == (e.launch.prompt.mode == "after-start")
    if e.launch.prompt.mode == "after-start":
        assert plan.delay_ms == 3000
    if bypass and agent_id == "goose":
        assert plan.env_add == {"GOOSE_MODE": "auto"}


def test_bundled_continue_args():
    catalog_mod = pytest.importorskip("signaltty.agents.catalog")
    cat = catalog_mod.load_catalog(None)
    have = {e.id: list(e.launch.continue_args) for e in cat.entries() if e.launch.continue_args}
    assert have == {
        "claude": ["--continue"],
        "codex": ["resume", "--last"],
        "opencode": ["--continue"],
        "cursor": ["--continue"],
        "pi": ["--continue"],
        "antigravity": ["--continue"],
    }
