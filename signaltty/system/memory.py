"""Give memory freed by closed panes back to the system (issue 12: "memory returned after
panes close").

CPython returns its small-object arenas to the C allocator once they are empty, but glibc's
``malloc`` keeps freed heap pages for reuse; the daemon's RSS then stays at its peak after
every pane has closed. ``malloc_trim(0)`` (glibc ≥ 2.8) releases the free pages at the top of
the heap and ``madvise``s free whole pages inside it. Other C libraries (musl, macOS) have no
such call: :func:`trim` is then a no-op that says so.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

_TRIM: Callable[[int], int] | None = None
_LOADED = False


def _load() -> Callable[[int], int] | None:
    global _TRIM, _LOADED
    if not _LOADED:
        _LOADED = True
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(None)  # the symbols already in this process
                fn = libc.malloc_trim
            except (OSError, AttributeError):  # not glibc
                fn = None
            if fn is not None:
                fn.argtypes = [ctypes.c_size_t]
                fn.restype = ctypes.c_int
                _TRIM = fn
    return _TRIM


def available() -> bool:
    """Whether this process's C library can return freed heap memory (glibc)."""
    return _load() is not None


def trim() -> bool:
    """Return free heap memory to the system now; True when some was released.

    A few milliseconds for a heap of tens of MB (it walks the free lists); call it after
    large frees, not on a hot path. No-op (False) without glibc.
    """
    fn = _load()
    return bool(fn(0)) if fn is not None else False
