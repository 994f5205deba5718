"""Manifest screen rules: ``[title_status]`` and ``[[screen]]`` tables compiled to ``ScreenRule`` s.

Patterns compile with ``core.screen_rules.compile_pattern`` (size and nesting checked before
the ``regex`` library sees them); every error names the rule (``[[screen]] 'busy': unknown
region 'bottm'``). Spec: agents.md §5.1; docs/manifests.md §4.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from signaltty.agents.manifest_fields import (
    MAX_PATTERNS_PER_FILE,
    MAX_RULE_ID,
    MAX_SCREEN_RULES,
    TITLE_PRIORITY,
    TITLE_STATES,
    StrList,
    Table,
    first_error,
    log_unknown,
    one_of,
)
from signaltty.core.screen_rules import (
    LINE_REGIONS,
    MAX_RULE_LINES,
    REGIONS,
    STATES,
    PatternError,
    ScreenRule,
    compile_pattern,
)


class TitleStatusTable(Table):
    """``[title_status]`` (agents.md §4.1; ATP ``titleStatus``, ``attention`` = ``blocked``)."""

    working: StrList = []
    blocked: StrList = []
    idle: StrList = []
    attention: StrList = []


class ScreenTable(Table):
    """One ``[[screen]]`` table before compilation (agents.md §5.1)."""

    id: str = Field(min_length=1, max_length=MAX_RULE_ID)
    state: str
    region: str = "bottom"
    lines: int | None = None
    regex: StrList = []
    all: StrList = []
    not_: StrList = Field(default=[], alias="not")
    priority: int = 0
    # what the person should do, for a ``blocked`` rule (the pane's last message, so the
    # notification says it; issue 11 item 4)
    message: str | None = Field(None, min_length=1, max_length=300)
    # an ``idle`` screen the agent shows only once its turn is over, also when it sends no
    # hook for that (Claude's prompt after Esc): a hooked pane left working settles within
    # seconds, not after stuck-working recovery (issue 11 item 1)
    ends_turn: bool = False
    # a ``blocked`` dialog the agent's hooks never report: on a hooked pane it counts once it
    # has won for a few seconds with no hook meanwhile (Cursor's "Run this command?", issue 11
    # item 11)
    when_hooked: bool = False

    @field_validator("state")
    @classmethod
    def _state(cls, v: str) -> str:
        return one_of(v, STATES, "state")

    @field_validator("region")
    @classmethod
    def _region(cls, v: str) -> str:
        if v not in REGIONS:  # the message agents.md §4.1 gives as its example, verbatim
            raise ValueError(f"unknown region {v!r}")
        return v

    @model_validator(mode="after")
    def _shape(self) -> ScreenTable:
        if self.lines is not None:
            if self.region not in LINE_REGIONS:
                raise ValueError(f"'lines' is not allowed with region {self.region!r}")
            if not 1 <= self.lines <= MAX_RULE_LINES:
                raise ValueError(f"lines {self.lines} out of range 1–{MAX_RULE_LINES}")
        if not self.regex and not self.all:
            raise ValueError("needs a non-empty 'regex' or 'all'")
        return self


def _compile_list(patterns: list[str], where: str) -> tuple[Any, ...]:
    out = []
    for text in patterns:
        try:
            out.append(compile_pattern(text))
        except PatternError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return tuple(out)


def compile_title_rules(t: TitleStatusTable, file: str, source: str) -> tuple[ScreenRule, ...]:
    """``[title_status]`` → one title rule per non-empty list (priority 1200, id ``title_<state>``).

    Raises:
        ValueError: a pattern does not compile (message names ``[title_status]``).
    """
    # ATP's ``attention`` list joins ``blocked``; each key is compiled on its own so an error
    # names the key the author wrote.
    keys = {"working": ("working",), "blocked": ("blocked", "attention"), "idle": ("idle",)}
    rules = []
    for state in TITLE_STATES:
        pats: tuple[Any, ...] = ()
        for key in keys[state]:
            pats += _compile_list(getattr(t, key), f"[title_status] {key}")
        if not pats:
            continue
        rules.append(
            ScreenRule(
                id=f"title_{state}",
                state=state,
                region="title",
                regex=pats,
                priority=TITLE_PRIORITY,
                file=file,
                source=source,
            )
        )
    return tuple(rules)


def compile_screen_rules(tables: Any, file: str, source: str) -> tuple[ScreenRule, ...]:
    """``[[screen]]`` array → compiled rules in declaration order (agents.md §5.1).

    Raises:
        ValueError: the first problem, e.g. ``[[screen]] 'busy': unknown region 'bottm'``.
    """
    if not isinstance(tables, list):
        raise ValueError("[[screen]]: must be an array of tables")  # noqa: TRY004 - pydantic and the loader report ValueError
    if len(tables) > MAX_SCREEN_RULES:
        raise ValueError(f"[[screen]]: too many rules ({len(tables)}, max {MAX_SCREEN_RULES})")
    rules: list[ScreenRule] = []
    seen: set[str] = set()
    for n, data in enumerate(tables, 1):
        if not isinstance(data, dict):
            raise ValueError(f"[[screen]] #{n}: must be a table")  # noqa: TRY004 - pydantic and the loader report ValueError
        rid = data.get("id")
        label = f"'{rid}'" if isinstance(rid, str) and rid else f"#{n}"
        try:
            t = ScreenTable.model_validate(data)
        except ValidationError as exc:
            raise ValueError(f"[[screen]] {label}: {_strip_loc(exc)}") from None
        log_unknown(f"[[screen]] {label}", t)
        if t.id in seen:
            raise ValueError(f"[[screen]] {label}: duplicate rule id")
        seen.add(t.id)
        where = f"[[screen]] {label}"
        rules.append(
            ScreenRule(
                id=t.id,
                state=t.state,
                region=t.region,
                lines=t.lines,
                regex=_compile_list(t.regex, f"{where} regex"),
                all=_compile_list(t.all, f"{where} all"),
                not_=_compile_list(t.not_, f"{where} not"),
                priority=t.priority,
                file=file,
                source=source,
                message=t.message,
                ends_turn=t.ends_turn and t.state == "idle",
                when_hooked=t.when_hooked and t.state == "blocked",
            )
        )
    return tuple(rules)


def _strip_loc(exc: ValidationError) -> str:
    """Rule-level errors name no field (``unknown region 'bottm'``); field errors keep it."""
    err = exc.errors()[0]
    msg = first_error(exc)
    field_name = ".".join(str(p) for p in err["loc"])
    validator_field = err["type"] == "value_error" and field_name in ("state", "region")
    return msg.split(": ", 1)[1] if validator_field else msg


def check_pattern_total(data: Mapping[str, Any]) -> None:
    """Refuse a file with more than ``MAX_PATTERNS_PER_FILE`` patterns before compiling any."""
    total = 0
    ts = data.get("title_status")
    if isinstance(ts, dict):
        total += sum(
            len(ts[k])
            for k in ("working", "blocked", "idle", "attention")
            if isinstance(ts.get(k), list)
        )
    screen = data.get("screen")
    if isinstance(screen, list):
        for t in screen:
            if isinstance(t, dict):
                total += sum(
                    len(t[k]) for k in ("regex", "all", "not") if isinstance(t.get(k), list)
                )
    if total > MAX_PATTERNS_PER_FILE:
        raise ValueError(
            f"[title_status]/[[screen]]: too many patterns ({total}, "
            f"max {MAX_PATTERNS_PER_FILE} per file)"
        )
