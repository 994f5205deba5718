"""Ids and workspace handles (pure, stdlib only; Spec: protocol.md §4 Workspace/Pane)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Collection, Iterable

from signaltty.core.limits import MAX_HANDLE

_SLUG_RUN = re.compile(r"[a-z0-9]+")


def new_id(prefix: str) -> str:
    """Return ``<prefix>_`` + 32 lowercase hex characters (e.g. ``pane_3f…``)."""
    return f"{prefix}_{secrets.token_hex(16)}"


def slugify(name: str) -> str:
    """Lowercase ``[a-z0-9]`` runs joined by single ``-``, at most 32 chars; empty → ``ws``."""
    slug = "-".join(_SLUG_RUN.findall(name.lower()))[:MAX_HANDLE].strip("-")
    return slug or "ws"


def unique_handle(name: str, taken: Collection[str]) -> str:
    """Return the slug of ``name``, suffixed ``-2``, ``-3``, … on collision (base shortened to fit).

    Handles never contain ``_``, so they cannot be mistaken for ids.
    """
    base = slugify(name)
    if base not in taken:
        return base
    n = 2
    while True:
        suffix = f"-{n}"
        cand = base[: MAX_HANDLE - len(suffix)].rstrip("-") + suffix
        if cand not in taken:
            return cand
        n += 1


# Short pane ids (issue 13 item 9), like git's and docker's abbreviated ids: a typed
# ``pane_`` plus at least one character that starts exactly one pane id names that pane;
# plain output shows at least SHORT_ID_SHOWN hex characters (32 bits: two of a few hundred
# panes share them about once in a hundred thousand; then more are shown).
PANE_PREFIX = "pane_"
SHORT_ID_SHOWN = 8


def prefix_matches(ref: str, ids: Iterable[str], *, kind: str = PANE_PREFIX) -> list[str]:
    """The ids that ``ref`` abbreviates, sorted.

    Args:
        ref: what a person typed; an abbreviation is ``kind`` followed by at least one
            character (``pane_3f``). Anything else (``3f``, ``pane_``) abbreviates nothing.
        ids: the full ids to match against.
        kind: the id prefix (``pane_``).

    Returns:
        Every id that starts with ``ref`` (``ref`` itself when it is a full id); ``[]`` when
        ``ref`` is not an abbreviation or nothing matches.
    """
    if not ref.startswith(kind) or len(ref) <= len(kind):
        return []
    return sorted(i for i in ids if i.startswith(ref))


def short_ids(
    ids: Iterable[str], *, kind: str = PANE_PREFIX, shown: int = SHORT_ID_SHOWN
) -> dict[str, str]:
    """Each id → its shortest unique abbreviation among ``ids``, at least ``shown`` characters
    after ``kind`` (never longer than the id). Ids without ``kind`` map to themselves.

    Uniqueness is among ``ids`` only: pass every pane id, not a filtered list.
    """
    given = list(ids)
    full = sorted({i for i in given if i.startswith(kind)})
    out: dict[str, str] = {}
    for n, cur in enumerate(full):
        need = len(kind) + shown
        for other in (full[n - 1] if n else None, full[n + 1] if n + 1 < len(full) else None):
            if other is not None:
                common = 0
                while common < min(len(cur), len(other)) and cur[common] == other[common]:
                    common += 1
                need = max(need, common + 1)
        out[cur] = cur[:need]
    for i in given:
        out.setdefault(i, i)
    return out
