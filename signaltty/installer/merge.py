"""Merging managed hooks into provider JSON objects (pure; Spec: integrations.md §1.3).

Two shapes: *grouped* (Claude ``settings.json``, Codex ``hooks.json``: event → groups
``{matcher, hooks: [{type, command, timeout}]}``) and *flat* (Cursor ``hooks.json``: event →
``[{command, timeout}]``). Foreign hooks, groups and keys are never touched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from signaltty.installer.command import is_owned
from signaltty.installer.errors import InstallError

Want = Mapping[str, tuple[str, int]]  # event → (command, timeout s)


def hooks_object(root: dict[str, Any], file: Path, *, create: bool) -> dict[str, Any] | None:
    """Return ``root["hooks"]`` after checking every event value is an array.

    Raises:
        InstallError: ``hooks`` is not an object, or an event value is not an array.
    """
    hooks = root.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = root["hooks"] = {}
    if not isinstance(hooks, dict):
        raise InstallError(f'{file}: "hooks" is not an object')
    for event, value in hooks.items():
        if not isinstance(value, list):
            raise InstallError(f"{file}: hooks.{event} is not an array")
    return hooks


def _grouped_entries(
    groups: list[Any],
) -> Iterator[tuple[dict[str, Any], list[Any], dict[str, Any]]]:
    for group in groups:
        if isinstance(group, dict) and isinstance(group.get("hooks"), list):
            for entry in group["hooks"]:
                if isinstance(entry, dict):
                    yield group, group["hooks"], entry


def _flat_entries(entries: list[Any]) -> Iterator[tuple[None, list[Any], dict[str, Any]]]:
    for entry in entries:
        if isinstance(entry, dict):
            yield None, entries, entry


def _install(
    hooks: dict[str, Any],
    want: Want,
    entries: Callable[[list[Any]], Iterator[Any]],
    new: Callable[[str, int], Any],
) -> None:
    for event, (command, timeout) in want.items():
        items = hooks.setdefault(event, [])
        owned = [entry for _, _, entry in entries(items) if is_owned(entry.get("command"))]
        for entry in owned:
            entry["command"] = command
            entry["timeout"] = timeout
        if not owned:
            items.append(new(command, timeout))


def install_grouped(root: dict[str, Any], file: Path, want: Want) -> None:
    """Rewrite owned commands in place (also in mixed groups), else append a managed group.

    Raises:
        InstallError: see :func:`hooks_object`.
    """
    hooks = hooks_object(root, file, create=True)
    assert hooks is not None
    _install(
        hooks,
        want,
        _grouped_entries,
        lambda c, t: {"matcher": "", "hooks": [{"type": "command", "command": c, "timeout": t}]},
    )


def install_flat(root: dict[str, Any], file: Path, want: Want) -> None:
    """Cursor: add ``"version": 1`` when absent, then rewrite or append flat entries.

    Raises:
        InstallError: see :func:`hooks_object`.
    """
    if "version" not in root:
        root["version"] = 1
    hooks = hooks_object(root, file, create=True)
    assert hooks is not None
    _install(hooks, want, _flat_entries, lambda c, t: {"command": c, "timeout": t})


def uninstall_grouped(root: dict[str, Any], file: Path) -> None:
    """Remove owned commands from every group; drop groups left as bare managed shells
    (only ``matcher: ""`` and ``hooks``) and event keys left empty.

    Raises:
        InstallError: see :func:`hooks_object`.
    """
    hooks = hooks_object(root, file, create=False)
    if hooks is None:
        return
    for event in list(hooks):
        groups = hooks[event]
        touched = False
        for group in list(groups):
            if not (isinstance(group, dict) and isinstance(group.get("hooks"), list)):
                continue
            kept = [
                e
                for e in group["hooks"]
                if not (isinstance(e, dict) and is_owned(e.get("command")))
            ]
            if len(kept) == len(group["hooks"]):
                continue
            touched = True
            group["hooks"] = kept
            if not kept and set(group) <= {"matcher", "hooks"} and group.get("matcher", "") == "":
                groups.remove(group)
        if touched and not groups:
            del hooks[event]


def uninstall_flat(root: dict[str, Any], file: Path) -> None:
    """Remove owned flat entries and event keys left empty (``version`` stays).

    Raises:
        InstallError: see :func:`hooks_object`.
    """
    hooks = hooks_object(root, file, create=False)
    if hooks is None:
        return
    for event in list(hooks):
        entries = hooks[event]
        kept = [e for e in entries if not (isinstance(e, dict) and is_owned(e.get("command")))]
        if len(kept) != len(entries):
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]


def missing_events(root: dict[str, Any], events: tuple[str, ...], *, grouped: bool) -> list[str]:
    """Events of ``events`` without an owned command (status; malformed parts count as missing)."""
    hooks = root.get("hooks")
    missing = []
    for event in events:
        items = hooks.get(event) if isinstance(hooks, dict) else None
        found = isinstance(items, list) and any(
            is_owned(entry.get("command"))
            for _, _, entry in (_grouped_entries(items) if grouped else _flat_entries(items))
        )
        if not found:
            missing.append(event)
    return missing
