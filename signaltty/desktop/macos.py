"""macOS desktop notifications through ``desktop-notifier`` (Notification Center).

Same surface as :class:`signaltty.desktop.fdo.FdoNotifications`. Button presses come from
the system's own Notification Center, not from a bus other processes can write to, so there
is no sender to check; bodies are plain text there (no markup capability).
Not used on Linux (see fdo.py for why). Spec: desktop-and-service.md §6.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from signaltty.desktop.fdo import ServerRefused, Target


class LibraryNotifications:
    """A ``DesktopNotifier`` instance behind the interface the notifier uses."""

    def __init__(self) -> None:
        self.alive = False
        self._dn: Any = None
        self._caps: frozenset[str] = frozenset()

    async def open(self) -> None:
        """Create the library instance and ask for authorisation.

        Raises:
            ServerRefused: authorisation refused. Exception: whatever the library raises.
        """
        from desktop_notifier import Capability, DesktopNotifier

        self._dn = DesktopNotifier(app_name="signaltty", app_icon=None)
        if not await self._dn.request_authorisation():
            raise ServerRefused("authorization refused")
        caps = await self._dn.get_capabilities()
        self._caps = frozenset({"actions"}) if Capability.BUTTONS in caps else frozenset()
        self.alive = True

    async def target(self) -> Target:
        return Target(unique_name="", capabilities=self._caps, server_name="macOS")

    async def notify(
        self,
        target: Target,
        *,
        summary: str,
        body: str,
        actions: list[tuple[str, str]],
        urgency: str,
        expire_ms: int,
        sound: bool,
        on_action: Callable[[str], None],
    ) -> str:
        """Send one notification; ``on_action(key)`` for a button or (``default``) a click.

        Raises:
            ConnectionError: the library did not dispatch it (it logs and swallows errors).
        """
        from desktop_notifier import DEFAULT_SOUND, Button, Notification, Urgency

        buttons = tuple(
            Button(label, on_pressed=functools.partial(on_action, key))
            for key, label in actions
            if key != "default"
        )
        clickable = any(key == "default" for key, _ in actions)
        dispatched = False

        def on_dispatched() -> None:
            nonlocal dispatched
            dispatched = True

        note = Notification(
            title=summary,
            message=body,
            urgency={"critical": Urgency.Critical, "low": Urgency.Low}.get(urgency, Urgency.Normal),
            buttons=buttons,
            on_dispatched=on_dispatched,
            on_clicked=(lambda: on_action("default")) if clickable else None,
            sound=DEFAULT_SOUND if sound else None,
            timeout=expire_ms // 1000 if expire_ms > 0 else expire_ms,
        )
        await self._dn.send_notification(note)
        if not dispatched:
            raise ConnectionError("the notification server did not accept the notification")
        return str(note.identifier)

    async def close_notification(self, identifier: str) -> None:
        with contextlib.suppress(KeyError):  # already closed by the system
            await self._dn.clear(identifier)

    def disconnect(self) -> None:
        self.alive = False
        self._dn = None
