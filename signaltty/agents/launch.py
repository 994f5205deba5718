"""Launching a catalog entry: detection on the hydrated PATH and argv building.

Pure apart from ``stat``/``access`` calls on PATH directories: no process is started per
tool (seed 002 §2), nothing here writes to a PTY. The router turns a ``LaunchPlan`` into a
pane and, for after-start prompts, pastes ``LaunchPlan.paste`` later.

Spec: agents.md §4.4 (installed rule, argv order, prompt modes, bypass default,
``launch_prefix``), protocol.md §6 ``pane.spawn`` "catalog launch" and ``agents.catalog``,
desktop-and-service.md §5 (catalog detection uses the hydrated PATH).

Entries are duck-typed against ``signaltty.agents.catalog.CatalogEntry`` (attributes ``id``,
``kind``, ``display_name``, ``order``, ``homepage``, ``install_url``, ``source``, ``resume``,
``lifecycle``, ``rules`` and ``launch``: a ``LaunchSpec`` with ``command``, ``detect``,
``requires``, ``args``, ``prompt`` {``mode``, ``separator``, ``flag``, ``delay_ms``},
``bypass_args``, ``bypass_env``, ``continue_args``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from signaltty.agents.adapters import adapter_for
from signaltty.proto.envelope import SignalttyError

# agents.md §4.4: prompt size in UTF-8 bytes.
PROMPT_MIN_BYTES = 1
PROMPT_MAX_BYTES = 32 * 1024
# agents.md §4.4: Enter follows the bracketed paste after this pause.
PASTE_ENTER_DELAY_MS = 300
PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
# agents.md §4.4 / seed 000 "Automatic execution": only these ids follow
# ``agents.automatic_permissions`` when the request does not say ``bypass``.
AUTO_BYPASS_IDS = frozenset({"claude", "codex", "antigravity"})
# Pane variables a catalog's ``bypass_env`` may not replace: the hydrated PATH and the
# variables signaltty injects itself (protocol.md §5 "Pane environment").
_RESERVED_ENV = frozenset({"PATH"})
_RESERVED_ENV_PREFIX = "SIGNALTTY_"
# protocol.md §6 ``agents.catalog`` ``integration``: how the pane's state can be reported.
_HOOK_KINDS = frozenset({"claude", "codex", "cursor"})
_PLUGIN_KINDS = frozenset({"opencode"})


@dataclass(frozen=True, slots=True)
class Installed:
    """Detection result of one entry on one PATH value (agents.md §4.4 "Installed").

    Attributes:
        installed: every ``requires`` name and at least one ``detect`` name were found.
        command: the first ``detect`` name found (bare name), else ``None``. Reported even
            when a required command is missing, so a client can say what is there.
        path: absolute path of ``command`` in the first PATH directory holding it; symlinks
            are not resolved (an npm ``bin`` link keeps its tool name, which kind detection
            and automatic configuration read), else ``None``.
        missing_requires: ``requires`` names not found, in manifest order.
    """

    installed: bool
    command: str | None
    path: str | None
    missing_requires: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """How to start one catalog entry (agents.md §4.4).

    Attributes:
        argv: ``[abs path, *args, *bypass_args?, *continue_args?, *prompt part]``; the
            prompt is always one whole element (never a shell string).
        env_add: ``bypass_env`` when bypass applies, else ``{}``.
        paste: the prompt to paste after start (``after-start`` mode), else ``None``.
        delay_ms: wait before the paste (only meaningful with ``paste``), milliseconds.
        launch_prefix: the bypass args applied (``AgentInfo.launch_prefix``), else ``[]``.
    """

    argv: list[str]
    env_add: dict[str, str]
    paste: str | None
    delay_ms: int
    launch_prefix: list[str]


def _bare_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\x00" not in name and name not in (".", "..")


def find_on_path(name: str, path_str: str) -> str | None:
    """Return the first executable regular file ``name`` in the directories of ``path_str``.

    Args:
        name: a bare command name; a name with ``/``, NUL, ``.`` or ``..`` is never found.
        path_str: a ``PATH`` value (``:``-separated). Empty and relative entries are skipped:
            they would mean the daemon's own working directory, which says nothing about
            what the user installed.

    Returns:
        ``<dir>/<name>`` (absolute, symlinks kept as they are; the target must be a regular
        file executable by this user), or ``None``.

    Never raises: unreadable directories, dangling links and permission errors count as
    "not here". Spec: agents.md §4.4 "Installed".
    """
    if not _bare_name(name):
        return None
    for directory in path_str.split(os.pathsep):
        if not directory or not os.path.isabs(directory):
            continue
        candidate = os.path.join(directory, name)
        try:
            st = os.stat(candidate)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode) and os.access(candidate, os.X_OK):
            return candidate
    return None


def detect_names(entry: Any) -> tuple[str, ...]:
    """The names looked up for ``entry``: ``launch.detect``, else ``(launch.command,)``."""
    launch = entry.launch
    names = tuple(launch.detect or ())
    if not names and launch.command:
        names = (launch.command,)
    return names


def installed(entry: Any, path_str: str) -> Installed:
    """Detect ``entry`` on ``path_str`` (agents.md §4.4 "Installed"; no process started).

    Returns:
        ``Installed``; ``installed`` is True when every ``requires`` name and at least one
        detect name is an executable regular file in an absolute PATH directory.
    """
    command: str | None = None
    path: str | None = None
    for name in detect_names(entry):
        found = find_on_path(name, path_str)
        if found is not None:
            command, path = name, found
            break
    missing = [r for r in entry.launch.requires if find_on_path(r, path_str) is None]
    return Installed(path is not None and not missing, command, path, missing)


class DetectionCache:
    """``installed()`` results for one PATH value (agents.md §4.4 "cached until
    ``agents.catalog {refresh: true}``").

    Keyed by the entry's id and its detect/requires names, so a catalog reload that changes
    an entry's names never reuses a stale answer; a different PATH value empties the cache.
    """

    def __init__(self) -> None:
        self._path: str | None = None
        self._results: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Installed] = {}

    @staticmethod
    def _key(entry: Any) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        return (entry.id, detect_names(entry), tuple(entry.launch.requires))

    def get(self, entry: Any, path_str: str) -> Installed:
        """The cached result for ``entry`` on ``path_str``, detecting it on a miss."""
        if path_str != self._path:
            self._path = path_str
            self._results.clear()
        key = self._key(entry)
        hit = self._results.get(key)
        if hit is None:
            hit = self._results[key] = installed(entry, path_str)
        return hit

    def fresh(self, entry: Any, path_str: str) -> Installed:
        """Detect ``entry`` now (a launch must not trust a cached answer) and cache it."""
        if path_str != self._path:
            self._path = path_str
            self._results.clear()
        result = self._results[self._key(entry)] = installed(entry, path_str)
        return result

    def clear(self) -> None:
        """Forget everything (``agents.catalog {refresh: true}``)."""
        self._path = None
        self._results.clear()


def default_bypass(entry_id: str, automatic_permissions: bool) -> bool:
    """``bypass`` when the request does not say: config ``agents.automatic_permissions`` for
    ``claude``, ``codex`` and ``antigravity``, else False (agents.md §4.4)."""
    return automatic_permissions and entry_id in AUTO_BYPASS_IDS


def check_prompt(prompt: str, mode: str) -> None:
    """Validate a launch prompt (agents.md §4.4: 1 B–32 KiB UTF-8, no NUL).

    ``after-start`` prompts are pasted between bracketed-paste markers, so they may not
    contain the markers themselves (the rest would be typed as keystrokes).

    Raises:
        SignalttyError: ``BAD_PARAMS`` with ``details.field = "prompt"``.
    """
    size = len(prompt.encode("utf-8", "surrogatepass"))
    if size < PROMPT_MIN_BYTES:
        raise SignalttyError("BAD_PARAMS", "prompt must not be empty", {"field": "prompt"})
    if size > PROMPT_MAX_BYTES:
        raise SignalttyError("BAD_PARAMS", "prompt longer than 32 KiB", {"field": "prompt"})
    if "\x00" in prompt:
        raise SignalttyError("BAD_PARAMS", "prompt must not contain NUL", {"field": "prompt"})
    if mode == "after-start" and (PASTE_START in prompt or PASTE_END in prompt):
        raise SignalttyError(
            "BAD_PARAMS", "prompt must not contain bracketed-paste markers", {"field": "prompt"}
        )


def _bypass_env(entry: Any) -> dict[str, str]:
    env = dict(entry.launch.bypass_env or {})
    for key, value in env.items():
        if (
            not key
            or "=" in key
            or "\x00" in key
            or "\x00" in value
            or key in _RESERVED_ENV
            or key.startswith(_RESERVED_ENV_PREFIX)
        ):
            raise SignalttyError(
                "BAD_PARAMS",
                f"agent {entry.id}: bypass_env key not allowed: {key}",
                {"field": "bypass"},
            )
    return env


def _prompt_part(entry: Any, prompt: str) -> tuple[list[str], str | None]:
    spec = entry.launch.prompt
    mode = spec.mode
    if mode == "after-start":
        return [], prompt
    if mode == "flag":
        if not spec.flag:
            raise SignalttyError(
                "BAD_PARAMS",
                f"agent {entry.id}: prompt mode flag without a flag",
                {"field": "prompt"},
            )
        return [spec.flag, prompt], None
    if mode == "argv":
        if spec.separator:
            return [spec.separator, prompt], None
        # Without an option terminator the program would parse "-x…" as one of its options.
        if prompt.startswith("-"):
            raise SignalttyError(
                "BAD_PARAMS",
                f"prompt must not start with '-' for agent {entry.id} "
                "(it would be read as an option)",
                {"field": "prompt"},
            )
        return [prompt], None
    raise SignalttyError(
        "BAD_PARAMS", f"agent {entry.id}: unknown prompt mode {mode!r}", {"field": "prompt"}
    )


def build_argv(
    entry: Any,
    exe_path: str,
    *,
    prompt: str | None,
    bypass: bool | None,
    continue_: bool | None,
    automatic_permissions: bool = False,
) -> LaunchPlan:
    """Build the launch of ``entry`` started as ``exe_path`` (agents.md §4.4).

    Args:
        entry: a ``CatalogEntry``.
        exe_path: absolute path of the first detect name found (``Installed.path``).
        prompt: first prompt, or ``None`` for none.
        bypass: explicit request value; ``None`` → ``default_bypass(entry.id,
            automatic_permissions)``. An explicit ``True`` on an entry with neither
            ``bypass_args`` nor ``bypass_env`` is an error (the caller asked for unattended
            mode it cannot get); the config default is silently not applied there.
        continue_: add ``continue_args``; ``True`` on an entry without them is an error.
        automatic_permissions: config ``agents.automatic_permissions``.

    Returns:
        ``LaunchPlan`` (argv order: path, args, bypass args, continue args, prompt part).

    Raises:
        SignalttyError: ``BAD_PARAMS`` (``details.field`` ``prompt``/``bypass``/``continue``).
    """
    launch = entry.launch
    if prompt is not None:
        check_prompt(prompt, launch.prompt.mode)
    can_bypass = bool(launch.bypass_args) or bool(launch.bypass_env)
    if bypass is None:
        use_bypass = can_bypass and default_bypass(entry.id, automatic_permissions)
    elif bypass and not can_bypass:
        raise SignalttyError(
            "BAD_PARAMS", f"agent has no bypass flags: {entry.id}", {"field": "bypass"}
        )
    else:
        use_bypass = bool(bypass)
    if continue_ and not launch.continue_args:
        raise SignalttyError(
            "BAD_PARAMS", f"agent has no continue args: {entry.id}", {"field": "continue"}
        )
    argv = [exe_path, *launch.args]
    prefix: list[str] = []
    env_add: dict[str, str] = {}
    if use_bypass:
        prefix = list(launch.bypass_args)
        argv += prefix
        env_add = _bypass_env(entry)
    if continue_:
        argv += list(launch.continue_args)
    paste: str | None = None
    if prompt is not None:
        part, paste = _prompt_part(entry, prompt)
        argv += part
    return LaunchPlan(argv, env_add, paste, int(launch.prompt.delay_ms), prefix)


def typed_bypass(bypass_args: Sequence[str], argv: Sequence[str]) -> list[str]:
    """The ``launch_prefix`` of a pane whose argv was typed (``pane spawn -- claude
    --dangerously-skip-permissions``) rather than built from the catalog.

    Args:
        bypass_args: the pane's catalog entry's ``bypass_args`` (``()`` when none).
        argv: the argv the pane was spawned with.

    Returns:
        ``list(bypass_args)`` when every one of them is among ``argv[1:]`` before any
        ``--``, else ``[]``. Only the catalog's own bypass args can become a prefix: it is
        what ``resume.clean_launch`` accepts from a snapshot and what ``pane get`` and
        ``pane resume`` show (issue 11 item 11: typed bypass flags survive resume).
    """
    if not bypass_args:
        return []
    args = list(argv[1:])
    if "--" in args:
        args = args[: args.index("--")]
    return list(bypass_args) if all(a in args for a in bypass_args) else []


def paste_bytes(prompt: str) -> bytes:
    """The after-start paste: ``ESC[200~`` + prompt + ``ESC[201~`` (Enter is sent apart)."""
    return (PASTE_START + prompt + PASTE_END).encode("utf-8", "surrogatepass")


def integration_of(entry: Any) -> str:
    """``hooks`` | ``plugin`` | ``screen`` | ``none`` for ``agents.catalog`` (protocol.md §6).

    ``hooks``: a kind with an installable hook provider (claude, codex, cursor;
    integrations.md §1) or a manifest mapping hook events (``[lifecycle.*]``, fed by a
    user shim calling ``hook-event``); ``plugin``: OpenCode's plugin; ``screen``: the entry
    has screen rules; else ``none``.
    """
    if entry.kind in _HOOK_KINDS:
        return "hooks"
    if entry.kind in _PLUGIN_KINDS:
        return "plugin"
    if getattr(entry, "lifecycle", None):
        return "hooks"
    if getattr(entry, "rules", None):
        return "screen"
    return "none"


def can_resume(entry: Any) -> bool:
    """True when a resume template exists: the entry's ``[session] resume``, else its
    kind's builtin adapter template (agents.md §3.4)."""
    if getattr(entry, "resume", None):
        return True
    adapter = adapter_for(entry.kind)
    return adapter is not None and adapter.resume_template() is not None


def catalog_row(entry: Any, found: Installed) -> dict[str, Any]:
    """One ``agents.catalog`` item (protocol.md §6), in the documented key order.

    ``command`` is the detect name found, else the name the entry would run (its first
    detect name; ``None`` for an entry that names no program), so "available to install"
    rows can still say what to install; ``installed``/``path`` tell whether it is there.
    """
    launch = entry.launch
    names = detect_names(entry)
    return {
        "id": entry.id,
        "display_name": entry.display_name,
        "kind": entry.kind,
        "source": entry.source,
        "order": entry.order,
        "installed": found.installed,
        "command": found.command or (names[0] if names else None),
        "path": found.path,
        "missing_requires": list(found.missing_requires),
        "homepage": entry.homepage,
        "install_url": entry.install_url,
        "prompt_mode": launch.prompt.mode,
        "can_continue": bool(launch.continue_args),
        "can_resume": can_resume(entry),
        "can_bypass": bool(launch.bypass_args) or bool(launch.bypass_env),
        "integration": integration_of(entry),
    }


def catalog_order(entry: Any) -> tuple[int, int, str]:
    """Sort key: entries with an ``order`` first (ascending), then the rest; ties by id."""
    order = entry.order
    return (0 if order is not None else 1, order if order is not None else 0, entry.id)


def catalog_rows(entries: Any, path_str: str, cache: DetectionCache) -> list[dict[str, Any]]:
    """``agents.catalog`` ``agents`` list for ``entries`` on ``path_str`` (ordered)."""
    return [catalog_row(e, cache.get(e, path_str)) for e in sorted(entries, key=catalog_order)]
