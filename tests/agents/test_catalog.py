"""Catalog merging, detection, rule scoping, listing and the hook overlay (agents.md §3.1,
§4.2, §4.3, §5.4), with real manifest files in temp bundled and user directories."""

from __future__ import annotations

import contextlib
import errno
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from signaltty.agents.adapters import ADAPTERS
from signaltty.agents.adapters.overlay import OverlayAdapter, resolve_adapter
from signaltty.agents.catalog import (
    BUNDLED_DIR,
    DETECT_MEMO_SIZE,
    Catalog,
    LaunchSpec,
    PromptSpec,
    agents_dir,
    binary_matches,
    load_catalog,
)
from signaltty.core.hooks import UNRECOGNIZED
from signaltty.core.states import Attention, Lifecycle
from tests.conftest import DaemonProc


def w(d: Path, name: str, text: str) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text(text)
    return p


def rules(*specs: tuple[str, str]) -> str:
    return "".join(f'[[screen]]\nid = "{i}"\nstate = "{s}"\nregex = ["{i}"]\n' for i, s in specs)


GEMINI = """
[agent]
id = "gemini"
kind = "generic"
display_name = "Gemini CLI"
binaries = ["gemini"]
order = 60
homepage = "https://example.org/gemini"

[launch]
prompt = { mode = "flag", flag = "--prompt-interactive" }
bypass_args = ["--yolo"]

[lifecycle.Start]
lifecycle = "working"

[lifecycle.End]
lifecycle = "done"
attention = "unread"

[title_status]
blocked = ["Action Required"]
""" + rules(("g_block", "blocked"), ("idle_fallback", "idle"))

CLAUDE = """
[agent]
id = "claude"
kind = "claude"
display_name = "Claude Code"
binaries = ["claude"]
order = 10

[launch]
bypass_args = ["--dangerously-skip-permissions"]
continue_args = ["--continue"]

[session]
resume = ["claude", "--resume", "{id}"]
""" + rules(("c_work", "working"), ("idle_fallback", "idle"))

MUSE = """
[agent]
id = "muse"
kind = "generic"
binaries = ["muse", "muse-bin-*"]
prompt = 1
[launch]
prompt = { mode = "after-start" }
""" + rules(("m_work", "working"))


@pytest.fixture
def bundled(tmp_path: Path) -> Path:
    d = tmp_path / "bundled"
    w(d, "claude.toml", CLAUDE)
    w(d, "gemini.toml", GEMINI)
    w(d, "muse.toml", MUSE)
    w(d, "plain.toml", '[agent]\nkind = "generic"\nbinaries = ["plain"]\n')
    return d


@pytest.fixture
def user(tmp_path: Path) -> Path:
    d = tmp_path / "user"
    d.mkdir()
    return d


def test_bundled_only_defaults(bundled: Path) -> None:
    cat = load_catalog(None, bundled_dir=bundled)
    assert cat.failures == []
    assert cat.dir is None
    g = cat.entry("gemini")
    assert g is not None
    assert g.source == "bundled"
    assert g.file == str(bundled / "gemini.toml")
    assert g.launch == LaunchSpec(
        command="gemini",
        detect=("gemini",),
        prompt=PromptSpec("flag", None, "--prompt-interactive", 3000),
        bypass_args=("--yolo",),
    )
    assert [r.id for r in g.rules] == ["title_blocked", "g_block", "idle_fallback"]
    muse = cat.entry("muse")
    assert muse.launch.detect == ("muse",)
    assert muse.launch.command == "muse"
    assert cat.entry("plain").display_name == "plain"
    assert cat.entry("plain").order is None
    assert [e.id for e in cat.entries()] == ["claude", "gemini", "muse", "plain"]


def test_launch_defaults_from_command_and_empty(tmp_path: Path) -> None:
    d = tmp_path / "b"
    w(d, "a.toml", '[agent]\nkind = "generic"\n[launch]\ncommand = "a-cli"\n')
    w(d, "b.toml", '[agent]\nkind = "generic"\nbinaries = ["b-*"]\n')
    w(d, "c.toml", '[agent]\nkind = "generic"\nbinaries = ["c1", "c2"]\n[launch]\ndetect = ["c2"]\ncommand = "c1"\n')
    cat = load_catalog(None, bundled_dir=d)
    assert (cat.entry("a").launch.command, cat.entry("a").launch.detect) == ("a-cli", ("a-cli",))
    assert (cat.entry("b").launch.command, cat.entry("b").launch.detect) == ("", ())
    assert (cat.entry("c").launch.command, cat.entry("c").launch.detect) == ("c1", ("c2",))


def test_entries_order(tmp_path: Path) -> None:
    d = tmp_path / "b"
    for name, order in [("zz", 5), ("aa", 20), ("mm", None), ("bb", 5), ("ab", None)]:
        w(d, f"{name}.toml", '[agent]\nkind = "generic"\n' + (f"order = {order}\n" if order is not None else ""))
    assert [e.id for e in load_catalog(None, bundled_dir=d).entries()] == ["bb", "zz", "aa", "ab", "mm"]


# --------------------------------------------------------------------------- merging (§4.2)


def test_user_override_merges_keys_individually(bundled: Path, user: Path) -> None:
    w(user, "my-gemini.toml", """
[agent]
id = "gemini"
kind = "generic"
binaries = ["gemini", "gem"]

[launch]
args = ["--sandbox"]

[session]
key = "conv.id"

[lifecycle.End]
lifecycle = "idle"

[lifecycle.Extra]
attention = "warning"
""")
    cat = load_catalog(user, bundled_dir=bundled)
    assert cat.failures == []
    g = cat.entry("gemini")
    assert g.source == "user"
    assert g.file == str(user / "my-gemini.toml")
    assert g.display_name == "Gemini CLI"
    assert g.order == 60
    assert g.homepage == "https://example.org/gemini"
    assert g.binaries == ("gemini", "gem")
    assert g.launch.detect == ("gemini", "gem")
    assert g.launch.args == ("--sandbox",)
    assert g.launch.bypass_args == ("--yolo",)
    assert g.launch.prompt.flag == "--prompt-interactive"
    assert g.session_key == "conv.id"
    assert g.resume is None
    # per event: Start kept from bundled, End replaced whole, Extra added
    assert g.lifecycle["Start"].lifecycle == Lifecycle.WORKING
    assert (g.lifecycle["End"].lifecycle, g.lifecycle["End"].attention) == (Lifecycle.IDLE, None)
    assert g.lifecycle["Extra"].attention == Attention.WARNING
    # no [title_status]/[[screen]] in the user file: bundled rules stay, still bundled
    assert [r.id for r in g.rules] == ["title_blocked", "g_block", "idle_fallback"]
    assert {r.source for r in g.rules} == {"bundled"}


def test_user_rules_replace_bundled_tables_separately(bundled: Path, user: Path) -> None:
    w(user, "gemini.toml", '[agent]\nkind = "generic"\n' + rules(("u_work", "working")))
    g = load_catalog(user, bundled_dir=bundled).entry("gemini")
    assert [(r.id, r.source, r.file) for r in g.rules] == [
        ("title_blocked", "bundled", "gemini.toml"),
        ("u_work", "user", "gemini.toml"),
    ]
    w(user, "gemini.toml", '[agent]\nkind = "generic"\n[title_status]\n')
    g = load_catalog(user, bundled_dir=bundled).entry("gemini")
    assert [r.id for r in g.rules] == ["g_block", "idle_fallback"]  # empty title_status replaces


def test_kind_may_not_change(bundled: Path, user: Path) -> None:
    w(user, "gemini.toml", '[agent]\nkind = "claude"\n')
    cat = load_catalog(user, bundled_dir=bundled)
    assert cat.failures == [
        {
            "file": str(user / "gemini.toml"),
            "error": "[agent] kind: cannot change the kind of bundled entry 'gemini' from 'generic' to 'claude'",
        }
    ]
    g = cat.entry("gemini")
    assert g.source == "bundled"  # the bundled entry stays


def test_duplicate_ids(bundled: Path, user: Path) -> None:
    w(user, "a.toml", '[agent]\nid = "tern"\nkind = "generic"\ndisplay_name = "First"\n')
    w(user, "b.toml", '[agent]\nid = "tern"\nkind = "generic"\ndisplay_name = "Second"\n')
    w(bundled, "zz-dup.toml", '[agent]\nid = "gemini"\nkind = "generic"\n')
    cat = load_catalog(user, bundled_dir=bundled)
    assert cat.entry("tern").display_name == "First"
    assert {(Path(f["file"]).name, f["error"]) for f in cat.failures} == {
        ("b.toml", "[agent] id: duplicate id 'tern' (first in a.toml)"),
        ("zz-dup.toml", "[agent] id: duplicate id 'gemini' (first in gemini.toml)"),
    }
    assert cat.entry("gemini").display_name == "Gemini CLI"


def test_user_dir_states(bundled: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    cat = load_catalog(missing, bundled_dir=bundled)
    assert cat.dir == str(missing)
    assert cat.failures == []
    assert len(cat.entries()) == 4
    afile = w(tmp_path, "file", "x")
    with pytest.raises(NotADirectoryError):
        load_catalog(afile, bundled_dir=bundled)
    loopdir = tmp_path / "loopdir"
    loopdir.symlink_to(loopdir)
    with pytest.raises(OSError, match=re.escape(str(loopdir))) as exc:
        load_catalog(loopdir, bundled_dir=bundled)
    assert exc.value.errno == errno.ELOOP
    # a missing bundled dir is a failure, never an exception
    cat = load_catalog(None, bundled_dir=tmp_path / "no-bundled")
    assert cat.entries() == []
    assert cat.failures == []


def test_only_toml_and_no_dotfiles_in_name_order(user: Path, tmp_path: Path) -> None:
    w(user, "b.toml", '[agent]\nid = "x"\nkind = "generic"\ndisplay_name = "B"\n')
    w(user, "a.toml", '[agent]\nid = "x"\nkind = "generic"\ndisplay_name = "A"\n')
    w(user, ".#a.toml", "garbage")
    w(user, "notes.txt", "garbage")
    w(user, "c.toml.bak", "garbage")
    cat = load_catalog(user, bundled_dir=tmp_path / "none")
    assert cat.entry("x").display_name == "A"
    assert [Path(f["file"]).name for f in cat.failures] == ["b.toml"]


def test_symlinked_manifest_is_followed(user: Path, tmp_path: Path) -> None:
    real = w(tmp_path / "elsewhere", "tern.toml", '[agent]\nkind = "generic"\n')
    (user / "tern.toml").symlink_to(real)
    assert load_catalog(user, bundled_dir=tmp_path / "none").entry("tern") is not None


# --------------------------------------------------------------------------- detect (§3.1)


def test_binary_patterns() -> None:
    assert binary_matches("muse", "muse")
    assert not binary_matches("muse", "muse-cli")
    assert binary_matches("muse-bin-*", "muse-bin-x86")
    assert binary_matches("muse-bin-*", "muse-bin-")
    assert not binary_matches("muse-bin-*", "muse-bi")


def test_detect_order(bundled: Path, user: Path) -> None:
    cat = load_catalog(None, bundled_dir=bundled)
    assert cat.detect("gemini").id == "gemini"
    assert cat.detect("/opt/x/muse-bin-arm64").id == "muse"
    assert cat.detect("claude").id == "claude"
    assert cat.detect("agent") is None
    assert cat.detect("codex") is None
    assert cat.detect("") is None
    # user generic beats bundled; user specific beats user generic (file order inside a group)
    w(user, "a-generic.toml", '[agent]\nkind = "generic"\nbinaries = ["gemini", "claude"]\n')
    w(user, "b-claude.toml", '[agent]\nkind = "claude"\nbinaries = ["claude", "cl-*"]\n')
    w(user, "c-pi.toml", '[agent]\nkind = "pi"\nbinaries = ["cl-x"]\n')
    w(user, "d-cursor.toml", '[agent]\nkind = "cursor"\nbinaries = ["agent"]\n')
    cat = load_catalog(user, bundled_dir=bundled)
    assert cat.detect("gemini").id == "a-generic"
    assert cat.detect("claude").id == "b-claude"
    assert cat.detect("cl-x").id == "b-claude"  # both specific: file-name order
    assert cat.detect("agent").id == "d-cursor"  # a Cursor alias must be declared
    assert cat.detect("muse").id == "muse"


def test_detect_uses_merged_binaries(bundled: Path, user: Path) -> None:
    w(user, "gemini.toml", '[agent]\nkind = "generic"\nbinaries = ["gem"]\n')
    cat = load_catalog(user, bundled_dir=bundled)
    assert cat.detect("gem").id == "gemini"
    assert cat.detect("gemini") is None


# --------------------------------------------------------------------------- rules_for (§5.4)


def ids(result: tuple[str, tuple]) -> tuple[str, list[str]]:
    return result[0], [r.id for r in result[1]]


def test_rules_for_scoping(bundled: Path, user: Path) -> None:
    cat = load_catalog(None, bundled_dir=bundled)
    assert ids(cat.rules_for("claude", "node")) == ("bundled", ["c_work", "idle_fallback"])
    assert ids(cat.rules_for("generic", "gemini")) == ("bundled", ["title_blocked", "g_block", "idle_fallback"])
    assert ids(cat.rules_for("generic", "muse-bin-1")) == ("bundled", ["m_work"])
    assert ids(cat.rules_for("generic", "bash")) == ("none", [])
    assert ids(cat.rules_for("generic", None)) == ("none", [])
    assert ids(cat.rules_for("codex", "codex")) == ("none", [])
    assert ids(cat.rules_for("none", "gemini")) == ("none", [])


def test_generic_manifest_without_binaries_applies_to_every_generic_pane(bundled: Path, user: Path) -> None:
    w(bundled, "zz-any.toml", '[agent]\nkind = "generic"\n' + rules(("any_rule", "hold")))
    cat = load_catalog(None, bundled_dir=bundled)
    assert ids(cat.rules_for("generic", "bash")) == ("bundled", ["any_rule"])
    assert ids(cat.rules_for("generic", None)) == ("bundled", ["any_rule"])
    assert ids(cat.rules_for("generic", "gemini"))[1] == ["title_blocked", "g_block", "idle_fallback", "any_rule"]
    assert ids(cat.rules_for("claude", "claude"))[1] == ["c_work", "idle_fallback"]


def test_user_rules_replace_bundled_for_the_panes_they_apply_to(bundled: Path, user: Path) -> None:
    # a new user manifest of kind claude: every claude pane gets only user rules
    w(user, "my-claude.toml", '[agent]\nkind = "claude"\nbinaries = ["claude-wrapper"]\n' + rules(("u1", "working")))
    w(user, "pi-rules.toml", '[agent]\nkind = "pi"\n' + rules(("p1", "idle")))
    w(user, "other.toml", '[agent]\nkind = "claude"\n')  # no rules: does not count
    cat = load_catalog(user, bundled_dir=bundled)
    source, got = cat.rules_for("claude", "claude")
    assert source == "user"
    assert [(r.id, r.source, r.file) for r in got] == [("u1", "user", "my-claude.toml")]
    assert ids(cat.rules_for("pi", "pi")) == ("user", ["p1"])
    # generic panes: the user gemini rules only for gemini; muse keeps the bundled set
    w(user, "gemini.toml", '[agent]\nkind = "generic"\n' + rules(("ug", "blocked")))
    cat = load_catalog(user, bundled_dir=bundled)
    assert ids(cat.rules_for("generic", "gemini")) == ("user", ["ug"])
    assert ids(cat.rules_for("generic", "muse")) == ("bundled", ["m_work"])


def test_user_rules_from_several_manifests_in_file_order(tmp_path: Path, user: Path) -> None:
    w(user, "b.toml", '[agent]\nkind = "generic"\nbinaries = ["t*"]\n' + rules(("b1", "working")))
    w(user, "a.toml", '[agent]\nkind = "generic"\nbinaries = ["tern"]\n' + rules(("a1", "idle")))
    w(user, "c.toml", '[agent]\nkind = "generic"\n' + rules(("c1", "hold")))
    cat = load_catalog(user, bundled_dir=tmp_path / "none")
    assert ids(cat.rules_for("generic", "tern")) == ("user", ["a1", "b1", "c1"])
    assert ids(cat.rules_for("generic", "tx")) == ("user", ["b1", "c1"])
    assert ids(cat.rules_for("generic", "zsh")) == ("user", ["c1"])


# --------------------------------------------------------------------------- listing


def test_listing_shape(bundled: Path, user: Path) -> None:
    w(user, "gemini.toml", '[agent]\nkind = "generic"\n[lifecycle.Zed]\nlifecycle = "idle"\n')
    w(user, "bad.toml", "[agent\n")
    cat = load_catalog(user, bundled_dir=bundled)
    out = cat.listing()
    assert set(out) == {"dir", "manifests", "failures"}
    assert out["dir"] == str(user)
    by_id = {m["id"]: m for m in out["manifests"]}
    assert by_id["gemini"] == {
        "file": str(user / "gemini.toml"),
        "id": "gemini",
        "kind": "generic",
        "source": "user",
        "display_name": "Gemini CLI",
        "binaries": ["gemini"],
        "screen_rules": 3,
        "hook_overrides": ["End", "Start", "Zed"],
    }
    assert by_id["claude"]["source"] == "bundled"
    assert by_id["claude"]["screen_rules"] == 2
    assert [m["id"] for m in out["manifests"]] == ["claude", "gemini", "muse", "plain"]
    assert len(out["failures"]) == 1
    assert out["failures"][0]["file"] == str(user / "bad.toml")
    assert out["failures"][0]["error"].startswith("TOML syntax:")
    assert Catalog.empty().listing() == {"dir": None, "manifests": [], "failures": []}


def test_agents_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SIGNALTTY_AGENTS_DIR", raising=False)
    assert agents_dir() == tmp_path / "xdg" / "signaltty" / "agents"
    assert agents_dir(None, str(tmp_path / "cfg")) == tmp_path / "cfg"
    monkeypatch.setenv("SIGNALTTY_AGENTS_DIR", str(tmp_path / "env"))
    assert agents_dir(None, str(tmp_path / "cfg")) == tmp_path / "env"
    assert agents_dir(str(tmp_path / "flag"), str(tmp_path / "cfg")) == tmp_path / "flag"


# --------------------------------------------------------------------------- hook overlay (§4.3)


TERN = """
[agent]
id = "tern"
kind = "generic"
display_name = "Tern"
binaries = ["tern", "tern-bin-*"]

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
"""


def test_resolve_builtin_and_unknown(bundled: Path) -> None:
    cat = load_catalog(None, bundled_dir=bundled)
    assert resolve_adapter(None, "codex") is ADAPTERS["codex"]
    assert resolve_adapter(cat, "codex") is ADAPTERS["codex"]  # no entry with id codex here
    assert resolve_adapter(cat, "nope") is None
    assert resolve_adapter(cat, "none") is None
    claude = resolve_adapter(cat, "claude")  # overlaid by the entry whose id is the kind
    assert isinstance(claude, OverlayAdapter)
    assert claude.kind == "claude"
    assert claude.resume_template() == ["claude", "--resume", "{id}"]
    assert claude.classify("Stop", {}).lifecycle == Lifecycle.DONE  # builtin behaviour kept


def test_resolve_catalog_id_generic_mapping(bundled: Path, user: Path) -> None:
    w(user, "tern.toml", TERN)
    cat = load_catalog(user, bundled_dir=bundled)
    a = resolve_adapter(cat, "tern")
    assert a is not None
    assert a.kind == "generic"
    assert a.display_name == "Tern"
    c = a.classify("TurnStarted", {})
    assert (c.lifecycle, c.attention, c.recognized) == (Lifecycle.WORKING, Attention.NONE, True)
    c = a.classify("NeedsApproval", {})
    assert (c.lifecycle, c.attention, c.message) == (Lifecycle.BLOCKED, Attention.PERMISSION_REQUIRED, "approval requested")
    assert a.classify("Other", {}) is UNRECOGNIZED
    assert a.session_id({"conversation": {"id": "T1"}}) == "T1"
    assert a.session_id({"session_id": "S"}) == "S"  # falls back to the builtin fields
    assert a.resume_template() == ["tern", "chat", "--resume", "{id}"]
    assert "tern" in a.builtin_names
    assert "tern-bin-*" not in a.builtin_names
    # the bundled gemini entry (generic) maps its own events
    g = resolve_adapter(cat, "gemini")
    assert g.classify("End", {}).attention == Attention.UNREAD
    assert g.resume_template() is None


def test_resolve_kind_uses_first_user_manifest_with_hook_content(bundled: Path, user: Path) -> None:
    w(user, "a-norules.toml", '[agent]\nkind = "claude"\nbinaries = ["cw"]\n')  # no hook content
    w(user, "b-claude.toml", '[agent]\nkind = "claude"\n[lifecycle.Stop]\nattention = "warning"\nmessage = "m"\n')
    w(user, "c-claude.toml", '[agent]\nkind = "claude"\n[lifecycle.Stop]\nattention = "error"\n')
    cat = load_catalog(user, bundled_dir=bundled)
    a = resolve_adapter(cat, "claude")
    c = a.classify("Stop", {"last_assistant_message": "hi"})
    # lifecycle falls through to the builtin; attention + message replaced; cause re-derived
    assert (c.lifecycle, c.attention, c.message, c.cause) == (Lifecycle.DONE, Attention.WARNING, "m", None)
    assert a.resume_template() == ["claude", "--resume", "{id}"]  # builtin template
    # keep = builtin value
    w(user, "b-claude.toml", '[agent]\nkind = "claude"\n[lifecycle.Stop]\nlifecycle = "keep"\nattention = "keep"\n')
    cat = load_catalog(user, bundled_dir=bundled)
    assert resolve_adapter(cat, "claude").classify("Stop", {}) == ADAPTERS["claude"].classify("Stop", {})
    # generic kind: first user generic manifest with hook content
    w(user, "tern.toml", TERN)
    cat = load_catalog(user, bundled_dir=bundled)
    assert resolve_adapter(cat, "generic").classify("TurnStarted", {}).lifecycle == Lifecycle.WORKING


def test_real_bundled_catalog_resolves_builtin_kinds() -> None:
    cat = load_catalog(None, bundled_dir=BUNDLED_DIR)
    for kind in ("claude", "codex", "opencode", "cursor", "pi", "generic"):
        a = resolve_adapter(cat, kind)
        assert a is not None
        assert a.kind == kind
    for e in cat.entries():
        a = resolve_adapter(cat, e.id)
        assert a is not None
        assert a.kind == e.kind




# --------------------------------------------------------------------------- detect index


def _linear_detect(cat: Catalog, name: str):  # the §3.1 definition, spelled out
    for group in (cat._user, cat._bundled_only):
        for generic in (False, True):
            for e in group:
                if (e.kind == "generic") == generic and e.matches(name):
                    return e
    return None


def test_detect_index_agrees_with_the_linear_definition(bundled: Path, user: Path) -> None:
    # exact names and prefixes overlapping across every rank: specific/generic, user/bundled
    w(user, "a-gen.toml", '[agent]\nkind = "generic"\nbinaries = ["x-1", "y-*", "plain", "gemini"]\n')
    w(user, "b-pi.toml", '[agent]\nkind = "pi"\nbinaries = ["x-*", "y-2", "z"]\n')
    w(user, "c-cursor.toml", '[agent]\nkind = "cursor"\nbinaries = ["x-1", "z", "muse-bin-a*"]\n')
    w(user, "d-gen.toml", '[agent]\nkind = "generic"\nbinaries = ["y-*", "q", "x-1"]\n')
    w(user, "muse.toml", '[agent]\nkind = "generic"\nbinaries = ["muse-bin-*", "mu"]\n')
    cat = load_catalog(user, bundled_dir=bundled)
    names = [
        "x-1", "x-2", "x-", "y-2", "y-3", "z", "plain", "gemini", "claude", "q", "muse",
        "muse-bin-a1", "muse-bin-b", "mu", "nothing", "x", "y-",
    ]
    for _ in range(2):  # the second round answers from the memo
        for n in names:
            assert cat.detect(n) is _linear_detect(cat, n), n
    assert cat.detect("x-1").id == "b-pi"  # a specific prefix beats a generic exact name
    assert cat.detect("y-2").id == "b-pi"  # a specific exact name beats a generic prefix
    assert cat.detect("z").id == "b-pi"  # two specific exact names: file order
    assert cat.detect("muse-bin-a1").id == "c-cursor"  # user specific beats the overridden bundled
    assert cat.detect("/usr/local/bin/q").id == "d-gen"


def test_detect_memo_is_bounded(bundled: Path) -> None:
    cat = load_catalog(None, bundled_dir=bundled)
    for i in range(DETECT_MEMO_SIZE * 2 + 10):
        assert cat.detect(f"prog{i}") is None
        assert len(cat._detect_memo) <= DETECT_MEMO_SIZE
    assert cat.detect("muse-bin-x").id == "muse"
    assert cat.detect("gemini").id == "gemini"


def test_detect_stays_fast_with_many_entries(bundled: Path, user: Path) -> None:
    # 400 files x 64 binaries (every cap at its maximum) and 100 panes' names per refresh
    for f in range(400):
        names = ", ".join(f'"t{f}-{i}"' for i in range(63)) + f', "p{f}-*"'
        w(user, f"u{f:03}.toml", f'[agent]\nkind = "generic"\nbinaries = [{names}]\n')
    cat = load_catalog(user, bundled_dir=bundled)
    assert cat.failures == []
    t0 = time.monotonic()
    for _ in range(10):
        for i in range(100):
            cat.detect(f"t{i}-5")
            cat.detect(f"sleep{i}")
    assert time.monotonic() - t0 < 0.5
    assert cat.detect("t399-62").id == "u399"
    assert cat.detect("p7-zzz").id == "u007"


# --------------------------------------------------------------------------- reload in a real daemon


def test_reload_storm_is_coalesced_and_the_loop_answers(tmp_root: Path) -> None:
    """Concurrent ``agents.reload`` calls and a burst of SIGHUPs share loads run off the loop."""
    adir = tmp_root / "agents"
    adir.mkdir()
    d = DaemonProc(tmp_root, {"SIGNALTTY_AGENTS_DIR": str(adir)})
    d.start()
    try:
        sub = d.client(timeout=10)
        sub.call("subscribe", {"events": ["agents.reloaded"]})
        w(adir, "kestrel.toml", '[agent]\nkind = "pi"\nbinaries = ["kestrel"]\n')
        results: list[dict] = []
        threads = [threading.Thread(target=lambda: results.append(d.call("agents.reload"))) for _ in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(results) == 20
        assert all(any(m["id"] == "kestrel" for m in r["manifests"]) for r in results)
        assert d.proc is not None
        for _ in range(300):
            d.proc.send_signal(signal.SIGHUP)
        assert d.call("server.status") is not None
        time.sleep(2)
        events = 0
        with contextlib.suppress(Exception):
            while True:
                sub.next_event(timeout=1)
                events += 1
        # 20 calls + 300 signals: every call waits for at most the running load and one
        # more, so a handful of loads, never one per request
        assert 1 <= events <= 12, events
        assert d.proc.poll() is None
        sub.close()
    finally:
        d.stop()
        assert not d.kill_leftovers()
