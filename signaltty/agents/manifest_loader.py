"""Loading one manifest file: safe reading, TOML parsing and the ``ManifestError`` it fails with.

A manifest is read with a size cap and without ever blocking (FIFOs and other non-regular
files are refused), parsed with ``tomllib`` and validated by ``manifest_schema.build_manifest``.
Any problem raises ``ManifestError(file, error)``; the catalog (``catalog.py``) turns it into
one ``{file, error}`` failure and keeps loading the others. Spec: agents.md §4.1, §5.1.
"""

from __future__ import annotations

import errno
import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from signaltty.agents.manifest_schema import Manifest, build_manifest

# Far above any real manifest (the largest bundled rule set is a few KiB); the cap keeps a
# stray multi-megabyte file from costing memory or parse time in the daemon.
MAX_MANIFEST_BYTES: Final = 1 << 20


class ManifestError(Exception):
    """A manifest file that cannot be used; it is skipped whole (agents.md §4.1).

    Attributes:
        file: the file's path as a string.
        error: one-line reason naming the table, e.g. ``[[screen]] 'busy': unknown region 'bottm'``.
    """

    def __init__(self, file: str, error: str) -> None:
        super().__init__(f"{file}: {error}")
        self.file = file
        self.error = error


def read_manifest_bytes(path: Path, limit: int = MAX_MANIFEST_BYTES) -> bytes:
    """Read a manifest file without blocking and without loading more than ``limit`` bytes.

    ``O_NONBLOCK`` makes opening a FIFO return at once (instead of waiting for a writer), and
    ``fstat`` on the opened descriptor then refuses anything that is not a regular file, with
    no race between the check and the read. A symlink loop fails in ``open`` with ``ELOOP``.

    Args:
        path: the file.
        limit: maximum size in bytes (default 1 MiB).

    Returns:
        The whole content.

    Raises:
        ManifestError: not a regular file, larger than ``limit`` ("file too large"), or any
            ``OSError`` (the message carries its ``strerror``).
    """
    file = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ManifestError(file, "cannot read: symlink loop") from None
        raise ManifestError(file, f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ManifestError(file, "not a regular file")
        if st.st_size > limit:
            raise ManifestError(file, f"file too large ({st.st_size} bytes, limit {limit})")
        chunks: list[bytes] = []
        total = 0
        while True:
            # The file may grow between fstat and read: never take more than limit + 1 bytes.
            chunk = os.read(fd, min(65536, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise ManifestError(file, f"file too large (more than {limit} bytes)")
        return b"".join(chunks)
    except OSError as exc:
        raise ManifestError(file, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def parse_toml(file: str, data: bytes) -> dict[str, Any]:
    """Decode UTF-8 and parse TOML.

    Raises:
        ManifestError: invalid UTF-8, TOML syntax error, or nesting too deep for the parser.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(file, f"not valid UTF-8 (byte {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(file, f"TOML syntax: {exc}") from None
    except RecursionError:
        raise ManifestError(file, "TOML nested too deeply") from None


def validate_manifest(data: Mapping[str, Any], *, file: str, source: str) -> Manifest:
    """Validate a parsed TOML document (``manifest_schema.build_manifest``).

    Args:
        data: ``tomllib`` output.
        file: the file's path (used in errors and rule ``file`` fields: its basename).
        source: ``bundled`` or ``user``.

    Returns:
        The validated ``Manifest``.

    Raises:
        ManifestError: the first schema problem, naming its table.

    Spec: agents.md §4.1, §5.1.
    """
    try:
        return build_manifest(data, file=file, source=source)
    except ValueError as exc:
        raise ManifestError(file, str(exc)) from None
    except RecursionError:
        raise ManifestError(file, "document nested too deeply") from None


def load_manifest(path: Path, source: str) -> Manifest:
    """Read, parse and validate one manifest file (agents.md §4.1).

    Raises:
        ManifestError: any problem; never anything else.
    """
    file = str(path)
    data = parse_toml(file, read_manifest_bytes(path))
    return validate_manifest(data, file=file, source=source)
