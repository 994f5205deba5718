"""Fuzz of the snapshot reader (issue 10 §8): whatever ``snapshot.json`` holds, the only
failure is the documented ``CorruptSnapshot`` (which makes the loader move the file aside),
and whatever is restored can be saved and read back unchanged.

10⁵ cases go through the pure ``parse_snapshot`` (no I/O, so the run stays well under two
minutes); a smaller run drives ``load_snapshot`` on real files in a temp state dir and
checks that nothing is lost: a refused file is moved aside byte for byte, a partly
readable one is kept as a copy.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from signaltty.core.limits import COLS_MAX, COLS_MIN, ROWS_MAX, ROWS_MIN
from signaltty.server.persistence import (
    CorruptSnapshot,
    Restored,
    load_snapshot,
    parse_snapshot,
    serialize_snapshot,
)

ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")

# Values a hostile or damaged file may hold, biased towards the ones that broke readers
# before: path separators, NUL, lone surrogates, huge strings and numbers, wrong types.
HOSTILE_STR = (
    "", "/", "../../x", "a\x00b", "\ud800", "\udfff", "x" * 10240, "-", "--flag", "ws_1",
    "pane_1", "\x1b]0;t\x07", "1970-01-01T00:00:00Z", "9999-12-31T23:59:59-23:59", "live",
    "exited", "claude", "done", "permission_required", "RESUMABLE", "0000-00-00", "é\u202e",
)
HOSTILE_NUM = (0, 1, -1, 7, 2**31, 2**63, -(2**63), 10**30, 0.5, -0.0, 1e308, float("inf"),
               float("-inf"), float("nan"))
WS_IDS = ("ws_1", "ws_2")
PANE_IDS = ("pane_1", "pane_2", "pane_3")
TIMES = ("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01Z")

# Each field of a record: the values a real snapshot would hold there. A gene picks one of
# them, leaves the field out, or puts any hostile value in its place.
WORKSPACE_FIELDS: dict[str, tuple[Any, ...]] = {
    "id": WS_IDS, "name": ("W", "Evil\x1b[2J"), "handle": ("base", "a_b"), "cwd": ("/tmp", "rel"),
    "pane_ids": (["pane_1", "pane_2"], ["pane_3", "pane_3"], []), "created_at": TIMES,
}
PANE_FIELDS: dict[str, tuple[Any, ...]] = {
    "id": PANE_IDS, "workspace_id": WS_IDS, "argv": (["sh"], []), "cwd": ("/", "/tmp"),
    "created_at": TIMES, "title": ("t",), "label": ("l",),
    "pty_size": ({"cols": 80, "rows": 24}, {"cols": 9999, "rows": -3}, {"cols": 1e999}, {}, {"cols": 100}),
    "live": ({"state": "exited", "code": 0}, {"state": "live"}),
    "restore_state": ("EXITED", "RESUMABLE"), "lifecycle": ("done", "working"),
    "attention": ("none", "unread"), "last_lifecycle": ("idle",), "last_run_secs": (1.5,),
    "agent": ({"kind": "claude", "agent_session_id": "s1", "resume_argv": ["claude", "-r", "s1"]},
              {"kind": "codex", "session_generation": 2}, {"config_env": {"A": "b"}}, {},
              {"kind": "codex", "session_generation": 1e999}),
    "pending_decision": ({"id": "d1", "prompt": "p", "options": [{"id": "allow"}]},),
}
NOTIFICATION_FIELDS: dict[str, tuple[Any, ...]] = {
    "id": ("n1",), "title": ("t",), "body": ("b",), "severity": ("info", "error"),
    "pane_id": PANE_IDS, "created_at": TIMES, "read_at": TIMES,
}


class Genes:
    """Turns one hypothesis-drawn byte string into a document, fast.

    Drawing a nested structure through hypothesis strategies costs ~70 draws and ~4 ms a
    case; one ``binary`` draw decoded here costs ~0.3 ms, which is what lets 10⁵ cases run
    in well under two minutes. Hypothesis still shrinks: shorter and smaller bytes decode
    to simpler documents (an exhausted genome reads as 0: the plainest choice everywhere).
    """

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.at = 0

    def next(self) -> int:
        if self.at >= len(self.raw):
            return 0
        self.at += 1
        return self.raw[self.at - 1]

    def pick(self, options: Any) -> Any:
        return options[self.next() % len(options)]

    def text(self) -> str:
        n = self.next() % 6
        # 16-bit code units: lone surrogates (D800-DFFF) and C0/C1 controls come up often.
        return "".join(chr((self.next() << 8 | self.next()) % 0x10000) for _ in range(n))

    def scalar(self) -> Any:
        g = self.next() % 8
        if g == 0:
            return None
        if g == 1:
            return bool(self.next() & 1)
        if g == 2:
            return self.next() - 128
        if g == 3:
            return self.pick(HOSTILE_NUM)
        if g in (4, 5):
            return self.pick(HOSTILE_STR)
        return self.text()

    def value(self, depth: int = 2) -> Any:
        g = self.next() % 5
        if depth <= 0 or g < 3:
            return self.scalar()
        n = self.next() % 4
        if g == 3:
            return [self.value(depth - 1) for _ in range(n)]
        return {self.text() if self.next() & 1 else self.pick(HOSTILE_STR): self.value(depth - 1) for _ in range(n)}

    def record(self, fields: dict[str, tuple[Any, ...]]) -> Any:
        if self.next() % 16 == 15:
            return self.value()  # not even an object
        out: dict[str, Any] = {}
        for key, plausible in fields.items():
            g = self.next() % 16
            if g < 12:
                out[key] = json.loads(json.dumps(self.pick(plausible)))  # a fresh copy
            elif g == 15:
                out[key] = self.value()
            # else: the field is missing
        return out

    def records(self, fields: dict[str, tuple[Any, ...]]) -> Any:
        g = self.next() % 8
        if g == 7:
            return self.value()  # not a list
        return [self.record(fields) for _ in range(g % 4)]

    def document(self) -> Any:
        if self.next() % 16 == 15:
            return self.value(3)  # not an object
        doc: dict[str, Any] = {}
        g = self.next() % 8
        if g < 6:
            doc["version"] = 1
        elif g == 6:
            doc["version"] = self.scalar()
        for key, fields in (("workspaces", WORKSPACE_FIELDS), ("panes", PANE_FIELDS),
                            ("notifications", NOTIFICATION_FIELDS)):
            if self.next() % 8 != 7:
                doc[key] = self.records(fields)
        if self.next() % 8 == 7:
            doc[self.pick(HOSTILE_STR)] = self.value()
        return doc


def snapshot_file(genome: bytes) -> bytes:
    """The bytes of a ``snapshot.json``: a document, maybe damaged, or the genome itself."""
    genes = Genes(genome)
    mode = genes.next() % 16
    if mode == 15:
        return genome  # raw garbage
    doc = genes.document()
    # Lone surrogates reach a file as \u escapes (ensure_ascii) or as bytes that are not UTF-8.
    raw = json.dumps(doc, ensure_ascii=bool(genes.next() & 1)).encode("utf-8", "surrogatepass")
    if mode == 14 and raw:  # damaged on disk: cut short, or one byte changed
        at = (genes.next() << 8 | genes.next()) % len(raw)
        raw = raw[:at] if genes.next() & 1 else raw[:at] + bytes([genes.next()]) + raw[at + 1 :]
    return raw


GENOME = st.binary(max_size=400)


def check_refusal(exc: CorruptSnapshot) -> None:
    """A refused snapshot says why, and sets it aside under a known name."""
    assert str(exc)
    assert exc.aside == "corrupt" or re.fullmatch(r"unsupported-v\d{1,6}", exc.aside)


def check_restored(out: Restored) -> None:
    """What the reader gives back is clean enough to use and to save again."""
    assert isinstance(out, Restored)
    ws_ids = [w.id for w in out.workspaces]
    assert len(set(ws_ids)) == len(ws_ids)
    assert all(ID.fullmatch(i) for i in ws_ids)
    pane_ids = [p.id for p in out.panes]
    assert len(set(pane_ids)) == len(pane_ids)
    for pane in out.panes:
        assert ID.fullmatch(pane.id)
        assert pane.workspace_id in ws_ids
        assert COLS_MIN <= pane.cols <= COLS_MAX
        assert ROWS_MIN <= pane.rows <= ROWS_MAX
    for ws in out.workspaces:
        mine = {p.id for p in out.panes if p.workspace_id == ws.id}
        assert set(ws.pane_ids) == mine, (ws.pane_ids, mine)
        assert len(ws.pane_ids) == len(set(ws.pane_ids))
    assert all(isinstance(e, str) and e for e in out.errors)


@settings(
    max_examples=100_000,
    deadline=None,
    database=None,  # nothing written into the shared checkout
    phases=(Phase.generate, Phase.shrink),  # no database to reuse, no targeting: speed
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(GENOME)
def test_parse_snapshot_fuzz(genome: bytes) -> None:
    raw = snapshot_file(genome)
    try:
        out = parse_snapshot(raw)
    except CorruptSnapshot as exc:
        check_refusal(exc)
        return
    check_restored(out)
    if out.workspaces or out.notifications:
        # Saved and read back: the same records, and nothing to complain about.
        again = parse_snapshot(serialize_snapshot(out.workspaces, out.panes, out.notifications, 0.0))
        assert again.errors == [], again.errors
        assert [w.to_wire() for w in again.workspaces] == [w.to_wire() for w in out.workspaces]
        assert [p.to_wire(persist=True) for p in again.panes] == [p.to_wire(persist=True) for p in out.panes]


@settings(
    max_examples=400,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(GENOME)
def test_load_snapshot_never_loses_the_file(genome: bytes) -> None:
    raw = snapshot_file(genome)
    with tempfile.TemporaryDirectory(prefix="st-fuzz-") as d:
        state = Path(d)
        (state / "snapshot.json").write_bytes(raw)
        out = load_snapshot(state)
        check_restored(out)
        kept = sorted(n for n in os.listdir(state) if n.startswith("snapshot.") and n != "snapshot.json")
        if (state / "snapshot.json").exists():
            # restored (fully or in part): a copy exists exactly when something was skipped
            assert (state / "snapshot.json").read_bytes() == raw
            assert bool(kept) == bool(out.errors)
            if kept:
                assert len(kept) == 1
                assert kept[0].startswith("snapshot.corrupt-")
                assert (state / kept[0]).read_bytes() == raw
        else:
            # refused as a whole: moved aside, byte for byte, and the daemon starts empty
            assert len(kept) == 1
            assert re.fullmatch(r"snapshot\.(corrupt|unsupported-v\d+)-\d{8}T\d{6}", kept[0])
            assert (state / kept[0]).read_bytes() == raw
            assert not (out.workspaces)
            assert not (out.panes)
            assert not (out.notifications)
            assert len(out.errors) == 1
            assert kept[0] in out.errors[0]
