"""Method dispatch: validated params → store/pane operations → result dicts.

Every surface (socket, CLI, later D-Bus and notification buttons) goes through ``Router.call``
so behaviour and errors are identical. Only this module and the listener translate errors:
``pydantic.ValidationError`` → ``BAD_PARAMS`` with ``details.field``; ``SignalttyError`` passes
through; anything else becomes ``INTERNAL`` in the listener. Spec: protocol.md §5, §8.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import os
import signal as signal_mod
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog
from pydantic import ValidationError

from signaltty import __version__
from signaltty.agents import launch
from signaltty.core import limits, rules, waits
from signaltty.core.ids import new_id, prefix_matches, unique_handle
from signaltty.core.model import AgentInfo, Pane, Workspace, iso
from signaltty.core.rules import NotificationInput
from signaltty.core.sanitize import sanitize_text
from signaltty.core.states import ATTENTION_RANK, Attention
from signaltty.proto import constants
from signaltty.proto import params as P
from signaltty.proto.envelope import SignalttyError
from signaltty.server import spawning, submit
from signaltty.server.bus import glob_match
from signaltty.server.hooks import DAEMON_CALLER, Caller
from signaltty.server.panes import LineCollector, Matcher, PaneRuntime, compile_matcher

if TYPE_CHECKING:
    from signaltty.server.daemon import Daemon
    from signaltty.server.listener import Connection

log = structlog.get_logger("signaltty.router")

Handler = Callable[["Connection | None", Any], Awaitable[dict[str, Any]]]

_SIGNALS = {"INT", "TERM", "KILL", "HUP", "QUIT", "WINCH", "USR1", "USR2"}

# Request fields naming a pane, which may be a unique prefix (issue 13 item 9).
_PANE_FIELDS = ("pane_id", "parent_pane_id")
# Reports written by agents' hooks from $SIGNALTTY_PANE: always a full id, and routing them
# must never guess (issue 10 item 6).
_FULL_IDS_ONLY = frozenset({"hook-event", "report-session"})
_AMBIGUOUS_SHOWN = 10  # ids listed in an AMBIGUOUS message


def parse_signal(name: str | None, default: str = "TERM") -> int:
    """``INT``/``sigint``/``SIGTERM`` … → signal number (protocol.md ``pane.signal``).

    Raises:
        SignalttyError: ``BAD_PARAMS`` for any other name.
    """
    text = (name or default).upper()
    if text.startswith("SIG"):
        text = text[3:]
    if text not in _SIGNALS:
        raise SignalttyError("BAD_PARAMS", f"signal not allowed: {name}", {"field": "signal"})
    return int(getattr(signal_mod, "SIG" + text))


def clamp_size(cols: int | None, rows: int | None, default: tuple[int, int]) -> tuple[int, int]:
    """Clamp to 20–500 columns and 5–200 rows (protocol.md §4 ``pty_size``)."""
    c = default[0] if cols is None else cols
    r = default[1] if rows is None else rows
    return (
        max(limits.COLS_MIN, min(limits.COLS_MAX, c)),
        max(limits.ROWS_MIN, min(limits.ROWS_MAX, r)),
    )


class Router:
    """Dispatches ``signaltty/1`` methods for one daemon."""

    def __init__(self, daemon: Daemon) -> None:
        self.d = daemon
        self.store = daemon.store
        self.detection = launch.DetectionCache()  # agents.catalog; cleared by refresh
        self._pastes: set[asyncio.Task[None]] = set()  # pending after-start prompts
        self._handlers: dict[str, Handler] = {
            name: getattr(self, "m_" + name.replace(".", "_").replace("-", "_"))
            for name in constants.METHODS
        }

    async def call(self, conn: Connection | None, method: str, raw: dict[str, Any]) -> dict[str, Any]:
        """Validate ``raw`` for ``method`` and run it.

        Raises:
            SignalttyError: every protocol error (``UNKNOWN_METHOD``, ``BAD_PARAMS``, …).
        """
        handler = self._handlers.get(method)
        if handler is None:
            raise SignalttyError("UNKNOWN_METHOD", f"unknown method: {method}")
        return await handler(conn, self._validate(method, raw))

    def _validate(self, method: str, raw: dict[str, Any]) -> Any:
        """``raw`` as the pydantic model of ``method``; ``BAD_PARAMS`` with ``details.field``.

        Pane id fields given as a unique prefix are replaced by the full id here, once for
        every surface (socket, D-Bus, notification buttons): :meth:`resolve_pane_id`.
        """
        model = P.MODELS[method]
        try:
            params = model.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or None
            msg = f"{field}: {err['msg']}" if field else err["msg"]
            raise SignalttyError("BAD_PARAMS", msg, {"field": field}) from None
        if method in _FULL_IDS_ONLY:
            return params
        update = {}
        for name in _PANE_FIELDS:
            ref = getattr(params, name, None)
            if isinstance(ref, str) and ref not in self.store.panes:
                full = self.resolve_pane_id(ref, name)
                if full != ref:
                    update[name] = full
        # workspace ids abbreviate the same way (``ws_3f``); handles never hold ``_``
        ref = getattr(params, "workspace_id", None)
        if isinstance(ref, str) and ref not in self.store.workspaces:
            matches = prefix_matches(ref, self.store.workspaces, kind="ws_")
            if len(matches) == 1:
                update["workspace_id"] = matches[0]
            elif matches:
                shown = ", ".join(matches[:_AMBIGUOUS_SHOWN])
                raise SignalttyError(
                    "AMBIGUOUS",
                    f"workspace id prefix {ref} matches {len(matches)} workspaces: {shown}; type more of the id",
                    {"field": "workspace_id", "prefix": ref, "workspace_ids": matches[:20]},
                )
        return params.model_copy(update=update) if update else params

    def resolve_pane_id(self, ref: str, field: str = "pane_id") -> str:
        """The pane id ``ref`` names: itself when it is an id, else the one id it is a prefix
        of (``pane_`` plus at least one character, like git's and docker's short ids).

        Returns ``ref`` unchanged when it names no pane, so each method keeps its own
        error for an unknown pane (``NO_SUCH_PANE``, or ``NO_SUCH_DECISION`` for answers).

        Raises:
            SignalttyError: ``AMBIGUOUS`` when the prefix starts several ids; ``details``:
                ``field``, ``prefix``, ``pane_ids`` (sorted, at most 20).
        """
        if ref in self.store.panes:
            return ref
        matches = prefix_matches(ref, self.store.panes)
        if len(matches) == 1:
            return matches[0]
        if not matches:
            return ref
        shown = ", ".join(matches[:_AMBIGUOUS_SHOWN]) + (
            f" and {len(matches) - _AMBIGUOUS_SHOWN} more" if len(matches) > _AMBIGUOUS_SHOWN else ""
        )
        raise SignalttyError(
            "AMBIGUOUS",
            f"pane id prefix {ref} matches {len(matches)} panes: {shown}; type more of the id",
            {"field": field, "prefix": ref, "pane_ids": matches[:20]},
        )

    # ---------------------------------------------------------------- helpers

    def _pane(self, pane_id: str) -> Pane:
        pane = self.store.panes.get(pane_id)
        if pane is None:
            raise SignalttyError("NO_SUCH_PANE", f"no such pane: {pane_id}")
        return pane

    def _runtime(self, pane_id: str) -> PaneRuntime:
        self._pane(pane_id)
        return self.d.runtimes[pane_id]

    def _live_runtime(self, pane_id: str) -> PaneRuntime:
        rt = self._runtime(pane_id)
        if not rt.live:
            raise SignalttyError("PANE_EXITED", f"pane has exited: {pane_id}")
        return rt

    def _workspace(self, ref: str) -> Workspace:
        ws = self.store.find_workspace(ref)
        if ws is None:
            raise SignalttyError("NO_SUCH_WORKSPACE", f"no such workspace: {ref}")
        return ws

    def _ws_updated(self, ws: Workspace) -> None:
        ws.updated_at = self.store.now()
        self.store.emit("workspace.updated", {"workspace": ws.to_wire()})

    # ---------------------------------------------------------------- server

    async def m_server_status(self, conn: Connection | None, p: P.Empty) -> dict[str, Any]:
        d = self.d
        panes = self.store.panes.values()
        result: dict[str, Any] = {
            "version": __version__,
            "protocol": constants.PROTOCOL,
            "instance_id": d.instance_id,
            "pid": os.getpid(),
            "uptime_s": round(time.monotonic() - d.started_mono, 3),
            "socket": str(d.socket_path),
            "state_dir": str(d.state_dir),
            "workspaces": len(self.store.workspaces),
            "panes": len(self.store.panes),
            "live_panes": sum(1 for x in panes if x.live),
            "seq": self.store.seq,
            "path_hydration": d.path_hydration,
            "notifications": {
                "enabled": d.config.notifications.enabled,
                "mode": d.config.notifications.mode,
                "available": bool(d.notifier is not None and d.notifier.available),
            },
            "dbus": {
                "enabled": d.config.dbus.enabled,
                "name_owned": bool(d.dbus_service is not None and d.dbus_service.name_owned),
            },
            "connections": d.listener.stats() if d.listener else {},
            "sweep": d.sweep.stats(),
        }
        if d.config_error:
            result["config_error"] = d.config_error
        return result

    async def m_server_schema(self, conn: Connection | None, p: P.Empty) -> dict[str, Any]:
        return {
            "protocol": constants.PROTOCOL,
            "version": __version__,
            "methods": list(constants.METHODS),
            "events": list(constants.EVENTS),
            "codes": list(constants.CODES),
            "capabilities": dict(constants.CAPABILITIES),
        }

    async def m_server_shutdown(self, conn: Connection | None, p: P.ServerShutdown) -> dict[str, Any]:
        live = sum(1 for x in self.store.panes.values() if x.live)
        if live and not p.force:
            raise SignalttyError("PANES_ALIVE", f"{live} live panes; use force=true")
        if conn is not None:
            conn.after_response = self.d.request_shutdown
        else:
            self.d.request_shutdown()
        return {"stopped": True}

    # ---------------------------------------------------------------- workspaces

    async def m_workspace_create(self, conn: Connection | None, p: P.WorkspaceCreate) -> dict[str, Any]:
        ws = self.create_workspace(p.name, p.cwd)
        return {"workspace": ws.to_wire()}

    def create_workspace(self, name: str | None, cwd: str | None) -> Workspace:
        """Create and announce a workspace (``workspace.created``).

        Raises:
            SignalttyError: ``BAD_PARAMS`` for an empty name or a cwd that is not an existing
                absolute directory.
        """
        clean = sanitize_text(name if name is not None else "workspace", limits.MAX_WORKSPACE_NAME)
        if not clean:
            raise SignalttyError("BAD_PARAMS", "name must not be empty", {"field": "name"})
        if cwd is None:
            home = os.environ.get("HOME") or ""
            cwd = home if os.path.isabs(home) and os.path.isdir(home) else "/tmp"
        elif not (os.path.isabs(cwd) and os.path.isdir(cwd)):
            raise SignalttyError(
                "BAD_PARAMS", f"cwd must be an existing absolute directory: {cwd}", {"field": "cwd"}
            )
        now = self.store.now()
        handle = unique_handle(clean, {w.handle for w in self.store.workspaces.values()})
        ws = Workspace(new_id("ws"), clean, handle, os.path.normpath(cwd), [], now, now)
        self.store.workspaces[ws.id] = ws
        self.store.emit("workspace.created", {"workspace": ws.to_wire()})
        return ws

    async def m_workspace_list(self, conn: Connection | None, p: P.Empty) -> dict[str, Any]:
        wss = sorted(self.store.workspaces.values(), key=lambda w: w.created_at)
        return {"workspaces": [w.to_wire() for w in wss]}

    async def m_workspace_get(self, conn: Connection | None, p: P.WorkspaceRef) -> dict[str, Any]:
        ws = self._workspace(p.workspace_id)
        panes = [self.store.panes[x].to_wire() for x in ws.pane_ids if x in self.store.panes]
        return {"workspace": ws.to_wire(), "panes": panes}

    async def m_workspace_rename(self, conn: Connection | None, p: P.WorkspaceRename) -> dict[str, Any]:
        ws = self._workspace(p.workspace_id)
        clean = sanitize_text(p.name, limits.MAX_WORKSPACE_NAME)
        if not clean:
            raise SignalttyError("BAD_PARAMS", "name must not be empty", {"field": "name"})
        if clean != ws.name:
            ws.name = clean
            self._ws_updated(ws)
        return {"workspace": ws.to_wire()}

    async def m_workspace_close(self, conn: Connection | None, p: P.WorkspaceClose) -> dict[str, Any]:
        ws = self._workspace(p.workspace_id)
        sig = parse_signal(p.signal)
        for pane_id in list(ws.pane_ids):
            if pane_id in self.store.panes:
                self.close_pane(pane_id, sig, announce_workspace=False)
        del self.store.workspaces[ws.id]
        self.store.emit("workspace.closed", {"workspace_id": ws.id})
        return {"closed": True}

    # ---------------------------------------------------------------- spawning

    async def m_pane_spawn(self, conn: Connection | None, p: P.PaneSpawn) -> dict[str, Any]:
        ws = self._workspace(p.workspace_id)
        parent = self._pane(p.parent_pane_id) if p.parent_pane_id else None
        argv = self._command(p)
        cwd = self._cwd(p.cwd, ws.cwd)
        size = clamp_size(p.cols, p.rows, (limits.COLS_DEFAULT, limits.ROWS_DEFAULT))
        env = spawning.check_request_env(p.env)
        plan, agent = await self._catalog_launch(p, p.agent_hint) if argv is None else (None, None)
        if plan is not None:
            argv = plan.argv
            env = {**env, **plan.env_add}
        assert argv is not None
        pane = await self.d.spawner.spawn_new(
            ws,
            argv,
            cwd=cwd,
            size=size,
            request_env=env,
            label=p.label,
            agent_hint=p.agent_hint,
            parent=parent,
            relationship=p.relationship,
            after=None,
            agent=agent,
        )
        self._schedule_paste(pane, plan, bool(p.prompt))
        return _spawn_result(pane)

    async def m_pane_split(self, conn: Connection | None, p: P.PaneSplit) -> dict[str, Any]:
        src = self._pane(p.pane_id)
        ws = self._workspace(src.workspace_id)
        argv: list[str] | None
        if p.argv is None and p.agent is None:
            _no_launch_fields(p)
            shell = os.environ.get("SHELL") or "sh"
            argv = [shell]
        else:
            argv = self._command(p)
        cwd = self._cwd(p.cwd, src.cwd if os.path.isdir(src.cwd) else ws.cwd)
        env = spawning.check_request_env(p.env)
        plan, agent = await self._catalog_launch(p, None) if argv is None else (None, None)
        if plan is not None:
            argv = plan.argv
        assert argv is not None
        pane = await self.d.spawner.spawn_new(
            ws,
            argv,
            cwd=cwd,
            size=(src.cols, src.rows),
            request_env={**env, **plan.env_add} if plan is not None else env,
            label=p.label,
            agent_hint=None,
            parent=None,
            relationship=None,
            after=src.id,
            agent=agent,
        )
        self._schedule_paste(pane, plan, bool(p.prompt))
        return _spawn_result(pane)

    def _command(self, p: P._Command) -> list[str] | None:
        """The request's ``argv`` (checked), or ``None`` for a catalog launch (``agent``)."""
        if (p.argv is None) == (p.agent is None):
            raise SignalttyError("BAD_PARAMS", "exactly one of argv or agent is required", {"field": "argv"})
        if p.agent is None:
            _no_launch_fields(p)
            assert p.argv is not None
            for arg in p.argv:
                if "\x00" in arg:
                    raise SignalttyError("BAD_PARAMS", "argv must not contain NUL", {"field": "argv"})
            return list(p.argv)
        return None

    async def _catalog_launch(
        self, p: P._Command, hint: str | None
    ) -> tuple[launch.LaunchPlan, AgentInfo]:
        """Resolve ``p.agent`` on the hydrated PATH and build its launch (agents.md §4.4).

        Detection is redone for every launch (the catalog listing may be cached; a launch
        must not start a path that has gone, nor refuse a tool installed since).

        Raises:
            SignalttyError: ``BAD_PARAMS`` "unknown agent: X", "agent not installed: X"
                (``details.missing_requires``), or a prompt/bypass/continue error.
        """
        assert p.agent is not None
        catalog = getattr(self.d, "catalog", None)
        entry = catalog.entry(p.agent) if catalog is not None else None
        if entry is None:
            raise SignalttyError("BAD_PARAMS", f"unknown agent: {p.agent}", {"field": "agent"})
        await self.d.wait_hydration()
        found = self.detection.fresh(entry, os.environ.get("PATH", os.defpath))
        if not found.installed or found.path is None:
            raise SignalttyError(
                "BAD_PARAMS",
                f"agent not installed: {p.agent}",
                {"field": "agent", "missing_requires": list(found.missing_requires)},
            )
        plan = launch.build_argv(
            entry,
            found.path,
            prompt=p.prompt,
            bypass=p.bypass,
            continue_=p.continue_,
            automatic_permissions=self.d.config.agents.automatic_permissions,
        )
        kind = entry.kind
        if hint is not None:
            kind = hint if hint in spawning.KNOWN_HINTS else "none"
        info = AgentInfo(
            kind=kind,
            catalog_id=entry.id,
            display_name=entry.display_name,
            launch_prefix=list(plan.launch_prefix),
        )
        return plan, info

    def _schedule_paste(self, pane: Pane, plan: launch.LaunchPlan | None, prompted: bool = False) -> None:
        """After-start prompt: paste it after ``plan.delay_ms`` unless the pane's process
        instance has ended or been replaced by then (agents.md §4.4). A launch prompt
        (argv or pasted) starts a turn (``Pane.turn_input``, issue 11 item 5)."""
        if plan is not None and prompted:
            pane.turn_input = True
        if plan is None or plan.paste is None:
            return
        rt = self.d.runtimes.get(pane.id)
        if rt is None:
            return
        task = asyncio.get_running_loop().create_task(
            self._paste_after_start(rt, pane.process_instance, plan.paste, plan.delay_ms),
            name=f"paste-{pane.id}",
        )
        self._pastes.add(task)
        task.add_done_callback(self._pastes.discard)

        def cancel(_: PaneRuntime) -> None:
            task.cancel()

        def unhook(_: asyncio.Task[None]) -> None:
            if cancel in rt.on_exit_hooks:
                rt.on_exit_hooks.remove(cancel)

        rt.on_exit_hooks.append(cancel)
        task.add_done_callback(unhook)

    async def _paste_after_start(self, rt: PaneRuntime, instance: str | None, text: str, delay_ms: int) -> None:
        pane_id = rt.pane.id

        def current() -> bool:
            return (
                self.d.runtimes.get(pane_id) is rt
                and rt.live
                and not rt.closed
                and rt.pane.process_instance == instance
            )

        try:
            await asyncio.sleep(delay_ms / 1000)
            if not current():
                log.info("agent.prompt_skipped", pane_id=pane_id, reason="pane not live")
                return
            await rt.write_input(launch.paste_bytes(text), limits.INPUT_BUDGET_S)
            await asyncio.sleep(launch.PASTE_ENTER_DELAY_MS / 1000)
            if not current():
                return
            await rt.write_input(b"\r", limits.INPUT_BUDGET_S)
            log.info("agent.prompt_pasted", pane_id=pane_id, bytes=len(text.encode("utf-8", "replace")))
        except SignalttyError as exc:
            log.info("agent.prompt_failed", pane_id=pane_id, code=exc.code, error=exc.message)

    @staticmethod
    def _cwd(cwd: str | None, default: str) -> str:
        if cwd is None:
            return default
        if not (os.path.isabs(cwd) and os.path.isdir(cwd)):
            raise SignalttyError(
                "BAD_PARAMS", f"cwd must be an existing absolute directory: {cwd}", {"field": "cwd"}
            )
        return os.path.normpath(cwd)

    # ---------------------------------------------------------------- pane queries

    async def m_pane_list(self, conn: Connection | None, p: P.PaneList) -> dict[str, Any]:
        panes = self.store.ordered_panes()
        if p.workspace_id is not None:
            ws = self._workspace(p.workspace_id)
            panes = [x for x in panes if x.workspace_id == ws.id]
        if p.live is not None:
            panes = [x for x in panes if x.live == p.live]
        return {"panes": [x.to_wire() for x in panes]}

    async def m_pane_get(self, conn: Connection | None, p: P.PaneRef) -> dict[str, Any]:
        pane = self._pane(p.pane_id)
        return {
            "pane": pane.to_wire(),
            "wait_baseline": waits.baseline(pane, self.store.pane_seqs(pane.id)),
        }

    async def m_pane_read(self, conn: Connection | None, p: P.PaneRead) -> dict[str, Any]:
        rt = self._runtime(p.pane_id)
        mode = p.mode or "tail"
        if mode == "screen":
            await rt.settle()
            row, col = rt.screen.cursor
            return {
                "text": rt.screen.screen_text(),
                "cursor": {"row": row, "col": col},
                "alt_screen": rt.screen.alt_screen,
                "truncated": False,
            }
        lines = p.lines or limits.READ_LINES_DEFAULT
        if p.strip_ansi is False:
            text = rt.raw_text()
            return {"text": text, "truncated": rt.output_offset > len(rt.raw)}
        await rt.settle()
        text, truncated = rt.tail_text(lines)
        return {"text": text, "truncated": truncated}

    # ---------------------------------------------------------------- pane input and control

    async def m_pane_input(self, conn: Connection | None, p: P.PaneInput) -> dict[str, Any]:
        if len(p.data_b64) > limits.MAX_INPUT_B64:
            raise SignalttyError("RATE_LIMITED", "input too large")
        try:
            data = base64.b64decode(p.data_b64, validate=True)
        except (binascii.Error, ValueError):
            raise SignalttyError("BAD_PARAMS", "data_b64 is not valid base64", {"field": "data_b64"}) from None
        rt = self._live_runtime(p.pane_id)
        written = await rt.write_input(data, limits.INPUT_BUDGET_S)
        return {"written": written}

    async def m_pane_resize(self, conn: Connection | None, p: P.PaneResize) -> dict[str, Any]:
        rt = self._live_runtime(p.pane_id)
        cols, rows = clamp_size(p.cols, p.rows, (rt.pane.cols, rt.pane.rows))
        rt.resize(cols, rows)
        self.store.dirty = True
        self.store.emit("pane.resized", {"pane": rt.pane.to_wire()})
        return {"pane": rt.pane.to_wire()}

    async def m_pane_signal(self, conn: Connection | None, p: P.PaneSignal) -> dict[str, Any]:
        sig = parse_signal(p.signal)
        rt = self._live_runtime(p.pane_id)
        try:
            rt.send_signal(sig, group=bool(p.group))
        except ProcessLookupError:
            raise SignalttyError("PANE_EXITED", f"pane has exited: {p.pane_id}") from None
        except PermissionError as exc:
            raise SignalttyError("IO_ERROR", f"cannot signal: {exc.strerror}") from exc
        return {"sent": True}

    async def m_pane_close(self, conn: Connection | None, p: P.PaneClose) -> dict[str, Any]:
        self._pane(p.pane_id)
        self.close_pane(p.pane_id, parse_signal(p.signal))
        return {"closed": True}

    def close_pane(self, pane_id: str, sig: int, *, announce_workspace: bool = True) -> None:
        """Remove a pane now; a live child gets ``sig`` (its group), SIGKILL after 5 s."""
        pane = self.store.panes[pane_id]
        rt = self.d.runtimes.pop(pane_id, None)
        if rt is not None:
            for viewer in list(rt.viewers):
                viewer.detached(pane_id)
            # Exited panes too: a grandchild may still hold the PTY in the child's group.
            rt.terminate(sig)
            if rt.proc is not None:
                self.d.reap_later(rt)
            rt.close()
        self.store.apply(rules.on_close(pane))
        del self.store.panes[pane_id]
        self.store.seqs.pop(pane_id, None)
        self.store.dirty_tails.discard(pane_id)
        ws = self.store.workspaces.get(pane.workspace_id)
        if ws is not None and pane_id in ws.pane_ids:
            ws.pane_ids.remove(pane_id)
            if announce_workspace:
                self._ws_updated(ws)
        self.store.bus.poke(pane_id)

    async def m_pane_mark_seen(self, conn: Connection | None, p: P.PaneRef) -> dict[str, Any]:
        pane = self._pane(p.pane_id)
        self.store.apply(rules.mark_seen(pane, "mark_seen", now=self.store.now()))
        return {"pane": pane.to_wire()}

    # ---------------------------------------------------------------- attach

    async def m_pane_attach(self, conn: Connection | None, p: P.PaneAttach) -> dict[str, Any]:
        rt = self._runtime(p.pane_id)
        if p.cols is not None and p.rows is not None and rt.live:
            cols, rows = clamp_size(p.cols, p.rows, (rt.pane.cols, rt.pane.rows))
            if (cols, rows) != (rt.pane.cols, rt.pane.rows):
                rt.resize(cols, rows)
                self.store.emit("pane.resized", {"pane": rt.pane.to_wire()})
        await rt.settle()
        # From here to the return nothing awaits: the viewer is registered before the snapshot,
        # and the response is queued before any later pty.data.
        if rt.live and conn is not None:
            rt.viewers.add(conn)
            conn.attached.add(rt.pane.id)
            # a viewer that does not mark seen is not a person looking (desktop-and-service
            # §6.1 "interactive viewer"); the others keep the pane from turning unread
            rt.set_watching(conn, p.mark_seen is not False)
        rt.settle_now()
        snapshot = rt.screen.snapshot_bytes()
        pane = rt.pane
        if p.mark_seen is not False:
            self.store.apply(rules.mark_seen(pane, "attach", now=self.store.now()))
        return {
            "pane_id": pane.id,  # the full id, when a prefix was given
            "snapshot_b64": base64.b64encode(snapshot).decode(),
            "output_offset": rt.output_offset,
            "size": {"cols": pane.cols, "rows": pane.rows},
            "live": rt.live,
            "restore_state": pane.restore_state.value,
            "lifecycle": pane.lifecycle.value,
            "attention": pane.attention.value,
        }

    async def m_pane_detach(self, conn: Connection | None, p: P.PaneRef) -> dict[str, Any]:
        self._pane(p.pane_id)
        rt = self.d.runtimes.get(p.pane_id)
        was = conn is not None and p.pane_id in conn.attached
        if was and conn is not None:
            conn.attached.discard(p.pane_id)
            if rt is not None:
                rt.viewers.discard(conn)
        return {"detached": was}

    # ---------------------------------------------------------------- output waits

    async def m_pane_wait_for_output(
        self, conn: Connection | None, p: P.PaneWaitForOutput
    ) -> dict[str, Any]:
        rt = self._runtime(p.pane_id)
        timeout = p.timeout_s or limits.WAIT_OUTPUT_TIMEOUT_DEFAULT_S
        matcher = compile_matcher(p.match, bool(p.regex), self.d.config.server.wait_regex_budget_s, timeout)
        lines = p.lines or limits.READ_LINES_DEFAULT
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if p.new_only:
            return await self._wait_new_output(rt, matcher, deadline)
        ev = self.store.bus.waiter(rt.pane.id)
        try:
            while True:
                ev.clear()
                await rt.settle()
                text, _ = rt.tail_text(lines)
                line = await matcher.last_match(text.split("\n"))
                if line is not None:
                    return {"matched_line": line, "text": text}
                if not rt.live or rt.closed:
                    raise SignalttyError("PANE_EXITED", f"pane exited without a match: {rt.pane.id}")
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise SignalttyError("TIMEOUT", f"timed out waiting for output {p.match!r}")
                try:
                    await asyncio.wait_for(ev.wait(), remaining)
                except TimeoutError:
                    pass
        finally:
            self.store.bus.drop_waiter(rt.pane.id, ev)

    async def _wait_new_output(self, rt: PaneRuntime, matcher: Matcher, deadline: float) -> dict[str, Any]:
        """Only output arriving after the call; lines are matched off the pump (a user regex
        may be slow, and the pump must never run it)."""
        loop = asyncio.get_running_loop()
        collector = LineCollector()
        chunks: list[bytes] = []
        arrived = asyncio.Event()
        exited = False

        def on_output(data: bytes) -> None:
            chunks.append(data)
            arrived.set()

        def on_exit(_: PaneRuntime) -> None:
            nonlocal exited
            exited = True
            arrived.set()

        if not rt.live:
            raise SignalttyError("PANE_EXITED", f"pane has exited: {rt.pane.id}")
        rt.add_output_listener(on_output)
        rt.on_exit_hooks.append(on_exit)
        try:
            while True:
                arrived.clear()
                if chunks:
                    data = b"".join(chunks)
                    chunks.clear()
                    line = await matcher.first_match(collector.feed(data))
                    if line is not None:
                        text, _ = rt.tail_text(limits.READ_LINES_DEFAULT)
                        return {"matched_line": line, "text": text}
                if exited and not chunks:
                    raise SignalttyError("PANE_EXITED", f"pane exited without a match: {rt.pane.id}")
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise SignalttyError("TIMEOUT", "timed out waiting for new output")
                try:
                    await asyncio.wait_for(arrived.wait(), remaining)
                except TimeoutError:
                    pass
        finally:
            rt.remove_output_listener(on_output)
            if on_exit in rt.on_exit_hooks:
                rt.on_exit_hooks.remove(on_exit)

    # ---------------------------------------------------------------- notifications

    async def m_notify(self, conn: Connection | None, p: P.Notify) -> dict[str, Any]:
        return self.notify(p.pane_id, p.title, p.body, p.severity or "info", "cli")

    def notify(
        self, pane_id: str | None, title: str, body: str | None, severity: str, source: str
    ) -> dict[str, Any]:
        """``notify`` for the socket and other surfaces (source ``cli``/``dbus``).

        Raises:
            SignalttyError: ``BAD_PARAMS`` (empty title, body too long), ``NO_SUCH_PANE``.
        """
        clean_title = sanitize_text(title, limits.MAX_NOTIFICATION_TITLE)
        if not clean_title:
            raise SignalttyError("BAD_PARAMS", "title must not be empty", {"field": "title"})
        if len(title) > limits.MAX_NOTIFICATION_TITLE:
            raise SignalttyError("BAD_PARAMS", "title longer than 200 characters", {"field": "title"})
        if body is not None and len(body) > limits.MAX_NOTIFICATION_BODY:
            raise SignalttyError("BAD_PARAMS", "body longer than 2000 characters", {"field": "body"})
        clean_body = (
            sanitize_text(body, limits.MAX_NOTIFICATION_BODY, multiline=True) or None
            if body is not None
            else None
        )
        pane = self._pane(pane_id) if pane_id else None
        note = NotificationInput(
            id=new_id("notif"),
            title=clean_title,
            body=clean_body,
            severity=severity,
            source=source,
            attention_source="notify",
        )
        self.store.apply(rules.on_notification(pane, note, now=self.store.now()))
        record = self.store.notifications[-1]
        return {"notification": record.to_wire()}

    # ---------------------------------------------------------------- subscribe / wait

    async def m_subscribe(self, conn: Connection | None, p: P.Subscribe) -> dict[str, Any]:
        if conn is None:
            raise SignalttyError("BAD_PARAMS", "subscribe needs a connection")
        patterns = list(p.events or ["*"])
        for pat in patterns:
            if pat != "*" and not pat.endswith(".*") and "*" in pat:
                raise SignalttyError("BAD_PARAMS", f"bad event glob: {pat}", {"field": "events"})
        result: dict[str, Any] = {"subscribed": True, "seq": self.store.seq}
        if p.from_seq is not None:
            if p.from_seq > self.store.seq:
                conn.close_after_response = True
                return {
                    "subscribed": False,
                    "seq": self.store.seq,
                    "replay": {
                        "status": "cursor_ahead",
                        "retained_after": self.store.retained_after(),
                        "recovery": "snapshot_then_resubscribe",
                    },
                }
            events = self.store.replay_after(p.from_seq)
            if events is None:
                conn.close_after_response = True
                return {
                    "subscribed": False,
                    "seq": self.store.seq,
                    "replay": {
                        "status": "history_lost",
                        "retained_after": self.store.retained_after(),
                        "recovery": "snapshot_then_resubscribe",
                    },
                }
            chosen = [e for e in events if any(glob_match(g, e[1]) for g in patterns)]
            result["replay"] = {"status": "complete", "returned": len(chosen)}
            conn.pending_replay = chosen
        conn.subscribe(patterns)
        return result

    async def m_wait(self, conn: Connection | None, p: P.Wait) -> dict[str, Any]:
        pane = self._pane(p.pane_id)
        try:
            outcomes = waits.parse_until(p.until)
            seqs = self.store.pane_seqs(pane.id)
            if p.after is not None:
                lseq, aseq = waits.check_baseline(pane, seqs, p.after)
                base: tuple[int | None, int | None] = (lseq, aseq)
            else:
                base = (None, None)
        except waits.WaitError as exc:
            field = "after" if p.after is not None and "baseline" in exc.message else "until"
            raise SignalttyError(exc.code, exc.message, {"field": field} if exc.code == "BAD_PARAMS" else None) from None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (p.timeout_s or limits.WAIT_TIMEOUT_DEFAULT_S)
        instance = pane.process_instance
        ev = self.store.bus.waiter(pane.id)
        try:
            while True:
                ev.clear()
                current = self.store.panes.get(pane.id)
                if current is None:
                    raise SignalttyError("NO_SUCH_PANE", f"pane closed while waiting: {pane.id}")
                if current.process_instance != instance:
                    raise SignalttyError("IDENTITY_CHANGED", "the pane runs another process instance")
                hit = waits.evaluate(current, seqs, outcomes, *base)
                if hit is not None:
                    return {
                        "satisfied": True,
                        "outcome": hit.outcome,
                        "transition_seq": hit.transition_seq,
                        "lifecycle": current.lifecycle.value,
                        "attention": current.attention.value,
                    }
                if base == (None, None):
                    # Not satisfied now: from here on only a later transition counts.
                    base = (seqs.get("lifecycle", 0), seqs.get("attention", 0))
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise SignalttyError("TIMEOUT", f"timed out waiting for {', '.join(outcomes)}")
                try:
                    await asyncio.wait_for(ev.wait(), min(remaining, 0.5))
                except TimeoutError:
                    pass
        finally:
            self.store.bus.drop_waiter(pane.id, ev)

    # ---------------------------------------------------------------- ranking

    async def m_focus_next_unread(self, conn: Connection | None, p: P.Empty) -> dict[str, Any]:
        best: Pane | None = None
        for pane in self.store.panes.values():
            if pane.attention == Attention.NONE:
                continue
            if best is None or _focus_key(pane) > _focus_key(best):
                best = pane
        return {"pane_id": best.id if best else None}

    async def m_attention_pending(self, conn: Connection | None, p: P.AttentionPending) -> dict[str, Any]:
        panes = [x for x in self.store.panes.values() if x.attention != Attention.NONE]
        panes.sort(key=lambda x: (ATTENTION_RANK[x.attention], x.attention_since or 0.0), reverse=True)
        out = []
        for pane in panes[: p.limit or 50]:
            item: dict[str, Any] = {
                "pane_id": pane.id,
                "workspace_id": pane.workspace_id,
                "title": pane.title,
                "kind": pane.agent.kind,
                "lifecycle": pane.lifecycle.value,
                "attention": pane.attention.value,
            }
            if pane.label is not None:
                item["label"] = pane.label
            if pane.last_message is not None:
                item["last_message"] = pane.last_message
            if pane.attention_since is not None:
                item["attention_since"] = iso(pane.attention_since)
            if pane.pending_decision is not None:
                item["decision_id"] = pane.pending_decision.id
            out.append(item)
        return {"panes": out}


    # ---------------------------------------------------------------- tier 2

    async def m_hook_event(self, conn: Connection | None, p: P.HookEvent) -> dict[str, Any]:
        # the kernel's word on who reports, not the client_pid it claims (issue #10 item 6)
        return await self.d.hooks.hook_event(p, conn.peer_pid if conn is not None else None)

    async def m_report_session(self, conn: Connection | None, p: P.ReportSession) -> dict[str, Any]:
        caller = Caller("socket", conn.peer_pid, conn.opened_at) if conn is not None else None
        return await self.d.hooks.report_session(p, caller)

    async def m_decision_answer(self, conn: Connection | None, p: P.DecisionAnswer) -> dict[str, Any]:
        # No connection: the daemon's own process (a notification button). D-Bus answers
        # come through ``answer_as`` with the bus caller's pid.
        if conn is None:
            return await self.d.hooks.answer(p, DAEMON_CALLER)
        return await self.d.hooks.answer(p, Caller("socket", conn.peer_pid, conn.opened_at))

    async def answer_as(self, surface: str, pid: int | None, raw: dict[str, Any]) -> dict[str, Any]:
        """``decision.answer`` for a surface that knows its caller (``dbus``: the sender's pid,
        None when the bus could not tell — refused).

        Same validation, guard and errors as the socket method (``HookService.answer``).
        """
        return await self.d.hooks.answer(self._validate("decision.answer", raw), Caller(surface, pid))

    async def m_permission_list(self, conn: Connection | None, p: P.PermissionList) -> dict[str, Any]:
        if p.pane_id is not None:
            self._pane(p.pane_id)
        return self.d.hooks.permission_list(p.pane_id)

    async def m_agents_list(self, conn: Connection | None, p: P.Empty) -> dict[str, Any]:
        """``agents.list`` (protocol.md §6): the active catalog's manifests and failures."""
        return self.d.catalog.listing()

    async def m_agents_reload(self, conn: Connection | None, p: P.Empty) -> dict[str, Any]:
        """``agents.reload`` (protocol.md §6). Raises ``IO_ERROR`` (dir unlistable; set kept)."""
        return await self.d.reload_agents()

    async def m_pane_resume(self, conn: Connection | None, p: P.PaneRef) -> dict[str, Any]:
        pane = self._pane(p.pane_id)
        if pane.live:
            raise SignalttyError("BAD_PARAMS", "pane is already live")
        return _spawn_result(await self.d.spawner.resume(pane))

    async def m_pane_explain(self, conn: Connection | None, p: P.PaneRef) -> dict[str, Any]:
        """Why the pane is classified as it is (protocol.md §6 ``pane.explain``)."""
        pane = self._pane(p.pane_id)
        rt = self.d.runtimes.get(p.pane_id)
        if rt is not None:
            await rt.settle()
        return self.d.sweep.explain(pane, rt)

    async def m_pane_submit(self, conn: Connection | None, p: P.PaneSubmit) -> dict[str, Any]:
        return await submit.submit(self, p)

    async def m_agents_catalog(self, conn: Connection | None, p: P.AgentsCatalog) -> dict[str, Any]:
        """protocol.md §6 ``agents.catalog``: installed/available entries on the hydrated PATH;
        ``refresh`` re-runs PATH hydration (≤ 5 s) and forgets cached detection."""
        if p.refresh:
            await self.d.refresh_path_hydration()
            self.detection.clear()
        else:
            await self.d.wait_hydration()
        catalog = getattr(self.d, "catalog", None)
        entries = catalog.entries() if catalog is not None else []
        hydration = self.d.path_hydration
        return {
            "path_hydration": {"state": hydration.get("state"), "added": list(hydration.get("added", []))},
            "agents": launch.catalog_rows(entries, os.environ.get("PATH", os.defpath), self.detection),
        }


def _no_launch_fields(p: P._Command) -> None:
    """``prompt``, ``bypass`` and ``continue`` are only valid with ``agent`` (protocol.md §5)."""
    for name, value in (("prompt", p.prompt), ("bypass", p.bypass), ("continue", p.continue_)):
        if value is not None:
            raise SignalttyError("BAD_PARAMS", f"{name} is only valid with agent", {"field": name})


def _focus_key(pane: Pane) -> tuple[int, float, str]:
    # Highest attention, then most recent activity, then pane id (states.md §6).
    return (ATTENTION_RANK[pane.attention], pane.last_activity_at, pane.id)


def _spawn_result(pane: Pane) -> dict[str, Any]:
    """``{pane, integration?}`` for pane.spawn/split/resume (integrations.md §3 "result")."""
    out: dict[str, Any] = {"pane": pane.to_wire()}
    if pane.integration is not None:
        out["integration"] = pane.integration
    return out
