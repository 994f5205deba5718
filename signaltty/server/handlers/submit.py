"""``pane.submit``: paste a prompt into an agent and make sure the turn starts.

Gate (protocol.md §6 "pane.submit gate"): refuse when the agent is busy or not ready, paste
with bracketed-paste markers, wait ``submit_delay_ms`` and re-check before pressing Enter,
then wait for a ``working``/``blocked`` transition newer than the baseline, pressing Enter
once more at half the window.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from signaltty.core.model import Pane
from signaltty.core.states import Attention, Lifecycle
from signaltty.proto import params as P
from signaltty.proto.envelope import SignalttyError
from signaltty.server.handlers.common import Panes

PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"
MAX_TEXT_BYTES = 32 * 1024


def _gate(pane: Pane) -> None:
    """Step 2: refuse states where typing would be lost or harmful."""
    if not pane.live:
        raise SignalttyError("PANE_EXITED", f"pane has exited: {pane.id}")
    lc = pane.lifecycle
    if lc == Lifecycle.WORKING:
        raise SignalttyError("AGENT_BUSY", "the agent is working")
    if lc == Lifecycle.BLOCKED and not (
        pane.attention == Attention.INPUT_REQUIRED and pane.pending_decision is None
    ):
        raise SignalttyError("AGENT_BUSY", "the agent is waiting for an answer")
    if lc in (Lifecycle.UNKNOWN, Lifecycle.FAILED):
        raise SignalttyError("AGENT_NOT_READY", f"the agent is not ready ({lc.value})")
    if lc == Lifecycle.EXITED:
        raise SignalttyError("PANE_EXITED", f"pane has exited: {pane.id}")
    if lc in (Lifecycle.IDLE, Lifecycle.DONE) and (
        pane.pending_decision is not None or pane.attention == Attention.PERMISSION_REQUIRED
    ):
        raise SignalttyError("AGENT_BUSY", "a decision is pending")


def _blocked_without_input(pane: Pane) -> bool:
    return (
        pane.pending_decision is not None
        or pane.attention == Attention.PERMISSION_REQUIRED
        or (pane.lifecycle == Lifecycle.BLOCKED and pane.attention != Attention.INPUT_REQUIRED)
    )


async def submit(panes: Panes, p: P.PaneSubmit) -> dict[str, Any]:
    """Run the submit gate for ``p`` (single-flight on its connection).

    Raises:
        SignalttyError: ``BAD_PARAMS``, ``PANE_EXITED``, ``AGENT_BUSY`` (with
            ``details.stage`` after the paste), ``AGENT_NOT_READY``, ``TIMEOUT``
            (``details.stage: "activity_gate"``), ``NO_SUCH_PANE``.
    """
    text = p.text.encode()
    if len(text) > MAX_TEXT_BYTES:
        raise SignalttyError("BAD_PARAMS", "text longer than 32 KiB", {"field": "text"})
    if PASTE_START in text or PASTE_END in text:
        raise SignalttyError(
            "BAD_PARAMS", "text must not contain bracketed-paste markers", {"field": "text"}
        )
    pane = panes.pane(p.pane_id)
    _gate(pane)
    rt = panes.live_runtime(p.pane_id)
    store = panes.store
    seqs = store.pane_seqs(pane.id)
    base = seqs.get("lifecycle", 0)
    await rt.write_input(PASTE_START + text + PASTE_END, 5.0)
    await asyncio.sleep((p.submit_delay_ms if p.submit_delay_ms is not None else 300) / 1000)
    if not pane.live or _blocked_without_input(pane):
        raise SignalttyError(
            "AGENT_BUSY",
            "the agent asked for something else before Enter",
            {"stage": "delayed_enter", "paste_delivered": True},
        )
    await rt.write_input(b"\r", 5.0)
    window = p.stall_timeout_s or 5.0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + window
    nudged = False
    ev = store.bus.waiter(pane.id)
    try:
        while True:
            ev.clear()
            hits = [
                (seqs.get(f"lifecycle:{v}", 0), v)
                for v in ("working", "blocked")
                if seqs.get(f"lifecycle:{v}", 0) > base
            ]
            if hits:
                seq, outcome = min(hits)
                return {
                    "submitted": True,
                    "outcome": outcome,
                    "transition_seq": seq,
                    "lifecycle": pane.lifecycle.value,
                    "attention": pane.attention.value,
                }
            if not pane.live or pane.id not in store.panes:
                raise SignalttyError("PANE_EXITED", f"pane has exited: {pane.id}")
            now = loop.time()
            if now >= deadline:
                raise SignalttyError(
                    "TIMEOUT", "the agent did not start working", {"stage": "activity_gate"}
                )
            if (
                not nudged
                and now >= deadline - window / 2
                and pane.lifecycle in (Lifecycle.IDLE, Lifecycle.DONE)
                and pane.pending_decision is None
            ):
                nudged = True
                await rt.write_input(b"\r", 5.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ev.wait(), min(0.25, max(0.0, deadline - now)))
    finally:
        store.bus.drop_waiter(pane.id, ev)
