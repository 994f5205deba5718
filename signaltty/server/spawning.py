"""Starting panes: environment policy, kind detection from argv, PTY spawn, pane registration.

Spec: protocol.md §5 ``pane.spawn`` (env allow-list, pane environment, lineage, limits),
agents.md §3.1 step 3 (builtin names), desktop-and-service.md §3.2 (systemd variables scrubbed).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from signaltty import __version__
from signaltty.agents import codex_runtime, launch, resume
from signaltty.agents.adapters import adapter_for
from signaltty.agents.adapters.overlay import resolve_adapter
from signaltty.agents.catalog import Catalog
from signaltty.agents.process_name import program_name
from signaltty.agents.registry import builtin_kind, display_name_for
from signaltty.core import rules
from signaltty.core.ids import new_id
from signaltty.core.limits import MAX_LABEL, MAX_REQUEST_ENV
from signaltty.core.model import AgentInfo, Pane, Workspace
from signaltty.core.sanitize import sanitize_text
from signaltty.proto import trust
from signaltty.proto.envelope import SignalttyError
from signaltty.server import autoconfig
from signaltty.server.config import Config
from signaltty.server.panes import PaneRuntime
from signaltty.server.ports import CatalogSource, Hydration, Runtimes
from signaltty.server.store import Store
from signaltty.system import sdnotify
from signaltty.term import pty as ptymod

log = structlog.get_logger("signaltty.spawn")

# Set by signaltty for every pane (protocol.md §5 "Pane environment"): a request may not
# change which pane a program believes it runs in, which daemon it reports to, or what
# terminal it is in (issue 13 item 9: refused, not silently overwritten).
RESERVED_ENV_KEYS = frozenset(
    {
        "SIGNALTTY_PANE",
        "SIGNALTTY_SOCKET",
        "SIGNALTTY_DAEMON",
        "SIGNALTTY_PARENT_PANE",
        "TERM_PROGRAM",
        "TERM_PROGRAM_VERSION",
    }
)
# POSIX.1-2017 §8.1: portable names are letters, digits and underscore, not starting with
# a digit (what a shell can export).
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# protocol.md §5 "Pane environment": inherited variables that never reach a pane.
SCRUBBED_ENV = sdnotify.SERVICE_MANAGER_ENV | {
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "SIGNALTTY_SOCKET",
}

KNOWN_HINTS = frozenset({"claude", "codex", "opencode", "cursor", "pi", "generic", "none"})


def check_request_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Validate a request's ``env`` (``pane.spawn``/``pane.split``, ``signaltty new -e``).

    Any portable name may be set (like ``tmux new-session -e``) except the ones signaltty
    sets (:data:`RESERVED_ENV_KEYS`) and the ones that never reach a pane
    (:data:`SCRUBBED_ENV`: loader and service-manager variables); a value is any text
    without NUL. Decision (issue 13 item 9, over protocol.md §5's allow-list): see
    docs/decisions.md "tmux habits".

    Raises:
        SignalttyError: ``BAD_PARAMS`` (``details.field = "env"``, ``details.key``) for more
            than ``MAX_REQUEST_ENV`` entries, a key that is not a portable name (empty,
            with ``=``, …), a reserved or scrubbed key, or a value with NUL.
    """
    items = list((env or {}).items())
    if len(items) > MAX_REQUEST_ENV:
        raise SignalttyError(
            "BAD_PARAMS", f"env: more than {MAX_REQUEST_ENV} variables", {"field": "env"}
        )
    out: dict[str, str] = {}
    for key, value in items:
        shown = sanitize_text(key, 64) or "(empty)"
        if not _ENV_NAME.match(key):
            raise SignalttyError(
                "BAD_PARAMS",
                f"env key {shown!r} is not a variable name (letters, digits and _, "
                "not starting with a digit)",
                {"field": "env", "key": shown},
            )
        if key in RESERVED_ENV_KEYS:
            raise SignalttyError(
                "BAD_PARAMS",
                f"env key {key} is set by signaltty for every pane and cannot be overridden "
                f"(reserved: {', '.join(sorted(RESERVED_ENV_KEYS))})",
                {"field": "env", "key": key},
            )
        if key in SCRUBBED_ENV:
            raise SignalttyError(
                "BAD_PARAMS",
                f"env key {key} never reaches a pane (loader and service-manager variables "
                f"are kept out; if you mean it, run the command under `env {key}=…`)",
                {"field": "env", "key": key},
            )
        if "\x00" in value:
            raise SignalttyError(
                "BAD_PARAMS", f"env value of {key} contains NUL", {"field": "env", "key": key}
            )
        out[key] = value
    return out


def pane_environment(
    base: Mapping[str, str],
    path: str,
    request_env: Mapping[str, str],
    *,
    pane_id: str,
    socket_path: str,
    parent_pane_id: str | None,
) -> dict[str, str]:
    """Daemon env minus scrubbed keys, then PATH, request env, then injected keys."""
    env = {k: v for k, v in base.items() if k not in SCRUBBED_ENV}
    env["PATH"] = path
    env.update(request_env)
    env["SIGNALTTY_PANE"] = pane_id
    env["SIGNALTTY_SOCKET"] = socket_path
    # which process the pane's clients must find on that socket (proto/trust.py, A8)
    env[trust.DAEMON_ENV] = trust.identity_token()
    if "TERM" not in request_env:
        env["TERM"] = "xterm-256color"
    env["TERM_PROGRAM"] = "signaltty"
    env["TERM_PROGRAM_VERSION"] = __version__
    if parent_pane_id:
        env["SIGNALTTY_PARENT_PANE"] = parent_pane_id
    return env


def detect_kind(argv0: str, hint: str | None, catalog: Catalog | None = None) -> AgentInfo:
    """Kind from a hint (unknown → ``none``), else from the program basename: user manifests,
    then bundled ones, then builtin names, else ``generic`` (agents.md §3.1)."""
    if hint is not None:
        kind = hint if hint in KNOWN_HINTS else "none"
        return AgentInfo(kind=kind, display_name=display_name_for(kind))
    name = os.path.basename(argv0)
    entry = catalog.detect(name) if catalog is not None else None
    if entry is not None:
        return AgentInfo(kind=entry.kind, catalog_id=entry.id, display_name=entry.display_name)
    kind = builtin_kind(name) or "generic"
    return AgentInfo(kind=kind, display_name=display_name_for(kind))


def _anchored(program: str, cwd: str) -> str:
    """A relative program path (``./run.sh``) made absolute against the pane's ``cwd``, so
    a resume runs the same file; a bare name stays a ``PATH`` lookup."""
    if "/" in program and not os.path.isabs(program):
        return os.path.normpath(os.path.join(cwd, program))
    return program


def _resume_cwd(pane: Pane) -> str:
    """Where a resume starts: the directory the agent's hooks reported for the session while
    it exists (a shell pane that ``cd``-ed before starting the agent; issue 11 item 11), else
    the launch directory while it exists, else the last cwd."""
    session = resume.usable_cwd(pane.agent.session_cwd)
    if session is not None and os.path.isdir(session):
        return session
    return pane.launch_cwd if os.path.isdir(pane.launch_cwd) else pane.cwd


class Spawner:
    """Creates panes in a workspace and starts their processes."""

    def __init__(
        self,
        *,
        store: Store,
        config: Config,
        runtimes: Runtimes,
        catalogs: CatalogSource,
        hydration: Hydration,
        socket_path: str,
        forget_pane: Callable[[str], None],
        on_started: Callable[[PaneRuntime], None] | None = None,
    ) -> None:
        """``socket_path``: the daemon's socket, given to panes as ``SIGNALTTY_SOCKET``;
        ``forget_pane``: called with a pane id when a resume starts a new process instance
        (``HookService.forget_pane``); ``on_started``: with each runtime that got its
        process (the fd store, server/fdstore.py)."""
        self._on_started = on_started
        self.store = store
        self.config = config
        self.runtimes = runtimes
        self.catalogs = catalogs
        self.hydration = hydration
        self.socket_path = socket_path
        self._forget_pane = forget_pane

    async def spawn_new(
        self,
        ws: Workspace,
        argv: list[str],
        *,
        cwd: str,
        size: tuple[int, int],
        request_env: dict[str, str],
        label: str | None,
        agent_hint: str | None,
        parent: Pane | None,
        relationship: str | None,
        after: str | None,
        agent: AgentInfo | None = None,
    ) -> Pane:
        """Spawn ``argv`` in a new pane of ``ws`` (after pane ``after`` or at the end).

        ``agent``: the pane's AgentInfo when the caller already knows it (a catalog launch,
        agents.md §4.4); otherwise it is detected from ``argv[0]`` and ``agent_hint``.

        Raises:
            SignalttyError: ``RATE_LIMITED`` (too many live panes), ``SPAWN_FAILED`` with
                ``details.errno`` (nothing is created).
        """
        store = self.store
        live = sum(1 for p in store.panes.values() if p.live)
        if live >= self.config.server.max_live_panes:
            raise SignalttyError("RATE_LIMITED", f"more than {live} live panes")
        stored = [_anchored(argv[0], cwd), *argv[1:]]
        await self.hydration.wait_hydration()
        pane_id = new_id("pane")
        env = pane_environment(
            os.environ,
            os.environ.get("PATH", os.defpath),
            request_env,
            pane_id=pane_id,
            socket_path=self.socket_path,
            parent_pane_id=parent.id if parent else None,
        )
        config_env: dict[str, str] = {}
        proc, integration = await self._start(stored, env, cwd, size, request_env, config_env)
        now = store.now()
        pane = Pane(
            id=pane_id,
            workspace_id=ws.id,
            argv=stored,
            cwd=cwd,
            launch_cwd=cwd,
            created_at=now,
            last_activity_at=now,
            title=os.path.basename(stored[0]) or "shell",
            label=(sanitize_text(label, MAX_LABEL) or None) if label is not None else None,
            cols=size[0],
            rows=size[1],
            agent=agent
            if agent is not None
            else detect_kind(stored[0], agent_hint, self.catalogs.catalog),
            process_name=program_name(stored) or None,
            lifecycle_source="spawn",
            lifecycle_since=now,
            parent_pane_id=parent.id if parent else None,
            root_pane_id=(parent.root_pane_id or parent.id) if parent else None,
            relationship=relationship,
            process_instance=new_id("pi"),
            integration=integration,
        )
        pane.agent.config_env = config_env
        if not pane.agent.launch_prefix and pane.agent.catalog_id:
            # bypass flags typed with the agent survive resume like a catalog launch's
            entry = self.catalogs.catalog.entry(pane.agent.catalog_id)
            if entry is not None:
                pane.agent.launch_prefix = launch.typed_bypass(entry.launch.bypass_args, stored)
        store.panes[pane_id] = pane
        runtime = PaneRuntime(store, pane)
        self.runtimes[pane_id] = runtime
        if after is not None and after in ws.pane_ids:
            ws.pane_ids.insert(ws.pane_ids.index(after) + 1, pane_id)
        else:
            ws.pane_ids.append(pane_id)
        store.emit("pane.created", {"pane": pane.to_wire()})
        ws.updated_at = now
        store.emit("workspace.updated", {"workspace": ws.to_wire()})
        runtime.start(proc)
        if self._on_started is not None:
            self._on_started(runtime)
        log.info("pane.spawned", pane_id=pane_id, workspace_id=ws.id, pid=proc.pid)
        return pane

    async def _start(
        self,
        stored: list[str],
        env: dict[str, str],
        cwd: str,
        size: tuple[int, int],
        request_env: dict[str, str],
        config_env: dict[str, str],
    ) -> tuple[ptymod.PtyProcess, dict[str, Any] | None]:
        """Resolve, configure hooks (integrations.md §3), apply the Codex runtime insertion,
        and spawn (argv is never modified). The used provider root goes into ``env`` and
        ``config_env`` (filled in place).

        Raises:
            SignalttyError: ``SPAWN_FAILED`` with ``details.errno``.
        """
        integration: dict[str, Any] | None = None
        try:
            program = ptymod.resolve_program(stored[0], env["PATH"], cwd)
            run = [program, *stored[1:]]
            setup = await autoconfig.prepare(program, run[1:], request_env, cwd, env["PATH"])
            if setup is not None:
                integration = setup.integration
                env.update(setup.config_env)
                config_env.update(setup.config_env)
            if builtin_kind(os.path.basename(program)) == "codex":
                supported = False
                if codex_runtime.classify_argv(run).kind == "interactive":
                    supported = await asyncio.to_thread(codex_runtime.probe_no_daemon, program)
                plan = codex_runtime.plan(run, lambda: supported)
                run = plan.argv
                if plan.notice:
                    integration = autoconfig.merge_notice(integration, "codex", plan.notice)
                    log.info("pane.codex_notice", notice=plan.notice)
            proc = ptymod.spawn(run, env=env, cwd=cwd, cols=size[0], rows=size[1])
        except ptymod.SpawnError as exc:
            raise SignalttyError(
                "SPAWN_FAILED", exc.strerror or str(exc), {"errno": exc.errno}
            ) from None
        return proc, integration

    async def resume(self, pane: Pane) -> Pane:
        """``pane.resume``: start the resume command in the same pane (protocol.md §6).

        Raises:
            SignalttyError: ``BAD_PARAMS`` "not resumable", ``SPAWN_FAILED`` (pane unchanged),
                ``RATE_LIMITED``.
        """
        store = self.store
        # The merged manifest's [session] resume wins over the adapter's (agents.md §3.4).
        adapter = resolve_adapter(self.catalogs.catalog, pane.agent.catalog_id or pane.agent.kind)
        if adapter is None:
            adapter = adapter_for(pane.agent.kind)
        info = pane.agent
        try:
            # checked again right before the spawn: no stored value becomes an option
            argv = resume.argv_to_resume(pane, adapter)
        except ValueError as exc:
            log.warning("pane.resume_refused", pane_id=pane.id, reason=str(exc))
            raise SignalttyError("BAD_PARAMS", f"not resumable: {exc}") from None
        if not argv:
            raise SignalttyError("BAD_PARAMS", _not_resumable_reason(pane, adapter))
        live = sum(1 for p in store.panes.values() if p.live)
        if live >= self.config.server.max_live_panes:
            raise SignalttyError("RATE_LIMITED", f"more than {live} live panes")
        await self.hydration.wait_hydration()
        cwd = _resume_cwd(pane)
        env = pane_environment(
            os.environ,
            os.environ.get("PATH", os.defpath),
            dict(info.config_env),
            pane_id=pane.id,
            socket_path=self.socket_path,
            parent_pane_id=pane.parent_pane_id,
        )
        config_env = dict(info.config_env)
        proc, integration = await self._start(
            argv, env, cwd, (pane.cols, pane.rows), dict(config_env), config_env
        )
        old = self.runtimes.get(pane.id)
        if old is not None:
            old.close()
        info.resume_argv = argv
        info.config_env = config_env
        pane.integration = integration
        pane.cwd = cwd
        effects = rules.on_resume(pane, new_id("pi"), now=store.now())
        store.apply(effects)
        self._forget_pane(pane.id)
        runtime = PaneRuntime(store, pane)
        self.runtimes[pane.id] = runtime
        store.emit("pane.created", {"pane": pane.to_wire(), "resumed": True})
        runtime.start(proc)
        if self._on_started is not None:
            self._on_started(runtime)
        log.info("pane.resumed", pane_id=pane.id, pid=proc.pid)
        return pane


def _not_resumable_reason(pane: Pane, adapter: object | None) -> str:
    """``BAD_PARAMS`` text for a pane with nothing to resume: what is missing and what to
    do instead (a new-user pass met a bare "not resumable")."""
    info = pane.agent
    if adapter is None or (info.catalog_id is None and info.kind in ("none", "generic")):
        return (
            "not resumable: this pane runs no agent signaltty can resume; "
            "start its command again with `signaltty new`"
        )
    return (
        f"not resumable: {info.display_name} reported no session id in this pane "
        "(its hooks run from the first prompt on); start it again with `signaltty new`"
    )

