"""The layout rules of ``signaltty top`` (signaltty/cli/top_view.py): fitting, the permission
summary, the order of "next unread" and the small-terminal view (issue 13 §10)."""

from __future__ import annotations

import json
import time

import pytest
from prompt_toolkit.utils import get_cwidth

from signaltty.cli.top_view import TopState, age, fit, permission_summary, render


def _pane(
    pid: str, attention: str = "none", activity: str = "2026-01-01T00:00:00Z", **extra
) -> dict:
    return {
        "id": pid,
        "workspace_id": "ws_1",
        "title": "t-" + pid,
        "lifecycle": "working",
        "attention": attention,
        "last_activity_at": activity,
        "lifecycle_since": "2026-01-01T00:00:00Z",
        **extra,
    }


def _text(lines) -> list[str]:
    return ["".join(text for _style, text in line) for line in lines]


@pytest.mark.parametrize("width", [1, 2, 5, 9])
def test_fit_counts_terminal_cells(width):
    for text in ("abcdefghijkl", "界界界界界界", "a界b界c界d"):
        out = fit(text, width)
        assert get_cwidth(out) == width
    assert fit("ab", 4) == "ab  "
    assert fit("abcdef", 4) == "abc…"


def test_age():
    assert [age(x) for x in (-3, 5, 125, 7300, 200000)] == ["0s", "5s", "2m", "2h", "2d"]


def test_permission_summary_shows_what_is_approved():
    prompt = "Allow Bash?\n" + json.dumps(
        {"command": "rm -rf build/\x1b]0;pwned\x07\u202e\nrm -rf /"}, indent=2
    )
    assert permission_summary({"tool_name": "Bash", "prompt": prompt}) == "Bash: rm -rf build/ …"
    assert (
        permission_summary(
            {"tool_name": "Edit", "tool_input": {"file_path": "/etc/hosts", "old": "x"}}
        )
        == "Edit: /etc/hosts"
    )
    assert permission_summary({"tool_name": "X", "tool_input": {"a": 1}}) == 'X: {"a":1}'
    # a prompt cut at 8 KiB is no longer JSON: its text is still shown
    cut = 'Allow Bash?\n{\n  "command": "make'
    assert permission_summary({"tool_name": "Bash", "prompt": cut}) == "Bash: make"
    assert permission_summary({"prompt": "Run the migration?\nyes/no"}) == "Run the migration?"


def test_next_unread_follows_focus_order_and_cycles():
    st = TopState()
    st.set_panes(
        [
            _pane("a"),
            _pane("b", "unread", "2026-01-01T00:00:05Z"),
            _pane("c", "permission_required", "2026-01-01T00:00:01Z"),
            _pane("d", "unread", "2026-01-01T00:00:09Z"),
        ]
    )
    assert [st.next_unread() for _ in range(4)] == ["c", "d", "b", "c"]
    st.set_panes([_pane("a")])
    assert st.next_unread() is None
    assert st.selected == "a"


def test_selection_survives_refresh_and_removal():
    st = TopState()
    st.set_panes([_pane("a"), _pane("b"), _pane("c")])
    st.move(2)
    assert st.selected == "c"
    st.set_panes([_pane("x"), _pane("a"), _pane("b"), _pane("c")])
    assert st.selected == "c"
    st.set_panes([_pane("x"), _pane("a")])
    assert st.selected == "a"  # the row it was on is gone: the nearest one


@pytest.mark.parametrize(("cols", "rows"), [(20, 30), (39, 24), (80, 7), (5, 1), (1, 1)])
def test_small_terminals_get_a_clear_short_view(cols, rows):
    st = TopState()
    st.set_panes([_pane("a", "unread", title="界" * 50)])
    lines = _text(render(st, cols, rows, 1.8e9))
    assert 1 <= len(lines) <= rows
    assert all(get_cwidth(x) <= cols for x in lines)
    assert lines[0].startswith("terminal too small"[: cols - 1])


@pytest.mark.parametrize(("cols", "rows"), [(40, 8), (80, 24), (100, 30), (250, 60)])
def test_table_fits_and_keeps_the_selection_visible(cols, rows):
    st = TopState()
    st.workspaces = {"ws_1": "proj\x1b[31m"}
    panes = [_pane(f"p{i}", last_message="line one\nline two \u202eevil") for i in range(100)]
    st.set_panes(panes)
    st.move(73)
    lines = _text(render(st, cols, rows, 1.8e9))
    assert len(lines) == rows
    assert all(get_cwidth(x) <= cols for x in lines)
    selected = [x for x in lines if x.startswith("> ")]
    assert len(selected) == 1
    assert "t-p73" in selected[0]
    assert not any("\x1b" in x or "\u202e" in x or "\n" in x for x in lines)


@pytest.mark.parametrize(
    ("restore", "live", "shown", "why"),
    [
        ("EXITED", {"state": "exited", "code": 3}, "exited 3", "has exited (code 3)"),
        ("RESTORED", {"state": "exited", "code": None}, "restored", "was restored"),
        ("RESUMABLE", {"state": "exited", "code": None}, "resumable", "signaltty pane resume pane_dead0"),
    ],
)
def test_dead_panes_look_dead_and_age_from_their_end(restore, live, shown, why):
    """A dead pane's AGE is the time since it ended, as for any lifecycle (a new-user pass
    found every dead pane at 0s when it was frozen at its last output)."""
    from signaltty.cli.top_view import why_not_attach

    ended = 1.8e9
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ended))
    dead = _pane("pane_dead0001", lifecycle="done", restore_state=restore, live=live,
                 lifecycle_since=stamp, last_activity_at=stamp)
    alive = _pane("pane_live0001", restore_state="LIVE", live={"state": "live"})
    st = TopState()
    st.set_panes([dead, alive])
    for now, shown_age in ((ended + 300, " 5m "), (ended + 7200, " 2h ")):
        row = next(x for x in _text(render(st, 100, 30, now)) if "t-pane_dead0001" in x)
        assert shown in row, row
        assert shown_age in row, row
        assert "done" not in row, row
    assert why in why_not_attach(dead)
    assert "cannot attach" in why_not_attach(dead)
    assert why_not_attach(alive) is None
