"""Desktop notification policy: which alerts notify, when, and with what content (pure).

No I/O, no clock: callers pass records and times in and get decisions back.
Spec: desktop-and-service.md §6.1 (modes, settle, attached viewer), §6.2 (content),
§6.3 (one live notification per pane, withdrawal); states.md §7 (alerts, 2 s coalescing).
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, replace
from typing import Any, Final

from signaltty.core.sanitize import sanitize_text
from signaltty.core.subject import (
    INVALID_TOOL_NAME,
    hidden_fields,
    permission_subject,
    subject_value,
)

MODES: Final = ("quiet", "normal", "all")

# Not an alert of the store: the notifier raises it itself when a native permission wait
# timed out (the agent then shows its own prompt in its terminal; issue 13 item 7).
TERMINAL_PROMPT: Final = "terminal_prompt"

# desktop-and-service.md §6.1 table: cause → modes that notify it.
_MODE_TABLE: Final[dict[str, frozenset[str]]] = {
    "permission": frozenset(MODES),
    TERMINAL_PROMPT: frozenset(MODES),
    "input": frozenset(MODES),
    "error": frozenset(MODES),
    "idle_prompt": frozenset({"all"}),
    "warning": frozenset({"normal", "all"}),
    "turn_done": frozenset({"normal", "all"}),
    "message": frozenset({"normal", "all"}),
    "session_end": frozenset({"all"}),
    "bell": frozenset({"all"}),
    "exit": frozenset({"all"}),
}

# Which pending alert of a pane wins when several are due together (most urgent first).
CAUSE_PRIORITY: Final = (
    "permission",
    TERMINAL_PROMPT,
    "input",
    "error",
    "idle_prompt",
    "warning",
    "turn_done",
    "message",
    "session_end",
    "exit",
    "bell",
)

# Causes that still notify while an interactive viewer is attached (§6.1 filter 2).
_ATTACHED_OK: Final = frozenset({"permission", TERMINAL_PROMPT, "input", "idle_prompt", "error"})

_URGENCY: Final[dict[str, str]] = {
    "permission": "critical",
    TERMINAL_PROMPT: "critical",
    "bell": "low",
    "exit": "low",
    "session_end": "low",
}

COALESCE_S: Final = 2.0  # states.md §7: same pane and cause within 2 s coalesce
RETRY_S: Final = 300.0  # §6.3: retry an unavailable notification server at most every 300 s
STALE_EXPIRY_S: Final = 5  # §6.3: "request no longer pending" notification lifetime
MAX_NAME: Final = 80  # §6.2: pane name ≤ 80 chars
MAX_PREVIEW: Final = 160  # §6.2: tool_input preview ≤ 160 chars
MAX_PROMPT_BYTES: Final = 8 * 1024  # protocol.md §4: a longer prompt was cut (agents/permission.py)
MAX_BODY: Final = 300  # §6.2: other bodies ≤ 300 chars

READ_ONLY_SUFFIX: Final = "(answer in the terminal)"
TERMINAL_PROMPT_SUFFIX: Final = "Not answered here in time: answer it in the terminal."


@dataclass(frozen=True, slots=True)
class Settings:
    """The ``[notifications]`` config section, as the policy needs it."""

    mode: str = "normal"
    settle_s: float = 1.0
    suppress_when_attached: bool = True
    sound: bool = False


@dataclass(frozen=True, slots=True)
class DecisionView:
    """The pane's pending decision, reduced to what a notification shows."""

    id: str
    answerable: bool
    tool_name: str | None = None
    preview: str | None = None  # prompt or compact tool_input
    # seconds until the agent asks in its terminal, for an agent that shows no dialog while
    # its native wait runs (Codex); None: its terminal can answer now (issue 11 item 3)
    terminal_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class PaneView:
    """A pane as the policy sees it (built by the notifier from the store)."""

    pane_id: str
    name: str
    display_name: str
    attention: str
    attached: bool = False
    last_message: str | None = None
    exit_code: int | None = None
    decision: DecisionView | None = None


@dataclass(frozen=True, slots=True)
class Content:
    """One desktop notification to send (§6.2)."""

    pane_id: str | None
    cause: str
    title: str
    body: str
    urgency: str  # critical | normal | low
    expires: bool  # False: never expires (permission)
    buttons: bool  # "Allow once" / "Deny"
    decision_id: str | None
    sound: bool
    # False: the body cannot show all of what would be allowed: "Deny" only (issue 10 follow-up)
    allow_button: bool = True


def mode_allows(mode: str, cause: str) -> bool:
    """Whether ``cause`` notifies in ``mode`` (§6.1 table; unknown causes never notify)."""
    return mode in _MODE_TABLE.get(cause, frozenset())


def send_delay(settings: Settings, *, now: float, last_sent_same_cause: float | None) -> float:
    """Seconds to wait before an intent is re-checked and sent.

    Args:
        settings: notification settings (settle delay).
        now: monotonic seconds of the alert.
        last_sent_same_cause: monotonic seconds of the last notification sent for the same
            pane and cause, or ``None``.

    Returns:
        ``max(settle, time left in the 2 s coalescing window)``, never negative.
    Spec: desktop-and-service.md §6.1 filter 1; states.md §7.
    """
    delay = settings.settle_s
    if last_sent_same_cause is not None:
        delay = max(delay, COALESCE_S - (now - last_sent_same_cause))
    return max(0.0, delay)


def by_priority(causes: list[str]) -> list[str]:
    """``causes`` most urgent first (unknown causes last, in their order).

    Spec: desktop-and-service.md §6.3 (one live notification per pane: the most urgent).
    """
    rank = {c: i for i, c in enumerate(CAUSE_PRIORITY)}
    return sorted(dict.fromkeys(causes), key=lambda c: rank.get(c, len(rank)))


def same_intent(old_cause: str, old_decision: str | None, cause: str, decision: str | None) -> bool:
    """Whether a new alert only updates the pending intent of its pane (latest wins, due
    time kept) rather than starting a new settle delay (a new cause or decision does).

    Spec: states.md §7 (coalescing); desktop-and-service.md §6.1 filter 1 (settle).
    """
    return old_cause == cause and old_decision == decision


def drop_reason(
    cause: str, decision_id: str | None, pane: PaneView | None, had_pane: bool, settings: Settings
) -> str | None:
    """Re-check an intent after the settle delay.

    Args:
        cause: alert cause.
        decision_id: decision the alert was raised for, if any.
        pane: the pane now (``None`` when closed or the alert had no pane).
        had_pane: whether the alert named a pane.
        settings: notification settings.

    Returns:
        ``None`` to send, else the reason to drop (``pane_closed``, ``attention_cleared``,
        ``decision_resolved``, ``attached``, ``mode``).
    Spec: desktop-and-service.md §6.1.
    """
    if not mode_allows(settings.mode, cause):
        return "mode"
    if not had_pane:
        return None
    if pane is None:
        return "pane_closed"
    if pane.attention == "none":
        return "attention_cleared"
    if decision_id is not None and (pane.decision is None or pane.decision.id != decision_id):
        return "decision_resolved"
    if settings.suppress_when_attached and pane.attached and cause not in _ATTACHED_OK:
        return "attached"
    return None


def pane_name(label: str | None, workspace_name: str | None, title: str) -> str:
    """Pane label, else ``<workspace name>/<pane title>``, at most 80 chars (§6.2)."""
    raw = label if label else f"{workspace_name}/{title}" if workspace_name else title
    return _clip(raw, MAX_NAME)


def compact_preview(tool_input: Any) -> str:
    """A one-line compact preview of ``tool_input`` (≤ 160 chars, sanitized; §6.2)."""
    if isinstance(tool_input, dict) and len(tool_input) == 1:
        (value,) = tool_input.values()
        if isinstance(value, str):
            tool_input = value
    text = (
        tool_input if isinstance(tool_input, str) else json.dumps(tool_input, separators=(",", ":"))
    )
    return _clip(" ".join(text.split()), MAX_PREVIEW)


def render(
    cause: str,
    title: str | None,
    body: str | None,
    pane: PaneView | None,
    settings: Settings,
    *,
    actions: bool,
) -> Content:
    """Build the notification for an alert that passed the filters.

    Args:
        cause: alert cause (§6.1 table).
        title: alert title (notification title), if any.
        body: alert body, if any.
        pane: the pane (``None`` for an alert without a pane).
        settings: notification settings (sound).
        actions: whether the server supports action buttons.

    Returns:
        Content with title, body, urgency, expiry and buttons per §6.2/§6.3.
    Spec: desktop-and-service.md §6.2, §6.3 (no actions capability).
    """
    display = pane.display_name if pane is not None else "signaltty"
    phrase = _phrase(cause, title, display, pane)
    full_title = _clip(title or phrase, 200) if pane is None else f"{pane.name} · {phrase}"
    decision = pane.decision if pane is not None else None
    buttons = False
    allow_button = True
    decision_id = None
    if cause == "permission" and pane is not None:
        named = decision.tool_name if decision is not None and decision.tool_name else display
        tool = " ".join(named.split())  # a keyed dialog's title: no space runs
        text = f"Allow {tool}?"
        # a native prompt ("Allow <tool>?" + tool input JSON): what is approved, named as
        # `permission list` names it (core/subject.py), not the raw JSON; other prompts as
        # they are, on one line
        raw = (decision.preview or "") if decision is not None else ""
        native = raw.partition("\n")[0].strip() == f"Allow {named}?"
        preview = (permission_subject(raw) if native else "") or " ".join(raw.split())
        preview = preview.removeprefix(text).strip()  # prompts often repeat "Allow <tool>?"
        shown = _clip(preview, MAX_PREVIEW)
        if preview:
            text += "\n" + shown
        hidden = _hidden_fields(raw, named) if native else []
        bad_tool = named == INVALID_TOOL_NAME
        whole = _shows_all(raw, f"Allow {named}?", native, shown) and not hidden and not bad_tool
        if hidden:
            text += "\n" + _more_fields(hidden)
        if bad_tool:
            text += "\n(the agent sent a tool name that is not valid)"
        if decision is not None:
            decision_id = decision.id
            # where to answer (issue 11 item 3): here, in the terminal, or the terminal later
            later = decision.terminal_after_s
            asks = "" if later is None else (
                f"{display} asks in its terminal after {_seconds(later)}"
            )
            review = f"`signaltty permission show {decision.id}`"
            if not decision.answerable:
                text += f"\n{READ_ONLY_SUFFIX}"
            elif actions and (hidden or bad_tool):
                # "Allow once" would approve fields the body does not show (A3)
                buttons, allow_button = True, False
                text += f"\n(review it in {display}'s terminal or with {review})"
            elif actions and not whole:
                # "Allow once" under a cut preview would approve what the person never saw
                buttons, allow_button = True, False
                text += (f"\n(too long to show here: review it with `signaltty top`, "
                         f"{review} or in {display}'s terminal)")
            elif actions:
                buttons = True
                text += ("\n(answer here or in the terminal)" if later is None
                         else f"\n(answer here; {asks})")
            else:
                # the decision id: a request superseding this one cannot take the allow
                cli = f"signaltty permission answer --pane {pane.pane_id} {decision.id} allow|deny"
                text += (f"\n(answer: {cli}, or in the terminal)" if later is None
                         else f"\n(answer: {cli}; {asks})")
        out_body = text
    elif cause == TERMINAL_PROMPT:
        # ``body`` is the permission notification's own body when one was shown, without
        # its "(answer …)" hint: the desktop can no longer answer
        lines = [ln for ln in (body or "").splitlines() if ln and not ln.startswith("(answer")]
        question = _clip("\n".join(lines), MAX_BODY)
        out_body = f"{question}\n{TERMINAL_PROMPT_SUFFIX}" if question else TERMINAL_PROMPT_SUFFIX
    else:
        chosen = body if body else (pane.last_message if pane is not None else None)
        out_body = _clip(chosen or "", MAX_BODY)
    return Content(
        pane_id=pane.pane_id if pane is not None else None,
        cause=cause,
        title=_ltr(sanitize_text(full_title, 400) or "signaltty"),
        body=_ltr(sanitize_text(out_body, 1000, multiline=True)),
        urgency=_URGENCY.get(cause, "normal"),
        expires=cause not in ("permission", TERMINAL_PROMPT),
        buttons=buttons,
        decision_id=decision_id,
        sound=settings.sound,
        allow_button=allow_button,
    )


def wire_body(body: str, *, markup: bool) -> str:
    """The body as a server must receive it to show exactly ``body``.

    Servers that list ``body-markup`` in ``GetCapabilities`` parse a subset of HTML in the
    body (``<b>``, ``<a href>``, ``<img>``, on some ``<span>`` with attributes), so a payload
    could hide text (``<span alpha='1%'>``), add a link or load an image. For them every
    ``&``, ``<`` and ``>`` is escaped: no tag can form, so no link or image either. Others
    show the body as plain text and get it unchanged.

    Args:
        body: sanitized body text (:func:`render`).
        markup: whether the server lists ``body-markup``.

    Returns:
        ``body``, escaped when ``markup``.

    Spec: Desktop Notifications Specification, "Markup"; issue 10 §7.
    """
    if not markup:
        return body
    return body.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


TAMPERED_NOTE: Final = (
    "Another program replaced the previous notification for this request; "
    "it was withdrawn. This is the real one."
)


def tampered(content: Content) -> Content:
    """``content`` re-posted after another program replaced its notification by id
    (fdo's tamper watch; issue 10, third attack pass, A12): the body starts by saying so."""
    body = f"{TAMPERED_NOTE}\n{content.body}" if content.body else TAMPERED_NOTE
    return replace(content, body=body)


def stale_content(pane_name_text: str, pane_id: str | None) -> Content:
    """The 5-second "request no longer pending" notification (§6.3)."""
    return Content(
        pane_id=pane_id,
        cause="stale",
        title=f"{pane_name_text} · request no longer pending",
        body="",
        urgency="normal",
        expires=True,
        buttons=False,
        decision_id=None,
        sound=False,
    )


def withdraws(name: str, payload: dict[str, Any], pane_id: str, decision_id: str | None) -> bool:
    """Whether the state event ``name`` withdraws the live notification of ``pane_id``.

    Args:
        name: event name.
        payload: event payload.
        pane_id: pane of the live notification.
        decision_id: decision the live notification shows, if any.

    Returns:
        True on ``attention.cleared`` and ``pane.closed`` for the pane, and on
        ``decision.answered``/``decision.cleared`` of the shown decision.
    Spec: desktop-and-service.md §6.3 "Withdrawal".
    """
    event_pane = payload.get("pane_id")
    if event_pane is None and isinstance(payload.get("pane"), dict):
        event_pane = payload["pane"].get("id")
    if name in ("attention.cleared", "pane.closed"):
        return event_pane == pane_id
    if name in ("decision.answered", "decision.cleared"):
        did = payload.get("decision_id")
        if did is None and isinstance(payload.get("decision"), dict):
            did = payload["decision"].get("id")
        # the pane too: a watched host's decision may carry the id of one of ours (ids are
        # the agents' own, Codex numbers them), and must not withdraw our notification
        return decision_id is not None and did == decision_id and event_pane in (None, pane_id)
    return False


def native_timed_out(name: str, payload: dict[str, Any]) -> bool:
    """Whether the state event ``name`` says a native permission wait ran out of time.

    Such a decision is cleared with reason ``native_cancelled`` and ``cancelled:
    "timeout"``; the agent then asks in its own terminal (integrations.md §4.1 step 5).
    """
    return (
        name == "decision.cleared"
        and payload.get("reason") == "native_cancelled"
        and payload.get("cancelled") == "timeout"
    )


def _phrase(cause: str, title: str | None, display: str, pane: PaneView | None) -> str:
    match cause:
        case "permission":
            return f"{display} needs approval"
        case "terminal_prompt":
            return f"{display} asks in its terminal"
        case "input" | "idle_prompt":
            return f"{display} needs input"
        case "error":
            return title or f"{display} failed"
        case "warning" | "message":
            return title or display
        case "turn_done":
            return f"{display} finished"
        case "session_end":
            return "session ended"
        case "bell":
            return "bell"
        case "exit":
            code = pane.exit_code if pane is not None else None
            return f"exited (code {code})" if code is not None else "exited"
        case _:
            return title or display


def _seconds(value: float) -> str:
    """``10 s``, ``2 min`` (a wait as the notification names it)."""
    return f"{value:.0f} s" if value < 90 else f"{value / 60:.0f} min"


def _shows_all(raw: str, question: str, native: bool, shown: str) -> bool:
    """True when ``shown`` (the body's preview line) is all of the request's subject.

    The other fields of a native tool input are checked apart (``_hidden_fields``).

    A native prompt (``Allow <tool>?`` + tool input JSON): the whole value of its subject
    key (``core.subject.SUBJECT_KEYS``: the command, file, URL…; a list joined by spaces),
    else the whole compact JSON. Any other prompt: all of it after the question. Whitespace
    runs count as one space. A prompt cut at its 8 KiB limit, a preview cut at
    ``MAX_PREVIEW``, extra lines (``(+N lines)``) or characters the sanitizer removed all
    make it False: then no "Allow once" is offered (issue 10 follow-up, item 6).
    """
    if len(raw.encode("utf-8", "surrogatepass")) >= MAX_PROMPT_BYTES - 4:
        return False
    full: str | None = None
    if native:
        try:
            data = json.loads(raw.partition("\n")[2])
        except ValueError:
            return False
        if isinstance(data, dict):
            full = subject_value(data)
        else:
            full = json.dumps(data, ensure_ascii=False, separators=(",", ":")) if data else ""
    else:
        full = raw
    full = " ".join(full.split()).removeprefix(question).strip()
    return full == shown


MAX_NAMED_FIELDS: Final = 4  # hidden field names spelled out in the body
_LRM: Final = "\u200e"  # LEFT-TO-RIGHT MARK


def _hidden_fields(raw: str, tool: str) -> list[str]:
    """``core.subject.hidden_fields`` of a native prompt's tool input (``[]`` when the JSON
    does not parse: a cut prompt already fails ``_shows_all``)."""
    try:
        data = json.loads(raw.partition("\n")[2])
    except ValueError:
        return []
    return hidden_fields(tool, data) if isinstance(data, dict) else []


def _more_fields(hidden: list[str]) -> str:
    """``(+2 more fields: dangerouslyDisableSandbox, workdir — review in the terminal)``:
    the count, the first names (dangerous first; each cut, sanitized with the body)."""
    names = ", ".join(_clip(" ".join(k.split()), 40) for k in hidden[:MAX_NAMED_FIELDS])
    if len(hidden) > MAX_NAMED_FIELDS:
        names += ", …"
    plural = "s" if len(hidden) > 1 else ""
    return f"(+{len(hidden)} more field{plural}: {names} — review in the terminal)"


def _ltr(text: str) -> str:
    """Start every line holding a right-to-left letter with U+200E (LEFT-TO-RIGHT MARK).

    Each line is its own bidi paragraph, whose direction its first strong letter sets: a
    leading Hebrew or Arabic letter would turn the whole line right-to-left and reorder a
    command (A3b). The mark makes it left-to-right; lines without such letters (nearly all)
    are left alone. Spec: Unicode UAX #9, rules P2–P3.
    """
    if text.isascii():
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if any(unicodedata.bidirectional(ch) in ("R", "AL") for ch in line):
            lines[i] = _LRM + line
    return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
