"""The per-provider result of install/uninstall (pure; Spec: integrations.md §1.5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Report:
    """``{agent, file, changed, notice?}``; ``file`` is the provider's hooks file (absolute)."""

    agent: str
    file: str
    changed: bool
    notice: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"agent": self.agent, "file": self.file, "changed": self.changed}
        if self.notice:
            out["notice"] = self.notice
        return out
