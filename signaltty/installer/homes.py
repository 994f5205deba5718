"""Provider roots and files from ``--home`` and the environment (pure;
Spec: integrations.md §1.1)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

PROVIDERS: Final = ("claude", "codex", "opencode", "cursor", "pi", "gemini")

# Provider → the environment variable that moves its root (Cursor has none).
ROOT_VARS: Final[Mapping[str, str]] = {
    "claude": "CLAUDE_CONFIG_DIR",
    "codex": "CODEX_HOME",
    "opencode": "OPENCODE_CONFIG_DIR",
    "pi": "PI_CODING_AGENT_DIR",
}


def _var(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    return value or None  # set-but-empty counts as unset


def _user_home(env: Mapping[str, str]) -> Path:
    return Path(_var(env, "HOME") or os.path.expanduser("~"))


def provider_root(
    agent: str, *, home: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> Path:
    """Return the absolute configuration root of ``agent``.

    Args:
        agent: ``claude``, ``codex``, ``opencode``, ``cursor``, ``pi`` or ``gemini``
            (``$GEMINI_CLI_HOME`` names Gemini's *home*, the root is ``.gemini`` below it).
        home: the ``--home DIR`` value (isolates from the provider's variable; OpenCode
            still honours ``XDG_CONFIG_HOME``), or None.
        env: the environment to read (``os.environ`` for the CLI).

    Returns:
        An absolute path (relative values are resolved against the current directory).

    Raises:
        KeyError: unknown agent.

    Spec: integrations.md §1.1 table.
    """
    xdg = _var(env, "XDG_CONFIG_HOME")
    if home is not None:
        base = Path(os.path.abspath(home))
        root = {
            "claude": base / ".claude",
            "codex": base / ".codex",
            "opencode": Path(xdg) / "opencode" if xdg else base / ".config" / "opencode",
            "cursor": base / ".cursor",
            "pi": base / ".pi" / "agent",
            "gemini": base / ".gemini",
        }[agent]
    else:
        user = _user_home(env)
        var = ROOT_VARS.get(agent)
        explicit = _var(env, var) if var else None
        if explicit:
            root = Path(explicit)
        elif agent == "gemini":
            root = Path(_var(env, "GEMINI_CLI_HOME") or user) / ".gemini"
        elif agent == "opencode":
            root = Path(xdg) / "opencode" if xdg else user / ".config" / "opencode"
        else:
            root = (
                user
                / {"claude": ".claude", "codex": ".codex", "cursor": ".cursor", "pi": ".pi/agent"}[
                    agent
                ]
            )
    return Path(os.path.abspath(root))


def provider_files(agent: str, root: Path) -> tuple[Path, ...]:
    """The files an installer edits below ``root`` (first = the hooks file)."""
    return {
        "claude": (root / "settings.json",),
        "codex": (root / "hooks.json", root / "config.toml"),
        "opencode": (root / "plugins" / "signaltty.js",),
        "cursor": (root / "hooks.json",),
        "pi": (root / "extensions" / "signaltty.ts",),
        "gemini": (root / "settings.json",),
    }[agent]
