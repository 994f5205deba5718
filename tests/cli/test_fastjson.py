"""``signaltty.cli.fastjson`` parses and prints exactly as ``json`` does (it drives json's own
C accelerator; issue 12), on generated values, hostile documents and in a fresh interpreter
where ``json`` was never imported."""

from __future__ import annotations

import ast
import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signaltty.cli import fastjson
from tests.conftest import REPO

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()  # lone surrogates included
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=40,
)


def same(a: object, b: object) -> bool:
    """Equal, NaN included (NaN != NaN), compared through json's own output."""
    return json.dumps(a) == json.dumps(b)


def outcome(fn, arg):
    try:
        return "ok", fn(arg)
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=400, deadline=None)
@given(VALUES, st.sampled_from([None, 0, 2]), st.booleans())
def test_loads_agrees_with_json(value, indent, ascii_only):
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    for doc in (text, " \n\t" + text + "\r\n ", text.encode("utf-8", "surrogatepass")):
        assert same(fastjson.loads(doc), json.loads(doc))


@settings(max_examples=400, deadline=None)
@given(VALUES, st.booleans())
def test_dumps_agrees_with_json(value, ascii_only):
    assert fastjson.dumps(value, ensure_ascii=ascii_only) == json.dumps(
        value, separators=(",", ":"), ensure_ascii=ascii_only
    )


HOSTILE = [
    "",
    "   ",
    "{x",
    "[1,",
    '{"a":1} {"b":2}',
    '{"a":1}x',
    '"tab\there"',
    "\ufeff{}",
    "NaN",
    "-Infinity",
    "1e400",
    "9" * 5000,  # over int's digit limit: ValueError from both
    "[" * 100_000 + "]" * 100_000,
    '"\\ud800"',
    "[1,]",
    "01",
    "{'a': 1}",
]
HOSTILE_BYTES = [
    b"\xef\xbb\xbf{}",
    "[1]".encode("utf-16"),
    "[1]".encode("utf-32-le"),
    b"\xff\xfe\x00",
    b'"\xff"',
    b'{"k":"\xed\xa0\x80"}',  # an encoded surrogate: json decodes with surrogatepass
    b"\x00[1]",
]


@pytest.mark.parametrize(
    "doc", HOSTILE + HOSTILE_BYTES, ids=range(len(HOSTILE) + len(HOSTILE_BYTES))
)
def test_hostile_documents_fail_or_parse_as_json_does(doc):
    mine, theirs = outcome(fastjson.loads, doc), outcome(json.loads, doc)
    if mine[0] == "ok" and theirs[0] == "ok":
        assert same(mine[1], theirs[1])
    else:
        assert mine == theirs


def test_constants_parse_as_floats():
    assert math.isnan(fastjson.loads("NaN"))
    assert fastjson.loads("[-Infinity, Infinity]") == [-math.inf, math.inf]


def test_unserializable_and_circular_values_are_refused_as_json_does():
    loop: list[object] = []
    loop.append(loop)
    for bad in ({"x": object()}, loop, {1j: 1}):
        with pytest.raises((TypeError, ValueError)) as mine:
            fastjson.dumps(bad)
        with pytest.raises((TypeError, ValueError)) as theirs:
            json.dumps(bad, separators=(",", ":"))
        assert (type(mine.value), str(mine.value)) == (type(theirs.value), str(theirs.value))


def test_errors_in_a_fresh_interpreter_are_jsons():
    # Python 3.11's scanner reports a syntax error only once json.decoder is imported: the
    # hook reporter has not imported it, and must still say "invalid payload JSON"
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
        "from signaltty.cli import fastjson\n"
        "assert 'json' not in sys.modules\n"
        "out = []\n"
        "for doc in ('{x', b'[1,', '\"a\\x01\"', '', '[1] 2'):\n"
        "    try:\n"
        "        fastjson.loads(doc)\n"
        "        out.append(('ok', ''))\n"
        "    except Exception as exc:\n"
        "        out.append((type(exc).__name__, str(exc)))\n"
        "print(repr(out))\n"
    )
    r = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 0, r.stderr
    got = ast.literal_eval(r.stdout)
    want = [outcome(json.loads, d) for d in ("{x", b"[1,", '"a\x01"', "", "[1] 2")]
    assert got == [(kind, msg) for kind, msg in want]
    assert all(kind == "JSONDecodeError" for kind, _ in got)
