"""Shared helpers for installer tests: temp homes, byte/mtime snapshots."""

from __future__ import annotations

import os
from pathlib import Path

REPORTER = "/opt/sig nal'tty/bin/signaltty"


def snap(path: Path) -> tuple[bytes, int, int]:
    """Bytes, mtime_ns and mode of a file (to prove it was not touched)."""
    st = os.stat(path)
    return path.read_bytes(), st.st_mtime_ns, st.st_mode


def no_temp_files(directory: Path) -> bool:
    return not [p for p in directory.iterdir() if ".signaltty-" in p.name]
