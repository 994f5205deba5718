"""``pane.read``, ``pane.attach``, ``pane.detach``, ``pane.wait_for_output``: a pane's
output and its viewers (protocol.md §5, §7)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import Any

from signaltty.core import limits, rules
from signaltty.proto import params as P
from signaltty.proto.envelope import SignalttyError
from signaltty.server.config import Config
from signaltty.server.handlers.common import Handler, Panes, clamp_size
from signaltty.server.output_match import AltRows, LineCollector, Matcher, compile_matcher
from signaltty.server.panes import PaneRuntime
from signaltty.server.ports import Client


class OutputHandlers:
    """Reading, attaching to and waiting on a pane's output."""

    def __init__(self, *, panes: Panes, config: Config) -> None:
        self.panes = panes
        self.store = panes.store
        self.config = config

    def routes(self) -> dict[str, Handler]:
        return {
            "pane.read": self.read,
            "pane.wait_for_output": self.wait_for_output,
            "pane.attach": self.attach,
            "pane.detach": self.detach,
        }

    async def read(self, conn: Client | None, p: P.PaneRead) -> dict[str, Any]:
        rt = self.panes.runtime(p.pane_id)
        rt.catch_up()  # a pane read in rounds: what it printed since the last round too
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
        # the alternate screen's rows follow while a full-screen program shows it (issue 11
        # item 10): ``alt_screen`` says so
        text, truncated, alt = rt.read_tail(lines)
        return {"text": text, "truncated": truncated, "alt_screen": alt}

    async def attach(self, conn: Client | None, p: P.PaneAttach) -> dict[str, Any]:
        rt = self.panes.runtime(p.pane_id)
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
            rt.follow_live()
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

    async def detach(self, conn: Client | None, p: P.PaneRef) -> dict[str, Any]:
        self.panes.pane(p.pane_id)
        rt = self.panes.runtimes.get(p.pane_id)
        was = conn is not None and p.pane_id in conn.attached
        if was and conn is not None:
            conn.attached.discard(p.pane_id)
            if rt is not None:
                rt.viewers.discard(conn)
        return {"detached": was}

    async def wait_for_output(self, conn: Client | None, p: P.PaneWaitForOutput) -> dict[str, Any]:
        rt = self.panes.runtime(p.pane_id)
        timeout = p.timeout_s or limits.WAIT_OUTPUT_TIMEOUT_DEFAULT_S
        matcher = compile_matcher(
            p.match, bool(p.regex), self.config.server.wait_regex_budget_s, timeout
        )
        lines = p.lines or limits.READ_LINES_DEFAULT
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if p.new_only:
            return await self._wait_new_output(rt, matcher, deadline)
        ev = self.store.bus.waiter(rt.pane.id, output=True)
        rt.stay_fast()  # out of the slow lane while a client waits (panes.py)
        try:
            while True:
                ev.clear()
                await rt.settle()
                text, _, _ = rt.read_tail(lines)
                line = await matcher.last_match(text.split("\n"))
                if line is not None:
                    return {"matched_line": line, "text": text}
                if not rt.live or rt.closed:
                    raise SignalttyError(
                        "PANE_EXITED", f"pane exited without a match: {rt.pane.id}"
                    )
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise SignalttyError("TIMEOUT", f"timed out waiting for output {p.match!r}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ev.wait(), remaining)
        finally:
            self.store.bus.drop_waiter(rt.pane.id, ev)

    async def _wait_new_output(
        self, rt: PaneRuntime, matcher: Matcher, deadline: float
    ) -> dict[str, Any]:
        """Only output arriving after the call; lines are matched off the pump (a user regex
        may be slow, and the pump must never run it). Primary-screen text comes from the raw
        bytes, alternate-screen text from the rows that changed (``AltRows``)."""
        loop = asyncio.get_running_loop()
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
            # The baseline: every byte before the call applied, with no await between the
            # listener and it, so each byte is either before the call or collected.
            rt.settle_now()
            alt = rt.screen.alt_screen
            collector = LineCollector(alt=alt)
            alt_rows = AltRows(rt.screen.lines() if alt else [])
            while True:
                arrived.clear()
                if chunks:
                    data = b"".join(chunks)
                    chunks.clear()
                    lines = collector.feed(data)
                    # the screen model is applied only for output that met the alternate
                    # screen: on the primary screen the raw bytes decide, as before
                    if collector.saw_alt:
                        await rt.settle()
                        if rt.screen.alt_screen:
                            lines += alt_rows.new_rows(rt.screen.lines())
                    line = await matcher.first_match(lines)
                    if line is not None:
                        text, _, _ = rt.read_tail(limits.READ_LINES_DEFAULT)
                        return {"matched_line": line, "text": text}
                if exited and not chunks:
                    raise SignalttyError(
                        "PANE_EXITED", f"pane exited without a match: {rt.pane.id}"
                    )
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise SignalttyError("TIMEOUT", "timed out waiting for new output")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(arrived.wait(), remaining)
        finally:
            rt.remove_output_listener(on_output)
            if on_exit in rt.on_exit_hooks:
                rt.on_exit_hooks.remove(on_exit)
