"""``json.loads``/``json.dumps`` for the hook fast path, without ``import json``.

``json`` imports ``re`` (and with it ``enum``, ``functools``, ``collections``…): about 5 ms,
most of what a bare ``python`` takes to start, paid by every agent hook (issue 12 goal: a
hook costs ≤ 2× a bare interpreter). ``json`` does its work in the C accelerator ``_json``;
this module drives that accelerator with ``json``'s own defaults, so a value parses and
prints exactly as ``json`` would. Anything off the plain path (a byte order mark, UTF-16/32
bytes, a syntax error, a missing ``_json``) is handed to ``json`` itself, which then gives the
result or raises its usual ``ValueError`` (``json.JSONDecodeError``).

Spec: README "Dependency rules"; tests/cli/test_fastjson.py compares both on generated data.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WS = " \t\n\r"  # json's insignificant whitespace (RFC 8259 §2)
# Bytes that start with a byte order mark (UTF-8, UTF-16/32) or hold a NUL in their first
# four bytes (UTF-16/32 without one) go to json, which detects their encoding; json reads
# all other bytes as UTF-8, as we do.
_OTHER_ENCODINGS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


class _Defaults:
    """The scanner settings of ``json.JSONDecoder()`` (read once by ``make_scanner``)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": float("-inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__


def _unserializable(value: object) -> object:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


_scan: Callable[[str, int], tuple[Any, int]] | None
try:
    import _json

    # typeshed types the context as a scanner; the C code reads only the attributes above
    _scan = _json.make_scanner(_Defaults())  # type: ignore[arg-type]
    _quote_ascii = _json.encode_basestring_ascii
    _quote = _json.encode_basestring
    _make_encoder = _json.make_encoder
except (ImportError, AttributeError, TypeError):  # another Python: json does it all
    _scan = None


def _slow_loads(text: str | bytes) -> Any:
    import json

    return json.loads(text)


def loads(text: str | bytes) -> Any:
    """Parse one JSON document like ``json.loads``.

    Args:
        text: a str, or bytes (UTF-8; other encodings as ``json`` detects them).

    Returns:
        The value (dict, list, str, int, float, bool or None).

    Raises:
        ValueError: not one JSON document (``json.JSONDecodeError``, from ``json``).
        RecursionError: nested too deeply.
    """
    if _scan is None:
        return _slow_loads(text)
    if isinstance(text, bytes):
        if text.startswith(_OTHER_ENCODINGS) or b"\0" in text[:4]:
            return _slow_loads(text)
        string = text.decode("utf-8", "surrogatepass")
    elif text.startswith("\ufeff"):
        return _slow_loads(text)
    else:
        string = text
    start = len(string) - len(string.lstrip(_WS))
    try:
        value, end = _scan(string, start)
    except (StopIteration, ValueError, SystemError):
        # not JSON: json says why. (Python 3.11's scanner reports a syntax error only once
        # json.decoder is imported; before that it raises SystemError.)
        return _slow_loads(text)
    if end != len(string) and string[end:].strip(_WS):
        return _slow_loads(text)
    return value


def dumps(value: Any, *, ensure_ascii: bool = True) -> str:
    """``json.dumps(value, separators=(",", ":"), ensure_ascii=ensure_ascii)``.

    Raises:
        TypeError: a value JSON cannot hold.
        ValueError: a circular reference.
    """
    if _scan is None:
        import json

        return json.dumps(value, separators=(",", ":"), ensure_ascii=ensure_ascii)
    encoder = _make_encoder(
        {}, _unserializable, _quote_ascii if ensure_ascii else _quote, None, ":", ",",
        False, False, True,
    )  # fmt: skip
    return "".join(encoder(value, 0))
