"""Read the service and integration templates shipped with signaltty (system layer, stdlib only).

A wheel carries them as package data force-included by pyproject.toml
(``systemd/`` → ``signaltty/_service/systemd/``, ``launchd/`` → ``signaltty/_service/launchd/``,
``contrib/dbus/`` → ``signaltty/_service/dbus/``, ``integrations/`` →
``signaltty/_integrations/``). A source checkout or editable install has no such
directories, so each lookup falls back to the repository path.

Spec: README.md "Package layout"; desktop-and-service.md §3.1, §3.3, §4.1.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Final

# Names accepted by service_template(): "<kind>/<file>" under signaltty/_service/.
SYSTEMD_UNIT: Final = "systemd/signaltty.service"
LAUNCHD_PLIST: Final = "launchd/dev.signaltty.daemon.plist"
DBUS_ACTIVATION: Final = "dbus/dev.signaltty.Signaltty.service"

# kind under signaltty/_service/ → directory in the repository (pyproject force-include).
SERVICE_SOURCE_DIRS: Final = MappingProxyType(
    {"systemd": "systemd", "launchd": "launchd", "dbus": "contrib/dbus"}
)
_SERVICE_PACKAGE_DIR: Final = "_service"
_INTEGRATIONS_PACKAGE_DIR: Final = "_integrations"
_INTEGRATIONS_SOURCE_DIR: Final = "integrations"
# signaltty/system/resources.py → the repository root in a source checkout.
_REPO_ROOT: Final = Path(__file__).resolve().parents[2]


def _parts(relpath: str) -> tuple[str, ...]:
    """Split a template name into path parts, refusing anything that could leave its root.

    Raises:
        ValueError: ``relpath`` is empty, absolute, or has ``.``/``..``/empty components.
    """
    text = relpath.replace("\\", "/")
    pure = PurePosixPath(text)
    parts = tuple(text.split("/"))
    if not text or pure.is_absolute() or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"invalid template name {relpath!r}: expected a relative path")
    return parts


def _read(package_parts: tuple[str, ...], source_dir: Path, relpath: str) -> str:
    """Read ``signaltty/<package_parts>`` from the installed package, else ``source_dir``.

    Raises:
        FileNotFoundError: neither location holds the file.
    """
    packaged = resources.files("signaltty").joinpath(*package_parts)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    source = source_dir.joinpath(*_parts(relpath))
    if source.is_file():
        return source.read_text(encoding="utf-8")
    raise FileNotFoundError(
        f"template {relpath!r} not found in signaltty/{'/'.join(package_parts[:-1])} "
        f"nor in {source.parent}"
    )


def service_template(name: str) -> str:
    """Return the text of a service-manager template.

    Args:
        name: ``"<kind>/<file>"`` with kind ``systemd``, ``launchd`` or ``dbus``; use
            :data:`SYSTEMD_UNIT`, :data:`LAUNCHD_PLIST` or :data:`DBUS_ACTIVATION`.

    Returns:
        The template text, placeholders unrendered (``%h/.local/bin/signaltty``,
        ``@SIGNALTTY_BIN@``, ``@STATE_DIR@``, ``/usr/bin/env signaltty``).

    Raises:
        ValueError: unknown kind or a path that is not a plain relative name.
        FileNotFoundError: the template is in neither the package nor the checkout.

    Spec: desktop-and-service.md §3.1, §3.3, §4.1.
    """
    parts = _parts(name)
    if len(parts) < 2 or parts[0] not in SERVICE_SOURCE_DIRS:
        raise ValueError(
            f"invalid service template {name!r}: expected <kind>/<file> with kind in "
            f"{', '.join(SERVICE_SOURCE_DIRS)}"
        )
    kind, rest = parts[0], "/".join(parts[1:])
    return _read((_SERVICE_PACKAGE_DIR, *parts), _REPO_ROOT / SERVICE_SOURCE_DIRS[kind], rest)


def integration_template(relpath: str) -> str:
    """Return the text of a provider integration template.

    Args:
        relpath: path below ``integrations/``, e.g. ``"opencode/signaltty.js.tmpl"``.

    Returns:
        The template text.

    Raises:
        ValueError: ``relpath`` is not a plain relative name.
        FileNotFoundError: the template is in neither the package nor the checkout.

    Spec: README.md "Package layout" (``integrations/`` → ``signaltty/_integrations/``).
    """
    parts = _parts(relpath)
    return _read(
        (_INTEGRATIONS_PACKAGE_DIR, *parts), _REPO_ROOT / _INTEGRATIONS_SOURCE_DIR, relpath
    )
