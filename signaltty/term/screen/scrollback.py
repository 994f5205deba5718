"""Scrollback: the rendered rows that scrolled off the top of the main grid, oldest first,
bounded (protocol.md §9: 5000 lines a pane).

A ``deque`` of one ``str`` per row cost each row a ~49-byte object header and an 8-byte slot:
over half of a pane's screen memory after 300 KB of mixed output (issue 12, "RSS per pane";
bench/panes.py). Here rows are kept in blocks of :data:`BLOCK`, each one UTF-8 ``bytes`` object
of its rows joined by ``"\\n"`` (UTF-8 rather than ``str``: one wide character would make a
joined ``str`` 2 or 4 bytes per character for every row of its block). Only the newest
rows, fewer than a block, are separate strings. Reading decodes a block at a time.

A row never holds ``"\\n"`` (a line feed is never drawn); a row given with one (a hostile
snapshot) has it stored as a space, so the blocks split back into exactly their rows. Lone
surrogates round-trip (``surrogatepass``).

Rows the line printer folds (``history._fold``, ``extend_lazily``) come in runs of thousands
while output floods, and most of them drop out again before anything reads the history: they
are kept as *segments*, one UTF-8 ``bytes`` of the run's lines as printed, and made into
rows (right-trimmed, put in blocks) only when something reads them or adds rows another way.
A segment that drops out whole is never split (issue 12, flood kind a: building the rows was
a fifth of the daemon's CPU).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

BLOCK = 64  # rows per stored block


def _encode(rows: list[str]) -> bytes:
    text = "\n".join(rows)
    if text.count("\n") != len(rows) - 1:
        text = "\n".join(row.replace("\n", " ") for row in rows)
    return text.encode("utf-8", "surrogatepass")


def _decode(block: bytes) -> list[str]:
    return block.decode("utf-8", "surrogatepass").split("\n")


class Scrollback:
    """Rows oldest first, at most ``maxlen`` (``None``: unbounded); the older ones drop out.

    The part of ``collections.deque`` the screen model uses: ``append``, ``extend``,
    ``clear``, ``len``, iteration, ``[i]`` (negative too; ``IndexError`` out of range) and
    ``maxlen``.
    """

    __slots__ = ("maxlen", "_blocks", "_open", "_skip", "_len", "_segments")

    def __init__(self, maxlen: int | None = None) -> None:
        self.maxlen = maxlen
        self._blocks: deque[bytes] = deque()  # each exactly BLOCK rows
        self._open: list[str] = []  # the newest rows, fewer than BLOCK
        self._skip = 0  # rows at the start of the oldest block that dropped out
        self._len = 0  # rows in blocks, open rows and segments
        # Newer than every block and open row, oldest first: [rows joined as UTF-8, count].
        self._segments: deque[list[Any]] = deque()

    def __len__(self) -> int:
        return self._len

    def extend_lazily(self, rows: list[str]) -> None:
        """``extend`` with each row right-trimmed of spaces (as a row is rendered), kept as
        one segment until something reads the history or adds rows another way (see the
        module doc). No row may hold a line feed (the caller checks: a segment is split at
        them); such rows go in with ``extend``."""
        if not rows:
            return
        self._segments.append(["\n".join(rows).encode("utf-8", "surrogatepass"), len(rows)])
        self._len += len(rows)
        if self.maxlen is not None and self._len > self.maxlen:
            self._trim()

    def _settle(self) -> None:
        """Make every segment into rows (in order, after the blocks and open rows)."""
        segments = self._segments
        while segments:
            data, count = segments.popleft()
            self._len -= count
            rows = data.decode("utf-8", "surrogatepass").split("\n")
            self._add([row.rstrip(" ") for row in rows])

    def append(self, row: str) -> None:
        if self._segments:
            self._settle()
        opened = self._open
        opened.append(row)
        self._len += 1
        if len(opened) == BLOCK:
            self._blocks.append(_encode(opened))
            self._open = []
        if self.maxlen is not None and self._len > self.maxlen:
            self._trim()

    def extend(self, rows: Iterable[str]) -> None:
        items = rows if isinstance(rows, list) else list(rows)
        if self.maxlen is not None and len(items) >= self.maxlen:
            self.clear()
            items = items[len(items) - self.maxlen :] if self.maxlen else []
        if self._segments:
            self._settle()
        self._add(items)

    def _add(self, items: list[str]) -> None:
        """Rows after every block and open row (no segment is held)."""
        start = 0
        while start < len(items):
            take = min(BLOCK - len(self._open), len(items) - start)
            self._open.extend(items[start : start + take])
            start += take
            if len(self._open) == BLOCK:
                self._blocks.append(_encode(self._open))
                self._open = []
        self._len += len(items)
        if self.maxlen is not None and self._len > self.maxlen:
            self._trim()

    def clear(self) -> None:
        self._blocks.clear()
        self._segments.clear()
        self._open = []
        self._skip = 0
        self._len = 0

    def _trim(self) -> None:
        assert self.maxlen is not None
        excess = self._len - self.maxlen
        while excess > 0 and self._blocks:
            left = BLOCK - self._skip
            if excess < left:
                self._skip += excess
                self._len -= excess
                return
            self._blocks.popleft()
            self._skip = 0
            self._len -= left
            excess -= left
        if excess > 0 and self._open:
            cut = min(excess, len(self._open))
            del self._open[:cut]
            self._len -= cut
            excess -= cut
        segments = self._segments
        while excess > 0 and segments:
            segment = segments[0]
            if excess < segment[1]:
                # The rows that dropped out are cut off, so that no more than ``maxlen``
                # rows are held (~90 ns a row; a fold adds ~1 600).
                segment[0] = segment[0].split(b"\n", excess)[-1]
                segment[1] -= excess
                self._len -= excess
                return
            segments.popleft()
            self._len -= segment[1]
            excess -= segment[1]

    def __iter__(self) -> Iterator[str]:
        if self._segments:
            self._settle()
        skip = self._skip
        for block in list(self._blocks):
            rows = _decode(block)
            yield from rows[skip:] if skip else rows
            skip = 0
        yield from list(self._open)

    def __getitem__(self, index: int) -> str:
        n = self._len
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("scrollback index out of range")
        if self._segments:
            self._settle()
        at = index + self._skip
        whole = len(self._blocks) * BLOCK
        if at < whole:
            return _decode(self._blocks[at // BLOCK])[at % BLOCK]
        return self._open[at - whole]
