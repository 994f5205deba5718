"""``signaltty hosts add|list|remove`` and the other commands across watched hosts (issue 16
item 3), through the real console entry point.

The config edits run on real files in a temp ``$XDG_CONFIG_HOME``: the person's comments and
layout stay byte for byte outside the table edited, the file keeps its mode, and whatever is
refused (a bad name or target, an unparsable file, a name already there) leaves the bytes as
they were. With daemons: two real ones and a stand-in ssh running the real ``signaltty
bridge`` (as tests/server/test_watched_hosts.py), so ``hosts add`` reaches the running local
daemon, which connects, and ``hosts list``, ``status``, ``pane list``, ``attention``,
``permission list`` and ``status --format`` show the remote pane under ``devbox/…``;
``permission answer devbox/<short id> allow`` is obeyed by the remote agent's reporter, and
``top`` on a real PTY shows the remote pane, says on Enter which ``--host`` command attaches,
answers its prompt with ``a`` ``y``, and shows the host unreachable once its daemon stops.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DaemonProc, wait_until
from tests.server.test_reporter_verdicts import Reporter, _claude_pane, _pending, _verdict
from tests.server.test_watched_hosts import stand_in_ssh

MINE = """\
# my signaltty settings
[server]
stuck_recovery_s = 30   # tuned by hand

# the boxes I watch
[hosts.old]
target = "me@old"  # the old box

[logging]
level = "debug"
"""


def _config(d: DaemonProc) -> Path:
    return d.root / "config" / "signaltty" / "config.toml"


@pytest.fixture
def offline(tmp_root: Path) -> DaemonProc:
    """A daemon environment whose daemon is not started (the CLI finds none)."""
    d = DaemonProc(tmp_root)
    d.write_config(MINE)
    os.chmod(_config(d), 0o640)
    return d


def test_add_then_remove_keeps_the_persons_file(offline: DaemonProc) -> None:
    path = _config(offline)
    r = offline.cli("hosts", "add", "devbox", "me@devbox", "--remote-socket", "/run/s.sock")
    assert r.returncode == 0, r.stderr
    assert "the daemon will watch it when it starts" in r.stdout
    new = '[hosts.devbox]\ntarget = "me@devbox"\nsocket = "/run/s.sock"\n\n'
    # the new table after the person's own, every byte of theirs kept around it
    assert path.read_text() == MINE.replace("[logging]", new + "[logging]")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    listed = offline.cli("--json", "hosts", "list")
    assert listed.returncode == 0, listed.stderr
    names = [h["name"] for h in json.loads(listed.stdout)["hosts"]]
    assert names == ["old", "devbox"]
    r = offline.cli("hosts", "remove", "devbox")
    assert r.returncode == 0, r.stderr
    assert path.read_text() == MINE
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_replace_and_remove_the_persons_own_entry(offline: DaemonProc) -> None:
    path = _config(offline)
    refused = offline.cli("hosts", "add", "old", "me@new")
    assert refused.returncode == 1
    assert "--replace" in refused.stderr
    assert path.read_text() == MINE
    r = offline.cli("hosts", "add", "old", "me@new", "--replace")
    assert r.returncode == 0, r.stderr
    assert path.read_text() == MINE.replace(
        'target = "me@old"  # the old box\n', 'target = "me@new"\n'
    )
    r = offline.cli("hosts", "remove", "old")
    assert r.returncode == 0, r.stderr
    assert "[hosts" not in path.read_text()
    assert path.read_text().startswith(
        "# my signaltty settings\n[server]\nstuck_recovery_s = 30   # tuned by hand\n"
    )


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["add", "--", "-bad", "x"], 2, "bad host name"),
        (["add", ".dot", "x"], 2, "bad host name"),
        (["add", "de/vbox", "me@devbox"], 2, "bad host name"),
        (["add", "devbox", "--", "-oProxyCommand=sh"], 2, "starts with '-'"),
        (["add", "devbox", "me@dev box"], 2, "bad ssh target"),
        (["add", "devbox", "me@devbox", "--remote-socket", "run/s.sock"], 2, "absolute"),
        (["remove", "nosuch"], 1, "no watched host nosuch"),
        (["--host", "devbox", "hosts", "list"], 2, "--host does not apply"),
    ],
)
def test_bad_input_changes_nothing(
    offline: DaemonProc, argv: list[str], code: int, says: str
) -> None:
    full = argv if argv[0].startswith("--") else ["hosts", *argv]
    r = offline.cli(*full)
    assert r.returncode == code, (r.stdout, r.stderr)
    assert says in r.stderr
    assert _config(offline).read_text() == MINE


def test_an_unparsable_file_is_left_alone(offline: DaemonProc) -> None:
    broken = MINE + "[hosts\n"
    _config(offline).write_text(broken)
    for argv in (["add", "devbox", "me@devbox"], ["remove", "old"]):
        r = offline.cli("hosts", *argv)
        assert r.returncode == 1, r.stderr
        assert "not valid TOML" in r.stderr
        assert _config(offline).read_text() == broken


def test_a_daemon_reading_another_file_is_told_apart(tmp_root: Path) -> None:
    d = DaemonProc(tmp_root)
    other = tmp_root / "other.toml"
    other.write_text("")
    d.start("--config", str(other))
    try:
        r = d.cli("hosts", "add", "devbox", "me@devbox")
        assert r.returncode == 1
        assert "reads another config file" in r.stderr
        assert 'target = "me@devbox"' in _config(d).read_text()
    finally:
        d.stop()
        assert not d.kill_leftovers()


@pytest.fixture
def pair() -> Iterator[tuple[DaemonProc, DaemonProc]]:
    with (
        tempfile.TemporaryDirectory(prefix="rh-", dir="/tmp") as a,
        tempfile.TemporaryDirectory(prefix="lh-", dir="/tmp") as b,
    ):
        remote = DaemonProc(Path(a))
        remote.start()
        local = DaemonProc(Path(b), {"SIGNALTTY_SSH_COMMAND": stand_in_ssh(Path(b), remote)})
        local.write_config(MINE.replace('[hosts.old]\ntarget = "me@old"  # the old box\n\n', ""))
        local.start()
        try:
            yield local, remote
        finally:
            local.stop()
            remote.stop()
            assert not local.kill_leftovers()
            assert not remote.kill_leftovers()


def _hosts(d: DaemonProc) -> dict[str, dict]:
    r = d.cli("--json", "hosts", "list")
    assert r.returncode == 0, r.stderr
    return {h["name"]: h for h in json.loads(r.stdout)["hosts"]}


def test_watched_host_through_the_cli(pair) -> None:
    local, remote = pair
    added = local.cli("hosts", "add", "devbox", "me@devbox")
    assert added.returncode == 0, added.stderr
    assert "no daemon" not in added.stdout
    wait_until(lambda: _hosts(local).get("devbox", {}).get("state") == "connected", 20)
    table = local.cli("hosts", "list")
    assert table.returncode == 0, table.stderr
    [row] = [ln for ln in table.stdout.splitlines() if ln.startswith("devbox")]
    assert "me@devbox" in row
    assert "connected" in row

    agent = _claude_pane(remote)
    reporter = Reporter(remote, agent.id)
    _pending(remote, agent)
    short = f"devbox/{agent.id[: len('pane_') + 8]}"
    wait_until(
        lambda: any(
            x["host"] == "devbox"
            for x in json.loads(local.cli("--json", "permission", "list").stdout)["permissions"]
        ),
        10,
    )
    panes = local.cli("pane", "list")
    assert panes.returncode == 0, panes.stderr
    assert short + "  " in panes.stdout
    assert f"devbox/{agent.id}" not in panes.stdout  # shortened like a local id
    attention = local.cli("attention")
    assert short in attention.stdout
    assert "permission_required" in attention.stdout
    perms = local.cli("permission", "list")
    assert short in perms.stdout
    shown = local.cli("permission", "show", short)
    assert shown.returncode == 0, shown.stderr
    assert f"devbox/{agent.id}" in shown.stdout
    status = local.cli("status")
    [line] = [ln for ln in status.stdout.splitlines() if ln.startswith("host devbox")]
    assert "connected" in line
    assert "me@devbox" in line
    bar = local.cli("status", "--format", "i3blocks")
    assert bar.stdout.splitlines()[0] == "1 perm"

    # what only that host's daemon can do says how to do it there
    typed = local.cli("pane", "input", short, "--data", "x")
    assert typed.returncode == 1
    assert "NO_SUCH_PANE" in typed.stderr
    assert "--host me@devbox" in typed.stderr

    answered = local.cli("permission", "answer", short, "allow")
    assert answered.returncode == 0, answered.stderr
    code, out, err = reporter.result()
    assert code == 0, err
    assert _verdict(out) == "allow"

    removed = local.cli("hosts", "remove", "devbox")
    assert removed.returncode == 0, removed.stderr
    assert "devbox" not in _hosts(local)
    assert "devbox/" not in local.cli("pane", "list").stdout


def _mirrored_row(reachable: bool) -> dict:
    return {
        "id": "devbox/pane_" + "3f" * 16,
        "workspace_id": "devbox/ws_" + "9c" * 16,
        "host": "devbox",
        "reachable": reachable,
        "title": "api",
        "lifecycle": "blocked",
        "attention": "permission_required",
        "live": {"state": "live"},
        "restore_state": "LIVE",
    }


def test_top_shows_a_watched_hosts_pane_and_its_link() -> None:
    from signaltty.cli.top_view import TopState, render, why_not_attach

    hosts = {"devbox": {"name": "devbox", "target": "me@devbox", "state": "unreachable"}}
    state = TopState(hosts=hosts)
    state.set_panes([_mirrored_row(reachable=False)])
    text = ["".join(t for _, t in line) for line in render(state, 120, 12, 0.0)]
    assert "devbox unreachable" in text[0]
    [row] = [ln for ln in text if "api" in ln]
    assert row.split()[1:4] == ["devbox/", "api", "offline"]
    # Enter on it says what to run instead of trying an attach the daemon refuses
    why = why_not_attach(state.panes[0], hosts)
    assert why == (
        "devbox/pane_3f3f3f3f runs on devbox: signaltty --host me@devbox pane attach pane_3f3f3f3f"
    )
    state.hosts["devbox"]["state"] = "connected"
    state.set_panes([_mirrored_row(reachable=True)])
    text = ["".join(t for _, t in line) for line in render(state, 120, 12, 0.0)]
    assert "devbox" not in text[0]
    [row] = [ln for ln in text if "api" in ln]
    assert "blocked" in row


def test_top_across_a_watched_host(pair) -> None:
    from tests.cli.test_top import TopTerm

    local, remote = pair
    assert local.cli("hosts", "add", "devbox", "me@devbox").returncode == 0
    wait_until(lambda: _hosts(local).get("devbox", {}).get("state") == "connected", 20)
    agent = _claude_pane(remote)
    reporter = Reporter(remote, agent.id, command="make far")
    _pending(remote, agent)
    t = TopTerm(local, 110, 20)
    try:
        t.wait(lambda: "make far" in t.text(), "the remote prompt is not shown")
        row = t.selected()
        assert row.split()[1] == "devbox/claude"  # the host, then its workspace's name
        # Enter cannot attach here: it says the command that does
        t.press(b"\r")
        t.wait_text("signaltty --host me@devbox pane attach")
        assert t.proc.poll() is None
        t.press(b"a")
        t.wait_text("Allow once:")
        t.press(b"y")
        code, out, err = reporter.result()
        assert code == 0, err
        assert _verdict(out) == "allow"
        remote.stop()
        t.wait(lambda: "devbox unreachable" in t.lines()[0], "the header does not say it")
        t.wait(lambda: "offline" in t.selected(), "the row does not say it")
        t.press(b"q")
        assert t.proc.wait(10) == 0
    finally:
        t.close()


def test_add_says_the_first_outcome_and_reload_reads_a_hand_edit(pair) -> None:
    local, _remote = pair
    ok = local.cli("hosts", "add", "devbox", "me@devbox")
    assert ok.returncode == 0, ok.stderr
    assert "devbox: connected, 0 panes" in ok.stdout
    # a socket that is not there: the first attempt fails, and `add` says so at once
    bad = local.cli("hosts", "add", "broken", "me@devbox", "--remote-socket", "/nonexistent/s")
    assert bad.returncode == 0, bad.stderr
    assert "broken: unreachable: " in bad.stdout
    # the person deletes the entry by hand; `hosts reload` makes the daemon read it again
    path = _config(local)
    text = path.read_text()
    start = text.index("[hosts.broken]")
    path.write_text(text[:start] + text[text.index("\n\n", start) + 2 :])
    assert set(_hosts(local)) == {"devbox", "broken"}
    r = local.cli("hosts", "reload")
    assert r.returncode == 0, r.stderr
    assert "devbox" in r.stdout
    assert "broken" not in r.stdout
    assert set(_hosts(local)) == {"devbox"}
