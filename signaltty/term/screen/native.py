"""The native (C) forms of the screen model's hottest loops, when they were built.

Layer rule: standard library only; reads one environment variable, at import.
Design and figures: docs/decisions.md, "Session 14" (issue 12).

``_native`` is compiled from ``_native.c`` by the wheel's build hook (``hatch_build.py``) when
a C compiler and the Python headers are present. Without it, or with ``SIGNALTTY_PURE_PYTHON``
set to a non-empty value, every name here is ``None`` and the callers use their pure-Python
forms, which compute the same results (``tests/term/test_native.py`` compares them).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

__all__ = [
    "SIDE_MAX",
    "harmless_end",
    "has_stub",
    "loud",
    "plan_live",
    "scan_rows",
    "simple_end",
    "strip",
]

# The largest screen side ``scan_rows`` and ``plan_live`` take (``SIDE_MAX`` in _native.c;
# the daemon's own limit is 500 x 200): a larger screen uses the Python forms.
SIDE_MAX = 10_000

harmless_end: Callable[[str, int], int] | None = None
simple_end: Callable[[str, int, int], int] | None = None
strip: Callable[[str, int, int], str] | None = None
scan_rows: Callable[..., tuple[int, int, int, str]] | None = None
plan_live: Callable[..., bytearray] | None = None
# term/osc.py's quiet-read check and repaint.py's wide-character check (issue 12)
loud: Callable[[bytes], bool] | None = None
has_stub: Callable[[dict[int, Any]], bool] | None = None

if not os.environ.get("SIGNALTTY_PURE_PYTHON"):
    with contextlib.suppress(ImportError):
        from signaltty.term.screen._native import (
            harmless_end,
            has_stub,
            loud,
            plan_live,
            scan_rows,
            simple_end,
            strip,
        )
