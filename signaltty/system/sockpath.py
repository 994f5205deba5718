"""The daemon socket path: re-exported from :mod:`signaltty.proto.sockpath`, where the
clients can import it (``proto`` may not import this layer)."""

from __future__ import annotations

from signaltty.proto.sockpath import resolve

__all__ = ["resolve"]
