"""Codex: managed hooks in ``<root>/hooks.json`` and the ``[features]`` flag in ``config.toml``.

``config.toml`` is edited with tomlkit (comments and layout kept); ``[hooks]`` tables and
``[hooks.state]`` (Codex's own trust records) are never touched, a disabled flag is never
enabled, and no trust-bypass flag is ever added.

Spec: integrations.md §1.3 "Codex config.toml", §1.5 (trust notice).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, cast

import tomlkit
import tomlkit.exceptions

from signaltty.installer import jsonfile, merge, safefile
from signaltty.installer.command import EVENTS, managed_command, timeout_for
from signaltty.installer.errors import InstallError
from signaltty.installer.report import Report

AGENT = "codex"
TRUST_NOTICE: Final = (
    "Codex: review and trust the signaltty hooks in /hooks before status events can arrive. "
    "In an ordinary shell, launch codex --no-daemon so hooks belong to this terminal."
)
DISABLED_NOTICE: Final = "Codex hooks are disabled in config.toml; signaltty does not enable them."
NOT_A_TABLE_NOTICE: Final = "Codex [features] could not be edited; set hooks = true yourself."
_FLAGS: Final = ("hooks", "codex_hooks")


def hooks_file(root: Path) -> Path:
    return root / "hooks.json"


def config_file(root: Path) -> Path:
    return root / "config.toml"


def _parse(text: str | None, file: Path) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text or "")
    except tomlkit.exceptions.TOMLKitError as exc:
        raise InstallError(f"{file}: invalid TOML: {exc}") from None


def feature_flag(doc: Mapping[str, Any]) -> str:
    """``enabled``, ``disabled`` (either flag false) or ``absent`` (``[features]`` not a table →
    absent)."""
    features = doc.get("features")
    if not isinstance(features, Mapping):
        return "absent"
    values = [features.get(k) for k in _FLAGS if k in features]
    if any(v is False for v in values):
        return "disabled"
    return "enabled" if any(v is True for v in values) else "absent"


def _flag_transform(file: Path, notices: list[str]) -> Any:
    def transform(text: str | None) -> str | None:
        notices.clear()  # the edit may run the transform again on a re-read file
        doc = _parse(text, file)
        features = doc.get("features")
        if features is None:
            table = tomlkit.table()
            table.add("hooks", True)
            doc.add("features", table)
        elif not isinstance(features, Mapping):
            notices.append(NOT_A_TABLE_NOTICE)
            return None
        elif any(features.get(k) is False for k in _FLAGS):
            notices.append(DISABLED_NOTICE)
            return None
        elif any(k in features for k in _FLAGS):
            return None
        else:
            cast(Any, features)["hooks"] = True
        new = tomlkit.dumps(doc)
        return None if new == text else new

    return transform


def install(
    root: Path, reporter: str, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S
) -> Report:
    """Merge the managed hooks, then set ``[features] hooks = true`` when neither flag exists.

    ``config.toml`` is validated before ``hooks.json`` is written, so a malformed
    ``config.toml`` leaves both files untouched.

    Raises:
        InstallError: see :func:`signaltty.installer.safefile.edit`; invalid TOML.
    """
    toml_path = config_file(root)
    toml_target = safefile.resolve(toml_path)
    text, _ = safefile.read_text(toml_target)
    _parse(text, toml_target)
    want = {e: (managed_command(reporter, AGENT, e), timeout_for(AGENT, e)) for e in EVENTS[AGENT]}
    file, changed = jsonfile.edit_json(
        hooks_file(root),
        lambda r, f: merge.install_grouped(r, f, want),
        lock_timeout_s=lock_timeout_s,
    )
    notices: list[str] = []
    safefile.edit(toml_path, _flag_transform(toml_target, notices), lock_timeout_s=lock_timeout_s)
    if changed:
        notices.append(TRUST_NOTICE)
    return Report(AGENT, str(file), changed, " ".join(notices) or None)


def uninstall(root: Path, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S) -> Report:
    """Remove owned commands from ``hooks.json``; ``config.toml`` is left alone.

    Raises:
        InstallError: see :func:`signaltty.installer.safefile.edit`.
    """
    file, changed = jsonfile.edit_json(
        hooks_file(root), merge.uninstall_grouped, lock_timeout_s=lock_timeout_s
    )
    return Report(AGENT, str(file), changed)


def status(root: Path) -> dict[str, Any]:
    """``{installed, file, missing_events, trust: "provider_review", feature_flag}``.

    Raises:
        InstallError: unreadable or malformed files.
    """
    file, data = jsonfile.read_object(hooks_file(root))
    missing = merge.missing_events(data, EVENTS[AGENT], grouped=True)
    toml_target = safefile.resolve(config_file(root))
    toml_text, _ = safefile.read_text(toml_target)
    return {
        "installed": not missing,
        "file": str(file),
        "missing_events": missing,
        "trust": "provider_review",
        "feature_flag": feature_flag(_parse(toml_text, toml_target)),
    }
