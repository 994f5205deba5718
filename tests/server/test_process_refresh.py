"""Process refresh (agents.md §3.3, states.md §3.6; issue #4 item 4) with real processes.

In-process: ``ProcessRefresher`` over real child processes and a real ``Store`` (the daemon
around it is a plain namespace): one ``psutil.process_iter`` per refresh, never
``Process.children()``, and a process that exits between the scan and the reads. End to end:
a real daemon with ``proc_refresh_s = 2`` promotes a bash pane running a script named
``claude`` and follows its cwd.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from signaltty.core.model import AgentInfo, Pane
from signaltty.core.refresh import Detection
from signaltty.server.bus import Bus
from signaltty.server.config import Config
from signaltty.server.refresh import Detect, ProcessRefresher, builtin_detect
from signaltty.server.store import Store
from signaltty.system import proctable
from tests.conftest import DaemonProc, wait_until

# what sys.executable is called (``python3`` here, ``python`` in a venv)
PY_NAME = os.path.basename(sys.executable)

CLAUDE_SCRIPT = textwrap.dedent(
    """\
    #!/usr/bin/env python3
    import os, sys
    print("claude-ready", os.getcwd(), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if line:
            os.chdir(line)
            print("moved", line, flush=True)
    """
)


def write_claude(bin_dir: Path) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "claude"
    script.write_text(CLAUDE_SCRIPT)
    script.chmod(0o755)
    return script


# ---------------------------------------------------------------- in-process


class Procs:
    """Real child processes started by a test; all killed (with their groups) at the end."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, argv: list[str], **kw) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True, **kw
        )
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.fixture
def procs() -> Iterator[Procs]:
    p = Procs()
    try:
        yield p
    finally:
        p.close()


def fake_daemon(**roots: subprocess.Popen[bytes]) -> SimpleNamespace:
    """The three things the refresher uses: config, store, runtimes (pane id → .proc/.pane)."""
    store = Store(Bus())
    runtimes = {}
    for pane_id, proc in roots.items():
        pane = Pane(
            id=pane_id, workspace_id="ws_x", argv=["bash"], cwd="/", launch_cwd="/",
            created_at=1.0, last_activity_at=1.0, agent=AgentInfo(kind="generic"),
        )
        store.panes[pane_id] = pane
        runtimes[pane_id] = SimpleNamespace(proc=SimpleNamespace(pid=proc.pid), pane=pane)
    return SimpleNamespace(config=Config(), store=store, runtimes=runtimes)


def refresher_for(daemon: SimpleNamespace, detect: Detect | None = None) -> ProcessRefresher:
    """The refresher with only the collaborators it takes (no daemon)."""
    return ProcessRefresher(
        store=daemon.store, config=daemon.config, runtimes=daemon.runtimes, detect=detect
    )


def updates(store: Store, pane_id: str) -> list[dict]:
    return [p for _, name, p in store.ring if name == "pane.updated" and p["pane"]["id"] == pane_id]


# ``#!/usr/bin/env python3`` resolves to this interpreter (not a pyenv shim script).
ENV = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}


def descendant_named(root: int, name: str) -> psutil.Process | None:
    """A descendant whose final program runs ``name`` (``argv[0]`` is not a shell or ``env``)."""
    try:
        for child in psutil.Process(root).children(recursive=True):
            argv = child.cmdline()
            if argv and name in " ".join(argv) and os.path.basename(argv[0]) not in ("bash", "env"):
                return child
    except psutil.Error:
        pass
    return None


async def test_one_process_iter_per_refresh_and_no_children_walk(procs, tmp_path, monkeypatch):
    script = write_claude(tmp_path / "bin")
    work = tmp_path / "work"
    work.mkdir()
    shell = procs.start(["bash", "-c", f"cd {work} && {script}; true"], env=ENV)
    plain = procs.start(["bash", "-c", "sleep 60; true"], cwd=str(tmp_path))
    direct = procs.start([sys.executable, "-c", "import time; time.sleep(60)"], cwd="/")
    wait_until(
        lambda: descendant_named(shell.pid, "claude")
        and descendant_named(plain.pid, "sleep")
        and proctable.read_process(direct.pid)[0]
    )
    daemon = fake_daemon(pane_a=shell, pane_b=plain, pane_c=direct)
    refresher = refresher_for(daemon)  # default: builtin names

    calls: list[object] = []
    real_iter = psutil.process_iter

    def counting_iter(*args, **kwargs):
        calls.append(args)
        return real_iter(*args, **kwargs)

    def no_children(self, *args, **kwargs):
        raise AssertionError("per-pane children() walk")

    monkeypatch.setattr(psutil, "process_iter", counting_iter)
    monkeypatch.setattr(psutil.Process, "children", no_children)

    seen: list[tuple[str, str | None, str | None]] = []
    refresher.on_foreground.append(
        lambda pane, name: seen.append((pane.id, name, refresher.last_foreground.get(pane.id)))
    )
    assert await refresher.refresh_now() == 3
    assert len(calls) == 1
    panes = daemon.store.panes
    a, b, c = panes["pane_a"], panes["pane_b"], panes["pane_c"]
    assert (a.agent.kind, a.agent.display_name, a.process_name, a.cwd) == ("claude", "Claude Code", "claude", str(work))
    assert [u["changed"] for u in updates(daemon.store, "pane_a")] == [["kind", "display_name", "cwd", "process_name"]]
    assert (b.agent.kind, b.process_name, b.cwd) == ("generic", "sleep", str(tmp_path))
    assert [u["changed"] for u in updates(daemon.store, "pane_b")] == [["cwd", "process_name"]]
    assert (c.agent.kind, c.process_name, c.cwd) == ("generic", PY_NAME, "/")  # same cwd: no event
    assert updates(daemon.store, "pane_c") == []
    assert sorted(seen) == [("pane_a", "claude", None), ("pane_b", "sleep", None), ("pane_c", PY_NAME, None)]

    # second period: nothing changed → nothing emitted, still one scan
    before = daemon.store.seq
    dirty_before = daemon.store.dirty = False
    assert await refresher.refresh_now() == 3
    assert len(calls) == 2
    assert daemon.store.seq == before
    assert daemon.store.dirty is dirty_before
    assert ("pane_a", "claude", "claude") in seen  # previous value visible to callbacks
    assert refresher.scans == 2


async def test_process_exiting_between_scan_steps(procs, tmp_path, monkeypatch):
    victim = procs.start([sys.executable, "-c", "import time; time.sleep(60)"], cwd=str(tmp_path))
    other = procs.start(["bash", "-c", "sleep 60; true"], cwd=str(tmp_path))
    gone = procs.start([sys.executable, "-c", "pass"])
    gone.wait(10)  # exited (and reaped) before the scan: not in the snapshot
    wait_until(lambda: descendant_named(other.pid, "sleep"))
    daemon = fake_daemon(victim=victim, other=other, gone=gone)
    daemon.store.panes["victim"].process_name = "before"
    refresher = refresher_for(daemon)
    real_snapshot = proctable.snapshot

    def snapshot_then_kill():
        table = real_snapshot()
        assert victim.pid in table.procs
        victim.kill()
        victim.wait(10)
        return table

    monkeypatch.setattr(proctable, "snapshot", snapshot_then_kill)
    assert await refresher.refresh_now() == 3
    v = daemon.store.panes["victim"]
    assert (v.process_name, v.cwd, v.agent.kind) == ("before", "/", "generic")  # previous values kept
    assert updates(daemon.store, "victim") == []
    assert updates(daemon.store, "gone") == []
    o = daemon.store.panes["other"]
    assert (o.process_name, o.cwd) == ("sleep", str(tmp_path))
    assert refresher.last_foreground == {"victim": None, "other": "sleep", "gone": None}

    # a failing scan is logged and the next refresh works again
    def broken():
        raise psutil.Error("scan failed")

    monkeypatch.setattr(proctable, "snapshot", broken)
    assert await refresher.refresh_now() == 0
    monkeypatch.setattr(proctable, "snapshot", real_snapshot)
    assert await refresher.refresh_now() == 3


async def test_failing_detect_or_callback_spares_other_panes(procs, tmp_path):
    one = procs.start(["bash", "-c", "sleep 60; true"], cwd=str(tmp_path))
    two = procs.start([sys.executable, "-c", "import time; time.sleep(60)"], cwd=str(tmp_path))
    wait_until(lambda: descendant_named(one.pid, "sleep") and proctable.read_process(two.pid)[0])
    daemon = fake_daemon(one=one, two=two)

    def detect(name: str) -> Detection | None:
        if name == "sleep":
            raise RuntimeError("bad catalog")
        return Detection("codex", "codex", "Codex") if name == PY_NAME else None

    refresher = refresher_for(daemon, detect)
    refresher.on_foreground.append(lambda pane, name: 1 / 0)
    assert await refresher.refresh_now() == 1
    assert daemon.store.panes["two"].agent.kind == "codex"
    assert daemon.store.panes["one"].agent.kind == "generic"


def test_builtin_detect():
    assert builtin_detect("claude") == Detection("claude", None, "Claude Code")
    assert builtin_detect("cursor-agent").kind == "cursor"
    assert builtin_detect("agent") is None
    assert builtin_detect("bash") is None


def test_read_process_of_missing_or_reused_pid(procs):
    p = procs.start([sys.executable, "-c", "import time; time.sleep(60)"])
    # Popen returns when the exec began; the new command line may take a moment to appear
    cmdline, cwd = wait_until(lambda: (r := proctable.read_process(p.pid))[0] and r)
    assert cmdline is not None
    assert cmdline[0] == sys.executable
    assert cwd == os.getcwd()
    real = psutil.Process(p.pid).create_time()
    assert proctable.read_process(p.pid, real + 100.0) == (None, None)  # pid reused since the scan
    p.kill()
    p.wait(10)
    assert proctable.read_process(p.pid) == (None, None)
    assert proctable.read_process(0x7FFFFFF0) == (None, None)


# ---------------------------------------------------------------- end to end


@pytest.fixture
def fast_daemon(tmp_root: Path) -> Iterator[DaemonProc]:
    d = DaemonProc(tmp_root)
    cfg = tmp_root / "config" / "signaltty"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text("[server]\nproc_refresh_s = 2\n")
    d.start()
    try:
        yield d
    finally:
        d.stop()
        leftovers = d.kill_leftovers()
        assert not leftovers, f"daemon left children running: {leftovers}"


def type_into(d: DaemonProc, pane_id: str, text: str) -> None:
    d.call("pane.input", {"pane_id": pane_id, "data_b64": base64.b64encode(text.encode()).decode()})


def pane_updates(sub, pane_id: str, seconds: float) -> list[dict]:
    """``pane.updated`` payloads of ``pane_id`` arriving within ``seconds``."""
    out = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            ev = sub.next_event(timeout=left)
        except TimeoutError:
            break
        if ev is None:
            break
        if ev["event"] == "pane.updated" and ev["payload"]["pane"]["id"] == pane_id:
            out.append(ev["payload"])
    return out


def test_e2e_promotion_cwd_follow_and_churn(fast_daemon: DaemonProc):
    d = fast_daemon
    bin_dir = d.root / "bin"
    write_claude(bin_dir)
    proj_a, proj_b = d.root / "projA", d.root / "projB"
    proj_a.mkdir()
    proj_b.mkdir()
    ws = d.call("workspace.create", {"name": "t", "cwd": str(d.root)})["workspace"]
    sub = d.client(timeout=None)
    sub.call("subscribe", {"events": ["pane.updated"]})
    pane = d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["bash", "--norc", "--noprofile"]})["pane"]
    # a pane whose foreground processes keep exiting (some are gone between scan and read)
    churn = d.call(
        "pane.spawn",
        {"workspace_id": ws["id"], "argv": ["bash", "--norc", "--noprofile", "-c", "while :; do sleep 0.02; done"]},
    )["pane"]
    assert pane["agent"]["kind"] == "generic"
    assert pane["process_name"] == "bash"
    pid = pane["id"]

    def get() -> dict:
        return d.call("pane.get", {"pane_id": pid})["pane"]

    # the idle shell is its own foreground program
    wait_until(lambda: get()["process_name"] == "bash", timeout=10)
    type_into(d, pid, f"cd {proj_a} && PATH={bin_dir}:$PATH claude\n")
    d.call("pane.wait_for_output", {"pane_id": pid, "match": "claude-ready", "timeout_s": 10})
    got = wait_until(lambda: (p := get())["agent"]["kind"] == "claude" and p, timeout=10)
    assert got["agent"]["display_name"] == "Claude Code"
    assert got["process_name"] == "claude"
    assert got["cwd"] == str(proj_a)
    promoted = [u for u in pane_updates(sub, pid, 0.5) if "kind" in u["changed"]]
    assert len(promoted) == 1
    assert promoted[0]["pane"]["agent"]["kind"] == "claude"

    # two more periods: nothing changed, nothing emitted
    assert pane_updates(sub, pid, 4.5) == []

    # the foreground program changes directory: exactly one pane.updated (cwd)
    type_into(d, pid, f"{proj_b}\n")
    d.call("pane.wait_for_output", {"pane_id": pid, "match": "moved", "timeout_s": 10})
    ups = pane_updates(sub, pid, 5.0)
    assert [u["changed"] for u in ups] == [["cwd"]]
    assert ups[0]["pane"]["cwd"] == str(proj_b)
    assert get()["cwd"] == str(proj_b)
    assert get()["agent"]["kind"] == "claude"
    sub.close()

    # the churning pane never broke the refresh and is still live
    assert d.call("pane.get", {"pane_id": churn["id"]})["pane"]["live"] == {"state": "live"}
    log = (d.root / "daemon.stderr").read_text(errors="replace")
    assert "refresh.scan_failed" not in log
    assert "refresh.pane_failed" not in log
    assert "refresh.failed" not in log
