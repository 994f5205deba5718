"""parse_progress: OSC 9;4 payloads (Spec: agents.md §7.3, protocol.md §4 OscProgress)."""

from __future__ import annotations

import pytest

from signaltty.term.progress import ParsedProgress, ProgressState, parse_progress

VALID = [
    ("4;1;50", ProgressState.NORMAL, 50),
    ("4;0;0", ProgressState.NONE, 0),
    ("4;0", ProgressState.NONE, None),
    ("4;2;100", ProgressState.ERROR, 100),
    ("4;3", ProgressState.INDETERMINATE, None),
    ("4;4;7", ProgressState.PAUSED, 7),
    ("4;1;-1", ProgressState.NORMAL, None),
    ("4;1;101", ProgressState.NORMAL, None),
    ("4;1;999", ProgressState.NORMAL, None),
    ("4;1;-99", ProgressState.NORMAL, None),
    ("4;1;007", ProgressState.NORMAL, 7),
]

INVALID = [
    "",
    "4",
    "4;",
    "4;5",
    "4;5;10",
    "4;01;5",
    "4;1;",
    "4;1;1000",
    "4;1;5a",
    "4;1;50;",
    "4;1;+5",
    "4;1;--1",
    " 4;1;50",
    "4;1;50\n",
    "4;1;\u0665",  # Arabic-Indic digit five: only ASCII digits count
    "3;1;50",
    "9;4;1;50",
]


@pytest.mark.parametrize(("payload", "state", "percent"), VALID, ids=[v[0] for v in VALID])
def test_valid(payload: str, state: ProgressState, percent: int | None) -> None:
    assert parse_progress(payload) == ParsedProgress(state, percent, payload)


@pytest.mark.parametrize("payload", INVALID, ids=repr)
def test_invalid(payload: str) -> None:
    assert parse_progress(payload) is None


def test_state_values_are_wire_strings() -> None:
    assert [s.value for s in ProgressState] == [
        "none",
        "normal",
        "error",
        "indeterminate",
        "paused",
    ]
