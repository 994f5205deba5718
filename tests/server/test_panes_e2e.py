"""End to end through the real daemon: real PTYs, real children (issue #2 "Done means")."""

from __future__ import annotations

import base64
import json
import os
import sys
import textwrap

import psutil
import pytest

from signaltty.proto.envelope import SignalttyError
from tests.conftest import DaemonProc, wait_until

PY = sys.executable


def spawn(d: DaemonProc, argv: list[str], **extra) -> dict:
    ws = d.call("workspace.create", {"name": "t", "cwd": str(d.root)})["workspace"]
    return d.call("pane.spawn", {"workspace_id": ws["id"], "argv": argv, **extra})["pane"]


def pane(d: DaemonProc, pane_id: str) -> dict:
    return d.call("pane.get", {"pane_id": pane_id})["pane"]


def test_exit_zero_done_unread_and_nonzero_failed(daemon):
    ok = spawn(daemon, [PY, "-c", "print('hello')"])
    bad = spawn(daemon, [PY, "-c", "import sys; sys.exit(3)"])
    assert ok["lifecycle"] == "unknown"
    assert ok["restore_state"] == "LIVE"
    with daemon.client(timeout=None) as cl:
        r = cl.call("wait", {"pane_id": ok["id"], "until": "done", "timeout_s": 20})
        assert r["outcome"] == "done"
        assert r["attention"] == "unread"
        r = cl.call("wait", {"pane_id": bad["id"], "until": ["done", "failed"], "timeout_s": 20})
        assert r["outcome"] == "failed"
    p = pane(daemon, ok["id"])
    assert p["live"] == {"state": "exited", "code": 0}
    assert p["restore_state"] == "EXITED"
    assert p["lifecycle_source"] == "exit"
    assert pane(daemon, bad["id"])["live"] == {"state": "exited", "code": 3}
    text = daemon.call("pane.read", {"pane_id": ok["id"]})["text"]
    assert "hello" in text


def test_killed_by_signal_is_128_plus_n(daemon):
    p = spawn(daemon, [PY, "-c", "import time; time.sleep(60)"])
    daemon.call("pane.signal", {"pane_id": p["id"], "signal": "sigkill"})
    with daemon.client(timeout=None) as cl:
        cl.call("wait", {"pane_id": p["id"], "until": "exited", "timeout_s": 20})
    got = pane(daemon, p["id"])
    assert got["live"] == {"state": "exited", "code": 137}
    assert (got["lifecycle"], got["attention"]) == ("failed", "unread")


def test_ctrl_c_reaches_python_child(daemon):
    script = textwrap.dedent(
        """
        import os, sys, time
        try:
            print("ctty", os.ttyname(0), os.getsid(0) == os.getpid(), flush=True)
            time.sleep(60)
        except KeyboardInterrupt:
            print("GOT-SIGINT", flush=True)
            sys.exit(42)
        """
    )
    p = spawn(daemon, [PY, "-c", script])
    r = daemon.call("pane.wait_for_output", {"pane_id": p["id"], "match": r"ctty \S+ (True|False)", "regex": True, "timeout_s": 10})
    assert r["matched_line"].endswith("True")  # the slave is the child's controlling terminal
    daemon.call("pane.input", {"pane_id": p["id"], "data_b64": base64.b64encode(b"\x03").decode()})
    with daemon.client(timeout=None) as cl:
        cl.call("wait", {"pane_id": p["id"], "until": "exited", "timeout_s": 20})
    assert pane(daemon, p["id"])["live"]["code"] == 42
    assert "GOT-SIGINT" in daemon.call("pane.read", {"pane_id": p["id"]})["text"]


def test_osc_777_notification_reaches_attention_and_subscribe(daemon):
    sub = daemon.client(timeout=None)
    sub.call("subscribe", {"events": ["notification.*", "attention.*"]})
    p = spawn(
        daemon,
        [PY, "-c", "import sys,time; sys.stdout.write('\\x1b]777;notify;Deploy;done\\x1b\\\\'); sys.stdout.flush(); time.sleep(30)"],
    )
    ev = sub.next_event(timeout=10)
    assert ev["event"] == "notification.created"
    note = ev["payload"]["notification"]
    assert (note["title"], note["body"], note["source"], note["pane_id"]) == ("Deploy", "done", "osc777", p["id"])
    ev2 = sub.next_event(timeout=10)
    assert ev2["event"] == "attention.created"
    assert ev2["payload"]["cause"] == "message"
    assert ev2["seq"] > ev["seq"]
    pending = daemon.call("attention.pending")["panes"]
    assert [x["pane_id"] for x in pending] == [p["id"]]
    assert pending[0]["last_message"] == "Deploy: done"
    assert pending[0]["attention"] == "unread"
    assert daemon.call("focus.next_unread")["pane_id"] == p["id"]
    sub.close()


def test_bell_title_and_progress(daemon):
    sub = daemon.client(timeout=None)
    sub.call("subscribe", {"events": ["pane.updated", "pane.progress", "attention.created"]})
    p = spawn(
        daemon,
        [PY, "-c", "import sys,time; sys.stdout.write('\\x1b]0;my title\\x07\\x1b]9;4;1;50\\x07'); sys.stdout.flush(); time.sleep(0.3); sys.stdout.write('\\x07'); sys.stdout.flush(); time.sleep(30)"],
    )
    names = {}
    while len(names) < 3:
        ev = sub.next_event(timeout=10)
        names[ev["event"]] = ev["payload"]
    assert names["pane.updated"]["changed"] == ["title"]
    assert names["pane.updated"]["pane"]["title"] == "my title"
    assert names["pane.progress"]["osc_progress"]["percent"] == 50
    assert names["attention.created"]["cause"] == "bell"
    got = pane(daemon, p["id"])
    assert got["title"] == "my title"
    assert got["osc_progress"]["state"] == "normal"
    sub.close()


def test_notify_cli_maps_severity_and_wait_seen(daemon):
    p = spawn(daemon, [PY, "-c", "import time; time.sleep(60)"])
    r = daemon.cli("--json", "notify", "--title", "Hi", "--body", "there", "--pane", p["id"], "--severity", "warning")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["notification"]["severity"] == "warning"
    assert pane(daemon, p["id"])["attention"] == "warning"
    # The baseline makes the outcome independent of whether the daemon registered the wait
    # before the mark_seen below arrives (no sleep needed to order them).
    base = daemon.call("pane.get", {"pane_id": p["id"]})["wait_baseline"]
    cl = daemon.client(timeout=None)
    waiter = cl.send("wait", {"pane_id": p["id"], "until": "seen", "after": base, "timeout_s": 20})
    daemon.call("pane.mark_seen", {"pane_id": p["id"]})
    msg = cl.read_message(timeout=10)
    assert msg["id"] == waiter
    assert msg["result"]["outcome"] == "seen"
    cl.close()


def test_wait_timeout_exit_code_124(daemon):
    p = spawn(daemon, [PY, "-c", "import time; time.sleep(60)"])
    r = daemon.cli("wait", "--pane", p["id"], "--until", "done", "--timeout", "0.5")
    assert r.returncode == 124
    assert "server error TIMEOUT" in r.stderr


def test_wait_with_baseline(daemon):
    p = spawn(daemon, [PY, "-c", "import time; time.sleep(60)"])
    base = daemon.call("pane.get", {"pane_id": p["id"]})["wait_baseline"]
    assert base["process_instance"]
    assert base["pane_id"] == p["id"]
    daemon.call("notify", {"pane_id": p["id"], "title": "x"})
    with daemon.client(timeout=None) as cl:
        r = cl.call("wait", {"pane_id": p["id"], "until": "unread", "after": base, "timeout_s": 5})
    assert r["outcome"] == "unread"
    assert r["transition_seq"] > 0
    with pytest.raises(SignalttyError) as exc, daemon.client(timeout=None) as cl:
        cl.call("wait", {"pane_id": p["id"], "until": "done", "after": dict(base, process_instance="pi_x")})
    assert exc.value.code == "IDENTITY_CHANGED"


def test_wait_cancelled_by_further_input_closes_without_response(daemon):
    p = spawn(daemon, [PY, "-c", "import time; time.sleep(60)"])
    cl = daemon.client(timeout=None)
    cl.send("wait", {"pane_id": p["id"], "until": "done"})
    cl.send("server.status")  # read after the wait on the same connection: no sleep needed
    assert cl.read_message(timeout=10) is None  # closed, no response at all
    cl.close()
    assert daemon.call("server.status")["live_panes"] == 1


def test_wait_fails_when_pane_closed(daemon):
    p = spawn(daemon, [PY, "-c", "import time; time.sleep(60)"])
    cl = daemon.client(timeout=None)
    req = cl.send("wait", {"pane_id": p["id"], "until": "done"})
    # NO_SUCH_PANE whether the close lands before the wait is registered or wakes it
    daemon.call("pane.close", {"pane_id": p["id"]})
    msg = cl.read_message(timeout=10)
    assert msg["id"] == req
    assert msg["error"]["code"] == "NO_SUCH_PANE"
    cl.close()


def test_pane_close_kills_group_and_removes(daemon):
    p = spawn(daemon, ["sh", "-c", "sleep 60 & sleep 60"])
    kids = wait_until(
        lambda: (k := psutil.Process(daemon.proc.pid).children(recursive=True))
        and sum(1 for c in k if c.name() == "sleep") == 2 and k,
        what="both sleeps started",
    )
    daemon.call("pane.close", {"pane_id": p["id"]})
    with pytest.raises(SignalttyError) as exc:
        daemon.call("pane.get", {"pane_id": p["id"]})
    assert exc.value.code == "NO_SUCH_PANE"
    gone, alive = psutil.wait_procs(kids, timeout=10)
    assert not alive


def test_wait_for_output_tail_and_new_only_and_exit(daemon):
    p = spawn(daemon, [PY, "-c", "import time\nprint('first', flush=True)\ntime.sleep(1)\nprint('second line', flush=True)\ntime.sleep(60)"])
    r = daemon.call("pane.wait_for_output", {"pane_id": p["id"], "match": "first", "timeout_s": 10})
    assert r["matched_line"] == "first"
    with daemon.client(timeout=None) as cl:
        r = cl.call("pane.wait_for_output", {"pane_id": p["id"], "match": r"sec\w+ line", "regex": True, "new_only": True, "timeout_s": 10})
    assert r["matched_line"] == "second line"
    with pytest.raises(SignalttyError) as exc:
        daemon.call("pane.wait_for_output", {"pane_id": p["id"], "match": "(", "regex": True})
    assert exc.value.code == "BAD_PARAMS"
    q = spawn(daemon, [PY, "-c", "print('bye')"])
    with pytest.raises(SignalttyError) as exc, daemon.client(timeout=None) as cl:
        cl.call("pane.wait_for_output", {"pane_id": q["id"], "match": "never", "timeout_s": 10})
    assert exc.value.code == "PANE_EXITED"


def test_resize_reaches_child_and_screen(daemon):
    script = "import signal,os,time,sys\nsignal.signal(signal.SIGWINCH, lambda *a: print('size', os.get_terminal_size(0), flush=True))\nprint('ready', flush=True)\ntime.sleep(60)"
    p = spawn(daemon, [PY, "-c", script], cols=100, rows=30)
    assert p["pty_size"] == {"cols": 100, "rows": 30}
    daemon.call("pane.wait_for_output", {"pane_id": p["id"], "match": "ready", "timeout_s": 10})
    r = daemon.call("pane.resize", {"pane_id": p["id"], "cols": 9999, "rows": 1})
    assert r["pane"]["pty_size"] == {"cols": 500, "rows": 5}
    r = daemon.call("pane.wait_for_output", {"pane_id": p["id"], "match": "columns=500", "timeout_s": 10})
    assert "lines=5" in r["matched_line"]


def test_env_policy(daemon, tmp_root):
    out = tmp_root / "env.json"
    p = spawn(
        daemon,
        [PY, "-c", f"import os,json; json.dump(dict(os.environ), open({str(out)!r}, 'w'))"],
        env={"LANG": "C.UTF-8", "CLAUDE_X": "1"},
    )
    wait_until(lambda: out.exists() and out.stat().st_size > 0)
    with daemon.client(timeout=None) as cl:
        cl.call("wait", {"pane_id": p["id"], "until": "exited", "timeout_s": 10})
    env = json.loads(out.read_text())
    assert env["SIGNALTTY_PANE"] == p["id"]
    assert env["SIGNALTTY_SOCKET"] == daemon.socket
    assert os.path.isabs(env["SIGNALTTY_SOCKET"])
    assert env["TERM"] == "xterm-256color"
    assert env["TERM_PROGRAM"] == "signaltty"
    assert env["CLAUDE_X"] == "1"
    assert env["LANG"] == "C.UTF-8"
    for key in ("NOTIFY_SOCKET", "LD_PRELOAD", "INVOCATION_ID"):
        assert key not in env
    with pytest.raises(SignalttyError) as exc:
        spawn(daemon, ["true"], env={"LD_PRELOAD": "/x.so"})
    assert exc.value.code == "BAD_PARAMS"
    assert "LD_PRELOAD" in exc.value.message


def test_systemd_variables_scrubbed(tmp_root):
    d = DaemonProc(tmp_root, {"INVOCATION_ID": "abc", "JOURNAL_STREAM": "1:2", "LD_LIBRARY_PATH": "/nowhere"})
    d.start()
    try:
        out = tmp_root / "env2.json"
        spawn(d, [PY, "-c", f"import os,json; json.dump(dict(os.environ), open({str(out)!r}, 'w'))"])
        wait_until(lambda: out.exists() and out.stat().st_size > 0)
        env = json.loads(out.read_text())
        assert "INVOCATION_ID" not in env
        assert "JOURNAL_STREAM" not in env
        assert "LD_LIBRARY_PATH" not in env
    finally:
        d.stop()
        d.kill_leftovers()


def test_spawn_failures_create_nothing(daemon):
    ws = daemon.call("workspace.create", {"name": "f"})["workspace"]
    with pytest.raises(SignalttyError) as exc:
        daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["definitely-not-a-command-xyz"]})
    assert exc.value.code == "SPAWN_FAILED"
    assert "command not found" in exc.value.message
    assert exc.value.details["errno"] == 2
    with pytest.raises(SignalttyError) as exc:
        daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["/etc/passwd"]})
    assert exc.value.code == "SPAWN_FAILED"
    assert daemon.call("pane.list")["panes"] == []


def test_split_inserts_after_source(daemon):
    a = spawn(daemon, ["sleep", "60"])
    b = daemon.call("pane.spawn", {"workspace_id": a["workspace_id"], "argv": ["sleep", "60"]})["pane"]
    c = daemon.call("pane.split", {"pane_id": a["id"], "argv": ["sleep", "60"]})["pane"]
    ws = daemon.call("workspace.get", {"workspace_id": a["workspace_id"]})["workspace"]
    assert ws["pane_ids"] == [a["id"], c["id"], b["id"]]


def test_relative_argv0_stored_absolute(daemon, tmp_root):
    script = tmp_root / "bin" / "hello.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    ws = daemon.call("workspace.create", {"name": "r", "cwd": str(tmp_root)})["workspace"]
    p = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["./bin/hello.sh"]})["pane"]
    assert p["argv"][0] == str(script)
    assert p["title"] == "hello.sh"


def test_child_dies_during_input(daemon):
    p = spawn(daemon, [PY, "-c", "import sys; print('reading', flush=True); sys.stdin.readline()"])
    daemon.call("pane.wait_for_output", {"pane_id": p["id"], "match": "reading", "timeout_s": 10})
    chunk = base64.b64encode(b"line\n" * 100_000).decode()

    def flood() -> None:
        for _ in range(200):
            daemon.call("pane.input", {"pane_id": p["id"], "data_b64": chunk})

    with pytest.raises(SignalttyError) as exc:
        flood()
    assert exc.value.code in ("PANE_EXITED", "TIMEOUT")
    if exc.value.code == "TIMEOUT":
        assert "written_bytes" in exc.value.details
    assert daemon.call("server.status")["pid"] == daemon.proc.pid
    assert pane(daemon, p["id"])["live"]["state"] == "exited"


def test_attach_snapshot_and_stream(daemon):
    p = spawn(daemon, ["cat"])
    cl = daemon.client(timeout=None)
    daemon.call("pane.input", {"pane_id": p["id"], "data_b64": base64.b64encode(b"before\n").decode()})
    daemon.call("pane.wait_for_output", {"pane_id": p["id"], "match": "before", "timeout_s": 10})
    r = cl.call("pane.attach", {"pane_id": p["id"]})
    snap = base64.b64decode(r["snapshot_b64"])
    assert b"before" in snap
    assert r["live"] is True
    assert r["size"] == {"cols": 80, "rows": 24}
    daemon.call("pane.input", {"pane_id": p["id"], "data_b64": base64.b64encode(b"after\n").decode()})
    got = b""
    offset = r["output_offset"]
    while b"after" not in got:
        ev = cl.next_event(timeout=10)
        assert ev["event"] == "pty.data"
        assert "seq" not in ev
        data = base64.b64decode(ev["payload"]["data_b64"])
        assert ev["payload"]["output_offset"] == offset + len(data)
        offset = ev["payload"]["output_offset"]
        got += data
    assert cl.call("pane.detach", {"pane_id": p["id"]}) == {"detached": True}
    assert cl.call("pane.detach", {"pane_id": p["id"]}) == {"detached": False}
    cl.close()


def test_label_is_sanitized(daemon):
    p = spawn(daemon, ["sleep", "60"], label="\x1b]0;evil\x07\x1b[2J\u202eok\x00")
    assert p["label"] == "ok"
    out = daemon.cli("pane", "list").stdout
    assert "\x1b" not in out
    assert "\u202e" not in out


def test_busy_pane_never_blocks_reads_attach_or_save(daemon):
    p = spawn(daemon, ["yes", "busy output line"])
    read = {"pane_id": p["id"], "lines": 5}
    wait_until(lambda: daemon.call("pane.read", read)["text"].count("busy output line") >= 2,
               what="the pane busy printing")
    # answered while it keeps printing (each call bounded by the client's timeout; how long
    # they take under a flood is bench/flood.py's status latency)
    assert "busy output line" in daemon.call("pane.read", {"pane_id": p["id"], "lines": 5})["text"]
    with daemon.client(timeout=10) as cl:
        cl.call("pane.attach", {"pane_id": p["id"]})
    daemon.call("notify", {"pane_id": p["id"], "title": "marker"})
    snap = daemon.state_dir / "snapshot.json"
    wait_until(lambda: snap.exists() and "marker" in snap.read_text(), timeout=15)
    other = spawn(daemon, ["sleep", "60"])
    daemon.call("pane.close", {"pane_id": p["id"], "signal": "KILL"})
    daemon.call("notify", {"pane_id": other["id"], "title": "after-close"})
    wait_until(lambda: "after-close" in snap.read_text(), timeout=15)
