"""Starting panes: environment policy, kind detection from argv, PTY spawn, pane registration.

Spec: protocol.md §5 ``pane.spawn`` (env allow-list, pane environment, lineage, limits),
agents.md §3.1 step 3 (builtin names), desktop-and-service.md §3.2 (systemd variables scrubbed).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import structlog

from signaltty import __version__
from signaltty.core.ids import new_id
from signaltty.core.model import AgentInfo, Pane, Workspace
from signaltty.proto.envelope import SignalttyError
from signaltty.server.panes import PaneRuntime
from signaltty.term import pty as ptymod

if TYPE_CHECKING:
    from signaltty.server.daemon import Daemon

log = structlog.get_logger("signaltty.spawn")

# protocol.md §5 "env": keys a client may set.
ALLOWED_ENV_KEYS = frozenset(
    "TERM COLORTERM LANG LC_ALL LC_CTYPE EDITOR VISUAL PAGER SHELL SIGNALTTY_PANE".split()
)
ALLOWED_ENV_PREFIXES = ("SIGNALTTY_", "CLAUDE_", "CODEX_", "OPENCODE_", "CURSOR_")

# protocol.md §5 "Pane environment": inherited variables that never reach a pane.
SCRUBBED_ENV = frozenset(
    (
        "LD_PRELOAD LD_LIBRARY_PATH DYLD_INSERT_LIBRARIES DYLD_LIBRARY_PATH NOTIFY_SOCKET "
        "WATCHDOG_PID WATCHDOG_USEC LISTEN_FDS LISTEN_PID LISTEN_FDNAMES INVOCATION_ID "
        "JOURNAL_STREAM SIGNALTTY_SOCKET"
    ).split()
)

# agents.md §3.1 step 3 and §2: builtin program names → (kind, display name).
BUILTIN_KINDS: dict[str, tuple[str, str]] = {
    "claude": ("claude", "Claude Code"),
    "codex": ("codex", "Codex"),
    "opencode": ("opencode", "OpenCode"),
    "cursor-agent": ("cursor", "Cursor Agent"),
    "pi": ("pi", "Pi"),
}
KIND_NAMES = {kind: name for kind, name in BUILTIN_KINDS.values()}
KNOWN_HINTS = frozenset({"claude", "codex", "opencode", "cursor", "pi", "generic", "none"})


def check_request_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Validate a request's ``env`` against the allow-list.

    Raises:
        SignalttyError: ``BAD_PARAMS`` "env key not allowed: K" or a value with NUL.
    """
    out: dict[str, str] = {}
    for key, value in (env or {}).items():
        if key not in ALLOWED_ENV_KEYS and not key.startswith(ALLOWED_ENV_PREFIXES):
            raise SignalttyError("BAD_PARAMS", f"env key not allowed: {key}", {"field": "env"})
        if "\x00" in value or "\x00" in key or "=" in key:
            raise SignalttyError("BAD_PARAMS", f"env value not allowed: {key}", {"field": "env"})
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
    if "TERM" not in request_env:
        env["TERM"] = "xterm-256color"
    env["TERM_PROGRAM"] = "signaltty"
    env["TERM_PROGRAM_VERSION"] = __version__
    if parent_pane_id:
        env["SIGNALTTY_PARENT_PANE"] = parent_pane_id
    return env


def detect_kind(argv0: str, hint: str | None) -> AgentInfo:
    """Kind from a hint (unknown → ``none``) or the program basename (agents.md §3.1)."""
    if hint is not None:
        kind = hint if hint in KNOWN_HINTS else "none"
        return AgentInfo(kind=kind, display_name=KIND_NAMES.get(kind, "Terminal"))
    base = os.path.basename(argv0)
    if base in BUILTIN_KINDS:
        kind, name = BUILTIN_KINDS[base]
        return AgentInfo(kind=kind, display_name=name)
    return AgentInfo(kind="generic", display_name="Terminal")


class Spawner:
    """Creates panes in a workspace and starts their processes."""

    def __init__(self, daemon: Daemon) -> None:
        self.d = daemon

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
    ) -> Pane:
        """Spawn ``argv`` in a new pane of ``ws`` (after pane ``after`` or at the end).

        Raises:
            SignalttyError: ``RATE_LIMITED`` (too many live panes), ``SPAWN_FAILED`` with
                ``details.errno`` (nothing is created).
        """
        store = self.d.store
        live = sum(1 for p in store.panes.values() if p.live)
        if live >= self.d.config.server.max_live_panes:
            raise SignalttyError("RATE_LIMITED", f"more than {live} live panes")
        stored = list(argv)
        if "/" in stored[0] and not os.path.isabs(stored[0]):
            stored[0] = os.path.normpath(os.path.join(cwd, stored[0]))
        pane_id = new_id("pane")
        env = pane_environment(
            os.environ,
            os.environ.get("PATH", os.defpath),
            request_env,
            pane_id=pane_id,
            socket_path=str(self.d.socket_path),
            parent_pane_id=parent.id if parent else None,
        )
        try:
            program = ptymod.resolve_program(stored[0], env["PATH"], cwd)
            proc = ptymod.spawn([program, *stored[1:]], env=env, cwd=cwd, cols=size[0], rows=size[1])
        except ptymod.SpawnError as exc:
            raise SignalttyError(
                "SPAWN_FAILED", exc.strerror or str(exc), {"errno": exc.errno}
            ) from None
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
            label=label,
            cols=size[0],
            rows=size[1],
            agent=detect_kind(stored[0], agent_hint),
            lifecycle_source="spawn",
            lifecycle_since=now,
            parent_pane_id=parent.id if parent else None,
            root_pane_id=(parent.root_pane_id or parent.id) if parent else None,
            relationship=relationship,
            process_instance=new_id("pi"),
        )
        store.panes[pane_id] = pane
        runtime = PaneRuntime(store, pane)
        self.d.runtimes[pane_id] = runtime
        if after is not None and after in ws.pane_ids:
            ws.pane_ids.insert(ws.pane_ids.index(after) + 1, pane_id)
        else:
            ws.pane_ids.append(pane_id)
        store.emit("pane.created", {"pane": pane.to_wire()})
        ws.updated_at = now
        store.emit("workspace.updated", {"workspace": ws.to_wire()})
        runtime.start(proc)
        log.info("pane.spawned", pane_id=pane_id, workspace_id=ws.id, pid=proc.pid)
        return pane
