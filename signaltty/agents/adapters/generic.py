"""Generic terminal: hooks change nothing unless a manifest maps them (pure; Spec: agents.md §2.5).

An explicit ``session_id`` is accepted; there is no resume without a manifest's
``[session] resume``. Agents without a builtin kind (Gemini, Copilot, …) use this adapter
until catalog manifests overlay it (agents.md §4.3).
"""

from __future__ import annotations

from signaltty.agents.adapters.base import Adapter


class GenericAdapter(Adapter):
    """Generic terminal (``generic``; also what kind ``none`` displays as)."""

    kind = "generic"
    display_name = "Terminal"
    default_title = "Terminal"
    builtin_names = ()
    session_keys = ("session_id",)
