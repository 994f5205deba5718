"""Daemon configuration: ``config.toml`` + environment, validated with pydantic.

Precedence: flags > environment > file > defaults. An invalid file gives the defaults and a
``config_error`` (``server.status``); unknown keys give warnings. Read at start only.
Spec: desktop-and-service.md §10.1.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from signaltty.core import limits
from signaltty.core.mirror import valid_host_name
from signaltty.proto.sshlink import BadHost, parse_host


class _Section(BaseModel):
    # strict: "3" is not a number and 1 is not a boolean (ints are still accepted for floats)
    model_config = ConfigDict(extra="ignore", strict=True)


class ServerConfig(_Section):
    stuck_recovery_s: float = Field(20, ge=0)
    screen_sweep_ms: int = Field(500, ge=100, le=5000)
    proc_refresh_s: float = Field(10, ge=2, le=300)
    snapshot_debounce_s: float = Field(2, ge=0.5, le=60)
    max_live_panes: int = Field(512, ge=1, le=512)
    # Bounded resources (issue 10 §10; defaults in core/limits.py, documented in
    # docs/architecture.md "Bounded resources").
    idle_timeout_s: float = Field(limits.IDLE_TIMEOUT_DEFAULT_S, ge=1, le=3600)
    outbound_total_mib: int = Field(limits.OUTBOUND_TOTAL_BYTES_DEFAULT >> 20, ge=8, le=4096)
    wait_regex_budget_s: float = Field(limits.WAIT_REGEX_BUDGET_DEFAULT_S, ge=0.1, le=60)


class NotificationsConfig(_Section):
    enabled: bool = True
    mode: Literal["quiet", "normal", "all"] = "normal"
    settle_ms: int = Field(1000, ge=0, le=60000)
    suppress_when_attached: bool = True
    sound: bool = False


class AgentsConfig(_Section):
    automatic_permissions: bool = False
    dir: str = ""


class PermissionsConfig(_Section):
    """``[permissions]`` (issue #10 item 3).

    ``answer_from_panes``: when false (the default), a permission answer whose caller runs
    inside a signaltty pane (by ancestry, session or ``SIGNALTTY_PANE``) is refused with
    ``FORBIDDEN``, so an agent's tools cannot approve their own or another pane's prompts.
    True restores answers from any same-user process.

    ``hidden_wait_s`` (seconds, 1–120, default 10): see below.
    """

    answer_from_panes: bool = False
    # Issue 11 item 3: how long an agent whose own dialog is hidden while its native
    # permission hook waits (Codex shows "Running hook") is kept waiting when nobody can
    # answer elsewhere; then the wait ends without a verdict and the agent asks in its
    # terminal. Rule in server/hooks.py ``HookService.native_wait_s``.
    hidden_wait_s: float = Field(10, ge=1, le=120)


class DesktopConfig(_Section):
    """``[desktop]`` (issue 13 item 6; docs/configuration.md, docs/desktop.md).

    ``terminal``: the argv that opens a terminal when a notification is clicked. Unset: the
    first of ``$TERMINAL``, ``xdg-terminal-exec``, ``x-terminal-emulator`` (macOS:
    Terminal). An element that is exactly ``{attach}`` is replaced by the attach command,
    otherwise the attach command is appended; ``{pane}`` anywhere in an element becomes
    the pane id. Rules in ``signaltty/desktop/terminal.py``.
    """

    terminal: list[str] | None = Field(None, min_length=1, max_length=64)

    @field_validator("terminal")
    @classmethod
    def _argv(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if not value[0].strip():
            raise ValueError("the program (first element) must not be empty")
        for part in value:
            if "\x00" in part or len(part) > 4096:
                raise ValueError("elements must not contain NUL or exceed 4096 characters")
        return value


class DbusConfig(_Section):
    enabled: bool = True


class PersistenceConfig(_Section):
    save_tails: bool = True


class LoggingConfig(_Section):
    level: Literal["debug", "info", "warning", "error"] = "info"


class HostEntry(BaseModel):
    """``[hosts.NAME]``: a host whose daemon this one watches over ssh (issue 16 item 3).

    ``target`` is what ssh takes (an alias, ``user@host``, ``ssh://user@host:port``; checked
    by ``proto.sshlink.parse_host``: nothing starting with ``-``); ``socket`` the daemon's
    socket on that host when it is not the default. docs/remote.md "Watched hosts".
    """

    model_config = ConfigDict(extra="forbid", strict=True)
    target: str = Field(min_length=1, max_length=1024)
    socket: str | None = Field(None, min_length=1, max_length=4096)
    # the remote shell's command line for signaltty there (``bridge …`` is appended), as
    # $SIGNALTTY_REMOTE_COMMAND is for --host: a pipx/--user install in ~/.local/bin
    remote_command: str | None = Field(None, min_length=1, max_length=4096)

    @field_validator("target")
    @classmethod
    def _target(cls, value: str) -> str:
        try:
            parse_host(value)
        except BadHost as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("remote_command")
    @classmethod
    def _remote_command(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or any(c in value for c in "\x00\n\r")):
            raise ValueError("remote_command must be one non-empty line")
        return value

    @field_validator("socket")
    @classmethod
    def _socket(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("/") or "\x00" in value):
            raise ValueError("socket must be an absolute path")
        return value


def parse_hosts(raw: dict[str, Any]) -> tuple[dict[str, HostEntry], list[str]]:
    """``[hosts]`` entry by entry: a bad entry is left out with one error line, the others
    are kept (one typo must not stop every host being watched).

    Returns:
        ``(name → entry, errors)``; names follow ``core.mirror.HOST_NAME``.
    """
    out: dict[str, HostEntry] = {}
    errors: list[str] = []
    for name, value in raw.items():
        if not valid_host_name(name):
            errors.append(
                f"hosts.{name[:40]!r}: a host name is 1-32 of A-Z a-z 0-9 _ . - "
                "(not starting with . or -)"
            )
            continue
        try:
            out[name] = HostEntry.model_validate(value)
        except ValidationError as exc:
            problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
            errors.append(f"hosts.{name}: {'; '.join(problems)}"[:500])
    return out, errors


class Config(_Section):
    """The whole ``config.toml`` (every section optional)."""

    server: ServerConfig = ServerConfig()
    notifications: NotificationsConfig = NotificationsConfig()
    agents: AgentsConfig = AgentsConfig()
    permissions: PermissionsConfig = PermissionsConfig()
    desktop: DesktopConfig = DesktopConfig()
    dbus: DbusConfig = DbusConfig()
    persistence: PersistenceConfig = PersistenceConfig()
    logging: LoggingConfig = LoggingConfig()
    # [hosts.NAME] tables, read entry by entry by ``parse_hosts`` (lenient: see there)
    hosts: dict[str, Any] = Field(default_factory=dict)


def _unknown_keys(data: dict[str, object], model: type[BaseModel], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key, value in data.items():
        fld = model.model_fields.get(key)
        if fld is None:
            out.append(prefix + key)
            continue
        sub = fld.annotation
        if isinstance(value, dict) and isinstance(sub, type) and issubclass(sub, BaseModel):
            out += _unknown_keys(value, sub, prefix + key + ".")
    return out


def load_config(
    path: Path, env: dict[str, str] | None = None, *, log_level: str | None = None
) -> tuple[Config, str | None, list[str]]:
    """Read ``path`` (missing = defaults), apply the environment and flags.

    Returns:
        ``(config, config_error or None, warnings)``.
    """
    env = dict(os.environ) if env is None else env
    error: str | None = None
    warnings: list[str] = []
    data: dict[str, object] = {}
    try:
        if path.exists() and not path.is_file():
            raise OSError(f"not a regular file: {path}")  # a FIFO would block start-up
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        data = {}
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        error = f"{path}: {exc if not isinstance(exc, RecursionError) else 'nested too deeply'}"
        data = {}
    try:
        config = Config.model_validate(data)
        unknown = _unknown_keys(data, Config)
        if unknown:
            warnings.append(f"unknown config keys ignored: {', '.join(sorted(unknown))}")
    except ValidationError as exc:
        # every bad key at once: fixing them one restart at a time is a poor first day
        problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        error = f"{path}: {'; '.join(problems)}"
        config = Config()
    if env.get("SIGNALTTY_NOTIFY") == "0":
        config.notifications.enabled = False
    mode = env.get("SIGNALTTY_NOTIFY_MODE")
    if mode in ("quiet", "normal", "all"):
        config.notifications.mode = mode  # type: ignore[assignment]
    elif mode:
        warnings.append(f"SIGNALTTY_NOTIFY_MODE={mode!r} ignored (quiet|normal|all)")
    if env.get("SIGNALTTY_DBUS") == "0":
        config.dbus.enabled = False
    level = log_level or env.get("SIGNALTTY_LOG_LEVEL")
    if level:
        if level.lower() in ("debug", "info", "warning", "error"):
            config.logging.level = level.lower()  # type: ignore[assignment]
        else:
            warnings.append(f"log level {level!r} ignored (debug|info|warning|error)")
    return config, error, warnings
