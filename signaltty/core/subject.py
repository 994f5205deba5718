"""What a permission request approves, as one safe line (pure, stdlib only).

Shared by ``permission list`` (cli/render.py) and the permission notification's body
(desktop/policy.py), so both name the same command or file.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from signaltty.core.sanitize import cut, for_terminal

SUBJECT_MAX: Final = 120  # characters of the command or file shown
# tool_input keys that name what a permission approves, most telling first
SUBJECT_KEYS: Final = (
    "command",
    "cmd",
    "file_path",
    "notebook_path",
    "path",
    "url",
    "pattern",
    "query",
)

# tool_input keys beside the subject that change nothing about what a tool call does: a
# label for people, a time bound, a window into a file read anyway. A key not listed (for
# its tool) is a hidden field: the notification then offers "Deny" only (issue 10, third
# attack pass, A3). Source: the tool input schemas the agents publish — Claude Code's tool
# reference (Bash ``description``/``timeout``, Read ``offset``/``limit``, WebFetch
# ``prompt``: how the fetched page is summarised, not what is fetched) and Codex's
# ``shell`` tool (``timeout_ms``, ``justification``: the text Codex's own dialog shows).
# Anything that selects a directory, sandbox, content or script stays out on purpose.
HARMLESS_KEYS: Final[dict[str, frozenset[str]]] = {
    "Bash": frozenset({"description", "timeout"}),
    "Read": frozenset({"offset", "limit"}),
    "WebFetch": frozenset({"prompt"}),
    "shell": frozenset({"timeout_ms", "justification"}),
}
# Hidden fields named first in the notification body: they lift a sandbox, move where a
# command runs or carry what gets written or executed (A3 repro rows).
DANGEROUS_KEYS: Final = (
    "dangerouslyDisableSandbox",
    "sandbox_permissions",
    "with_escalated_permissions",
    "workdir",
    "cwd",
    "content",
    "new_string",
    "old_string",
    "edits",
    "new_source",
    "script",
    "code",
    "env",
    "args",
    "replace_all",
    "run_in_background",
)

# Agent tool names: Claude (``Bash``, ``mcp__server__tool``), Codex (``shell``), OpenCode
# (``webfetch``), dotted or namespaced ones (``fs.read``, ``ns:tool``). Letters, digits and
# ``_ - . :`` only, starting with a letter or digit, at most 160 characters (an MCP name is
# ``mcp__`` + two names of at most 64 each). No whitespace, control or other punctuation:
# a name holding newlines or space runs could forge or push aside the notification's
# question line (A3, related finding).
TOOL_NAME_MAX: Final = 160
_TOOL_NAME_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,159}")
# What an invalid tool name is shown as; such a request is offered "Deny" only.
INVALID_TOOL_NAME: Final = "(invalid tool name)"


def valid_tool_name(name: object) -> bool:
    """Whether ``name`` is a string in the agent tool-name grammar (see ``_TOOL_NAME_RE``)."""
    return isinstance(name, str) and _TOOL_NAME_RE.fullmatch(name) is not None


def subject_key(data: dict[str, Any]) -> str | None:
    """The first :data:`SUBJECT_KEYS` key present in ``data`` whose value is a string or a
    list of strings, else ``None`` (then the whole input is the subject).

    A blank value still wins: ``{"cmd": "ls", "command": "   "}`` has the blank
    ``command`` as its subject and ``cmd`` as a hidden field, never ``ls`` silently.
    """
    for key in SUBJECT_KEYS:
        if key in data:
            v = data[key]
            if isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                return key
            return None
    return None


def subject_value(data: dict[str, Any]) -> str:
    """The uncut subject of a tool input: the value under :func:`subject_key` (a list of
    strings joined by spaces; possibly blank), else the compact JSON of ``data`` (``""``
    for an empty input)."""
    key = subject_key(data)
    if key is not None:
        v = data[key]
        return " ".join(v) if isinstance(v, list) else str(v)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) if data else ""


def hidden_fields(tool_name: str | None, data: dict[str, Any]) -> list[str]:
    """Keys of ``data`` a one-line subject does not show: all but the subject key and the
    tool's :data:`HARMLESS_KEYS`, :data:`DANGEROUS_KEYS` first, then in payload order.

    Empty when the subject is the whole input (no subject key: the compact JSON is shown).
    """
    key = subject_key(data)
    if key is None:
        return []
    harmless = HARMLESS_KEYS.get(tool_name or "", frozenset())
    rest = [k for k in data if k != key and k not in harmless]
    rank = {k: i for i, k in enumerate(DANGEROUS_KEYS)}
    return sorted(rest, key=lambda k: rank.get(k, len(rank)))


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
