"""Ids and workspace handles (pure, stdlib only; Spec: protocol.md §4 Workspace/Pane)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Collection

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
