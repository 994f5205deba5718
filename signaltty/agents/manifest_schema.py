"""The manifest schema: one parsed TOML document → a validated ``Manifest`` (agents.md §4.1, §5.1).

Tables are validated one by one with strict pydantic models, so every error names the table
it comes from (``[agent] id: …``, ``[[screen]] 'busy': unknown region 'bottm'``). The screen
and hook tables live in ``manifest_screen.py`` and ``manifest_hooks.py``; reading files and
turning errors into ``ManifestError`` is ``manifest_loader.py``.

Validation keeps which keys a file set explicitly (``Manifest.raw``), because a user file
overriding a bundled entry replaces only the keys it names (§4.2); derived defaults
(``id`` from the file stem, ``detect`` from ``binaries``, ``command`` from ``detect``) are
therefore computed by ``catalog.py`` after merging, not here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field, field_validator, model_validator

from signaltty.agents.hookrules.hook_map import HookMap
from signaltty.agents.manifest_fields import (
    BIDI_CONTROLS,
    ENV_NAME_RE,
    ID_RE,
    MANIFEST_KINDS,
    MAX_DISPLAY_NAME,
    MAX_ENV_NAME,
    MAX_ENV_VARS,
    RESERVED_ENV,
    RESERVED_ENV_PREFIX,
    StrList,
    Table,
    bare_name,
    dotted_paths,
    explicit,
    has_control,
    https_url,
    log,
    no_nul_args,
    one_of,
    validate_table,
)
from signaltty.agents.manifest_hooks import LifecycleOverlay, build_hooks, build_lifecycle
from signaltty.agents.manifest_screen import (
    TitleStatusTable,
    check_pattern_total,
    compile_screen_rules,
    compile_title_rules,
)
from signaltty.core import argv_safety
from signaltty.core.screen_rules import ScreenRule


class AgentTable(Table):
    """``[agent]`` (agents.md §4.1)."""

    id: str | None = None
    kind: str
    display_name: str | None = Field(default=None, min_length=1, max_length=MAX_DISPLAY_NAME)
    binaries: StrList = []
    order: int | None = None
    homepage: str | None = None
    install_url: str | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, v: str | None) -> str | None:
        if v is not None and not ID_RE.match(v):
            raise ValueError(f"{v!r} must match {ID_RE.pattern}")
        return v

    @field_validator("display_name")
    @classmethod
    def _display_name(cls, v: str | None) -> str | None:
        # Shown in terminals and desktop menus: escape sequences or bidi overrides there
        # could rewrite what the user sees, so they are refused rather than silently dropped.
        if v is not None and (has_control(v) or any(c in BIDI_CONTROLS for c in v)):
            raise ValueError(f"{v!r} contains a control character, escape or bidi override")
        return v

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        return one_of(v, MANIFEST_KINDS, "kind")

    @field_validator("binaries")
    @classmethod
    def _binaries(cls, v: list[str]) -> list[str]:
        for name in v:
            bare_name(name, "a binary name")
            star = name.find("*")
            if star != -1 and (star != len(name) - 1 or star == 0):
                raise ValueError(f"{name!r}: '*' is allowed only at the end of a non-empty prefix")
        return v

    @field_validator("homepage", "install_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        return https_url(v)


class PromptTable(Table):
    """``[launch] prompt`` (agents.md §4.1, §4.4)."""

    mode: Literal["argv", "flag", "after-start"] = "argv"
    separator: str | None = Field(default=None, min_length=1)
    flag: str | None = Field(default=None, min_length=1)
    delay_ms: int = Field(default=3000, ge=0, le=60000)

    @model_validator(mode="after")
    def _flag_needed(self) -> PromptTable:
        if self.mode == "flag" and not self.flag:
            raise ValueError("mode 'flag' needs a 'flag'")
        return self


class LaunchTable(Table):
    """``[launch]`` (agents.md §4.1)."""

    command: str | None = None
    detect: StrList | None = None
    requires: StrList = []
    args: StrList = []
    prompt: PromptTable = PromptTable()
    bypass_args: StrList = []
    bypass_env: dict[str, str] = {}
    continue_args: StrList = []

    @field_validator("command")
    @classmethod
    def _command(cls, v: str | None) -> str | None:
        return None if v is None else bare_name(v, "the command")

    @field_validator("detect", "requires")
    @classmethod
    def _names(cls, v: list[str] | None) -> list[str] | None:
        for name in v or ():
            bare_name(name, "a name")
        return v

    @field_validator("args", "bypass_args", "continue_args")
    @classmethod
    def _args(cls, v: list[str]) -> list[str]:
        return no_nul_args(v, "argument")

    @field_validator("bypass_env", mode="before")
    @classmethod
    def _env_size(cls, v: Any) -> Any:
        if isinstance(v, dict):
            if len(v) > MAX_ENV_VARS:
                raise ValueError(f"too many entries ({len(v)}, max {MAX_ENV_VARS})")
            # Checked here so a huge name never ends up in the error's location.
            for key in v:
                if isinstance(key, str) and len(key) > MAX_ENV_NAME:
                    raise ValueError(
                        f"variable name too long ({len(key)} characters, max {MAX_ENV_NAME})"
                    )
        return v

    @field_validator("bypass_env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            if not ENV_NAME_RE.match(key):
                raise ValueError(
                    f"bad environment variable name {key!r} (must match {ENV_NAME_RE.pattern})"
                )
            if key in RESERVED_ENV or key.startswith(RESERVED_ENV_PREFIX):
                raise ValueError(f"{key!r} is reserved (PATH and SIGNALTTY_* cannot be set)")
            if "\x00" in value:
                raise ValueError(f"value of {key!r} contains a NUL byte")
        return v


class DiscoverTable(Table):
    """``[session.discover]`` (tier 3: validated, unused)."""

    root: str
    format: Literal["jsonl", "json"]
    id: str
    cwd: str | None = None


def _template(v: list[str] | None, what: str) -> list[str] | None:
    if v is None:
        return None
    if not v:
        raise ValueError(f"{what} must not be empty")
    return no_nul_args(v, what)


class SessionTable(Table):
    """``[session]`` (agents.md §4.1)."""

    key: str | None = None
    # the payload fields holding the session id, tried in order (default ``session_id``)
    keys: StrList | None = None
    resume: StrList | None = None
    create: StrList | None = None
    discover: DiscoverTable | None = None
    # Which ids are accepted as this agent's session id (core/argv_safety.py GRAMMARS).
    id_format: str | None = None

    @field_validator("id_format")
    @classmethod
    def _id_format(cls, v: str | None) -> str | None:
        return None if v is None else one_of(v, tuple(argv_safety.GRAMMARS), "id_format")

    @field_validator("key")
    @classmethod
    def _key(cls, v: str | None) -> str | None:
        if v is not None and (not v or any(not part for part in v.split("."))):
            raise ValueError(f"{v!r} is not a dotted key path")
        return v

    @field_validator("keys")
    @classmethod
    def _keys(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else dotted_paths(v)

    @field_validator("resume")
    @classmethod
    def _resume(cls, v: list[str] | None) -> list[str] | None:
        v = _template(v, "resume")
        if v is not None and not any("{id}" in a or "{session_id}" in a for a in v):
            raise ValueError("resume must contain {id} (or {session_id})")
        return v

    @field_validator("create")
    @classmethod
    def _create(cls, v: list[str] | None) -> list[str] | None:
        return _template(v, "create")


@dataclass(frozen=True, slots=True)
class Manifest:
    """One validated manifest file.

    Attributes:
        file: path as a string.
        source: ``bundled`` or ``user``.
        id: the catalog id (``[agent] id``, else the file stem).
        kind: the declared kind.
        raw: the explicitly set keys per table, after validation: ``agent``, ``launch``,
            ``session`` (each a dict of the keys the file named; ``launch.prompt`` and
            ``session.discover`` are whole sub-tables), used for per-key merging (§4.2).
        lifecycle: ``[lifecycle.<Event>]`` maps by exact event name.
        hooks: the ``[hooks]`` map, or ``None`` when the file has no ``[hooks]`` table.
        title_rules: rules compiled from ``[title_status]``, or ``None`` when the table is absent.
        screen_rules: compiled ``[[screen]]`` rules, or ``None`` when there are none.
    """

    file: str
    source: str
    id: str
    kind: str
    raw: dict[str, dict[str, Any]]
    lifecycle: dict[str, LifecycleOverlay] = field(default_factory=dict)
    hooks: HookMap | None = None
    title_rules: tuple[ScreenRule, ...] | None = None
    screen_rules: tuple[ScreenRule, ...] | None = None

    @property
    def has_hook_content(self) -> bool:
        """True when the file has ``[session]``, ``[lifecycle.*]`` or ``[hooks]`` (§4.3)."""
        return bool(self.raw.get("session")) or bool(self.lifecycle) or self.hooks is not None

    @property
    def has_rules(self) -> bool:
        """True when the file defines ``[title_status]`` or ``[[screen]]`` rules."""
        return bool(self.title_rules) or bool(self.screen_rules)


_TOP_KEYS: Final = frozenset(
    {"schema", "agent", "launch", "session", "lifecycle", "hooks", "title_status", "screen"}
)


def _check_misplaced(data: Mapping[str, Any]) -> None:
    """Refuse a top-level table name used as a key inside another table (attack pass 4, N9).

    In TOML every key after a ``[agent]`` header belongs to ``[agent]``, so ``hooks = 5``
    written at the end of a file is ``[agent] hooks``: an unknown key, silently ignored,
    while its author meant the ``[hooks]`` table. No table has such a key (only
    ``[lifecycle.<Event>]`` and ``[[hooks.rule]]`` have ``lifecycle``), so it is an error.

    Raises:
        ValueError: naming the table and the key.
    """
    tables: list[tuple[str, Any, frozenset[str]]] = []
    for name in ("agent", "launch", "session", "hooks", "title_status"):
        tables.append((f"[{name}]", data.get(name), frozenset()))
    lifecycle = data.get("lifecycle")
    if isinstance(lifecycle, Mapping):
        for event, table in lifecycle.items():
            tables.append((f"[lifecycle.{event}]", table, frozenset({"lifecycle"})))
    hooks = data.get("hooks")
    rules = hooks.get("rule") if isinstance(hooks, Mapping) else None
    for i, table in enumerate(rules if isinstance(rules, list) else [], 1):
        tables.append((f"[[hooks.rule]] #{i}", table, frozenset({"lifecycle"})))
    screens = data.get("screen")
    for i, table in enumerate(screens if isinstance(screens, list) else [], 1):
        tables.append((f"[[screen]] #{i}", table, frozenset()))
    for where, table, allowed in tables:
        if not isinstance(table, Mapping):
            continue  # its own validation names the type error
        for key in sorted(set(table) & (_TOP_KEYS - allowed)):
            raise ValueError(
                f"{where} {key}: {key!r} is a top-level table, not a key of {where} (in TOML a"
                f" key after a table header belongs to that table): move it above the first"
                f" header or write it as its own table"
            )


def build_manifest(data: Mapping[str, Any], *, file: str, source: str) -> Manifest:
    """Validate a parsed TOML document.

    Args:
        data: ``tomllib`` output.
        file: the file's path (used in rule ``file`` fields: its basename; and for the id).
        source: ``bundled`` or ``user``.

    Returns:
        The validated ``Manifest``.

    Raises:
        ValueError: the first schema problem, naming its table.
        RecursionError: a document nested too deeply.

    Spec: agents.md §4.1, §5.1.
    """
    schema = data.get("schema", 1)
    if type(schema) is not int or schema != 1:
        raise ValueError(f"schema: unsupported schema {schema!r} (only 1)")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        log.debug("manifest.unknown_keys", file=file, table="(top level)", keys=unknown)
    if "agent" not in data:
        raise ValueError("[agent]: required table is missing")
    agent = validate_table(AgentTable, data["agent"], "[agent]")
    _check_misplaced(data)
    raw: dict[str, dict[str, Any]] = {"agent": explicit(agent)}
    if "launch" in data:
        raw["launch"] = explicit(validate_table(LaunchTable, data["launch"], "[launch]"))
    if "session" in data:
        raw["session"] = explicit(validate_table(SessionTable, data["session"], "[session]"))
    lifecycle = build_lifecycle(data["lifecycle"]) if "lifecycle" in data else {}
    hooks = build_hooks(data["hooks"]) if "hooks" in data else None
    check_pattern_total(data)
    name = os.path.basename(file)
    title_rules = None
    if "title_status" in data:
        ts = validate_table(TitleStatusTable, data["title_status"], "[title_status]")
        title_rules = compile_title_rules(ts, name, source)
    screen_rules = None
    if "screen" in data:
        screen_rules = compile_screen_rules(data["screen"], name, source)
    mid = agent.id if agent.id is not None else Path(file).stem
    if agent.id is None and not ID_RE.match(mid):
        raise ValueError(f"[agent] id: file name {mid!r} is not a valid id; set [agent] id")
    return Manifest(
        file=file,
        source=source,
        id=mid,
        kind=agent.kind,
        raw=raw,
        lifecycle=lifecycle,
        hooks=hooks,
        title_rules=title_rules,
        screen_rules=screen_rules,
    )
