"""Builtin adapters by kind (pure; Spec: agents.md §1, §4.3 first row without manifests).

Catalog ids (``gemini``, …) and user-manifest overlays resolve through the catalog, which
arrives with the manifests issue; until then only the six builtin kinds resolve.
"""

from __future__ import annotations

from typing import Final

from signaltty.agents.adapters.base import Adapter
from signaltty.agents.adapters.claude import ClaudeAdapter
from signaltty.agents.adapters.codex import CodexAdapter
from signaltty.agents.adapters.cursor import CursorAdapter
from signaltty.agents.adapters.generic import GenericAdapter
from signaltty.agents.adapters.opencode import OpenCodeAdapter
from signaltty.agents.adapters.pi import PiAdapter

ADAPTERS: Final[dict[str, Adapter]] = {
    a.kind: a
    for a in (
        ClaudeAdapter(),
        CodexAdapter(),
        OpenCodeAdapter(),
        CursorAdapter(),
        PiAdapter(),
        GenericAdapter(),
    )
}


def adapter_for(kind_or_id: str) -> Adapter | None:
    """Return the adapter for ``hook-event --agent X``.

    Args:
        kind_or_id: ``claude``, ``codex``, ``opencode``, ``cursor``, ``pi`` or ``generic``.

    Returns:
        The builtin adapter, or ``None`` (the router answers ``BAD_PARAMS`` "unknown agent").
        ``none`` is not a hook agent and returns ``None``.

    Spec: agents.md §4.3 (builtin kinds; catalog ids come with manifests).
    """
    return ADAPTERS.get(kind_or_id)
