"""Catalog overlays on builtin adapters, and ``hook-event --agent X`` resolution (agents.md §4.3).

An ``OverlayAdapter`` wraps a builtin adapter with one catalog entry: its
``[lifecycle.<Event>]`` maps replace single fields of the builtin classification (a field the
table does not set, or sets to ``keep``, falls through), its ``[session] key`` is tried before
the builtin id fields, and its ``[session] resume`` replaces the resume template. For
``generic`` a mapped event turns an otherwise unrecognized hook into a recognized one.
Pure and synchronous like every adapter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from signaltty.agents.adapters import ADAPTERS
from signaltty.agents.adapters.base import Adapter
from signaltty.core.hooks import Classification, NotificationDraft

if TYPE_CHECKING:
    from signaltty.agents.catalog import Catalog, CatalogEntry


class OverlayAdapter(Adapter):
    """A builtin adapter overlaid by a catalog entry (agents.md §4.3).

    Args:
        base: the builtin adapter of ``entry.kind``.
        entry: the merged catalog entry whose ``lifecycle``, ``session_key`` and ``resume``
            apply.

    The entry's ``[session] id_format`` (if any) replaces the builtin session id grammar.
    ``kind`` stays the builtin kind (the rules and the pane model know only kinds);
    ``display_name``/``default_title`` come from the entry; the entry's exact ``binaries``
    join ``builtin_names`` so nested-session detection finds the agent process.
    """

    def __init__(self, base: Adapter, entry: CatalogEntry) -> None:
        self.base = base
        self.entry = entry
        self.kind = base.kind
        self.display_name = entry.display_name
        self.default_title = entry.display_name
        exact = tuple(
            b for b in entry.binaries if not b.endswith("*") and b not in base.builtin_names
        )
        self.builtin_names = base.builtin_names + exact
        keys = base.session_keys
        if entry.session_key is not None:
            keys = (entry.session_key, *(k for k in keys if k != entry.session_key))
        self.session_keys = keys
        self.tool_events = base.tool_events
        self.resume = entry.resume if entry.resume is not None else base.resume
        self.answer = base.answer
        grammar = entry.session_id_grammar
        self.session_id_grammar = grammar if grammar is not None else base.session_id_grammar

    def classify(self, event: str, payload: object) -> Classification:
        """The builtin classification with the entry's ``[lifecycle.<event>]`` fields on top.

        A replaced attention drops the builtin ``cause`` (the rules derive it from the new
        attention value), since the builtin cause described the builtin attention.
        """
        c = self.base.classify(event, payload)
        ov = self.entry.lifecycle.get(event)
        if ov is None or ov.empty:
            return c
        replaced = ov.attention is not None
        return Classification(
            lifecycle=ov.lifecycle if ov.lifecycle is not None else c.lifecycle,
            attention=ov.attention if replaced else c.attention,
            message=ov.message if ov.message is not None else c.message,
            tool_hook=c.tool_hook,
            cause=None if replaced else c.cause,
        )

    def notification_draft(self, event: str, payload: object) -> NotificationDraft | None:
        """The builtin draft (a mapped generic event has none; its message is stored instead)."""
        return self.base.notification_draft(event, payload)

    def is_auxiliary(self, event: str, payload: object, known_session_id: str | None) -> bool:
        """Delegates to the builtin adapter."""
        return self.base.is_auxiliary(event, payload, known_session_id)

    def ignores_identity(self, payload: object) -> bool:
        """Delegates to the builtin adapter (the Codex title thread stays ignored)."""
        return self.base.ignores_identity(payload)

    def __repr__(self) -> str:
        return f"<OverlayAdapter kind={self.kind!r} entry={self.entry.id!r}>"


def overlay(base: Adapter, entry: CatalogEntry | None) -> Adapter:
    """``base`` overlaid by ``entry``, or ``base`` itself when there is no entry."""
    return base if entry is None else OverlayAdapter(base, entry)


def resolve_adapter(catalog: Catalog | None, agent: str) -> Adapter | None:
    """The adapter for ``hook-event --agent X`` / ``report-session --agent X`` (agents.md §4.3).

    Args:
        catalog: the daemon's active catalog (``None``: builtin adapters only).
        agent: a kind (``claude codex opencode cursor pi generic``) or a catalog id.

    Returns:
        * a kind: its builtin adapter overlaid by the first user manifest of that kind with
          ``[session]``/``[lifecycle.*]`` content, else by the merged entry whose id is the
          kind (if any), else the bare builtin;
        * a catalog id of another entry: the builtin adapter of the entry's kind overlaid by
          the entry;
        * anything else (``none`` included): ``None`` — the caller answers ``BAD_PARAMS``
          "unknown agent".
    """
    base = ADAPTERS.get(agent)
    if base is not None:
        if catalog is None:
            return base
        return overlay(base, catalog.hook_entry_for_kind(agent) or catalog.entry(agent))
    entry = catalog.entry(agent) if catalog is not None else None
    if entry is None:
        return None
    kind_base = ADAPTERS.get(entry.kind)
    return None if kind_base is None else OverlayAdapter(kind_base, entry)
