"""The daemon process: start-up sequence, background loops, signals and shutdown.

Spec: desktop-and-service.md §2 (start, singleton, lock, restore, readiness, shutdown order),
§3.2 (sd_notify), §8 (persistence); README "Background loops".
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import gc
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import structlog

from signaltty import __version__
from signaltty.agents.catalog import Catalog, load_catalog
from signaltty.core import rules
from signaltty.core.ids import new_id
from signaltty.core.model import Pane
from signaltty.core.refresh import Detection
from signaltty.proto.envelope import SignalttyError
from signaltty.server import ancestry, handover, persistence
from signaltty.server.bus import Bus
from signaltty.server.config import Config, load_config, parse_hosts
from signaltty.server.fdstore import PtyStore, kill_unit_leftovers
from signaltty.server.handover import FdTable, PtyEntry
from signaltty.server.hooks import Caller, HookService
from signaltty.server.listener import Listener
from signaltty.server.panes import PaneRuntime
from signaltty.server.refresh import ProcessRefresher, builtin_detect
from signaltty.server.remote import RemoteHosts
from signaltty.server.restart import Restarter, serve_held
from signaltty.server.restart import adopt as adopt_handover
from signaltty.server.restart import read_table as read_handover_table
from signaltty.server.router import Router
from signaltty.server.sleep import LogindLink, SleepWatch
from signaltty.server.socketwatch import SocketWatch
from signaltty.server.spawning import Spawner
from signaltty.server.store import Store
from signaltty.server.supervisor import InjectedFault, Policy, Supervisor, parse_faults
from signaltty.server.sweep import ScreenSweep
from signaltty.system import (
    hardening,
    memory,
    paths,
    sdnotify,
    shellpath,
    statefile,
    subreaper,
)
from signaltty.system.logging import configure_logging
from signaltty.term import pty as ptymod
from signaltty.term.screen import native

log = structlog.get_logger("signaltty.daemon")

# Tail-only saves (output changed, nothing persisted changed) run at most this often.
_TAIL_SAVE_S = 10.0
# Shutdown save: time to finish applying a pane's pending screen bytes before its tail is taken,
# per pane and in total; the whole shutdown must fit systemd's TimeoutStopSec=15
# (desktop-and-service.md §3.1), and a snapshot step cut off by its timeout writes nothing.
_FINAL_SETTLE_PANE_S = 2.0
_FINAL_SETTLE_S = 5.0
# A periodic save's share of that, in total: a pane that prints a little and that nobody
# reads keeps its output pending (it waits for a reader or the sweep; a pane with no screen
# rules has no sweep), so its tail would stay empty until shutdown, and a crash lost it
# (attack pass, session 20). The settle yields between pieces, so the loop goes on.
_TAIL_SETTLE_S = 0.25
_KILL_AFTER_S = 3.0
_CLOSE_KILL_AFTER_S = 5.0
# after the last pane close, collect and trim once (a burst of closes costs one pass)
_TRIM_AFTER_S = 1.0
# The interpreter's GIL switch interval in the daemon (seconds; CPython's default is 0.005).
SWITCH_INTERVAL_S = 0.001
# Names of the supervised tasks and of the shutdown steps (SIGNALTTY_FAULTS may name them).
TASK_NAMES = (
    "watchdog",
    "flusher",
    "orphan-reaper",
    "proc-refresh",
    "screen-sweep",
    "path-hydration",
    "sighup-reload",
    "socket-watch",
    "dbus",
    "logind",
)
SHUTDOWN_STEPS = (
    "hooks",
    "single_flight",
    "will_shutdown",
    "stop_accepting",
    "tasks",
    "snapshot",
    "notifications",
    "dbus",
    "children",
    "connections",
    "socket",
    "lock",
    "handover",
    # not a shutdown step: a restart writes a corrupt handover document (tests, issue 15)
    "handover_document",
)


# One snapshot write at a time: a save cancelled at shutdown (the flusher's) goes on in its
# worker thread, and the final save must neither share its temp file nor be replaced by it.
_DISK_LOCK = threading.Lock()


def _freeze_survivors() -> None:
    """Move every object alive after start-up (modules, config, restored panes) out of the
    collector's reach, after one collection so no garbage is kept: automatic full collections
    then walk only what came later (issue 12: ~57 000 start-up objects, 10-15 ms per full
    pass). Frozen objects are still freed by reference counting; ``Daemon._release_memory``
    unfreezes before its collection (so a closed pane's cycles are freed) and freezes what
    is alive after it: with 400 panes a full pass took 41 ms instead of 110."""
    gc.collect()
    gc.freeze()


def _write_snapshot(state_dir: Path, data: bytes, tails: dict[str, str], keep: set[str]) -> None:
    with _DISK_LOCK:
        persistence.write_snapshot(state_dir, data, tails, keep)


class StartupError(Exception):
    """The daemon refuses to start; ``str()`` is the message printed before exit 1."""


class Daemon:
    """One ``signaltty daemon`` process."""

    def __init__(
        self,
        *,
        socket_flag: str | None = None,
        state_dir_flag: str | None = None,
        config_flag: str | None = None,
        agents_dir_flag: str | None = None,
        log_level: str | None = None,
        handover: FdTable | None = None,
    ) -> None:
        # as given: `signaltty restart` execs the new image with the same flags
        self._flags = {
            "--socket": socket_flag,
            "--state-dir": state_dir_flag,
            "--config": config_flag,
            "--agents-dir": agents_dir_flag,
            "--log-level": log_level,
        }
        # what a restart handed over (server/handover.py), None on a plain start
        self.handover = handover
        self.config_path = paths.config_file(config_flag)
        self.config: Config
        self.config, self.config_error, self.config_warnings = load_config(
            self.config_path, log_level=log_level
        )
        self.socket_path = paths.socket_path(socket_flag)
        self.default_socket = paths.is_default_socket(socket_flag)
        self.state_dir = paths.state_dir(state_dir_flag)
        self.agents_dir_flag = agents_dir_flag
        # --agents-dir > $SIGNALTTY_AGENTS_DIR > config agents.dir > XDG (agents.md §4.2);
        # resolved once: reloads re-read this directory, they do not re-resolve it.
        self.agents_dir = paths.agents_dir(agents_dir_flag, self.config.agents.dir)
        self.catalog: Catalog = Catalog.empty(str(self.agents_dir))  # loaded in prepare()
        # Reloads run load_catalog in a worker thread, one at a time; requests arriving
        # meanwhile share the next load (generation counters), and SIGHUPs share one task.
        self._reload_lock = asyncio.Lock()
        self._reload_requested = 0
        self._reload_done = 0
        self._reload_outcome: dict[str, Any] | SignalttyError | None = None
        self._sighup_task: asyncio.Task[None] | None = None
        self._sighup_again = False
        self.instance_id = new_id("inst")
        self.started_mono = time.monotonic()
        self.started_at = time.time()
        self.restarts = 0  # in-place restarts since the process started (issue 15)
        # native waits a restart handed over, answered on inherited connections
        self.handover_waits: dict[str, Any] = {}
        self.restarter = Restarter(self)
        self.bus = Bus()
        self.store = Store(self.bus)
        self.runtimes: dict[str, PaneRuntime] = {}
        # Services get the collaborators they use; for what only the daemon does or knows
        # they get this object typed as one of the narrow Protocols of server/ports.py.
        store, config, runtimes = self.store, self.config, self.runtimes
        # time asleep: native waits and the sweep's wall-clock holds leave it out (sleep.py)
        self.sleep = SleepWatch()
        self.sweep = ScreenSweep(
            store=store, config=config, runtimes=runtimes, catalogs=self, clock=self.sleep
        )
        # watched hosts over ssh (issue 16 item 3): one supervised link task per host
        self.remote = RemoteHosts(store=store, start=self._start_host_task)
        self.hooks = HookService(
            store=store,
            config=config,
            runtimes=runtimes,
            catalogs=self,
            facts=self,
            state_dir=self.state_dir,
            clock=self.sleep,
        )
        # logind's delay lock (issue 15 item 3): saved before shutdown and sleep
        self.logind = LogindLink(
            self.sleep, self.save, enabled=os.environ.get("SIGNALTTY_LOGIND") != "0"
        )
        # PTY masters in systemd's fd store: panes outlive a crash (issue 15 item 2)
        self.pty_store = PtyStore()
        self.store.bus.observers.append(self.pty_store.on_event)
        self._keep_panes = False  # set at shutdown for a `systemctl restart`
        self.spawner = Spawner(
            store=store,
            config=config,
            runtimes=runtimes,
            catalogs=self,
            hydration=self,
            socket_path=str(self.socket_path),
            forget_pane=self.hooks.forget_pane,
            on_started=self.pty_store.keep,
        )
        self.router = Router(
            store=store,
            config=config,
            runtimes=runtimes,
            control=self,
            catalogs=self,
            hydration=self,
            facts=self,
            spawner=self.spawner,
            hooks=self.hooks,
            sweep=self.sweep,
            remote=self.remote,
        )
        self.hooks.remote = self.remote
        self.listener: Listener | None = None
        self.single_flight: set[asyncio.Task[Any]] = set()
        self.shutting_down = False
        self.path_hydration: dict[str, Any] = {"state": "pending", "added": []}
        self.hydrated = asyncio.Event()
        self._lock_fd: int | None = None
        self._socket_ino: int | None = None
        self.socket_watch: SocketWatch | None = None  # set once listening
        self._stop = asyncio.Event()
        # owns every long-lived task; run() serves inside it (server/supervisor.py)
        self.supervisor = Supervisor(on_fatal=self._task_fatal)
        self._last_tail_save = 0.0
        self._last_save = 0.0
        self._saved_offsets: dict[str, int] = {}
        self._reapers: set[asyncio.Task[None]] = set()
        self._closing: set[PaneRuntime] = set()
        self._trim_handle: asyncio.TimerHandle | None = None
        self._hurry = False
        self.dbus_service: Any = None  # signaltty.desktop.dbus.DbusService once started
        self.notifier: Any = None  # signaltty.desktop.notify.Notifier once started
        self.refresher: ProcessRefresher | None = None  # process refresh, set in run()
        # processes started for the person (a notification click's terminal) → start time;
        # the self-approval guard trusts what runs under them (server.ancestry)
        self.person_pids: dict[int, float | None] = {}
        self.person_ended: dict[int, float] = {}  # … and when each was seen to exit
        self.unit_cgroup: str | None = None

    # ---------------------------------------------------------------- start

    def prepare(self) -> None:
        """Start steps 1–4 and 6: logging, paths, singleton, state-dir lock, manifests.

        Raises:
            StartupError: socket path too long or unsafe (its directory not ours with mode
                0700), a server already listening, a stale socket that cannot be removed,
                state dir unusable (read-only, not a directory) or in use.
        """
        try:
            configure_logging(self.state_dir, self.config.logging.level, console=True)
        except paths.PathError as exc:
            raise StartupError(str(exc)) from None
        except OSError as exc:
            raise StartupError(
                f"cannot open the log file in state dir {self.state_dir}: {exc.strerror or exc}"
            ) from None
        if self.config_error:
            log.error("config.invalid", error=self.config_error)
        for warning in self.config_warnings:
            log.warning("config.warning", warning=warning)
        try:
            paths.check_socket_path(self.socket_path)
            if not self.default_socket and not self.socket_path.parent.is_dir():
                raise paths.PathError(f"socket directory does not exist: {self.socket_path.parent}")
            # Clients refuse a socket whose directory is not ours with mode 0700 (issue 10
            # §1): a custom one in /tmp or another user's directory is refused here, at once.
            runtime = self.socket_path.parent
            for warning in paths.ensure_runtime_dir(runtime, default=self.default_socket):
                log.warning("paths.warning", warning=warning)
            for warning in paths.ensure_state_dir(self.state_dir):
                log.warning("paths.warning", warning=warning)
        except paths.PathError as exc:
            raise StartupError(str(exc)) from None
        if self.handover is not None and self.handover.lock_fd is not None:
            # a restart: the lock and the listening socket are ours already
            self._lock_fd = self.handover.lock_fd
            self._load_catalog_at_start()
            for warning in hardening.harden_daemon():
                log.warning("hardening.warning", warning=warning)
            _note_screen_engine()
            return
        if self.socket_path.exists() or self.socket_path.is_symlink():
            self._claim_socket_path()
        lock_path = self.state_dir / "daemon.lock"
        try:
            # never blocks on a FIFO or follows a symlink planted there (attack pass 4, N5)
            try:
                fd = statefile.open_regular(lock_path, os.O_RDWR | os.O_CREAT)
            except statefile.NotRegularFile as exc:
                aside = statefile.move_aside(lock_path)
                log.warning(
                    "state.not_a_file", path=str(lock_path), kind=exc.kind, moved_to=aside.name
                )
                fd = statefile.open_regular(lock_path, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise StartupError(
                f"cannot create {self.state_dir / 'daemon.lock'}: {exc.strerror or exc}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StartupError(f"state dir in use: {self.state_dir}") from None
        self._lock_fd = fd
        # Manifests after the checks (§2.1 step 6): a refused start prints its one line only.
        self._load_catalog_at_start()
        # not dumpable: pane processes cannot ptrace us (issue 10 third pass, A6); after the
        # checks too, for the same reason
        for warning in hardening.harden_daemon():
            log.warning("hardening.warning", warning=warning)
        _note_screen_engine()

    def _claim_socket_path(self) -> None:
        """Singleton check on an existing socket file (desktop-and-service.md §2.1 step 3).

        Raises:
            StartupError: a server answers there (another user's is named by its uid), or
                the stale file cannot be removed.
        """
        from signaltty.proto.trust import peer_uid

        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1.0)
        try:
            probe.connect(str(self.socket_path))
        except OSError:
            try:
                self.socket_path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise StartupError(
                    f"cannot remove the stale socket {self.socket_path}: {exc.strerror or exc}"
                ) from None
            log.info("daemon.stale_socket_removed", socket=str(self.socket_path))
        else:
            uid = peer_uid(probe)
            if uid is not None and uid != os.getuid():
                raise StartupError(
                    f"a server of another user (uid {uid}) is listening on {self.socket_path}"
                )
            raise StartupError(f"a server is already listening on {self.socket_path}")
        finally:
            probe.close()

    def _load_catalog_at_start(self) -> None:
        """Bundled + user manifests; an unlistable agents dir is logged, never fatal.

        Spec: agents.md §4.2.
        """
        try:
            self.catalog = load_catalog(self.agents_dir)
        except OSError as exc:
            log.error(
                "agents.dir_unlistable", dir=str(self.agents_dir), error=exc.strerror or str(exc)
            )
            self.catalog = load_catalog(None)
            self.catalog.dir = str(self.agents_dir)
            self.catalog.failures.append(
                {
                    "file": str(self.agents_dir),
                    "error": f"cannot list directory: {exc.strerror or exc}",
                }
            )
        log.info(
            "agents.loaded",
            entries=len(self.catalog.entries()),
            failures=len(self.catalog.failures),
        )

    def _start_host_task(self, name: str, run: Callable[[], Any]) -> asyncio.Task[None] | None:
        """A watched host's link as the supervised task ``name``: ``RESTART``, although
        the link loop reconnects by itself, so that a bug in it costs one host a back-off,
        never the daemon."""
        return self.supervisor.start(name, run, Policy.RESTART)

    async def reload_hosts(self) -> None:
        """``hosts.reload``: ``[hosts]`` from the config file, applied at once (issue 16).

        Only that table is read again; every other setting keeps its value from the start.

        Raises:
            SignalttyError: ``IO_ERROR`` when the file cannot be read or parsed (the hosts
                watched now are kept).
        """
        config, error, _warnings = await asyncio.to_thread(load_config, self.config_path)
        if error is not None:
            raise SignalttyError("IO_ERROR", f"config not read, hosts unchanged: {error}"[:600])
        self.config.hosts = config.hosts
        await self.remote.apply(*parse_hosts(config.hosts))

    async def reload_agents(self) -> dict[str, Any]:
        """``agents.reload``: re-read the agents directory and swap the whole catalog.

        ``load_catalog`` (file reads, TOML, pattern compilation) runs in a worker thread so
        the loop keeps answering. At most one load runs at a time: a call arriving during a
        load waits for it and then shares one fresh load with every other waiting call, so
        each caller sees the directory as it was at or after its request, and N concurrent
        calls start at most two loads.

        Returns:
            The new ``agents.list`` shape (protocol.md §6); emits ``agents.reloaded
            {manifests, failures}`` once per load.

        Raises:
            SignalttyError: ``IO_ERROR`` when the directory exists but cannot be listed; the
                active catalog stays.
        """
        self._reload_requested += 1
        wanted = self._reload_requested
        async with self._reload_lock:
            if self._reload_done < wanted:
                covers = self._reload_requested
                try:
                    self._reload_outcome = await self._load_and_swap()
                except SignalttyError as exc:
                    self._reload_outcome = exc
                self._reload_done = covers
            outcome = self._reload_outcome
        if isinstance(outcome, SignalttyError):
            raise outcome
        assert outcome is not None
        return outcome

    async def _load_and_swap(self) -> dict[str, Any]:
        try:
            catalog = await asyncio.to_thread(load_catalog, self.agents_dir)
        except OSError as exc:
            log.error(
                "agents.reload_failed", dir=str(self.agents_dir), error=exc.strerror or str(exc)
            )
            raise SignalttyError(
                "IO_ERROR", f"cannot list agents dir {self.agents_dir}: {exc.strerror or exc}"
            ) from None
        self.catalog = catalog
        if self.refresher is not None:  # a renamed binary applies at the next refresh
            self.refresher.detection_changed()
        listing = catalog.listing()
        log.info(
            "agents.reloaded", entries=len(listing["manifests"]), failures=len(listing["failures"])
        )
        self.store.emit(
            "agents.reloaded", {"manifests": listing["manifests"], "failures": listing["failures"]}
        )
        return listing

    def detect_program(self, name: str) -> Detection | None:
        """Kind of a program name: user then bundled manifests, then builtin names.

        Spec: agents.md §3.1.
        """
        entry = self.catalog.detect(name)
        if entry is not None:
            return Detection(entry.kind, entry.id, entry.display_name)
        return builtin_detect(name)

    def _foreground_seen(self, pane: Pane, process_name: str | None) -> None:
        # A different foreground program ends program-status authority (states.md §3.3).
        rt = self.runtimes.get(pane.id)
        if rt is not None:
            rt.status.on_foreground(process_name)

    def _on_sighup(self) -> None:
        log.info("daemon.sighup", action="reload")
        # A storm of SIGHUPs costs one task and at most one extra load: signals arriving
        # while a reload runs only ask the running task to go once more.
        if self._sighup_task is not None and not self._sighup_task.done():
            self._sighup_again = True
            return
        self._sighup_task = self.supervisor.start(
            "sighup-reload", self._sighup_reload, Policy.ONESHOT
        )

    async def _sighup_reload(self) -> None:
        while True:
            self._sighup_again = False
            try:
                await self.reload_agents()
            except SignalttyError:
                pass  # logged by _load_and_swap; the active set stays
            except Exception:  # a reload bug must not kill the signal path
                log.exception("agents.reload_crashed")
            if not self._sighup_again:
                return

    def _restore(self) -> None:
        restored = persistence.load_snapshot(self.state_dir, self.catalog)
        for err in restored.errors:
            log.error("snapshot.restore_problem", error=err)
        for ws in restored.workspaces:
            self.store.workspaces[ws.id] = ws
        kept = dict(self.pty_store.received)
        for pane in sorted(restored.panes, key=lambda p: p.created_at):
            pty = kept.pop(pane.id, None)
            if pty is not None and not (pane.live and pty.same_process()):
                os.close(pty.fd)
                pty = None
            try:
                if pty is None:
                    rules.restore(pane, has_resume=bool(pane.agent.resume_argv))
                pane.process_instance = new_id("pi")
                self.store.panes[pane.id] = pane
                rt = PaneRuntime(self.store, pane)
            except Exception as exc:  # noqa: BLE001 - one odd record never stops every start
                log.error("snapshot.restore_problem", error=f"pane {pane.id} skipped: {exc!r}")
                self.store.panes.pop(pane.id, None)
                owner = self.store.workspaces.get(pane.workspace_id)
                if owner is not None and pane.id in owner.pane_ids:
                    owner.pane_ids.remove(pane.id)
                continue
            tail = restored.tails.get(pane.id)
            if tail:
                try:
                    rt.retained_text = tail
                    rt.screen.feed(tail.replace("\n", "\r\n").encode())
                    rt.settle_now()
                except Exception as exc:  # noqa: BLE001 - the pane is kept without its tail
                    log.error(
                        "snapshot.restore_problem", error=f"tail of {pane.id} skipped: {exc!r}"
                    )
            self.runtimes[pane.id] = rt
            if pty is not None:
                # its program ran on while no daemon did; systemd reaps it now, not us. The
                # saved tail ends where the text ends: a line printer's next line starts below
                if rt.screen.cursor[1] > 0:
                    rt.screen.feed(b"\r\n")
                rt.start(ptymod.PtyProcess(pty.pid, pty.fd, pty.slave_path()), child=False)
                self.pty_store.remember(rt)
                self.hooks.pane_procs.note(pty.pid, pane.id)
                log.info("fdstore.pane_kept", pane_id=pane.id, pid=pty.pid)
        for pty in kept.values():  # no record of its pane: end it as a shutdown would
            log.warning("fdstore.pane_unknown", pane_id=pty.pane_id, pid=pty.pid)
            if pty.same_process():
                with contextlib.suppress(OSError):
                    os.killpg(pty.pid, signal.SIGHUP)
            os.close(pty.fd)
        self.store.notifications.extend(restored.notifications)
        log.info(
            "snapshot.restored",
            workspaces=len(restored.workspaces),
            panes=len(restored.panes),
        )

    async def run(self) -> int:
        """Steps 5–9, then serve until shutdown; returns the exit code.

        Everything from the listener on, the shutdown included, runs inside the
        supervisor's ``TaskGroup`` (server/supervisor.py).

        Returns:
            0, or ``supervisor.EXIT_TASK_FAILED`` (70) when a ``FATAL`` task failed.

        Raises:
            StartupError: the socket cannot be listened on.
        """
        loop = asyncio.get_running_loop()
        self._load_faults()
        restarted: dict[str, Any] | None = None
        if self.handover is None and self.pty_store.enabled:
            # only what a kept pane started may stay in the unit (attack pass 4, N2)
            keep = {k.pid for k in self.pty_store.received.values() if k.same_process()}
            kill_unit_leftovers(keep)
        if self.handover is not None:
            restarted = self._adopt_or_fall_back(self.handover, children=True)
        elif self.pty_store.handover_fd is not None:
            # after `systemctl restart`: the document and the PTYs came from the fd store
            table = FdTable(doc_fd=self.pty_store.handover_fd)
            for kept in self.pty_store.received.values():
                if kept.same_process():
                    table.ptys.append(PtyEntry(kept.pane_id, kept.pid, kept.fd, kept.slave_path()))
                else:
                    os.close(kept.fd)
            restarted = self._adopt_or_fall_back(table, children=False)
        else:
            self._restore()
        async with self.supervisor:
            self.listener = Listener(
                config=self.config,
                bus=self.bus,
                runtimes=self.runtimes,
                dispatcher=self.router,
                hooks=self.hooks,
                control=self,
                single_flight=self.single_flight,
            )
            try:
                listen_fd = self.handover.listen_fd if self.handover is not None else None
                if listen_fd is not None:
                    await self.listener.start_on(socket.socket(fileno=listen_fd))
                else:
                    await self.listener.start(str(self.socket_path))
            except OSError as exc:
                # e.g. a socket file put there between the singleton check and bind
                why = exc.strerror or exc
                raise StartupError(f"cannot listen on {self.socket_path}: {why}") from None
            self._socket_ino = os.stat(self.socket_path).st_ino
            self.socket_watch = SocketWatch(
                path=self.socket_path,
                listener=self.listener,
                store=self.store,
                active=lambda: not self.shutting_down,
            )
            self.unit_cgroup = ancestry.own_unit_cgroup()
            if (off := ancestry.cgroup_rule_off_reason()) is not None:  # attack pass 3, A11
                log.warning("daemon.cgroup_rule_off", reason=off)
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.request_shutdown)
            loop.add_signal_handler(signal.SIGHUP, self._on_sighup)
            self._start_tasks()
            if self.handover is not None and restarted is not None:
                serve_held(self, self.handover, restarted)
                self.store.emit("server.restarted", restarted)
                log.info("restart.done", **restarted)
            sdnotify.ready(f"listening on {self.socket_path}")
            log.info(
                "daemon.ready",
                socket=str(self.socket_path),
                pid=os.getpid(),
                version=__version__,
                loop=type(loop).__module__,
            )
            if sys.stderr.isatty():  # someone started it by hand: say what to do next
                print(
                    "signaltty: ready. In another terminal: `signaltty new -- bash`, then "
                    "`signaltty status`; Ctrl-C here stops the daemon and its panes.",
                    file=sys.stderr,
                )
            self._start_path_hydration()
            self._start_desktop()
            if restarted is not None:  # the old notifications' buttons answer nothing now
                renewed = (rules.renewed_permission_alert(p) for p in self.store.panes.values())
                self.store.apply([alert for alert in renewed if alert is not None])
            # after the notifier: a host's pending permissions are announced on first sync
            await self.remote.apply(*parse_hosts(self.config.hosts))
            _freeze_survivors()
            await self._stop.wait()
            await self._shutdown()
        return self.supervisor.exit_code

    def _adopt_or_fall_back(self, table: FdTable, *, children: bool) -> dict[str, Any]:
        """Restore from a handover; if the restore itself fails (a fault of this code, not
        of the document: those fall back inside it), start again from the snapshot with the
        same PTYs, so that no pane's program is lost (new-user pass 8, finding 1)."""
        try:
            return adopt_handover(self, table, children=children)
        except Exception:  # noqa: BLE001 - the panes' programs must outlive our bug
            log.exception("handover.adopt_failed")
        for rt in self.runtimes.values():
            rt.stop_for_retry()
        self.runtimes.clear()
        self.store.panes.clear()
        self.store.workspaces.clear()
        self.store.notifications.clear()
        self.store.seqs.clear()
        self.store.ring.clear()
        self.hooks.routes.clear()
        self.hooks.agent_pids.clear()
        for held in table.held:  # their answers cannot be delivered on this path
            with contextlib.suppress(OSError):
                os.close(held.fd)
        table.held.clear()
        bare = FdTable(ptys=table.ptys)
        restarted = adopt_handover(self, bare, children=children)
        restarted["handover"] = "snapshot"
        return restarted

    def _load_faults(self) -> None:
        """Test-only fault injection from ``SIGNALTTY_FAULTS`` (server/supervisor.py).

        The variable is removed from our environment: panes (and a daemon started in one)
        do not inherit it. A malformed value is ignored with a warning, never fatal.
        """
        text = os.environ.pop("SIGNALTTY_FAULTS", None)
        faults, warnings = parse_faults(text, tasks=TASK_NAMES, steps=SHUTDOWN_STEPS)
        for warning in warnings:
            log.warning("faults.ignored", warning=warning)
        if faults.tasks or faults.steps:
            log.warning("faults.injected", tasks=faults.tasks, steps=sorted(faults.steps))
        self.supervisor.faults = faults

    def _start_tasks(self) -> None:
        """Start the supervised loops; they stop in the reverse order (watchdog last).

        Policies (server/supervisor.py), and why:

        - ``watchdog`` FATAL: it does nothing but send ``WATCHDOG=1``. If that raises, a
          restart will not mend it, and a silent watchdog gets the daemon SIGABRTed by
          systemd after ``WatchdogSec`` with nothing saved (a back-off of up to 30 s could
          outlast the period too). Failing it runs the ordered shutdown — snapshot saved —
          and exits 70, so ``Restart=on-failure`` starts a fresh daemon.
        - ``flusher`` RESTART: persistence must go on. A failed save is already retried
          inside the loop; a crash of the loop itself restarts it, and the store stays
          dirty, so the next round saves what was missed.
        - ``orphan-reaper`` RESTART: without it adopted orphans stay zombies; it keeps no
          state between scans.
        - ``proc-refresh``, ``screen-sweep`` RESTART: they classify panes without hooks and
          rebuild what they need from the panes on their next pass; stopping the daemon
          for them would cost every pane its process.
        - ``socket-watch`` RESTART: re-binds the socket path when a pane process takes it
          (server/socketwatch.py); it keeps only the inode it bound.
        - ``logind`` RESTART: holds logind's delay lock (server/sleep.py). No bus, no
          logind or a refusal is no failure: it says so in ``server.status.logind`` and
          tries again every 5 minutes; a crash restarts it, since without the lock a
          suspend or shutdown comes without a save.

        One-shots (``path-hydration``, ``sighup-reload``) are started where they are asked
        for; a failure is logged and shown, never restarted.
        """
        sup = self.supervisor
        interval = sdnotify.watchdog_interval_s()
        if interval:
            sup.start("watchdog", functools.partial(self._watchdog, interval), Policy.FATAL)
        sup.start("flusher", self._flusher, Policy.RESTART)
        # orphans leaving a pane (setsid -f, a tmux server) become ours: issue 10 follow-up
        if subreaper.become_subreaper():
            sup.start("orphan-reaper", self._reap_orphans, Policy.RESTART)
        self.refresher = ProcessRefresher(
            store=self.store, config=self.config, runtimes=self.runtimes, detect=self.detect_program
        )
        self.refresher.on_foreground.append(self._foreground_seen)
        sup.start("proc-refresh", self.refresher.run, Policy.RESTART)
        sup.start("screen-sweep", self.sweep.run, Policy.RESTART)
        # a pane process re-binding our socket path (issue 10 third pass, A8)
        if self.socket_watch is not None:
            sup.start("socket-watch", self.socket_watch.run, Policy.RESTART)
        if self.logind.enabled:
            sup.start("logind", self.logind.run, Policy.RESTART)

    @property
    def lock_fd(self) -> int | None:
        """The state-dir lock's fd (handed over by a restart)."""
        return self._lock_fd

    def flag_argv(self) -> list[str]:
        """The daemon's own flags as given (paths made absolute), for the image a restart
        starts."""
        out: list[str] = []
        for flag, value in self._flags.items():
            if value:
                out += [flag, value if flag == "--log-level" else os.path.abspath(value)]
        return out

    @staticmethod
    def disk_lock() -> threading.Lock:
        """Held while a snapshot is written (a restart's exec waits for it)."""
        return _DISK_LOCK

    async def restart(self, conn: Any) -> dict[str, Any]:
        """``server.restart`` (server/restart.py), for callers outside every pane and the
        unit's own ``ExecReload=`` (``why = service``): a pane process must not choose when the
        daemon is between images (attack pass 8, A1b/A2).

        Raises:
            SignalttyError: ``FORBIDDEN`` from inside a pane; ``RESTART_FAILED``.
        """
        if conn is not None:
            origin = await self.hooks.origin(Caller("socket", conn.peer_pid, conn.peer_ref))
            if origin.inside and origin.why != "service":
                log.warning("restart.refused", why=origin.why, caller_pane=origin.pane_id)
                raise SignalttyError(
                    "FORBIDDEN",
                    "processes inside signaltty panes cannot restart the daemon: run "
                    "`signaltty restart` from your own terminal, or `systemctl --user reload "
                    "signaltty`",
                    {"why": origin.why},
                )
        return await self.restarter.restart(conn)

    def logind_status(self) -> dict[str, Any]:
        """``server.status.logind`` (``LogindLink.status``)."""
        return self.logind.status()

    def task_status(self) -> list[dict[str, Any]]:
        """``server.status.tasks`` (``Supervisor.status``)."""
        return self.supervisor.status()

    def _task_fatal(self, name: str) -> None:
        log.error("daemon.task_fatal", task=name, exit_code=self.supervisor.exit_code)
        self.request_shutdown()

    def _start_path_hydration(self) -> None:
        """Login-shell PATH, once, after the socket listens (desktop-and-service.md §5)."""
        if os.environ.get("SIGNALTTY_SHELL_PATH") == "0":
            self.path_hydration = {"state": "disabled", "added": []}
            self.hydrated.set()
            return
        self.path_hydration = {"state": "pending", "added": []}
        self._start_hydration_task()

    def _start_hydration_task(self) -> None:
        task = self.supervisor.start("path-hydration", self._hydrate, Policy.ONESHOT)
        if task is None:  # shutting down
            self.hydrated.set()
        else:
            task.add_done_callback(self._hydration_ended)

    def _hydration_ended(self, _task: asyncio.Task[None]) -> None:
        # A run that crashed (or was cancelled) before the probe answered: spawns must not
        # keep waiting for it, and server.status must not say "pending" for ever.
        if self.path_hydration.get("state") == "pending":
            self.path_hydration = {**self.path_hydration, "state": "failed"}
        self.hydrated.set()

    async def _hydrate(self) -> None:
        try:
            result = await shellpath.hydrate(dict(os.environ))
        except Exception as exc:  # noqa: BLE001 - never stops the daemon
            result = shellpath.Hydration(
                "failed", os.environ.get("PATH", os.defpath), reason=repr(exc)
            )
        finally:
            self.hydrated.set()
        if result.state == "done":
            os.environ["PATH"] = result.path
            log.info("shellpath.done", added=len(result.added))
        else:
            log.warning("shellpath.failed", reason=result.reason)
        # A refresh keeps what earlier runs added: those segments are in PATH already.
        before = [x for x in self.path_hydration.get("added", []) if x not in result.added]
        self.path_hydration = {"state": result.state, "added": [*before, *result.added]}
        sdnotify.status(f"listening on {self.socket_path}; PATH hydration {result.state}")

    async def refresh_path_hydration(self) -> None:
        """``agents.catalog {refresh: true}``: run the login-shell probe again and wait for it
        (≤ 5 s); joins a run already in progress; nothing when disabled (desktop-and-service.md §5).
        """
        if self.path_hydration.get("state") == "disabled":
            return
        if self.hydrated.is_set():
            self.hydrated.clear()  # spawns arriving meanwhile wait for the new PATH
            self.path_hydration = {**self.path_hydration, "state": "pending"}
            self._start_hydration_task()
        # The probe ends within its own 5 s limit (killed then); a little slack lets the
        # answer carry that outcome instead of "pending".
        if not self.hydrated.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.hydrated.wait(), shellpath.TIMEOUT_S + 0.5)

    async def wait_hydration(self) -> None:
        """A spawn arriving while hydration runs waits for it, at most 5 s (§5 "ordering")."""
        if not self.hydrated.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.hydrated.wait(), shellpath.TIMEOUT_S)

    def _start_desktop(self) -> None:
        """Step 9: D-Bus service and notifier in the background; failures never stop us."""
        try:
            from signaltty.server.desktop_port import DesktopPort

            # desktop/ sees the daemon only through this port (desktop/host.py)
            port = DesktopPort(
                store=self.store,
                router=self.router,
                hooks=self.hooks,
                runtimes=self.runtimes,
                person_pids=self.person_pids,
                person_ended=self.person_ended,
                socket_path=self.socket_path,
                config=self.config,
                remote=self.remote,
            )
            if self.config.dbus.enabled:
                from signaltty.desktop.dbus import DbusService

                self.dbus_service = DbusService(port)
                # the connection loop ends by itself when another process owns the bus name,
                # so it is a one-shot: a crash is logged and shown, never silent
                self.dbus_service.start(
                    lambda name, loop: self.supervisor.start(name, loop, Policy.ONESHOT)
                )
            if self.config.notifications.enabled:
                from signaltty.desktop.notify import Notifier

                self.notifier = Notifier(port)
                self.notifier.start()
        except Exception:  # noqa: BLE001 - the desktop surface is optional
            log.exception("desktop.start_failed")

    async def _reap_orphans(self) -> None:
        """Reap adopted orphans that exited (``system.subreaper``); pane children are left alone."""
        reaper = subreaper.OrphanReaper(record=self.hooks.record_adopted)
        while True:
            await asyncio.sleep(subreaper.ORPHAN_SCAN_S)
            keep = {rt.proc.pid for rt in list(self.runtimes.values()) if rt.proc is not None}
            keep.update(self.remote.child_pids())  # a watched host's ssh is no pane orphan
            keep.update(rt.proc.pid for rt in list(self._closing) if rt.proc is not None)
            try:
                reaped = await asyncio.to_thread(reaper.scan, keep)
            except Exception:  # noqa: BLE001 - never stops the daemon
                log.exception("daemon.orphan_reap_failed")
                continue
            if reaped:
                log.debug("daemon.orphans_reaped", pids=reaped)

    async def _watchdog(self, interval: float) -> None:
        while True:
            sdnotify.watchdog()
            await asyncio.sleep(interval)

    async def _flusher(self) -> None:
        period = self.config.server.snapshot_debounce_s
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            tails_due = now - self._last_tail_save >= _TAIL_SAVE_S and self._tails_changed()
            later_due = self.store.dirty_later and now - self._last_save >= _TAIL_SAVE_S
            if self.store.dirty or tails_due or later_due:
                try:
                    # a state change saves the snapshot at once; the tails (every changed
                    # pane's screen rendered and written) keep their own 10 s cadence: an
                    # agent retitling its pane 10×/s made every save render and fsync every
                    # tail, half the daemon's CPU under 20 replayed agents (issue 12); a
                    # title change alone waits for that cadence too (``Store.dirty_later``)
                    await self.save(tails=tails_due)
                except Exception:  # noqa: BLE001 - the flusher must outlive any one bad save
                    self.store.dirty = True
                    log.exception("snapshot.save_failed")

    def _tails_changed(self) -> bool:
        return any(
            rt.output_offset != self._saved_offsets.get(pid, 0) for pid, rt in self.runtimes.items()
        )

    async def save(self, *, tails: bool = True) -> bool:
        """Write the snapshot and (``tails``) the changed tails, in a worker thread; False if
        it failed (logged). Tails left out are saved by a later call (their offsets stay)."""
        store = self.store
        store.dirty = False
        store.dirty_later = False
        try:
            data = persistence.serialize_snapshot(
                sorted(store.workspaces.values(), key=lambda w: w.created_at),
                list(store.panes.values()),
                list(store.notifications),
                store.now(),
            )
        except Exception:  # noqa: BLE001 - a bad value must never stop saving for good
            store.dirty = True
            log.exception("snapshot.serialize_failed")
            return False
        tail_texts: dict[str, str] = {}
        offsets: dict[str, int] = {}
        if self.config.persistence.save_tails and tails:
            # Pending bytes are applied first, yielding between pieces, bounded per pane and
            # in total (``_FINAL_SETTLE_S`` at shutdown, ``_TAIL_SETTLE_S`` otherwise); the
            # tail is then what the screen holds, and the offset recorded is the one it
            # reflects, so a later round saves what was still pending.
            loop = asyncio.get_running_loop()
            final_by = loop.time() + (_FINAL_SETTLE_S if self.shutting_down else _TAIL_SETTLE_S)
            for pane_id, rt in list(self.runtimes.items()):
                if (
                    rt.output_offset != self._saved_offsets.get(pane_id, 0)
                    or pane_id not in self._saved_offsets
                ):
                    left = min(_FINAL_SETTLE_PANE_S, final_by - loop.time())
                    if rt.screen.pending and not self._hurry and left > 0:
                        try:
                            async with asyncio.timeout(left):
                                await rt.settle()
                        except TimeoutError:
                            # periodic saves in a flood cut it short every time: not news
                            report = log.warning if self.shutting_down else log.debug
                            report("snapshot.tail_incomplete", pane_id=pane_id)
                    offsets[pane_id] = rt.screen_offset
                    tail_texts[pane_id], _ = rt.tail_text(5000, apply_pending=False)
        keep = set(store.panes) if self.config.persistence.save_tails else set()
        try:
            await asyncio.to_thread(_write_snapshot, self.state_dir, data, tail_texts, keep)
        except OSError as exc:
            store.dirty = True
            log.error("snapshot.write_failed", error=str(exc))
            return False
        self._saved_offsets.update(offsets)
        self._last_save = time.monotonic()
        if tails:
            self._last_tail_save = time.monotonic()
        return True

    # ---------------------------------------------------------------- shutdown

    def request_shutdown(self) -> None:
        """Begin the shutdown sequence; a second request skips the grace period for children
        (the snapshot is still written first; desktop-and-service.md §2.2)."""
        if not self._stop.is_set():
            self._stop.set()  # run() unwinds, inside the supervisor
        else:
            self._hurry = True

    def release_memory_later(self) -> None:
        """Collect the closed panes' objects (their screens hold reference cycles) and give
        the freed heap back to the system (``system/memory.py``), once, ``_TRIM_AFTER_S``
        after the last close: a burst of closes costs one pass (issue 12)."""
        if self._trim_handle is not None:
            self._trim_handle.cancel()
        loop = asyncio.get_running_loop()
        self._trim_handle = loop.call_later(_TRIM_AFTER_S, self._release_memory)

    def _release_memory(self) -> None:
        self._trim_handle = None
        started = time.perf_counter()
        gc.unfreeze()  # closed panes frozen at start-up (restored) or at the last pass
        collected = gc.collect()
        gc.freeze()  # the live panes' objects: collected again only at the next close
        mid = time.perf_counter()
        released = memory.trim()
        log.debug(
            "memory.released",
            collected=collected,
            gc_ms=round((mid - started) * 1000, 1),
            trim_ms=round((time.perf_counter() - mid) * 1000, 1),
            returned=released,
        )

    def reap_later(self, rt: PaneRuntime) -> None:
        """After ``pane.close``: SIGKILL the group if the child is still there after 5 s."""

        async def reaper() -> None:
            try:
                if not await rt.wait_exit(_CLOSE_KILL_AFTER_S):
                    rt.terminate(signal.SIGKILL)
                    await rt.wait_exit(_CLOSE_KILL_AFTER_S)
                elif rt.group_alive():
                    # the child is gone but its group lives on (a grandchild on the PTY)
                    await asyncio.sleep(_CLOSE_KILL_AFTER_S)
                    if rt.group_alive():
                        rt.terminate(signal.SIGKILL)
            finally:
                self._closing.discard(rt)
                if rt.watcher is not None:
                    rt.watcher.close()
                self.release_memory_later()

        self._closing.add(rt)
        task = asyncio.get_running_loop().create_task(reaper())
        self._reapers.add(task)
        task.add_done_callback(self._reapers.discard)

    async def _step(
        self, name: str, coro: Coroutine[Any, Any, object], limit_s: float = 10.0
    ) -> None:
        """One shutdown step: a failure or timeout is logged with its traceback, never raised."""
        try:
            if self.supervisor.faults.take_step(name):
                coro.close()
                raise InjectedFault()
            async with asyncio.timeout(limit_s):
                await coro
        except Exception:  # noqa: BLE001 - one failed step never skips the rest
            log.exception("shutdown.step_failed", step=name)

    def _step_now(self, name: str, action: Callable[[], object]) -> None:
        """A synchronous shutdown step, with :meth:`_step`'s guarantee."""
        try:
            if self.supervisor.faults.take_step(name):
                raise InjectedFault()
            action()
        except Exception:  # noqa: BLE001 - one failed step never skips the rest
            log.exception("shutdown.step_failed", step=name)

    async def _shutdown(self) -> None:
        """The one ordered unwinding (desktop-and-service.md §2.2), steps ``SHUTDOWN_STEPS``.

        Every step runs even when an earlier one failed (``shutdown.step_failed``); the
        supervised tasks are stopped (last started first) before the snapshot is written,
        and the snapshot before any child is signalled.
        """
        log.info("shutdown.started")
        sdnotify.stopping("shutting down")
        self.shutting_down = True
        self.store.shutting_down = True
        self._step_now("hooks", lambda: self.hooks.cancel_all("shutdown"))
        self._step_now("single_flight", self._cancel_single_flight)
        self._step_now("will_shutdown", lambda: self.store.emit("server.will_shutdown", {}))
        if self.listener is not None:
            await self._step("stop_accepting", self.listener.stop_accepting())
        await self._step("tasks", self.supervisor.stop())
        # `systemctl --user restart` with the fd store: the panes go on without us
        self._keep_panes = not self._hurry and await self.pty_store.restart_job()
        if self._keep_panes:
            self._step_now("handover", self._hand_over_to_fd_store)
        await self._step("snapshot", self.save(), limit_s=30)
        if self.notifier is not None:
            await self._step("notifications", self.notifier.close(), limit_s=5)
        if self.dbus_service is not None:
            await self._step("dbus", self.dbus_service.close(), limit_s=5)
        await self._step("children", self._stop_children())
        if self.listener is not None:
            await self._step("connections", self.listener.close_all())
        self._step_now("socket", self._unlink_socket)
        self._step_now("lock", self._release_lock)
        log.info("shutdown.complete")

    def _hand_over_to_fd_store(self) -> None:
        """``systemctl restart``: readers stop where their parsers rest, and the handover
        document (exact screens, seq, runtime state) goes to systemd's fd store with the
        PTY masters, for the next start."""
        live = [rt for rt in self.runtimes.values() if rt.live]
        log.info("shutdown.panes_kept", panes=len(live))
        end = time.monotonic() + 1.0
        for rt in live:
            rt.pause_for_handover(max(0.0, end - time.monotonic()))
        doc = self.restarter.document()
        fd = handover.write_doc(doc, self.state_dir)
        if not self.pty_store.keep_document(fd):
            log.warning("shutdown.handover_not_stored")

    def _cancel_single_flight(self) -> None:
        for task in list(self.single_flight):
            task.cancel()

    def _unlink_socket(self) -> None:
        # only our own socket: another daemon may have taken the path since
        try:
            ino = self.socket_watch.ino if self.socket_watch else self._socket_ino
            if os.stat(self.socket_path).st_ino == ino:
                os.unlink(self.socket_path)
        except FileNotFoundError:
            pass

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            fd, self._lock_fd = self._lock_fd, None
            os.close(fd)

    async def _stop_children(self) -> None:
        """SIGHUP every pane's process group, SIGKILL what is left after 3 s.

        Closed panes still being reaped and exited panes whose process group lives on (a
        grandchild holding the PTY) are included: nothing a pane started outlives the daemon.
        """
        for task in list(self._reapers):
            task.cancel()
        every = [*self.runtimes.values(), *self._closing]
        panes = {rt.proc.pid for rt in every if rt.proc is not None}
        if self._keep_panes:
            every = [rt for rt in every if not rt.live or rt in self._closing]
        for rt in every:
            rt.terminate(signal.SIGHUP)
            rt.close()
        deadline = time.monotonic() + (0 if self._hurry else _KILL_AFTER_S)
        for rt in every:
            if self._hurry:
                break
            await rt.wait_exit(max(0.0, deadline - time.monotonic()))
        for rt in every:
            rt.terminate(signal.SIGKILL)
            await rt.wait_exit(1.0)
            if rt.watcher is not None:
                rt.watcher.close()
        # and adopted orphans (attack pass 3, A7): once we exit, init adopts them unmarked
        await asyncio.to_thread(
            ancestry.kill_adopted_orphans, panes, dict(self.person_pids), dict(self.person_ended)
        )


def _loop_factory() -> Any:
    """uvloop when importable, else the stdlib loop (README "Requirements").

    ``SIGNALTTY_LOOP=asyncio`` forces the stdlib loop (tests run both).
    """
    if os.environ.get("SIGNALTTY_LOOP") == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def check_daemon(handover_fd: int | None = None, **kwargs: Any) -> int:
    """``daemon --check``: load what a start loads (config, manifests, the event loop, every
    server module) without taking the socket or the lock; 0 when it would start. A restart
    runs this with the installed code before it gives the running image up (issue 15), with
    ``handover_fd``: a handover document of the running daemon's state, which this process
    restores in its own memory (no PTY, no file touched) as the new image would.

    Raises:
        Exception: whatever the new code raises; the restart quotes its output.
    """
    daemon = Daemon(**kwargs)
    daemon._load_catalog_at_start()
    factory = _loop_factory()
    import signaltty.desktop.dbus  # noqa: F401 - imported at start; a broken one must show here
    import signaltty.desktop.notify  # noqa: F401

    if handover_fd is not None:

        async def dry_run() -> dict[str, Any]:
            return adopt_handover(daemon, FdTable(doc_fd=handover_fd), snapshot_fallback=False)

        with asyncio.Runner(loop_factory=factory) as runner:
            restored = runner.run(dry_run())
        print(f"signaltty: the handover restores ({len(daemon.store.panes)} panes)")
        del restored

    if daemon.config_error:
        print(f"signaltty: config: {daemon.config_error}", file=sys.stderr)
    print(f"signaltty {__version__}: ok")
    return 0


def run_daemon(**kwargs: Any) -> int:
    """Run the daemon in the foreground; returns the process exit code."""
    # A worker thread (a hook's /proc ancestry check, a snapshot write) waits for the GIL
    # after each system call while the loop is busy with a pane's output: up to the switch
    # interval every time. 1 ms instead of 5 ms: another pane's hook under 10⁴ OSC a
    # second took 52–55 ms at worst, 18–28 ms after (bench/latency.py "osc", issue 12).
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    daemon = Daemon(**kwargs, handover=read_handover_table())
    try:
        daemon.prepare()
    except StartupError as exc:
        print(f"signaltty: {exc}", file=sys.stderr)
        return 1
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            return runner.run(daemon.run())
    except StartupError as exc:
        print(f"signaltty: {exc}", file=sys.stderr)
        return 1


def _note_screen_engine() -> None:
    """Warn when the screen model's native loops are missing (the install found no C
    compiler, or ``SIGNALTTY_PURE_PYTHON`` is set): the same results, at the slower speed."""
    if native.scan_rows is None:
        log.warning(
            "screen.native_missing",
            hint="the screen model runs its pure-Python loops (2-4x the CPU on coloured or "
            "repainting output); reinstall with a C compiler and the Python headers "
            "(gcc, python3-dev) to build them",
            pure_python_set=bool(os.environ.get("SIGNALTTY_PURE_PYTHON")),
        )
