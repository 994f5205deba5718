"""Manifest schema (agents.md §4.1, §5.1): every rule, and every bad input of issue #4 — each a
clear error naming its table, never fatal, the other files still load. Real files in temp dirs."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from signaltty.agents import launch
from signaltty.agents.catalog import BUNDLED_DIR, load_catalog
from signaltty.agents.manifest import (
    MAX_ENV_NAME,
    MAX_ENV_VARS,
    MAX_LIFECYCLE_EVENTS,
    MAX_LIST_ITEMS,
    MAX_MANIFEST_BYTES,
    MAX_PATTERNS_PER_FILE,
    MAX_SCREEN_RULES,
    MAX_STRING,
    RESERVED_ENV,
    RESERVED_ENV_PREFIX,
    LifecycleOverlay,
    ManifestError,
    load_manifest,
    read_manifest_bytes,
)
from signaltty.core.screen_rules import (
    MAX_PATTERN_CHARS,
    MAX_PATTERN_NESTING,
    MAX_PATTERN_WEIGHT,
    PatternError,
    ScreenView,
    compile_pattern,
    evaluate,
)
from signaltty.core.states import Attention, Lifecycle

TERN = r'''
[agent]
id = "tern"
kind = "generic"
display_name = "Tern"
binaries = ["tern", "tern-bin-*"]
order = 60
homepage = "https://tern.example.org/docs"
install_url = "https://tern.example.org/install"

[launch]
detect = ["tern", "tern-cli"]
requires = ["node"]
args = ["chat"]
prompt = { mode = "flag", flag = "--ask" }
bypass_args = ["--auto-approve"]
bypass_env = { TERN_APPROVAL = "auto" }
continue_args = ["--continue"]

[session]
key = "conversation.id"
resume = ["tern", "chat", "--resume", "{id}"]

[lifecycle.TurnStarted]
lifecycle = "working"
attention = "none"

[lifecycle.NeedsApproval]
lifecycle = "blocked"
attention = "permission_required"
message = "approval requested"

[lifecycle.TurnFinished]
lifecycle = "done"
attention = "unread"
message = "turn complete"

[title_status]
working = ['^[\u2800-\u28ff] ']
blocked = ['Action Required']

[[screen]]
id = "approval_dialog"
state = "blocked"
region = "after_last_rule"
all = ['Allow this action\?', '(?i)enter to confirm']
priority = 300

[[screen]]
id = "busy_footer"
state = "working"
region = "bottom"
lines = 6
regex = ['esc to interrupt', '(?m)^[\u2800-\u28ff] \w+ing']
not = ['Allow this action\?']
priority = 100

[[screen]]
id = "progress_busy"
state = "working"
region = "osc_progress"
regex = ['^4;[134]']
priority = 50

[[screen]]
id = "prompt_ready"
state = "idle"
region = "prompt_box"
regex = ['(?m)^\s*› ']
priority = 40

[[screen]]
id = "idle_fallback"
state = "idle"
regex = ['']
priority = -1000
'''


def write(d: Path, name: str, text: str) -> Path:
    p = d / name
    p.write_text(text, encoding="utf-8")
    return p


def err(tmp_path: Path, text: str, name: str = "x.toml") -> str:
    with pytest.raises(ManifestError) as ei:
        load_manifest(write(tmp_path, name, text), "user")
    return ei.value.error


AGENT = '[agent]\nkind = "generic"\n'


# --------------------------------------------------------------------------- the example


def test_tern_example_loads_completely(tmp_path: Path) -> None:
    m = load_manifest(write(tmp_path, "tern.toml", TERN), "user")
    assert (m.id, m.kind, m.source) == ("tern", "generic", "user")
    assert m.raw["agent"]["binaries"] == ["tern", "tern-bin-*"]
    assert m.raw["launch"]["prompt"].flag == "--ask"
    assert m.raw["session"]["resume"] == ["tern", "chat", "--resume", "{id}"]
    assert m.lifecycle["TurnStarted"] == LifecycleOverlay(Lifecycle.WORKING, Attention.NONE, None)
    assert m.lifecycle["NeedsApproval"].message == "approval requested"
    assert [r.id for r in m.title_rules] == ["title_working", "title_blocked"]
    assert all(r.region == "title" and r.priority == 1200 for r in m.title_rules)
    assert [r.id for r in m.screen_rules] == [
        "approval_dialog", "busy_footer", "progress_busy", "prompt_ready", "idle_fallback",
    ]
    busy = m.screen_rules[1]
    assert (busy.lines, busy.region, len(busy.regex), len(busy.not_)) == (6, "bottom", 2, 1)
    assert all(r.file == "tern.toml" and r.source == "user" for r in m.screen_rules)
    # compiled rules really work through the shared evaluator
    rules = m.title_rules + m.screen_rules
    ev = evaluate(rules, ScreenView(rows=["⠙ Thinking", "esc to interrupt"], title="x"))
    assert rules[ev.winner].id == "busy_footer"
    ev = evaluate(rules, ScreenView(rows=["hello"], title="⠋ tern"))
    assert rules[ev.winner].id == "title_working"
    ev = evaluate(rules, ScreenView(rows=["hello"]))
    assert rules[ev.winner].id == "idle_fallback"


def test_minimal_manifest_defaults(tmp_path: Path) -> None:
    m = load_manifest(write(tmp_path, "my-tool.toml", AGENT), "user")
    assert m.id == "my-tool"  # file stem
    assert m.raw == {"agent": {"kind": "generic"}}
    assert m.lifecycle == {}
    assert m.title_rules is None
    assert m.screen_rules is None
    assert not m.has_hook_content
    assert not m.has_rules


def test_schema_key(tmp_path: Path) -> None:
    assert load_manifest(write(tmp_path, "a.toml", "schema = 1\n" + AGENT), "user").id == "a"
    assert "schema" in err(tmp_path, "schema = 2\n" + AGENT)
    assert "schema" in err(tmp_path, 'schema = "1"\n' + AGENT)


# --------------------------------------------------------------------------- [agent]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('id = "Tern"', "[agent] id: 'Tern' must match"),
        ('id = "-tern"', "[agent] id:"),
        ('id = "' + "a" * 41 + '"', "[agent] id:"),
        ('id = "te_rn"', "[agent] id:"),
        ("id = 5", "[agent] id:"),
    ],
)
def test_bad_ids(tmp_path: Path, body: str, needle: str) -> None:
    assert needle in err(tmp_path, f'[agent]\n{body}\nkind = "generic"\n')


def test_id_limits_and_stem(tmp_path: Path) -> None:
    ok = load_manifest(write(tmp_path, "x.toml", f'[agent]\nid = "{"a" * 40}"\nkind = "pi"\n'), "user")
    assert ok.id == "a" * 40
    assert "[agent] id: file name 'Bad_Name'" in err(tmp_path, AGENT, name="Bad_Name.toml")


def test_kind_taxonomy(tmp_path: Path) -> None:
    for kind in ("claude", "codex", "opencode", "cursor", "pi", "generic"):
        assert load_manifest(write(tmp_path, "k.toml", f'[agent]\nkind = "{kind}"\n'), "bundled").kind == kind
    assert err(tmp_path, '[agent]\nkind = "none"\n').startswith("[agent] kind: unknown kind 'none'")
    assert "unknown kind 'gpt'" in err(tmp_path, '[agent]\nkind = "gpt"\n')
    assert "[agent] kind:" in err(tmp_path, '[agent]\nid = "x"\n')  # required


def test_agent_table_required(tmp_path: Path) -> None:
    assert err(tmp_path, "[launch]\nargs = []\n") == "[agent]: required table is missing"
    assert err(tmp_path, 'agent = "x"\n') == "[agent]: must be a table"


def test_display_name(tmp_path: Path) -> None:
    m = load_manifest(write(tmp_path, "d.toml", AGENT + f'display_name = "{"D" * 60}"\n'), "user")
    assert m.raw["agent"]["display_name"] == "D" * 60
    assert "[agent] display_name:" in err(tmp_path, AGENT + f'display_name = "{"D" * 61}"\n')


@pytest.mark.parametrize(
    ("binaries", "needle"),
    [
        ('["a", ""]', "must not be empty"),
        ('["/usr/bin/a"]', "bare name"),
        ('["a*b"]', "'*' is allowed only at the end"),
        ('["*"]', "'*' is allowed only at the end"),
        ('"tern"', "expected an array of strings, got a string"),
        ("[1]", "binaries.0"),
    ],
)
def test_bad_binaries(tmp_path: Path, binaries: str, needle: str) -> None:
    e = err(tmp_path, AGENT + f"binaries = {binaries}\n")
    assert e.startswith("[agent] binaries")
    assert needle in e


def test_order_and_urls(tmp_path: Path) -> None:
    m = load_manifest(write(tmp_path, "o.toml", AGENT + 'order = 5\nhomepage = "https://a.example/x"\n'), "user")
    assert m.raw["agent"]["order"] == 5
    assert "[agent] order:" in err(tmp_path, AGENT + 'order = "5"\n')
    assert "[agent] order:" in err(tmp_path, AGENT + "order = 1.5\n")
    assert "[agent] homepage: 'http://a.example' is not an https:// URL" in err(
        tmp_path, AGENT + 'homepage = "http://a.example"\n'
    )
    assert "[agent] install_url:" in err(tmp_path, AGENT + 'install_url = "https://"\n')
    assert "[agent] install_url:" in err(tmp_path, AGENT + 'install_url = "file:///etc/passwd"\n')


def test_unknown_keys_ignored(tmp_path: Path) -> None:
    text = 'color = "red"\n[agent]\nkind = "generic"\nfavourite = 3\n[launch]\nshell = "x"\n[[screen]]\nid = "a"\nstate = "idle"\nregex = [""]\nnote = "n"\n'
    m = load_manifest(write(tmp_path, "u.toml", text), "user")
    assert "favourite" not in m.raw["agent"]
    assert m.raw["launch"] == {}
    assert len(m.screen_rules) == 1


# --------------------------------------------------------------------------- [launch]


def test_launch_fields(tmp_path: Path) -> None:
    m = load_manifest(write(tmp_path, "tern.toml", TERN), "user")
    launch = m.raw["launch"]
    assert launch["detect"] == ["tern", "tern-cli"]
    assert launch["requires"] == ["node"]
    assert launch["bypass_env"] == {"TERN_APPROVAL": "auto"}
    assert launch["continue_args"] == ["--continue"]


@pytest.mark.parametrize(
    ("launch", "needle"),
    [
        ('command = "/usr/bin/tern"', "[launch] command: '/usr/bin/tern' must be a bare name"),
        ('args = "chat --tui"', "[launch] args: expected an array of strings, got a string"),
        ('bypass_args = "--yolo"', "[launch] bypass_args: expected an array"),
        ('continue_args = "--continue"', "[launch] continue_args: expected an array"),
        ('detect = "tern"', "[launch] detect: expected an array"),
        ('requires = ["a/b"]', "[launch] requires: 'a/b' must be a bare name"),
        ('bypass_env = { A = 1 }', "[launch] bypass_env.A:"),
        ('bypass_env = "A=1"', "[launch] bypass_env:"),
        ('prompt = { mode = "flag" }', "[launch] prompt: mode 'flag' needs a 'flag'"),
        ('prompt = { mode = "stdin" }', "[launch] prompt.mode:"),
        ('prompt = { mode = "after-start", delay_ms = 60001 }', "[launch] prompt.delay_ms:"),
        ('prompt = { mode = "after-start", delay_ms = -1 }', "[launch] prompt.delay_ms:"),
        ('prompt = "argv"', "[launch] prompt:"),
    ],
)
def test_bad_launch(tmp_path: Path, launch: str, needle: str) -> None:
    assert needle in err(tmp_path, AGENT + "[launch]\n" + launch + "\n")


def test_prompt_modes(tmp_path: Path) -> None:
    for prompt, expect in [
        ('{ mode = "argv", separator = "--" }', ("argv", "--", None, 3000)),
        ('{ mode = "after-start" }', ("after-start", None, None, 3000)),
        ('{ mode = "after-start", delay_ms = 0 }', ("after-start", None, None, 0)),
        ('{ mode = "after-start", delay_ms = 60000 }', ("after-start", None, None, 60000)),
        ('{ mode = "flag", flag = "-i" }', ("flag", None, "-i", 3000)),
    ]:
        p = load_manifest(write(tmp_path, "p.toml", AGENT + f"[launch]\nprompt = {prompt}\n"), "user")
        pr = p.raw["launch"]["prompt"]
        assert (pr.mode, pr.separator, pr.flag, pr.delay_ms) == expect


# --------------------------------------------------------------------------- [session]


def test_session_rules(tmp_path: Path) -> None:
    ok = AGENT + '[session]\nkey = "a.b"\nresume = ["t", "--session={session_id}"]\ncreate = ["t", "--new", "{id}"]\n'
    ok += '[session.discover]\nroot = "~/.t"\nformat = "jsonl"\nid = "sid"\ncwd = "cwd"\n'
    m = load_manifest(write(tmp_path, "s.toml", ok), "user")
    assert m.raw["session"]["key"] == "a.b"
    assert m.has_hook_content
    assert m.raw["session"]["discover"].format == "jsonl"
    assert "[session] resume: resume must contain {id}" in err(tmp_path, AGENT + '[session]\nresume = ["t", "--last"]\n')
    assert "[session] resume: expected an array" in err(tmp_path, AGENT + '[session]\nresume = "t --resume {id}"\n')
    assert "[session] key:" in err(tmp_path, AGENT + '[session]\nkey = "a..b"\n')
    assert "[session] create: expected an array" in err(tmp_path, AGENT + '[session]\ncreate = "t"\n')
    assert "[session] discover.format:" in err(
        tmp_path, AGENT + '[session.discover]\nroot = "r"\nformat = "xml"\nid = "i"\n'
    )
    assert "[session] discover.root:" in err(tmp_path, AGENT + '[session.discover]\nformat = "json"\nid = "i"\n')


# --------------------------------------------------------------------------- [lifecycle.*]


def test_lifecycle_tables(tmp_path: Path) -> None:
    text = AGENT + (
        '[lifecycle.A]\nlifecycle = "keep"\nattention = "none"\n'
        '[lifecycle.B]\nlifecycle = "failed"\nattention = "keep"\nmessage = "boom"\n'
        '[lifecycle."session.idle"]\nlifecycle = "idle"\n'
    )
    m = load_manifest(write(tmp_path, "l.toml", text), "user")
    assert m.lifecycle["A"] == LifecycleOverlay(None, Attention.NONE, None)
    assert m.lifecycle["B"] == LifecycleOverlay(Lifecycle.FAILED, None, "boom")
    assert m.lifecycle["session.idle"].lifecycle == Lifecycle.IDLE
    assert "[lifecycle.A] lifecycle: unknown lifecycle 'busy'" in err(tmp_path, AGENT + '[lifecycle.A]\nlifecycle = "busy"\n')
    assert "[lifecycle.A] lifecycle:" in err(tmp_path, AGENT + '[lifecycle.A]\nlifecycle = "exited"\n')
    assert "[lifecycle.A] attention: unknown attention 'loud'" in err(tmp_path, AGENT + '[lifecycle.A]\nattention = "loud"\n')
    assert "[lifecycle.A] message:" in err(tmp_path, AGENT + f'[lifecycle.A]\nmessage = "{"m" * 301}"\n')
    assert load_manifest(write(tmp_path, "m.toml", AGENT + f'[lifecycle.A]\nmessage = "{"m" * 300}"\n'), "user")
    assert "[lifecycle]:" in err(tmp_path, 'lifecycle = 3\n' + AGENT)
    assert "[lifecycle.A]: must be a table" in err(tmp_path, AGENT + "[lifecycle]\nA = 1\n")


# --------------------------------------------------------------------------- [title_status]


def test_title_status(tmp_path: Path) -> None:
    m = load_manifest(
        write(tmp_path, "t.toml", AGENT + "[title_status]\nattention = ['Action Required']\nidle = ['^✳ ']\n"), "user"
    )
    assert [(r.id, r.state, r.region, r.priority) for r in m.title_rules] == [
        ("title_blocked", "blocked", "title", 1200),
        ("title_idle", "idle", "title", 1200),
    ]
    empty = load_manifest(write(tmp_path, "e.toml", AGENT + "[title_status]\n"), "user")
    assert empty.title_rules == ()  # present (replaces bundled) but no rules
    assert "[title_status] working: expected an array" in err(tmp_path, AGENT + "[title_status]\nworking = 'x'\n")
    assert "[title_status] working: bad pattern '('" in err(tmp_path, AGENT + "[title_status]\nworking = ['(']\n")
    assert "[title_status] attention: bad pattern '['" in err(tmp_path, AGENT + "[title_status]\nblocked = ['x']\nattention = ['[']\n")
    both = load_manifest(write(tmp_path, "b.toml", AGENT + "[title_status]\nblocked = ['a']\nattention = ['b']\n"), "user")
    assert [len(r.regex) for r in both.title_rules] == [2]


# --------------------------------------------------------------------------- [[screen]] (§5.1)


def rule(**kv: object) -> str:
    body = "".join(f"{k} = {v}\n" for k, v in kv.items())
    return AGENT + "[[screen]]\n" + body


def test_screen_defaults(tmp_path: Path) -> None:
    m = load_manifest(write(tmp_path, "r.toml", rule(id='"a"', state='"hold"', all="['x']")), "user")
    r = m.screen_rules[0]
    assert (r.region, r.lines, r.priority, r.regex, len(r.all)) == ("bottom", None, 0, (), 1)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"id": '"busy"', "state": '"working"', "region": '"bottm"', "regex": "['x']"}, "[[screen]] 'busy': unknown region 'bottm'"),
        ({"id": '"busy"', "state": '"busy"', "regex": "['x']"}, "[[screen]] 'busy': unknown state 'busy'"),
        ({"id": '"busy"', "state": '"working"', "regex": "['(unclosed']"}, "[[screen]] 'busy' regex: bad pattern '(unclosed'"),
        ({"id": '"busy"', "state": '"working"', "regex": "['x']", "all": "['[z-a]']"}, "[[screen]] 'busy' all: bad pattern '[z-a]'"),
        (dict(id='"busy"', state='"working"', regex="['x']", **{"not": "['*']"}), "[[screen]] 'busy' not: bad pattern '*'"),
        ({"id": '"busy"', "state": '"working"', "regex": "'x'"}, "[[screen]] 'busy': regex: expected an array of strings, got a string"),
        ({"id": '"busy"', "state": '"working"'}, "[[screen]] 'busy': needs a non-empty 'regex' or 'all'"),
        ({"id": '"busy"', "state": '"working"', "regex": "[]", "all": "[]"}, "[[screen]] 'busy': needs a non-empty 'regex' or 'all'"),
        ({"id": '"busy"', "state": '"working"', "regex": "['x']", "lines": "0"}, "[[screen]] 'busy': lines 0 out of range"),
        ({"id": '"busy"', "state": '"working"', "regex": "['x']", "lines": "201"}, "[[screen]] 'busy': lines 201 out of range"),
        ({"id": '"busy"', "state": '"working"', "region": '"title"', "regex": "['x']", "lines": "3"}, "'lines' is not allowed with region 'title'"),
        ({"id": '"busy"', "state": '"working"', "region": '"osc_progress"', "regex": "['x']", "lines": "3"}, "'lines' is not allowed with region 'osc_progress'"),
        ({"id": '"busy"', "state": '"working"', "regex": "['x']", "priority": "1.5"}, "[[screen]] 'busy': priority:"),
        ({"state": '"working"', "regex": "['x']"}, "[[screen]] #1: id:"),
        ({"id": '""', "state": '"working"', "regex": "['x']"}, "[[screen]] #1: id:"),
        ({"id": '"' + "r" * 65 + '"', "state": '"working"', "regex": "['x']"}, "id:"),
    ],
)
def test_bad_screen_rules(tmp_path: Path, fields: dict[str, str], expected: str) -> None:
    assert expected in err(tmp_path, rule(**fields))


def test_screen_shapes(tmp_path: Path) -> None:
    ok = rule(id='"a"', state='"idle"', regex="['']", lines="200", region='"top"', priority="-1000")
    assert load_manifest(write(tmp_path, "ok.toml", ok), "user").screen_rules[0].lines == 200
    dup = ok + '[[screen]]\nid = "a"\nstate = "idle"\nregex = ["x"]\n'
    assert "[[screen]] 'a': duplicate rule id" in err(tmp_path, dup)
    assert "[[screen]]: must be an array of tables" in err(tmp_path, "screen = 3\n" + AGENT)
    assert "[[screen]] #1: must be a table" in err(tmp_path, "screen = [1]\n" + AGENT)


# --------------------------------------------------------------------------- files


def test_bad_toml_and_utf8(tmp_path: Path) -> None:
    assert err(tmp_path, "[agent\n").startswith("TOML syntax:")
    p = tmp_path / "bin.toml"
    p.write_bytes(b'[agent]\nkind = "generic"\ndisplay_name = "\xff\xfe"\n')
    with pytest.raises(ManifestError, match="not valid UTF-8"):
        load_manifest(p, "user")


def test_deeply_nested_toml(tmp_path: Path) -> None:
    e = err(tmp_path, AGENT + "x = " + "[" * 200_000 + "]" * 200_000 + "\n")
    assert "nested too deeply" in e or "TOML syntax" in e


def test_ten_megabyte_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    p = tmp_path / "big.toml"
    with open(p, "wb") as f:
        f.write(AGENT.encode())
        f.write(b"# " + b"x" * (10 * 1024 * 1024) + b"\n")
    with pytest.raises(ManifestError, match="file too large"):
        load_manifest(p, "user")
    assert read_manifest_bytes(write(tmp_path, "ok.toml", AGENT)) == AGENT.encode()
    exact = tmp_path / "exact.toml"
    exact.write_bytes(b"#" * MAX_MANIFEST_BYTES)
    assert len(read_manifest_bytes(exact)) == MAX_MANIFEST_BYTES


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    result: list[str] = []

    def run() -> None:
        try:
            load_manifest(fifo, "user")
        except ManifestError as exc:
            result.append(exc.error)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "reading a FIFO blocked"
    assert result == ["not a regular file"]


def test_directory_and_symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(ManifestError, match="not a regular file"):
        load_manifest(tmp_path / "dir.toml", "user")
    loop = tmp_path / "loop.toml"
    loop.symlink_to(loop)
    with pytest.raises(ManifestError, match="symlink loop"):
        load_manifest(loop, "user")
    with pytest.raises(ManifestError, match="cannot read"):
        load_manifest(tmp_path / "missing.toml", "user")


def test_bad_inputs_in_one_directory_never_fatal(tmp_path: Path) -> None:
    """Issue #4 "Bad input": every case in one agents dir; each is one failure, the rest load."""
    user = tmp_path / "agents"
    user.mkdir()
    write(user, "00-good.toml", '[agent]\nid = "good"\nkind = "generic"\nbinaries = ["good"]\n')
    write(user, "badregex.toml", rule(id='"busy"', state='"working"', regex="['(']"))
    write(user, "badregion.toml", rule(id='"busy"', state='"working"', region='"bottm"', regex="['x']"))
    write(user, "badkind.toml", '[agent]\nkind = "gpt"\n')
    write(user, "dup1.toml", '[agent]\nid = "twin"\nkind = "generic"\n')
    write(user, "dup2.toml", '[agent]\nid = "twin"\nkind = "generic"\n')
    with open(user / "huge.toml", "wb") as f:
        f.truncate(10 * 1024 * 1024)
    (user / "loop.toml").symlink_to(user / "loop.toml")
    os.mkfifo(user / "fifo.toml")
    (user / "utf8.toml").write_bytes(b'[agent]\nkind = "generic"\n# \xc3\x28\n')
    write(user, "string.toml", AGENT + '[launch]\nargs = "chat --tui"\n')
    write(user, "zz-good.toml", '[agent]\nid = "later"\nkind = "pi"\n')
    cat = load_catalog(user, bundled_dir=tmp_path / "none")
    errors = {Path(f["file"]).name: f["error"] for f in cat.failures}
    assert errors == {
        "badregex.toml": "[[screen]] 'busy' regex: " + errors["badregex.toml"].split("regex: ", 1)[1],
        "badregion.toml": "[[screen]] 'busy': unknown region 'bottm'",
        "badkind.toml": "[agent] kind: unknown kind 'gpt' (one of claude, codex, opencode, cursor, pi, generic)",
        "dup2.toml": "[agent] id: duplicate id 'twin' (first in dup1.toml)",
        "huge.toml": "file too large (10485760 bytes, limit 1048576)",
        "loop.toml": "cannot read: symlink loop",
        "fifo.toml": "not a regular file",
        "utf8.toml": "not valid UTF-8 (byte 27)",
        "string.toml": "[launch] args: expected an array of strings, got a string",
    }
    assert "bad pattern '('" in errors["badregex.toml"]
    assert sorted(e.id for e in cat.entries()) == ["good", "later", "twin"]


def test_every_bundled_manifest_loads() -> None:
    """Whatever bundled files exist load without failure, with unique ids (bundled = bug otherwise)."""
    files = sorted(BUNDLED_DIR.glob("*.toml"))
    assert files
    cat = load_catalog(None)
    assert cat.failures == []
    assert len(cat.entries()) == len(files)
    for path in files:
        m = load_manifest(path, "bundled")
        assert m.id == path.stem


MINE = {
    # id: (display, binaries, detect, args, prompt(mode, flag), bypass_args, bypass_env, homepage, order)
    "aider": ("Aider", ["aider"], ["aider"], [], ("after-start", None), ["--yes-always"], {}, "https://aider.chat/docs/", 140),
    "goose": ("Goose", ["goose"], ["goose"], [], ("after-start", None), [], {"GOOSE_MODE": "auto"}, "https://block.github.io/goose/docs/quickstart/", 150),
    "amp": ("Amp", ["amp"], ["amp"], [], ("after-start", None), ["--dangerously-allow-all"], {}, "https://ampcode.com/manual#install", 160),
    "kiro": ("Kiro", ["kiro-cli"], ["kiro-cli"], ["chat", "--tui"], ("after-start", None), ["--trust-all-tools"], {}, "https://kiro.dev/docs/cli/", 170),
    "crush": ("Crush", ["crush"], ["crush"], [], ("after-start", None), ["--yolo"], {}, "https://github.com/charmbracelet/crush", 180),
    "auggie": ("Auggie", ["auggie"], ["auggie"], [], ("after-start", None), [], {}, "https://docs.augmentcode.com/cli/overview", 190),
    "cline": ("Cline", ["cline"], ["cline"], [], ("after-start", None), ["--auto-approve", "true"], {}, "https://docs.cline.bot/cline-cli/overview", 200),
    "continue": ("Continue", ["cn"], ["cn"], [], ("after-start", None), ["--allow", "*"], {}, "https://docs.continue.dev/guides/cli", 210),
    "kimi": ("Kimi Code", ["kimi", "kimi-code"], ["kimi"], [], ("after-start", None), ["--yolo"], {}, "https://www.kimi.com/code/docs/en/kimi-code-cli/getting-started.html", 220),
    "mistral-vibe": ("Mistral Vibe", ["vibe", "mistral-vibe"], ["vibe"], [], ("after-start", None), ["--agent", "auto-approve"], {}, "https://github.com/mistralai/mistral-vibe", 230),
    "qwen-code": ("Qwen Code", ["qwen"], ["qwen"], [], ("after-start", None), ["--approval-mode", "yolo"], {}, "https://github.com/QwenLM/qwen-code", 240),
    "omp": ("Oh My Pi", ["omp"], ["omp"], [], ("argv", None), [], {}, "https://omp.sh", 250),
    "hermes": ("Hermes", ["hermes"], ["hermes"], ["chat"], ("flag", "--query"), ["--yolo"], {}, "https://hermes-agent.nousresearch.com/docs/", 260),
    "codebuff": ("Codebuff", ["codebuff"], ["codebuff"], [], ("after-start", None), [], {}, "https://www.codebuff.com/docs/help/quick-start", 270),
}


@pytest.mark.parametrize("entry_id", sorted(MINE))
def test_bundled_entries_without_rules_match_table(entry_id: str) -> None:
    """agents.md §4.6, the 14 rows without hooks; five of them got screen rules in issue 11
    item 12 (checked in tests/agents/test_bundled_rules.py)."""
    display, binaries, detect, args, (mode, flag), bypass, env, home, order = MINE[entry_id]
    e = load_catalog(None).entry(entry_id)
    assert e is not None
    assert e.source == "bundled"
    assert e.kind == "generic"
    assert (e.display_name, list(e.binaries), list(e.launch.detect), e.launch.command) == (display, binaries, detect, detect[0])
    assert list(e.launch.args) == args
    assert (e.launch.prompt.mode, e.launch.prompt.flag) == (mode, flag)
    assert e.launch.prompt.delay_ms == 3000
    assert e.launch.prompt.separator is None
    assert list(e.launch.bypass_args) == bypass
    assert e.launch.bypass_env == env
    assert (e.homepage, e.order, e.install_url) == (home, order, None)
    assert e.launch.continue_args == ()
    assert e.resume is None
    assert (e.rules == ()) == (entry_id not in {"kimi", "cline", "amp", "kiro", "hermes"})
    assert e.lifecycle == {}


# --------------------------------------------------------------------------- size and content limits


def _list(n: int, item: str = '"x"') -> str:
    return "[" + ", ".join([item] * n) + "]"


def _names(n: int, stem: str = "t") -> str:
    return "[" + ", ".join(f'"{stem}{i}"' for i in range(n)) + "]"


def test_counted_repeat_bomb_is_refused_at_once(tmp_path: Path) -> None:
    t0 = time.monotonic()
    e = err(tmp_path, rule(id='"busy"', state='"working"', regex="['a{1000000000}']"))
    assert time.monotonic() - t0 < 1.0
    assert e == "[[screen]] 'busy' regex: bad pattern 'a{1000000000}': counted repeat {1000000000} too large (max 1000)"


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [
        ("a{1001}", "counted repeat {1001} too large (max 1000)"),
        ("a{0,1000000}", "counted repeat {0,1000000} too large"),
        ("a{5000,}", "counted repeat {5000,} too large"),
        ("a{2000}?", "counted repeat {2000} too large"),  # lazy
        ("(?:ab){3000}+", "counted repeat {3000} too large"),  # possessive
        ("(?=x{1500})", "counted repeat {1500} too large"),  # inside a lookahead
        ("(x|y{4000})", "counted repeat {4000} too large"),  # inside a branch
        ("(?:(?:a{100}){100}){100}", f"more than {MAX_PATTERN_WEIGHT} items"),  # nested: 10^6
        ("(" * 101 + "a" + ")" * 101, f"nested too deeply (max {MAX_PATTERN_NESTING} levels)"),
        ("x" * (MAX_PATTERN_CHARS + 1), f"too long ({MAX_PATTERN_CHARS + 1} characters, max {MAX_PATTERN_CHARS})"),
    ],
)
def test_pattern_cost_limits(pattern: str, needle: str) -> None:
    with pytest.raises(PatternError) as ei:
        compile_pattern(pattern)
    assert needle in str(ei.value)
    assert str(ei.value).startswith("bad pattern ")


@pytest.mark.parametrize(
    "pattern",
    [
        r"a\{1000000000\}",  # escaped braces are literals, not a repeat
        "[{]1000000[}]",
        "a{1000}",
        "a{0,1000}b{1000,}",
        "(?:a{1000}){10}",  # 10 000 items: at the limit
        "(?i)esc to (?:interrupt|cancel).{0,200}",
        "x" * MAX_PATTERN_CHARS,
        "(" * 50 + "a" + ")" * 50,
    ],
)
def test_patterns_within_limits_compile(pattern: str) -> None:
    assert compile_pattern(pattern).pattern == pattern


def test_long_pattern_error_is_shortened(tmp_path: Path) -> None:
    e = err(tmp_path, rule(id='"a"', state='"idle"', regex=f"['{'y' * 3000}']"))
    assert len(e) < 300
    assert "too long (3000 characters" in e


def test_screen_rule_count_cap(tmp_path: Path) -> None:
    ok = AGENT + "".join(f'[[screen]]\nid = "r{i}"\nstate = "idle"\nregex = ["x"]\n' for i in range(MAX_SCREEN_RULES))
    assert len(load_manifest(write(tmp_path, "ok.toml", ok), "user").screen_rules) == MAX_SCREEN_RULES
    over = ok + '[[screen]]\nid = "last"\nstate = "idle"\nregex = ["x"]\n'
    assert err(tmp_path, over) == f"[[screen]]: too many rules ({MAX_SCREEN_RULES + 1}, max {MAX_SCREEN_RULES})"


@pytest.mark.parametrize("key", ["regex", "all", "not"])
def test_patterns_per_list_cap(tmp_path: Path, key: str) -> None:
    fields = {"id": '"busy"', "state": '"working"', "regex": "['x']"}
    fields[key] = _list(MAX_LIST_ITEMS)
    assert load_manifest(write(tmp_path, "ok.toml", rule(**fields)), "user").screen_rules
    fields[key] = _list(MAX_LIST_ITEMS + 1)
    e = err(tmp_path, rule(**fields))
    assert e == f"[[screen]] 'busy': {key}: too many entries ({MAX_LIST_ITEMS + 1}, max {MAX_LIST_ITEMS})"


def test_huge_pattern_list_fails_fast(tmp_path: Path) -> None:
    t0 = time.monotonic()
    e = err(tmp_path, rule(id='"a"', state='"idle"', regex=_names(40000, "q")))
    # the per-file total is counted before any table is validated or compiled
    assert time.monotonic() - t0 < 2.0
    assert "too many patterns (40000, max 1000 per file)" in e


def test_title_status_list_cap(tmp_path: Path) -> None:
    e = err(tmp_path, AGENT + f"[title_status]\nattention = {_list(MAX_LIST_ITEMS + 1)}\n")
    assert e == f"[title_status] attention: too many entries ({MAX_LIST_ITEMS + 1}, max {MAX_LIST_ITEMS})"


def test_patterns_per_file_cap(tmp_path: Path) -> None:
    per_rule = 3 * 60  # regex + all + not, each under the list cap
    n_rules = MAX_PATTERNS_PER_FILE // per_rule + 1
    text = AGENT + "".join(
        f'[[screen]]\nid = "r{i}"\nstate = "idle"\nregex = {_list(60)}\nall = {_list(60)}\nnot = {_list(60)}\n'
        for i in range(n_rules)
    )
    e = err(tmp_path, text)
    assert e == (
        f"[title_status]/[[screen]]: too many patterns ({n_rules * per_rule}, "
        f"max {MAX_PATTERNS_PER_FILE} per file)"
    )


@pytest.mark.parametrize(
    ("body", "table"),
    [
        ("binaries = {}", "[agent] binaries"),
        ("[launch]\ndetect = {}", "[launch] detect"),
        ("[launch]\nrequires = {}", "[launch] requires"),
        ("[launch]\nargs = {}", "[launch] args"),
        ("[launch]\nbypass_args = {}", "[launch] bypass_args"),
        ("[launch]\ncontinue_args = {}", "[launch] continue_args"),
        ("[session]\nresume = {}", "[session] resume"),
        ("[session]\ncreate = {}", "[session] create"),
    ],
)
def test_array_caps(tmp_path: Path, body: str, table: str) -> None:
    ok = AGENT + body.format(_names(MAX_LIST_ITEMS).replace('"t0"', '"{id}"')) + "\n"
    load_manifest(write(tmp_path, "ok.toml", ok), "user")
    e = err(tmp_path, AGENT + body.format(_names(MAX_LIST_ITEMS + 1).replace('"t0"', '"{id}"')) + "\n")
    assert e == f"{table}: too many entries ({MAX_LIST_ITEMS + 1}, max {MAX_LIST_ITEMS})"


def test_huge_binaries_list_fails_fast(tmp_path: Path) -> None:
    t0 = time.monotonic()
    e = err(tmp_path, AGENT + f"binaries = {_names(80000, 'tool')}\n")
    assert time.monotonic() - t0 < 2.0
    assert e == "[agent] binaries: too many entries (80000, max 64)"


@pytest.mark.parametrize(
    ("body", "table"),
    [
        ('[launch]\nargs = ["{}"]', "[launch] args.0"),
        ('[launch]\nbypass_env = {{ A = "{}" }}', "[launch] bypass_env.A"),
        ('[session]\nkey = "{}"', "[session] key"),
        ('[lifecycle.E]\nmessage = "{}"', "[lifecycle.E] message"),
        ('homepage = "https://a.example/{}"', "[agent] homepage"),
    ],
)
def test_string_length_cap(tmp_path: Path, body: str, table: str) -> None:
    e = err(tmp_path, AGENT + body.format("s" * (MAX_STRING + 1)) + "\n")
    assert e.startswith(f"{table}:")
    assert "at most" in e


def test_string_at_the_cap_is_fine(tmp_path: Path) -> None:
    m = load_manifest(write(tmp_path, "ok.toml", AGENT + f'[launch]\nargs = ["{"s" * MAX_STRING}"]\n'), "user")
    assert m.raw["launch"]["args"] == ["s" * MAX_STRING]


def test_bypass_env_caps(tmp_path: Path) -> None:
    many = ", ".join(f"V{i} = 'x'" for i in range(MAX_ENV_VARS + 1))
    assert err(tmp_path, AGENT + f"[launch]\nbypass_env = {{ {many} }}\n") == (
        f"[launch] bypass_env: too many entries ({MAX_ENV_VARS + 1}, max {MAX_ENV_VARS})"
    )
    e = err(tmp_path, AGENT + f"[launch]\nbypass_env = {{ {'N' * 5000} = 'x' }}\n")
    assert len(e) < 200
    assert f"variable name too long (5000 characters, max {MAX_ENV_NAME})" in e


def test_lifecycle_event_cap(tmp_path: Path) -> None:
    tables = "".join(f'[lifecycle.E{i}]\nlifecycle = "working"\n' for i in range(MAX_LIFECYCLE_EVENTS + 1))
    assert err(tmp_path, AGENT + tables) == (
        f"[lifecycle]: too many event tables ({MAX_LIFECYCLE_EVENTS + 1}, max {MAX_LIFECYCLE_EVENTS})"
    )


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ('binaries = ["."]', "[agent] binaries: '.' is not a program name"),
        ('binaries = [".."]', "[agent] binaries: '..' is not a program name"),
        ('binaries = ["a\\u001bb"]', "[agent] binaries: 'a\\x1bb' contains a control character"),
        ('binaries = ["a\\tb*"]', "contains a control character"),
        ('binaries = ["a\\u0085b"]', "contains a control character"),  # C1 NEL
        ('[launch]\ndetect = [".."]', "[launch] detect: '..' is not a program name"),
        ('[launch]\ndetect = ["a\\nb"]', "[launch] detect: 'a\\nb' contains a control character"),
        ('[launch]\nrequires = ["."]', "[launch] requires: '.' is not a program name"),
        ('[launch]\nrequires = ["x\\u007f"]', "[launch] requires: 'x\\x7f' contains a control character"),
        ('[launch]\ncommand = ".."', "[launch] command: '..' is not a program name"),
    ],
)
def test_bad_program_names(tmp_path: Path, body: str, needle: str) -> None:
    assert needle in err(tmp_path, AGENT + body + "\n")


def test_dotted_names_that_are_not_dot_dirs_are_fine(tmp_path: Path) -> None:
    m = load_manifest(write(tmp_path, "d.toml", AGENT + 'binaries = ["...", ".tern", "tern.js", "..x*"]\n'), "user")
    assert m.raw["agent"]["binaries"] == ["...", ".tern", "tern.js", "..x*"]


@pytest.mark.parametrize(
    "name",
    ["Tern\\u001b[31m", "a\\u0007b", "line\\nbreak", "x\\u009bz", "a\\u2028b"]
    + [f"evil\\u{cp:04x}name" for cp in (0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069)],
)
def test_display_name_controls_and_bidi_rejected(tmp_path: Path, name: str) -> None:
    e = err(tmp_path, AGENT + f'display_name = "{name}"\n')
    assert e.startswith("[agent] display_name:")
    assert "contains a control character, escape or bidi override" in e


def test_display_name_unicode_is_fine(tmp_path: Path) -> None:
    m = load_manifest(write(tmp_path, "d.toml", AGENT + 'display_name = "Tërn ✦ 鳥 (עברית)"\n'), "user")
    assert m.raw["agent"]["display_name"] == "Tërn ✦ 鳥 (עברית)"


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ('{ PATH = "/tmp" }', "'PATH' is reserved"),
        ('{ SIGNALTTY_PANE_ID = "x" }', "'SIGNALTTY_PANE_ID' is reserved"),
        ('{ SIGNALTTY_ = "x" }', "'SIGNALTTY_' is reserved"),
        ('{ "A-B" = "x" }', "bad environment variable name 'A-B'"),
        ('{ "1ABC" = "x" }', "bad environment variable name '1ABC'"),
        ('{ "A B" = "x" }', "bad environment variable name 'A B'"),
        ('{ "" = "x" }', "bad environment variable name ''"),
        ('{ "A=B" = "x" }', "bad environment variable name 'A=B'"),
        ('{ "É" = "x" }', "bad environment variable name 'É'"),
        ('{ A = "x\\u0000y" }', "value of 'A' contains a NUL byte"),
    ],
)
def test_bad_bypass_env(tmp_path: Path, env: str, needle: str) -> None:
    e = err(tmp_path, AGENT + f"[launch]\nbypass_env = {env}\n")
    assert e.startswith("[launch] bypass_env")
    assert needle in e


def test_good_bypass_env_names(tmp_path: Path) -> None:
    env = '{ _X = "1", path = "lower case is another variable", Signaltty_x = "2", A1_B2 = "" }'
    m = load_manifest(write(tmp_path, "e.toml", AGENT + f"[launch]\nbypass_env = {env}\n"), "user")
    assert set(m.raw["launch"]["bypass_env"]) == {"_X", "path", "Signaltty_x", "A1_B2"}


def test_reserved_env_matches_launch_refusal() -> None:
    """The load-time check and launch.py's launch-time refusal reserve the same names."""
    assert launch._RESERVED_ENV == RESERVED_ENV
    assert launch._RESERVED_ENV_PREFIX == RESERVED_ENV_PREFIX
