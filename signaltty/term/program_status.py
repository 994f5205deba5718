"""OSC 7501 program status: report parser and the per-pane records (pure; agents.md §7.4).

A program reports its own state with ``ESC ] 7501 ; key=value:key=value… ST`` after the
server answered its ``OSC 7501;?`` query. ``parse_report`` turns the text after ``7501;``
into a ``Report`` or None (discarded); ``Records`` keeps the root record plus at most 64
child records of one process instance and renders the protocol's ``ProgramStatus`` object.
How a root report changes the pane's lifecycle is a state rule (core/layer_rules.py,
states.md §3.3), not decided here.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from signaltty.core.sanitize import sanitize_text

STATES: Final = frozenset({"idle", "working", "blocked", "done", "error", "clear"})
KINDS: Final = frozenset({"permission", "question", "auth"})
MAX_SEQUENCE_BYTES: Final = 4096
MAX_ID_BYTES: Final = 128
MAX_ID_SEGMENTS: Final = 8
MAX_CHILDREN: Final = 64
MAX_APP_BYTES: Final = 32
MAX_TITLE_BYTES: Final = 192
MAX_MSG_BYTES: Final = 2048
# ``ESC ] 7501 ;`` + ``ESC \`` around the payload count towards the 4096-byte cap.
_FRAME_BYTES: Final = 9

_SEGMENT: Final = re.compile(r"[A-Za-z0-9_.+-]{1,32}")
_APP: Final = re.compile(r"[A-Za-z0-9_.+-]{1,32}")
_PROGRESS: Final = re.compile(r"-?[0-9]{1,3}")
_B64: Final = re.compile(r"[A-Za-z0-9+/]*={0,2}")


@dataclass(frozen=True, slots=True)
class Report:
    """One valid report. ``id`` is ``""`` for the root record; invalid optional fields are None.

    Attributes:
        state: ``idle working blocked done error clear``.
        id: record path (``task/1``) or ``""`` (root).
        kind: ``permission question auth`` (only with ``blocked``) or None.
        progress: 0–100 (only with ``working``/``blocked``) or None.
        app: program label or None.
        title: sanitized one-line text (≤ 192 bytes decoded) or None.
        msg: sanitized one-line text (≤ 2048 bytes decoded) or None.
    """

    state: str
    id: str = ""
    kind: str | None = None
    progress: int | None = None
    app: str | None = None
    title: str | None = None
    msg: str | None = None


def _valid_id(value: str) -> bool:
    if not value or len(value.encode()) > MAX_ID_BYTES:
        return False
    parts = value.split("/")
    return len(parts) <= MAX_ID_SEGMENTS and all(_SEGMENT.fullmatch(p) for p in parts)


def _decode_text(value: str, max_bytes: int, cap: int) -> str | None:
    """Base64 (padding optional) of one line of UTF-8 without controls, else None."""
    if not value or _B64.fullmatch(value) is None:
        return None
    value = value.rstrip("=")
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not raw or len(raw) > max_bytes:
        return None
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text):
        return None
    return sanitize_text(text, cap) or None


def parse_report(payload: str, size: int = 0) -> Report | None:
    """Parse the text after ``7501;`` (agents.md §7.4).

    ``key=value`` pairs are separated by ``:``; pairs without ``=`` and unknown keys are
    ignored; a repeated key keeps its last value. A missing or unknown ``state``, a sequence
    longer than 4096 bytes, or an invalid ``id`` discards the whole report (an invalid id is
    not dropped to "root": a malformed child must never drive the pane — docs/decisions.md).
    Other invalid optional fields are dropped and the rest is kept.

    Returns:
        The report, or None when it is discarded.
    """
    if size <= 0:  # unknown: assume the longer ST terminator
        size = len(payload.encode("utf-8", "surrogatepass")) + _FRAME_BYTES
    if size > MAX_SEQUENCE_BYTES:
        return None
    fields: dict[str, str] = {}
    for pair in payload.split(":"):
        key, eq, value = pair.partition("=")
        if eq:
            fields[key] = value
    state = fields.get("state")
    if state not in STATES:
        return None
    rid = fields.get("id")
    if rid is not None and not _valid_id(rid):
        return None
    kind = fields.get("kind")
    if state != "blocked" or kind not in KINDS:
        kind = None
    progress: int | None = None
    raw_progress = fields.get("progress")
    if state in ("working", "blocked") and raw_progress and _PROGRESS.fullmatch(raw_progress):
        number = int(raw_progress)
        progress = number if 0 <= number <= 100 else None
    app = fields.get("app")
    if app is not None and _APP.fullmatch(app) is None:
        app = None
    return Report(
        state=state,
        id=rid or "",
        kind=kind,
        progress=progress,
        app=app,
        title=_decode_text(fields.get("title", ""), MAX_TITLE_BYTES, 200),
        msg=_decode_text(fields.get("msg", ""), MAX_MSG_BYTES, 2000),
    )


@dataclass(slots=True)
class _Record:
    state: str
    kind: str | None
    progress: int | None
    app: str | None
    title: str | None
    msg: str | None
    at: float


class Records:
    """The program-status records of one process instance (agents.md §7.4).

    ``root`` is the record with the empty id; ``children`` keeps at most 64 records, the least
    recently updated one evicted first.
    """

    def __init__(self) -> None:
        self.root: _Record | None = None
        self.children: OrderedDict[str, _Record] = OrderedDict()

    def __bool__(self) -> bool:
        return self.root is not None or bool(self.children)

    def apply(self, report: Report, now: float) -> None:
        """Record ``report`` (``clear`` removes the record and its descendants, or everything)."""
        if report.state == "clear":
            if not report.id:
                self.clear()
                return
            prefix = report.id + "/"
            for key in [k for k in self.children if k == report.id or k.startswith(prefix)]:
                del self.children[key]
            return
        record = _Record(
            report.state, report.kind, report.progress, report.app, report.title, report.msg, now
        )
        if not report.id:
            self.root = record
            return
        self.children.pop(report.id, None)
        self.children[report.id] = record
        while len(self.children) > MAX_CHILDREN:
            self.children.popitem(last=False)

    def clear(self) -> None:
        """Drop every record (RIS, prompt start, authority end, exit, respawn)."""
        self.root = None
        self.children.clear()

    def to_wire(self, iso: Any) -> dict[str, Any] | None:
        """The protocol's ``ProgramStatus`` object, or None without records.

        Args:
            iso: the timestamp formatter (``core.model.iso``).
        """
        if not self:
            return None
        root = self.root
        return {
            "state": root.state if root else None,
            "kind": root.kind if root else None,
            "progress": root.progress if root else None,
            "app": root.app if root else None,
            "title": root.title if root else None,
            "msg": root.msg if root else None,
            "at": iso(root.at if root else max(r.at for r in self.children.values())),
            "children": [
                {"id": key, "state": r.state, "progress": r.progress}
                for key, r in self.children.items()
            ],
        }
