"""``signaltty top``: a full-screen, live view of every pane, with keys to act on them.

Built on prompt_toolkit (the lightest of the well-kept TUI libraries to import, one
dependency, asyncio-native, plain VT100 output that works over ssh). Only this command imports
it: ``cli/main.py`` loads this module lazily, so every other command stays light
(tests/test_imports.py).

Two connections to the daemon: one ``subscribe``s to state events and does nothing else, the
other carries requests (``pane.list``, ``workspace.list``, ``permission.list`` and the
actions). The view is re-read when an event arrives — events close together are coalesced
into one re-read — never on a timer; the once-a-second redraw only moves the clock and the
ages. When the daemon goes away the view says so and reconnects when it is back.
Subscribing first and reading second means no change between the two is missed.

Keys: ↑/↓ (j/k) move, Enter attaches (the interactive ``pane attach``; Ctrl+] comes back
here), ``s`` marks seen, ``a`` then ``y`` allows once, ``d`` denies, ``n``/Tab jumps to the
next pane that needs you, ``q``/Ctrl+C quits. Allowing asks for a ``y`` because one stray key
must not run a command; denying is safe and takes one key.
Spec: issue 13 §10.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from prompt_toolkit.application import Application, get_app, run_in_terminal
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl

from signaltty.cli.top_view import (
    Confirm,
    TopState,
    clean,
    permission_summary,
    render,
    why_not_attach,
)
from signaltty.proto.client import AsyncClient, UntrustedServer
from signaltty.proto.envelope import SignalttyError

if TYPE_CHECKING:
    from signaltty.proto.sshlink import Remote

# The events that can change a row; pane.progress/program_status/resized never do.
EVENTS = [
    "workspace.*",
    "pane.created",
    "pane.updated",
    "pane.exited",
    "pane.closed",
    "agent.*",
    "attention.*",
    "decision.*",
    "server.will_shutdown",
    "server.restarting",
    "server.restarted",
    "host.*",  # a watched host connected, went away or was removed (issue 16)
]
# Events arriving within this window are folded into one re-read of the panes.
COALESCE_S = 0.05
# Reconnection back-off bounds while the daemon is away (seconds).
RECONNECT_MIN_S = 0.5
RECONNECT_MAX_S = 4.0


class Top:
    """The running view: daemon connections, state, key bindings and the prompt_toolkit app."""

    def __init__(self, path: str | Remote) -> None:
        self.path = path
        self.state = TopState()
        self.stream: AsyncClient | None = None
        self.req: AsyncClient | None = None
        self._lock = asyncio.Lock()  # one request at a time on the request connection
        self._dirty = asyncio.Event()
        self.app: Application[int] = Application(
            layout=Layout(
                Window(FormattedTextControl(self._text, show_cursor=False), wrap_lines=False)
            ),
            key_bindings=self._keys(),
            full_screen=True,
            mouse_support=False,
            refresh_interval=1.0,
        )

    # ------------------------------------------------------------------ daemon

    async def connect(self) -> None:
        """Subscribe, then read everything once.

        Raises:
            ConnectError, UntrustedServer: the daemon cannot be reached or is not the user's.
            SignalttyError: the daemon refused a request.
        """
        await self._close()
        stream = await AsyncClient.connect(self.path)
        try:
            await stream.call("subscribe", {"events": EVENTS})
            req = await AsyncClient.connect(self.path)
        except BaseException:
            await stream.close()
            raise
        self.stream, self.req = stream, req
        try:
            await self.reload()
        except BaseException:
            await self._close()  # half connected is not connected: the stream loop retries
            raise
        self.state.connected = True

    async def _close(self) -> None:
        for client in (self.stream, self.req):
            if client is not None:
                await client.close()
        self.stream = self.req = None

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One request on the request connection.

        Raises:
            ConnectionError: not connected, or the daemon closed the connection.
            SignalttyError: the daemon answered with an error.
        """
        async with self._lock:
            if self.req is None:
                raise ConnectionError("not connected to the daemon")
            try:
                return await self.req.call(method, params)
            except ConnectionError:
                # The daemon closes a request connection idle for server.idle_timeout_s
                # (never with a request in flight, so this one was not read): reopen, resend.
                await self.req.close()
                self.req = None
                self.req = await AsyncClient.connect(self.path)
                return await self.req.call(method, params)

    async def reload(self) -> None:
        """Re-read panes, workspace names and pending permissions, then redraw."""
        panes = (await self.call("pane.list"))["panes"]
        workspaces = (await self.call("workspace.list"))["workspaces"]
        permissions = (await self.call("permission.list"))["permissions"]
        try:
            hosts = (await self.call("hosts.list"))["hosts"]
        except SignalttyError:  # a daemon from before watched hosts
            hosts = []
        self.state.hosts = {
            str(h.get("name")): h for h in hosts if isinstance(h, dict) and h.get("name")
        }
        # the handle, not the name: names repeat ("workspace" twice), handles do not
        self.state.workspaces = {
            str(w.get("id")): str(w.get("handle") or w.get("id") or "") for w in workspaces
        }
        self.state.permissions = {str(x.get("pane_id")): x for x in permissions}
        self.state.set_panes(
            [p for p in panes if isinstance(p, dict) and isinstance(p.get("id"), str)]
        )
        self.app.invalidate()

    async def _stream_loop(self) -> None:
        """Read events until the connection ends; then reconnect with back-off."""
        delay = RECONNECT_MIN_S
        while True:
            if self.stream is None:
                try:
                    await self.connect()
                    delay = RECONNECT_MIN_S
                    self._say("reconnected", "ansigreen")
                except (OSError, ConnectionError, SignalttyError, ValueError) as exc:
                    self._offline(exc)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, RECONNECT_MAX_S)
                    continue
            try:
                ev = await self.stream.next_event() if self.stream is not None else None
            except (OSError, ValueError):
                ev = None
            if ev is None:
                await self._close()
                self._offline(None)
                continue
            name = ev.get("event")
            if name == "server.will_shutdown":
                self._say("the daemon is shutting down", "ansiyellow")
            elif name == "server.restarting":
                self._say(
                    "the daemon is restarting in place; every pane keeps running", "ansiyellow"
                )
            elif name == "server.restarted":
                p = ev.get("payload") or {}
                kept = p.get("panes_kept") if isinstance(p, dict) else None
                self._say(f"daemon restarted, {kept} panes kept", "ansigreen")
            self._dirty.set()

    async def _reload_loop(self) -> None:
        """Re-read after events, folding a burst of events into one re-read."""
        while True:
            await self._dirty.wait()
            await asyncio.sleep(COALESCE_S)
            self._dirty.clear()
            try:
                await self.reload()
            except (OSError, ConnectionError, ValueError):
                pass  # the stream loop sees the closed connection and reconnects
            except SignalttyError as exc:
                self._say(f"refresh failed: {exc.code}: {exc.message}", "ansired")

    def _offline(self, exc: BaseException | None) -> None:
        self.state.connected = False
        if isinstance(exc, UntrustedServer):
            self.state.offline_reason = f"refusing the socket: {exc.strerror}"
        else:
            self.state.offline_reason = "daemon not running; reconnecting"
        self.app.invalidate()

    def _say(self, message: str, style: str = "") -> None:
        self.state.message, self.state.message_style = message, style
        self.app.invalidate()

    # ------------------------------------------------------------------ view

    def _text(self) -> StyleAndTextTuples:
        size = get_app().output.get_size()
        out: StyleAndTextTuples = []
        for i, line in enumerate(render(self.state, size.columns, size.rows, time.time())):
            if i:
                out.append(("", "\n"))
            out.extend(line)
        return out

    # ------------------------------------------------------------------ keys

    def _keys(self) -> KeyBindings:
        kb = KeyBindings()
        confirming = Condition(lambda: self.state.confirm is not None)
        normal = ~confirming

        @kb.add("q", filter=normal)
        @kb.add("c-c")
        def _quit(event: KeyPressEvent) -> None:
            event.app.exit(result=0)

        @kb.add("down", filter=normal)
        @kb.add("j", filter=normal)
        def _down(event: KeyPressEvent) -> None:
            self.state.move(1)

        @kb.add("up", filter=normal)
        @kb.add("k", filter=normal)
        def _up(event: KeyPressEvent) -> None:
            self.state.move(-1)

        @kb.add("pagedown", filter=normal)
        def _pgdn(event: KeyPressEvent) -> None:
            self.state.move(max(1, event.app.output.get_size().rows - 6))

        @kb.add("pageup", filter=normal)
        def _pgup(event: KeyPressEvent) -> None:
            self.state.move(-max(1, event.app.output.get_size().rows - 6))

        @kb.add("home", filter=normal)
        @kb.add("g", filter=normal)
        def _home(event: KeyPressEvent) -> None:
            self.state.move(-len(self.state.panes))

        @kb.add("end", filter=normal)
        @kb.add("G", filter=normal)
        def _end(event: KeyPressEvent) -> None:
            self.state.move(len(self.state.panes))

        @kb.add("n", filter=normal)
        @kb.add("tab", filter=normal)
        def _next(event: KeyPressEvent) -> None:
            if self.state.next_unread() is None:
                self._say("nothing needs you")

        @kb.add("enter", filter=normal)
        def _attach(event: KeyPressEvent) -> None:
            pane = self.state.selected_pane()
            if pane is None:
                return
            why = why_not_attach(pane, self.state.hosts)
            if why is not None:  # no program to attach to: say why instead of a blank screen
                self._say(why, "ansiyellow")
                return
            event.app.create_background_task(self._attach(pane["id"]))

        @kb.add("s", filter=normal)
        def _seen(event: KeyPressEvent) -> None:
            pane = self.state.selected_pane()
            if pane is not None:
                event.app.create_background_task(
                    self._action("pane.mark_seen", {"pane_id": pane["id"]}, "marked seen")
                )

        @kb.add("d", filter=normal)
        def _deny(event: KeyPressEvent) -> None:
            target = self._decision()
            if target is not None:
                pane_id, decision_id, _ = target
                event.app.create_background_task(self._answer(pane_id, decision_id, "deny"))

        @kb.add("a", filter=normal)
        def _allow(event: KeyPressEvent) -> None:
            target = self._decision()
            if target is not None:
                self.state.confirm = Confirm(*target)

        @kb.add("y", filter=confirming)
        def _yes(event: KeyPressEvent) -> None:
            confirm, self.state.confirm = self.state.confirm, None
            if confirm is not None:
                event.app.create_background_task(
                    self._answer(confirm.pane_id, confirm.decision_id, "allow")
                )

        @kb.add("<any>", filter=confirming)
        def _cancel(event: KeyPressEvent) -> None:
            self.state.confirm = None
            self._say("not allowed")

        return kb

    def _decision(self) -> tuple[str, str, str] | None:
        """The selected pane's answerable decision as ``(pane_id, decision_id, summary)``."""
        pane = self.state.selected_pane()
        if pane is None:
            return None
        item = self.state.permissions.get(pane["id"]) or pane.get("pending_decision")
        if not isinstance(item, dict):
            self._say("no pending permission on this pane")
            return None
        if pane.get("reachable") is False:
            self._say(f"host {clean(pane.get('host'))} is unreachable: no answer can reach it")
            return None
        if not item.get("answerable"):
            self._say("read-only: this agent asks in its terminal (enter attaches)", "ansiyellow")
            return None
        decision_id = item.get("decision_id") or item.get("id")
        return pane["id"], str(decision_id), permission_summary(item)

    async def _answer(self, pane_id: str, decision_id: str, verdict: str) -> None:
        params = {"pane_id": pane_id, "decision_id": decision_id, "verdict": verdict}
        await self._action(
            "decision.answer", params, "allowed once" if verdict == "allow" else "denied"
        )

    async def _action(self, method: str, params: dict[str, Any], done: str) -> None:
        try:
            await self.call(method, params)
        except SignalttyError as exc:
            self._say(f"{exc.code}: {clean(exc.message)}", "ansired")
            return
        except (OSError, ConnectionError):
            self._say("not connected to the daemon", "ansired")
            return
        self._say(done, "ansigreen")
        self._dirty.set()

    async def _attach(self, pane_id: str) -> None:
        """Run the interactive attach on the real terminal; come back when it detaches.

        It runs on the main thread (it installs a SIGWINCH handler), so the loop waits meanwhile;
        events queue in the socket, and everything is re-read on return.
        """
        from signaltty.cli.attach import attach

        def run() -> int:
            return attach(self.path, pane_id)

        try:
            await run_in_terminal(run)
            self._say(f"detached from {pane_id}")
        except SignalttyError as exc:
            self._say(f"attach failed: {exc.code}: {clean(exc.message)}", "ansired")
        except (OSError, ConnectionError) as exc:
            self._say(f"attach failed: {clean(exc)}", "ansired")
        self._dirty.set()

    # ------------------------------------------------------------------ run

    async def run(self) -> int:
        """Connect, then run the full-screen view until the person quits; returns 0.

        Raises:
            ConnectError, UntrustedServer: the daemon cannot be reached at start.
        """
        await self.connect()
        tasks = [asyncio.create_task(self._stream_loop()), asyncio.create_task(self._reload_loop())]
        try:
            return await self.app.run_async()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._close()


def run(socket_path: str | Remote) -> int:
    """``signaltty top``; returns the exit code.

    Raises:
        CliError: stdin or stdout is not a terminal (there is nothing to draw on).
        ConnectError, UntrustedServer: the daemon cannot be reached.
    """
    if not (os.isatty(sys.stdin.fileno()) and os.isatty(sys.stdout.fileno())):
        from signaltty.cli.errors import CliError

        raise CliError("top needs a terminal: stdin and stdout must be a TTY")
    return asyncio.run(Top(socket_path).run())
