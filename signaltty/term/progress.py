"""OSC 9;4 (ConEmu) progress payload parser (pure; Spec: agents.md §7.3, states.md §3.4).

Layer rule: ``term`` parsers do no I/O; they may import ``core`` and the standard library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class ProgressState(StrEnum):
    """OSC 9;4 progress state; ``.value`` is the wire string (protocol.md §4 OscProgress)."""

    NONE = "none"
    NORMAL = "normal"
    ERROR = "error"
    INDETERMINATE = "indeterminate"
    PAUSED = "paused"


_STATES: Final = (
    ProgressState.NONE,
    ProgressState.NORMAL,
    ProgressState.ERROR,
    ProgressState.INDETERMINATE,
    ProgressState.PAUSED,
)
# "4;<st>" or "4;<st>;<pct>": st 0–4, pct at most three digits, optionally negative.
_PROGRESS_RE: Final = re.compile(r"4;([0-4])(?:;(-?[0-9]{1,3}))?")


@dataclass(frozen=True, slots=True)
class ParsedProgress:
    """A valid OSC 9;4 payload.

    Attributes:
        state: the progress state (0 none … 4 paused).
        percent: 0–100, or None when absent or out of range (e.g. ``-1``, ``150``).
        raw: the payload after ``9;``, e.g. ``"4;1;42"``.
    """

    state: ProgressState
    percent: int | None
    raw: str


def parse_progress(payload: str) -> ParsedProgress | None:
    """Parse the text after ``OSC 9;`` as a ConEmu progress report.

    Args:
        payload: the OSC payload after ``9;``, e.g. ``"4;1;50"``.

    Returns:
        ParsedProgress, or None when the payload is not a valid ``4;<st>[;<pct>]``
        (invalid payloads are ignored, so earlier evidence stays).

    Raises:
        Nothing.

    Spec: agents.md §7.3; protocol.md §4 "OscProgress".
    """
    match = _PROGRESS_RE.fullmatch(payload)
    if match is None:
        return None
    pct_text = match.group(2)
    pct = int(pct_text) if pct_text is not None else None
    percent = pct if pct is not None and 0 <= pct <= 100 else None
    return ParsedProgress(_STATES[int(match.group(1))], percent, payload)
