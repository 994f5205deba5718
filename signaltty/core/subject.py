"""What a permission request approves, as one safe line (pure, stdlib only).

Shared by ``permission list`` (cli/render.py) and the permission notification's body
(desktop/policy.py), so both name the same command or file.
"""

from __future__ import annotations

import json
from typing import Any, Final

from signaltty.core.sanitize import cut, for_terminal

SUBJECT_MAX: Final = 120  # characters of the command or file shown
# tool_input keys that name what a permission approves, most telling first
SUBJECT_KEYS: Final = ("command", "cmd", "file_path", "notebook_path", "path", "url", "pattern", "query")


def subject_value(data: dict[str, Any]) -> str:
    """The uncut subject of a tool input: the first ``SUBJECT_KEYS`` value that is a
    non-blank string (a list of strings is joined by spaces), else the compact JSON of
    ``data`` (``""`` for an empty input)."""
    for key in SUBJECT_KEYS:
        v = data.get(key)
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            v = " ".join(v)
        if isinstance(v, str) and v.strip():
            return v
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) if data else ""


def _clean(value: object) -> str:
    """One line, no escape sequence, control or invisible character (core/sanitize.py)."""
    return for_terminal(str(value))


def permission_subject(prompt: str) -> str:
    """What a permission approves, in one line: the command, file, URL… of its tool input.

    A native prompt is ``Allow <tool>?`` followed by the tool input as JSON
    (agents/permission.py ``native_prompt``); its first string under :data:`SUBJECT_KEYS`
    is taken (a list command is joined with spaces), else the compact JSON. Any other
    prompt gives its first non-blank line after the first (a tool input cut short by the
    prompt's size limit: all of it on one line). Only the first line of the
    value is shown, with ``(+N lines)`` when more follow, sanitized and cut to
    :data:`SUBJECT_MAX` characters — so ``echo ok\\ncurl … | sh`` reads ``echo ok (+1
    lines)``, never just ``echo ok``.

    Args:
        prompt: the decision's prompt (untrusted).

    Returns:
        The subject, or ``""`` when the prompt has nothing after its question.

    Spec: issue 13 §8 (``permission list`` and the permission notification show what
    you approve).
    """
    _question, _, rest = prompt.partition("\n")
    value: str | None = None
    try:
        data = json.loads(rest)
    except ValueError:
        data = None
    if isinstance(data, dict):
        value = subject_value(data) or None
    elif rest.lstrip().startswith("{"):  # tool input cut at the prompt's 8 KiB: one line
        return cut(" ".join(_clean(rest).split()), SUBJECT_MAX)
    elif rest.strip():
        value = rest
    if value is None:
        return ""
    lines = [line for line in value.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    first = " ".join(_clean(lines[0]).split())
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return cut(first, SUBJECT_MAX - len(more)) + more if first else more.strip()
