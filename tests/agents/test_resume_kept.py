"""Which launch options a resume keeps, and which session directories it may use (issue 11
item 11). The daemon-level proof is tests/server/test_resume_fidelity.py."""

from __future__ import annotations

import pytest

from signaltty.agents.launch import typed_bypass
from signaltty.agents.resume import kept_options, options_of_process, usable_cwd

BYPASS = ("--dangerously-skip-permissions",)


@pytest.mark.parametrize(("argv", "program", "expected"), [
    (["claude", "--model", "opus"], "claude", ["--model", "opus"]),
    (["/opt/bin/claude", "--model=opus[1m]", "-p"], "claude", ["--model", "opus[1m]"]),
    (["claude", "--model", "a", "--model", "b"], "claude", ["--model", "b"]),  # last wins
    (["claude", "--model"], "claude", []),  # no value
    (["claude", "--model", "--dangerously-skip-permissions"], "claude", []),
    (["claude", "--model", "x\u202ey"], "claude", []),  # a bidi override
    (["claude", "--model", "m" * 201], "claude", []),
    (["claude", "--", "--model", "x"], "claude", []),
    (["claude", "-m", "x"], "claude", []),  # claude has no -m
    (["codex", "-m", "gpt-5", "--full-auto"], "codex", ["-m", "gpt-5"]),
    (["pi", "--model", "m", "--provider", "p"], "pi", ["--provider", "p", "--model", "m"]),
    (["opencode", "-m", "anthropic/claude-sonnet-4"], "opencode", ["-m", "anthropic/claude-sonnet-4"]),
    (["bash", "--model", "x"], "claude", []),  # a shell pane's argv says nothing
    (["claude", "--model", "x"], "agy", []),  # nothing kept for this program
])
def test_kept_options(argv: list[str], program: str, expected: list[str]) -> None:
    assert kept_options(argv, program) == expected


def test_options_of_a_process_under_its_runtime() -> None:
    line = ["node", "/usr/lib/node_modules/.bin/claude", "--model", "sonnet", "hi"]
    assert options_of_process(line, "claude") == ["--model", "sonnet"]
    assert options_of_process(["/nix/store/x/bin/.claude-wrapped", "--model", "s"], "claude") == [
        "--model", "s"]
    assert options_of_process(["node", "/x/gemini", "--model", "s"], "claude") == []
    assert options_of_process([], "claude") == []


@pytest.mark.parametrize(("value", "ok"), [
    ("/home/me/project", True),
    ("relative", False),
    ("/tmp/a\nb", False),
    ("/tmp/\x1b[2J", False),
    ("/tmp/\udcff", False),  # not UTF-8: clients could not be told
    ("/" + "a" * 5000, False),
    (["/tmp"], False),
    (None, False),
])
def test_usable_cwd(value: object, ok: bool) -> None:
    assert usable_cwd(value) == (value if ok else None)


@pytest.mark.parametrize(("argv", "expected"), [
    (["claude", "--dangerously-skip-permissions"], list(BYPASS)),
    (["claude", "--model", "x", "--dangerously-skip-permissions"], list(BYPASS)),
    (["claude", "--", "--dangerously-skip-permissions"], []),  # a prompt, not a flag
    (["claude"], []),
])
def test_typed_bypass(argv: list[str], expected: list[str]) -> None:
    assert typed_bypass(BYPASS, argv) == expected
    assert typed_bypass((), argv) == []


def test_kept_options_go_after_the_launch_prefix() -> None:
    from signaltty.agents.resume import resolve_resume_argv

    yolo = ["--dangerously-bypass-approvals-and-sandbox"]
    argv = resolve_resume_argv(["codex", "resume", "{id}"], "S", argv=["/opt/codex", "-m", "o3"],
                               launch_prefix=yolo, kept=kept_options(["/opt/codex", "-m", "o3"], "codex"))
    assert argv == ["/opt/codex", *yolo, "-m", "o3", "resume", "S"]
