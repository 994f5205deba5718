"""``wait`` outcomes, baselines and predicates (pure, stdlib only; Spec: states.md §5, §9.9).

The store keeps, per pane, ``seqs``: the seq of the last transition to each value, keyed
``"lifecycle:<value>"`` / ``"attention:<value>"``, the last transition on each axis
(``"lifecycle"``, ``"attention"``) and ``"exited"`` for the current process instance's exit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from signaltty.core.model import Pane
from signaltty.core.states import Attention, Lifecycle

LIFECYCLE_VALUES = frozenset(v.value for v in Lifecycle)
ATTENTION_VALUES = frozenset(v.value for v in Attention)
ALIASES = {"seen": "none", "attention_cleared": "none"}
OUTCOMES = LIFECYCLE_VALUES | ATTENTION_VALUES | frozenset(ALIASES) | {"exited"}


class WaitError(ValueError):
    """A wait request the rules refuse; ``code`` is the wire code
    (``BAD_PARAMS``/``IDENTITY_CHANGED``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Satisfied:
    """A satisfied wait: the outcome as the caller spelled it and the transition's seq."""

    outcome: str
    transition_seq: int


def parse_until(until: Any) -> list[str]:
    """Normalize ``until`` (a string or non-empty array) to a list of outcomes.

    Raises:
        WaitError: ``BAD_PARAMS`` for an empty list, a non-string or an unknown outcome.
    """
    items = [until] if isinstance(until, str) else until
    if not isinstance(items, list) or not items:
        raise WaitError("BAD_PARAMS", "until must be an outcome or a non-empty list of outcomes")
    for item in items:
        if not isinstance(item, str) or item not in OUTCOMES:
            raise WaitError("BAD_PARAMS", f"unknown wait outcome: {item!r}")
    return list(items)


def baseline(pane: Pane, seqs: dict[str, int]) -> dict[str, Any]:
    """The ``wait_baseline`` object of ``pane.get`` (protocol.md §4 WaitBaseline)."""
    return {
        "pane_id": pane.id,
        "process_instance": pane.process_instance,
        "agent_session_id": pane.agent.agent_session_id,
        "session_generation": pane.agent.session_generation,
        "lifecycle_seq": seqs.get("lifecycle", 0),
        "attention_seq": seqs.get("attention", 0),
    }


def check_baseline(pane: Pane, seqs: dict[str, int], after: Any) -> tuple[int, int]:
    """Validate a caller's baseline against the pane; return ``(lifecycle_seq, attention_seq)``.

    Raises:
        WaitError: ``BAD_PARAMS`` (wrong pane, empty instance, malformed, seq ahead of the
            pane) or ``IDENTITY_CHANGED`` (other process instance, other agent session).
    """
    if not isinstance(after, dict):
        raise WaitError("BAD_PARAMS", "after must be a wait_baseline object")
    if after.get("pane_id") != pane.id:
        raise WaitError("BAD_PARAMS", "baseline belongs to another pane")
    instance = after.get("process_instance")
    if not isinstance(instance, str) or not instance:
        raise WaitError("BAD_PARAMS", "baseline has no process_instance")
    values = [after.get(k, 0) for k in ("lifecycle_seq", "attention_seq", "session_generation")]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise WaitError("BAD_PARAMS", "baseline seqs and generation must be non-negative integers")
    lseq, aseq, generation = values
    if instance != pane.process_instance:
        raise WaitError("IDENTITY_CHANGED", "the pane runs another process instance")
    if generation != pane.agent.session_generation:
        raise WaitError("IDENTITY_CHANGED", "the agent session changed")
    sid = after.get("agent_session_id")
    if sid is not None and sid != pane.agent.agent_session_id:
        raise WaitError("IDENTITY_CHANGED", "the agent session changed")
    if lseq > seqs.get("lifecycle", 0) or aseq > seqs.get("attention", 0):
        raise WaitError("BAD_PARAMS", "baseline seq is ahead of the pane")
    return lseq, aseq


def evaluate(
    pane: Pane, seqs: dict[str, int], outcomes: list[str], lseq: int | None, aseq: int | None
) -> Satisfied | None:
    """Check outcomes in the caller's order; the first satisfied wins.

    Args:
        lseq, aseq: baseline seqs; ``None`` means "no baseline": the current state matches.
    """
    for outcome in outcomes:
        value = ALIASES.get(outcome, outcome)
        if outcome == "exited":
            if "exited" in seqs:
                return Satisfied(outcome, seqs["exited"])
            # A pane restored from a snapshot whose program had ended keeps the lifecycle its
            # exit gave it (``done``, ``failed``…) but has no exit seq from this daemon: it has
            # exited all the same (a new-user pass waited an hour on it).
            if lseq is None and (pane.lifecycle == Lifecycle.EXITED or not pane.live):
                return Satisfied(outcome, seqs.get("lifecycle:exited", 0))
            continue
        if value in LIFECYCLE_VALUES and outcome not in ALIASES:
            axis, current, base = "lifecycle", pane.lifecycle.value, lseq
        else:
            axis, current, base = "attention", pane.attention.value, aseq
        seq = seqs.get(f"{axis}:{value}", 0)
        if base is None:
            if current == value:
                return Satisfied(outcome, seq)
        elif seq > base:
            return Satisfied(outcome, seq)
    return None
