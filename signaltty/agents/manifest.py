"""One catalog manifest file: safe reading, TOML parsing and schema validation (agents.md §4.1, §5.1).

A manifest is read with a size cap and without ever blocking (FIFOs and other non-regular
files are refused), parsed with ``tomllib`` and validated table by table with pydantic v2, so
every error message names the table it comes from (``[agent] id: …``, ``[[screen]] 'busy':
unknown region 'bottm'``). Any problem raises ``ManifestError(file, error)``; the catalog
(``catalog.py``) turns it into one ``{file, error}`` failure and keeps loading the others.

Validation keeps which keys a file set explicitly (``Manifest.raw``), because a user file
overriding a bundled entry replaces only the keys it names (§4.2); derived defaults
(``id`` from the file stem, ``detect`` from ``binaries``, ``command`` from ``detect``) are
therefore computed by ``build_entry`` after merging, not here.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tomllib
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Final, Literal
from urllib.parse import urlsplit

import structlog
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from signaltty.core import argv_safety
from signaltty.core.screen_rules import (
    LINE_REGIONS,
    MAX_RULE_LINES,
    REGIONS,
    STATES,
    PatternError,
    ScreenRule,
    compile_pattern,
)
from signaltty.core.states import Attention, Lifecycle

log = structlog.get_logger("signaltty.manifest")

# Far above any real manifest (the largest bundled rule set is a few KiB); the cap keeps a
# stray multi-megabyte file from costing memory or parse time in the daemon.
MAX_MANIFEST_BYTES: Final = 1 << 20
ID_RE: Final = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
# Kinds a manifest may declare: the closed taxonomy without ``none`` (agents.md §1).
MANIFEST_KINDS: Final = ("claude", "codex", "opencode", "cursor", "pi", "generic")
# Hook events may set these; ``unknown``/``exited`` belong to spawn and process exit only.
HOOK_LIFECYCLES: Final = ("working", "blocked", "done", "idle", "failed")
MAX_DISPLAY_NAME: Final = 60
MAX_MESSAGE: Final = 300
MAX_RULE_ID: Final = 64
MAX_EVENT_NAME: Final = 64  # protocol.md §6 hook-event ``event``
# Size caps (issue #4 "Bad input"): a 1 MiB file may still hold 100 000 patterns or names,
# and loading runs at start and on every reload; real manifests stay far below (the largest
# bundled file has 16 rules, 45 patterns, 6 patterns per list, 4 binaries).
MAX_SCREEN_RULES: Final = 200  # [[screen]] tables per file
MAX_LIST_ITEMS: Final = 64  # entries of any array: binaries, detect, requires, args, patterns …
MAX_PATTERNS_PER_FILE: Final = 1000  # patterns of [title_status] and [[screen]] together
MAX_ENV_VARS: Final = 64  # [launch] bypass_env entries
MAX_ENV_NAME: Final = 256  # characters of a bypass_env variable name
MAX_LIFECYCLE_EVENTS: Final = 128  # [lifecycle.<Event>] tables per file
MAX_STRING: Final = 4096  # characters of any string value
ENV_NAME_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Kept equal to launch.py's _RESERVED_ENV/_RESERVED_ENV_PREFIX (checked by a test): the
# hydrated PATH and signaltty's own pane variables cannot be replaced by ``bypass_env``.
RESERVED_ENV: Final = frozenset({"PATH"})
RESERVED_ENV_PREFIX: Final = "SIGNALTTY_"
# Directional formatting characters that can make a name display as something else.
BIDI_CONTROLS: Final = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
TITLE_PRIORITY: Final = 1200
TITLE_STATES: Final = ("working", "blocked", "idle")
KEEP: Final = "keep"


def _one_of(value: str, allowed: Collection[str], what: str) -> str:
    """``value`` if it is one of ``allowed``; else the error lists them (newcomers guess)."""
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r} (one of {', '.join(allowed)})")
    return value


class ManifestError(Exception):
    """A manifest file that cannot be used; it is skipped whole (agents.md §4.1).

    Attributes:
        file: the file's path as a string.
        error: one-line reason naming the table, e.g. ``[[screen]] 'busy': unknown region 'bottm'``.
    """

    def __init__(self, file: str, error: str) -> None:
        super().__init__(f"{file}: {error}")
        self.file = file
        self.error = error


# --------------------------------------------------------------------------- reading


def read_manifest_bytes(path: Path, limit: int = MAX_MANIFEST_BYTES) -> bytes:
    """Read a manifest file without blocking and without loading more than ``limit`` bytes.

    ``O_NONBLOCK`` makes opening a FIFO return at once (instead of waiting for a writer), and
    ``fstat`` on the opened descriptor then refuses anything that is not a regular file, with
    no race between the check and the read. A symlink loop fails in ``open`` with ``ELOOP``.

    Args:
        path: the file.
        limit: maximum size in bytes (default 1 MiB).

    Returns:
        The whole content.

    Raises:
        ManifestError: not a regular file, larger than ``limit`` ("file too large"), or any
            ``OSError`` (the message carries its ``strerror``).
    """
    file = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ManifestError(file, "cannot read: symlink loop") from None
        raise ManifestError(file, f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ManifestError(file, "not a regular file")
        if st.st_size > limit:
            raise ManifestError(file, f"file too large ({st.st_size} bytes, limit {limit})")
        chunks: list[bytes] = []
        total = 0
        while True:
            # The file may grow between fstat and read: never take more than limit + 1 bytes.
            chunk = os.read(fd, min(65536, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise ManifestError(file, f"file too large (more than {limit} bytes)")
        return b"".join(chunks)
    except OSError as exc:
        raise ManifestError(file, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def parse_toml(file: str, data: bytes) -> dict[str, Any]:
    """Decode UTF-8 and parse TOML.

    Raises:
        ManifestError: invalid UTF-8, TOML syntax error, or nesting too deep for the parser.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(file, f"not valid UTF-8 (byte {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(file, f"TOML syntax: {exc}") from None
    except RecursionError:
        raise ManifestError(file, "TOML nested too deeply") from None


# --------------------------------------------------------------------------- schema pieces


def _no_plain_string(value: Any) -> Any:
    # A shell-style string would need splitting; the spec forbids splitting anywhere.
    if isinstance(value, str):
        raise ValueError("expected an array of strings, got a string")  # noqa: TRY004 - pydantic and the loader report ValueError
    # Checked before pydantic validates the items, so a 100 000-entry array costs nothing.
    if isinstance(value, list) and len(value) > MAX_LIST_ITEMS:
        raise ValueError(f"too many entries ({len(value)}, max {MAX_LIST_ITEMS})")
    return value


def _has_control(value: str) -> bool:
    # Cc covers C0 (ESC, NUL, newline …), DEL and C1; Zl/Zp are line/paragraph separators.
    return any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in value)


StrList = Annotated[list[str], BeforeValidator(_no_plain_string)]


def _bare_name(value: str, what: str) -> str:
    if not value:
        raise ValueError(f"{what} must not be empty")
    if "/" in value:
        raise ValueError(f"{value!r} must be a bare name (no '/')")
    if value.strip() != value or "\x00" in value:
        raise ValueError(f"{value!r} has surrounding blanks or a NUL byte")
    if value in (".", ".."):
        raise ValueError(f"{value!r} is not a program name")
    if _has_control(value):
        raise ValueError(f"{value!r} contains a control character")
    return value


def _https(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.netloc or any(c.isspace() for c in value):
        raise ValueError(f"{value!r} is not an https:// URL")
    return value


def _no_empty_args(values: list[str], what: str) -> list[str]:
    for v in values:
        if "\x00" in v:
            raise ValueError(f"{what} contains a NUL byte")
    return values


class _Table(BaseModel):
    # strict: "3" is not a number and true is not an int; extra keys are kept for the debug log.
    model_config = ConfigDict(extra="allow", strict=True, frozen=True, str_max_length=MAX_STRING)


class AgentTable(_Table):
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
        if v is not None and (_has_control(v) or any(c in BIDI_CONTROLS for c in v)):
            raise ValueError(f"{v!r} contains a control character, escape or bidi override")
        return v

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        return _one_of(v, MANIFEST_KINDS, "kind")

    @field_validator("binaries")
    @classmethod
    def _binaries(cls, v: list[str]) -> list[str]:
        for name in v:
            _bare_name(name, "a binary name")
            star = name.find("*")
            if star != -1 and (star != len(name) - 1 or star == 0):
                raise ValueError(f"{name!r}: '*' is allowed only at the end of a non-empty prefix")
        return v

    @field_validator("homepage", "install_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        return _https(v)


class PromptTable(_Table):
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


class LaunchTable(_Table):
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
        return None if v is None else _bare_name(v, "the command")

    @field_validator("detect", "requires")
    @classmethod
    def _names(cls, v: list[str] | None) -> list[str] | None:
        for name in v or ():
            _bare_name(name, "a name")
        return v

    @field_validator("args", "bypass_args", "continue_args")
    @classmethod
    def _args(cls, v: list[str]) -> list[str]:
        return _no_empty_args(v, "argument")

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


class DiscoverTable(_Table):
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
    return _no_empty_args(v, what)


class SessionTable(_Table):
    """``[session]`` (agents.md §4.1)."""

    key: str | None = None
    resume: StrList | None = None
    create: StrList | None = None
    discover: DiscoverTable | None = None
    # Which ids are accepted as this agent's session id (core/argv_safety.py GRAMMARS).
    id_format: str | None = None

    @field_validator("id_format")
    @classmethod
    def _id_format(cls, v: str | None) -> str | None:
        return None if v is None else _one_of(v, tuple(argv_safety.GRAMMARS), "id_format")

    @field_validator("key")
    @classmethod
    def _key(cls, v: str | None) -> str | None:
        if v is not None and (not v or any(not part for part in v.split("."))):
            raise ValueError(f"{v!r} is not a dotted key path")
        return v

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


class LifecycleTable(_Table):
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
        if v is not None and v != KEEP and v not in {a.value for a in Attention}:
            raise ValueError(f"unknown attention {v!r} (an attention value, none = clear, or keep)")
        return v


class TitleStatusTable(_Table):
    """``[title_status]`` (agents.md §4.1; ATP ``titleStatus``, ``attention`` = ``blocked``)."""

    working: StrList = []
    blocked: StrList = []
    idle: StrList = []
    attention: StrList = []


class ScreenTable(_Table):
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

    @field_validator("state")
    @classmethod
    def _state(cls, v: str) -> str:
        return _one_of(v, STATES, "state")

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


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class LifecycleOverlay:
    """One ``[lifecycle.<Event>]`` map; ``None`` fields (absent or ``keep``) use the adapter's value.

    ``attention=Attention.NONE`` means *clear* (agents.md §4.1).
    """

    lifecycle: Lifecycle | None = None
    attention: Attention | None = None
    message: str | None = None

    @property
    def empty(self) -> bool:
        """True when the table changes nothing (every field kept)."""
        return self.lifecycle is None and self.attention is None and self.message is None


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
        title_rules: rules compiled from ``[title_status]``, or ``None`` when the table is absent.
        screen_rules: compiled ``[[screen]]`` rules, or ``None`` when there are none.
    """

    file: str
    source: str
    id: str
    kind: str
    raw: dict[str, dict[str, Any]]
    lifecycle: dict[str, LifecycleOverlay] = field(default_factory=dict)
    title_rules: tuple[ScreenRule, ...] | None = None
    screen_rules: tuple[ScreenRule, ...] | None = None

    @property
    def has_hook_content(self) -> bool:
        """True when the file has ``[session]`` or ``[lifecycle.*]`` content (agents.md §4.3)."""
        return bool(self.raw.get("session")) or bool(self.lifecycle)

    @property
    def has_rules(self) -> bool:
        """True when the file defines ``[title_status]`` or ``[[screen]]`` rules."""
        return bool(self.title_rules) or bool(self.screen_rules)


# --------------------------------------------------------------------------- validation


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = err["msg"]
    msg = msg.removeprefix("Value error, ")
    # Pydantic speaks Python ("valid list"); manifest authors write TOML.
    msg = msg.replace("a valid list", "an array").replace("a valid dictionary", "a table")
    return f"{loc}: {msg}" if loc else msg


def _validate(model: type[_Table], data: Any, table: str) -> Any:
    if not isinstance(data, dict):
        raise ValueError(f"{table}: must be a table")  # noqa: TRY004 - pydantic and the loader report ValueError
    try:
        obj = model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{table} {_first_error(exc)}") from None
    _log_unknown(table, obj)
    return obj


def _log_unknown(table: str, obj: BaseModel) -> None:
    if obj.model_extra:
        log.debug("manifest.unknown_keys", table=table, keys=sorted(obj.model_extra))
    for name in type(obj).model_fields:
        sub = getattr(obj, name, None)
        if isinstance(sub, BaseModel):
            _log_unknown(f"{table} {name}", sub)


def _explicit(obj: BaseModel) -> dict[str, Any]:
    """The keys a table set explicitly, as validated values (extras dropped)."""
    out: dict[str, Any] = {}
    for name in obj.model_fields_set:
        if name in type(obj).model_fields:
            out[name] = getattr(obj, name)
    return out


def _compile_list(patterns: list[str], where: str) -> tuple[Any, ...]:
    out = []
    for text in patterns:
        try:
            out.append(compile_pattern(text))
        except PatternError as exc:
            raise ValueError(f"{where}: {exc}") from None
    return tuple(out)


def compile_title_rules(t: TitleStatusTable, file: str, source: str) -> tuple[ScreenRule, ...]:
    """``[title_status]`` → one title rule per non-empty list (priority 1200, ids ``title_<state>``).

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
        _log_unknown(f"[[screen]] {label}", t)
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
            )
        )
    return tuple(rules)


def _strip_loc(exc: ValidationError) -> str:
    """Rule-level errors name no field (``unknown region 'bottm'``); field errors keep it."""
    err = exc.errors()[0]
    msg = _first_error(exc)
    field_name = ".".join(str(p) for p in err["loc"])
    validator_field = err["type"] == "value_error" and field_name in ("state", "region")
    return msg.split(": ", 1)[1] if validator_field else msg


def _check_pattern_total(data: Mapping[str, Any]) -> None:
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
            f"[title_status]/[[screen]]: too many patterns ({total}, max {MAX_PATTERNS_PER_FILE} per file)"
        )


def validate_manifest(data: Mapping[str, Any], *, file: str, source: str) -> Manifest:
    """Validate a parsed TOML document.

    Args:
        data: ``tomllib`` output.
        file: the file's path (used in errors and rule ``file`` fields: its basename).
        source: ``bundled`` or ``user``.

    Returns:
        The validated ``Manifest``.

    Raises:
        ManifestError: the first schema problem, naming its table.

    Spec: agents.md §4.1, §5.1.
    """
    try:
        return _validate_manifest(data, file, source)
    except ValueError as exc:
        raise ManifestError(file, str(exc)) from None
    except RecursionError:
        raise ManifestError(file, "document nested too deeply") from None


_TOP_KEYS: Final = frozenset(
    {"schema", "agent", "launch", "session", "lifecycle", "title_status", "screen"}
)


def _validate_manifest(data: Mapping[str, Any], file: str, source: str) -> Manifest:
    schema = data.get("schema", 1)
    if type(schema) is not int or schema != 1:
        raise ValueError(f"schema: unsupported schema {schema!r} (only 1)")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        log.debug("manifest.unknown_keys", file=file, table="(top level)", keys=unknown)
    if "agent" not in data:
        raise ValueError("[agent]: required table is missing")
    agent: AgentTable = _validate(AgentTable, data["agent"], "[agent]")
    raw: dict[str, dict[str, Any]] = {"agent": _explicit(agent)}
    if "launch" in data:
        raw["launch"] = _explicit(_validate(LaunchTable, data["launch"], "[launch]"))
    if "session" in data:
        raw["session"] = _explicit(_validate(SessionTable, data["session"], "[session]"))
    lifecycle: dict[str, LifecycleOverlay] = {}
    if "lifecycle" in data:
        events = data["lifecycle"]
        if not isinstance(events, dict):
            raise ValueError("[lifecycle]: must contain [lifecycle.<Event>] tables")
        if len(events) > MAX_LIFECYCLE_EVENTS:
            raise ValueError(
                f"[lifecycle]: too many event tables ({len(events)}, max {MAX_LIFECYCLE_EVENTS})"
            )
        for event, table in events.items():
            where = f"[lifecycle.{event}]"
            if not event or len(event) > MAX_EVENT_NAME:
                raise ValueError(f"{where}: event name must be 1–{MAX_EVENT_NAME} characters")
            t: LifecycleTable = _validate(LifecycleTable, table, where)
            lifecycle[event] = LifecycleOverlay(
                lifecycle=None if t.lifecycle in (None, KEEP) else Lifecycle(t.lifecycle),
                attention=None if t.attention in (None, KEEP) else Attention(t.attention),
                message=t.message,
            )
    _check_pattern_total(data)
    name = os.path.basename(file)
    title_rules = None
    if "title_status" in data:
        ts: TitleStatusTable = _validate(TitleStatusTable, data["title_status"], "[title_status]")
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
        title_rules=title_rules,
        screen_rules=screen_rules,
    )


def load_manifest(path: Path, source: str) -> Manifest:
    """Read, parse and validate one manifest file (agents.md §4.1).

    Raises:
        ManifestError: any problem; never anything else.
    """
    file = str(path)
    data = parse_toml(file, read_manifest_bytes(path))
    return validate_manifest(data, file=file, source=source)
