"""Request parameter models, one per method (pydantic v2; Spec: protocol.md §3, §5).

Unknown fields are ignored; a field given as ``null`` is the same as absent; a wrong type or
range is ``BAD_PARAMS`` with ``details.field`` (the router translates ``ValidationError``).
Types are strict: ``"5"`` is not an integer and ``1`` is not a boolean.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from signaltty.core import limits


def _valid_unicode(value: str) -> str:
    # A lone surrogate (JSON "\udcff") cannot be passed to a program, written to a file or
    # saved in the snapshot: refuse it where the text goes that far.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (lone surrogate)") from None
    return value


Text = Annotated[str, AfterValidator(_valid_unicode)]
NonEmpty = Annotated[str, StringConstraints(min_length=1), AfterValidator(_valid_unicode)]


class Params(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class Empty(Params):
    pass


class ServerShutdown(Params):
    force: bool | None = None


class WorkspaceCreate(Params):
    name: Text | None = None
    cwd: Text | None = None


class WorkspaceRef(Params):
    workspace_id: NonEmpty


class WorkspaceRename(Params):
    workspace_id: NonEmpty
    name: Text


class WorkspaceClose(Params):
    workspace_id: NonEmpty
    signal: str | None = None


class _Command(Params):
    argv: list[NonEmpty] | None = Field(None, min_length=1)
    agent: NonEmpty | None = None
    prompt: Text | None = None
    bypass: bool | None = None
    # ``continue`` is a Python keyword
    continue_: bool | None = Field(None, alias="continue")
    cwd: Text | None = None
    label: (
        Annotated[
            str, StringConstraints(max_length=limits.MAX_LABEL), AfterValidator(_valid_unicode)
        ]
        | None
    ) = None


class PaneSpawn(_Command):
    workspace_id: NonEmpty
    env: dict[Text, Text] | None = None
    cols: int | None = None
    rows: int | None = None
    agent_hint: str | None = None
    parent_pane_id: str | None = None
    relationship: Literal["fork", "subagent"] | None = None


class PaneSplit(_Command):
    pane_id: NonEmpty
    # like pane.spawn's (issue 13 item 9: `pane split -e`; protocol.md §5 had none)
    env: dict[Text, Text] | None = None


class PaneList(Params):
    workspace_id: str | None = None
    live: bool | None = None


class PaneRef(Params):
    pane_id: NonEmpty


class PaneInput(Params):
    pane_id: NonEmpty
    data_b64: str


class PaneResize(Params):
    pane_id: NonEmpty
    cols: int
    rows: int


class PaneSignal(Params):
    pane_id: NonEmpty
    signal: NonEmpty
    group: bool | None = None


class PaneRead(Params):
    pane_id: NonEmpty
    mode: Literal["screen", "tail"] | None = None
    lines: int | None = Field(None, ge=1, le=limits.READ_LINES_MAX)
    strip_ansi: bool | None = None


class PaneWaitForOutput(Params):
    pane_id: NonEmpty
    match: Annotated[str, StringConstraints(min_length=1)]
    regex: bool | None = None
    new_only: bool | None = None
    lines: int | None = Field(None, ge=1, le=limits.READ_LINES_MAX)
    timeout_s: float | None = Field(None, gt=0, le=limits.WAIT_OUTPUT_TIMEOUT_MAX_S)


class PaneAttach(Params):
    pane_id: NonEmpty
    cols: int | None = None
    rows: int | None = None
    mark_seen: bool | None = None


class PaneClose(Params):
    pane_id: NonEmpty
    signal: str | None = None


class Notify(Params):
    pane_id: str | None = None
    title: str
    body: str | None = None
    severity: Literal["info", "warning", "error"] | None = None


class Subscribe(Params):
    events: list[NonEmpty] | None = None
    from_seq: int | None = Field(None, ge=0)


class Wait(Params):
    pane_id: NonEmpty
    until: Any
    after: dict[str, Any] | None = None
    timeout_s: float | None = Field(None, gt=0)


class AttentionPending(Params):
    limit: int | None = Field(None, ge=1, le=500)


# Strict mode would refuse ints for floats; allow JSON numbers for *_s fields.
for _model in (PaneWaitForOutput, Wait):
    _model.model_fields["timeout_s"].metadata.append(Field(strict=False))
    _model.model_rebuild(force=True)

MODELS: dict[str, type[Params]] = {
    "server.status": Empty,
    "server.schema": Empty,
    "server.shutdown": ServerShutdown,
    "server.restart": Empty,
    "workspace.create": WorkspaceCreate,
    "workspace.list": Empty,
    "workspace.get": WorkspaceRef,
    "workspace.rename": WorkspaceRename,
    "workspace.close": WorkspaceClose,
    "pane.spawn": PaneSpawn,
    "pane.split": PaneSplit,
    "pane.list": PaneList,
    "pane.get": PaneRef,
    "pane.input": PaneInput,
    "pane.resize": PaneResize,
    "pane.signal": PaneSignal,
    "pane.read": PaneRead,
    "pane.wait_for_output": PaneWaitForOutput,
    "pane.attach": PaneAttach,
    "pane.detach": PaneRef,
    "pane.close": PaneClose,
    "pane.mark_seen": PaneRef,
    "notify": Notify,
    "subscribe": Subscribe,
    "wait": Wait,
    "focus.next_unread": Empty,
    "attention.pending": AttentionPending,
}


# ---------------------------------------------------------------- tier 2 (protocol.md §6)


class DecisionOption(Params):
    id: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    label: Annotated[str, StringConstraints(min_length=1, max_length=100)]


class DecisionSpec(Params):
    id: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    prompt: Annotated[str, StringConstraints(max_length=8192)]
    options: list[DecisionOption] = Field(min_length=1, max_length=16)


class HookEvent(Params):
    agent: NonEmpty
    event: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    pane_id: str | None = None
    # pane_id came from the reporter's inherited $SIGNALTTY_PANE, not a --pane it was given:
    # applied only when the reporter really runs in that pane (issue #10 item 6)
    pane_from_env: bool = False
    client_pid: int | None = Field(None, ge=1)
    payload: Any = None
    message: str | None = None
    body: str | None = None
    title: str | None = None
    severity: Literal["info", "warning", "error"] | None = None
    decision: DecisionSpec | None = None
    wait_for_answer: bool | None = None
    wait_timeout_s: float | None = Field(None, ge=1, le=120)


class ReportSession(Params):
    pane_id: NonEmpty
    agent_session_id: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    agent: str | None = None
    resume_argv: list[str] | None = None


class DecisionAnswer(Params):
    pane_id: str | None = None
    decision_id: str | None = None
    option_id: str | None = None
    verdict: Literal["allow", "deny"] | None = None


class PermissionList(Params):
    pane_id: str | None = None


class PaneSubmit(Params):
    pane_id: NonEmpty
    text: Annotated[str, StringConstraints(min_length=1), AfterValidator(_valid_unicode)]
    submit_delay_ms: int | None = Field(None, ge=0, le=5000)
    stall_timeout_s: float | None = Field(None, ge=1, le=120)


for _lenient in (HookEvent, PaneSubmit):
    for _name in ("wait_timeout_s", "stall_timeout_s"):
        if _name in _lenient.model_fields:
            _lenient.model_fields[_name].metadata.append(Field(strict=False))
    _lenient.model_rebuild(force=True)

MODELS.update(
    {
        "hook-event": HookEvent,
        "report-session": ReportSession,
        "decision.answer": DecisionAnswer,
        "permission.list": PermissionList,
        "pane.resume": PaneRef,
        "pane.submit": PaneSubmit,
        "pane.explain": PaneRef,
        "agents.list": Empty,
        "agents.reload": Empty,
    }
)


class AgentsCatalog(Params):
    refresh: bool | None = None


MODELS["agents.catalog"] = AgentsCatalog
MODELS["hosts.list"] = Empty
MODELS["hosts.reload"] = Empty
