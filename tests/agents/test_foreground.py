"""agents.md §3.3 step 2: the foreground walk on synthetic snapshots (pure)."""

from __future__ import annotations

import pytest

from signaltty.agents.foreground import MAX_DEPTH, foreground_name, foreground_pid, is_shell
from signaltty.system.proctable import ProcInfo, ProcTable


def table(*rows: tuple[int, int, float, str]) -> ProcTable:
    """Rows are ``(pid, ppid, create_time, name)``."""
    return ProcTable.from_rows(ProcInfo(pid, ppid, t, name) for pid, ppid, t, name in rows)


def test_from_rows_builds_the_children_map():
    t = table((10, 1, 1.0, "bash"), (11, 10, 2.0, "vim"), (12, 10, 3.0, "sleep"), (20, 1, 1.5, "zsh"))
    assert t.children[10] == (11, 12)
    assert sorted(t.children[1]) == [10, 20]
    assert 11 not in t.children


def test_non_shell_root_is_the_foreground():
    t = table((10, 1, 1.0, "python3"), (11, 10, 2.0, "node"))
    assert foreground_pid(t, 10) == 10


def test_idle_shell_is_its_own_foreground():
    assert foreground_pid(table((10, 1, 1.0, "bash")), 10) == 10


def test_newest_child_wins():
    t = table(
        (10, 1, 1.0, "bash"),
        (11, 10, 5.0, "vim"),  # newest
        (12, 10, 2.0, "sleep"),  # older background job
        (13, 10, 3.0, "tail"),
    )
    assert foreground_pid(t, 10) == 11


def test_create_time_tie_goes_to_larger_pid():
    t = table((10, 1, 1.0, "bash"), (11, 10, 2.0, "a"), (12, 10, 2.0, "b"))
    assert foreground_pid(t, 10) == 12


def test_walk_goes_through_nested_shells_and_stops_at_first_non_shell():
    t = table(
        (10, 1, 1.0, "bash"),
        (11, 10, 2.0, "sh"),
        (12, 11, 3.0, "zsh"),
        (13, 12, 4.0, "node"),  # the program
        (14, 13, 5.0, "bash"),  # a shell the program runs: not followed
        (15, 14, 6.0, "git"),
    )
    assert foreground_pid(t, 10) == 13


@pytest.mark.parametrize("name", ["-bash", "bash", "/bin/sh", "dash", "fish", "-zsh"])
def test_login_and_path_shells_are_shells(name):
    assert is_shell(name)
    t = table((10, 1, 1.0, name), (11, 10, 2.0, "claude"))
    assert foreground_pid(t, 10) == 11


@pytest.mark.parametrize("name", ["bashful", "python3", "tmux", "ssh", ""])
def test_other_names_are_not_shells(name):
    assert not is_shell(name)


def test_depth_is_capped_at_eight_moves():
    rows = [(100 + i, 99 + i if i else 1, float(i), "bash") for i in range(12)]
    t = table(*rows)
    assert MAX_DEPTH == 8
    assert foreground_pid(t, 100) == 100 + MAX_DEPTH
    # exactly 8 shells below the root then a program: the program is the 8th move
    rows = [(200 + i, 199 + i if i else 1, float(i), "bash") for i in range(MAX_DEPTH)]
    rows.append((200 + MAX_DEPTH, 200 + MAX_DEPTH - 1, 99.0, "claude"))
    assert foreground_pid(table(*rows), 200) == 200 + MAX_DEPTH


def test_missing_root_and_vanished_children():
    t = table((10, 1, 1.0, "bash"))
    assert foreground_pid(t, 999) is None
    # a child listed under the parent but missing from procs is ignored
    t2 = ProcTable({10: ProcInfo(10, 1, 1.0, "bash")}, {10: (11,)})
    assert foreground_pid(t2, 10) == 10


def test_foreground_name_unwraps_runtimes():
    assert foreground_name(["python3", "/tmp/bin/claude"]) == "claude"
    assert foreground_name(["node", "/usr/lib/node_modules/.bin/gemini", "--yolo"]) == "gemini"
    assert foreground_name(["-bash"]) == "bash"
    assert foreground_name(["claude", "-c", "x"]) == "claude"  # exec -a claude python3 -c …
    assert foreground_name([]) is None
    assert foreground_name(None) is None
    assert foreground_name([""]) is None
