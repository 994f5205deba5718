"""Login-shell PATH hydration with stub shells (desktop-and-service.md §5): noisy rc files, a
shell that waits for input, one that hangs, one that fails; and the daemon end to end."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from signaltty.system import shellpath
from tests.conftest import DaemonProc, wait_until


def stub(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_parse_and_merge():
    out = b"noise from rc\n" + shellpath.BEGIN.encode() + b"/a:/b:rel::/c" + shellpath.END.encode() + b"more noise"
    assert shellpath.parse(out) == "/a:/b:rel::/c"
    assert shellpath.parse(b"no delimiters") is None
    assert shellpath.parse(shellpath.BEGIN.encode() + b"/a") is None
    merged, added = shellpath.merge("/b:/usr/bin", "/a:/b:rel::/c:/a")
    assert merged == "/b:/usr/bin:/a:/c"
    assert added == ["/a", "/c"]


def run(env, **kw):
    return asyncio.run(shellpath.hydrate(env, **kw))


def test_noisy_rc_output_is_ignored(tmp_path):
    # the stub prints rc noise around what the real command prints, and checks the probe marker
    sh = stub(tmp_path, "noisy", 'echo "Welcome!"; [ "$SIGNALTTY_PATH_PROBE" = 1 ] || exit 9\n'
              'PATH="/opt/extra/bin:$PATH"; export PATH; shift; eval "$1"; echo bye\n')
    r = run({"SHELL": sh, "PATH": "/usr/bin:/bin"})
    assert r.state == "done"
    assert r.added == ["/opt/extra/bin"]
    assert r.path == "/usr/bin:/bin:/opt/extra/bin"


def test_rc_printing_megabytes_is_read_in_bounded_memory(tmp_path):
    # 64 MB of rc noise before and after the answer; the probe keeps only a few bytes of it
    sh = stub(tmp_path, "loud", 'head -c 67108864 /dev/zero; PATH="/opt/loud:$PATH"; shift; eval "$1"; '
              'head -c 67108864 /dev/zero\n')
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = run({"SHELL": sh, "PATH": "/usr/bin:/bin"}, timeout_s=30)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert r.state == "done"
    assert r.added == ["/opt/loud"]
    assert grown_mb < 32, f"peak RSS grew {grown_mb:.0f} MB"


def test_endless_path_is_given_up(tmp_path):
    sh = stub(tmp_path, "endless", f'printf "%s" {shellpath.BEGIN}; head -c 10000000 /dev/zero | tr "\\0" x\n')
    r = run({"SHELL": sh, "PATH": "/usr/bin"}, timeout_s=30)
    assert r.state == "failed"
    assert r.path == "/usr/bin"


def test_shell_that_reads_input_gets_eof(tmp_path):
    sh = stub(tmp_path, "reader", 'read answer; PATH="/opt/r:$PATH"; shift; eval "$1"\n')
    r = run({"SHELL": sh, "PATH": "/usr/bin"})
    assert r.state == "done"
    assert r.added == ["/opt/r"]


def test_hanging_shell_is_killed(tmp_path):
    marker = tmp_path / "child.pid"
    sh = stub(tmp_path, "hang", f'sleep 100 & echo $! > {marker}; wait\n')
    t0 = time.monotonic()
    r = run({"SHELL": sh, "PATH": "/usr/bin"}, timeout_s=1.0)
    assert r.state == "failed"
    assert "did not answer" in r.reason
    assert r.path == "/usr/bin"
    assert time.monotonic() - t0 < 5
    import psutil

    pid = int(marker.read_text())

    def gone() -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    # SIGKILL is delivered when the process next runs; on a loaded machine that takes a moment
    wait_until(gone, timeout=5)


@pytest.mark.parametrize("body", ["exit 1\n", "echo nothing useful\n"])
def test_failing_shell_keeps_path(tmp_path, body):
    sh = stub(tmp_path, "fail", body)
    r = run({"SHELL": sh, "PATH": "/usr/bin"})
    assert r.state == "failed"
    assert r.path == "/usr/bin"
    assert r.reason


def test_missing_shell(tmp_path):
    r = run({"SHELL": str(tmp_path / "nope"), "PATH": "/usr/bin"})
    assert r.state == "failed"
    assert "cannot start" in r.reason


def test_daemon_hydrates_and_panes_get_the_path(tmp_root):
    extra = tmp_root / "tools"
    extra.mkdir()
    sh = stub(tmp_root, "loginsh", f'PATH="{extra}:$PATH"; export PATH; shift; eval "$1"\n')
    d = DaemonProc(tmp_root, {"SHELL": sh})
    del d.env["SIGNALTTY_SHELL_PATH"]
    d.start()
    try:
        wait_until(lambda: d.call("server.status")["path_hydration"]["state"] == "done")
        assert d.call("server.status")["path_hydration"]["added"] == [str(extra)]
        out = tmp_root / "env.json"
        ws = d.call("workspace.create", {"name": "p"})["workspace"]
        d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sh", "-c", f"printf '%s' \"$PATH\" > {out}"]})
        wait_until(lambda: out.exists() and out.read_text())
        assert out.read_text().split(":")[-1] == str(extra)
    finally:
        d.stop()


def test_disabled_by_env(daemon):
    assert daemon.call("server.status")["path_hydration"] == {"state": "disabled", "added": []}
    assert json.dumps(daemon.call("server.status"))
