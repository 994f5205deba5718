"""The raw output ring: the last ``capacity`` bytes a pane printed (spec: protocol.md,
"history per pane … raw ring 256 KiB").

Every read of every pane is appended here, so the ring must cost little per write and
hold no more memory than its capacity. A ``bytearray`` appended to and cut at the front
does the first but keeps the over-allocation of its last growth (about an eighth more,
292 KiB for a 256 KiB ring: issue 12, ``bench/panes.py``). This ring grows like a
``bytearray`` until it first holds ``capacity`` bytes, then moves into one buffer of
exactly that size and overwrites it in a circle.
"""

from __future__ import annotations


class RawRing:
    """The newest ``capacity`` bytes written, oldest first in :meth:`__bytes__`.

    Args:
        capacity: bytes kept, ≥ 1.

    Raises:
        ValueError: ``capacity`` below 1.
    """

    __slots__ = ("_buf", "_pos", "capacity")

    def __init__(self, capacity: int, data: bytes = b"") -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, not {capacity}")
        self.capacity = capacity
        # shorter than ``capacity`` until the ring fills, exactly ``capacity`` from then on
        self._buf = bytearray()
        self._pos = 0  # once full: where the oldest byte is and the next write starts
        if data:
            self.write(data)

    def write(self, data: bytes) -> None:
        """Append ``data``; what falls past ``capacity`` from the start is dropped."""
        n = len(data)
        cap = self.capacity
        buf = self._buf
        size = len(buf)
        if size + n < cap:  # still filling
            buf += data
            return
        if size < cap or n >= cap:
            # it fills now, or one write replaces it all: one buffer of exactly ``cap`` bytes
            keep = max(cap - n, 0)  # only while filling: ``buf`` is then in order
            ring = bytearray(cap)
            ring[:keep] = memoryview(buf)[size - keep :]
            ring[keep:] = memoryview(data)[n - (cap - keep) :]
            self._buf = ring
            self._pos = 0
            return
        pos = self._pos
        end = pos + n
        if end <= cap:
            buf[pos:end] = data
            self._pos = end if end < cap else 0
        else:
            first = cap - pos
            buf[pos:] = data[:first]
            buf[: n - first] = data[first:]
            self._pos = n - first

    def __len__(self) -> int:
        return len(self._buf)

    def __bytes__(self) -> bytes:
        view = memoryview(self._buf)
        return b"".join((view[self._pos :], view[: self._pos]))
