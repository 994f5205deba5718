"""Issue 10 item 9: what the installer does not understand comes back out exactly as it went in.

Numbers a float cannot hold are written back as they were (never ``Infinity``); input that
cannot be written back faithfully (a lone ``\\ud800`` escape, 10⁵-deep nesting, a repeated
key) is refused with a clear message and the file byte-identical. Real files in temp homes.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signaltty.installer import api, jsonfile
from signaltty.installer.errors import InstallError
from tests.installer.helpers import REPORTER, no_temp_files, snap

HOOK_FILE = {"claude": ".claude/settings.json", "codex": ".codex/hooks.json", "cursor": ".cursor/hooks.json"}
HUGE_INT = "9" * 5000
NUMBERS = {
    "overflow": "1e400",
    "negative overflow": "-1.5E+400",
    "underflow": "4e-400",
    "huge int": HUGE_INT,
    "negative zero": "-0.0",
    "exponent form": "1.0e2",
    "trailing zero": "0.10",
    "long mantissa": "3.14159265358979323846264338327950288",
    "int": "42",
    "negative int": "-7",
    "nan literal": "NaN",
    "infinity literal": "-Infinity",
}


def user_file(home: Path, agent: str, text: str) -> Path:
    f = home / HOOK_FILE[agent]
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    return f


@pytest.mark.parametrize("agent", sorted(HOOK_FILE))
def test_numbers_are_written_back_as_they_were(tmp_path: Path, agent: str) -> None:
    body = ",\n".join(f'  "{k}": {v}' for k, v in NUMBERS.items())
    f = user_file(tmp_path, agent, "{\n" + body + ',\n  "nested": {"list": [1e400, -0.0, 2.50]}\n}\n')
    assert api.install(agent, REPORTER, home=tmp_path, env={}).changed
    text = f.read_text()
    assert "Infinity," not in text.replace("-Infinity,", "")  # only the user's own literal
    for key, number in NUMBERS.items():
        assert f'"{key}": {number},' in text, key
    assert '"list": [\n      1e400,\n      -0.0,\n      2.50\n    ]' in text
    # our hooks are there, and a second install changes nothing (bytes and mtime)
    assert api.status(agent, home=tmp_path, env={})["installed"] is True
    before = snap(f)
    assert not api.install(agent, REPORTER, home=tmp_path, env={}).changed
    assert snap(f) == before
    # uninstall gives back the user's numbers too
    assert api.uninstall(agent, home=tmp_path, env={}).changed
    for key, number in NUMBERS.items():
        assert f'"{key}": {number},' in f.read_text(), key


def test_existing_timeout_written_the_same_is_no_change(tmp_path: Path) -> None:
    api.install("claude", REPORTER, home=tmp_path, env={})
    f = tmp_path / HOOK_FILE["claude"]
    # the same numbers, spelled by another tool with a different layout
    f.write_text(json.dumps(json.loads(f.read_text()), indent=4))
    before = snap(f)
    assert not api.install("claude", REPORTER, home=tmp_path, env={}).changed
    assert snap(f) == before


BAD = {
    "lone surrogate value": '{"a": "x\\ud800y", "hooks": {}}\n',
    "lone surrogate key": '{"\\udfff": 1}\n',
    "low surrogate first": '{"a": "\\udc00\\ud800"}\n',
    "deep arrays": '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
    "deep objects": '{"a": ' + '{"b": ' * 100_000 + "1" + "}" * 100_000 + "}\n",
    "deeper than the limit": '{"a": ' + "[" * 300 + "]" * 300 + "}\n",
    "repeated key": '{"hooks": {}, "model": "a", "model": "b"}\n',
}
REASON = {
    "lone surrogate value": "lone surrogate",
    "lone surrogate key": "lone surrogate",
    "low surrogate first": "lone surrogate",
    "deep arrays": "nested",
    "deep objects": "nested",
    "deeper than the limit": "nested deeper than 256",
    "repeated key": "appears twice",
}


@pytest.mark.parametrize("agent", sorted(HOOK_FILE))
@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("action", ["install", "uninstall", "status"])
def test_unfaithful_input_refused_file_byte_identical(tmp_path: Path, agent: str, case: str, action: str) -> None:
    f = user_file(tmp_path, agent, BAD[case])
    before = snap(f)
    if action == "status":
        status = api.status(agent, home=tmp_path, env={})
        assert status["installed"] is False
        assert REASON[case] in status["error"]
    else:
        if action == "install":
            act = functools.partial(api.install, agent, REPORTER, home=tmp_path, env={})
        else:
            act = functools.partial(api.uninstall, agent, home=tmp_path, env={})
        with pytest.raises(InstallError) as exc:
            act()
        assert str(f) in str(exc.value), exc.value
        assert REASON[case] in str(exc.value), exc.value
        assert len(str(exc.value)) < 300 + len(str(f))  # one clear line, not the document
    assert snap(f) == before
    assert no_temp_files(f.parent)


def test_a_valid_surrogate_pair_is_fine(tmp_path: Path) -> None:
    f = user_file(tmp_path, "claude", '{"emoji": "\\ud83d\\ude00"}\n')
    assert api.install("claude", REPORTER, home=tmp_path, env={}).changed
    assert json.loads(f.read_text())["emoji"] == "\U0001f600"


_number = st.one_of(
    st.integers().map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.from_regex(r"-?(0|[1-9][0-9]{0,400})(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,4})?", fullmatch=True),
)
_leaf = st.none() | st.booleans() | st.text(max_size=8) | _number.map(lambda t: jsonfile.RawNumber(t))
_tree = st.recursive(
    _leaf, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4), max_leaves=25
)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _tree, max_size=5))
def test_dump_then_load_is_the_identity(doc: dict) -> None:
    text = jsonfile.dumps(doc)
    assert jsonfile.load_object(text, Path("x")) == doc
    assert jsonfile.dumps(jsonfile.load_object(text, Path("x"))) == text
