"""Pi: no hook dialect of its own; identity only (pure; Spec: agents.md §2.5).

Pi's extension events (``session_start``, ``agent_start``, ``agent_end``, …) classify
nothing here; a Pi extension may report ``session_id`` through ``hook-event --agent pi`` or
``report-session``. Lifecycle comes from the bundled screen rules. Resume is offered only
with a known id.
"""

from __future__ import annotations

from signaltty.agents.adapters.base import Adapter


class PiAdapter(Adapter):
    """Pi (``pi``): a Node program that sets ``process.title`` to ``pi``."""

    kind = "pi"
    display_name = "Pi"
    default_title = "Pi"
    builtin_names = ("pi",)
    session_keys = ("session_id",)
    resume = ("pi", "--session", "{id}")
