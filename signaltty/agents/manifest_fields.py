"""Shared pieces of the manifest schema: limits, field checks and the pydantic table base.

Every table of a manifest (``manifest_schema.py``, ``manifest_hooks.py``,
``manifest_screen.py``) is a strict, frozen pydantic model derived from ``Table``;
``validate_table`` turns a pydantic error into one line naming the table, e.g.
``[launch] args: expected an array of strings, got a string``. Limits: docs/manifests.md §3.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection
from typing import Annotated, Any, Final, TypeVar
from urllib.parse import urlsplit

import structlog
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from signaltty.core.states import HOOK_CAUSES

log = structlog.get_logger("signaltty.manifest")

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
MAX_HOOK_RULES: Final = 256  # [[hooks.rule]] tables per file
# Alert causes a hook rule may name (core/hooks.py ``Classification.cause``).
CAUSES: Final = HOOK_CAUSES


def one_of(value: str, allowed: Collection[str], what: str) -> str:
    """``value`` if it is one of ``allowed``; else the error lists them (newcomers guess)."""
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r} (one of {', '.join(allowed)})")
    return value


def no_plain_string(value: Any) -> Any:
    # A shell-style string would need splitting; the spec forbids splitting anywhere.
    if isinstance(value, str):
        raise ValueError("expected an array of strings, got a string")  # noqa: TRY004 - pydantic and the loader report ValueError
    # Checked before pydantic validates the items, so a 100 000-entry array costs nothing.
    if isinstance(value, list) and len(value) > MAX_LIST_ITEMS:
        raise ValueError(f"too many entries ({len(value)}, max {MAX_LIST_ITEMS})")
    return value


def has_control(value: str) -> bool:
    # Cc covers C0 (ESC, NUL, newline …), DEL and C1; Zl/Zp are line/paragraph separators.
    return any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in value)


StrList = Annotated[list[str], BeforeValidator(no_plain_string)]


def bare_name(value: str, what: str) -> str:
    if not value:
        raise ValueError(f"{what} must not be empty")
    if "/" in value:
        raise ValueError(f"{value!r} must be a bare name (no '/')")
    if value.strip() != value or "\x00" in value:
        raise ValueError(f"{value!r} has surrounding blanks or a NUL byte")
    if value in (".", ".."):
        raise ValueError(f"{value!r} is not a program name")
    if has_control(value):
        raise ValueError(f"{value!r} contains a control character")
    return value


def https_url(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.netloc or any(c.isspace() for c in value):
        raise ValueError(f"{value!r} is not an https:// URL")
    return value


def no_nul_args(values: list[str], what: str) -> list[str]:
    for v in values:
        if "\x00" in v:
            raise ValueError(f"{what} contains a NUL byte")
    return values


def dotted_paths(values: list[str]) -> list[str]:
    """``values`` when each is a dotted key path (``session.id``: no empty part)."""
    for v in values:
        if not v or any(not part for part in v.split(".")):
            raise ValueError(f"{v!r} is not a dotted key path")
    return values


class Table(BaseModel):
    # strict: "3" is not a number and true is not an int; extra keys are kept for the debug log.
    model_config = ConfigDict(extra="allow", strict=True, frozen=True, str_max_length=MAX_STRING)


T = TypeVar("T", bound=Table)

# --------------------------------------------------------------------------- validation


def first_error(exc: ValidationError) -> str:
    """The first pydantic error as ``loc: message`` in TOML words ("an array", "a table")."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = err["msg"]
    msg = msg.removeprefix("Value error, ")
    # Pydantic speaks Python ("valid list"); manifest authors write TOML.
    msg = msg.replace("a valid list", "an array").replace("a valid dictionary", "a table")
    return f"{loc}: {msg}" if loc else msg


def validate_table(model: type[T], data: Any, table: str) -> T:
    """Validate one table; extra keys are logged at debug level.

    Raises:
        ValueError: not a table, or the first schema problem, prefixed by ``table``.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{table}: must be a table")  # noqa: TRY004 - pydantic and the loader report ValueError
    try:
        obj = model.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{table} {first_error(exc)}") from None
    log_unknown(table, obj)
    return obj


def log_unknown(table: str, obj: BaseModel) -> None:
    """Log the keys a table (and its sub-tables) did not know: typos stay visible."""
    if obj.model_extra:
        log.debug("manifest.unknown_keys", table=table, keys=sorted(obj.model_extra))
    for name in type(obj).model_fields:
        sub = getattr(obj, name, None)
        if isinstance(sub, BaseModel):
            log_unknown(f"{table} {name}", sub)


def explicit(obj: BaseModel) -> dict[str, Any]:
    """The keys a table set explicitly, as validated values (extras dropped)."""
    out: dict[str, Any] = {}
    for name in obj.model_fields_set:
        if name in type(obj).model_fields:
            out[name] = getattr(obj, name)
    return out
