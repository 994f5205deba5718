"""Transition rules: pane state + stimulus → effects (pure, stdlib only; Spec: states.md §1–§4).

Every function here takes the pane record, the stimulus and ``now`` (wall-clock seconds read
once by the store), updates the record in place and returns the effects in emission order.
Nothing here reads a clock, touches a file or knows about asyncio; ``server/store.py`` is the
only caller that applies the effects (assigns ``seq``, publishes events, keeps notifications).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from signaltty.core import verdicts
from signaltty.core.hooks import Classification, NotificationDraft
from signaltty.core.limits import (
    MAX_LAST_MESSAGE,
    MAX_NOTIFICATION_BODY,
    MAX_NOTIFICATION_TITLE,
    MAX_TITLE,
)
from signaltty.core.model import Decision, Notification, Pane
from signaltty.core.sanitize import sanitize_text
from signaltty.core.states import (
    ATTENTION_RANK,
    SEVERITY_ATTENTION,
    SEVERITY_CAUSE,
    Attention,
    Lifecycle,
    RestoreState,
)

AGENT_KINDS = frozenset({"claude", "codex", "opencode", "cursor", "pi"})


@dataclass(frozen=True, slots=True)
class Emit:
    """A state event to publish (protocol.md §7); the store assigns its ``seq``."""

    event: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Alert:
    """Input of the desktop notification policy (states.md §7); not on the wire."""

    pane_id: str | None
    cause: str
    severity: str
    title: str | None = None
    body: str | None = None
    decision_id: str | None = None


@dataclass(frozen=True, slots=True)
class AddNotification:
    """Keep a Notification record (newest 200) and emit ``notification.created``."""

    notification: Notification


@dataclass(frozen=True, slots=True)
class MarkNotificationsRead:
    """Set ``read_at`` on every unread notification of a pane (states.md §3.10)."""

    pane_id: str
    at: float


@dataclass(frozen=True, slots=True)
class CancelRoute:
    """End a native permission waiter without a verdict (states.md §3.5 step 6)."""

    decision_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class MarkDirty:
    """A persisted field changed without an event of its own (e.g. ``last_seen_at``)."""


Effect = Emit | Alert | AddNotification | MarkNotificationsRead | CancelRoute | MarkDirty


@dataclass(slots=True)
class NotificationInput:
    """A notification stimulus after sanitizing (OSC 9/99/777, ``notify``, hook)."""

    id: str
    title: str | None
    body: str | None
    severity: str = "info"
    source: str = "cli"
    attention_source: str = "notify"
    workspace_id: str | None = None
    extra_effects: list[Effect] = field(default_factory=list)


# ---------------------------------------------------------------- axis primitives


def set_lifecycle(pane: Pane, value: Lifecycle, source: str, *, now: float) -> list[Effect]:
    """Move the lifecycle; same-state sets emit nothing (states.md §1).

    Leaving ``working`` records ``last_run_secs``.
    """
    prev = pane.lifecycle
    if prev == value:
        return []
    if prev == Lifecycle.WORKING and pane.working_since is not None:
        pane.last_run_secs = round(max(0.0, now - pane.working_since), 3)
    pane.working_since = now if value == Lifecycle.WORKING else None
    pane.last_lifecycle = prev
    pane.lifecycle = value
    pane.lifecycle_since = now
    pane.lifecycle_source = source
    return [
        Emit(
            f"agent.{value.value}",
            {"pane_id": pane.id, "lifecycle": value.value, "prev": prev.value, "source": source},
        )
    ]


def raise_attention(
    pane: Pane,
    value: Attention,
    source: str,
    cause: str,
    *,
    now: float,
    marker: str | None = None,
    alert: Alert | None = None,
) -> list[Effect]:
    """Raise attention to ``max(current, value)`` (states.md §1 "Raising never lowers").

    A raise that changes the value sets ``attention_since``, emits ``attention.created`` or
    ``attention.updated`` and sets the layer marker (only for ``marker`` raises of
    ``input_required``/``permission_required``; any other change resets it, §1.1). Every raise
    yields an alert, changed or not.
    """
    effects: list[Effect] = []
    prev = pane.attention
    if ATTENTION_RANK[value] > ATTENTION_RANK[prev]:
        pane.attention = value
        pane.attention_since = now
        pane.attention_marker = (
            marker
            if marker and value in (Attention.INPUT_REQUIRED, Attention.PERMISSION_REQUIRED)
            else None
        )
        name = "attention.created" if prev == Attention.NONE else "attention.updated"
        effects.append(
            Emit(
                name,
                {
                    "pane_id": pane.id,
                    "attention": value.value,
                    "prev": prev.value,
                    "source": source,
                    "cause": cause,
                },
            )
        )
    effects.append(alert or Alert(pane.id, cause, _severity_of(value)))
    return effects


def clear_attention(pane: Pane, reason: str) -> list[Effect]:
    """Set attention to ``none`` and reset the marker; nothing when already ``none``."""
    prev = pane.attention
    pane.attention_marker = None
    if prev == Attention.NONE:
        return []
    pane.attention = Attention.NONE
    return [Emit("attention.cleared", {"pane_id": pane.id, "prev": prev.value, "reason": reason})]


def clear_decision(pane: Pane, reason: str) -> list[Effect]:
    """Drop the pending decision (states.md §3.9); a native one also ends its waiter."""
    dec = pane.pending_decision
    if dec is None:
        return []
    pane.pending_decision = None
    effects: list[Effect] = []
    if dec.native:
        effects.append(CancelRoute(dec.id, reason))
    effects.append(
        Emit("decision.cleared", {"pane_id": pane.id, "decision_id": dec.id, "reason": reason})
    )
    return effects


def _severity_of(value: Attention) -> str:
    if value == Attention.ERROR:
        return "error"
    if value in (Attention.WARNING, Attention.INPUT_REQUIRED, Attention.PERMISSION_REQUIRED):
        return "warning"
    return "info"


def compose_message(title: str | None, body: str | None) -> str | None:
    """``last_message``: ``"<title>: <body>"`` with a title, else the body (≤ 300, states.md
    §3.2)."""
    text = f"{title}: {body}" if title and body else body or title or ""
    text = sanitize_text(text, MAX_LAST_MESSAGE)
    return text or None


def _updated(pane: Pane, *changed: str) -> Emit:
    return Emit("pane.updated", {"pane": pane.to_wire(), "changed": list(changed)})


# ---------------------------------------------------------------- stimuli


def on_notification(
    pane: Pane | None, note: NotificationInput, *, now: float, watched: bool = False
) -> list[Effect]:
    """Apply ``notify``, an OSC 9/99/777 notification or a hook notification (states.md §3.2).

    With a pane: Notification record, attention raised per severity (info → unread),
    ``last_message`` set, alert ``message``/``warning``/``error``; lifecycle untouched.
    Without a pane: the record and a pane-less alert only.

    ``watched``: a person is attached to the pane (the caller passes it for the pane's own
    OSC notifications). An ``info`` one is then read as it arrives: the record is created
    read and attention is not raised to ``unread``; the alert is still returned (the
    desktop policy has its own rule for attached panes). Issue 13 item 9.
    """
    target = SEVERITY_ATTENTION.get(note.severity, Attention.UNREAD)
    seen_now = watched and pane is not None and target == Attention.UNREAD
    record = Notification(
        id=note.id,
        title=note.title or "",
        body=note.body,
        severity=note.severity,
        source=note.source,
        created_at=now,
        pane_id=pane.id if pane else None,
        workspace_id=pane.workspace_id if pane else note.workspace_id,
        read_at=now if seen_now else None,
    )
    effects: list[Effect] = [AddNotification(record)]
    cause = SEVERITY_CAUSE.get(note.severity, "message")
    if pane is None:
        effects.append(Alert(None, cause, note.severity, note.title, note.body))
        return effects
    message = compose_message(note.title, note.body)
    if message is not None and message != pane.last_message:
        pane.last_message = message
        effects.append(MarkDirty())
    alert = Alert(pane.id, cause, note.severity, note.title, note.body)
    if seen_now:
        effects.append(alert)
        return effects
    effects += raise_attention(
        pane,
        target,
        note.attention_source,
        cause,
        now=now,
        alert=alert,
    )
    return effects


def on_bell(pane: Pane, *, now: float, watched: bool = False) -> list[Effect]:
    """A BEL in ground state raises ``unread`` with alert ``bell`` (states.md §3.2 N5).

    ``watched`` (a person is attached): the alert only, attention untouched (issue 13 item 9).
    """
    if watched:
        return [Alert(pane.id, "bell", "info")]
    return raise_attention(pane, Attention.UNREAD, "bell", "bell", now=now)


def on_title(pane: Pane, text: str) -> list[Effect]:
    """OSC 0/1/2 title: sanitized, ≤ 200, empty ignored, ``pane.updated`` only on change
    (the caller may coalesce that event: :func:`set_title` + :func:`title_updated`)."""
    return [_updated(pane, "title")] if set_title(pane, text) else []


def set_title(pane: Pane, text: str, *, sanitized: bool = False) -> bool:
    """:func:`on_title` without its event: True when the title changed. For a caller that
    coalesces the event, so that a change does not build a wire record it then drops
    (Codex turns its spinner in the title ~10×/s; issue 12). ``sanitized``: ``text`` went
    through ``sanitize_text(text, MAX_TITLE)`` already (``term.osc.Title``), not again."""
    title = text if sanitized else sanitize_text(text, MAX_TITLE)
    pane.title_from_osc = pane.title_from_osc or bool(title)
    if not title or title == pane.title:
        return False
    pane.title = title
    return True


def title_updated(pane: Pane) -> list[Effect]:
    """The ``pane.updated {changed: [title]}`` of a coalesced run of title changes, with the
    title as it is now (protocol.md §7: at most one per 250 ms per pane)."""
    return [_updated(pane, "title")]


def on_cwd(pane: Pane, path: str, *, is_dir: bool) -> list[Effect]:
    """OSC 7 cwd report: applied when ``path`` is an existing directory (caller checks)."""
    if not is_dir or path == pane.cwd:
        return []
    pane.cwd = path
    return [_updated(pane, "cwd")]


def on_progress(pane: Pane, progress: dict[str, Any]) -> list[Effect]:
    """OSC 9;4: update ``osc_progress`` only (states.md §3.4); no state change, no notification."""
    if pane.osc_progress is not None and all(
        pane.osc_progress.get(k) == progress.get(k) for k in ("state", "percent", "raw")
    ):
        pane.osc_progress = progress
        return []
    pane.osc_progress = progress
    return [Emit("pane.progress", {"pane_id": pane.id, "osc_progress": progress})]


def on_exit(
    pane: Pane, code: int | None, *, now: float, shutting_down: bool, watched: bool = False
) -> list[Effect]:
    """Process exit, once per process instance (states.md §3.5, table §9.3).

    Args:
        code: exit status, ``128 + N`` for a signal N, ``None`` when unknown.
        shutting_down: exits during shutdown are not applied (E10).
        watched: a person is attached and sees the exit: lifecycle and the clearing of a
            requirement apply as usual, but no ``unread`` is raised, only the ``exit``
            alert (issue 13 item 9).
    """
    if pane.exit_applied or shutting_down or not pane.live:
        return []
    pane.exit_applied = True
    pane.live = False
    pane.exit_code = code
    pane.restore_state = RestoreState.EXITED
    effects: list[Effect] = [Emit("pane.exited", {"pane_id": pane.id, "code": code})]
    reviewed = (
        pane.lifecycle in (Lifecycle.DONE, Lifecycle.FAILED)
        and pane.attention == Attention.NONE
        and pane.pending_decision is None
    )
    if pane.lifecycle not in (Lifecycle.DONE, Lifecycle.FAILED):
        if pane.agent.kind in AGENT_KINDS or code is None:
            target = Lifecycle.EXITED
        else:
            target = Lifecycle.DONE if code == 0 else Lifecycle.FAILED
        effects += set_lifecycle(pane, target, "exit", now=now)
    if pane.attention in (Attention.INPUT_REQUIRED, Attention.PERMISSION_REQUIRED):
        effects += clear_attention(pane, "pane_exited")
    effects += clear_decision(pane, "pane_exited")
    if not reviewed and watched:
        effects.append(Alert(pane.id, "exit", "info"))
    elif not reviewed:
        effects += raise_attention(pane, Attention.UNREAD, "exit", "exit", now=now)
    pane.program_status = None
    pane.osc_progress = None
    pane.attention_marker = None
    return effects


def mark_seen(pane: Pane, reason: str, *, now: float) -> list[Effect]:
    """``pane.mark_seen`` / attach (states.md §3.10): clears attention unless a decision is
    pending."""
    pane.last_seen_at = now
    effects: list[Effect] = [MarkDirty(), MarkNotificationsRead(pane.id, now)]
    if pane.pending_decision is None:
        effects += clear_attention(pane, reason)
    return effects


def on_close(pane: Pane) -> list[Effect]:
    """``pane.close``: the decision is cleared (``pane_closed``), then ``pane.closed``."""
    effects = clear_decision(pane, "pane_closed")
    effects.append(Emit("pane.closed", {"pane_id": pane.id}))
    return effects


def restore(pane: Pane, *, has_resume: bool) -> None:
    """Rules of states.md §4 for a pane read back from a snapshot (no process is started).

    Live panes become exited with code ``None`` and ``RESUMABLE``/``RESTORED``; exited panes
    ``EXITED``; lifecycle and attention are kept; native decisions become unanswerable.
    """
    if pane.live:
        pane.live = False
        pane.exit_code = None
        pane.restore_state = RestoreState.RESUMABLE if has_resume else RestoreState.RESTORED
    else:
        pane.restore_state = RestoreState.EXITED
    pane.exit_applied = True
    pane.hooked = False
    pane.attention_marker = None
    disarm_native_decision(pane)


def disarm_native_decision(pane: Pane) -> None:
    """A native decision nobody can deliver a verdict for any more (its reporter is gone):
    kept for display, no longer answerable (states.md §4 RS4; issue 15 after a restart)."""
    dec = pane.pending_decision
    if dec is not None and dec.native:
        pane.pending_decision = Decision(
            id=dec.id,
            prompt=dec.prompt,
            options=dec.options,
            received_at=dec.received_at,
            answerable=False,
            native=True,
            agent=dec.agent,
            tool_name=dec.tool_name,
            deadline=None,
        )


# ---------------------------------------------------------------- hooks (states.md §3.1)


@dataclass(slots=True)
class HookInput:
    """One accepted-for-processing hook after routing (states.md §3.1 steps 6–15).

    The router resolves the adapter and the pane (steps 1–5) and precomputes everything that
    needs the agent layer, so these rules stay pure.

    Attributes:
        agent: adapter kind (``claude``, ``codex``, … ``generic``).
        event: hook name as the provider spells it.
        classification: the adapter's meaning of the hook.
        session_id: identity extracted by the adapter, if any.
        resume_argv: resume command for ``session_id`` (agents.md §3.4), if resolvable.
        draft: the adapter's notification draft, if any.
        default_title: the adapter's title for explicit messages without one.
        decision: explicit or synthesized decision, if any.
        answer_channel: the adapter can answer non-native decisions (Codex typed text).
        native_route: a live native waiter exists for ``decision`` (native decisions).
        foreign_harness: the payload names another agent (step 6).
        message, body, title, severity: explicit notification fields.
        notification_id: id for a notification record, if one is made.
        tool_name: the payload's ``tool_name`` (a ``PostToolUse`` resolves only its own
            tool's request).
    """

    agent: str
    event: str
    classification: Classification
    session_id: str | None = None
    resume_argv: list[str] | None = None
    resume_source: str = "adapter"
    draft: NotificationDraft | None = None
    default_title: str = "Agent"
    display_name: str | None = None
    decision: Decision | None = None
    answer_channel: bool = False
    native_route: bool = False
    foreign_harness: bool = False
    message: str | None = None
    body: str | None = None
    title: str | None = None
    severity: str | None = None
    notification_id: str = ""
    tool_name: str | None = None


@dataclass(slots=True)
class HookOutcome:
    """What ``hook-event`` answers besides the pane state (protocol.md §6)."""

    accepted: bool
    dropped: bool = False
    reason: str | None = None
    decision_id: str | None = None
    effects: list[Effect] = field(default_factory=list)


_SPECIFIC = frozenset({"claude", "codex", "opencode", "cursor", "pi"})
# Hooks that only come once the agent went past a permission request (issue 11 item 2):
# the person answered in the agent's own dialog, or the session moved on.
_PAST_REQUEST = frozenset({"userpromptsubmit", "sessionstart", "sessionend", "interrupt"})
_TOOL_DONE = frozenset({"posttooluse", "posttoolusefailure"})
_TURN_END = frozenset({"stop", "agent-turn-complete"})
# A tool's end (Gemini's is ``AfterTool``) never reopens a turn a hook ended: each hook is its
# own reporter process, so one can arrive after the turn's end (issue 11 "Bad input").
_LATE_TOOL_END = _TOOL_DONE | {"aftertool"}


def _owes_permission(pane: Pane) -> bool:
    return pane.pending_decision is not None or (
        pane.attention == Attention.PERMISSION_REQUIRED and pane.attention_marker is None
    )


# Claude's Notification(permission_prompt) comes 6-8 s after its PermissionRequest: within
# this many seconds of the request's end it is taken for that request's restatement.
LATE_RESTATEMENT_S = 15.0


def went_past_request(pane: Pane, hook: HookInput) -> bool:
    """True when ``hook`` shows the agent is past the pending permission request.

    A tool's end counts for that tool only (another tool may finish while the dialog is up);
    a turn end counts unless a decision is still answerable here (then the agent is still
    waiting for our verdict and "needs approval" stays, issue 11 item 11).
    """
    if hook.decision is not None or hook.classification.cause == "permission":
        return False
    if not _owes_permission(pane):
        return False
    event = hook.event.lower()
    dec = pane.pending_decision
    if event in _PAST_REQUEST:
        return True
    if event in _TOOL_DONE:
        return dec is None or dec.tool_name is None or hook.tool_name in (None, dec.tool_name)
    if event in _TURN_END:
        return dec is None or not dec.answerable
    return False


def resolve_request(pane: Pane, *, now: float) -> list[Effect]:
    """The request was answered in the agent's own dialog (issue 11 item 2): the decision is
    cleared (its waiter ends, ``moved_on``), the requirement withdrawn, ``blocked`` →
    ``working``."""
    effects = clear_decision(pane, "moved_on")
    pane.request_ended_at = now
    if pane.attention in (Attention.PERMISSION_REQUIRED, Attention.INPUT_REQUIRED):
        effects += clear_attention(pane, "hook")
    if pane.lifecycle == Lifecycle.BLOCKED:
        effects += set_lifecycle(pane, Lifecycle.WORKING, "hook", now=now)
    return effects


def renewed_permission_alert(pane: Pane) -> Alert | None:
    """The alert of a permission still waiting for an answer, to announce it again when the
    notification that carried its buttons can no longer be answered (an in-place restart,
    issue 15: the buttons belonged to the old image's bus connection)."""
    dec = pane.pending_decision
    if (
        not pane.live
        or pane.attention != Attention.PERMISSION_REQUIRED
        or dec is None
        or not dec.answerable
    ):
        return None
    return Alert(
        pane.id,
        _derive_cause(Attention.PERMISSION_REQUIRED),
        _severity_of(Attention.PERMISSION_REQUIRED),
        None,
        pane.last_message,
        dec.id,
    )


def _derive_cause(att: Attention) -> str:
    return {
        Attention.PERMISSION_REQUIRED: "permission",
        Attention.INPUT_REQUIRED: "input",
        Attention.ERROR: "error",
        Attention.WARNING: "warning",
    }.get(att, "message")


def set_session(
    pane: Pane,
    agent: str,
    session_id: str | None,
    resume_argv: list[str] | None,
    *,
    resume_source: str = "adapter",
    display_name: str | None = None,
) -> tuple[list[Effect], list[str]]:
    """Session identity (states.md §3.1 step 7, protocol.md ``report-session``).

    The kind becomes ``agent`` when that is a specific kind, or when the pane is still
    ``generic``/``none`` (one specific kind never switches to another without an id, and
    nothing is demoted to generic). A different id replacing a known one bumps
    ``session_generation`` and ends a pending decision of the old session (``moved_on``).

    Returns:
        ``(effects, changed_fields)``; the caller emits one ``pane.updated`` for the batch.
    """
    info = pane.agent
    changed: list[str] = []
    effects: list[Effect] = []
    promotable = info.kind in ("generic", "none")
    if (
        agent != info.kind
        and ((session_id is not None and agent in _SPECIFIC) or (promotable and agent != "none"))
        and not (agent == "generic" and not promotable)
    ):
        info.kind = agent
        if display_name:
            info.display_name = display_name
        changed.append("kind")
    if session_id is not None and session_id != info.agent_session_id:
        if info.agent_session_id is not None:
            info.session_generation += 1
            effects += clear_decision(pane, "moved_on")
        info.agent_session_id = session_id
        changed.append("agent_session_id")
    if session_id is not None and resume_argv is not None and resume_argv != info.resume_argv:
        info.resume_argv = list(resume_argv)
        info.resume_source = resume_source
        changed.append("resume_argv")
    return effects, changed


def on_hook(pane: Pane, hook: HookInput, *, now: float) -> HookOutcome:
    """Apply one hook to its pane: steps 6–15 of states.md §3.1 (tables §9.1, §9.2).

    Returns:
        ``HookOutcome`` with the effects in emission order; ``dropped`` outcomes carry no
        effects (``harness_mismatch``, ``unrecognized_hook``).
    """
    cls = hook.classification
    # 6. harness drop
    if hook.foreign_harness:
        return HookOutcome(False, True, "harness_mismatch")
    explicit_note = hook.message is not None or hook.body is not None
    # 8. unrecognized (checked before identity so a dropped hook changes nothing)
    if not (
        cls.recognized
        or hook.session_id is not None
        or hook.draft is not None
        or hook.decision is not None
        or explicit_note
    ):
        return HookOutcome(False, True, "unrecognized_hook")
    effects: list[Effect] = []
    # 7. session identity
    id_effects, changed = set_session(
        pane,
        hook.agent,
        hook.session_id,
        hook.resume_argv,
        resume_source=hook.resume_source,
        display_name=hook.display_name,
    )
    effects += id_effects
    if changed:
        effects.append(_updated(pane, *changed))
    lifecycle = cls.lifecycle
    attention = cls.attention
    message = cls.message
    draft = hook.draft
    if went_past_request(pane, hook):
        effects += resolve_request(pane, now=now)
    elif hook.event.lower() in _TURN_END and pane.pending_decision is not None:
        # a turn end while the agent still waits for our verdict: "needs approval" stays,
        # never "finished" (issue 11 item 11)
        lifecycle = attention = message = draft = None
    elif (
        cls.cause == "permission"
        and hook.decision is None
        and pane.lifecycle == Lifecycle.BLOCKED
        and pane.attention == Attention.PERMISSION_REQUIRED
    ):
        # Claude's Notification(permission_prompt) ~6-8 s after its request restates it:
        # no second alert, no second record (issue 11 item 11)
        lifecycle = attention = message = draft = None
    elif (
        cls.cause == "permission"
        and hook.decision is None
        and pane.pending_decision is None
        and pane.request_ended_at is not None
        and now - pane.request_ended_at < LATE_RESTATEMENT_S
    ):
        # …and when the person answered before it came, it restates a request that is over:
        # no "blocked" again, no second alert (sixth attack pass, finding 4)
        lifecycle = attention = message = draft = None
    if cls.notice:
        t = draft.title if draft else None
        effects.append(
            Alert(pane.id, cls.cause or "message", "info", t, draft.body if draft else None)
        )
        draft = None
    # 8b. a tool's end that arrives after the turn's end changes nothing (issue 11 "Bad input")
    if (
        hook.event.lower() in _LATE_TOOL_END
        and pane.lifecycle == Lifecycle.DONE
        and pane.lifecycle_source == "hook"
        and hook.decision is None
    ):
        lifecycle = attention = message = None
    # 9. tool hooks never change a blocked pane, except a tool's end on a hooked pane that
    # only its screen made blocked (a dialog no hook reports, issue 11 item 11): the agent
    # went on, so it works again (step 15 withdraws the screen's "needs input")
    if cls.tool_hook and pane.lifecycle == Lifecycle.BLOCKED:
        if (
            pane.hooked
            and pane.lifecycle_source == "screen"
            and hook.event.lower() in _LATE_TOOL_END
        ):
            lifecycle = lifecycle or Lifecycle.WORKING
        else:
            lifecycle = attention = message = None
    # 10. SessionEnd restatement on a reviewed/terminal pane
    if (
        hook.event.lower() == "sessionend"
        and lifecycle == Lifecycle.DONE
        and pane.lifecycle in (Lifecycle.DONE, Lifecycle.FAILED)
    ):
        lifecycle = attention = message = None
    # 11. message and lifecycle
    if message is not None:
        text = sanitize_text(message, MAX_LAST_MESSAGE)
        if text and text != pane.last_message:
            pane.last_message = text
            effects.append(MarkDirty())
    if lifecycle is not None:
        effects += set_lifecycle(pane, lifecycle, "hook", now=now)
    # 12. attention
    raised = False
    if attention == Attention.NONE:
        effects += clear_attention(pane, "hook")
        effects += clear_decision(pane, "attention_cleared")
    elif attention is not None:
        cause = cls.cause or _derive_cause(attention)
        dec_id = hook.decision.id if hook.decision is not None else None
        alert = Alert(
            pane.id,
            cause,
            _severity_of(attention),
            hook.draft.title if hook.draft else None,
            pane.last_message,
            dec_id,
        )
        effects += raise_attention(pane, attention, "hook", cause, now=now, alert=alert)
        raised = True
    # 13. decision
    decision_id: str | None = None
    if hook.decision is not None:
        dec = hook.decision
        dec.answerable = hook.native_route if dec.native else hook.answer_channel
        prev = pane.pending_decision
        if prev is not None and prev.native and prev.id != dec.id:
            effects.append(CancelRoute(prev.id, "superseded"))
        pane.pending_decision = dec
        decision_id = dec.id
        effects.append(
            Emit(
                "decision.created",
                {"pane_id": pane.id, "decision": dec.to_wire(), "prev": prev.id if prev else None},
            )
        )
    elif pane.pending_decision is not None and pane.lifecycle == Lifecycle.WORKING:
        effects += clear_decision(pane, "moved_on")
    # 14. notification
    note_title: str | None = None
    note_body: str | None = None
    severity = "info"
    if explicit_note:
        note_title = hook.title or hook.default_title
        note_body = hook.body if hook.body is not None else hook.message
        severity = hook.severity or "info"
    elif draft is not None:
        note_title, note_body, severity = draft.title, draft.body, draft.severity
    if note_title is not None:
        title = sanitize_text(note_title, MAX_NOTIFICATION_TITLE) or hook.default_title
        body = (
            sanitize_text(note_body, MAX_NOTIFICATION_BODY, multiline=True) if note_body else None
        )
        record = Notification(
            id=hook.notification_id,
            title=title,
            body=body or None,
            severity=severity,
            source=f"hook:{hook.agent}:{hook.event}",
            created_at=now,
            pane_id=pane.id,
            workspace_id=pane.workspace_id,
        )
        effects.append(AddNotification(record))
        if explicit_note and message is None:
            composed = compose_message(title, body)
            if composed and composed != pane.last_message:
                pane.last_message = composed
                effects.append(MarkDirty())
        cause = SEVERITY_CAUSE.get(severity, "message")
        raise_effects = raise_attention(
            pane,
            SEVERITY_ATTENTION.get(severity, Attention.UNREAD),
            "hook",
            cause,
            now=now,
            alert=Alert(pane.id, cause, severity, title, body),
        )
        if raised:  # the classification's alert already speaks for this hook
            raise_effects = [e for e in raise_effects if not isinstance(e, Alert)]
        effects += raise_effects
    # 15. hooked; a layer-raised requirement is withdrawn
    pane.hooked = True
    pane.last_signal_at = now
    if pane.attention_marker in ("screen", "program_status"):
        effects += clear_attention(pane, "hook")
    return HookOutcome(True, effects=effects, decision_id=decision_id)


def on_answer(pane: Pane, decision_id: str, option_id: str, *, now: float) -> list[Effect]:
    """A delivered answer (states.md §3.9): answered, removed, seen, then resume after answer."""
    pane.pending_decision = None
    effects: list[Effect] = [
        Emit(
            "decision.answered",
            {"pane_id": pane.id, "decision_id": decision_id, "option_id": option_id},
        )
    ]
    pane.last_seen_at = now
    pane.request_ended_at = now
    # the request's own words ("permission requested") would outlive it in every list
    pane.last_message = _answered_message(option_id)
    effects += [MarkDirty(), MarkNotificationsRead(pane.id, now)]
    effects += clear_attention(pane, "decision_answer")
    if pane.lifecycle == Lifecycle.BLOCKED and pane.pending_decision is None:
        effects += set_lifecycle(pane, Lifecycle.WORKING, "answer", now=now)
    return effects


def _answered_message(option_id: str) -> str:
    oid = option_id.lower()
    if oid in verdicts.ALLOW_IDS:
        return "permission allowed"
    if oid in verdicts.DENY_IDS:
        return "permission denied"
    return sanitize_text(f"answered: {option_id}", MAX_LAST_MESSAGE)


def on_resume(pane: Pane, process_instance: str, *, now: float) -> list[Effect]:
    """``pane.resume`` (states.md §4): new instance, live, ``unknown`` from ``resume``; attention
    kept."""
    effects = clear_decision(pane, "moved_on")
    pane.live = True
    pane.exit_code = None
    pane.exit_applied = False
    pane.restore_state = RestoreState.LIVE
    pane.process_instance = process_instance
    pane.turn_input = False
    pane.hooked = False
    pane.program_status = None
    pane.osc_progress = None
    pane.attention_marker = None
    effects += set_lifecycle(pane, Lifecycle.UNKNOWN, "resume", now=now)
    if pane.lifecycle_source != "resume":
        pane.lifecycle_source = "resume"
        pane.lifecycle_since = now
    return effects
