"""Connection rules of protocol.md §3 against the real daemon: bad input never hurts anyone else."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from signaltty.proto.client import Client
from signaltty.proto.constants import CODES, EVENTS, METHODS
from signaltty.proto.envelope import SignalttyError
from tests.conftest import wait_until


def raw_conn(daemon) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(daemon.socket)
    return s


def read_line(s: socket.socket) -> dict:
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return json.loads(buf)


def roundtrip(s: socket.socket, data: bytes) -> dict:
    s.sendall(data)
    return read_line(s)


@pytest.mark.parametrize(
    ("line", "code", "rid"),
    [
        (b"not json\n", "BAD_PARAMS", "?"),
        (b"[1,2]\n", "BAD_PARAMS", "?"),
        (b'{"id":"a","method":"server.status"}\n', "BAD_PROTOCOL", "a"),
        (b'{"protocol":"signaltty/0","id":"a","method":"server.status"}\n', "BAD_PROTOCOL", "a"),
        (b'{"protocol":"signaltty/1","id":"b","method":"nope.nope"}\n', "UNKNOWN_METHOD", "b"),
        (b'{"protocol":"signaltty/1","id":"c","method":"task.create"}\n', "UNKNOWN_METHOD", "c"),
        (b'{"protocol":"signaltty/1","id":"c2","method":"pane.swap"}\n', "UNKNOWN_METHOD", "c2"),
        (b'{"protocol":"signaltty/1","id":"d","method":"pane.resize","params":{"pane_id":"x","cols":"5","rows":5}}\n', "BAD_PARAMS", "d"),
        (b'{"protocol":"signaltty/1","id":"e","method":"pane.get","params":[]}\n', "BAD_PARAMS", "e"),
        (b'{"protocol":"signaltty/1","id":"f","method":"pane.get","params":{"pane_id":"pane_nope"}}\n', "NO_SUCH_PANE", "f"),
        (b'{"protocol":"signaltty/1","id":"g","method":"workspace.get","params":{"workspace_id":"zzz"}}\n', "NO_SUCH_WORKSPACE", "g"),
        (b'{"protocol":"signaltty/1","id":"h","method":"pane.read","params":{"pane_id":"p","lines":0}}\n', "BAD_PARAMS", "h"),
        (b'\xff\xfe garbage \x00\n', "BAD_PARAMS", "?"),
        (b'{"protocol":"signaltty/1","id":"i","method":"wait","params":{"pane_id":"pane_nope","until":"bogus"}}\n', "NO_SUCH_PANE", "i"),
    ],
)
def test_bad_lines_get_errors_and_connection_stays(daemon, line, code, rid):
    s = raw_conn(daemon)
    resp = roundtrip(s, line)
    assert resp["ok"] is False
    assert resp["error"]["code"] == code
    assert resp["id"] == rid
    assert resp["protocol"] == "signaltty/1"
    ok = roundtrip(s, b'{"protocol":"signaltty/1","id":"z","method":"server.status"}\r\n')
    assert ok["ok"] is True
    assert ok["id"] == "z"
    s.close()


def test_bad_params_names_field(daemon):
    with pytest.raises(SignalttyError) as exc:
        daemon.call("pane.resize", {"pane_id": "x", "cols": True, "rows": 5})
    assert exc.value.code == "BAD_PARAMS"
    assert exc.value.details["field"] == "cols"


def test_unknown_fields_ignored_and_null_is_absent(daemon):
    r = daemon.call("workspace.create", {"name": None, "bogus": 1})
    assert r["workspace"]["name"] == "workspace"


def test_line_too_large_then_connection_still_works(daemon):
    s = raw_conn(daemon)
    big = b"x" * (16 * 1024 * 1024 + 10)
    s.sendall(big[: 8 * 1024 * 1024])
    s.sendall(big[8 * 1024 * 1024 :] + b"\n")
    resp = read_line(s)
    assert resp["error"]["code"] == "RATE_LIMITED"
    assert resp["id"] == "?"
    ok = roundtrip(s, b'{"protocol":"signaltty/1","id":"z","method":"server.status"}\n')
    assert ok["ok"] is True
    s.close()


def test_requests_answered_in_order(daemon):
    s = raw_conn(daemon)
    lines = b"".join(
        json.dumps({"protocol": "signaltty/1", "id": str(i), "method": "server.status"}).encode() + b"\n"
        for i in range(50)
    )
    s.sendall(lines)
    ids = [read_line_buffered for read_line_buffered in _read_n(s, 50)]
    assert [r["id"] for r in ids] == [str(i) for i in range(50)]
    s.close()


def _read_n(s: socket.socket, n: int) -> list[dict]:
    buf = b""
    out: list[dict] = []
    while len(out) < n:
        while b"\n" not in buf:
            buf += s.recv(65536)
        line, buf = buf.split(b"\n", 1)
        out.append(json.loads(line))
    return out


def test_schema_lists_constants(daemon):
    r = daemon.call("server.schema")
    assert r["methods"] == list(METHODS)
    assert r["events"] == list(EVENTS)
    assert r["codes"] == list(CODES)
    assert r["capabilities"]["wait_baseline"] is True


def test_status_shape(daemon):
    r = daemon.call("server.status")
    for key in ("version", "protocol", "instance_id", "pid", "uptime_s", "socket", "state_dir",
                "workspaces", "panes", "live_panes", "seq", "path_hydration", "notifications", "dbus"):
        assert key in r
    assert r["socket"] == daemon.socket


def test_socket_and_dir_modes(daemon):
    assert os.stat(daemon.socket).st_mode & 0o777 == 0o600
    assert os.stat(daemon.state_dir).st_mode & 0o777 == 0o700


def test_other_uid_is_closed_unanswered(daemon):
    if os.getuid() != 0:
        pytest.skip("needs root to connect as another uid")
    os.chmod(daemon.root, 0o755)
    os.chmod(daemon.socket, 0o666)  # only the peer-uid check stands in the way now
    code = (
        "import os,socket,sys\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s=socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])\n"
        "s.sendall(b'{\"protocol\":\"signaltty/1\",\"id\":\"x\",\"method\":\"server.status\"}\\n')\n"
        "print(repr(s.recv(100)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, daemon.socket], capture_output=True, text=True, timeout=20)
    assert out.stdout.strip() == "b''" or "ConnectionResetError" in out.stderr or "BrokenPipeError" in out.stderr, out
    os.chmod(daemon.root, 0o700)  # our own clients only trust a private socket dir (issue 10 §1)
    assert daemon.call("server.status")["pid"] == daemon.proc.pid
    log = (daemon.state_dir / "signaltty.log").read_text()
    assert '"conn.refused_uid"' in log
    assert '"peer_uid": 65534' in log


def test_257th_connection_refused(daemon):
    conns = []
    for i in range(256):
        conns.append(raw_conn(daemon))
        if i % 32 == 31:  # let the server accept them before the listen backlog fills
            resp = roundtrip(conns[-1], b'{"protocol":"signaltty/1","id":"k","method":"server.status"}\n')
            assert resp["ok"]
    try:
        extra = raw_conn(daemon)
        resp = read_line(extra)
        assert resp["error"]["code"] == "RATE_LIMITED"
        assert resp["id"] == "?"
        extra.close()
    finally:
        for c in conns:
            c.close()
    wait_until(lambda: _status_ok(daemon), timeout=10)


def _status_ok(daemon) -> bool:
    try:
        return bool(daemon.call("server.status"))
    except (OSError, SignalttyError):
        return False


def test_client_that_never_reads_does_not_block_others(daemon):
    ws = daemon.call("workspace.create", {"name": "flood", "cwd": str(daemon.root)})["workspace"]
    p = daemon.call(
        "pane.spawn",
        {"workspace_id": ws["id"], "argv": [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x'*4096)"]},
    )["pane"]
    lazy = raw_conn(daemon)
    lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    lazy.sendall(json.dumps({"protocol": "signaltty/1", "id": "a", "method": "pane.attach", "params": {"pane_id": p["id"]}}).encode() + b"\n")
    lazy.sendall(json.dumps({"protocol": "signaltty/1", "id": "s", "method": "subscribe"}).encode() + b"\n")
    for _ in range(20):  # each answered within the client's 5 s timeout
        assert daemon.call("server.status")["pid"]
    # the slow reader with an attachment is eventually closed
    wait_until(lambda: daemon.call("server.status")["connections"]["open"] <= 2, timeout=30)
    lazy.close()
    daemon.call("pane.close", {"pane_id": p["id"], "signal": "KILL"})


def test_garbage_and_invalid_utf8_from_a_pane(daemon):
    ws = daemon.call("workspace.create", {"name": "g", "cwd": str(daemon.root)})["workspace"]
    code = (
        "import os,random\nr=random.Random(7)\n"
        "for _ in range(200): os.write(1, bytes(r.randrange(256) for _ in range(2000)))\n"
        "os.write(1, b'\\xff\\xfe\\x1b[?1r\\x1b[?6n\\x1b[1;2;3H\\xe4\\xb8\\xadx\\ra\\nEND-MARK\\n')\n"
    )
    p = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": [sys.executable, "-c", code]})["pane"]
    with Client(daemon.socket, timeout=None) as cl:
        cl.call("wait", {"pane_id": p["id"], "until": "exited", "timeout_s": 30})
    text = daemon.call("pane.read", {"pane_id": p["id"], "mode": "tail", "lines": 50})["text"]
    assert "END-MARK" in text
    daemon.call("pane.read", {"pane_id": p["id"], "mode": "screen"})
    assert daemon.call("server.status")["pid"] == daemon.proc.pid


def test_catastrophic_regex_does_not_freeze_the_daemon(daemon):
    ws = daemon.call("workspace.create", {"name": "re"})["workspace"]
    p = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": [sys.executable, "-c", "print('a' * 40 + '!', flush=True)\nimport time; time.sleep(60)"]})["pane"]
    daemon.call("pane.wait_for_output", {"pane_id": p["id"], "match": "aaaa", "timeout_s": 10})
    with pytest.raises(SignalttyError) as exc, daemon.client(timeout=None) as cl:
        cl.call("pane.wait_for_output", {"pane_id": p["id"], "match": "(a|aa)+$", "regex": True, "timeout_s": 5})
    # the regex budget ended it (BAD_PARAMS "too slow"), not the call's timeout (TIMEOUT)
    assert exc.value.code == "BAD_PARAMS"
    assert "too slow" in exc.value.message
    assert daemon.call("server.status")["pid"] == daemon.proc.pid


def test_lone_surrogates_in_id_and_method_get_answers(daemon):
    s = raw_conn(daemon)
    resp = roundtrip(s, b'{"protocol":"signaltty/1","id":"\\ud800","method":"server.status"}\n')
    assert resp["ok"] is True
    resp = roundtrip(s, b'{"protocol":"signaltty/1","id":"x","method":"\\udcff"}\n')
    assert resp["error"]["code"] == "UNKNOWN_METHOD"
    s.close()


@pytest.mark.parametrize("bad", [{"lifecycle_seq": -1}, {"lifecycle_seq": "7"}, {"attention_seq": True}, {"lifecycle_seq": 1e400}])
def test_wait_baseline_values_checked(daemon, bad):
    ws = daemon.call("workspace.create", {"name": "w"})["workspace"]
    p = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "60"]})["pane"]
    base = daemon.call("pane.get", {"pane_id": p["id"]})["wait_baseline"]
    with pytest.raises(SignalttyError) as exc, daemon.client(timeout=None) as cl:
        cl.call("wait", {"pane_id": p["id"], "until": "done", "after": dict(base, **bad), "timeout_s": 1})
    assert exc.value.code == "BAD_PARAMS"
    assert exc.value.details["field"] == "after"
