"""A damaged or hostile ``snapshot.json`` never stops the real daemon (issue 10 §8): it is
moved aside byte for byte as ``snapshot.corrupt-<ts>``, the daemon starts fresh and answers,
and the next start is clean (no exit-1 loop)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DaemonProc

GOOD_WS = {"id": "ws_1", "name": "Kept", "cwd": "/tmp", "handle": "kept", "created_at": "2026-01-01T00:00:00.000Z"}
GOOD_PANE = {"id": "pane_1", "workspace_id": "ws_1", "argv": ["sh"], "live": {"state": "exited", "code": 0},
             "lifecycle": "done", "attention": "none", "created_at": "2026-01-01T00:00:01.000Z"}


def _raw(version_json: str) -> bytes:
    return ('{"version": ' + version_json + ', "workspaces": [' + json.dumps(GOOD_WS) + "]}").encode()


BAD_VERSIONS = {
    "slash": _raw('"a/b"'),
    "nul": _raw('"a\\u0000b"'),
    "lone-surrogate": _raw('"\\ud800"'),
    "10kB": _raw(json.dumps("v" * 10240)),
    "true": _raw("true"),
    "huge-int": _raw("1" + "0" * 5000),
}


def start_with(tmp_root, raw: bytes) -> DaemonProc:
    d = DaemonProc(tmp_root)
    d.state_dir.mkdir(mode=0o700)
    (d.state_dir / "snapshot.json").write_bytes(raw)
    d.start()  # raises if the daemon exits
    return d


def asides(d: DaemonProc) -> list:
    return sorted(d.state_dir.glob("snapshot.corrupt-*"))


def restart_is_clean(d: DaemonProc, kept: int) -> None:
    d.stop()
    d.start()
    try:
        assert d.call("server.status")["pid"] == d.proc.pid
        assert len(asides(d)) == kept  # the snapshot saved at shutdown read back cleanly
    finally:
        d.stop()


@pytest.mark.parametrize("raw", BAD_VERSIONS.values(), ids=BAD_VERSIONS.keys())
def test_bad_version_is_moved_aside_and_the_daemon_starts_fresh(tmp_root, raw):
    d = start_with(tmp_root, raw)
    try:
        assert d.call("workspace.list")["workspaces"] == []
        [aside] = asides(d)
        assert aside.read_bytes() == raw
    except BaseException:
        d.stop()
        raise
    restart_is_clean(d, kept=1)


def test_workspace_id_array_is_set_aside_with_the_original_kept(tmp_root):
    """The workspace with an array id cannot be restored; the file's bytes are kept as
    ``snapshot.corrupt-<ts>`` (the next save rewrites ``snapshot.json`` without it)."""
    raw = json.dumps({"version": 1, "workspaces": [{"id": ["ws_9"], "name": "bad"}]}).encode()
    d = start_with(tmp_root, raw)
    try:
        assert d.call("workspace.list")["workspaces"] == []
        [aside] = asides(d)
        assert aside.read_bytes() == raw
    except BaseException:
        d.stop()
        raise
    restart_is_clean(d, kept=1)


def test_bad_records_beside_good_ones_lose_nothing(tmp_root):
    doc = {"version": 1, "workspaces": [{"id": ["ws_9"]}, GOOD_WS, {"id": {"x": 1}}], "panes": [GOOD_PANE]}
    raw = json.dumps(doc).encode()
    d = start_with(tmp_root, raw)
    try:
        names = [w["name"] for w in d.call("workspace.list")["workspaces"]]
        assert names == ["Kept"]
        assert [p["id"] for p in d.call("pane.list")["panes"]] == ["pane_1"]
        [aside] = asides(d)
        assert aside.read_bytes() == raw
    except BaseException:
        d.stop()
        raise
    restart_is_clean(d, kept=1)
