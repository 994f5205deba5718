"""Hostile files in the state dir (issue 10, attack pass 4, N5).

A same-uid process can put a FIFO, a directory, a symlink to ``/dev/zero`` or a 2 GiB
sparse file where the daemon keeps a state file. Before the fix a FIFO at
``pane-processes.json`` froze the event loop at the second spawn (it waited on a lock held
by a worker blocked opening the FIFO) and one at ``snapshot.json`` hung start-up. Each case
here runs a real daemon: it must start, spawn panes, answer ``server.status``, stop on
SIGTERM, and have moved the planted thing aside (or refused it and written a fresh file).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signaltty.core.limits import TAIL_FILE_BYTES
from signaltty.proto.client import Client
from signaltty.server.pane_records import PaneRecords
from signaltty.server.persistence import load_snapshot, write_snapshot
from signaltty.system import statefile
from tests.conftest import DaemonProc

PATHS = ("snapshot.json", "pane-processes.json", "daemon.lock", "signaltty.log")
KINDS = ("fifo", "dir", "devzero", "sparse")
SPARSE = 2 << 30  # 2 GiB, no blocks on disk


def _plant(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "dir":
        path.mkdir()
        (path / "inside").write_text("x")
    elif kind == "devzero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as fh:
            fh.truncate(SPARSE)


def _call(d: DaemonProc, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """``method``'s result, or ``TimeoutError`` after 10 s (``Client.call`` would wait
    forever on the frozen daemon this test is about)."""
    deadline = time.monotonic() + 10
    with Client(d.socket, timeout=5) as cl:
        req = cl.send(method, params)
        while True:
            msg = cl.read_message(timeout=max(0.01, deadline - time.monotonic()))
            if msg is None:
                raise ConnectionError("the daemon closed the connection")
            if msg.get("id") == req:
                assert msg.get("ok"), msg
                return dict(msg["result"])


def _spawn(d: DaemonProc, name: str) -> None:
    ws = _call(d, "workspace.create", {"name": name, "cwd": str(d.root)})["workspace"]
    _call(d, "pane.spawn", {"workspace_id": ws["id"], "argv": ["sh", "-c", "exec sleep 600"]})


def _unblock(path: Path) -> None:
    """Open a planted FIFO's other end (both ways) so a daemon blocked on it can go on:
    before the fix this lets the failing test end instead of leaving a hung process."""
    for flags in (os.O_WRONLY, os.O_RDONLY):
        with contextlib.suppress(OSError):
            os.close(os.open(path, flags | os.O_NONBLOCK))


@pytest.fixture
def planted(
    tmp_root: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[DaemonProc, Path, str]]:
    name, kind = request.param
    d = DaemonProc(tmp_root)
    d.state_dir.mkdir(mode=0o700, parents=True)
    path = d.state_dir / name
    _plant(path, kind)
    try:
        yield d, path, kind
    finally:
        if kind == "fifo" and path.exists() and stat.S_ISFIFO(os.lstat(path).st_mode):
            _unblock(path)
        d.stop(timeout=10)
        assert not d.kill_leftovers()


@pytest.mark.parametrize(
    "planted", [(p, k) for p in PATHS for k in KINDS], indirect=True, ids=lambda c: "-".join(c)
)
def test_daemon_survives_hostile_state_file(planted: tuple[DaemonProc, Path, str]) -> None:
    d, path, kind = planted
    began = time.monotonic()
    d.start()  # raises after its own deadline if start-up hangs
    for i in range(3):  # the second spawn froze the loop before the fix
        _spawn(d, f"sh{i}")
    proc = d.proc
    assert proc is not None
    status = _call(d, "server.status")
    assert status["pid"] == proc.pid
    assert status["panes"] == 3
    assert time.monotonic() - began < 30
    assert d.stop(timeout=10) == 0, "the daemon did not stop on SIGTERM"
    assert not d.kill_leftovers()

    # What was planted is gone from the path: a fresh regular file or nothing is there.
    if os.path.lexists(path):
        st = os.lstat(path)
        assert stat.S_ISREG(st.st_mode), f"{path.name} still holds a {kind}"
        if path.name in ("snapshot.json", "pane-processes.json"):
            assert st.st_size < SPARSE, "the oversized file was kept"
    stem = path.name.split(".")[0]
    asides = [p for p in d.state_dir.iterdir() if p.name != path.name and p.name.startswith(stem)]
    if kind != "sparse" or path.name == "snapshot.json":
        assert asides, f"the planted {kind} was not moved aside"
    if kind != "sparse":
        want = {"fifo": stat.S_ISFIFO, "dir": stat.S_ISDIR, "devzero": stat.S_ISLNK}[kind]
        assert any(want(os.lstat(p).st_mode) for p in asides), f"moved aside: {asides}"
    # ... and the refusal is a clear line in the log (or on stderr, for the log itself).
    if path.name == "signaltty.log":
        text = d.stderr()
    else:
        text = (d.state_dir / "signaltty.log").read_text(errors="replace")
    if kind != "sparse":
        assert path.name in text, text[-2000:]
        assert any(w in text for w in ("not a", "not_a_file", "not_regular")), text[-2000:]


def test_atomic_write_replaces_links_and_fifos_never_through_them(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_bytes(b"keep")
    link = tmp_path / "state.json"
    link.symlink_to(target)
    statefile.atomic_write(link, b"new")
    assert target.read_bytes() == b"keep"
    assert not link.is_symlink()
    assert link.read_bytes() == b"new"
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    statefile.atomic_write(fifo, b"data")  # would block forever if it opened the FIFO
    assert stat.S_ISREG(os.lstat(fifo).st_mode)
    assert fifo.read_bytes() == b"data"
    folder = tmp_path / "dir.json"
    folder.mkdir()
    statefile.atomic_write(folder, b"x")
    assert folder.read_bytes() == b"x"
    assert any(p.name.startswith("dir.json.bad-") and p.is_dir() for p in tmp_path.iterdir())
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_atomic_write_many_replaces_in_batches_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """The tails' batched write (issue 12): more files than one batch keeps open, with a
    symlink, a FIFO and a directory planted among them; then a batch that fails half way."""
    fds_before = len(os.listdir("/proc/self/fd"))
    target = tmp_path / "victim"
    target.write_bytes(b"keep")
    (tmp_path / "f007").symlink_to(target)
    os.mkfifo(tmp_path / "f070")
    (tmp_path / "f130").mkdir()
    files = {f"f{i:03d}": f"content {i}".encode() for i in range(150)}
    statefile.atomic_write_many(tmp_path, files)
    for name, data in files.items():
        assert stat.S_ISREG(os.lstat(tmp_path / name).st_mode), name
        assert (tmp_path / name).read_bytes() == data
    assert target.read_bytes() == b"keep"
    assert any(p.name.startswith("f130.bad-") for p in tmp_path.iterdir())
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    # The second batch cannot create a temp file for "missing/x": the first batch is in
    # place, nothing of the second is, and no temp file or descriptor is left.
    files = {f"g{i:03d}": b"new" for i in range(70)}
    files["missing/x"] = b"never"
    files.update({f"h{i:03d}": b"new" for i in range(5)})
    with pytest.raises(FileNotFoundError):
        statefile.atomic_write_many(tmp_path, files)
    names = {p.name for p in tmp_path.iterdir()}
    assert {f"g{i:03d}" for i in range(64)} <= names
    assert not {f"g{i:03d}" for i in range(64, 70)} & names
    assert not [n for n in names if n.endswith(".tmp") or n.startswith("h")]
    assert len(os.listdir("/proc/self/fd")) == fds_before


@pytest.mark.parametrize("kind", ["fifo", "devzero", "dir", "sparse"])
def test_hostile_tail_is_not_read(tmp_path: Path, kind: str) -> None:
    """A pane's tail file that is a FIFO / link to /dev/zero / directory / huge sparse file:
    the restore neither blocks nor reads it unbounded."""
    ws = {"id": "w1", "name": "w", "cwd": "/", "pane_ids": ["p1"]}
    pane = {"id": "p1", "workspace_id": "w1", "argv": ["sh"], "cwd": "/", "cols": 80, "rows": 24}
    doc = {"version": 1, "workspaces": [ws], "panes": [pane]}
    (tmp_path / "snapshot.json").write_text(json.dumps(doc))
    hist = tmp_path / "history"
    hist.mkdir()
    _plant(hist / "p1.tail", kind)
    began = time.monotonic()
    restored = load_snapshot(tmp_path)
    assert time.monotonic() - began < 10
    assert [p.id for p in restored.panes] == ["p1"], restored.errors
    if kind == "sparse":
        assert len(restored.tails["p1"]) <= TAIL_FILE_BYTES
    else:
        assert "p1" not in restored.tails
        assert not os.path.lexists(hist / "p1.tail"), "the planted tail was not moved aside"


def test_history_symlink_is_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    state = tmp_path / "state"
    state.mkdir()
    (state / "history").symlink_to(elsewhere)
    write_snapshot(state, b'{"version": 1}\n', {"p1": "hello"}, {"p1"})
    assert list(elsewhere.iterdir()) == [], "a tail was written through the symlink"
    assert (state / "history").is_dir()
    assert not (state / "history").is_symlink()
    assert (state / "history" / "p1.tail").read_text() == "hello"


def test_note_leader_never_waits_for_the_file_lock(tmp_path: Path) -> None:
    """The event loop's ``note_leader`` must not wait while a worker holds the records'
    I/O lock (before the fix one lock covered both, so a worker stuck in ``open`` froze the
    loop). The worker here is a thread holding that lock as a stuck write would."""
    records = PaneRecords(tmp_path)
    held, release = threading.Event(), threading.Event()

    def stuck_writer() -> None:
        with records._io_lock:  # what a write blocked in I/O holds
            held.set()
            release.wait(30)

    worker = threading.Thread(target=stuck_writer)
    worker.start()
    try:
        assert held.wait(10)
        began = time.monotonic()
        assert records.note_leader(os.getpid()) is True
        assert time.monotonic() - began < 1
    finally:
        release.set()
        worker.join()
    records.write()
    assert str(os.getpid()) in (tmp_path / "pane-processes.json").read_text()
