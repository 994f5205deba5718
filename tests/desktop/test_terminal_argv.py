"""Which terminal a notification click starts, and with which argv (issue 13 item 6).

``terminal_argv`` is pure but for ``which``; the fallbacks are looked up with the real
``shutil.which`` on a PATH made of real files in a temp dir.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import stat
import sys
from pathlib import Path

import pytest

from signaltty.desktop import terminal as T

PANE = "pane_" + "3f" * 16
SOCK = "/run/user/1/signaltty/signaltty.sock"
ATTACH = ["/venv/bin/signaltty", "--socket", SOCK, "pane", "attach", PANE]


def _path_with(tmp_path: Path, *programs: str):
    for name in programs:
        exe = tmp_path / name
        exe.write_text("#!/bin/sh\n")
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return functools.partial(shutil.which, path=str(tmp_path))


def test_configured_argv_gets_the_attach_command_appended():
    got = T.terminal_argv(["foot", "--title", "signaltty {pane}"], ATTACH, PANE, env={})
    assert got == T.Launch(["foot", "--title", f"signaltty {PANE}", *ATTACH], "config")


def test_attach_placeholder_is_spliced_where_it_stands():
    conf = ["tmux", "new-window", "-n", "{pane}", "{attach}", ";", "select-layout", "tiled"]
    got = T.terminal_argv(conf, ATTACH, PANE, env={"TERMINAL": "xterm"})
    assert got.argv == ["tmux", "new-window", "-n", PANE, *ATTACH, ";", "select-layout", "tiled"]
    assert got.source == "config"  # the config wins over $TERMINAL


def test_terminal_variable_then_fallbacks_in_order(tmp_path):
    which = _path_with(tmp_path, "xdg-terminal-exec", "x-terminal-emulator")
    env = {"TERMINAL": "alacritty --class sig"}
    got = T.terminal_argv(None, ATTACH, PANE, env=env, which=which)
    assert got == T.Launch(["alacritty", "--class", "sig", "-e", *ATTACH], "$TERMINAL")
    got = T.terminal_argv(None, ATTACH, PANE, env={"TERMINAL": "  "}, which=which)
    assert got == T.Launch([str(tmp_path / "xdg-terminal-exec"), *ATTACH], "xdg-terminal-exec")
    (tmp_path / "xdg-terminal-exec").unlink()
    got = T.terminal_argv(None, ATTACH, PANE, env={}, which=which)
    assert got.argv == [str(tmp_path / "x-terminal-emulator"), "-e", *ATTACH]


def test_no_terminal_anywhere_says_what_to_set(tmp_path):
    with pytest.raises(T.NoTerminal, match=r"\[desktop\] terminal"):
        T.terminal_argv(None, ATTACH, PANE, env={}, which=_path_with(tmp_path))


def test_macos_uses_terminal_app_with_every_word_quoted():
    attach = ["/Users/a b/venv/bin/signaltty", "--socket", '/tmp/x"y\\z', "pane", "attach", PANE]
    got = T.terminal_argv(None, attach, PANE, env={}, platform="darwin")
    assert got.source == "macos"
    assert got.argv[0] == "osascript"
    script = got.argv[2]
    assert script.startswith('tell application "Terminal" to do script "')
    # undo the AppleScript string escaping: the shell line splits back into the exact argv
    literal = script.removeprefix('tell application "Terminal" to do script "')[:-1]
    line = literal.replace('\\"', '"').replace("\\\\", "\\")
    assert shlex.split(line) == attach
    assert got.argv[3:] == ["-e", 'tell application "Terminal" to activate']


@pytest.mark.parametrize("bad", ["-e", "pane_1 ; rm -rf ~", "", "pane_\n", "$(id)", "a" * 200])
def test_pane_ids_are_checked_before_any_argv_is_built(bad):
    with pytest.raises(ValueError, match="not a pane id"):
        T.attach_argv(bad, "/run/s.sock")


def test_attach_argv_uses_the_daemons_own_signaltty(tmp_path):
    python = tmp_path / "python3"
    got = T.attach_argv(PANE, "/s.sock", str(python))
    assert got == [str(python), "-m", "signaltty", "--socket", "/s.sock", "pane", "attach", PANE]
    script = tmp_path / "signaltty"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert T.attach_argv(PANE, "/s.sock", str(python))[0] == str(script)
    assert T.attach_argv(PANE, "/s.sock")[0] in (
        str(Path(sys.executable).parent / "signaltty"),
        sys.executable,
    )


def test_service_manager_variables_do_not_reach_the_terminal():
    env = {
        "DISPLAY": ":0",
        "NOTIFY_SOCKET": "/run/systemd/notify",
        "WATCHDOG_USEC": "30000000",
        "SIGNALTTY_SOCKET": "/elsewhere.sock",
        "PATH": os.defpath,
    }
    assert T.terminal_env(env) == {"DISPLAY": ":0", "PATH": os.defpath}
