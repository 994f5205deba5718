"""Resume argv resolution and validation of self-reported identity (pure; Spec: agents.md §3.4).

The daemon stores the result in ``agent.resume_argv`` and never runs it by itself;
``pane.resume`` recomputes adapter-built argv at resume time (repairing old bare commands)
and reuses a reported one. Codex ``--no-daemon`` is a spawn-time insertion
(``codex_runtime``), never part of the stored argv.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from signaltty.agents.adapters.base import MAX_SESSION_ID, is_valid_session_id

if TYPE_CHECKING:
    from signaltty.agents.adapters.base import Adapter
    from signaltty.core.model import Pane

# protocol.md §6 report-session / §9: self-reported resume_argv limits.
MAX_REPORTED_ARGS: Final = 64
MAX_REPORTED_BYTES: Final = 8192
_ARGV0: Final = re.compile(r"[A-Za-z0-9_.-]+")
_PLACEHOLDERS: Final = ("{id}", "{session_id}")
# Step 6: standard resume commands (program basenames → the option/subcommand before the id).
_STANDARD: Final[dict[str, str]] = {
    "claude": "--resume",
    "codex": "resume",
    "agy": "--conversation",
    "antigravity": "--conversation",
    "antigravity-cli": "--conversation",
}


def _has_control(value: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value)


def validate_session_id(value: object) -> str:
    """Return ``value`` when it is a valid agent session id.

    Args:
        value: the reported ``agent_session_id``.

    Returns:
        The id unchanged.

    Raises:
        ValueError: not a string, empty, longer than 256 characters, blank, or containing a
            non-printable character (the router maps this to ``BAD_PARAMS``).

    Spec: protocol.md §6 ``report-session`` (id 1–256 printable chars).
    """
    if not isinstance(value, str):
        raise ValueError("session id must be a string")  # noqa: TRY004 (router: BAD_PARAMS)
    if not 0 < len(value) <= MAX_SESSION_ID:
        raise ValueError(f"session id must be 1–{MAX_SESSION_ID} characters (got {len(value)})")
    if not is_valid_session_id(value):
        raise ValueError("session id must be printable and not blank")
    return value


def validate_reported_resume_argv(argv: object) -> list[str]:
    """Return a self-reported ``resume_argv`` as a new list when it is acceptable.

    Args:
        argv: the reported value (expected: a JSON array of strings).

    Returns:
        A copy of the argv.

    Raises:
        ValueError: not a non-empty list of strings; more than 64 arguments; more than 8192
            UTF-8 bytes in total; a control character in any argument; or ``argv[0]`` not
            matching ``^[A-Za-z0-9_.-]+$`` or starting with ``-`` (maps to ``BAD_PARAMS``).

    Spec: protocol.md §6 ``report-session``; §9 (64 args, 8192 bytes).
    """
    if not isinstance(argv, list) or not argv:
        raise ValueError("resume_argv must be a non-empty array of strings")
    if not all(isinstance(a, str) for a in argv):
        raise ValueError("resume_argv must contain only strings")
    if len(argv) > MAX_REPORTED_ARGS:
        raise ValueError(f"resume_argv has {len(argv)} arguments (at most {MAX_REPORTED_ARGS})")
    size = sum(len(a.encode("utf-8", "surrogatepass")) for a in argv)
    if size > MAX_REPORTED_BYTES:
        raise ValueError(f"resume_argv is {size} bytes (at most {MAX_REPORTED_BYTES})")
    for i, arg in enumerate(argv):
        if _has_control(arg):
            raise ValueError(f"resume_argv[{i}] contains a control character")
    program = argv[0]
    if _ARGV0.fullmatch(program) is None or program.startswith("-"):
        raise ValueError(
            "resume_argv[0] must be a bare command name ([A-Za-z0-9_.-], not starting with '-')"
        )
    return list(argv)


def substitute(template: Sequence[str], session_id: str) -> list[str]:
    """Replace ``{id}`` and its alias ``{session_id}`` in every template element (step 2)."""
    out = []
    for arg in template:
        for placeholder in _PLACEHOLDERS:
            arg = arg.replace(placeholder, session_id)
        out.append(arg)
    return out


def anchor_argv0(argv: Sequence[str], cwd: str) -> list[str]:
    """Anchor a relative path ``argv[0]`` (``./bin/codex``) to the launch directory.

    Bare names (no ``/``) stay as they are (they are looked up on PATH) and so do absolute
    paths. Used by ``pane.spawn``/``pane.split`` before storing the argv.

    Args:
        argv: the requested argv.
        cwd: the absolute launch directory.

    Returns:
        A new argv whose ``argv[0]`` is absolute when it was a relative path.

    Spec: agents.md §3.4 (relative-path anchoring); seed 000 "Relative executable paths".
    """
    out = list(argv)
    if out and "/" in out[0] and not os.path.isabs(out[0]) and os.path.isabs(cwd):
        out[0] = os.path.normpath(os.path.join(cwd, out[0]))
    return out


def _stored_path(argv: Sequence[str] | None, launch_cwd: str | None) -> str | None:
    if not argv or not isinstance(argv[0], str) or "/" not in argv[0]:
        return None
    if os.path.isabs(argv[0]):
        return argv[0]
    if launch_cwd and os.path.isabs(launch_cwd):
        return os.path.normpath(os.path.join(launch_cwd, argv[0]))
    return None


def _is_standard(argv: Sequence[str]) -> bool:
    marker = _STANDARD.get(os.path.basename(argv[0]))
    if marker is None:
        return False
    rest = list(argv[1:])
    for i, arg in enumerate(rest):
        if arg == marker and i + 1 < len(rest):
            return True
        if marker.startswith("--") and arg.startswith(marker + "=") and len(arg) > len(marker) + 1:
            return True
    return False


def apply_launch_prefix(argv: Sequence[str], prefix: Sequence[str]) -> list[str]:
    """Insert the launch prefix right after ``argv[0]`` of a standard resume command (step 6).

    Standard commands: ``claude … --resume ID``, ``codex … resume ID`` and
    ``agy|antigravity|antigravity-cli … --conversation ID``. When any prefix token is
    already present the argv is left as is (explicit options win).

    Spec: agents.md §3.4 step 6.
    """
    out = list(argv)
    if not prefix or not out or not _is_standard(out):
        return out
    if any(token in out[1:] for token in prefix):
        return out
    return [out[0], *prefix, *out[1:]]


def resolve_resume_argv(
    template: Sequence[str] | None,
    session_id: str | None,
    *,
    argv: Sequence[str] | None = None,
    launch_cwd: str | None = None,
    launch_prefix: Sequence[str] = (),
    reported: Sequence[str] | None = None,
) -> list[str] | None:
    """Resolve the resume command of a pane (steps 1–7).

    Args:
        template: the merged manifest's ``[session] resume``, else the adapter's template.
        session_id: the pane's ``agent_session_id``; without it nothing is offered.
        argv: the pane's stored launch argv (``argv[0]`` absolute when path-qualified).
        launch_cwd: the pane's launch directory (anchors a legacy relative ``argv[0]``).
        launch_prefix: automatic-execution args applied at launch (kept for resume).
        reported: a validated self-reported ``resume_argv`` (wins, step 1).

    Returns:
        The argv to run, or ``None`` when the pane is not resumable.

    Spec: agents.md §3.4.
    """
    if reported:
        return apply_launch_prefix(reported, launch_prefix)
    if not template or not session_id:
        return None
    out = substitute(template, session_id)
    if not os.path.isabs(out[0]):
        stored = _stored_path(argv, launch_cwd)
        if stored is not None and os.path.basename(stored) == out[0]:
            out[0] = stored
    return apply_launch_prefix(out, launch_prefix)


def resolve(pane: Pane, adapter: Adapter, session_id: str | None) -> list[str] | None:
    """Resolve the resume argv of ``pane`` for ``session_id`` with ``adapter``'s template.

    A reported argv is reused while it belongs to the same session id; a different id
    falls back to the adapter template (the reported command named the old session).

    Spec: agents.md §3.4; protocol.md §6 ``pane.resume``.
    """
    info = pane.agent
    reported = None
    if info.resume_source == "reported" and info.agent_session_id == session_id:
        reported = info.resume_argv
    return resolve_resume_argv(
        adapter.resume_template(),
        session_id,
        argv=pane.argv,
        launch_cwd=pane.launch_cwd,
        launch_prefix=info.launch_prefix,
        reported=reported,
    )
