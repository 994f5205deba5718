"""Built-in adapters by kind: the bundled manifests of the five agents, and ``generic``.

The adapter of kind ``claude`` is ``signaltty/agents/manifests/claude.toml`` read like any
manifest (its ``[hooks]`` map, ``[session] keys``/``resume``, ``[agent]`` display name and
binaries); likewise ``codex``, ``opencode``, ``cursor`` and ``pi``. ``generic`` is the schema's
defaults: session id ``session_id``, no rules. Each is loaded on first use and kept; catalog
ids and user-manifest overlays resolve through ``overlay.resolve_adapter``.
Spec: agents.md §1, §4.3; issue 14 item 4.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Final

import structlog

from signaltty.agents import catalog
from signaltty.agents.adapters.base import Adapter
from signaltty.agents.manifest_loader import ManifestError, load_manifest

if TYPE_CHECKING:
    from signaltty.agents.catalog import CatalogEntry

log = structlog.get_logger("signaltty.adapters")

BUILTIN_KINDS: Final = ("claude", "codex", "opencode", "cursor", "pi", "generic")


def _load(kind: str) -> Adapter:
    base = Adapter(kind)
    if kind == "generic":
        return base
    try:
        manifest = load_manifest(catalog.BUNDLED_DIR / f"{kind}.toml", "bundled")
    except ManifestError as exc:  # a broken installation: the kind still answers, knowing nothing
        log.error("agents.builtin_manifest_failed", kind=kind, file=exc.file, error=exc.error)
        return base
    return _from_entry(catalog.entry_from_manifest(manifest))


def _from_entry(entry: CatalogEntry) -> Adapter:
    from signaltty.agents.adapters.overlay import OverlayAdapter

    return OverlayAdapter(Adapter(entry.kind), entry)


class BuiltinAdapters(Mapping[str, Adapter]):
    """``kind → Adapter`` for the six builtin kinds, each loaded from its manifest on first use."""

    def __init__(self) -> None:
        self._loaded: dict[str, Adapter] = {}
        self._lock = threading.Lock()  # the catalog reload runs in a worker thread

    def __getitem__(self, kind: str) -> Adapter:
        adapter = self._loaded.get(kind)
        if adapter is not None:
            return adapter
        if kind not in BUILTIN_KINDS:
            raise KeyError(kind)
        with self._lock:
            adapter = self._loaded.get(kind)
            if adapter is None:
                adapter = self._loaded[kind] = _load(kind)
        return adapter

    def prime(self, entries: Iterable[CatalogEntry]) -> None:
        """Adopt bundled kind entries the catalog has just loaded (``catalog.load_catalog``).

        Saves parsing the files again on the event loop at the first hook. Only an entry
        whose id is its kind counts (``claude.toml`` for ``claude``); a kind already loaded
        keeps its adapter (they are equal: the bundled files do not change at run time).
        """
        with self._lock:
            for entry in entries:
                if entry.id == entry.kind != "generic" and entry.kind not in self._loaded:
                    self._loaded[entry.kind] = _from_entry(entry)

    def __iter__(self) -> Iterator[str]:
        return iter(BUILTIN_KINDS)

    def __len__(self) -> int:
        return len(BUILTIN_KINDS)


ADAPTERS: Final = BuiltinAdapters()
catalog.BUNDLED_KIND_LISTENERS.append(ADAPTERS.prime)


def adapter_for(kind_or_id: str) -> Adapter | None:
    """Return the builtin adapter of a kind (``hook-event --agent X`` without a catalog).

    Args:
        kind_or_id: ``claude``, ``codex``, ``opencode``, ``cursor``, ``pi`` or ``generic``.

    Returns:
        The builtin adapter, or ``None`` (the router answers ``BAD_PARAMS`` "unknown agent").
        ``none`` is not a hook agent and returns ``None``.

    Spec: agents.md §4.3 (builtin kinds; catalog ids resolve through ``overlay.resolve_adapter``).
    """
    return ADAPTERS.get(kind_or_id)
