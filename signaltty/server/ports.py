"""The narrow interfaces services depend on instead of the whole ``Daemon`` (issue 14 item 2).

Each service takes keyword collaborators: concrete leaf objects (``Store``, ``Config``, the
runtimes dict) and, for what only the daemon can do or know, one of the Protocols below.
``Daemon`` satisfies every one of them structurally and passes itself; a test may pass any
object with the same members. This module imports no service and no ``daemon.py``, so no
service import leads back to the daemon (no import circle in ``signaltty/server/``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from signaltty.agents.catalog import Catalog
from signaltty.server.panes import PaneRuntime, Viewer
from signaltty.system.procref import ProcessRef

# pane id → the live side of the pane; one dict for the whole daemon, mutated in place
Runtimes = dict[str, PaneRuntime]


class CatalogSource(Protocol):
    """The active agent catalog (agents.md §4). A reload replaces the object as a whole,
    so read ``catalog`` at each use instead of keeping it."""

    @property
    def catalog(self) -> Catalog: ...


class Hydration(Protocol):
    """Login-shell PATH hydration (desktop-and-service.md §5)."""

    @property
    def path_hydration(self) -> dict[str, Any]:
        """``{"state": "pending"|"done"|"failed"|"disabled", "added": [dir, …]}``."""
        ...

    async def wait_hydration(self) -> None:
        """Wait for a hydration in progress, at most 5 s."""
        ...

    async def refresh_path_hydration(self) -> None:
        """Run the login-shell probe again and wait for it (≤ 5 s)."""
        ...


class Control(Protocol):
    """The few things that belong to the daemon process itself."""

    @property
    def shutting_down(self) -> bool: ...

    def request_shutdown(self) -> None:
        """Begin the shutdown sequence (desktop-and-service.md §2.2)."""
        ...

    def reap_later(self, rt: PaneRuntime) -> None:
        """After ``pane.close``: SIGKILL the group if the child outlives 5 s."""
        ...

    def release_memory_later(self) -> None:
        """A pane's runtime is gone: give its memory back to the system soon (debounced)."""
        ...

    async def reload_agents(self) -> dict[str, Any]:
        """``agents.reload``; returns the new listing. Raises ``SignalttyError`` IO_ERROR."""
        ...

    async def reload_hosts(self) -> None:
        """Read ``[hosts]`` from the config file again and apply it (``hosts.reload``).
        Raises ``SignalttyError`` IO_ERROR (the file cannot be read or parsed)."""
        ...

    async def restart(self, conn: Any) -> dict[str, Any]:
        """``server.restart``: answered by the new image (server/restart.py). Raises
        ``SignalttyError`` RESTART_FAILED."""
        ...


class NotifierState(Protocol):
    """What the server reads of the desktop notifier (``signaltty.desktop.notify``)."""

    @property
    def available(self) -> bool: ...

    @property
    def can_answer(self) -> bool: ...

    @property
    def reason(self) -> str | None:
        """Why notifications are unavailable, for ``server.status``; None when they are."""
        ...


class DbusState(Protocol):
    """What the server reads of the D-Bus service (``signaltty.desktop.dbus``)."""

    @property
    def name_owned(self) -> bool: ...


class OriginFacts(Protocol):
    """Daemon-wide facts the self-approval guard and the hidden-dialog rule read
    (issue #10 item 3; issue 11 item 3)."""

    @property
    def person_pids(self) -> dict[int, float | None]:
        """Processes started for the person (a notification click's terminal) → start time."""
        ...

    @property
    def person_ended(self) -> dict[int, float]:
        """Those of ``person_pids`` seen to exit → when (wall-clock seconds)."""
        ...

    @property
    def unit_cgroup(self) -> str | None:
        """The daemon's own systemd unit cgroup, None outside one."""
        ...

    @property
    def notifier(self) -> NotifierState | None: ...


class Stats(Protocol):
    def stats(self) -> dict[str, Any]: ...


class StatusFacts(Hydration, Protocol):
    """What ``server.status`` reports about the daemon process (protocol.md §5)."""

    @property
    def instance_id(self) -> str: ...

    @property
    def started_mono(self) -> float:
        """``time.monotonic()`` at start."""
        ...

    @property
    def restarts(self) -> int:
        """In-place restarts (``server.restart``) since the process started."""
        ...

    @property
    def socket_path(self) -> Path: ...

    @property
    def state_dir(self) -> Path: ...

    @property
    def config_error(self) -> str | None: ...

    @property
    def notifier(self) -> NotifierState | None: ...

    @property
    def dbus_service(self) -> DbusState | None: ...

    @property
    def listener(self) -> Stats | None: ...

    def task_status(self) -> list[dict[str, Any]]:
        """``server.status.tasks``: the supervised tasks (server/supervisor.py)."""
        ...

    def logind_status(self) -> dict[str, Any]:
        """``server.status.logind``: logind's delay lock (server/sleep.py)."""
        ...


class Client(Viewer, Protocol):
    """The connection a method is called on (``server.listener.Connection``); handlers
    called by the daemon itself (a notification button, D-Bus) get ``None``."""

    attached: set[str]
    after_response: Callable[[], None] | None
    close_after_response: bool
    pending_replay: list[tuple[int, str, dict[str, Any]]] | None
    peer_pid: int | None
    peer_ref: ProcessRef | None  # binds peer_pid to the process (attack pass 3, A2)
    opened_at: float

    def subscribe(self, patterns: list[str]) -> None: ...


class Dispatcher(Protocol):
    """Runs one method for a connection (``server.router.Router``)."""

    async def call(self, conn: Client | None, method: str, raw: dict[str, Any]) -> dict[str, Any]:
        """Validate ``raw`` and run ``method``. Raises ``SignalttyError``."""
        ...
