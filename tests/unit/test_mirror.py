"""``core.mirror`` reads another host's records (issue 16 "Bad input"): whatever a hostile
remote daemon sends, ``clean_pane`` / ``clean_decision`` return a record that is safe to
show and to send on, or raise ``ValueError`` — nothing else.

Safe means: ids plain and prefixed with the host, every string free of escapes, C0/C1
controls (but newline and tab in multi-line text) and invisible format characters, text
within its cap, enums known values, the record encodable as strict JSON (no NaN, no
infinity), and nothing a remote could make this daemon run (resume commands, config
directories) kept.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signaltty.core import limits, mirror
from signaltty.core.states import Attention, Lifecycle

PANE_KEYS = (
    "id", "workspace_id", "argv", "cwd", "launch_cwd", "created_at", "last_activity_at",
    "title", "label", "pty_size", "live", "restore_state", "agent", "lifecycle",
    "last_lifecycle", "lifecycle_since", "lifecycle_source", "last_run_secs", "attention",
    "attention_since", "last_message", "pending_decision", "last_seen_at",
)  # fmt: skip
DECISION_KEYS = (
    "id", "prompt", "options", "received_at", "answerable", "native", "agent", "tool_name",
    "deadline",
)  # fmt: skip
# values that broke readers before, and the real ones a field holds
HOSTILE = (
    "pane_1", "ws_1", "dec_1", "../x", "a/b", "", "-", "\x1b]0;t\x07\x1b[2J", "\x9b31m",
    "\u202eevil\u202c", "zero\u200bwidth\ufeff", "<b>x</b><a href='u'>y</a>&amp;", "\ud800",
    "x" * 20_000, "live", "exited", "working", "permission_required", "RESUMABLE", "claude",
    "1970-01-01T00:00:00Z", "9998-12-31T23:59:59-23:59", "0000-00-00", "NaN", "1e999",
)  # fmt: skip
NUMBERS = (0, -1, 2**31, 2**80, -(2**63), 1e308, float("inf"), float("-inf"), float("nan"))
leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(NUMBERS),
    st.integers(),
    st.floats(),
    st.text(max_size=40),
    st.sampled_from(HOSTILE),
)
value = st.recursive(
    leaf,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(("id", "label", "state", "code", "cols", "rows", "kind")) | st.text(),
            inner,
            max_size=4,
        )
    ),
    max_leaves=16,
)
decisions = st.fixed_dictionaries({}, optional=dict.fromkeys(DECISION_KEYS, value))
panes = st.fixed_dictionaries(
    {"id": st.sampled_from(("pane_1", "../x", 7)) | value, "workspace_id": st.just("ws_1") | value},
    optional={k: value for k in PANE_KEYS if k not in ("id", "workspace_id")}
    | {"pending_decision": decisions | value},
)
FORBIDDEN = (
    {chr(c) for c in range(0x20) if chr(c) not in "\n\t"}
    | {chr(0x7F)}
    | {chr(c) for c in range(0x80, 0xA0)}
)
FAST = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


def strings(v: Any) -> Iterator[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)


def assert_clean(wire: dict[str, Any]) -> None:
    json.dumps(wire, allow_nan=False)  # strict JSON: no NaN or infinity anywhere
    for text in strings(wire):
        assert not set(text) & FORBIDDEN, repr(text[:80])
        assert all(unicodedata.category(c) not in ("Cf", "Cs") for c in text), repr(text[:80])
        assert len(text) <= mirror.MAX_PROMPT + 1


def check_pane(d: object) -> None:
    try:
        pane = mirror.clean_pane("devbox", d)
    except ValueError:
        return
    wire = pane.to_wire()
    assert_clean(wire)
    assert pane.id.startswith("devbox/")
    assert mirror.split_id(pane.id) is not None
    assert mirror.split_id(pane.workspace_id) is not None
    assert pane.lifecycle in Lifecycle
    assert pane.attention in Attention
    assert len(pane.title) <= limits.MAX_TITLE + 1
    assert pane.label is None or len(pane.label) <= limits.MAX_LABEL + 1
    assert len(pane.argv) <= mirror.MAX_ARGV
    assert limits.COLS_MIN <= pane.cols <= limits.COLS_MAX
    assert pane.exit_code is None or type(pane.exit_code) is int
    # nothing this daemon could be made to run or resume
    assert pane.agent.resume_argv is None
    assert pane.agent.config_env == {}
    assert pane.agent.launch_prefix == []
    if pane.pending_decision is not None:
        assert len(pane.pending_decision.options) <= mirror.MAX_OPTIONS


def check_decision(d: object) -> None:
    try:
        dec = mirror.clean_decision(d)
    except ValueError:
        return
    assert_clean(dec.to_wire())
    assert mirror.remote_id(dec.id, "decision id") == dec.id
    assert len(dec.options) <= mirror.MAX_OPTIONS


@FAST
@given(panes)
def test_any_pane_record_is_cleaned_or_refused(d: dict[str, Any]) -> None:
    check_pane(d)


@FAST
@given(value)
def test_any_value_as_a_pane(d: Any) -> None:
    check_pane(d)


@FAST
@given(decisions | value)
def test_any_decision_is_cleaned_or_refused(d: Any) -> None:
    check_decision(d)


def test_deep_nesting_is_refused_not_crashing() -> None:
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises((ValueError, RecursionError)):
        mirror.clean_pane("devbox", {"id": "pane_1", "workspace_id": "ws_1", "title": deep})


@pytest.mark.parametrize(
    ("field", "bad"),
    [
        ("id", "../x"),
        ("id", "a/b"),
        ("id", "p" * 129),
        ("workspace_id", "../../etc"),
        ("lifecycle", "flying"),
        ("attention", {"x": 1}),
        ("restore_state", "MAYBE"),
        ("pty_size", {"cols": 1e999}),
        ("live", "yes"),
        ("argv", "rm -rf /"),
        ("pending_decision", {"id": "../d"}),
    ],
)
def test_a_mistyped_field_refuses_the_record(field: str, bad: Any) -> None:
    with pytest.raises(ValueError, match=r"not|unreadable"):
        mirror.clean_pane("devbox", {"id": "pane_1", "workspace_id": "ws_1", field: bad})


def test_text_is_sanitized_and_options_need_an_id() -> None:
    evil = "\x1b]0;owned\x07\u202egnp.exe\u202c zero\u200bwidth <b>b</b>"
    dec = mirror.clean_decision(
        {
            "id": "dec_1",
            "prompt": evil,
            "tool_name": evil,
            "options": [{"label": "no id"}, {"id": "once", "label": evil}, "x", {"id": 5}],
        }
    )
    assert dec.options == [{"id": "once", "label": "gnp.exe zerowidth <b>b</b>"}]
    assert dec.prompt == "gnp.exe zerowidth <b>b</b>"  # markup is escaped where it is shown
    pane = mirror.clean_pane(
        "devbox",
        {
            "id": "pane_1",
            "workspace_id": "ws_1",
            "title": evil,
            "live": {"state": "exited", "code": True},
        },
    )
    assert pane.title == "gnp.exe zerowidth <b>b</b>"
    assert pane.exit_code is None  # true is no exit code
