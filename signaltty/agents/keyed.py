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
    # The question is the dialog box from its "? Tool  detail" line to the line before the
    # options (tests/fixtures/real-agents/gemini/05_permission.txt); "1. Allow once" keeps
    # Claude's "Do you want to proceed?" (options "1. Yes") from matching.
    dialog=re.compile(
        r"(?P<question>(?m:^)[ \t│]*\? [^\n]{1,300}\n(?:[^\n]*\n){0,60}?[^\n]*"
        r"(?:Allow execution of|Apply this change|Do you want to proceed|Allow (?:this )?MCP)"
        r"[^\n]{0,300})\n(?:[^\n]*\n){0,3}?[ \t│]*(?:●[ \t]*)?1\. Allow once"
    ),
    ends_turn=frozenset({"deny"}),
)
# Codex 0.171's approval dialog (tests/fixtures/real-agents/codex/05_permission.txt):
#   Would you like to run the following command?  …  $ touch perm_marker.txt && echo hi
#   › 1. Yes, proceed (y)
#     2. Yes, and don't ask again for commands that start with `touch …` (p)
#     3. No, and tell Codex what to do differently (esc)
# Its shortcuts act at once: `y` approves this one command, Esc is "No" (the turn stops;
# Codex sends no Stop). The edits, permissions and network-access dialogs share both keys.
CODEX: Final = KeyedDialog(
    agent="codex",
    event="Notification",
    options=(("once", "Yes, proceed (this time)", b"y"),
             ("deny", "No, and tell Codex what to do differently", b"\x1b")),
    dialog=re.compile(
        r"(?P<question>(?:Would you like to (?:run the following command|make the following "
        r"edits|grant these permissions)\?|Do you want to approve network access to [^\n]{0,300}\?)"
        r"[^\x00]{0,4000}?)\n[ \t]*(?:›[ \t]*)?1\. Yes, proceed"
    ),
    ends_turn=frozenset({"deny"}),
)
DIALOGS: Final = {GEMINI.agent: GEMINI}
# Agents whose *reported* decisions (``hook-event --decision``, the ``typed_text`` answer
# channel) are answered by typing: the keys are always this fixed spec's, never chosen by
# the reporter (issue 10, third attack pass, A10: "Deny" typed `1⏎`, Codex's "Yes").
TYPED: Final = {CODEX.agent: CODEX}
MAX_QUESTION_CHARS: Final = 2000


def _spec(dec: Decision) -> KeyedDialog | None:
    if dec.native:
        return None
    return DIALOGS.get(dec.agent or "") or TYPED.get(dec.agent or "")


def typed_decision(dec: Decision) -> Decision:
    """A reported decision of an agent in :data:`TYPED`, with that dialog's own options.

    The reporter's options (ids, labels, order) are dropped: the person chooses between
    the dialog's answers, and each has its fixed keys. Any other decision is returned as is.
    """
    spec = TYPED.get(dec.agent or "")
    if spec is None or dec.native:
        return dec
    dec.options = [{"id": oid, "label": label} for oid, label, _ in spec.options]
    return dec


def is_typed(dec: Decision | None) -> bool:
    """Whether ``dec`` is a reported decision answered by :data:`TYPED` keys."""
    return dec is not None and not dec.native and dec.agent in TYPED


def question(dec: Decision, screen: str) -> str | None:
    """The dialog's own question as the visible ``screen`` shows it (blank lines and edge
    spaces removed, ≤ 2000 characters), or ``None`` when it is not on screen."""
    spec = _spec(dec)
    match = spec.dialog.search(screen) if spec is not None else None
    if match is None or "question" not in match.re.groupindex:
        return None
    lines = [line.strip().strip(_BOX).strip() for line in match.group("question").splitlines()]
    return "\n".join(line for line in lines if line)[:MAX_QUESTION_CHARS] or None


# the frame of a boxed dialog (Gemini CLI draws its questions in one): not part of the words
_BOX: Final = "│╭╮╰╯─ \t"


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
    spec = _spec(dec)
    if spec is None:
        return None
    return next((keys for oid, _, keys in spec.options if oid == option), None)


def is_keyed(dec: Decision | None) -> bool:
    """Whether ``dec`` is answered by keys (:func:`keys_for`)."""
    return dec is not None and _spec(dec) is not None


def dialog_shown(dec: Decision, screen: str) -> bool:
    """Whether the visible ``screen`` shows the dialog ``dec`` answers."""
    spec = _spec(dec)
    return spec is not None and spec.dialog.search(screen) is not None


def ends_turn(dec: Decision, option: str) -> bool:
    """Whether answering ``option`` by keys ends the agent's turn with no hook after it."""
    spec = _spec(dec)
    return spec is not None and option in spec.ends_turn
