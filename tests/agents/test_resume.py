"""agents.md §3.4 resume argv resolution; protocol.md §6 report-session validation."""

from __future__ import annotations

import re

import pytest

from signaltty.agents import resume
from signaltty.agents.adapters import ADAPTERS
from signaltty.agents.resume import (
    anchor_argv0,
    apply_launch_prefix,
    resolve_resume_argv,
    substitute,
    validate_reported_resume_argv,
    validate_session_id,
)
from signaltty.core.model import AgentInfo, Pane

CLAUDE = ["claude", "--resume", "{id}"]
CODEX = ["codex", "resume", "{id}"]
CODEX_YOLO = ["--dangerously-bypass-approvals-and-sandbox"]
CLAUDE_SKIP = ["--dangerously-skip-permissions"]
AGY_PREFIX = ["--dangerously-skip-permissions", "--mode", "accept-edits"]


@pytest.mark.parametrize(
    ("case", "kwargs", "expected"),
    [
        # step 2: template substitution
        (
            "claude bare",
            {"template": CLAUDE, "session_id": "S1", "argv": ["claude"]},
            ["claude", "--resume", "S1"],
        ),
        (
            "alias",
            {"template": ["x", "--session={session_id}"], "session_id": "S"},
            ["x", "--session=S"],
        ),
        ("no id", {"template": CLAUDE, "session_id": None, "argv": ["claude"]}, None),
        ("no template", {"template": None, "session_id": "S"}, None),
        ("empty template", {"template": [], "session_id": "S"}, None),
        # step 3: absolute template is authoritative
        (
            "abs template",
            {
                "template": ["/opt/x/muse", "--resume", "{id}"],
                "session_id": "S",
                "argv": ["/usr/bin/muse"],
            },
            ["/opt/x/muse", "--resume", "S"],
        ),
        # step 4: path-qualified launch keeps its path
        (
            "abs path",
            {"template": CODEX, "session_id": "S", "argv": ["/opt/tools/codex", "--yolo"]},
            ["/opt/tools/codex", "resume", "S"],
        ),
        (
            "other basename",
            {"template": CODEX, "session_id": "S", "argv": ["/opt/tools/codex-wrapper"]},
            ["codex", "resume", "S"],
        ),
        (
            "shell pane",
            {"template": CODEX, "session_id": "S", "argv": ["/bin/bash"]},
            ["codex", "resume", "S"],
        ),
        (
            "relative anchored",
            {
                "template": CODEX,
                "session_id": "S",
                "argv": ["./bin/codex"],
                "launch_cwd": "/home/u/p",
            },
            ["/home/u/p/bin/codex", "resume", "S"],
        ),
        (
            "relative dotdot",
            {
                "template": CODEX,
                "session_id": "S",
                "argv": ["../t/codex"],
                "launch_cwd": "/home/u/p",
            },
            ["/home/u/t/codex", "resume", "S"],
        ),
        # step 5: legacy relative argv[0] without launch_cwd → bare command
        (
            "legacy relative",
            {"template": CODEX, "session_id": "S", "argv": ["./bin/codex"], "launch_cwd": ""},
            ["codex", "resume", "S"],
        ),
        (
            "legacy relative none",
            {"template": CODEX, "session_id": "S", "argv": ["bin/codex"]},
            ["codex", "resume", "S"],
        ),
        ("no argv", {"template": CODEX, "session_id": "S", "argv": []}, ["codex", "resume", "S"]),
        # step 6: launch prefix exactly once on standard commands
        (
            "codex prefix",
            {"template": CODEX, "session_id": "S", "argv": ["codex"], "launch_prefix": CODEX_YOLO},
            ["codex", *CODEX_YOLO, "resume", "S"],
        ),
        (
            "claude prefix",
            {
                "template": CLAUDE,
                "session_id": "S",
                "argv": ["/x/claude"],
                "launch_prefix": CLAUDE_SKIP,
            },
            ["/x/claude", *CLAUDE_SKIP, "--resume", "S"],
        ),
        (
            "non-standard",
            {
                "template": ["opencode", "--session", "{id}"],
                "session_id": "S",
                "launch_prefix": CLAUDE_SKIP,
            },
            ["opencode", "--session", "S"],
        ),
        # step 1: reported argv wins, used as reported (+ prefix on standard commands)
        (
            "reported",
            {"template": CLAUDE, "session_id": "S", "reported": ["muse", "resume", "S"]},
            ["muse", "resume", "S"],
        ),
        (
            "reported agy",
            {
                "template": None,
                "session_id": "C",
                "reported": ["agy", "--conversation", "C"],
                "launch_prefix": AGY_PREFIX,
            },
            ["agy", *AGY_PREFIX, "--conversation", "C"],
        ),
        (
            "reported antigravity-cli",
            {
                "template": None,
                "session_id": "C",
                "reported": ["antigravity-cli", "--conversation=C"],
                "launch_prefix": AGY_PREFIX,
            },
            ["antigravity-cli", *AGY_PREFIX, "--conversation=C"],
        ),
        (
            "reported not path-rewritten",
            {
                "template": CODEX,
                "session_id": "S",
                "argv": ["/opt/codex"],
                "reported": ["codex", "resume", "S"],
            },
            ["codex", "resume", "S"],
        ),
        # step 7: other launch flags are never copied
        (
            "flags dropped",
            {"template": CLAUDE, "session_id": "S", "argv": ["claude", "--model", "opus", "-p"]},
            ["claude", "--resume", "S"],
        ),
    ],
)
def test_resolve_resume_argv(case, kwargs, expected):
    template = kwargs.pop("template")
    session_id = kwargs.pop("session_id")
    assert resolve_resume_argv(template, session_id, **kwargs) == expected, case


@pytest.mark.parametrize(
    ("argv", "prefix", "expected"),
    [
        (["codex", "resume", "S"], CODEX_YOLO, ["codex", *CODEX_YOLO, "resume", "S"]),
        (
            ["codex", *CODEX_YOLO, "resume", "S"],
            CODEX_YOLO,
            ["codex", *CODEX_YOLO, "resume", "S"],
        ),  # once
        (
            ["codex", "--yolo", "resume", "S"],
            ["--yolo", "--x"],
            ["codex", "--yolo", "resume", "S"],
        ),  # any token present
        (["codex", "resume"], CODEX_YOLO, ["codex", "resume"]),  # no id: not standard
        (["codex", "exec", "S"], CODEX_YOLO, ["codex", "exec", "S"]),
        (["claude", "--resume=S"], CLAUDE_SKIP, ["claude", *CLAUDE_SKIP, "--resume=S"]),
        (["claude", "--resume="], CLAUDE_SKIP, ["claude", "--resume="]),
        (["claude", "-c"], CLAUDE_SKIP, ["claude", "-c"]),
        (
            ["antigravity", "--conversation", "C"],
            AGY_PREFIX,
            ["antigravity", *AGY_PREFIX, "--conversation", "C"],
        ),
        (
            ["/abs/agy", "--conversation", "C"],
            AGY_PREFIX,
            ["/abs/agy", *AGY_PREFIX, "--conversation", "C"],
        ),
        (
            ["agy", "--conversation", "C", "--mode", "plan"],
            AGY_PREFIX,
            ["agy", "--conversation", "C", "--mode", "plan"],
        ),
        (["claude", "--resume", "S"], [], ["claude", "--resume", "S"]),
        ([], CLAUDE_SKIP, []),
    ],
)
def test_apply_launch_prefix(argv, prefix, expected):
    assert apply_launch_prefix(argv, prefix) == expected


@pytest.mark.parametrize(
    ("argv", "cwd", "expected"),
    [
        (["./codex", "x"], "/w", ["/w/codex", "x"]),
        (["bin/codex"], "/w/p", ["/w/p/bin/codex"]),
        (["../codex"], "/w/p", ["/w/codex"]),
        (["codex"], "/w", ["codex"]),  # bare: looked up on PATH
        (["/abs/codex"], "/w", ["/abs/codex"]),
        (["./codex"], "relative", ["./codex"]),
        ([], "/w", []),
    ],
)
def test_anchor_argv0(argv, cwd, expected):
    assert anchor_argv0(argv, cwd) == expected


def test_substitute_does_not_touch_template():
    template = ("claude", "--resume", "{id}")
    assert substitute(template, "S") == ["claude", "--resume", "S"]
    assert template == ("claude", "--resume", "{id}")


def _pane(argv, *, launch_cwd="/w", **agent) -> Pane:
    return Pane(
        id="pane_1", workspace_id="ws_1", argv=argv, cwd=launch_cwd, launch_cwd=launch_cwd,
        created_at=0.0, last_activity_at=0.0, agent=AgentInfo(**agent),
    )  # fmt: skip


def test_resolve_from_pane_adapter():
    pane = _pane(["/opt/tools/codex"], kind="codex", launch_prefix=CODEX_YOLO)
    assert resume.resolve(pane, ADAPTERS["codex"], "S") == [
        "/opt/tools/codex",
        *CODEX_YOLO,
        "resume",
        "S",
    ]
    assert resume.resolve(pane, ADAPTERS["generic"], "S") is None
    assert resume.resolve(pane, ADAPTERS["codex"], None) is None


def test_resolve_from_pane_repairs_old_bare_command():
    pane = _pane(
        ["/opt/tools/codex"],
        kind="codex",
        agent_session_id="S",
        resume_argv=["codex", "resume", "S"],
        resume_source="adapter",
    )
    assert resume.resolve(pane, ADAPTERS["codex"], "S") == ["/opt/tools/codex", "resume", "S"]


def test_resolve_from_pane_never_reuses_a_reported_argv():
    # issue 10 follow-up: a stored reported argv (an older snapshot) is never run; the
    # template decides, and an agent without one is not resumable
    reported = ["muse", "resume", "S"]
    pane = _pane(
        ["muse"],
        kind="generic",
        agent_session_id="S",
        resume_argv=reported,
        resume_source="reported",
    )
    assert resume.resolve(pane, ADAPTERS["generic"], "S") is None
    assert resume.resolve(pane, ADAPTERS["claude"], "S") == ["claude", "--resume", "S"]
    assert resume.resolve(pane, ADAPTERS["claude"], "S2") == ["claude", "--resume", "S2"]


@pytest.mark.parametrize(
    ("reported", "ok"),
    [
        (["claude", "--resume", "S"], True),
        (["/opt/bin/claude", "--resume", "S"], True),
        (["claude", "--dangerously-skip-permissions", "--resume", "S"], False),
        (["claude", "--resume", "S", "--dangerously-skip-permissions"], False),
        (["sh", "-c", "claude --resume S"], False),
        (["claude", "--resume", "T"], False),
        (["claude"], False),
    ],
)
def test_matches_template(reported, ok):
    assert resume.matches_template(reported, ["claude", "--resume", "S"]) is ok
    assert resume.matches_template(reported, None) is False


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "argv",
    [
        ["agy", "--conversation", "ID"],
        ["muse-bin_2.x", "resume", ""],
        ["a", *(["x"] * 63)],
        ["a", "x" * 8191],
        ["claude", "--resume", "ünïcode"],
    ],
)
def test_reported_resume_argv_accepted(argv):
    out = validate_reported_resume_argv(argv)
    assert out == argv
    assert out is not argv


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (None, "non-empty array"),
        ("agy --conversation x", "non-empty array"),
        ([], "non-empty array"),
        (["agy", 3], "only strings"),
        (["a", *(["x"] * 64)], "65 arguments"),
        (["a", "x" * 8192], "8193 bytes"),
        (["a", "é" * 4096], "8193 bytes"),
        (["agy", "a\nb"], "resume_argv[1] contains a control character"),
        (["agy", "a\x1b[0m"], "control character"),
        (["agy", "a\x7f"], "control character"),
        (["agy", "a\x85"], "control character"),
        (["/usr/bin/agy"], "bare command name"),
        (["-agy"], "bare command name"),
        (["agy x"], "bare command name"),
        ([""], "bare command name"),
        (["ágy"], "bare command name"),
    ],
)
def test_reported_resume_argv_rejected(argv, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        validate_reported_resume_argv(argv)


@pytest.mark.parametrize(
    "value",
    ["S", "x" * 128, "ses_dd48edc05ffeWB7b8Hs560gm76", "8d27a2e7-b7c5-4958-9786-6f1975e1e647", "a.b:c-d_e"],
)
def test_session_id_accepted(value):
    assert validate_session_id(value) == value


# issue 10 item 4: an id is one operand of the resume argv, never an option.
@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (None, "not a string"),
        (5, "not a string"),
        ("", "empty"),
        ("x" * 129, "longer than 128"),
        ("   ", "whitespace"),
        ("a b", "whitespace"),
        ("a\tb", "whitespace"),
        ("a\x00", "control character"),
        ("a\u202eb", "control character"),
        ("a\ud800", "control character"),
        ("--dangerously-skip-permissions", "starts with '-'"),
        ("-c", "starts with '-'"),
        ("ü", "grammar"),
        ("a/b", "grammar"),
        ("_x", "grammar"),
    ],
)
def test_session_id_rejected(value, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        validate_session_id(value)
