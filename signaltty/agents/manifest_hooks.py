"""Manifest hook tables: ``[hooks]``, ``[[hooks.rule]]`` and ``[lifecycle.<Event>]``.

``[hooks]`` and its rules say what each hook event means (built-in agents and user agents
alike) and become a :class:`~signaltty.agents.hookrules.hook_map.HookMap`;
``[lifecycle.<Event>]`` replaces single fields of that answer (an older, simpler form, kept).
Errors name the table: ``[[hooks.rule]] #2 'Notification': unknown cause 'perm' …``.
Spec: agents.md §4.1, §4.3; docs/manifests.md "Hook maps"; issue 14 item 4.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError, field_validator, model_validator

from signaltty.agents.hookrules.hook_map import Condition, DraftSpec, HookMap, HookRule, Text
from signaltty.agents.hookrules.named import ADAPTER_HOOKS, TEXT_FUNCTIONS
from signaltty.agents.manifest_fields import (
    CAUSES,
    HOOK_LIFECYCLES,
    KEEP,
    MAX_EVENT_NAME,
    MAX_HOOK_RULES,
    MAX_LIFECYCLE_EVENTS,
    MAX_LIST_ITEMS,
    MAX_MESSAGE,
    StrList,
    Table,
    dotted_paths,
    first_error,
    log_unknown,
    one_of,
    validate_table,
)
from signaltty.core.states import Attention, Lifecycle

_ATTENTIONS = tuple(a.value for a in Attention)

# --------------------------------------------------------------------------- [lifecycle.<Event>]


class LifecycleTable(Table):
    """``[lifecycle.<Event>]`` (agents.md §4.1, §4.3)."""

    lifecycle: str | None = None
    attention: str | None = None
    message: str | None = Field(default=None, max_length=MAX_MESSAGE)

    @field_validator("lifecycle")
    @classmethod
    def _lifecycle(cls, v: str | None) -> str | None:
        if v is not None and v != KEEP and v not in HOOK_LIFECYCLES:
            raise ValueError(f"unknown lifecycle {v!r} (one of {', '.join(HOOK_LIFECYCLES)}, keep)")
        return v

    @field_validator("attention")
    @classmethod
    def _attention(cls, v: str | None) -> str | None:
        if v is not None and v != KEEP and v not in _ATTENTIONS:
            raise ValueError(f"unknown attention {v!r} (an attention value, none = clear, or keep)")
        return v


@dataclass(frozen=True, slots=True)
class LifecycleOverlay:
    """One ``[lifecycle.<Event>]`` map; ``None`` fields (absent or ``keep``) keep the hook map's.

    ``attention=Attention.NONE`` means *clear* (agents.md §4.1).
    """

    lifecycle: Lifecycle | None = None
    attention: Attention | None = None
    message: str | None = None

    @property
    def empty(self) -> bool:
        """True when the table changes nothing (every field kept)."""
        return self.lifecycle is None and self.attention is None and self.message is None


def _event_name(event: object, where: str) -> str:
    if not isinstance(event, str) or not event or len(event) > MAX_EVENT_NAME:
        raise ValueError(f"{where}: event name must be 1–{MAX_EVENT_NAME} characters")
    return event


def build_lifecycle(events: Any) -> dict[str, LifecycleOverlay]:
    """``[lifecycle]`` → overlays by exact event name.

    Raises:
        ValueError: the first problem, naming ``[lifecycle.<Event>]``.
    """
    if not isinstance(events, dict):
        raise ValueError("[lifecycle]: must contain [lifecycle.<Event>] tables")  # noqa: TRY004
    if len(events) > MAX_LIFECYCLE_EVENTS:
        raise ValueError(
            f"[lifecycle]: too many event tables ({len(events)}, max {MAX_LIFECYCLE_EVENTS})"
        )
    out: dict[str, LifecycleOverlay] = {}
    for event, table in events.items():
        where = f"[lifecycle.{event}]"
        _event_name(event, where)
        t = validate_table(LifecycleTable, table, where)
        out[event] = LifecycleOverlay(
            lifecycle=None if t.lifecycle in (None, KEEP) else Lifecycle(t.lifecycle),
            attention=None if t.attention in (None, KEEP) else Attention(t.attention),
            message=t.message,
        )
    return out


# --------------------------------------------------------------------------- [hooks]


def _paths(value: Any) -> Any:
    # ``field = "x"`` and ``field = ["x", "y"]`` are both natural to write.
    return [value] if isinstance(value, str) else value


def _tables(value: Any) -> Any:
    # ``when = { … }`` (one condition) or ``when = [{ … }, { … }]`` (all must hold).
    return [value] if isinstance(value, dict) else value


def _text_fn(v: str | None) -> str | None:
    return None if v is None else one_of(v, tuple(TEXT_FUNCTIONS), "text function")


class ConditionTable(Table):
    """One ``when`` condition of a rule: a payload value ``equals`` and/or ``contains`` a string."""

    field: Annotated[list[str], BeforeValidator(_paths)] = Field(min_length=1, max_length=16)
    equals: str | None = None
    contains: str | None = None

    @field_validator("field")
    @classmethod
    def _field(cls, v: list[str]) -> list[str]:
        return dotted_paths(v)

    @model_validator(mode="after")
    def _test(self) -> ConditionTable:
        if self.equals is None and self.contains is None:
            raise ValueError("a condition needs 'equals' or 'contains'")
        return self


class NotificationTable(Table):
    """A rule's ``notification`` draft: title, body (from the payload, a function, or fixed)."""

    title: str = Field(min_length=1, max_length=MAX_MESSAGE)
    body: str | None = Field(default=None, max_length=MAX_MESSAGE)
    body_from: StrList = []
    body_fn: str | None = None
    severity: Literal["info", "warning", "error"] = "info"

    @field_validator("body_from")
    @classmethod
    def _body_from(cls, v: list[str]) -> list[str]:
        return dotted_paths(v)

    @field_validator("body_fn")
    @classmethod
    def _body_fn(cls, v: str | None) -> str | None:
        return _text_fn(v)


class HookRuleTable(Table):
    """One ``[[hooks.rule]]`` (docs/manifests.md "Hook maps")."""

    event: str = Field(min_length=1, max_length=MAX_EVENT_NAME)
    when: Annotated[list[ConditionTable], BeforeValidator(_tables)] = Field(
        default=[], max_length=MAX_LIST_ITEMS
    )
    lifecycle: str | None = None
    attention: str | None = None
    message: str | None = Field(default=None, max_length=MAX_MESSAGE)
    message_from: StrList = []
    message_fn: str | None = None
    cause: str | None = None
    notice: bool = False
    notification: NotificationTable | None = None

    @field_validator("lifecycle")
    @classmethod
    def _lifecycle(cls, v: str | None) -> str | None:
        return None if v is None else one_of(v, HOOK_LIFECYCLES, "lifecycle")

    @field_validator("attention")
    @classmethod
    def _attention(cls, v: str | None) -> str | None:
        return None if v is None else one_of(v, _ATTENTIONS, "attention")

    @field_validator("cause")
    @classmethod
    def _cause(cls, v: str | None) -> str | None:
        return None if v is None else one_of(v, CAUSES, "cause")

    @field_validator("message_from")
    @classmethod
    def _message_from(cls, v: list[str]) -> list[str]:
        return dotted_paths(v)

    @field_validator("message_fn")
    @classmethod
    def _message_fn(cls, v: str | None) -> str | None:
        return _text_fn(v)

    @model_validator(mode="after")
    def _notice(self) -> HookRuleTable:
        if self.notice:
            if self.cause is None:
                raise ValueError("'notice' needs a 'cause'")
            has_text = self.message or self.message_from or self.message_fn
            if self.lifecycle or self.attention or has_text:
                raise ValueError("a 'notice' is an alert only: no lifecycle, attention or message")
        return self


class HooksTable(Table):
    """``[hooks]`` settings (its ``rule`` array is validated rule by rule)."""

    adapter: str | None = None
    answer: Literal["typed_text"] | None = None
    tool_events: StrList | None = None

    @field_validator("adapter")
    @classmethod
    def _adapter(cls, v: str | None) -> str | None:
        return None if v is None else one_of(v, tuple(ADAPTER_HOOKS), "adapter")

    @field_validator("tool_events")
    @classmethod
    def _tool_events(cls, v: list[str] | None) -> list[str] | None:
        for event in v or ():
            _event_name(event, "event")
        return v


def _rule(t: HookRuleTable) -> HookRule:
    n = t.notification
    return HookRule(
        event=t.event,
        when=tuple(Condition(tuple(c.field), c.equals, c.contains) for c in t.when),
        lifecycle=None if t.lifecycle is None else Lifecycle(t.lifecycle),
        attention=None if t.attention is None else Attention(t.attention),
        message=Text(tuple(t.message_from), t.message, t.message_fn),
        cause=t.cause,
        notice=t.notice,
        notification=(
            None
            if n is None
            else DraftSpec(n.title, Text(tuple(n.body_from), n.body, n.body_fn), n.severity)
        ),
    )


def build_hooks(data: Any) -> HookMap:
    """``[hooks]`` (with its ``[[hooks.rule]]`` array) → a ``HookMap``.

    Raises:
        ValueError: the first problem, e.g. ``[[hooks.rule]] #2 'Stop': unknown cause 'done'
            (one of …)`` or ``[hooks] adapter: unknown adapter 'x' (one of codex_title)``.
    """
    if not isinstance(data, dict):
        raise ValueError("[hooks]: must be a table")  # noqa: TRY004 - the loader reports ValueError
    settings = validate_table(HooksTable, {k: v for k, v in data.items() if k != "rule"}, "[hooks]")
    tool_events = frozenset(settings.tool_events) if settings.tool_events is not None else None
    tables = data.get("rule", [])
    if not isinstance(tables, list):
        raise ValueError("[[hooks.rule]]: must be an array of tables")
    if len(tables) > MAX_HOOK_RULES:
        raise ValueError(f"[[hooks.rule]]: too many rules ({len(tables)}, max {MAX_HOOK_RULES})")
    rules: dict[str, list[HookRule]] = {}
    for n, table in enumerate(tables, 1):
        event = table.get("event") if isinstance(table, dict) else None
        label = f"#{n} {event!r}" if isinstance(event, str) and len(event) <= 64 else f"#{n}"
        where = f"[[hooks.rule]] {label}"
        if not isinstance(table, dict):
            raise ValueError(f"{where}: must be a table")
        try:
            t = HookRuleTable.model_validate(table)
        except ValidationError as exc:
            raise ValueError(f"{where}: {first_error(exc)}") from None
        log_unknown(where, t)
        if tool_events is not None and t.event in tool_events:
            raise ValueError(f"{where}: {t.event!r} is a tool event, so no rule applies to it")
        rules.setdefault(t.event, []).append(_rule(t))
    return HookMap(
        rules={e: tuple(rs) for e, rs in rules.items()},
        tool_events=tool_events,
        answer=settings.answer,
        adapter=settings.adapter,
    )
