"""``pane.spawn``, ``pane.split``, ``pane.resume``: argv or catalog launches, and the
after-start prompt paste (protocol.md §5, §6; agents.md §4.4)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import structlog

from signaltty.agents import launch
from signaltty.core import limits
from signaltty.core.model import AgentInfo, Pane
from signaltty.proto import params as P
from signaltty.proto.envelope import SignalttyError
from signaltty.server import spawning
from signaltty.server.config import Config
from signaltty.server.handlers.common import Handler, Panes, clamp_size, spawn_result
from signaltty.server.panes import PaneRuntime
from signaltty.server.ports import CatalogSource, Client, Hydration
from signaltty.server.spawning import Spawner

log = structlog.get_logger("signaltty.router")


class SpawnHandlers:
    """Methods that start a pane's process."""

    def __init__(
        self,
        *,
        panes: Panes,
        spawner: Spawner,
        config: Config,
        catalogs: CatalogSource,
        hydration: Hydration,
        detection: launch.DetectionCache,
    ) -> None:
        self.panes = panes
        self.spawner = spawner
        self.config = config
        self.catalogs = catalogs
        self.hydration = hydration
        self.detection = detection  # shared with agents.catalog, which clears it on refresh
        self._pastes: set[asyncio.Task[None]] = set()  # pending after-start prompts

    def routes(self) -> dict[str, Handler]:
        return {
            "pane.spawn": self.spawn,
            "pane.split": self.split,
            "pane.resume": self.resume,
        }

    async def spawn(self, conn: Client | None, p: P.PaneSpawn) -> dict[str, Any]:
        ws = self.panes.workspace(p.workspace_id)
        parent = self.panes.pane(p.parent_pane_id) if p.parent_pane_id else None
        argv = _command(p)
        cwd = _cwd(p.cwd, ws.cwd)
        size = clamp_size(p.cols, p.rows, (limits.COLS_DEFAULT, limits.ROWS_DEFAULT))
        env = spawning.check_request_env(p.env)
        plan, agent = await self._catalog_launch(p, p.agent_hint) if argv is None else (None, None)
        if plan is not None:
            argv = plan.argv
            env = {**env, **plan.env_add}
        assert argv is not None
        pane = await self.spawner.spawn_new(
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
        return spawn_result(pane)

    async def split(self, conn: Client | None, p: P.PaneSplit) -> dict[str, Any]:
        src = self.panes.pane(p.pane_id)
        ws = self.panes.workspace(src.workspace_id)
        argv: list[str] | None
        if p.argv is None and p.agent is None:
            _no_launch_fields(p)
            shell = os.environ.get("SHELL") or "sh"
            argv = [shell]
        else:
            argv = _command(p)
        cwd = _cwd(p.cwd, _existing(src.cwd, ws.cwd))
        env = spawning.check_request_env(p.env)
        plan, agent = await self._catalog_launch(p, None) if argv is None else (None, None)
        if plan is not None:
            argv = plan.argv
        assert argv is not None
        pane = await self.spawner.spawn_new(
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
        return spawn_result(pane)

    async def resume(self, conn: Client | None, p: P.PaneRef) -> dict[str, Any]:
        pane = self.panes.pane(p.pane_id)
        if pane.live:
            raise SignalttyError("BAD_PARAMS", "pane is already live")
        return spawn_result(await self.spawner.resume(pane))

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
        entry = self.catalogs.catalog.entry(p.agent)
        if entry is None:
            raise SignalttyError("BAD_PARAMS", f"unknown agent: {p.agent}", {"field": "agent"})
        await self.hydration.wait_hydration()
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
            automatic_permissions=self.config.agents.automatic_permissions,
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

    def _schedule_paste(
        self, pane: Pane, plan: launch.LaunchPlan | None, prompted: bool = False
    ) -> None:
        """After-start prompt: paste it after ``plan.delay_ms`` unless the pane's process
        instance has ended or been replaced by then (agents.md §4.4). A launch prompt
        (argv or pasted) starts a turn (``Pane.turn_input``, issue 11 item 5)."""
        if plan is not None and prompted:
            pane.turn_input = True
        if plan is None or plan.paste is None:
            return
        rt = self.panes.runtimes.get(pane.id)
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

    async def _paste_after_start(
        self, rt: PaneRuntime, instance: str | None, text: str, delay_ms: int
    ) -> None:
        pane_id = rt.pane.id
        runtimes = self.panes.runtimes

        def current() -> bool:
            return (
                runtimes.get(pane_id) is rt
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
            log.info(
                "agent.prompt_pasted", pane_id=pane_id, bytes=len(text.encode("utf-8", "replace"))
            )
        except SignalttyError as exc:
            log.info("agent.prompt_failed", pane_id=pane_id, code=exc.code, error=exc.message)


def _command(p: P._Command) -> list[str] | None:
    """The request's ``argv`` (checked), or ``None`` for a catalog launch (``agent``)."""
    if (p.argv is None) == (p.agent is None):
        raise SignalttyError(
            "BAD_PARAMS", "exactly one of argv or agent is required", {"field": "argv"}
        )
    if p.agent is None:
        _no_launch_fields(p)
        assert p.argv is not None
        for arg in p.argv:
            if "\x00" in arg:
                raise SignalttyError("BAD_PARAMS", "argv must not contain NUL", {"field": "argv"})
        return list(p.argv)
    return None


def _cwd(cwd: str | None, default: str) -> str:
    if cwd is None:
        return default
    if not (os.path.isabs(cwd) and os.path.isdir(cwd)):
        raise SignalttyError(
            "BAD_PARAMS", f"cwd must be an existing absolute directory: {cwd}", {"field": "cwd"}
        )
    return os.path.normpath(cwd)


def _existing(cwd: str, fallback: str) -> str:
    """``cwd`` when it is still a directory, else ``fallback`` (a split of a pane whose
    directory has gone starts in its workspace's)."""
    return cwd if os.path.isdir(cwd) else fallback


def _no_launch_fields(p: P._Command) -> None:
    """``prompt``, ``bypass`` and ``continue`` are only valid with ``agent`` (protocol.md §5)."""
    for name, value in (("prompt", p.prompt), ("bypass", p.bypass), ("continue", p.continue_)):
        if value is not None:
            raise SignalttyError("BAD_PARAMS", f"{name} is only valid with agent", {"field": name})
