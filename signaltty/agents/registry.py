"""Builtin kind detection from a program name, and display names (pure; Spec: agents.md §3.1).

Manifest detection (steps 1–2: user then bundled ``binaries``) arrives with the catalog and
runs before ``detect_kind``; automatic configuration uses only ``builtin_kind`` (step 3) on
the real executable basename (integrations.md §3).
"""

from __future__ import annotations

import functools
import os
from typing import Final

from signaltty.agents.adapters import ADAPTERS


@functools.cache
def builtin_names() -> dict[str, str]:
    """Step 3: builtin program basename → kind, from each kind's bundled ``[agent] binaries``.

    Computed on first use (it reads the five bundled manifests).
    """
    return {name: adapter.kind for adapter in ADAPTERS.values() for name in adapter.builtin_names}


KINDS: Final = ("claude", "codex", "opencode", "cursor", "pi", "generic", "none")


def builtin_kind(program: str) -> str | None:
    """Return the builtin kind of a program name (step 3), else ``None``.

    Args:
        program: a basename (``codex``, ``cursor-agent``) or a path (its basename is used).

    Returns:
        ``codex``, ``claude``, ``opencode``, ``cursor`` or ``pi``; ``None`` otherwise
        (the bare ``agent`` command is never Cursor).

    Spec: agents.md §3.1 step 3.
    """
    return builtin_names().get(os.path.basename(program))


def detect_kind(program: str) -> str:
    """Return the kind of a program name without manifests: builtin, else ``generic``.

    Spec: agents.md §3.1 steps 3–4.
    """
    return builtin_kind(program) or "generic"


def display_name_for(kind: str) -> str:
    """Return the display name of a kind (``Claude Code``, ``Codex``, …; ``Terminal`` otherwise).

    Spec: agents.md §2, §4.6 (display column); protocol.md §4 AgentInfo (``Terminal``).
    """
    adapter = ADAPTERS.get(kind)
    return adapter.display_name if adapter is not None else "Terminal"
