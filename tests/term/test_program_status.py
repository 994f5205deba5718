"""OSC 7501 report parsing and records (agents.md §7.4)."""

from __future__ import annotations

import base64

import pytest

from signaltty.core.model import iso
from signaltty.term.program_status import MAX_CHILDREN, Records, Report, parse_report


def b64(text: str, pad: bool = True) -> str:
    out = base64.b64encode(text.encode()).decode()
    return out if pad else out.rstrip("=")


@pytest.mark.parametrize("state", ["idle", "working", "blocked", "done", "error", "clear"])
def test_every_state_parses(state: str) -> None:
    assert parse_report(f"state={state}") == Report(state)


@pytest.mark.parametrize("payload", ["", "state=bogus", "kind=permission", "state", "STATE=idle", "state=Idle"])
def test_missing_or_unknown_state_discards_the_report(payload: str) -> None:
    assert parse_report(payload) is None


def test_pairs_without_equals_and_unknown_keys_are_ignored_last_value_wins() -> None:
    rep = parse_report("junk:state=idle:colour=red:state=working:progress=5:progress=40")
    assert rep == Report("working", progress=40)


def test_kind_only_with_blocked_and_only_known_kinds() -> None:
    assert parse_report("state=blocked:kind=permission").kind == "permission"
    assert parse_report("state=blocked:kind=auth").kind == "auth"
    assert parse_report("state=blocked:kind=other").kind is None
    assert parse_report("state=working:kind=permission").kind is None


@pytest.mark.parametrize(
    ("raw", "state", "expected"),
    [("0", "working", 0), ("100", "blocked", 100), ("101", "working", None), ("-1", "working", None),
     ("1000", "working", None), ("4x", "working", None), ("50", "idle", None), ("50", "done", None)],
)
def test_progress_rules(raw: str, state: str, expected: int | None) -> None:
    rep = parse_report(f"state={state}:progress={raw}")
    assert rep is not None
    assert rep.progress == expected


def test_ids_validated_and_invalid_id_discards() -> None:
    assert parse_report("id=task/1:state=working").id == "task/1"
    assert parse_report("id=a/b/c/d/e/f/g/h:state=idle").id == "a/b/c/d/e/f/g/h"
    for bad in ["a/b/c/d/e/f/g/h/i", "x" * 33, "a//b", "bad id", "a/é", "/a"]:
        assert parse_report(f"id={bad}:state=working") is None, bad


def test_app_field() -> None:
    assert parse_report("state=idle:app=claude-code").app == "claude-code"
    assert parse_report("state=idle:app=" + "a" * 33).app is None
    assert parse_report("state=idle:app=bad app").app is None


def test_title_and_msg_base64_with_optional_padding() -> None:
    rep = parse_report(f"state=done:msg={b64('Tests passed', pad=False)}:title={b64('Build')}")
    assert rep is not None
    assert rep.msg == "Tests passed"
    assert rep.title == "Build"


@pytest.mark.parametrize(
    "value",
    ["!!notbase64!!", b64("two\nlines"), b64("bell\x07"), base64.b64encode(b"\xff\xfe").decode(),
     b64("x" * 193)],
)
def test_invalid_title_is_dropped_report_kept(value: str) -> None:
    rep = parse_report(f"state=working:title={value}")
    assert rep is not None
    assert rep.state == "working"
    assert rep.title is None


def test_msg_limit_is_2048_decoded_bytes() -> None:
    assert parse_report(f"state=done:msg={b64('m' * 2048)}").msg is not None
    over = parse_report(f"state=done:msg={b64('m' * 2049)}")
    assert over is not None
    assert over.msg is None


def test_sequence_longer_than_4096_bytes_is_discarded() -> None:
    assert parse_report("state=idle:" + "x" * 4100) is None


def test_text_is_sanitized() -> None:
    evil = b64("ok \u202e evil")
    rep = parse_report(f"state=done:msg={evil}")
    assert rep is not None
    assert "\u202e" not in (rep.msg or "")


def test_records_root_children_and_clear_descendants() -> None:
    rec = Records()
    rec.apply(Report("working", progress=10), 1.0)
    rec.apply(Report("working", id="task"), 2.0)
    rec.apply(Report("idle", id="task/1"), 3.0)
    rec.apply(Report("idle", id="tasks"), 4.0)
    wire = rec.to_wire(iso)
    assert wire is not None
    assert wire["state"] == "working"
    assert wire["progress"] == 10
    assert [c["id"] for c in wire["children"]] == ["task", "task/1", "tasks"]
    rec.apply(Report("clear", id="task"), 5.0)
    assert [c["id"] for c in rec.to_wire(iso)["children"]] == ["tasks"]
    rec.apply(Report("clear"), 6.0)
    assert not rec
    assert rec.to_wire(iso) is None


def test_children_capped_least_recently_updated_evicted() -> None:
    rec = Records()
    for i in range(MAX_CHILDREN):
        rec.apply(Report("working", id=f"c{i}"), float(i))
    rec.apply(Report("idle", id="c0"), 100.0)  # refreshed: now the most recent
    rec.apply(Report("working", id="new"), 101.0)
    ids = [c["id"] for c in rec.to_wire(iso)["children"]]
    assert len(ids) == MAX_CHILDREN
    assert "c1" not in ids
    assert "c0" in ids
    assert ids[-1] == "new"
    assert rec.to_wire(iso)["state"] is None  # children only: no root state
