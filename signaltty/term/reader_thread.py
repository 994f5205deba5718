"""Native threads that read a flooding pane's PTY master while the event loop works (issue 12).

Layer rule: standard library and the optional C module ``_reader`` only; starts and joins OS
threads, reads the master it is given, never closes it.

Why: output reaches a PTY master at most ~4 KiB per read, each handed over by a kernel worker.
Read on the loop's thread, those round trips and the screen model's work take turns on one
core and a flood runs at ~0.4–0.6 of the raw reader's speed; read by a thread of its own that
never takes the GIL, they overlap with the screen's work and the loop takes the output in
pieces of up to 64 KiB. Design and figures: docs/decisions.md, "Session 17".

On unless ``SIGNALTTY_READER_THREADS=0`` is set in the daemon's environment. Session 17
measured no gain and left it off, but that A/B never had the thread on (the bench daemon's
environment dropped the variable); measured again in session 18, with the thread reading
first and polling only when nothing waits, it runs floods of plain text 1.5× and repainting
TUIs 1.2× as fast on this 2-core machine (docs/decisions.md, "Session 18").

``_reader`` is compiled from ``_reader.c`` by the wheel's build hook (``hatch_build.py``).
Without it, or with ``SIGNALTTY_PURE_PYTHON`` set, :func:`open_reader` always returns None.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # one thread reading one master into a ring buffer: its methods in _reader.pyi
    from signaltty.term._reader import Reader as BulkReader

__all__ = ["BUFFER_BYTES", "ENABLED", "MAX_THREADS", "available", "open_reader"]

# Bytes one thread holds before it stops reading (the program then waits on the PTY): what
# the pump already applies at once after a child's exit (panes.py, _EXIT_DRAIN_BYTES).
BUFFER_BYTES = 256 * 1024
# Threads at once in one process: two cores' worth of floods and some; further flooding
# panes are read on the loop.
MAX_THREADS = 4


#: Whether panes printing in bulk get a thread (not with ``SIGNALTTY_READER_THREADS=0``; see above).
ENABLED = os.environ.get("SIGNALTTY_READER_THREADS", "") != "0"

_Reader: Callable[[int, int], BulkReader] | None = None
if not os.environ.get("SIGNALTTY_PURE_PYTHON"):
    with contextlib.suppress(ImportError):
        from signaltty.term._reader import Reader

        _Reader = Reader

_open: weakref.WeakSet[BulkReader] = weakref.WeakSet()


def available() -> bool:
    """True when the native module was built (and ``SIGNALTTY_PURE_PYTHON`` is not set)."""
    return _Reader is not None


def open_reader(master_fd: int) -> BulkReader | None:
    """A running reader thread on ``master_fd`` (non-blocking), or None when threads are not
    :data:`ENABLED`, the module is missing or ``MAX_THREADS`` readers are open in this
    process. Raises OSError when the
    thread or its pipes cannot be made. The caller must ``close()`` it before closing the
    master: a closed descriptor's number can be reused by the next open."""
    if not ENABLED or _Reader is None or sum(1 for r in _open if not r.closed) >= MAX_THREADS:
        return None
    reader: BulkReader = _Reader(master_fd, BUFFER_BYTES)
    _open.add(reader)
    return reader
