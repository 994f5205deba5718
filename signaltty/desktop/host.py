"""What the desktop surfaces need from the daemon, as Protocols (no import of ``server/``).

``dbus.DbusService`` and ``notify.Notifier`` are given a host that satisfies these
Protocols; the daemon's implementation is ``server/desktop_port.py``. Everything the
desktop does to state goes through the protocol methods (the same validation and checks as
the socket), and answers carry who is answering, so the self-approval guard (issue #10
item 3) sees a D-Bus caller's pid and a notification button as the daemon's own process.

Records handed out (``Pane``, ``Decision``) are the daemon's live objects: read them, never
change them. Spec: desktop-and-service.md §6 (notifications), §7 (D-Bus).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, get_args

from signaltty.core import rules
from signaltty.core.model import Decision, Pane
from signaltty.desktop import policy
from signaltty.system.procref import ProcessRef

# (seq, event name, payload): one state event, as the event bus fans it out.
EventObserver = Callable[[int, str, dict[str, Any]], None]
AlertSink = Callable[[rules.Alert], None]
Unsubscribe = Callable[[], None]

# The protocol methods a desktop surface may run through ``call``: reading, mark-seen and
# focus. ``decision.answer`` is not among them: answers name their caller (below).
DesktopMethod = Literal[
    "server.status",
    "pane.list",
    "pane.get",
    "permission.list",
    "pane.mark_seen",
    "focus.next_unread",
]
DESKTOP_METHODS: Final[frozenset[str]] = frozenset(get_args(DesktopMethod))


@dataclass(frozen=True, slots=True)
class PaneCounts:
    """Counts over every pane (the D-Bus properties of §7.3)."""

    live: int
    pending_permissions: int
    attention: int  # attention other than ``none``


@dataclass(frozen=True, slots=True)
class PaneSnapshot:
    """One pane as a notification needs it.

    Attributes:
        pane: the daemon's record (read only).
        workspace_name: its workspace's name; None when the workspace is gone.
        attached: whether a viewer is attached to the pane now.
        host: for a watched host's pane (``devbox/pane_…``), the host's name; None for ours.
        host_target: … and its ssh target, which ``signaltty --host`` takes.
    """

    pane: Pane
    workspace_name: str | None
    attached: bool
    host: str | None = None
    host_target: str | None = None


class DesktopHost(Protocol):
    """What both desktop surfaces use."""

    @property
    def socket_path(self) -> str:
        """The daemon's socket (shown by D-Bus, given to ``signaltty attach`` in a terminal)."""
        ...

    async def call(self, method: DesktopMethod, params: dict[str, Any]) -> dict[str, Any]:
        """Run ``method`` (one of ``DESKTOP_METHODS``) as the socket would, without a connection.

        Returns:
            The method's result object (protocol.md §6).

        Raises:
            SignalttyError: every protocol error; ``UNKNOWN_METHOD`` for a method outside
                ``DESKTOP_METHODS``.
        """
        ...

    def observe_events(self, observer: EventObserver) -> Unsubscribe:
        """Call ``observer`` for every state event from now on, on the loop, synchronously.

        Returns:
            A function that stops the calls (idempotent).
        """
        ...


class DbusHost(DesktopHost, Protocol):
    """What the D-Bus service (``dbus.py``) adds."""

    async def answer_as_bus_caller(
        self, caller: ProcessRef | None, params: dict[str, Any]
    ) -> dict[str, Any]:
        """``decision.answer`` for a D-Bus caller: its pid from ``GetConnectionUnixProcessID``
        with the bound that ties it to the process (``system.procref``), None when the bus
        could not tell (refused).

        Raises:
            SignalttyError: as the socket method; ``FORBIDDEN`` for a caller inside a pane.
        """
        ...

    async def notify_as_bus_caller(
        self,
        caller: ProcessRef | None,
        pane_id: str | None,
        title: str,
        body: str | None,
        severity: str,
    ) -> dict[str, Any]:
        """``notify`` from D-Bus (source ``dbus``); the parameters are validated already.
        ``caller`` as for :meth:`answer_as_bus_caller`: a process inside a pane may notify
        only for its own pane.

        Returns:
            ``{"notification": Notification}`` (protocol.md §6 ``notify``).

        Raises:
            SignalttyError: ``FORBIDDEN``, ``BAD_PARAMS`` (empty title, too long),
                ``NO_SUCH_PANE``.
        """
        ...

    def pending_decision(self, pane_id: str, decision_id: str) -> Decision | None:
        """The decision ``decision_id`` when it is the one pending on ``pane_id``, else None."""
        ...

    def counts(self) -> PaneCounts:
        """Live panes, pending permissions and panes with attention, as of now."""
        ...


class NotifierHost(DesktopHost, Protocol):
    """What the notifier (``notify.py``) adds."""

    @property
    def notification_settings(self) -> policy.Settings:
        """The ``[notifications]`` config section."""
        ...

    @property
    def terminal_command(self) -> Sequence[str] | None:
        """``[desktop] terminal`` (an argv); None: ``$TERMINAL`` and the fallbacks
        (``terminal.py``)."""
        ...

    def observe_alerts(self, sink: AlertSink) -> Unsubscribe:
        """Hand every alert the store raises to ``sink`` from now on (on the loop).

        Returns:
            A function that stops the calls (idempotent).
        """
        ...

    def pane(self, pane_id: str) -> PaneSnapshot | None:
        """The pane ``pane_id`` (a full id), or None when there is no such pane."""
        ...

    async def answer_from_notification(self, params: dict[str, Any]) -> dict[str, Any]:
        """``decision.answer`` from a notification button: the daemon's own process answers.

        Raises:
            SignalttyError: as the socket method (e.g. ``NO_SUCH_DECISION`` for a stale press).
        """
        ...

    async def inside_pane(self, caller: ProcessRef) -> str | None:
        """Where process ``caller`` runs: None when outside every pane, else why it counts as
        inside (e.g. ``ancestry pane_…``). The self-approval guard's trace, used to refuse a
        notification server that runs in a pane (issue 10 §2)."""
        ...

    def add_person_process(self, pid: int) -> None:
        """Trust what runs under ``pid`` (a terminal opened for the person) to answer.

        Nothing happens when the process is already gone.
        """
        ...

    def person_process_ended(self, pid: int) -> None:
        """``pid`` (added above) exited: what its session starts from now on is not trusted
        (``server/ancestry.py`` ``_person_started``)."""
        ...
