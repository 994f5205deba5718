"""``server.restart``: replace the running daemon with the installed code, keeping every pane.

The old image checks that the installed code starts and restores this daemon's state
(``daemon --check`` in a child with a handover document of the state as it is, ≤ 20 s),
tells subscribers (``server.restarting``), pauses every pane's reader where its parser rests,
saves the snapshot, writes the handover (``server/handover.py``) and ``exec``s the same
interpreter with the same flags. Same pid: the pane programs stay its children (their exit
statuses are still ours to collect) and systemd's main pid does not change. The PTY masters,
the state-dir lock and the listening socket are inherited, so no output is lost — a program
that writes meanwhile blocks on a full PTY like in a slow terminal — and a client connecting
during the switch waits in the socket's backlog. A native permission wait and the restart
call itself are answered by the new image on the connection they came on; other clients see
their connection close and reconnect (``subscribe {from_seq}`` replays what they missed).

If the check fails or ``exec`` does, nothing was given up: the readers resume and the caller
gets ``RESTART_FAILED`` with the reason. Spec: issue 15 items 1 and 5.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import structlog

from signaltty import __version__
from signaltty.agents.catalog import Catalog
from signaltty.core import rules
from signaltty.core.ids import new_id
from signaltty.core.model import Pane
from signaltty.proto.envelope import SignalttyError
from signaltty.server import handover, persistence
from signaltty.server.fdstore import PtyStore
from signaltty.server.handover import FdTable, HandoverError, HeldEntry, PtyEntry
from signaltty.server.hooks import HookService
from signaltty.server.listener import Listener
from signaltty.server.panes import PaneRuntime
from signaltty.server.store import Store
from signaltty.server.supervisor import Supervisor
from signaltty.system import sdnotify
from signaltty.term import pty as ptymod

log = structlog.get_logger("signaltty.restart")

# the whole restart fits systemd's TimeoutStartSec=30 (a reload job's bound)
CHECK_TIMEOUT_S = 20.0
# all panes together may read on this long for their parsers to rest
_GROUND_BUDGET_S = 1.0
# runtime fields of a pane that the snapshot format leaves out but a live pane keeps
_FLAGS = ("hooked", "exit_applied", "title_from_osc", "screen_rules", "promoted", "turn_input")
_TIMES = ("last_signal_at", "input_at", "request_ended_at")
_DICTS = ("osc_progress", "program_status", "integration")
_STRINGS = ("process_instance", "attention_marker", "process_name")
_EVENT_NAME_MAX = 64


class Daemon(Protocol):
    """What a restart reads and sets of the daemon (``server.daemon.Daemon``)."""

    store: Store
    runtimes: dict[str, PaneRuntime]
    hooks: HookService
    listener: Listener | None
    supervisor: Supervisor
    catalog: Catalog
    state_dir: Path
    instance_id: str
    started_at: float
    started_mono: float
    restarts: int
    person_pids: dict[int, float | None]
    person_ended: dict[int, float]
    handover_waits: dict[str, Any]
    pty_store: PtyStore

    @property
    def shutting_down(self) -> bool: ...

    @property
    def lock_fd(self) -> int | None: ...

    async def save(self) -> bool: ...

    def flag_argv(self) -> list[str]: ...

    def disk_lock(self) -> threading.Lock: ...


class Restarter:
    """The old image's side: one restart at a time; a second caller joins the first."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self._task: asyncio.Task[None] | None = None
        self._callers: list[Any] = []
        self._paused_at = 0.0
        self._listen_fd: int | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def restart(self, conn: Any) -> dict[str, Any]:
        """Answered by the new image on ``conn``; never returns here on success.

        Raises:
            SignalttyError: ``RESTART_FAILED`` — the installed code does not start (its
                error output quoted), ``exec`` failed, or the daemon is shutting down.
        """
        if self.daemon.shutting_down:
            raise SignalttyError("RESTART_FAILED", "the daemon is shutting down")
        if conn is not None:
            self._callers.append(conn)
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self._switch())
        assert self._task is not None
        try:
            await asyncio.shield(self._task)
        finally:
            if conn is not None and conn in self._callers:
                self._callers.remove(conn)
        raise SignalttyError("RESTART_FAILED", "the daemon did not restart")  # unreachable

    async def _switch(self) -> None:
        d = self.daemon
        await self._check()
        live = [rt for rt in d.runtimes.values() if rt.live]
        d.store.emit("server.restarting", {"panes": len(live)})
        self._paused_at = time.time()
        log.info("restart.started", panes=len(live), version=__version__)
        budget_end = time.monotonic() + _GROUND_BUDGET_S
        unrested = [
            rt.pane.id
            for rt in live
            if not rt.pause_for_handover(max(0.0, budget_end - time.monotonic()))
        ]
        if unrested:
            log.warning("restart.mid_sequence", panes=unrested)
        # From here new connections wait in the backlog for the new image: the socket is
        # kept open by a dup while this image stops accepting; requests on connections it
        # accepted before are answered while the snapshot is written.
        self._listen_fd = _stop_accepting(d)
        try:
            await d.save()
            if d.shutting_down:  # a stop arrived meanwhile: it wins, nothing is handed over
                raise RuntimeError("the daemon is shutting down")
            self._exec()
        except BaseException as exc:
            for rt in live:
                rt.resume_reading()
            if d.shutting_down and self._listen_fd is not None:
                os.close(self._listen_fd)
            else:
                await _accept_again(d, self._listen_fd)
            self._listen_fd = None
            if isinstance(exc, asyncio.CancelledError):
                raise
            log.exception("restart.failed")
            raise SignalttyError("RESTART_FAILED", f"cannot restart: {exc}") from None

    async def _check(self) -> None:
        """Start the installed code with ``daemon --check`` and the same flags, and let it
        restore (in its own memory, no PTY) from a handover document of the state as it is
        now: the new code's restore path runs on this daemon's real data before anything is
        given up."""
        try:
            doc_fd = handover.write_doc(self.document(exact=False), self.daemon.state_dir)
        except OSError as exc:
            raise SignalttyError(
                "RESTART_FAILED", f"cannot write the handover: {exc.strerror or exc}"
            ) from None
        argv = [
            sys.executable,
            "-m",
            "signaltty",
            "daemon",
            "--check",
            "--check-handover",
            str(doc_fd),
            *self.daemon.flag_argv(),
        ]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                cwd="/",
                pass_fds=(doc_fd,),
            )
        except OSError as exc:
            raise SignalttyError(
                "RESTART_FAILED", f"cannot start {sys.executable}: {exc.strerror or exc}"
            ) from None
        finally:
            os.close(doc_fd)
        try:
            async with asyncio.timeout(CHECK_TIMEOUT_S):
                out, _ = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise SignalttyError(
                "RESTART_FAILED",
                f"the installed signaltty did not start within {CHECK_TIMEOUT_S:g} s; "
                "this daemon goes on",
            ) from None
        if proc.returncode != 0:
            lines = out.decode("utf-8", "replace").strip().splitlines() or ["(no output)"]
            # the last traceback frame names the file and line (a SyntaxError's too)
            where = [ln.strip() for ln in lines if ln.strip().startswith('File "')][-1:]
            why = " | ".join([*where, *(line.strip() for line in lines[-3:])])[:800]
            raise SignalttyError(
                "RESTART_FAILED",
                f"the installed signaltty does not start (exit {proc.returncode}): {why}; "
                "this daemon goes on",
            )

    def _exec(self) -> None:
        """Write the handover and ``exec``; returns only by raising (nothing was lost)."""
        d = self.daemon
        table = FdTable(lock_fd=d.lock_fd, listen_fd=self._listen_fd)
        for rt in d.runtimes.values():
            if rt.live and rt.proc is not None and rt.proc.master_fd >= 0:
                table.ptys.append(
                    PtyEntry(rt.pane.id, rt.proc.pid, rt.proc.master_fd, rt.proc.slave_path)
                )
        dups: list[int] = []
        hooks_state = d.hooks.handover_state()
        try:
            for did, route in list(d.hooks.routes.items()):
                fd = _client_fd(route.client)
                if fd is not None:
                    dups.append(fd)
                    table.held.append(HeldEntry(fd, did, route.client.request_id))
            for conn in self._callers:
                fd = _client_fd(conn)
                if fd is not None:
                    dups.append(fd)
                    table.held.append(HeldEntry(fd, "restart", conn.request_id))
            doc = self._document(hooks_state)
            if d.supervisor.faults.take_step("handover_document"):
                doc = {"format": handover.FORMAT, "snapshot": "{not json"}
            table.doc_fd = handover.write_doc(doc, d.state_dir)
            dups.append(table.doc_fd)
            for fd in table.fds():
                os.set_inheritable(fd, True)
            env = dict(os.environ)
            env[handover.ENV] = table.encode()
            argv = [*_own_command(), "daemon", *d.flag_argv()]
            sdnotify.reloading()
            log.info("restart.exec", panes=len(table.ptys), held=len(table.held))
            # the snapshot writer must not be cut off mid-write by the exec
            try:
                cwd = os.getcwd()
            except OSError:  # removed under us: "/" is as good
                cwd = "/"
            with d.disk_lock():
                os.chdir("/")  # `python -m` puts the cwd first on sys.path
                try:
                    os.execve(argv[0], argv, env)
                finally:
                    os.chdir(cwd)  # only reached when the exec failed
        except BaseException:
            for fd in table.fds():
                with contextlib.suppress(OSError):
                    os.set_inheritable(fd, False)
            for fd in dups:
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise

    def document(self, *, exact: bool = True) -> dict[str, Any]:
        """The handover document without held connections (a ``systemctl restart`` puts it
        in systemd's fd store, server/fdstore.py; ``exact=False``: the check's, screens left
        out — ``PaneRuntime.handover_state``)."""
        return self._document(self.daemon.hooks.handover_state(), exact=exact)

    def _document(self, hooks_state: dict[str, Any], *, exact: bool = True) -> dict[str, Any]:
        d = self.daemon
        store = d.store
        panes = list(store.panes.values())
        snapshot = persistence.serialize_snapshot(
            sorted(store.workspaces.values(), key=lambda w: w.created_at),
            panes,
            list(store.notifications),
            store.now(),
        ).decode("utf-8")
        return {
            "format": handover.FORMAT,
            "version": __version__,
            "restarts": d.restarts + 1,
            "paused_at": self._paused_at,
            "instance_id": d.instance_id,
            "started_at": d.started_at,
            "seq": store.seq,
            "ring": [[seq, name, payload] for seq, name, payload in store.ring],
            "seqs": store.seqs,
            "snapshot": snapshot,
            "runtime": {p.id: _runtime_fields(p) for p in panes},
            "panes": {pid: rt.handover_state(exact=exact) for pid, rt in d.runtimes.items()},
            "hooks": hooks_state,
            "person_pids": [[pid, start] for pid, start in d.person_pids.items()],
            "person_ended": [[pid, at] for pid, at in d.person_ended.items()],
        }


def _wait_on(hooks: HookService, route: Any, conn: Any) -> Any:
    return hooks.wait_on(route, conn)


def _own_command() -> list[str]:
    """How this daemon was started: the ``signaltty`` console script (so ``ps`` and
    ``pgrep -f 'signaltty daemon'`` see the same command after a restart), else
    ``python -m signaltty``."""
    script = sys.argv[0] if sys.argv else ""
    if os.path.basename(script) == "signaltty" and os.access(script, os.X_OK):
        return [os.path.abspath(script)]
    return [sys.executable, "-m", "signaltty"]


def _stop_accepting(d: Daemon) -> int | None:
    """A dup of the listening socket (it stays open, its backlog fills), then this image
    stops accepting on it."""
    fd = d.listener.listening_fd() if d.listener is not None else None
    if fd is None:
        return None
    keep = os.dup(fd)
    d.listener.stop_listening()  # type: ignore[union-attr]
    return keep


async def _accept_again(d: Daemon, fd: int | None) -> None:
    """Undo :func:`_stop_accepting` (a restart that did not happen)."""
    if fd is not None and d.listener is not None:
        await d.listener.start_on(socket.socket(fileno=fd))


def _client_fd(conn: Any) -> int | None:
    """A dup of a connection's socket (inheritable later), or None when it has none."""
    writer = getattr(conn, "_writer", None)
    sock = writer.get_extra_info("socket") if writer is not None else None
    if sock is None or getattr(conn, "request_id", None) is None:
        return None
    try:
        return os.dup(sock.fileno())
    except OSError:
        return None


def _runtime_fields(pane: Pane) -> dict[str, Any]:
    return {name: getattr(pane, name) for name in (*_FLAGS, *_TIMES, *_DICTS, *_STRINGS)}


def _apply_runtime_fields(pane: Pane, fields: object) -> None:
    """Runtime fields from the document, each only when of its type."""
    if not isinstance(fields, dict):
        return
    for name in _FLAGS:
        if isinstance(fields.get(name), bool):
            setattr(pane, name, fields[name])
    for name in _TIMES:
        value = fields.get(name)
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            setattr(pane, name, value)
    for name in _DICTS:
        value = fields.get(name)
        if value is None or isinstance(value, dict):
            setattr(pane, name, value)
    for name in _STRINGS:
        value = fields.get(name)
        if (value is None and name != "process_instance") or (
            isinstance(value, str) and len(value) <= 256
        ):
            setattr(pane, name, value)


# ---------------------------------------------------------------- the new image


def read_table() -> FdTable | None:
    """``SIGNALTTY_HANDOVER`` from the environment (removed: panes never inherit it)."""
    text = os.environ.pop(handover.ENV, None)
    if text is None:
        return None
    try:
        table = handover.parse_table(text)
    except HandoverError as exc:
        log.error("handover.table_unusable", why=str(exc))
        return None
    for fd in table.fds():  # no pane program started later may inherit them
        os.set_inheritable(fd, False)
    return table


def adopt(
    d: Daemon, table: FdTable, *, children: bool = True, snapshot_fallback: bool = True
) -> dict[str, Any]:
    """Restore the store and the panes from the handover (the snapshot saved just before the
    switch when the document cannot be used); live panes keep their processes and PTYs
    (``children=False``: programs kept by systemd's fd store, not ours to reap).

    Returns:
        The ``server.restarted`` event payload.
    """
    doc: dict[str, Any] | None = None
    if table.doc_fd is not None:
        try:
            doc = handover.read_doc(table.doc_fd)
        except HandoverError as exc:
            log.error("handover.document_unusable", why=str(exc))
    restored: persistence.Restored | None = None
    if doc is not None:
        try:
            raw = doc.get("snapshot")
            if not isinstance(raw, str):
                raise persistence.CorruptSnapshot("no snapshot in the document")
            restored = persistence.parse_snapshot(raw.encode("utf-8"), d.catalog)
        except persistence.CorruptSnapshot as exc:
            log.error("handover.document_unusable", why=str(exc))
            doc = None
    if restored is None:
        if not snapshot_fallback:  # `daemon --check`: the document itself must be usable
            raise HandoverError("the handover document cannot be used")
        restored = persistence.load_snapshot(d.state_dir, d.catalog)
    for err in restored.errors:
        log.error("snapshot.restore_problem", error=err)
    store = d.store
    for ws in restored.workspaces:
        store.workspaces[ws.id] = ws
    store.notifications.extend(restored.notifications)
    if doc is not None:
        _adopt_events(d, doc)
    ptys = {e.pane_id: e for e in table.ptys}
    runtime = doc.get("runtime") if doc is not None else None
    screens = doc.get("panes") if doc is not None else None
    kept = 0
    for pane in sorted(restored.panes, key=lambda p: p.created_at):
        entry = ptys.pop(pane.id, None)
        if isinstance(runtime, dict):
            _apply_runtime_fields(pane, runtime.get(pane.id))
        if not pane.process_instance:
            pane.process_instance = new_id("pi")
        if pane.live and entry is None or doc is None and not pane.live:
            rules.restore(pane, has_resume=bool(pane.agent.resume_argv))
        store.panes[pane.id] = pane
        rt = PaneRuntime(store, pane)
        state = screens.get(pane.id) if isinstance(screens, dict) else None
        try:
            if isinstance(state, dict):
                rt.adopt_handover(state)
            elif restored.tails.get(pane.id):
                rt.retained_text = restored.tails[pane.id]
                rt.screen.feed(restored.tails[pane.id].replace("\n", "\r\n").encode())
                rt.settle_now()
        except Exception as exc:  # noqa: BLE001 - the pane is kept with a fresh screen
            log.error("handover.pane_problem", pane_id=pane.id, error=repr(exc))
        d.runtimes[pane.id] = rt
        if entry is not None and pane.live:
            rt.start(
                ptymod.PtyProcess(entry.pid, entry.master_fd, entry.slave_path), child=children
            )
            d.pty_store.remember(rt)
            if not children:
                d.hooks.pane_procs.note(entry.pid, pane.id)
            kept += 1
    for entry in ptys.values():  # a process whose pane record did not come back
        log.error("handover.pane_unknown", pane_id=entry.pane_id, pid=entry.pid)
        with contextlib.suppress(OSError):
            os.killpg(entry.pid, 1)
        with contextlib.suppress(OSError):
            os.close(entry.master_fd)
    if doc is not None:
        hooks_state = doc.get("hooks")
        if isinstance(hooks_state, dict):
            d.hooks.adopt_handover(hooks_state)
        people = doc.get("person_pids")
        if isinstance(people, list):
            for item in people[:1024]:
                if isinstance(item, list) and len(item) == 2 and type(item[0]) is int:
                    start = item[1]
                    if start is None or isinstance(start, (int, float)):
                        d.person_pids[item[0]] = start
        ended = doc.get("person_ended")
        if isinstance(ended, list):
            for item in ended[:1024]:
                if (
                    isinstance(item, list)
                    and len(item) == 2
                    and item[0] in d.person_pids
                    and isinstance(item[1], (int, float))
                    and not isinstance(item[1], bool)
                ):
                    d.person_ended[item[0]] = float(item[1])
        waits = hooks_state.get("waits") if isinstance(hooks_state, dict) else None
        d.handover_waits = waits if isinstance(waits, dict) else {}
        started = doc.get("started_at")
        now = time.time()
        if isinstance(started, (int, float)) and not isinstance(started, bool) and started < now:
            # uptime counts from the first start, not from this image
            d.started_at = float(started)
            d.started_mono = time.monotonic() - (now - float(started))
        restarts = doc.get("restarts")
        if type(restarts) is int and restarts > 0:
            d.restarts = restarts
    _unanswerable_without_route(d, doc, table)
    previous = doc.get("version") if doc is not None else None
    paused_at = doc.get("paused_at") if doc is not None else None
    return {
        "pid": os.getpid(),
        "version": __version__,
        "previous_version": previous if isinstance(previous, str) else None,
        "panes_kept": kept,
        "handover": "complete" if doc is not None else "snapshot",
        "restarts": d.restarts,
        # from the old image pausing the readers to the new one restored (before it reads)
        "switch_ms": round((time.time() - paused_at) * 1000, 1)
        if isinstance(paused_at, (int, float)) and not isinstance(paused_at, bool)
        else None,
    }


def _adopt_events(d: Daemon, doc: dict[str, Any]) -> None:
    """The seq, the replay ring and the per-pane transition seqs (wait baselines)."""
    store = d.store
    seq = doc.get("seq")
    if type(seq) is not int or seq < 0:
        return
    store.seq = seq
    ring = doc.get("ring")
    if isinstance(ring, list):
        last = 0
        for item in ring[-(store.ring.maxlen or 0) :]:
            if (
                isinstance(item, list)
                and len(item) == 3
                and type(item[0]) is int
                and last < item[0] <= seq
                and isinstance(item[1], str)
                and len(item[1]) <= _EVENT_NAME_MAX
                and isinstance(item[2], dict)
            ):
                store.ring.append((item[0], item[1], item[2]))
                last = item[0]
    seqs = doc.get("seqs")
    if isinstance(seqs, dict):
        for pane_id, marks in seqs.items():
            if isinstance(marks, dict):
                clean = {
                    k: v
                    for k, v in marks.items()
                    if isinstance(k, str) and type(v) is int and 0 <= v <= seq
                }
                store.seqs[pane_id] = clean


def _unanswerable_without_route(d: Daemon, doc: dict[str, Any] | None, table: FdTable) -> None:
    """A native decision whose reporter was not handed over cannot be answered any more
    (nobody would deliver the verdict): shown read-only, as after a restore."""
    held = {h.key for h in table.held}
    for pane in d.store.panes.values():
        dec = pane.pending_decision
        if dec is not None and dec.native and dec.answerable and dec.id not in held:
            rules.disarm_native_decision(pane)


def serve_held(d: Daemon, table: FdTable, restarted: dict[str, Any]) -> None:
    """Answer the calls handed over: native waits when their verdict comes, restart callers
    at once with ``restarted``."""
    assert d.listener is not None
    for entry in table.held:
        sock = socket.socket(fileno=entry.fd)
        if entry.key == "restart":

            async def answer(_conn: Any, payload: dict[str, Any] = restarted) -> dict[str, Any]:
                return {"restarted": True, **payload}

            d.listener.adopt(sock, entry.req_id, answer)
            continue
        route = d.hooks.resume_wait(entry.key, d.handover_waits.get(entry.key))
        if route is None:
            sock.close()
            continue
        d.listener.adopt(sock, entry.req_id, functools.partial(_wait_on, d.hooks, route))
