"""The daemon process: start-up sequence, background loops, signals and shutdown.

Spec: desktop-and-service.md §2 (start, singleton, lock, restore, readiness, shutdown order),
§3.2 (sd_notify), §8 (persistence); README "Background loops".
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import socket
import sys
import time
from typing import Any

import structlog

from signaltty import __version__
from signaltty.agents.catalog import Catalog, load_catalog
from signaltty.core import rules
from signaltty.core.ids import new_id
from signaltty.core.model import Pane
from signaltty.core.refresh import Detection
from signaltty.proto.envelope import SignalttyError
from signaltty.server import ancestry, persistence
from signaltty.server.bus import Bus
from signaltty.server.config import Config, load_config
from signaltty.server.hooks import HookService
from signaltty.server.listener import Listener
from signaltty.server.panes import PaneRuntime
from signaltty.server.refresh import ProcessRefresher, builtin_detect
from signaltty.server.router import Router
from signaltty.server.spawning import Spawner
from signaltty.server.store import Store
from signaltty.server.sweep import ScreenSweep
from signaltty.system import paths, sdnotify, shellpath, subreaper
from signaltty.system.logging import configure_logging

log = structlog.get_logger("signaltty.daemon")

# Tail-only saves (output changed, nothing persisted changed) run at most this often.
_TAIL_SAVE_S = 10.0
# Shutdown save: time to finish applying a pane's pending screen bytes before its tail is taken,
# per pane and in total; the whole shutdown must fit systemd's TimeoutStopSec=15
# (desktop-and-service.md §3.1), and a snapshot step cut off by its timeout writes nothing.
_FINAL_SETTLE_PANE_S = 2.0
_FINAL_SETTLE_S = 5.0
_KILL_AFTER_S = 3.0
_CLOSE_KILL_AFTER_S = 5.0


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
    ) -> None:
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
        self.bus = Bus()
        self.store = Store(self.bus)
        self.runtimes: dict[str, PaneRuntime] = {}
        self.router = Router(self)
        self.spawner = Spawner(self)
        self.hooks = HookService(self)
        self.listener: Listener | None = None
        self.single_flight: set[asyncio.Task[Any]] = set()
        self.shutting_down = False
        self.path_hydration: dict[str, Any] = {"state": "pending", "added": []}
        self.hydrated = asyncio.Event()
        self._lock_fd: int | None = None
        self._socket_ino: int | None = None
        self._stop = asyncio.Event()
        self._shutdown_task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._last_tail_save = 0.0
        self._saved_offsets: dict[str, int] = {}
        self._reapers: set[asyncio.Task[None]] = set()
        self._closing: set[PaneRuntime] = set()
        self._hurry = False
        self.dbus_service: Any = None  # signaltty.desktop.dbus.DbusService once started
        self.notifier: Any = None  # signaltty.desktop.notify.Notifier once started
        self.refresher: ProcessRefresher | None = None  # process refresh, set in run()
        self.sweep = ScreenSweep(self)
        # processes started for the person (a notification click's terminal) → start time;
        # the self-approval guard trusts what runs under them (server.ancestry)
        self.person_pids: dict[int, float | None] = {}
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
        if self.socket_path.exists() or self.socket_path.is_symlink():
            self._claim_socket_path()
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
            fd = os.open(self.state_dir / "daemon.lock", flags, 0o600)
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
        """Bundled + user manifests; an unlistable agents dir is logged, never fatal (agents.md §4.2)."""
        try:
            self.catalog = load_catalog(self.agents_dir)
        except OSError as exc:
            log.error("agents.dir_unlistable", dir=str(self.agents_dir), error=exc.strerror or str(exc))
            self.catalog = load_catalog(None)
            self.catalog.dir = str(self.agents_dir)
            self.catalog.failures.append(
                {"file": str(self.agents_dir), "error": f"cannot list directory: {exc.strerror or exc}"}
            )
        log.info("agents.loaded", entries=len(self.catalog.entries()), failures=len(self.catalog.failures))

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
            log.error("agents.reload_failed", dir=str(self.agents_dir), error=exc.strerror or str(exc))
            raise SignalttyError(
                "IO_ERROR", f"cannot list agents dir {self.agents_dir}: {exc.strerror or exc}"
            ) from None
        self.catalog = catalog
        listing = catalog.listing()
        log.info("agents.reloaded", entries=len(listing["manifests"]), failures=len(listing["failures"]))
        self.store.emit("agents.reloaded", {"manifests": listing["manifests"], "failures": listing["failures"]})
        return listing

    def detect_program(self, name: str) -> Detection | None:
        """Kind of a program name: user then bundled manifests, then builtin names (agents.md §3.1)."""
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
        self._sighup_task = asyncio.get_running_loop().create_task(self._sighup_reload(), name="sighup-reload")
        self._background.add(self._sighup_task)
        self._sighup_task.add_done_callback(self._background.discard)

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
        restored = persistence.load_snapshot(self.state_dir)
        for err in restored.errors:
            log.error("snapshot.restore_problem", error=err)
        for ws in restored.workspaces:
            self.store.workspaces[ws.id] = ws
        for pane in sorted(restored.panes, key=lambda p: p.created_at):
            try:
                rules.restore(pane, has_resume=bool(pane.agent.resume_argv))
                pane.process_instance = new_id("pi")
                self.store.panes[pane.id] = pane
                rt = PaneRuntime(self.store, pane)
            except Exception as exc:  # noqa: BLE001 - one odd record never stops every start
                log.error("snapshot.restore_problem", error=f"pane {pane.id} skipped: {exc!r}")
                self.store.panes.pop(pane.id, None)
                ws = self.store.workspaces.get(pane.workspace_id)
                if ws is not None and pane.id in ws.pane_ids:
                    ws.pane_ids.remove(pane.id)
                continue
            tail = restored.tails.get(pane.id)
            if tail:
                try:
                    rt.retained_text = tail
                    rt.screen.feed(tail.replace("\n", "\r\n").encode())
                    rt.settle_now()
                except Exception as exc:  # noqa: BLE001 - the pane is kept without its tail
                    log.error("snapshot.restore_problem", error=f"tail of {pane.id} skipped: {exc!r}")
            self.runtimes[pane.id] = rt
        self.store.notifications.extend(restored.notifications)
        log.info(
            "snapshot.restored",
            workspaces=len(restored.workspaces),
            panes=len(restored.panes),
        )

    async def run(self) -> int:
        """Steps 5–9, then serve until shutdown; returns the exit code."""
        loop = asyncio.get_running_loop()
        self._restore()
        self.listener = Listener(self)
        try:
            await self.listener.start(str(self.socket_path))
        except OSError as exc:
            # e.g. a socket file put there between the singleton check and bind
            why = exc.strerror or exc
            raise StartupError(f"cannot listen on {self.socket_path}: {why}") from None
        self._socket_ino = os.stat(self.socket_path).st_ino
        # orphans leaving a pane (setsid -f, a tmux server) become ours: issue 10 follow-up
        if subreaper.become_subreaper():
            self._spawn_bg(self._reap_orphans(), "orphan-reaper")
        self.unit_cgroup = ancestry.own_unit_cgroup()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_shutdown)
        loop.add_signal_handler(signal.SIGHUP, self._on_sighup)
        self._spawn_bg(self._flusher(), "flusher")
        self.refresher = ProcessRefresher(self, detect=self.detect_program)
        self.refresher.on_foreground.append(self._foreground_seen)
        self._spawn_bg(self.refresher.run(), "proc-refresh")
        self._spawn_bg(self.sweep.run(), "screen-sweep")
        interval = sdnotify.watchdog_interval_s()
        if interval:
            self._spawn_bg(self._watchdog(interval), "watchdog")
        sdnotify.ready(f"listening on {self.socket_path}")
        log.info(
            "daemon.ready",
            socket=str(self.socket_path),
            pid=os.getpid(),
            version=__version__,
            loop=type(loop).__module__,
        )
        self._start_path_hydration()
        self._start_desktop()
        await self._stop.wait()
        assert self._shutdown_task is not None
        await self._shutdown_task
        return 0

    def _start_path_hydration(self) -> None:
        """Login-shell PATH, once, after the socket listens (desktop-and-service.md §5)."""
        if os.environ.get("SIGNALTTY_SHELL_PATH") == "0":
            self.path_hydration = {"state": "disabled", "added": []}
            self.hydrated.set()
            return
        self.path_hydration = {"state": "pending", "added": []}
        self._spawn_bg(self._hydrate(), "path-hydration")

    async def _hydrate(self) -> None:
        try:
            result = await shellpath.hydrate(dict(os.environ))
        except Exception as exc:  # noqa: BLE001 - never stops the daemon
            result = shellpath.Hydration("failed", os.environ.get("PATH", os.defpath), reason=repr(exc))
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
            self._spawn_bg(self._hydrate(), "path-hydration")
        # The probe ends within its own 5 s limit (killed then); a little slack lets the
        # answer carry that outcome instead of "pending".
        if not self.hydrated.is_set():
            try:
                await asyncio.wait_for(self.hydrated.wait(), shellpath.TIMEOUT_S + 0.5)
            except TimeoutError:
                pass

    async def wait_hydration(self) -> None:
        """A spawn arriving while hydration runs waits for it, at most 5 s (§5 "ordering")."""
        if not self.hydrated.is_set():
            try:
                await asyncio.wait_for(self.hydrated.wait(), shellpath.TIMEOUT_S)
            except TimeoutError:
                pass

    def _start_desktop(self) -> None:
        """Step 9: D-Bus service and notifier in the background; failures never stop us."""
        try:
            if self.config.dbus.enabled:
                from signaltty.desktop.dbus import DbusService

                self.dbus_service = DbusService(self)
                self.dbus_service.start()
            if self.config.notifications.enabled:
                from signaltty.desktop.notify import Notifier

                self.notifier = Notifier(self)
                self.notifier.start()
        except Exception:  # noqa: BLE001 - the desktop surface is optional
            log.exception("desktop.start_failed")

    async def _reap_orphans(self) -> None:
        """Reap adopted orphans that exited (``system.subreaper``); pane children are not touched."""
        reaper = subreaper.OrphanReaper()
        while True:
            await asyncio.sleep(subreaper.ORPHAN_SCAN_S)
            keep = {rt.proc.pid for rt in list(self.runtimes.values()) if rt.proc is not None}
            keep.update(rt.proc.pid for rt in list(self._closing) if rt.proc is not None)
            try:
                reaped = await asyncio.to_thread(reaper.scan, keep)
            except Exception:  # noqa: BLE001 - never stops the daemon
                log.exception("daemon.orphan_reap_failed")
                continue
            if reaped:
                log.debug("daemon.orphans_reaped", pids=reaped)

    def _spawn_bg(self, coro: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

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
            if self.store.dirty or tails_due:
                try:
                    await self.save()
                except Exception:  # noqa: BLE001 - the flusher must outlive any one bad save
                    self.store.dirty = True
                    log.exception("snapshot.save_failed")

    def _tails_changed(self) -> bool:
        return any(
            rt.output_offset != self._saved_offsets.get(pid, 0) for pid, rt in self.runtimes.items()
        )

    async def save(self) -> bool:
        """Write the snapshot and changed tails (worker thread); False if it failed (logged)."""
        store = self.store
        store.dirty = False
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
        tails: dict[str, str] = {}
        offsets: dict[str, int] = {}
        if self.config.persistence.save_tails:
            # What the screens hold now, without applying pending bytes: that parse (up to
            # ~128 KiB a pane, seconds of scroll-heavy output) would block the loop. The offset
            # recorded is the one the tail reflects, so a later round saves what was pending.
            # At shutdown the tails are completed first, yielding, bounded per pane and in total.
            loop = asyncio.get_running_loop()
            final_by = loop.time() + _FINAL_SETTLE_S
            for pane_id, rt in list(self.runtimes.items()):
                if rt.output_offset != self._saved_offsets.get(pane_id, 0) or pane_id not in self._saved_offsets:
                    left = min(_FINAL_SETTLE_PANE_S, final_by - loop.time())
                    if self.shutting_down and not self._hurry and left > 0:
                        try:
                            async with asyncio.timeout(left):
                                await rt.settle()
                        except TimeoutError:
                            log.warning("snapshot.tail_incomplete", pane_id=pane_id)
                    offsets[pane_id] = rt.screen_offset
                    tails[pane_id], _ = rt.tail_text(5000, apply_pending=False)
        keep = set(store.panes) if self.config.persistence.save_tails else set()
        try:
            await asyncio.to_thread(persistence.write_snapshot, self.state_dir, data, tails, keep)
        except OSError as exc:
            store.dirty = True
            log.error("snapshot.write_failed", error=str(exc))
            return False
        self._saved_offsets.update(offsets)
        self._last_tail_save = time.monotonic()
        return True

    # ---------------------------------------------------------------- shutdown

    def request_shutdown(self) -> None:
        """Begin the shutdown sequence; a second request skips the grace period for children
        (the snapshot is still written first; desktop-and-service.md §2.2)."""
        if self._shutdown_task is None:
            self._shutdown_task = asyncio.get_running_loop().create_task(self._shutdown())
        else:
            self._hurry = True

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

        self._closing.add(rt)
        task = asyncio.get_running_loop().create_task(reaper())
        self._reapers.add(task)
        task.add_done_callback(self._reapers.discard)

    async def _step(self, name: str, coro: Any, timeout: float = 10.0) -> None:
        try:
            async with asyncio.timeout(timeout):
                await coro
        except Exception:  # noqa: BLE001 - one failed step never skips the rest
            log.exception("shutdown.step_failed", step=name)

    async def _shutdown(self) -> None:
        log.info("shutdown.started")
        sdnotify.stopping("shutting down")
        self.shutting_down = True
        self.store.shutting_down = True
        self.hooks.cancel_all("shutdown")
        for task in list(self.single_flight):
            task.cancel()
        self.store.emit("server.will_shutdown", {})
        if self.listener is not None:
            await self._step("stop_accepting", self.listener.stop_accepting())
        for task in list(self._background):
            task.cancel("shutdown")
        await self._step("snapshot", self.save(), timeout=30)
        if self.notifier is not None:
            await self._step("notifications", self.notifier.close(), timeout=5)
        if self.dbus_service is not None:
            await self._step("dbus", self.dbus_service.close(), timeout=5)
        await self._step("children", self._stop_children())
        if self.listener is not None:
            await self._step("connections", self.listener.close_all())
        try:
            if os.stat(self.socket_path).st_ino == self._socket_ino:
                os.unlink(self.socket_path)
        except OSError:
            pass
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        log.info("shutdown.complete")
        self._stop.set()

    async def _stop_children(self) -> None:
        """SIGHUP every pane's process group, SIGKILL what is left after 3 s.

        Closed panes still being reaped and exited panes whose process group lives on (a
        grandchild holding the PTY) are included: nothing a pane started outlives the daemon.
        """
        for task in list(self._reapers):
            task.cancel()
        every = [*self.runtimes.values(), *self._closing]
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


def run_daemon(**kwargs: Any) -> int:
    """Run the daemon in the foreground; returns the process exit code."""
    daemon = Daemon(**kwargs)
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
