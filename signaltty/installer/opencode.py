"""OpenCode: the whole managed plugin file ``<root>/plugins/signaltty.js`` (Spec: integrations.md §1.3).

Rendered from ``integrations/opencode/signaltty.js.tmpl``; a file without the managed
first line belongs to the user and is never overwritten nor removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from signaltty.installer import safefile
from signaltty.installer.errors import InstallError
from signaltty.installer.report import Report
from signaltty.system.resources import integration_template

AGENT = "opencode"
TEMPLATE: Final = "opencode/signaltty.js.tmpl"
MARKER: Final = "// signaltty hook-event shim for OpenCode (managed by signaltty integration)."
FOREIGN: Final = "plugins/signaltty.js already contains a plugin not managed by signaltty"
_PLACEHOLDER: Final = "@SIGNALTTY_REPORTER@"


def plugin_file(root: Path) -> Path:
    return root / "plugins" / "signaltty.js"


def render(reporter: str) -> str:
    """The plugin text with the reporter path as a JS string literal.

    Raises:
        FileNotFoundError: the template is missing from the package and the checkout.
    """
    return integration_template(TEMPLATE).replace(_PLACEHOLDER, json.dumps(reporter))


def is_managed(text: str) -> bool:
    """Whether the file's first line is the managed marker."""
    return text.split("\n", 1)[0].rstrip("\r") == MARKER


def install(root: Path, reporter: str, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S) -> Report:
    """Write (or refresh) the managed plugin.

    Raises:
        InstallError: a foreign plugin is in place (:data:`FOREIGN`); see
            :func:`signaltty.installer.safefile.edit`.
    """
    content = render(reporter)

    def transform(old: str | None) -> str | None:
        if old is not None and not is_managed(old):
            raise InstallError(FOREIGN)
        return None if old == content else content

    file, changed = safefile.edit(plugin_file(root), transform, lock_timeout_s=lock_timeout_s)
    return Report(AGENT, str(file), changed)


def uninstall(root: Path, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S) -> Report:
    """Remove the managed plugin; a foreign plugin is left with a notice.

    Raises:
        InstallError: see :func:`signaltty.installer.safefile.edit`.
    """
    foreign: list[bool] = []

    def transform(old: str | None) -> Any:
        if old is None:
            return None
        if not is_managed(old):
            foreign.append(True)
            return None
        return safefile.DELETE

    file, changed = safefile.edit(plugin_file(root), transform, lock_timeout_s=lock_timeout_s)
    return Report(AGENT, str(file), changed, FOREIGN + "; left in place" if foreign else None)


def status(root: Path) -> dict[str, Any]:
    """``{installed, file, foreign_plugin}``.

    Raises:
        InstallError: the path is not a regular file or is unreadable.
    """
    file = safefile.resolve(plugin_file(root))
    text, _ = safefile.read_text(file)
    managed = text is not None and is_managed(text)
    return {"installed": managed, "file": str(file), "foreign_plugin": text is not None and not managed}
