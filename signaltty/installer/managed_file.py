"""A whole file that signaltty owns inside an agent's config: a plugin or extension
rendered from a template in ``integrations/``, marked as ours by its first line.

A file at that path without the marker belongs to the user: it is never overwritten nor
removed (install refuses, uninstall leaves it with a notice). Used by the OpenCode plugin
and the Pi extension (Spec: integrations.md §1.3; issue 11 for Pi).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signaltty.installer import safefile
from signaltty.installer.errors import InstallError
from signaltty.installer.report import Report
from signaltty.system.resources import integration_template

_PLACEHOLDER = "@SIGNALTTY_REPORTER@"


@dataclass(frozen=True)
class ManagedFile:
    """One managed file.

    Attributes:
        agent: provider name in reports (``opencode``, ``pi``).
        relpath: the file below the agent's config root (``plugins/signaltty.js``).
        template: the template below ``integrations/`` holding ``@SIGNALTTY_REPORTER@``.
        marker: the exact first line that makes the file ours.
        kind: what the file is to the agent (``plugin``, ``extension``), for messages and
            the ``foreign_<kind>`` status key.
    """

    agent: str
    relpath: str
    template: str
    marker: str
    kind: str

    @property
    def foreign(self) -> str:
        """The refusal when a file of the user's is in place."""
        article = "an" if self.kind[:1] in "aeiou" else "a"
        return f"{self.relpath} already contains {article} {self.kind} not managed by signaltty"

    def path(self, root: Path) -> Path:
        """The file for the agent's config root ``root``."""
        return root / self.relpath

    def render(self, reporter: str) -> str:
        """The file text with the reporter path as a JS string literal.

        Raises:
            FileNotFoundError: the template is missing from the package and the checkout.
        """
        return integration_template(self.template).replace(_PLACEHOLDER, json.dumps(reporter))

    def is_managed(self, text: str) -> bool:
        """Whether ``text``'s first line is the marker."""
        return text.split("\n", 1)[0].rstrip("\r") == self.marker

    def install(
        self, root: Path, reporter: str, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S
    ) -> Report:
        """Write (or refresh) the file.

        Raises:
            InstallError: a file of the user's is in place (:attr:`foreign`); see
                :func:`signaltty.installer.safefile.edit`.
        """
        content = self.render(reporter)

        def transform(old: str | None) -> str | None:
            if old is not None and not self.is_managed(old):
                raise InstallError(self.foreign)
            return None if old == content else content

        file, changed = safefile.edit(self.path(root), transform, lock_timeout_s=lock_timeout_s)
        return Report(self.agent, str(file), changed)

    def uninstall(self, root: Path, *, lock_timeout_s: float = safefile.LOCK_TIMEOUT_S) -> Report:
        """Remove the file if it is ours; a file of the user's is left with a notice.

        Raises:
            InstallError: see :func:`signaltty.installer.safefile.edit`.
        """
        foreign: list[bool] = []

        def transform(old: str | None) -> Any:
            if old is None:
                return None
            if not self.is_managed(old):
                foreign.append(True)
                return None
            return safefile.DELETE

        file, changed = safefile.edit(self.path(root), transform, lock_timeout_s=lock_timeout_s)
        return Report(
            self.agent, str(file), changed, self.foreign + "; left in place" if foreign else None
        )

    def status(self, root: Path) -> dict[str, Any]:
        """``{installed, file, foreign_<kind>}``.

        Raises:
            InstallError: the path is not a regular file or is unreadable.
        """
        file = safefile.resolve(self.path(root))
        text, _ = safefile.read_text(file)
        managed = text is not None and self.is_managed(text)
        return {
            "installed": managed,
            "file": str(file),
            f"foreign_{self.kind}": text is not None and not managed,
        }
