"""Install, uninstall and report provider integrations (Spec: integrations.md §1).

Shared by ``signaltty integration`` and the daemon's automatic configuration (§3).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from signaltty.installer import claude, codex, cursor, gemini, opencode, pi
from signaltty.installer.errors import InstallError
from signaltty.installer.homes import PROVIDERS, provider_root
from signaltty.installer.report import Report
from signaltty.installer.safefile import LOCK_TIMEOUT_S
from signaltty.system.statefile import read_bounded

# the daemon's bound for one manifest (agents/manifest_loader.py MAX_MANIFEST_BYTES)
MAX_MANIFEST_BYTES: Final = 1 << 20

MODULES: Final[Mapping[str, ModuleType]] = {
    "claude": claude,
    "codex": codex,
    "opencode": opencode,
    "cursor": cursor,
    "pi": pi,
    "gemini": gemini,
}


def select(target: str) -> tuple[str, ...]:
    """``all`` → every provider in order; a provider → itself.

    Raises:
        InstallError: unknown provider.
    """
    if target == "all":
        return PROVIDERS
    if target not in MODULES:
        raise InstallError(f"unknown provider {target!r}: expected {', '.join(PROVIDERS)} or all")
    return (target,)


def install(
    agent: str,
    reporter: str,
    *,
    home: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    root: Path | None = None,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> Report:
    """Install ``agent``'s managed hooks under ``root`` (else resolved from ``home``/``env``).

    Raises:
        InstallError: the provider's files were refused or could not be written.
    """
    root = root or provider_root(agent, home=home, env=os.environ if env is None else env)
    result: Report = MODULES[agent].install(root, reporter, lock_timeout_s=lock_timeout_s)
    return result


def uninstall(
    agent: str,
    *,
    home: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    lock_timeout_s: float = LOCK_TIMEOUT_S,
) -> Report:
    """Remove ``agent``'s owned hooks.

    Raises:
        InstallError: the provider's files were refused or could not be written.
    """
    root = provider_root(agent, home=home, env=os.environ if env is None else env)
    result: Report = MODULES[agent].uninstall(root, lock_timeout_s=lock_timeout_s)
    return result


def status(
    agent: str, *, home: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The §1.5 status object of one provider; a refused file gives ``{installed: false, file,
    error}``."""
    root = provider_root(agent, home=home, env=os.environ if env is None else env)
    module = MODULES[agent]
    try:
        result: dict[str, Any] = module.status(root)
        return result
    except InstallError as exc:
        files = {
            "claude": claude.settings_file,
            "codex": codex.hooks_file,
            "opencode": opencode.plugin_file,
            "cursor": cursor.hooks_file,
            "pi": pi.extension_file,
            "gemini": gemini.settings_file,
        }
        return {"installed": False, "file": str(files[agent](root)), "error": str(exc)}


def manifests(directory: Path) -> list[dict[str, Any]]:
    """The user detection manifests in ``directory`` (``*.toml``), broken ones included.

    Each file is read as the daemon's loader reads it: never blocking (a FIFO is refused
    at once, fifth attack pass, L1), at most ``MAX_MANIFEST_BYTES``, a symlink to a
    regular file followed.

    Returns:
        ``[{name, manifest: {file, kind, ok: true}}]`` or ``{file, ok: false, error}``,
        sorted by name.
    """
    out: list[dict[str, Any]] = []
    try:
        files = sorted(p for p in directory.iterdir() if p.suffix == ".toml")
    except OSError:
        return out
    for file in files:
        entry: dict[str, Any] = {"file": str(file)}
        try:
            # resolved first: the reader refuses a final symlink, the daemon follows it
            raw = read_bounded(file.resolve(strict=True), MAX_MANIFEST_BYTES)
            data = tomllib.loads(raw.decode("utf-8"))
        except OSError as exc:  # its message names the file (the entry does too)
            entry.update(ok=False, error=exc.strerror or str(exc))
        except (RuntimeError, ValueError) as exc:  # RuntimeError: a symlink loop
            entry.update(ok=False, error=str(exc))
        else:
            kind = data.get("kind", "generic")
            if isinstance(kind, str):
                entry.update(kind=kind, ok=True)
            else:
                entry.update(ok=False, error="kind is not a string")
        out.append({"name": file.stem, "manifest": entry})
    return out
