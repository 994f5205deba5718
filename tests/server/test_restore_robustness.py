"""Snapshots written by hand or damaged on disk never stop the daemon (desktop-and-service.md
§8.3): bad records are skipped, values are clamped and cleaned, nothing escapes the state dir."""

from __future__ import annotations

import json

from tests.conftest import DaemonProc

GOOD_WS = {"id": "ws_1", "name": "W", "cwd": "/tmp", "handle": "base", "created_at": "2026-01-01T00:00:00.000Z"}


def pane(pid: str, **kw) -> dict:
    d = {"id": pid, "workspace_id": "ws_1", "argv": ["x"], "live": {"state": "exited", "code": 0},
         "lifecycle": "done", "attention": "none", "created_at": "2026-01-01T00:00:01.000Z"}
    d.update(kw)
    return d


def start_with(tmp_root, doc) -> DaemonProc:
    d = DaemonProc(tmp_root)
    d.state_dir.mkdir(mode=0o700)
    (d.state_dir / "snapshot.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    d.start()
    return d


def test_wrong_container_types(tmp_root):
    d = start_with(tmp_root, {"version": 1, "workspaces": 5, "panes": "x", "notifications": 3})
    try:
        assert d.call("workspace.list")["workspaces"] == []
    finally:
        d.stop()


def test_bad_values_are_skipped_or_clamped(tmp_root):
    doc = {
        "version": 1,
        "workspaces": [GOOD_WS, dict(GOOD_WS, id="ws_2", handle="base", name="Evil\x1b]0;x\x07 name" + "n" * 200),
                       dict(GOOD_WS, id="ws_1", name="duplicate id")],
        "panes": [
            pane("pane_inf", pty_size={"cols": 1e999, "rows": 3}),
            pane("pane_neg", pty_size={"cols": -5, "rows": -5}),
            pane("pane_huge", pty_size={"cols": 100000, "rows": 100000}),
            pane("../../../../tmp/EVIL"),
            pane("pane_year", created_at="9999-12-31T23:59:59-23:59"),
            pane("pane_gen", agent={"kind": "claude", "session_generation": 1e999}),
            pane("pane_neg"),
            pane("pane_label", label="\x1b[2J\u202eboo\x00"),
        ],
        "notifications": [{"id": "n1", "title": "\ud800x"}],
    }
    d = start_with(tmp_root, json.dumps(doc))
    try:
        panes = {p["id"]: p for p in d.call("pane.list")["panes"]}
        assert "../../../../tmp/EVIL" not in panes
        assert "pane_inf" not in panes
        assert "pane_gen" not in panes
        assert panes["pane_neg"]["pty_size"] == {"cols": 20, "rows": 5}
        assert panes["pane_huge"]["pty_size"] == {"cols": 500, "rows": 200}
        assert d.call("pane.read", {"pane_id": "pane_huge", "mode": "screen"})["text"] == ""
        assert panes["pane_label"]["label"] == "boo"
        wss = d.call("workspace.list")["workspaces"]
        assert len(wss) == 2
        assert len({w["handle"] for w in wss}) == 2
        assert all("\x1b" not in w["name"] and len(w["name"]) <= 100 for w in wss)
        ws = d.call("workspace.get", {"workspace_id": "ws_1"})["workspace"]
        assert ws["pane_ids"].count("pane_neg") == 1
        assert d.call("server.status")["pid"] == d.proc.pid
    finally:
        assert d.stop() == 0
    saved = json.loads((d.state_dir / "snapshot.json").read_text())
    assert len(saved["panes"]) == len({p["id"] for p in saved["panes"]})
    assert not (tmp_root.parent / "EVIL.tail").exists()


def test_oversized_tail_is_read_capped(tmp_root):
    doc = {"version": 1, "workspaces": [GOOD_WS], "panes": [pane("pane_t")]}
    d = DaemonProc(tmp_root)
    (d.state_dir / "history").mkdir(parents=True, mode=0o700)
    (d.state_dir / "snapshot.json").write_text(json.dumps(doc))
    (d.state_dir / "history" / "pane_t.tail").write_text("old line\n" * 2_000_000 + "LAST LINE")
    d.start()
    try:
        text = d.call("pane.read", {"pane_id": "pane_t", "lines": 5})["text"]
        assert text.endswith("LAST LINE")
    finally:
        d.stop()
