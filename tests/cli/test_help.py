"""Every command and action explains itself (issue 13 §2): ``--help`` of each command lists
all of its actions with a line of help, and the hook fast path answers ``--help`` too."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from signaltty.cli.main import build_parser

PY = sys.executable


def _groups(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, {action name: help}) for every parser that has sub-actions."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            yield path, set(action.choices), helps
            for name, child in action.choices.items():
                yield from _groups(child, (*path, name))


GROUPS = list(_groups(build_parser()))


def test_the_tree_is_walked():
    paths = {g[0] for g in GROUPS}
    assert {(), ("pane",), ("workspace",), ("decision",), ("permission",)} <= paths


@pytest.mark.parametrize(("path", "names", "helps"), GROUPS, ids=[" ".join(g[0]) or "top" for g in GROUPS])
def test_help_lists_every_action(path, names, helps):
    missing = sorted(n for n in names if not helps.get(n))
    assert not missing, f"actions of `signaltty {' '.join(path)}` without help: {missing}"
    r = subprocess.run([PY, "-m", "signaltty", *path, "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    listed = {line.split()[0] for line in r.stdout.splitlines() if line.startswith("    ") and line.split()}
    assert names <= listed, sorted(names - listed)


@pytest.mark.parametrize("command", ["hook-event", "report-session"])
def test_fast_path_help(command):
    for argv in ([command, "--help"], ["--json", command, "-h"]):
        r = subprocess.run([PY, "-m", "signaltty", *argv], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r
        assert r.stdout.startswith(f"usage: signaltty {command}"), r
