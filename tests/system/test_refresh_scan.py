"""The refresh scan's name cache: one command-line read per foreground process, re-read
after an ``exec`` (same pid and start time, new kernel name)."""

from __future__ import annotations

import subprocess

from signaltty.server.refresh import scan
from signaltty.system import proctable
from tests.conftest import wait_until


def test_names_are_cached_per_process_and_exec_is_noticed(monkeypatch, tmp_path):
    proc = subprocess.Popen(["bash", "--norc", "--noprofile", "-c", "read x; exec sleep 30"],
                            stdin=subprocess.PIPE, cwd=tmp_path)
    reads: list[int] = []
    real = proctable.read_process

    def counting(pid, create_time=None):
        reads.append(pid)
        return real(pid, create_time)

    monkeypatch.setattr(proctable, "read_process", counting)
    try:
        names: dict = {}
        first = wait_until(lambda: (o := scan({"p": proc.pid}, names)["p"]).process_name and o)
        assert first.process_name == "bash"
        assert first.cwd == str(tmp_path)
        n = len(reads)
        again = scan({"p": proc.pid}, names)["p"]
        assert again.process_name == "bash"
        assert again.cwd == str(tmp_path)
        assert len(reads) == n  # cached: only the cwd was read
        assert proctable.read_cwd(proc.pid) == str(tmp_path)
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        after = wait_until(lambda: (o := scan({"p": proc.pid}, names)["p"]).process_name == "sleep" and o)
        assert after.pid == proc.pid
        assert len(reads) > n
        assert all(k[0] == proc.pid and k[2] == "sleep" for k in names)  # the bash entry is gone
    finally:
        proc.kill()
        proc.wait()
    assert proctable.read_cwd(proc.pid) is None
