"""A hostile daemon at the other end of ``--host`` (issue 16 "Bad input"): the stand-in ssh
is a program that answers every request with a real daemon's answer to it, poisoned with
terminal escapes and markup in every string, or with one endless line. The CLI prints
no control sequence, never holds more than its line limit, and says what went wrong.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.test_host_option import _cli
from tests.conftest import DaemonProc
from tests.server.test_hooks_e2e import _permission_agent

PY = sys.executable
POISON = "\x1b]0;pwned\x07\x1b[2J\x1b[31m<b>bold</b>\x9b1m\r\x08"

# The hostile server: reads each request line and answers it from canned results, every
# string poisoned; with "endless" it answers with one line that never ends.
HOSTILE = r"""
import json, sys
canned = json.load(open(sys.argv[1]))
mode = sys.argv[2]
poison = sys.argv[3]
def spoil(v):
    if isinstance(v, str):
        return poison + v + poison
    if isinstance(v, list):
        return [spoil(x) for x in v]
    if isinstance(v, dict):
        return {k: spoil(x) for k, x in v.items()}
    return v
for line in sys.stdin:
    req = json.loads(line)
    if mode == "endless":
        chunk = b"x" * (1 << 20)
        try:
            while True:
                sys.stdout.buffer.write(chunk)
        except BrokenPipeError:
            sys.exit(0)
    result = canned.get(req["method"], {})
    out = {"protocol": "signaltty/1", "id": req["id"], "ok": True, "result": spoil(result)}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""


def _hostile(d: DaemonProc, mode: str) -> dict[str, str]:
    canned = {
        method: d.call(method)
        for method in ("server.status", "pane.list", "permission.list", "attention.pending")
    }
    (d.root / "canned.json").write_text(json.dumps(canned))
    (d.root / "hostile.py").write_text(HOSTILE)
    prog = d.root / "hostile-ssh"
    prog.write_text(
        f'#!/bin/sh\nexec {PY} {d.root / "hostile.py"} {d.root / "canned.json"} {mode} "$POISON"\n'
    )
    prog.chmod(0o755)
    return dict(d.env, SIGNALTTY_SSH_COMMAND=str(prog), POISON=POISON)


def _clean(text: str) -> bool:
    return not any(c in text for c in "\x1b\x07\x9b\r\x08")


def test_poisoned_answers_print_no_control_sequence(daemon: DaemonProc, tmp_root: Path) -> None:
    _permission_agent(daemon, tmp_root)  # something in every list
    env = _hostile(daemon, "poison")
    for args in (["status"], ["pane", "list"], ["permission", "list"], ["attention"]):
        r = _cli(env, "--host", "evil", *args)
        assert r.returncode in (0, 1), (args, r.stderr)
        assert _clean(r.stdout), (args, r.stdout)
        assert _clean(r.stderr), (args, r.stderr)
        assert "Traceback" not in r.stderr, (args, r.stderr)
    r = _cli(env, "--host", "evil", "pane", "list")
    assert r.returncode == 0, r.stderr
    assert "pane_" in r.stdout  # the content is shown, its escapes are not


def test_an_endless_line_is_refused_not_held(daemon: DaemonProc) -> None:
    env = _hostile(daemon, "endless")
    proc = subprocess.run(
        [PY, "-c", _MEASURE, "--host", "evil", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("signaltty: the server sent a line longer than 33554432 bytes")
    peak_kib = int(proc.stdout.strip().splitlines()[-1])
    # the line limit (32 MiB) plus one read and the interpreter: far from unbounded
    assert peak_kib < 200 * 1024, peak_kib


# the CLI in this interpreter, then its peak resident size (KiB) on stdout: VmHWM of this
# image. Not ru_maxrss: Linux keeps the high-water mark of the image before execve there,
# i.e. the forking pytest's (318 MB late in a full run)
_MEASURE = (
    "import sys\n"
    "from signaltty.cli.entry import main\n"
    "rc = main(sys.argv[1:])\n"
    "print(next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM:')))\n"
    "sys.exit(rc)\n"
)
