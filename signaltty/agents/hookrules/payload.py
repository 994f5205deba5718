"""Reading values out of a hook payload by dotted path (pure; Spec: agents.md §2, §4.1).

Payloads are hostile JSON: any step may be missing or of the wrong type, and a value of the
wrong type counts as absent. Nothing here raises.
"""

from __future__ import annotations

from collections.abc import Iterable


def dig(payload: object, path: str) -> object | None:
    """Return the value at a dotted ``path`` inside nested JSON objects, else ``None``.

    Args:
        payload: any JSON value (``dict``, ``list``, scalar, ``None``).
        path: keys separated by ``.``, e.g. ``"properties.info.id"``.

    Returns:
        The value found, or ``None`` when any step is missing or not an object.

    Spec: agents.md §4.1 ``[session] key`` (dotted path into the hook payload).
    """
    value: object = payload
    for key in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def text(payload: object, *paths: str) -> str | None:
    """Return the first value among ``paths`` that is a non-blank string.

    Args:
        payload: any JSON value.
        paths: dotted paths tried in order.

    Returns:
        The string as given (not stripped), or ``None`` when none qualifies.

    Spec: agents.md §2 ("payload X, else Y, else …").
    """
    for path in paths:
        value = dig(payload, path)
        if isinstance(value, str) and value.strip():
            return value
    return None


def first_string(payload: object, paths: Iterable[str]) -> str | None:
    """Return the first value among ``paths`` that is a string (blank included), else ``None``.

    Used by hook-map conditions: ``["status", "status.type"]`` reads OpenCode's status
    whether it is a string or an object with a ``type`` (docs/manifests.md ``when``).
    """
    for path in paths:
        value = dig(payload, path)
        if isinstance(value, str):
            return value
    return None
