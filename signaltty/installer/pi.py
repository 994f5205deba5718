"""Pi: the whole managed extension file ``<root>/extensions/signaltty.ts`` (issue 11).

``<root>`` is ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``; Pi loads every extension in
``extensions/`` at start. Rendered from ``integrations/pi/signaltty.ts.tmpl``; a file
without the managed first line belongs to the user and is never overwritten nor removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from signaltty.installer import safefile
from signaltty.installer.errors import InstallError
from signaltty.installer.report import Report
from signaltty.system.resources import integration_template

AGENT = "pi"
TEMPLATE: Final = "pi/signaltty.ts.tmpl"
MARKER: Final = "// signaltty extension for Pi (managed by signaltty integration)."
FOREIGN: Final = "extensions/signaltty.ts already contains an extension not managed by signaltty"
_PLACEHOLDER: Final = "@SIGNALTTY_REPORTER@"


def extension_file(root: Path) -> Path:
    return root / "extensions" / "signaltty.ts"


def render(reporter: str) -> str:
    """The extension text with the reporter path as a JS string literal.

    Raises:
        FileNotFoundError: the template is missing from the package and the checkout.
    """
    return integration_template(TEMPLATE).replace(_PLACEHOLDER, json.dumps(reporter))


def is_managed(text: str) -> bool:
    """Whether the file's first line is the managed marker."""
    return text.split("\n", 1)[0].rstrip("\r") == MARKER


def install(root: Path, reporter: str, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S) -> Report:
    """Write (or refresh) the managed extension.

    Raises:
        InstallError: a foreign extension is in place (:data:`FOREIGN`); see
            :func:`signaltty.installer.safefile.edit`.
    """
    content = render(reporter)

    def transform(old: str | None) -> str | None:
        if old is not None and not is_managed(old):
            raise InstallError(FOREIGN)
        return None if old == content else content

    file, changed = safefile.edit(extension_file(root), transform, lock_timeout_s=lock_timeout_s)
    return Report(AGENT, str(file), changed)


def uninstall(root: Path, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S) -> Report:
    """Remove the managed extension; a foreign one is left with a notice.

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

    file, changed = safefile.edit(extension_file(root), transform, lock_timeout_s=lock_timeout_s)
    return Report(AGENT, str(file), changed, FOREIGN + "; left in place" if foreign else None)


def status(root: Path) -> dict[str, Any]:
    """``{installed, file, foreign_extension}``.

    Raises:
        InstallError: the path is not a regular file or is unreadable.
    """
    file = safefile.resolve(extension_file(root))
    text, _ = safefile.read_text(file)
    managed = text is not None and is_managed(text)
    return {"installed": managed, "file": str(file), "foreign_extension": text is not None and not managed}
