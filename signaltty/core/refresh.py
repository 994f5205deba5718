"""Process refresh rule: a pane's foreground program → kind promotion, cwd follow (pure).

Spec: states.md §3.6 (and §2: process information is layer 5; it never touches lifecycle or
attention). The server (``server/refresh.py``) finds the foreground program (agents.md §3.3),
runs kind detection (agents.md §3.1) and calls ``on_process_refresh`` on the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from signaltty.core.model import Pane
from signaltty.core.rules import Effect, Emit

# Kinds a pane may be promoted to, and kinds that may be promoted.
SPECIFIC_KINDS = frozenset({"claude", "codex", "opencode", "cursor", "pi"})
PROMOTABLE_KINDS = frozenset({"generic", "none"})


@dataclass(frozen=True, slots=True)
class Detection:
    """What kind detection (agents.md §3.1) says about a program name.

    Attributes:
        kind: ``claude codex opencode cursor pi`` (a specific kind) or ``generic``.
        catalog_id: id of the matched catalog entry; ``None`` for builtin names.
        display_name: the entry's (or the kind's) display name, e.g. ``Claude Code``.
    """

    kind: str
    catalog_id: str | None
    display_name: str


def on_process_refresh(
    pane: Pane,
    *,
    process_name: str | None,
    cwd: str | None,
    cwd_is_dir: bool,
    detection: Detection | None,
) -> list[Effect]:
    """Apply one process-refresh observation to a live pane (updates ``pane`` in place).

    Args:
        pane: the pane record; nothing happens unless ``pane.live``.
        process_name: program name of the foreground process (agents.md §3.2); ``None`` when
            it could not be read (the previous value is kept).
        cwd: the foreground process's working directory; ``None`` when unreadable.
        cwd_is_dir: whether ``cwd`` is an existing directory (checked by the caller).
        detection: kind detection of ``process_name``; ``None`` when nothing matched.

    Rules:
        * ``process_name`` is stored; alone it emits nothing (runtime-only field).
        * ``generic``/``none`` panes are promoted to a specific ``detection.kind``
          (``kind``, ``catalog_id``, ``display_name`` from the detection); a specific kind
          is never demoted nor switched to another specific kind.
        * ``generic`` panes take ``catalog_id``/``display_name`` of a matched generic entry
          (``detection.kind == "generic"`` with a ``catalog_id``); ``none`` panes stay
          ``none`` for generic matches.
        * ``cwd`` follows when it is a directory whose path is valid UTF-8.

    Returns:
        ``[]`` when no persisted field changed, else exactly one ``Emit("pane.updated",
        {"pane": …, "changed": [...]})``; ``changed`` lists, in this order, those of
        ``kind catalog_id display_name cwd process_name`` that changed. The store marks the
        snapshot dirty for that event, so no ``MarkDirty`` is needed.

    Spec: states.md §3.6.
    """
    if not pane.live:
        return []
    changed: list[str] = []
    info = pane.agent
    if detection is not None and info.kind in PROMOTABLE_KINDS:
        promote = detection.kind in SPECIFIC_KINDS
        follow = (
            detection.kind == "generic"
            and info.kind == "generic"
            and detection.catalog_id is not None
        )
        if promote or follow:
            if detection.kind != info.kind:
                info.kind = detection.kind
                pane.promoted = True
                changed.append("kind")
            if detection.catalog_id != info.catalog_id:
                info.catalog_id = detection.catalog_id
                changed.append("catalog_id")
            if detection.display_name and detection.display_name != info.display_name:
                info.display_name = detection.display_name
                changed.append("display_name")
    if cwd is not None and cwd_is_dir and cwd != pane.cwd and _is_text(cwd):
        pane.cwd = cwd
        changed.append("cwd")
    name_changed = process_name is not None and process_name != pane.process_name
    if name_changed:
        pane.process_name = process_name
    if not changed:
        return []
    if name_changed:
        changed.append("process_name")
    return [Emit("pane.updated", {"pane": pane.to_wire(), "changed": changed})]


def _is_text(path: str) -> bool:
    """False for a path that is not valid UTF-8 (read with surrogate escapes): the protocol
    cannot carry it, so the pane keeps its previous cwd."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
