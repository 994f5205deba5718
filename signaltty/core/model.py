"""Records the daemon keeps: Workspace, Pane, AgentInfo, Decision, Notification (pure, stdlib only).

Times are wall-clock seconds (float) inside and RFC 3339 UTC with milliseconds on the wire.
``to_wire()`` gives the protocol object; ``from_wire()`` reads a snapshot back, ignoring unknown
fields. Spec: protocol.md §4, desktop-and-service.md §8.1 (persisted vs runtime-only fields).
"""

from __future__ import annotations

import datetime as _dt
import functools
from dataclasses import dataclass, field
from typing import Any

from signaltty.core.states import Attention, Authority, Lifecycle, RestoreState

# Fields of the wire Pane that are never persisted (desktop-and-service.md §8.1).
RUNTIME_PANE_FIELDS = frozenset(
    {"process_name", "authority", "hooked", "osc_progress", "program_status", "integration"}
)

KINDS = ("claude", "codex", "opencode", "cursor", "pi", "generic", "none")


# Every pane.updated formats the pane's five times again and four of them have not changed
# (Codex retitles its pane 10×/s: 20 replayed panes, 80 records a second; issue 12).
@functools.lru_cache(maxsize=1024)
def iso(ts: float | None) -> str | None:
    """Format wall-clock seconds as RFC 3339 UTC with milliseconds
    (``2026-10-12T08:30:01.123Z``)."""
    if ts is None:
        return None
    # isoformat (C) truncates to milliseconds like the strftime it replaced, ~35 % faster:
    # every pane.updated carries five of these (issue 12, bench/replay.py)
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def parse_iso(text: Any) -> float | None:
    """Parse an RFC 3339 time back to seconds; ``None`` for anything unreadable."""
    if not isinstance(text, str):
        return None
    try:
        value = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    # Only times that can be written back (RFC 3339 in UTC, years 1970-9998).
    if not 1970 <= value.astimezone(_dt.UTC).year <= 9998:
        return None
    return value.timestamp()


@dataclass(slots=True)
class Workspace:
    """A named, ordered group of panes (protocol.md §4 Workspace)."""

    id: str
    name: str
    handle: str
    cwd: str
    pane_ids: list[str]
    created_at: float
    updated_at: float

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "handle": self.handle,
            "cwd": self.cwd,
            "pane_ids": list(self.pane_ids),
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
        }

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> Workspace:
        """Read a snapshot record.

        Raises:
            KeyError, TypeError, ValueError: required fields missing or mistyped.
        """
        created = parse_iso(d.get("created_at")) or 0.0
        return cls(
            id=str(d["id"]),
            name=str(d.get("name") or "workspace"),
            handle=str(d.get("handle") or ""),
            cwd=str(d.get("cwd") or "/"),
            pane_ids=[str(p) for p in d.get("pane_ids") or []],
            created_at=created,
            updated_at=parse_iso(d.get("updated_at")) or created,
        )


@dataclass(slots=True)
class AgentInfo:
    """What the pane runs, as far as agent awareness knows (protocol.md §4 AgentInfo)."""

    kind: str = "none"
    catalog_id: str | None = None
    display_name: str = "Terminal"
    agent_session_id: str | None = None
    session_generation: int = 0
    resume_argv: list[str] | None = None
    resume_source: str | None = None
    launch_prefix: list[str] = field(default_factory=list)
    config_env: dict[str, str] = field(default_factory=dict)
    # where the agent's hooks said the session runs (issue 11 item 11: resume runs there)
    session_cwd: str | None = None
    # options kept for resume read from the agent's command line (a shell pane; issue 11)
    launch_options: list[str] = field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "catalog_id": self.catalog_id,
            "display_name": self.display_name,
            "agent_session_id": self.agent_session_id,
            "session_generation": self.session_generation,
            "resume_argv": list(self.resume_argv) if self.resume_argv is not None else None,
            "resume_source": self.resume_source,
            "launch_prefix": list(self.launch_prefix),
            "config_env": dict(self.config_env),
            "session_cwd": self.session_cwd,
            "launch_options": list(self.launch_options),
        }

    @classmethod
    def from_wire(cls, d: dict[str, Any] | None) -> AgentInfo:
        d = d or {}
        kind = d.get("kind")
        resume = d.get("resume_argv")
        return cls(
            kind=kind if kind in KINDS else "none",
            catalog_id=d.get("catalog_id") if isinstance(d.get("catalog_id"), str) else None,
            display_name=str(d.get("display_name") or "Terminal"),
            agent_session_id=d.get("agent_session_id")
            if isinstance(d.get("agent_session_id"), str)
            else None,
            session_generation=int(d.get("session_generation") or 0),
            resume_argv=[str(a) for a in resume] if isinstance(resume, list) else None,
            resume_source=d.get("resume_source")
            if isinstance(d.get("resume_source"), str)
            else None,
            launch_prefix=[str(a) for a in d.get("launch_prefix") or []],
            config_env={str(k): str(v) for k, v in (d.get("config_env") or {}).items()},
            session_cwd=d.get("session_cwd") if isinstance(d.get("session_cwd"), str) else None,
            launch_options=[str(a) for a in options]
            if isinstance(options := d.get("launch_options"), list)
            else [],
        )


@dataclass(slots=True)
class Decision:
    """A pending question on a pane (protocol.md §4 Decision)."""

    id: str
    prompt: str
    options: list[dict[str, str]]
    received_at: float
    answerable: bool = False
    native: bool = False
    agent: str | None = None
    tool_name: str | None = None
    deadline: float | None = None

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prompt": self.prompt,
            "options": [dict(o) for o in self.options],
            "answerable": self.answerable,
            "native": self.native,
            "agent": self.agent,
            "tool_name": self.tool_name,
            "received_at": iso(self.received_at),
            "deadline": iso(self.deadline),
        }

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> Decision:
        return cls(
            id=str(d["id"]),
            prompt=str(d.get("prompt") or ""),
            options=[
                {"id": str(o.get("id")), "label": str(o.get("label"))}
                for o in d.get("options") or []
                if isinstance(o, dict)
            ],
            received_at=parse_iso(d.get("received_at")) or 0.0,
            answerable=bool(d.get("answerable")),
            native=bool(d.get("native")),
            agent=d.get("agent") if isinstance(d.get("agent"), str) else None,
            tool_name=d.get("tool_name") if isinstance(d.get("tool_name"), str) else None,
            deadline=parse_iso(d.get("deadline")),
        )


@dataclass(slots=True)
class Notification:
    """A notification record (protocol.md §4 Notification); the server keeps the newest 200."""

    id: str
    title: str
    severity: str
    source: str
    created_at: float
    body: str | None = None
    pane_id: str | None = None
    workspace_id: str | None = None
    read_at: float | None = None

    def to_wire(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id}
        if self.pane_id is not None:
            d["pane_id"] = self.pane_id
        if self.workspace_id is not None:
            d["workspace_id"] = self.workspace_id
        d["title"] = self.title
        if self.body is not None:
            d["body"] = self.body
        d.update(
            severity=self.severity,
            source=self.source,
            created_at=iso(self.created_at),
            read_at=iso(self.read_at),
        )
        return d

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> Notification:
        return cls(
            id=str(d["id"]),
            title=str(d.get("title") or ""),
            severity=str(d.get("severity") or "info"),
            source=str(d.get("source") or "cli"),
            created_at=parse_iso(d.get("created_at")) or 0.0,
            body=d.get("body") if isinstance(d.get("body"), str) else None,
            pane_id=d.get("pane_id") if isinstance(d.get("pane_id"), str) else None,
            workspace_id=d.get("workspace_id") if isinstance(d.get("workspace_id"), str) else None,
            read_at=parse_iso(d.get("read_at")),
        )


@dataclass(slots=True)
class Pane:
    """One PTY plus its process, as state (protocol.md §4 Pane).

    Runtime-only fields (``process_instance``, ``hooked``, ``attention_marker``, evidence,
    transition seqs) are never persisted; ``to_wire(persist=True)`` leaves them out.
    """

    id: str
    workspace_id: str
    argv: list[str]
    cwd: str
    launch_cwd: str
    created_at: float
    last_activity_at: float
    title: str = "shell"
    label: str | None = None
    cols: int = 80
    rows: int = 24
    live: bool = True
    exit_code: int | None = None
    restore_state: RestoreState = RestoreState.LIVE
    agent: AgentInfo = field(default_factory=AgentInfo)
    process_name: str | None = None
    lifecycle: Lifecycle = Lifecycle.UNKNOWN
    last_lifecycle: Lifecycle | None = None
    lifecycle_since: float | None = None
    lifecycle_source: str | None = None
    last_run_secs: float | None = None
    working_since: float | None = None
    attention: Attention = Attention.NONE
    attention_since: float | None = None
    last_message: str | None = None
    pending_decision: Decision | None = None
    hooked: bool = False
    osc_progress: dict[str, Any] | None = None
    program_status: dict[str, Any] | None = None
    integration: dict[str, Any] | None = None
    parent_pane_id: str | None = None
    root_pane_id: str | None = None
    relationship: str | None = None
    last_seen_at: float | None = None
    # runtime
    process_instance: str = ""
    attention_marker: str | None = None
    exit_applied: bool = False
    title_from_osc: bool = False
    # runtime: the pane has applicable screen rules (set by the sweep, agents.md §5.4)
    screen_rules: bool = False
    # runtime: last accepted hook or OSC 7501 report (stuck-working recovery, states.md §3.8)
    last_signal_at: float | None = None
    # runtime: the kind came from the process refresh (an agent started inside a shell pane)
    promoted: bool = False
    # runtime: this process instance got input (typed, pasted, submitted) or was launched
    # with a prompt, so a turn can have run; without it the weak layers never read done
    # (issue 11 item 5: start-up redraws are no turn). Set by the server, reset on resume.
    turn_input: bool = False
    # runtime: wall-clock time of the last input written to the pane, and whether the screen's
    # current dialog came up inside a turn (the pane was working, or got input since its last
    # state): that dialog leaving the screen ends the turn done/unread (issue 11 item 7, S5)
    input_at: float | None = None
    dialog_in_turn: bool = False
    # runtime: when the last permission request was answered or seen answered (a late
    # restatement of it then changes nothing; sixth attack pass, finding 4)
    request_ended_at: float | None = None

    @property
    def authority(self) -> Authority:
        """Which layer classifies the lifecycle now (states.md §2)."""
        if not self.live:
            return Authority.NONE
        if self.hooked:
            return Authority.HOOK
        if self.program_status is not None and self.program_status.get("state"):
            return Authority.PROGRAM_STATUS
        if self.screen_rules:
            return Authority.SCREEN
        return Authority.NONE

    def to_wire(self, *, persist: bool = False) -> dict[str, Any]:
        """Return the protocol Pane object; ``persist=True`` omits runtime-only fields."""
        d: dict[str, Any] = {
            "id": self.id,
            "workspace_id": self.workspace_id,
            "title": self.title,
            "label": self.label,
            "cwd": self.cwd,
            "launch_cwd": self.launch_cwd,
            "argv": list(self.argv),
            "pty_size": {"cols": self.cols, "rows": self.rows},
            "live": {"state": "live"} if self.live else {"state": "exited", "code": self.exit_code},
            "restore_state": self.restore_state.value,
            "agent": self.agent.to_wire(),
            "process_name": self.process_name,
            "lifecycle": self.lifecycle.value,
            "last_lifecycle": self.last_lifecycle.value if self.last_lifecycle else None,
            "lifecycle_since": iso(self.lifecycle_since),
            "lifecycle_source": self.lifecycle_source,
            "last_run_secs": self.last_run_secs,
            "attention": self.attention.value,
            "attention_since": iso(self.attention_since),
            "last_message": self.last_message,
            "pending_decision": self.pending_decision.to_wire() if self.pending_decision else None,
            "authority": self.authority.value,
            "hooked": self.hooked,
            "osc_progress": self.osc_progress,
            "program_status": self.program_status,
            "integration": self.integration,
            "parent_pane_id": self.parent_pane_id,
            "root_pane_id": self.root_pane_id,
            "relationship": self.relationship,
            "created_at": iso(self.created_at),
            "last_activity_at": iso(self.last_activity_at),
            "last_seen_at": iso(self.last_seen_at),
        }
        if persist:
            for key in RUNTIME_PANE_FIELDS:
                d.pop(key, None)
        return d

    @classmethod
    def from_wire(cls, d: dict[str, Any]) -> Pane:
        """Read a persisted pane (unknown fields ignored).

        Raises:
            KeyError, TypeError, ValueError: required fields missing or mistyped.
        """
        live = d.get("live") or {}
        size = d.get("pty_size") or {}
        created = parse_iso(d.get("created_at")) or 0.0
        dec = d.get("pending_decision")
        return cls(
            id=str(d["id"]),
            workspace_id=str(d["workspace_id"]),
            argv=[str(a) for a in d.get("argv") or []],
            cwd=str(d.get("cwd") or "/"),
            launch_cwd=str(d.get("launch_cwd") or d.get("cwd") or "/"),
            created_at=created,
            last_activity_at=parse_iso(d.get("last_activity_at")) or created,
            title=str(d.get("title") or "shell"),
            label=d.get("label") if isinstance(d.get("label"), str) else None,
            cols=int(size.get("cols") or 80),
            rows=int(size.get("rows") or 24),
            live=live.get("state", "live") == "live",
            exit_code=live.get("code") if isinstance(live.get("code"), int) else None,
            restore_state=RestoreState(d.get("restore_state") or "EXITED"),
            agent=AgentInfo.from_wire(d.get("agent")),
            lifecycle=Lifecycle(d.get("lifecycle") or "unknown"),
            last_lifecycle=Lifecycle(d["last_lifecycle"]) if d.get("last_lifecycle") else None,
            lifecycle_since=parse_iso(d.get("lifecycle_since")),
            lifecycle_source=d.get("lifecycle_source")
            if isinstance(d.get("lifecycle_source"), str)
            else None,
            last_run_secs=float(d["last_run_secs"]) if d.get("last_run_secs") is not None else None,
            attention=Attention(d.get("attention") or "none"),
            attention_since=parse_iso(d.get("attention_since")),
            last_message=d.get("last_message") if isinstance(d.get("last_message"), str) else None,
            pending_decision=Decision.from_wire(dec) if isinstance(dec, dict) else None,
            parent_pane_id=d.get("parent_pane_id")
            if isinstance(d.get("parent_pane_id"), str)
            else None,
            root_pane_id=d.get("root_pane_id") if isinstance(d.get("root_pane_id"), str) else None,
            relationship=d.get("relationship") if isinstance(d.get("relationship"), str) else None,
            last_seen_at=parse_iso(d.get("last_seen_at")),
        )
