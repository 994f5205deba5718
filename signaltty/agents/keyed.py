"""Decisions answered by keys typed into the agent's own dialog (pure; issue 11, Gemini CLI).

Gemini CLI 0.61 cannot be answered through a hook: its ``Notification`` (``ToolPermission``)
hook runs *before* the dialog is drawn (a waiting hook would hide the dialog) and a
``BeforeTool`` hook can deny but never allow. Its dialog takes number keys, though
("● 1. Allow once  2. Allow for this session  3. No, suggest changes (esc)": ``1`` selects
at once), so a decision made from that hook is answered by typing — only while the screen
shows that dialog (the caller checks :func:`dialog_shown` first), never blindly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final

from signaltty.core.ids import new_id
from signaltty.core.model import Decision

MAX_PROMPT_BYTES: Final = 8 * 1024


@dataclass(frozen=True, slots=True)
class KeyedDialog:
    """One agent's dialog: the hook that announces it, its options and their keys.

    Attributes:
        agent: the ``hook-event --agent`` value.
        event: the hook event that announces the dialog.
        options: ``(option id, label, keys)`` in display order.
        dialog: matches the visible screen while the dialog is up.
        ends_turn: option ids whose keys end the agent's turn (no hook follows).
    """

    agent: str
    event: str
    options: tuple[tuple[str, str, bytes], ...]
    dialog: re.Pattern[str]
    ends_turn: frozenset[str]


GEMINI: Final = KeyedDialog(
    agent="gemini",
    event="Notification",
    options=(("once", "Allow once", b"1"), ("deny", "No (cancels the turn)", b"\x1b")),
    dialog=re.compile(r"Allow execution of|Apply this change|Do you want to proceed|Allow (?:this )?MCP"),
    ends_turn=frozenset({"deny"}),
)
DIALOGS: Final = {GEMINI.agent: GEMINI}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def decision_for(agent: str, event: str, payload: object, *, now: float) -> Decision | None:
    """The decision a dialog-announcing hook makes, else ``None``.

    Args:
        agent: the hook's ``--agent``.
        event: the hook event.
        payload: hook JSON of any type (Gemini: ``{notification_type: "ToolPermission",
            message, details: {title, command, …}}``).
        now: wall-clock seconds (``received_at``).

    Returns:
        ``Decision(id=permission_<hex>, native=False, agent, tool_name=details.title)`` with
        the dialog's options, its prompt = message + pretty ``details`` (≤ 8 KiB).
    """
    spec = DIALOGS.get(agent)
    if spec is None or event != spec.event or not isinstance(payload, dict):
        return None
    if payload.get("notification_type") != "ToolPermission":
        return None
    details = payload.get("details") if isinstance(payload.get("details"), dict) else {}
    assert isinstance(details, dict)
    title = _text(details.get("title")) or "Tool permission"
    message = _text(payload.get("message")) or f"{title}?"
    prompt = f"{message}\n{json.dumps(details, indent=2, ensure_ascii=False, default=str)}"
    data = prompt.encode("utf-8", "surrogatepass")
    if len(data) > MAX_PROMPT_BYTES:
        prompt = data[:MAX_PROMPT_BYTES].decode("utf-8", "ignore")
    return Decision(
        id=new_id("permission"),
        prompt=prompt,
        options=[{"id": oid, "label": label} for oid, label, _ in spec.options],
        received_at=now,
        native=False,
        agent=agent,
        tool_name=title[:200],
    )


def keys_for(dec: Decision, option: str) -> bytes | None:
    """The keys that answer ``option`` of a keyed decision; ``None`` for any other decision."""
    spec = DIALOGS.get(dec.agent or "")
    if spec is None or dec.native:
        return None
    return next((keys for oid, _, keys in spec.options if oid == option), None)


def is_keyed(dec: Decision | None) -> bool:
    """Whether ``dec`` is answered by keys (:func:`keys_for`)."""
    return dec is not None and not dec.native and dec.agent in DIALOGS


def dialog_shown(dec: Decision, screen: str) -> bool:
    """Whether the visible ``screen`` shows the dialog ``dec`` answers."""
    spec = DIALOGS.get(dec.agent or "")
    return spec is not None and spec.dialog.search(screen) is not None


def ends_turn(dec: Decision, option: str) -> bool:
    """Whether answering ``option`` by keys ends the agent's turn with no hook after it."""
    spec = DIALOGS.get(dec.agent or "")
    return spec is not None and option in spec.ends_turn
