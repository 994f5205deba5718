"""JSON provider files: parse with checks, dump in the managed format (pure;
Spec: integrations.md §1.4).

A provider file belongs to the user; signaltty only adds its hooks, so whatever it does not
understand must come back out exactly as it went in (issue 10 item 9):

* **Numbers** are kept as the text they were written with (:class:`RawNumber`): ``1e400``
  is not turned into ``Infinity`` (which is not JSON), a 5000-digit integer is not refused
  by Python's int-string limit, ``1.0e2`` stays ``1.0e2`` and ``-0.0`` stays ``-0.0``.
  ``NaN``/``Infinity`` literals (not JSON, accepted by Python's reader) are kept too.
* **Refused** with the file untouched: a string or key holding a lone surrogate escape
  (``"\\ud800"``, not representable in the UTF-8 file we would write), nesting deeper than
  ``MAX_DEPTH``, and a key repeated in one object (the rewrite would keep only one value).
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from signaltty.installer import safefile
from signaltty.installer.errors import InstallError

# Far deeper than any real settings file (they nest < 10 levels); deeper input is refused
# before Python's recursion limit (~1000) could be reached by the reader or the writer.
MAX_DEPTH: Final = 256
_INT: Final = re.compile(r"-?(?:0|[1-9][0-9]*)")
# Python's int(str) limit: an integer this long is compared as text only.
_INT_DIGITS: Final = 4300


class RawNumber:
    """A JSON number (or ``NaN``/``Infinity`` literal) kept as its original text.

    Compares equal to another ``RawNumber`` with the same text, and to an ``int`` of the same
    value when the text is a plain integer (so a merge that sets ``"timeout": 5`` over an
    existing ``5`` is no change).
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RawNumber):
            return self.text == other.text
        if isinstance(other, int) and not isinstance(other, bool):
            plain = len(self.text) <= _INT_DIGITS and _INT.fullmatch(self.text) is not None
            return plain and int(self.text) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"RawNumber({self.text!r})"

    def __deepcopy__(self, memo: dict[int, Any]) -> RawNumber:
        return self  # immutable


class _Refused(ValueError):
    """Raised from inside the JSON reader; becomes an ``InstallError`` naming the file."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(
                f"the key {key[:40]!r} appears twice in one object; refusing to rewrite it"
            )
        out[key] = value
    return out


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in text)


def _check_tree(root: Any) -> None:
    """Depth and lone surrogates, walked without recursion.

    Raises:
        _Refused: nesting deeper than ``MAX_DEPTH``, or a lone surrogate in a key or string.
    """
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if _has_surrogate(value):
                raise _Refused(
                    "contains a lone surrogate escape (e.g. \\ud800); refusing to rewrite it"
                )
        elif isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels; refusing to rewrite it")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str) and _has_surrogate(key):
                    raise _Refused(
                        "contains a lone surrogate escape (e.g. \\ud800); refusing to rewrite it"
                    )
                stack.append((item, depth + 1))


def read_object(path: Path) -> tuple[Path, dict[str, Any]]:
    """``(the file the path resolves to, its parsed object)`` for ``status``; missing → ``{}``.

    Raises:
        InstallError: not a regular file, unreadable, or see :func:`load_object`.
    """
    file = safefile.resolve(path)
    text, _ = safefile.read_text(file)
    return file, load_object(text, file)


def load_object(text: str | None, file: Path) -> dict[str, Any]:
    """Parse a provider JSON file; missing or blank → ``{}``. Numbers stay :class:`RawNumber`.

    Raises:
        InstallError: invalid JSON, a root that is not an object, a repeated key, a lone
            surrogate escape, or nesting deeper than ``MAX_DEPTH`` (the message names the file).
    """
    if text is None or not text.strip():
        return {}
    try:
        root = json.loads(
            text,
            parse_float=RawNumber,
            parse_int=RawNumber,
            parse_constant=RawNumber,
            object_pairs_hook=_object,
        )
        _check_tree(root)
    except _Refused as exc:
        raise InstallError(f"{file}: {exc}") from None
    except RecursionError:
        raise InstallError(f"{file}: nested too deeply; refusing to rewrite it") from None
    except ValueError as exc:
        raise InstallError(f"{file}: invalid JSON: {exc}") from None
    if not isinstance(root, dict):
        raise InstallError(f"{file}: the JSON root is not an object")
    return root


def _encode(value: Any, indent: str, out: list[str]) -> None:
    if isinstance(value, RawNumber):
        out.append(value.text)
    elif isinstance(value, str) or value is None or isinstance(value, (bool, int)):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, float):
        out.append(json.dumps(value, allow_nan=False))  # ValueError for inf/nan: never written
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = indent + "  "
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append(
                ("," if i else "") + "\n" + inner + json.dumps(key, ensure_ascii=False) + ": "
            )
            _encode(item, inner, out)
        out.append("\n" + indent + "}")
    elif isinstance(value, list):
        if not value:
            out.append("[]")
            return
        inner = indent + "  "
        out.append("[")
        for i, item in enumerate(value):
            out.append(("," if i else "") + "\n" + inner)
            _encode(item, inner, out)
        out.append("\n" + indent + "]")
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")


def dumps(root: dict[str, Any]) -> str:
    """2-space indent, key order preserved, non-ASCII kept, trailing newline.

    The layout is ``json.dumps(root, indent=2, ensure_ascii=False)``'s; :class:`RawNumber`
    values are written back verbatim.
    """
    out: list[str] = []
    _encode(root, "", out)
    return "".join(out) + "\n"


def edit_json(
    path: str | os.PathLike[str],
    mutate: Callable[[dict[str, Any], Path], None],
    *,
    lock_timeout_s: float = safefile.LOCK_TIMEOUT_S,
) -> tuple[Path, bool]:
    """Apply ``mutate(root, file)`` to a JSON object file; unchanged objects are not written.

    Raises:
        InstallError: from :func:`safefile.edit`, :func:`load_object` or ``mutate``.
    """

    def transform(text: str | None) -> str | None:
        file = safefile.resolve(path)
        root = load_object(text, file)
        new = copy.deepcopy(root)
        mutate(new, file)
        if text is not None and new == root:
            return None
        if text is None and not new:
            return None
        return dumps(new)

    return safefile.edit(path, transform, lock_timeout_s=lock_timeout_s)
