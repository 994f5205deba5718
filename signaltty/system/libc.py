"""The C library through ctypes, loaded once (Linux: ``prctl`` for hardening and the
subreaper flag).

``ctypes.util.find_library`` runs ``ldconfig -p`` in a child process at every call; the
interpreter already links the C library, so ``CDLL(None)`` reaches its symbols (glibc and
musl both export ``prctl``). ``server.status`` reads the dumpable flag at every call: the
lookup was 12 % of the daemon's CPU under a status client polling every 20 ms (issue 12).
"""

from __future__ import annotations

import ctypes
import functools


@functools.cache
def libc() -> ctypes.CDLL | None:
    """The process's C library with ``use_errno``; None when it cannot be loaded."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def prctl(option: int, arg: int = 0) -> int | None:
    """``prctl(option, arg, 0, 0, 0)``'s result; None when libc or ``prctl`` is missing
    (the caller checks the platform)."""
    lib = libc()
    if lib is None:
        return None
    try:
        result: int = lib.prctl(option, arg, 0, 0, 0)
    except AttributeError:
        return None
    return result
