"""Catalog entries on top of adapters, and ``hook-event --agent X`` resolution (agents.md §4.3).

An ``OverlayAdapter`` is an adapter of one catalog entry over a base adapter of its kind:
the entry's ``[hooks]`` rules replace the base's rules per event, its ``[lifecycle.<Event>]``
maps replace single fields of the resulting classification (a field the table does not set,
or sets to ``keep``, falls through), its ``[session] key`` is tried before the id fields, and
its ``[session] resume`` replaces the resume template. For ``generic`` a mapped event turns an
otherwise unrecognized hook into a recognized one. The builtin kinds themselves are overlays
of their bundled manifests on a bare ``Adapter(kind)`` (``adapters/__init__.py``). Pure and
synchronous like every adapter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from signaltty.agents.adapters import ADAPTERS
from signaltty.agents.adapters.base import Adapter
from signaltty.core.hooks import Classification

if TYPE_CHECKING:
    from signaltty.agents.catalog import Catalog, CatalogEntry
    from signaltty.agents.manifest_hooks import LifecycleOverlay


class OverlayAdapter(Adapter):
    """An adapter overlaid by a catalog entry (agents.md §4.3).

    Args:
        base: the adapter of ``entry.kind`` (a builtin kind's, or bare ``Adapter(kind)``).
        entry: the merged catalog entry whose ``hooks``, ``session_keys``/``session_key``,
            ``resume``, ``session_id_grammar`` and ``lifecycle`` apply.

    The entry's hook rules replace the base's rules of the same event, and its ``[hooks]``
    settings single settings (``HookMap.over``). ``[session] keys`` replaces the base's id
    fields and ``[session] key`` is tried before them; ``[session] resume`` and ``id_format``
    replace the base's. ``kind`` stays the base kind (the rules and the pane model know only
    kinds); ``display_name``/``default_title`` come from the entry; the entry's exact
    ``binaries`` join ``builtin_names`` so nested-session detection finds the agent process.
    """

    def __init__(self, base: Adapter, entry: CatalogEntry) -> None:
        exact = frozenset(b for b in entry.binaries if not b.endswith("*"))
        keys = entry.session_keys if entry.session_keys is not None else base.session_keys
        if entry.session_key is not None:
            keys = (entry.session_key, *(k for k in keys if k != entry.session_key))
        grammar = entry.session_id_grammar
        super().__init__(
            base.kind,
            display_name=entry.display_name,
            builtin_names=base.builtin_names | exact,
            hooks=entry.hooks.over(base.hooks),
            session_keys=keys,
            resume=entry.resume if entry.resume is not None else base.resume,
            session_id_grammar=grammar if grammar is not None else base.session_id_grammar,
        )
        self.base = base
        self.entry = entry
        base_lifecycle = base.lifecycle if isinstance(base, OverlayAdapter) else {}
        self.lifecycle: dict[str, LifecycleOverlay] = {**base_lifecycle, **entry.lifecycle}

    def classify(self, event: str, payload: object) -> Classification:
        """The hook map's classification with the entry's ``[lifecycle.<event>]`` fields on top.

        A replaced attention drops the rule's ``cause`` (the rules derive it from the new
        attention value), since that cause described the replaced attention.
        """
        c = super().classify(event, payload)
        ov = self.lifecycle.get(event)
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
          ``[session]``, ``[lifecycle.*]`` or ``[hooks]`` content, else by the merged entry
          whose id is the kind (if any), else the bare builtin;
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
