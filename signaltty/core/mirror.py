"""Remote panes as this daemon shows them: another host's records, cleaned (pure).

A watched host's daemon (``[hosts.NAME]``, docs/remote.md) sends pane records, decisions and
events over ssh. Those bytes come from another machine and are hostile like a pane's output:
every string is sanitized and capped as the daemon's own would be, ids must be plain, enums
must be known values, and whatever cannot be read is refused as a whole record (``ValueError``)
rather than half-kept. A mirrored pane's ids are the remote ids prefixed with the host's name
and ``/`` (``devbox/pane_3f…``), which no local id can contain. Issue 16 item 3.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

from signaltty.core import limits
from signaltty.core.model import AgentInfo, Decision, Pane
from signaltty.core.sanitize import sanitize_text
from signaltty.core.states import ALERT_CAUSES, Attention, Lifecycle, RestoreState

SEP: Final = "/"
# a host's name in config and in ids: short, no "/" (the separator), no leading "-" or "."
HOST_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
# remote pane, workspace and decision ids: what our own ids look like, with room to spare
_REMOTE_ID: Final = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
MAX_ARGV: Final = 64
MAX_PATH: Final = 4096
MAX_PROMPT: Final = 8192
MAX_OPTIONS: Final = 16
MAX_SHORT: Final = 100  # kinds, display names, tool names, option ids and labels

# protocol.md §7 "cause" values; anything else from a remote is read as "message"
CAUSES: Final = frozenset(ALERT_CAUSES)
# the severity a remote pane's attention is announced with
_SEVERITY: Final = {
    Attention.PERMISSION_REQUIRED: "warning",
    Attention.INPUT_REQUIRED: "warning",
    Attention.ERROR: "error",
    Attention.WARNING: "warning",
    Attention.UNREAD: "info",
    Attention.NONE: "info",
}


def valid_host_name(name: str) -> bool:
    """A ``[hosts.NAME]`` name: 1–32 of ``A-Z a-z 0-9 _ . -``, not starting with ``.``/``-``."""
    return HOST_NAME.fullmatch(name) is not None


def remote_id(value: object, what: str) -> str:
    """A remote id as given, when it is a plain id.

    Raises:
        ValueError: not a string of 1–128 of ``A-Z a-z 0-9 _ . : -``.
    """
    if not isinstance(value, str) or _REMOTE_ID.fullmatch(value) is None:
        raise ValueError(f"{what} is not a plain id")
    return value


def local_id(host: str, rid: str) -> str:
    """``host/rid``: the id a remote record has here."""
    return f"{host}{SEP}{rid}"


def split_id(ref: str) -> tuple[str, str] | None:
    """``(host, remote id)`` for a ``host/rid`` reference, else None (a local id)."""
    host, sep, rid = ref.partition(SEP)
    if not sep or not valid_host_name(host) or not rid:
        return None
    return host, rid


def _text(value: object, limit: int, *, multiline: bool = False) -> str | None:
    if not isinstance(value, str):
        return None
    return sanitize_text(value, limit, multiline=multiline) or None


def clean_decision(d: object) -> Decision:
    """A remote ``Decision`` (protocol.md §4), cleaned.

    Raises:
        ValueError: not an object, a bad id, or options that are not objects.
    """
    if not isinstance(d, dict):
        raise ValueError("a decision is not an object")
    try:
        dec = Decision.from_wire(d)
    except (KeyError, TypeError, AttributeError, OverflowError) as exc:
        raise ValueError(f"unreadable decision: {type(exc).__name__}") from None
    options = []
    raw_options = d.get("options")
    # the raw list: Decision.from_wire turns a missing id into the option "None"
    for o in raw_options[:MAX_OPTIONS] if isinstance(raw_options, list) else []:
        oid = _text(o.get("id"), 64) if isinstance(o, dict) else None
        if oid is None:
            continue
        options.append({"id": oid, "label": _text(o.get("label"), MAX_SHORT) or oid})
    return Decision(
        id=remote_id(d.get("id"), "decision id"),
        prompt=_text(dec.prompt, MAX_PROMPT, multiline=True) or "",
        options=options,
        received_at=dec.received_at if math.isfinite(dec.received_at) else 0.0,
        answerable=dec.answerable,
        native=dec.native,
        agent=_text(dec.agent, MAX_SHORT),
        tool_name=_text(dec.tool_name, MAX_SHORT),
        deadline=dec.deadline if dec.deadline is not None and math.isfinite(dec.deadline) else None,
    )


def clean_pane(host: str, d: object) -> Pane:
    """A remote ``Pane`` record (protocol.md §4) as a read-only pane of host ``host``.

    Kept: ids (prefixed), title, label, cwd, argv, size, live/exit code, restore state, the
    agent's kind, display name and session id, lifecycle, attention and their times, the
    last message, the pending decision, creation and activity times. Dropped: resume
    commands, configuration directories, lineage, runtime evidence (nothing here may run or
    resume what a remote names).

    Raises:
        ValueError: not an object, a bad id, an unknown lifecycle/attention/restore state,
            or a mistyped field (the whole record is refused).
    """
    if not isinstance(d, dict):
        raise ValueError("a pane is not an object")
    try:
        raw = Pane.from_wire(d)
    except (KeyError, TypeError, AttributeError, OverflowError, ValueError) as exc:
        raise ValueError(f"unreadable pane record: {type(exc).__name__}") from None
    rid = remote_id(d.get("id"), "pane id")
    wid = remote_id(d.get("workspace_id"), "workspace id")
    if not isinstance(d.get("argv") or [], list):
        raise ValueError("argv is not a list")  # from_wire would split a string into letters
    agent_in = raw.agent
    agent = AgentInfo(
        kind=_text(agent_in.kind, MAX_SHORT) or "none",
        display_name=_text(agent_in.display_name, MAX_SHORT) or "Terminal",
        agent_session_id=_text(agent_in.agent_session_id, 128),
    )
    dec_in = d.get("pending_decision")
    code = raw.exit_code
    pane = Pane(
        id=local_id(host, rid),
        workspace_id=local_id(host, wid),
        argv=[_text(a, MAX_PATH) or "" for a in raw.argv[:MAX_ARGV]],
        cwd=_text(raw.cwd, MAX_PATH) or "/",
        launch_cwd=_text(raw.launch_cwd, MAX_PATH) or "/",
        created_at=raw.created_at,
        last_activity_at=raw.last_activity_at,
        title=_text(raw.title, limits.MAX_TITLE) or "shell",
        label=_text(raw.label, limits.MAX_LABEL),
        cols=max(limits.COLS_MIN, min(limits.COLS_MAX, raw.cols)),
        rows=max(limits.ROWS_MIN, min(limits.ROWS_MAX, raw.rows)),
        live=raw.live,
        exit_code=code if type(code) is int and -(2**31) <= code < 2**31 else None,
        restore_state=RestoreState(raw.restore_state),
        agent=agent,
        lifecycle=Lifecycle(raw.lifecycle),
        last_lifecycle=raw.last_lifecycle,
        lifecycle_since=raw.lifecycle_since,
        lifecycle_source=_text(raw.lifecycle_source, 32),
        last_run_secs=raw.last_run_secs
        if raw.last_run_secs is not None and math.isfinite(raw.last_run_secs)
        else None,
        attention=Attention(raw.attention),
        attention_since=raw.attention_since,
        last_message=_text(raw.last_message, limits.MAX_LAST_MESSAGE, multiline=True),
        pending_decision=clean_decision(dec_in) if dec_in is not None else None,
        last_seen_at=raw.last_seen_at,
    )
    return pane


def severity(attention: Attention) -> str:
    """The alert severity a remote pane's attention is shown with."""
    return _SEVERITY.get(attention, "info")


def cause(value: object) -> str:
    """A remote alert cause: a known one, else ``message``."""
    return value if isinstance(value, str) and value in CAUSES else "message"


def field_names(value: object) -> list[str]:
    """A remote ``changed`` list: the plain field names in it (at most 32)."""
    if not isinstance(value, list):
        return []
    out = [v for v in value[:32] if isinstance(v, str) and re.fullmatch(r"[a-z_]{1,40}", v)]
    return out


def enum_value(kind: type[Lifecycle] | type[Attention], value: object) -> Any:
    """``kind(value)``.

    Raises:
        ValueError: not one of its values.
    """
    if not isinstance(value, str):
        raise ValueError(f"not a {kind.__name__}")
    return kind(value)


__all__ = [
    "CAUSES",
    "HOST_NAME",
    "SEP",
    "cause",
    "clean_decision",
    "clean_pane",
    "enum_value",
    "field_names",
    "local_id",
    "remote_id",
    "severity",
    "split_id",
    "valid_host_name",
]
