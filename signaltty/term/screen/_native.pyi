# Types of the C module built from _native.c (see native.py).

from typing import Any

def simple_end(text: str, pos: int, osc_max: int, /) -> int: ...
def harmless_end(text: str, pos: int, /) -> int: ...
def strip(text: str, start: int, stop: int, /) -> str: ...
def scan_rows(
    text: str,
    pos: int,
    columns: int,
    lines: int,
    x: int,
    y: int,
    last: str,
    writes: list[tuple[int, int, int, int, int, str]],
    spans: list[tuple[int, int, int, int]],
    events: list[tuple[int, tuple[str, ...]]],
    ops: dict[str, tuple[int, int, int, str]],
    spans_max: int,
    /,
) -> tuple[int, int, int, str]: ...
def plan_live(
    writes: list[tuple[int, int, int, int, int, str]],
    spans: list[tuple[int, int, int, int]],
    lines: int,
    columns: int,
    plain: bytes | bytearray,
    stubby: bytes | bytearray,
    /,
) -> bytearray: ...
def loud(chunk: bytes, /) -> bool: ...
def has_stub(row: dict[int, Any], /) -> bool: ...
