"""Values that come from outside and later land in a child's argv or cwd (pure, stdlib only).

A session id reported by a hook payload (model-controlled text), by ``report-session`` or
read back from a snapshot is substituted into a resume command such as
``claude --resume {id}``. Whatever it is, it must stay *one operand*: a value starting with
``-`` would be parsed by the agent CLI as an option (``--dangerously-skip-permissions``),
whitespace or control characters could split or disguise it on screen, and an unbounded
value costs memory in every event. So every such value is checked where it is recorded
and again where the argv is built (defence in depth).

Rules (issue 10 item 4):

* **Always**, whatever the agent: a string of 1–128 characters, first character not ``-``,
  every character printable (``str.isprintable``: no C0/C1 controls, no format characters
  such as bidi overrides, no lone surrogates) and none of them whitespace.
* **Grammar**: the agent's own id grammar when its adapter or manifest declares one
  (``[session] id_format = "uuid"``), else the conservative default
  ``[A-Za-z0-9][A-Za-z0-9._:-]{0,127}`` which covers every id shape seen from real agents
  (UUIDs from Claude, Codex and Gemini; ``ses_…`` from OpenCode; see
  ``tests/fixtures/real-agents/*/hook_samples.json``).

A cwd is never put in an argv; it is only used as a working directory (``chdir`` before
``exec``), and must be an absolute path without control characters, at most ``MAX_PATH``
characters.
"""

from __future__ import annotations

import re
from typing import Final

# Longest id accepted (characters). Real ids are 36 (UUID) or 30 (OpenCode) characters.
MAX_ID: Final = 128
DEFAULT_ID_GRAMMAR: Final = r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}"
_HEX = "[0-9A-Fa-f]"
# Named id grammars a manifest may pick (``[session] id_format``). Named rather than free
# regular expressions: a manifest is untrusted input and a pattern of its own would need a
# backtracking budget on every hook; these are linear and cannot admit an option.
GRAMMARS: Final[dict[str, re.Pattern[str]]] = {
    "default": re.compile(DEFAULT_ID_GRAMMAR),
    "uuid": re.compile(f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"),
}
_DEFAULT: Final = GRAMMARS["default"]
# PATH_MAX on Linux.
MAX_PATH: Final = 4096
_PREVIEW: Final = 40


class UnsafeValue(ValueError):
    """A value that must not reach an argv or a cwd; ``str(exc)`` says why (one line)."""


def preview(value: object) -> str:
    """A short, escaped rendering of a rejected value for logs and error messages.

    ``repr`` escapes every control character, so the text is safe to print; long values are
    cut to their first 40 characters.
    """
    if isinstance(value, str):
        return repr(value[:_PREVIEW]) + ("…" if len(value) > _PREVIEW else "")
    return f"<{type(value).__name__}>"


def grammar(name: str) -> re.Pattern[str]:
    """The id grammar called ``name`` (``default`` or ``uuid``).

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    try:
        return GRAMMARS[name]
    except KeyError:
        raise ValueError(f"unknown id format {name!r} (one of {', '.join(GRAMMARS)})") from None


def id_problem(value: object, grammar: re.Pattern[str] | None = None) -> str | None:
    """Why ``value`` cannot be used as an id operand, or ``None`` when it can.

    Args:
        value: the candidate (any JSON value).
        grammar: the agent's id pattern (``fullmatch``); ``None`` means the default grammar.

    Returns:
        ``None`` for an acceptable id, else a short reason such as ``"starts with '-'"``.
    """
    if not isinstance(value, str):
        return "not a string"
    if not value:
        return "empty"
    if len(value) > MAX_ID:
        return f"longer than {MAX_ID} characters ({len(value)})"
    if value[0] == "-":
        return "starts with '-' (would be read as an option)"
    if any(c.isspace() or not c.isprintable() for c in value):
        return "contains whitespace or a control character"
    if (grammar or _DEFAULT).fullmatch(value) is None:
        return "does not match the agent's id grammar"
    return None


def check_id(
    value: object, grammar: re.Pattern[str] | None = None, *, what: str = "session id"
) -> str:
    """Return ``value`` when :func:`id_problem` finds nothing.

    Raises:
        UnsafeValue: ``"<what> <preview> rejected: <reason>"``.
    """
    problem = id_problem(value, grammar)
    if problem is not None:
        raise UnsafeValue(f"{what} {preview(value)} rejected: {problem}")
    return value  # type: ignore[return-value]


def cwd_problem(value: object) -> str | None:
    """Why ``value`` cannot be used as a working directory, or ``None``.

    Accepted: an absolute path (``/…``) of at most 4096 characters with no control
    character (NUL included). Surrogate escapes stay allowed: they are how Python spells a
    directory name that is not UTF-8. Existence is the caller's business.
    """
    if not isinstance(value, str):
        return "not a string"
    if not value.startswith("/"):
        return "not an absolute path"
    if len(value) > MAX_PATH:
        return f"longer than {MAX_PATH} characters"
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value):
        return "contains a control character"
    return None


def check_cwd(value: object) -> str:
    """Return ``value`` when :func:`cwd_problem` finds nothing.

    Raises:
        UnsafeValue: ``"cwd <preview> rejected: <reason>"``.
    """
    problem = cwd_problem(value)
    if problem is not None:
        raise UnsafeValue(f"cwd {preview(value)} rejected: {problem}")
    return value  # type: ignore[return-value]
