"""JSON provider files: parse with checks, dump in the managed format (pure; Spec: integrations.md §1.4)."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from signaltty.installer import safefile
from signaltty.installer.errors import InstallError


def load_object(text: str | None, file: Path) -> dict[str, Any]:
    """Parse a provider JSON file; missing or blank → ``{}``.

    Raises:
        InstallError: invalid JSON or a root that is not an object.
    """
    if text is None or not text.strip():
        return {}
    try:
        root = json.loads(text)
    except ValueError as exc:
        raise InstallError(f"{file}: invalid JSON: {exc}") from None
    if not isinstance(root, dict):
        raise InstallError(f"{file}: the JSON root is not an object")
    return root


def dumps(root: dict[str, Any]) -> str:
    """2-space indent, key order preserved, non-ASCII kept, trailing newline."""
    return json.dumps(root, indent=2, ensure_ascii=False) + "\n"


def edit_json(
    path: str | os.PathLike[str],
    mutate: Callable[[dict[str, Any], Path], None],
    *,
    lock_timeout_s: float = safefile.LOCK_TIMEOUT_S,
) -> tuple[Path, bool]:
    """Apply ``mutate(root, file)`` to a JSON object file; unchanged objects are not written.

    Raises:
        InstallError: from :func:`safefile.edit`, :func:`load_object` or ``mutate``.
    """

    def transform(text: str | None) -> str | None:
        file = safefile.resolve(path)
        root = load_object(text, file)
        new = copy.deepcopy(root)
        mutate(new, file)
        if text is not None and new == root:
            return None
        if text is None and not new:
            return None
        return dumps(new)

    return safefile.edit(path, transform, lock_timeout_s=lock_timeout_s)
