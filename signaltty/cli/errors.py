"""The CLI's own error type, apart from ``cli/main.py`` so the commands it loads lazily
(``cli/top.py``) can raise it without importing their caller (no import cycle)."""

from __future__ import annotations


class CliError(Exception):
    """A client-side failure with a message and an exit code (``code``, default 1)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code
