"""integrations.md §3.1: Codex --no-daemon classification, insertion and the bounded probe."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from signaltty.agents import codex_runtime as cr
from signaltty.agents.codex_runtime import (
    NOTICE_REMOTE,
    NOTICE_UNKNOWN,
    NOTICE_UNSUPPORTED,
    Plan,
    classify_argv,
    plan,
    probe_no_daemon,
    with_no_daemon,
)


@pytest.mark.parametrize(
    ("args", "kind"),
    [
        # interactive: no subcommand, resume, fork
        ([], "interactive"),
        (["fix the tests"], "interactive"),
        (["--full-auto", "fix"], "interactive"),
        (["-m", "o3", "-c", "model_reasoning_effort=high", "fix"], "interactive"),
        (["--model=o3", "-mo3", "--cd", "/w", "-C", "/w"], "interactive"),
        (["--dangerously-bypass-approvals-and-sandbox", "resume", "S"], "interactive"),
        (
            ["--yolo", "--search", "--no-alt-screen", "--oss", "--local-provider", "ollama"],
            "interactive",
        ),
        (
            ["-s", "read-only", "-a", "on-request", "-p", "work", "-i", "x.png", "--add-dir", "/d"],
            "interactive",
        ),
        (["--enable", "f", "--disable", "g", "--dangerously-bypass-hook-trust"], "interactive"),
        (["resume", "--last"], "interactive"),
        (["fork", "--last"], "interactive"),
        (["--", "exec"], "interactive"),  # after --, "exec" is the prompt
        (["-m", "exec"], "interactive"),  # option value, not a subcommand
        # utility
        *[
            ([sub], "utility")
            for sub in (
                "exec",
                "e",
                "review",
                "app-server",
                "mcp",
                "mcp-server",
                "login",
                "logout",
                "completion",
                "apply",
                "a",
                "sandbox",
                "debug",
                "cloud",
                "features",
                "help",
                "--help",
                "-h",
                "--version",
                "-V",
            )
        ],
        (["-m", "o3", "exec", "hi"], "utility"),
        (["exec", "resume", "S"], "utility"),
        # remote
        (["--remote", "ws://h:1"], "remote"),
        (["--remote=ws://h:1", "resume", "S"], "remote"),
        (["resume", "S", "--remote", "x"], "remote"),
        (["exec", "--remote", "x"], "remote"),
        # unknown option before the subcommand
        (["--frobnicate", "resume"], "unknown"),
        (["-Z"], "unknown"),
        (["--unknown=1"], "unknown"),
        # already present
        (["--no-daemon"], "already"),
        (["resume", "--no-daemon", "S"], "already"),
        (["--no-daemon", "--remote", "x"], "already"),
    ],
)
def test_classify(args, kind):
    inv = classify_argv(["codex", *args])
    assert inv.kind == kind
    assert inv.notice == {"remote": NOTICE_REMOTE, "unknown": NOTICE_UNKNOWN}.get(kind)


def test_prompt_mentioning_remote_is_not_remote():
    assert classify_argv(["codex", "fix --remote handling"]).kind == "interactive"
    assert classify_argv(["codex", "--", "--remote"]).kind == "interactive"


def test_with_no_daemon_inserts_after_argv0():
    argv = ["/opt/codex", "resume", "S"]
    assert with_no_daemon(argv) == ["/opt/codex", "--no-daemon", "resume", "S"]
    assert argv == ["/opt/codex", "resume", "S"]


@pytest.mark.parametrize(
    ("argv", "supported", "expected", "probed"),
    [
        (["codex"], True, Plan(["codex", "--no-daemon"]), True),
        (["codex", "resume", "S"], True, Plan(["codex", "--no-daemon", "resume", "S"]), True),
        (["codex", "resume", "S"], False, Plan(["codex", "resume", "S"], NOTICE_UNSUPPORTED), True),
        (["codex", "exec", "x"], True, Plan(["codex", "exec", "x"]), False),
        (["codex", "--remote", "u"], True, Plan(["codex", "--remote", "u"], NOTICE_REMOTE), False),
        (["codex", "--bogus"], True, Plan(["codex", "--bogus"], NOTICE_UNKNOWN), False),
        (["codex", "--no-daemon"], True, Plan(["codex", "--no-daemon"]), False),
    ],
)
def test_plan(argv, supported, expected, probed):
    calls = []

    def probe() -> bool:
        calls.append(1)
        return supported

    stored = list(argv)
    assert plan(argv, probe) == expected
    assert argv == stored  # the stored argv is unchanged
    assert bool(calls) is probed


# ---------------------------------------------------------------- probe with fake codex scripts


@pytest.fixture(autouse=True)
def _fresh_cache():
    cr.clear_probe_cache()
    yield
    cr.clear_probe_cache()


def fake_codex(tmp_path: Path, body: str, name: str = "codex") -> Path:
    """A shell script standing in for codex; it appends its argv to calls.log."""
    path = tmp_path / name
    log = tmp_path / "calls.log"
    path.write_text(f'#!/bin/sh\necho "$@" >> {log}\n{body}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_probe_supported_and_cached(tmp_path):
    exe = fake_codex(tmp_path, 'case "$1" in --no-daemon) exit 0;; esac; exit 2')
    assert probe_no_daemon(str(exe)) is True
    assert probe_no_daemon(str(exe)) is True
    assert calls(tmp_path) == ["--no-daemon --version"]


def test_probe_unsupported_is_cached(tmp_path):
    exe = fake_codex(tmp_path, "echo 'error: unexpected argument' >&2; exit 2")
    assert probe_no_daemon(str(exe)) is False
    assert probe_no_daemon(str(exe)) is False
    assert len(calls(tmp_path)) == 1


def test_probe_cache_key_follows_real_path_and_mtime(tmp_path):
    exe = fake_codex(tmp_path, "exit 2")
    link = tmp_path / "codex-link"
    link.symlink_to(exe)
    assert probe_no_daemon(str(link)) is False
    assert probe_no_daemon(str(exe)) is False  # same real path: cached
    assert len(calls(tmp_path)) == 1
    # an upgrade (new content, new mtime) is probed again
    fake_codex(tmp_path, "exit 0")
    st = exe.stat()
    os.utime(exe, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert probe_no_daemon(str(link)) is True
    assert len(calls(tmp_path)) == 2


def test_probe_timeout_kills_process_group(tmp_path):
    marker = tmp_path / "child.pid"
    exe = fake_codex(tmp_path, f"sleep 30 & echo $! > {marker}; wait")
    start = time.monotonic()
    assert probe_no_daemon(str(exe), timeout_s=0.3) is False
    assert time.monotonic() - start < 3
    # the grandchild in the probe's process group was killed too
    deadline = time.monotonic() + 3
    pid = int(marker.read_text())
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.02)
    assert not _alive(pid)
    # a timeout is not cached
    assert probe_no_daemon(str(exe), timeout_s=0.3) is False
    assert len(calls(tmp_path)) == 2


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_probe_runs_with_null_stdio(tmp_path):
    exe = fake_codex(tmp_path, "read line && exit 3; [ -t 1 ] && exit 4; exit 0")
    assert probe_no_daemon(str(exe)) is True  # stdin at EOF, stdout not a tty


@pytest.mark.parametrize("make", ["missing", "not_executable", "directory"])
def test_probe_failures_answer_false(tmp_path, make):
    path = tmp_path / "codex"
    if make == "not_executable":
        path.write_text("#!/bin/sh\nexit 0\n")
    elif make == "directory":
        path.mkdir()
    assert probe_no_daemon(str(path)) is False
