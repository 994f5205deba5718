"""structlog configuration for the daemon, ``integration`` and ``service`` commands (system layer).

Every event goes through stdlib ``logging`` (so records of libraries such as asyncio or
jeepney get the same treatment) to two handlers installed on the root logger: JSON lines
in ``<state dir>/signaltty.log`` (mode 0600, rotated at 8 MiB, one ``.1`` kept) and, when
asked, stderr (``ConsoleRenderer`` on a TTY, one ``key=value`` line per event otherwise,
for the systemd journal). The ``hook-event`` fast path must never import this module.

Spec: desktop-and-service.md §10.2.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any, Final, cast

import structlog

from signaltty.system import paths, statefile

# desktop-and-service.md §10.2: rotated at 8 MiB, one `.1` kept.
LOG_MAX_BYTES: Final = 8 * 1024 * 1024
LOG_BACKUP_COUNT: Final = 1
# desktop-and-service.md §8.1 / §9: files in the state dir are 0600.
_FILE_MODE: Final = 0o600

# desktop-and-service.md §10.1 `[logging] level`, SIGNALTTY_LOG_LEVEL, --log-level.
LEVELS: Final[Mapping[str, int]] = MappingProxyType(
    {
        "debug": logging.DEBUG,
        "info": logging.INFO,
        "warning": logging.WARNING,
        "error": logging.ERROR,
    }
)

# Order of the leading keys in the key=value console line; other keys follow.
_CONSOLE_KEY_ORDER: Final = ("timestamp", "level", "logger", "event")
# Attribute that marks the handlers this module installed (so reconfiguring replaces
# only them and leaves e.g. pytest's capture handler alone).
_OWNED: Final = "_signaltty_owned"


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A ``RotatingFileHandler`` whose files are always mode 0600, whatever the umask."""

    moved_aside: list[str]  # what was at the log path and was moved aside (logged later)

    def _open(self) -> io.TextIOWrapper:
        if not hasattr(self, "moved_aside"):
            self.moved_aside = []

        def opener(path: str, flags: int) -> int:
            # never blocks on a FIFO or follows a symlink planted at the log path (attack
            # pass 4, N5): what is not a regular file is moved aside and the log recreated
            try:
                fd = statefile.open_regular(Path(path), flags, _FILE_MODE)
            except statefile.NotRegularFile as exc:
                aside = statefile.move_aside(Path(path))
                self.moved_aside.append(f"{exc.strerror}; moved to {aside.name}")
                fd = statefile.open_regular(Path(path), flags, _FILE_MODE)
            try:
                os.fchmod(fd, _FILE_MODE)  # an existing file may be looser
            except OSError:
                os.close(fd)
                raise
            return fd

        stream = open(  # noqa: SIM115 - the handler owns and closes the stream
            self.baseFilename,
            self.mode,
            encoding=self.encoding,
            errors=self.errors,
            opener=opener,
        )
        return cast(io.TextIOWrapper, stream)


def parse_level(level: str) -> int:
    """Map a level name to its stdlib number.

    Args:
        level: ``debug``, ``info``, ``warning`` or ``error`` (case and surrounding blanks
            ignored).

    Returns:
        The ``logging`` level number, e.g. 20 for ``info``.

    Raises:
        ValueError: any other name; the message lists the valid ones.

    Spec: desktop-and-service.md §10.1 ``[logging] level``.
    """
    number = LEVELS.get(level.strip().lower()) if isinstance(level, str) else None
    if number is None:
        raise ValueError(f"invalid log level {level!r}: expected one of {', '.join(LEVELS)}")
    return number


def _shared_processors() -> list[Any]:
    """Processors run for every event before rendering (structlog and foreign records)."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def _formatter(renderer: Any, *, format_exceptions: bool) -> structlog.stdlib.ProcessorFormatter:
    """Build a ``ProcessorFormatter`` ending in ``renderer``."""
    final: list[Any] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if format_exceptions:
        final.append(structlog.processors.format_exc_info)
    final.append(renderer)
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(), processors=final
    )


def _console_renderer(stream: IO[str]) -> tuple[Any, bool]:
    """Pick the stderr renderer: ``(renderer, needs format_exc_info)``."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty:
        return structlog.dev.ConsoleRenderer(), False
    # KeyValueRenderer repr()s values, so newlines and control characters stay escaped and
    # every event is exactly one journal line.
    return (
        structlog.processors.KeyValueRenderer(key_order=_CONSOLE_KEY_ORDER, drop_missing=True),
        True,
    )


def _remove_owned_handlers(root: logging.Logger) -> None:
    for handler in list(root.handlers):
        if getattr(handler, _OWNED, False):
            root.removeHandler(handler)
            handler.close()


def configure_logging(
    state_dir: str | os.PathLike[str],
    level: str,
    *,
    console: bool = True,
    max_bytes: int = LOG_MAX_BYTES,
) -> Path:
    """Configure structlog and the root stdlib logger; safe to call again (replaces handlers).

    Creates the state dir (0700) if needed, since logging is configured before paths are
    validated (§2.1 step 1); a tightened state dir is logged as ``paths.state_dir_tightened``.

    Args:
        state_dir: the resolved state directory; the log file is ``<state dir>/signaltty.log``.
        level: ``debug`` | ``info`` | ``warning`` | ``error``; applies to both outputs.
        console: also log to ``sys.stderr`` (as it is at call time).
        max_bytes: rotation threshold of the log file in bytes; only tests lower it.

    Returns:
        The log file path.

    Raises:
        ValueError: ``level`` is not a valid name (nothing is changed then).
        signaltty.system.paths.PathError: the state dir cannot be prepared.
        OSError: the log file cannot be opened.

    Spec: desktop-and-service.md §10.2.
    """
    number = parse_level(level)
    warnings = paths.ensure_state_dir(state_dir)
    log_path = paths.log_file(state_dir)

    file_handler = _PrivateRotatingFileHandler(
        log_path, maxBytes=max_bytes, backupCount=LOG_BACKUP_COUNT, encoding="utf-8"
    )
    file_handler.setFormatter(
        _formatter(structlog.processors.JSONRenderer(), format_exceptions=True)
    )
    handlers: list[logging.Handler] = [file_handler]
    rotated = Path(f"{log_path}.1")
    try:
        if rotated.is_file() and not rotated.is_symlink():  # never chmod a link's target
            os.chmod(rotated, _FILE_MODE)
    except OSError:
        pass
    if console:
        stream = sys.stderr
        renderer, format_exceptions = _console_renderer(stream)
        console_handler = logging.StreamHandler(stream)
        console_handler.setFormatter(_formatter(renderer, format_exceptions=format_exceptions))
        handlers.append(console_handler)

    root = logging.getLogger()
    _remove_owned_handlers(root)
    for handler in handlers:
        setattr(handler, _OWNED, True)
        handler.setLevel(number)
        root.addHandler(handler)
    root.setLevel(number)

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached: a module-level logger first used before this call (or before a
        # reconfiguration) must still follow the current configuration.
        cache_logger_on_first_use=False,
    )

    log = get_logger("signaltty.logging")
    for message in warnings:
        log.warning("paths.state_dir_tightened", detail=message)
    for message in getattr(file_handler, "moved_aside", ()):
        log.warning("logging.file_not_regular", path=str(log_path), detail=message)
    return log_path


def reset_logging() -> None:
    """Remove and close the handlers installed by :func:`configure_logging` (idempotent).

    Used at daemon exit and by tests. structlog keeps its configuration, so later events
    fall through to stdlib's last-resort handler (warnings and errors on stderr).

    Spec: desktop-and-service.md §10.2.
    """
    _remove_owned_handlers(logging.getLogger())


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """Return a structlog logger named ``name`` (the ``logger`` key of each event).

    Args:
        name: dotted module-style name, e.g. ``"signaltty.server.daemon"``.

    Returns:
        A ``structlog.stdlib.BoundLogger``; bind context with
        ``.bind(pane_id=…, workspace_id=…)``, emit dotted events such as
        ``log.info("daemon.ready", socket=str(path))``.

    Spec: desktop-and-service.md §10.2.
    """
    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger(name)
    return logger
