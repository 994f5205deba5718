"""Transition rules of the weaker layers: OSC 7501 program status, screen rules, recovery.

Pure, like ``core/rules.py``: each function updates the pane record in place and returns the
effects in emission order; callers decide whether the layer has authority (states.md §2)
before calling. Spec: states.md §3.3 (program status), §3.7 (screen rules), §3.8
(stuck-working recovery); tables §9.5–§9.7.
"""

from __future__ import annotations

from signaltty.core.limits import MAX_LAST_MESSAGE
from signaltty.core.model import Pane
from signaltty.core.rules import (
    Alert,
    Effect,
    MarkDirty,
    clear_attention,
    clear_decision,
    raise_attention,
    set_lifecycle,
)
from signaltty.core.sanitize import sanitize_text
from signaltty.core.states import ATTENTION_RANK, Attention, Lifecycle

PROGRAM_STATUS = "program_status"
SCREEN = "screen"
RECOVERY = "recovery"
RECOVERY_MESSAGE = "turn ended without a stop signal"


def withdraw(pane: Pane, marker: str) -> list[Effect]:
    """Clear a requirement raised by layer ``marker`` (states.md §1.1); reason = the layer."""
    if pane.attention_marker != marker:
        return []
    return clear_attention(pane, marker)


def _raise_requirement(
    pane: Pane, value: Attention, marker: str, cause: str, now: float
) -> list[Effect]:
    # Repeating a blocked state must not re-alert: raise only when it lifts attention.
    if ATTENTION_RANK[value] <= ATTENTION_RANK[pane.attention]:
        return []
    return raise_attention(pane, value, marker, cause, now=now, marker=marker)


def input_starts_turn(pane: Pane) -> bool:
    """Whether input written to the pane now can start a turn (``Pane.turn_input``).

    Keys that answer a dialog the screen saw before any turn ran (Codex's start-up "Hooks
    need review", a folder-trust prompt) start none: what the agent reports after it (Codex
    0.171.0 sends OSC 7501 ``idle``, ``working`` for ~30 ms, ``idle``) is still start-up
    and reads idle, not done (issue 11 item 5, the real-agent checkpoint codex start/idle).
    """
    if pane.turn_input:
        return True
    return not (
        pane.lifecycle == Lifecycle.BLOCKED
        and pane.lifecycle_source == SCREEN
        and not pane.dialog_in_turn
    )


def _turn_done(pane: Pane, source: str, now: float) -> list[Effect]:
    if source != RECOVERY and not pane.turn_input and pane.agent.kind != "none":
        # Issue 11 item 5: an agent that got no input (nor a launch prompt) in this process
        # ran no turn; what looked like one was its start-up (a spinner title, a redraw
        # after a resize, an idle report). It reads idle, never done/unread.
        return set_lifecycle(pane, Lifecycle.IDLE, source, now=now)
    effects = set_lifecycle(pane, Lifecycle.DONE, source, now=now)
    effects += raise_attention(
        pane,
        Attention.UNREAD,
        source,
        "turn_done",
        now=now,
        alert=Alert(pane.id, "turn_done", "info", None, pane.last_message),
    )
    return effects


def _message(pane: Pane, text: str | None) -> list[Effect]:
    if not text:
        return []
    clean = sanitize_text(text, MAX_LAST_MESSAGE)
    if not clean or clean == pane.last_message:
        return []
    pane.last_message = clean
    return [MarkDirty()]


def on_program_status(
    pane: Pane, state: str, kind: str | None, message: str | None, *, now: float
) -> list[Effect]:
    """Apply a root OSC 7501 report to a pane with program-status authority (states.md §3.3).

    Args:
        state: ``idle working blocked done error`` (``clear`` is ``end_program_status``).
        kind: ``permission``/``question``/``auth`` with ``blocked``, else None.
        message: the report's ``msg`` (else ``title``); set as ``last_message`` only when the
            report drives a change.

    Returns:
        Effects; empty when the report repeats the current state.
    """
    lc = pane.lifecycle
    # Program status outranks the screen: a dialog the screen saw (Codex's "Hooks need
    # review" before its first idle report, issue 11 item 4) is over once it reports a
    # state other than blocked.
    effects: list[Effect] = withdraw(pane, SCREEN) if state != "blocked" else []
    if state == "working":
        if lc == Lifecycle.BLOCKED:
            effects += withdraw(pane, PROGRAM_STATUS)
        effects += set_lifecycle(pane, Lifecycle.WORKING, PROGRAM_STATUS, now=now)
    elif state == "blocked":
        changed = set_lifecycle(pane, Lifecycle.BLOCKED, PROGRAM_STATUS, now=now)
        if kind == "permission":
            raised = _raise_requirement(
                pane, Attention.PERMISSION_REQUIRED, PROGRAM_STATUS, "permission", now
            )
        else:
            raised = _raise_requirement(
                pane, Attention.INPUT_REQUIRED, PROGRAM_STATUS, "input", now
            )
        if changed or raised:
            effects += _message(pane, message)
        return changed + raised + effects
    elif state == "done":
        if lc == Lifecycle.DONE:
            return effects
        if lc == Lifecycle.BLOCKED:
            effects += withdraw(pane, PROGRAM_STATUS)
        effects += _message(pane, message)
        return effects + _turn_done(pane, PROGRAM_STATUS, now)
    elif state == "error":
        if lc == Lifecycle.FAILED:
            return effects
        effects += _message(pane, message)
        effects += set_lifecycle(pane, Lifecycle.FAILED, PROGRAM_STATUS, now=now)
        effects += raise_attention(pane, Attention.ERROR, PROGRAM_STATUS, "error", now=now)
        return effects
    elif state == "idle":
        if lc == Lifecycle.WORKING:
            return effects + _message(pane, message) + _turn_done(pane, PROGRAM_STATUS, now)
        if lc == Lifecycle.BLOCKED:
            effects += withdraw(pane, PROGRAM_STATUS)
            effects += set_lifecycle(pane, Lifecycle.IDLE, PROGRAM_STATUS, now=now)
        elif lc == Lifecycle.UNKNOWN:
            effects += set_lifecycle(pane, Lifecycle.IDLE, PROGRAM_STATUS, now=now)
    if effects:
        effects = _message(pane, message) + effects
    return effects


def end_program_status(pane: Pane, *, now: float) -> list[Effect]:
    """Program-status authority ends (clear, RIS, OSC 133;A, another foreground program).

    A live ``working``/``blocked`` lifecycle that came from program status becomes ``idle``
    and its requirement is withdrawn; the caller drops the records (states.md §3.3).
    """
    effects: list[Effect] = []
    if pane.lifecycle_source == PROGRAM_STATUS and pane.lifecycle in (
        Lifecycle.WORKING,
        Lifecycle.BLOCKED,
    ):
        effects += withdraw(pane, PROGRAM_STATUS)
        effects += set_lifecycle(pane, Lifecycle.IDLE, PROGRAM_STATUS, now=now)
    else:
        effects += withdraw(pane, PROGRAM_STATUS)
    return effects


def end_screen_rules(pane: Pane, *, now: float) -> list[Effect]:
    """The pane's screen rules stopped applying (the agent left; only its shell is in front):
    a ``working``/``blocked`` lifecycle the screen set becomes ``idle`` and a requirement the
    screen raised is withdrawn — the same as the end of program-status authority (§3.3)."""
    effects = withdraw(pane, SCREEN)
    if pane.lifecycle_source == SCREEN and pane.lifecycle in (Lifecycle.WORKING, Lifecycle.BLOCKED):
        effects += set_lifecycle(pane, Lifecycle.IDLE, SCREEN, now=now)
    return effects


def on_screen_state(
    pane: Pane, state: str | None, *, now: float, fallback: bool = False, message: str | None = None
) -> list[Effect]:
    """Apply the winning screen rule's state (states.md §3.7, table §9.5).

    Args:
        state: ``working``, ``blocked``, ``idle``, ``hold`` or None (no rule matched).
        fallback: the winner is the ``idle_fallback`` rule (it matches any screen, so it
            is no evidence that the agent is up).
        message: the winning rule's ``message``; a ``blocked`` state that changes the pane
            sets it as the last message first, so the alert says what to do.

    The screen never raises ``permission_required`` and never invents a state. Issue 11
    items 7 and 9 (changing S5 and S7): a dialog that came up inside a turn (the pane was
    ``working``, or got input since its last state) ends that turn ``done``/``unread`` when
    it leaves the screen for the idle prompt, and the agent's own idle
    prompt (a non-fallback ``idle`` rule) makes an ``unknown`` pane ``idle``.
    """
    lc = pane.lifecycle
    if state == "working":
        effects = withdraw(pane, SCREEN) if lc == Lifecycle.BLOCKED else []
        return effects + set_lifecycle(pane, Lifecycle.WORKING, SCREEN, now=now)
    if state == "blocked":
        if lc != Lifecycle.BLOCKED:
            # a dialog inside a turn: the turn was seen working, or the person typed since the
            # last state (the sweep may miss a short "working" between prompt and dialog)
            since = pane.lifecycle_since if pane.lifecycle_since is not None else now
            pane.dialog_in_turn = lc == Lifecycle.WORKING or (
                pane.input_at is not None and pane.input_at >= since
            )
        # one dialog after another (Codex: folder trust, then "Hooks need review") says what
        # the one on screen asks, not the first one's words
        effects = _message(pane, message)
        effects += set_lifecycle(pane, Lifecycle.BLOCKED, SCREEN, now=now)
        return effects + _raise_requirement(pane, Attention.INPUT_REQUIRED, SCREEN, "input", now)
    if state == "idle":
        if lc == Lifecycle.WORKING:
            return _turn_done(pane, SCREEN, now)
        if lc == Lifecycle.BLOCKED:
            effects = withdraw(pane, SCREEN)
            if pane.dialog_in_turn or pane.last_lifecycle == Lifecycle.WORKING:
                pane.dialog_in_turn = False
                return effects + _turn_done(pane, SCREEN, now)
            return effects + set_lifecycle(pane, Lifecycle.IDLE, SCREEN, now=now)
        if lc == Lifecycle.UNKNOWN and not fallback:
            return set_lifecycle(pane, Lifecycle.IDLE, SCREEN, now=now)
    return []


def recovery_candidate(pane: Pane) -> bool:
    """A live pane left ``working`` by a hook or program status, with no pending decision
    (or, on a hooked pane, by the screen once a dialog no hook reported left it)."""
    return (
        pane.live
        and pane.lifecycle == Lifecycle.WORKING
        and (
            pane.lifecycle_source in ("hook", PROGRAM_STATUS)
            or (pane.hooked and pane.lifecycle_source == SCREEN)
        )
        and pane.pending_decision is None
    )


def recovery_due(
    evidence_since: float | None, last_signal_at: float | None, n: float, now: float
) -> bool:
    """Fire when evidence and silence both lasted ``n`` seconds (``n == 0`` disables)."""
    if n <= 0 or evidence_since is None:
        return False
    quiet_since = last_signal_at if last_signal_at is not None else evidence_since
    return now - evidence_since >= n and now - quiet_since >= n


def recover(pane: Pane, *, now: float) -> list[Effect]:
    """Stuck-working recovery fires: ``done`` + ``unread`` from source ``recovery`` (§3.8).

    ``hooked`` and the authority are unchanged.
    """
    pane.last_message = RECOVERY_MESSAGE
    effects: list[Effect] = [MarkDirty()]
    return effects + _turn_done(pane, RECOVERY, now)


# ---------------------------------------------------------------- turn over on screen (issue 11)

SETTLE_S = 1.0
SETTLE_MESSAGE = "turn interrupted"


def settle_candidate(pane: Pane) -> bool:
    """A live hooked pane left ``working`` (hook/program status) or ``blocked`` by a hook: the
    states an agent that sends no hook for Esc or for "No" in its own dialog leaves behind."""
    if not (pane.live and pane.hooked):
        return False
    if pane.lifecycle == Lifecycle.WORKING:
        return pane.lifecycle_source in ("hook", PROGRAM_STATUS)
    return pane.lifecycle == Lifecycle.BLOCKED and pane.lifecycle_source == "hook"


def settle(pane: Pane, *, now: float) -> list[Effect]:
    """The agent's own screen shows its turn is over (an ``ends_turn`` idle rule held for
    ``SETTLE_S`` with no hook): Esc while working, or the person answered the agent's own
    dialog with "No" (issue 11 items 1, 2). The pane becomes ``idle`` from source ``screen``;
    a pending decision is cleared (its waiter ends) and a hook-raised requirement withdrawn.
    The person acted at the terminal, so nothing is marked ``unread`` and nothing alerts.
    """
    effects = clear_decision(pane, "moved_on")
    if pane.attention in (Attention.PERMISSION_REQUIRED, Attention.INPUT_REQUIRED):
        effects += clear_attention(pane, SCREEN)
    if pane.lifecycle == Lifecycle.WORKING:
        effects += _message(pane, SETTLE_MESSAGE)
    return effects + set_lifecycle(pane, Lifecycle.IDLE, SCREEN, now=now)


# ---------------------------------------------------------------- held screen evidence (issue 11)

# An idle winner must hold this long before it ends a screen-driven turn: an agent that
# clears its screen and draws it again mid-turn shows a blank (idle fallback) screen for a
# moment, which is no evidence the turn is over (issue 11 item 11).
IDLE_HOLD_S = 1.0
# A ``when_hooked`` dialog must win this long with no hook before a hooked pane reads blocked:
# hooks that keep coming say the agent is past it (issue 11 item 11).
DIALOG_HOLD_S = 3.0


def holds_idle(pane: Pane, state: str | None) -> bool:
    """True when the screen's ``state`` would end a turn or a dialog (``working``/``blocked`` →
    idle or done), so it must hold ``IDLE_HOLD_S`` first."""
    return state == "idle" and pane.lifecycle in (Lifecycle.WORKING, Lifecycle.BLOCKED)


def dialog_candidate(pane: Pane) -> bool:
    """A live hooked pane whose screen may show a dialog its hooks do not report: ``working``
    (from a hook, program status or the screen), between turns (``idle``/``done``/``unknown``
    with no pending decision: Gemini CLI's sign-in after its ``SessionStart`` hook), or
    ``blocked`` by the screen."""
    if not (pane.live and pane.hooked):
        return False
    if pane.lifecycle == Lifecycle.WORKING:
        return pane.lifecycle_source in ("hook", PROGRAM_STATUS, SCREEN)
    if pane.lifecycle in _BETWEEN_TURNS:
        return pane.pending_decision is None
    return pane.lifecycle == Lifecycle.BLOCKED and pane.lifecycle_source == SCREEN


_BETWEEN_TURNS = (Lifecycle.IDLE, Lifecycle.DONE, Lifecycle.UNKNOWN)


def dialog_left(pane: Pane, *, now: float) -> list[Effect]:
    """A dialog the screen made a hooked pane ``blocked`` for is gone (the person answered it
    at the terminal): its "needs input" is withdrawn; a dialog inside a turn lets the turn go
    on (``working``, source ``screen``) until the agent's next hook, one that came up between
    turns leaves the pane ``idle``."""
    between = pane.last_lifecycle in _BETWEEN_TURNS and not pane.dialog_in_turn
    after = Lifecycle.IDLE if between else Lifecycle.WORKING
    return withdraw(pane, SCREEN) + set_lifecycle(pane, after, SCREEN, now=now)
