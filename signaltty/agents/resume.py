"""Resume argv resolution and validation of self-reported identity (pure; Spec: agents.md §3.4).

The daemon stores the result in ``agent.resume_argv`` and never runs it by itself;
``pane.resume`` recomputes adapter-built argv at resume time (repairing old bare commands)
and reuses a reported one. Codex ``--no-daemon`` is a spawn-time insertion
(``codex_runtime``), never part of the stored argv.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Final

from signaltty.agents.process_name import program_name
from signaltty.core.argv_safety import check_id, cwd_problem, id_problem

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
# Options chosen at launch that a resume keeps (issue 11 item 11), by the resume command's
# program: the model choice only. Each takes one value (``--model X`` or ``--model=X``).
# Permission and sandbox options are never kept this way: bypass flags survive only as
# ``launch_prefix`` (the catalog entry's own ``bypass_args``); ``--add-dir`` and the like widen
# what the agent may touch and are not carried over silently.
KEPT_OPTIONS: Final[dict[str, tuple[str, ...]]] = {
    "claude": ("--model",),
    "codex": ("--model", "-m"),
    "cursor-agent": ("--model",),
    "opencode": ("--model", "-m"),
    "pi": ("--provider", "--model"),
    "gemini": ("--model", "-m"),
}
# Longest kept option value (characters); real model names are under 64.
MAX_KEPT_VALUE: Final = 200


def _has_control(value: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value)


def validate_session_id(value: object, grammar: re.Pattern[str] | None = None) -> str:
    """Return ``value`` when it is a valid agent session id.

    Args:
        value: the reported ``agent_session_id``.
        grammar: the agent's id grammar (``Adapter.session_id_grammar``); ``None`` means the
            default ``[A-Za-z0-9][A-Za-z0-9._:-]{0,127}``.

    Returns:
        The id unchanged.

    Raises:
        ValueError: (``UnsafeValue``) not a string, empty, longer than 128 characters,
            starting with ``-``, holding whitespace or a control character, or outside the
            grammar; the message names the reason (the router maps it to ``BAD_PARAMS``).

    Spec: protocol.md §6 ``report-session``; issue 10 item 4 (never an option).
    """
    return check_id(value, grammar)


def rejection(adapter: Adapter, value: object) -> str:
    """The one-line reason ``adapter`` refuses ``value`` as a session id (for the log)."""
    try:
        adapter.check_session_id(value)
    except ValueError as exc:
        return str(exc)
    return "accepted"


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


def matches_template(reported: Sequence[str], expected: Sequence[str] | None) -> bool:
    """True when a reported ``resume_argv`` is exactly the agent's own resume command.

    ``expected`` is the manifest/adapter template with the (validated) session id
    substituted. ``argv[0]`` may be the bare program name or any path to it (same
    basename); every later element must be equal, in order. A reported argv is only ever
    compared, never run: ``pane.resume`` rebuilds the command from the template, so a pane
    process cannot add an option (``--dangerously-skip-permissions``, ``sh -c``) to
    another's resume command (issue 10 follow-up: free-form reported argv are refused).
    """
    if not expected or len(reported) != len(expected) or not reported:
        return False
    if os.path.basename(reported[0]) != os.path.basename(expected[0]):
        return False
    return list(reported[1:]) == list(expected[1:])


def substitute(
    template: Sequence[str], session_id: str, grammar: re.Pattern[str] | None = None
) -> list[str]:
    """Replace ``{id}`` and its alias ``{session_id}`` in every template element (step 2).

    The id is checked again here, where it becomes part of an argv (defence in depth: it
    was checked when recorded and when restored): a value the agent CLI could read as an
    option, or one with whitespace or control characters, is never substituted.
    ``--`` is not inserted before the id: ``claude --resume`` takes an optional value, so
    ``claude --resume -- ID`` would pass the id as a prompt instead.

    Raises:
        UnsafeValue: (a ``ValueError``) the id fails ``core.argv_safety.check_id``.
    """
    check_id(session_id, grammar)
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


def _kept_value_ok(value: str) -> bool:
    """A value stays one operand: non-empty, at most 200 characters, not starting with
    ``-`` (never an option), no whitespace, no control or format character."""
    return (
        0 < len(value) <= MAX_KEPT_VALUE
        and not value.startswith("-")
        and all(c.isprintable() and not c.isspace() for c in value)
    )


def kept_options(launch_argv: Sequence[str] | None, program: str) -> list[str]:
    """The options of ``KEPT_OPTIONS`` the pane's launch argv gave the agent ``program``.

    Args:
        launch_argv: the pane's stored launch argv; only read when its ``argv[0]`` is the
            same program as ``program`` (same basename): a shell pane's argv says nothing
            about the agent started inside it.
        program: ``argv[0]`` of the resume template (``claude``, ``codex``…).

    Returns:
        ``[option, value, …]`` in the order of ``KEPT_OPTIONS[program]``, each spelled as
        two elements (``--model=X`` becomes ``--model X``); the last occurrence of an option
        wins; scanning stops at ``--``. A value that fails :func:`_kept_value_ok` drops its
        option (the agent's default applies). Empty for other programs.

    Spec: issue 11 item 11 ("launch flags typed with the agent survive resume");
    docs/decisions.md "Resume keeps the model".
    """
    names = KEPT_OPTIONS.get(os.path.basename(program))
    if not names or not launch_argv or not isinstance(launch_argv[0], str):
        return []
    if os.path.basename(launch_argv[0]) != os.path.basename(program):
        return []
    found: dict[str, str | None] = {}
    args = list(launch_argv[1:])
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not isinstance(arg, str) or arg == "--":
            break
        name, eq, value = arg.partition("=")
        if arg in names:
            found[arg] = args[i] if i < len(args) and isinstance(args[i], str) else None
            i += 1
        elif eq and name in names and name.startswith("--"):
            found[name] = value
    out: list[str] = []
    for name in names:
        kept = found.get(name)
        if kept is not None and _kept_value_ok(kept):
            out += [name, kept]
    return out


def _checked_pairs(options: Sequence[str]) -> list[str]:
    """``options`` when it is ``[name, value, …]`` pairs of kept options with acceptable
    values, else ``[]``."""
    names = {n for group in KEPT_OPTIONS.values() for n in group}
    pairs = list(zip(options[::2], options[1::2], strict=False))
    ok = len(options) % 2 == 0 and all(
        isinstance(n, str) and isinstance(v, str) and n in names and _kept_value_ok(v)
        for n, v in pairs
    )
    return list(options) if ok else []


def options_of_process(cmdline: Sequence[str], program: str) -> list[str]:
    """:func:`kept_options` of a running agent's command line (``/proc/<pid>/cmdline``).

    For an agent started from a shell in the pane (the pane's own argv is the shell). The
    agent may run under its runtime (``node /usr/bin/claude --model opus``): the options
    are read after the first element whose program name is ``program``; nothing when the
    command line's program is not ``program``.
    """
    name = os.path.basename(program)
    if not cmdline or program_name(cmdline) != name:
        return []
    for i, arg in enumerate(cmdline):
        if program_name([arg]) == name:
            return kept_options([name, *cmdline[i + 1 :]], name)
    return []


def usable_cwd(value: object) -> str | None:
    """``value`` when it may become a resume's working directory, else ``None``.

    Accepted: what ``core.argv_safety.cwd_problem`` accepts (absolute, at most 4096
    characters, no control character) that is also valid UTF-8 (it is shown to clients as
    JSON). Existence is checked by the caller, when it records and again when it resumes.
    A cwd only ever becomes the child's working directory, never part of its argv.

    Spec: issue 11 item 11 (resume in the session's directory); docs/security.md.
    """
    if not isinstance(value, str) or cwd_problem(value) is not None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


def resolve_resume_argv(
    template: Sequence[str] | None,
    session_id: str | None,
    *,
    argv: Sequence[str] | None = None,
    launch_cwd: str | None = None,
    launch_prefix: Sequence[str] = (),
    reported: Sequence[str] | None = None,
    grammar: re.Pattern[str] | None = None,
    kept: Sequence[str] = (),
) -> list[str] | None:
    """Resolve the resume command of a pane (steps 1–7).

    Args:
        template: the merged manifest's ``[session] resume``, else the adapter's template.
        session_id: the pane's ``agent_session_id``; without it nothing is offered.
        argv: the pane's stored launch argv (``argv[0]`` absolute when path-qualified).
        launch_cwd: the pane's launch directory (anchors a legacy relative ``argv[0]``).
        launch_prefix: automatic-execution args applied at launch (kept for resume).
        reported: a validated self-reported ``resume_argv`` (wins, step 1).
        grammar: the agent's session id grammar (``None``: the default one).
        kept: launch options the resume keeps (:func:`kept_options`), inserted right after
            ``argv[0]`` (after the launch prefix); step 7 copies no other launch flag.

    Returns:
        The argv to run, or ``None`` when the pane is not resumable.

    Raises:
        UnsafeValue: (a ``ValueError``) ``session_id`` could be read as an option or is
            otherwise not an id (see :func:`substitute`).

    Spec: agents.md §3.4; issue 10 item 4.
    """
    if reported:
        return apply_launch_prefix(reported, launch_prefix)
    if not template or not session_id:
        return None
    out = substitute(template, session_id, grammar)
    if not os.path.isabs(out[0]):
        stored = _stored_path(argv, launch_cwd)
        if stored is not None and os.path.basename(stored) == out[0]:
            out[0] = stored
    if kept:
        out = [out[0], *kept, *out[1:]]
    return apply_launch_prefix(out, launch_prefix)


def resolve(pane: Pane, adapter: Adapter, session_id: str | None) -> list[str] | None:
    """Resolve the resume argv of ``pane`` for ``session_id`` with ``adapter``'s template.

    Always the template: a reported argv is never reused (it was accepted only when equal
    to this result, and one from an older snapshot may be free-form).

    Raises:
        UnsafeValue: (a ``ValueError``) ``session_id`` fails the adapter's id grammar.

    Spec: agents.md §3.4; protocol.md §6 ``pane.resume``; issue 10 follow-up (item 1).
    """
    info = pane.agent
    template = adapter.resume_template()
    return resolve_resume_argv(
        template,
        session_id,
        argv=pane.argv,
        launch_cwd=pane.launch_cwd,
        launch_prefix=info.launch_prefix,
        grammar=adapter.session_id_grammar,
        kept=_kept(pane, template[0]) if template else (),
    )


def _kept(pane: Pane, program: str) -> list[str]:
    """The launch options a resume of ``pane`` keeps: from its own argv when it started the
    agent, else those recorded from the agent's command line (a shell pane). The recorded
    ones go through the same filter again (a snapshot may have been edited)."""
    return kept_options(pane.argv, program) or kept_options(
        [os.path.basename(program), *pane.agent.launch_options], program
    )


def argv_to_resume(pane: Pane, adapter: Adapter | None) -> list[str] | None:
    """The argv ``pane.resume`` runs, checked once more right before it is spawned.

    Always recomputed from the manifest/adapter template with the stored session id (which
    re-checks the id); a stored reported argv is never run, whatever its source.

    Args:
        pane: the pane to resume.
        adapter: the merged adapter of the pane's agent, or ``None``.

    Returns:
        The argv, or ``None`` when the pane has nothing to resume.

    Raises:
        ValueError: the stored session id or reported argv is not acceptable (the message
            says which and why).

    Spec: protocol.md §6 ``pane.resume``; issue 10 item 4 (defence in depth).
    """
    info = pane.agent
    if adapter is not None and info.agent_session_id:
        return resolve(pane, adapter, info.agent_session_id)
    return None


def clean_restored(pane: Pane) -> list[str]:
    """Re-validate, in place, the fields of a restored pane that later reach an argv or cwd.

    A snapshot is a file anyone with the user's uid may have edited. A session id that is
    no id (default grammar: the catalog is not loaded yet; the agent's own grammar is
    applied again at resume time) is dropped with its resume command, so the pane comes
    back not resumable; a reported resume command that fails ``validate_reported_resume_argv``
    is dropped; a ``cwd``/``launch_cwd`` that is not an absolute path without control
    characters becomes ``/``, and such a ``session_cwd`` is dropped (:func:`usable_cwd`), as
    are ``launch_options`` that are not pairs of kept options with acceptable values.

    Args:
        pane: a pane read from ``snapshot.json`` (modified in place).

    Returns:
        One line per dropped or replaced value (for the restore log); empty when clean.

    Spec: issue 10 item 4 ("snapshots are re-validated on restore").
    """
    problems: list[str] = []
    info = pane.agent
    sid = info.agent_session_id
    if sid is not None and (why := id_problem(sid)) is not None:
        problems.append(f"agent_session_id {sid[:40]!r} dropped: {why}")
        info.agent_session_id = None
        info.resume_argv = None
        info.resume_source = None
    argv = info.resume_argv
    if argv is not None:
        why = None
        if info.resume_source == "reported":
            try:
                validate_reported_resume_argv(argv)
            except ValueError as exc:
                why = str(exc)
        elif not info.agent_session_id:
            why = "no session id"
        elif any(_has_control(a) for a in argv):
            why = "a control character"
        elif not any(info.agent_session_id in a for a in argv):
            # Only shown by `pane get`: `pane resume` rebuilds it from the template.
            why = "it does not name the session id"
        if why is not None:
            problems.append(f"resume_argv dropped: {why}")
            info.resume_argv = None
            info.resume_source = None
    for name in ("cwd", "launch_cwd"):
        value = getattr(pane, name)
        if (why := cwd_problem(value)) is not None:
            problems.append(f"{name} {str(value)[:40]!r} replaced by '/': {why}")
            setattr(pane, name, "/")
    options = info.launch_options
    if options and _checked_pairs(options) != options:
        problems.append(f"launch_options {' '.join(options)[:80]!r} dropped: not kept options")
        info.launch_options = []
    if info.session_cwd is not None and usable_cwd(info.session_cwd) is None:
        problems.append(f"session_cwd {info.session_cwd[:40]!r} dropped: not a usable directory")
        info.session_cwd = None
    return problems


def clean_launch(
    pane: Pane, bypass_args: Sequence[str], config_vars: Collection[str]
) -> list[str]:
    """Re-validate, in place, what a restored pane adds to its resume launch.

    ``launch_prefix`` is inserted into the resumed agent's argv and ``config_env`` exported
    to it, so a same-uid edit of ``snapshot.json`` could otherwise add any flag
    (``--dangerously-skip-permissions``) or variable (``LD_PRELOAD``, ``NODE_OPTIONS``).
    Kept only what signaltty itself can have stored: a ``launch_prefix`` that is empty or
    exactly ``bypass_args`` (the pane's catalog entry's bypass args, what
    ``launch.build_argv`` puts in ``LaunchPlan.launch_prefix``), and ``config_env`` entries
    whose variable is in ``config_vars`` (the provider root variables automatic
    configuration may export for this pane) with an absolute path value.

    Args:
        pane: a pane read from ``snapshot.json`` (modified in place).
        bypass_args: the bypass args its catalog entry declares (``()`` when none or no entry).
        config_vars: the variable names allowed in ``config_env`` for this pane.

    Returns:
        One line per dropped value (for the restore log); empty when clean.

    Spec: issue 10, third attack pass (A4).
    """
    problems: list[str] = []
    info = pane.agent
    prefix = list(info.launch_prefix)
    if prefix and prefix != list(bypass_args):
        shown = " ".join(a[:40] for a in prefix[:4])
        problems.append(
            f"launch_prefix {shown[:120]!r} dropped: not the bypass args of its agent "
            f"({' '.join(bypass_args) or 'none'})"
        )
        info.launch_prefix = []
    kept: dict[str, str] = {}
    for name, value in info.config_env.items():
        why = cwd_problem(value) if name in config_vars else "not a provider root variable"
        if why is None:
            kept[name] = value
        else:
            problems.append(f"config_env {name[:40]!r} dropped: {why}")
    info.config_env = kept
    return problems
