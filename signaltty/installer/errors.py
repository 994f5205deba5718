"""The one error type of the installer (pure; Spec: integrations.md §1.4)."""

from __future__ import annotations


class InstallError(Exception):
    """A provider file could not be read, checked, locked or written; nothing was changed.

    The message is the user-facing text (``configuration is locked; retry``, ``<file>
    changed during setup; retry``, ``<file>: invalid JSON: …``).
    """
