"""Bounded JSONL line splitting (pure, stdlib only;
Spec: protocol.md §1, §3 "line longer than 16 MiB").

``LineBuffer`` takes bytes as they arrive and yields complete lines. A line longer than the
limit is reported once as ``TOO_LONG`` and the rest of it is discarded up to its newline, so
memory stays bounded by the limit plus one read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from signaltty.core.limits import MAX_LINE_BYTES

TOO_LONG: Final = object()


class LineBuffer:
    """Split a byte stream into ``\\n``-terminated lines of at most ``limit`` bytes.

    Args:
        limit: maximum line length in bytes, excluding the newline.
    """

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self._limit = limit
        self._buf = bytearray()
        self._discarding = False
        self._scan_from = 0

    def feed(self, data: bytes) -> Iterator[bytes | object]:
        """Add ``data``; yield each complete line (bytes, no newline) or ``TOO_LONG``."""
        self._buf += data
        while True:
            nl = self._buf.find(b"\n", self._scan_from)
            if nl < 0:
                if self._discarding:
                    self._buf.clear()
                elif len(self._buf) > self._limit:
                    self._buf.clear()
                    self._discarding = True
                    yield TOO_LONG
                self._scan_from = len(self._buf)
                return
            line = bytes(self._buf[:nl])
            del self._buf[: nl + 1]
            self._scan_from = 0
            if self._discarding:
                self._discarding = False
                continue
            if len(line) > self._limit:
                yield TOO_LONG
                continue
            yield line

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete line."""
        return len(self._buf)
