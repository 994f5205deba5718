"""agents.md §3.2: program names, runtimes named after what they run."""

from __future__ import annotations

import pytest

from signaltty.agents.process_name import is_runtime, program_name


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # plain programs
        (["codex"], "codex"),
        (["/usr/local/bin/claude", "--resume", "x"], "claude"),
        (["-bash"], "bash"),  # login shell
        (["-zsh", "-l"], "zsh"),
        (["/bin/-weird"], "weird"),
        (["foo.py"], "foo"),  # a script started directly: named like via its runtime
        (["/bin/bash", "/opt/bin/tern"], "tern"),  # a shebang script as /proc shows it
        (["bash", "-c", "tern"], "bash"),
        (["-zsh"], "zsh"),
        # Nix's makeWrapper (issue 11 item 11)
        (["/nix/store/h-claude-code/bin/.claude-unwrapped", "-p", "x"], "claude"),
        (["node", "/nix/store/h-claude-code/bin/.claude-unwrapped"], "claude"),
        ([".codex-wrapped"], "codex"),
        ([".-wrapped"], ".-wrapped"),
        ([".claude-wrapped-old"], ".claude-wrapped-old"),
        ([], ""),
        ([""], ""),
        # node / nodejs
        (["node", "/usr/lib/node_modules/.bin/gemini", "--yolo"], "gemini"),
        (["/usr/bin/nodejs", "/x/cli.js"], "cli"),
        (["node", "--no-warnings", "/x/copilot.mjs"], "copilot"),
        (["node", "-r", "ts-node/register", "tool.ts"], "tool"),
        (["node", "--require", "x", "--import", "y", "--loader", "z", "app.cjs"], "app"),
        (["node", "--require=x", "app.js"], "app"),
        (["node", "-e", "console.log(1)"], "node"),
        (["node", "-p", "1+1", "ignored.js"], "node"),
        (["node", "--eval", "x"], "node"),
        (["node", "--print", "x"], "node"),
        (["node"], "node"),
        (["node", "--inspect"], "node"),
        (["node", "-"], "node"),  # program from stdin
        (["node", "--", "/opt/pi/dist/cli.js", "-e"], "cli"),
        (["node", "app.js", "-e", "x"], "app"),  # eval after the script is the script's option
        # bun / deno
        (["bun", "run", "/x/opencode.ts"], "opencode"),
        (["bun", "/x/opencode.ts"], "opencode"),
        (["deno", "run", "-A", "main.ts"], "main"),
        (["node", "run", "x.js"], "run"),  # only bun and deno have a run subcommand
        # python
        (["python3", "-m", "aider", "--yes"], "aider"),
        (["python", "-m", "http.server"], "http.server"),
        (["python3.11", "-maider"], "aider"),
        (["python3", "-m"], "python3"),
        (["python3", "-c", "print(1)"], "python3"),
        (["python3", "-cprint(1)"], "python3"),
        (["python3", "-W", "ignore", "-X", "dev", "/usr/bin/droid.py"], "droid"),
        (["python3", "-u", "-B", "script.py", "-m", "x"], "script"),
        (["/usr/bin/python3.12", "/opt/tool/run.py"], "run"),
        (["python2", "x.py"], "python2"),  # not a listed runtime
        (["-python3", "x.py"], "x"),
    ],
)
def test_program_name(argv, expected):
    assert program_name(argv) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("node", True), ("nodejs", True), ("bun", True), ("deno", True), ("python", True),
        ("python3", True), ("python3.11", True), ("python3.", False), ("python2", False),
        ("pythonw", False), ("bash", False), ("", False),
    ],
)  # fmt: skip
def test_is_runtime(name, expected):
    assert is_runtime(name) is expected


def test_accepts_tuples():
    assert program_name(("node", "/x/gemini.js")) == "gemini"


def test_hostile_argv0_is_made_safe_to_show():
    from signaltty.agents.process_name import MAX_PROGRAM_NAME, program_name

    assert program_name(["a\nb\x1b]0;x\x07\u202eevil"]) == "a bevil"
    assert len(program_name(["x" * 100_000])) == MAX_PROGRAM_NAME
    assert program_name(["/usr/bin/nod\udcff"]) == "nod?"
    assert program_name(["node", "/opt/bin/gemini\u200b"]) == "gemini"
