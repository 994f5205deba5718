"""Hook maps in manifests (issue 14 item 4): the schema, user rules, overrides of bundled ones,
named Python hooks, and the assembly ``server/hooks.py`` feeds the rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from signaltty.agents import hook_input
from signaltty.agents.adapters import ADAPTERS, BUILTIN_KINDS
from signaltty.agents.adapters.overlay import resolve_adapter
from signaltty.agents.catalog import BUNDLED_DIR, load_catalog
from signaltty.agents.hookrules.named import ADAPTER_HOOKS, TEXT_FUNCTIONS
from signaltty.agents.manifest import MAX_HOOK_RULES, ManifestError, load_manifest
from signaltty.core.hooks import Classification, NotificationDraft
from signaltty.core.states import Attention, Lifecycle
from tests.unit.test_rules import make_pane

REPO = Path(__file__).resolve().parents[2]
HERON = """
schema = 1
[agent]
kind = "generic"
binaries = ["heron"]

[session]
keys = ["session.id", "sessionId"]
resume = ["heron", "--session", "{id}"]

[hooks]
tool_events = ["ToolStart"]

[[hooks.rule]]
event = "Ask"
when = { field = "kind", contains = "permission" }
lifecycle = "blocked"
attention = "permission_required"
message_from = ["question", "text"]
message = "heron wants approval"
cause = "permission"
notification = { title = "Heron needs approval", body_from = ["tool"], severity = "warning" }

[[hooks.rule]]
event = "Ask"
lifecycle = "blocked"
attention = "input_required"
message_from = ["question"]
cause = "input"

[[hooks.rule]]
event = "TurnEnd"
when = [{ field = ["status", "status.type"], equals = "failed" }, { field = "code", equals = "1" }]
lifecycle = "failed"
attention = "error"
message = "turn failed"

[[hooks.rule]]
event = "TurnEnd"
lifecycle = "done"
attention = "unread"
message_from = ["summary"]
message = "turn complete"
notification = { title = "Heron turn complete", body_from = ["summary"] }

[lifecycle.TurnEnd]
message = "overlaid"
"""


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


def test_user_hook_map_classifies_by_payload(tmp_path):
    write(tmp_path, "heron.toml", HERON)
    cat = load_catalog(tmp_path)
    assert cat.failures == []
    heron = resolve_adapter(cat, "heron")
    assert heron is not None
    assert heron.kind == "generic"
    perm = {"kind": "tool_permission", "question": "run ls?", "tool": "bash"}
    assert heron.classify("Ask", perm) == Classification(
        Lifecycle.BLOCKED, Attention.PERMISSION_REQUIRED, "run ls?", cause="permission"
    )
    assert heron.notification_draft("Ask", perm) == NotificationDraft(
        "Heron needs approval", "bash", "warning"
    )
    # the second rule catches every other Ask; a number is not a message
    assert heron.classify("Ask", {"kind": 3, "question": 7}) == Classification(
        Lifecycle.BLOCKED, Attention.INPUT_REQUIRED, None, cause="input"
    )
    assert heron.notification_draft("Ask", {}) is None
    # `when` as an array: every condition must hold; status may be a string or {type}
    failed = heron.classify("TurnEnd", {"status": {"type": "failed"}, "code": "1"})
    assert (failed.lifecycle, failed.attention) == (Lifecycle.FAILED, Attention.ERROR)
    done = heron.classify("TurnEnd", {"status": "failed", "code": "2", "summary": "ok"})
    assert (done.lifecycle, done.attention) == (Lifecycle.DONE, Attention.UNREAD)
    # [lifecycle.TurnEnd] replaces single fields of the rule's answer
    assert failed.message == "overlaid"
    assert done.message == "overlaid"
    assert heron.notification_draft("TurnEnd", {"summary": "ok"}) == NotificationDraft(
        "Heron turn complete", "ok", "info"
    )
    assert heron.classify("ToolStart", {}).tool_hook
    assert not heron.classify("Other", {}).recognized
    assert heron.session_id({"session": {"id": "hs-1"}, "sessionId": "x"}) == "hs-1"
    assert heron.session_id({"sessionId": "x"}) == "x"
    assert heron.resume_template() == ["heron", "--session", "{id}"]


def test_user_override_replaces_rules_of_named_events_only(tmp_path):
    write(
        tmp_path,
        "claude.toml",
        """
[agent]
kind = "claude"
[hooks]
tool_events = ["PreToolUse"]
[[hooks.rule]]
event = "Stop"
lifecycle = "idle"
message = "my stop"
""",
    )
    cat = load_catalog(tmp_path)
    assert cat.failures == []
    claude = resolve_adapter(cat, "claude")
    assert claude is not None
    assert claude.classify("Stop", {"last_assistant_message": "hi"}) == Classification(
        Lifecycle.IDLE, None, "my stop"
    )
    assert claude.notification_draft("Stop", {}) is None  # the replaced rule had one
    builtin = ADAPTERS["claude"]
    for event, payload in [
        ("PermissionRequest", {"prompt": "May I?"}),
        ("Notification", {"notification_type": "idle_prompt"}),
        ("SessionEnd", {}),
    ]:
        assert claude.classify(event, payload) == builtin.classify(event, payload)
    # tool_events replaced as one setting: PostToolUse is an ordinary (unmapped) event now
    assert claude.classify("PreToolUse", {}).tool_hook
    assert not claude.classify("PostToolUse", {}).recognized
    assert builtin.classify("PostToolUse", {}).tool_hook


BAD_RULES = [
    ('event = "E"\ncause = "perm"', "[[hooks.rule]] #1 'E': cause: unknown cause 'perm'"),
    ('event = "E"\nnotice = true', "'notice' needs a 'cause'"),
    (
        'event = "E"\nnotice = true\ncause = "idle_prompt"\nlifecycle = "idle"',
        "a 'notice' is an alert only",
    ),
    ('event = "E"\nwhen = { field = "a" }', "a condition needs 'equals' or 'contains'"),
    ('event = "E"\nwhen = { field = "a..b", equals = "x" }', "'a..b' is not a dotted key path"),
    ('event = "E"\nmessage_fn = "nope"', "unknown text function 'nope'"),
    ('event = "E"\nlifecycle = "exited"', "unknown lifecycle 'exited'"),
    ('event = "E"\nattention = "keep"', "unknown attention 'keep'"),
    ('event = "E"\nnotification = { body = "x" }', "notification.title: Field required"),
    ('event = ""', "event: String should have at least 1 character"),
    ('event = "T"', "'T' is a tool event, so no rule applies to it"),
    ('message = "x"', "[[hooks.rule]] #1: event: Field required"),
]


@pytest.mark.parametrize(("rule", "error"), BAD_RULES)
def test_bad_hook_rules_fail_the_file_with_the_table_named(tmp_path, rule, error):
    path = write(
        tmp_path,
        "x.toml",
        f'[agent]\nkind = "generic"\n[hooks]\ntool_events = ["T"]\n[[hooks.rule]]\n{rule}\n',
    )
    with pytest.raises(ManifestError) as exc:
        load_manifest(path, "user")
    assert error in exc.value.error


@pytest.mark.parametrize(
    ("hooks", "error"),
    [
        ('adapter = "mine"', "[hooks] adapter: unknown adapter 'mine' (one of codex_title)"),
        ('answer = "keys"', "[hooks] answer:"),
        ('tool_events = "PreToolUse"', "expected an array of strings, got a string"),
        ("rule = 3", "[[hooks.rule]]: must be an array of tables"),
    ],
)
def test_bad_hooks_table(tmp_path, hooks, error):
    path = write(tmp_path, "x.toml", f'[agent]\nkind = "generic"\n[hooks]\n{hooks}\n')
    with pytest.raises(ManifestError) as exc:
        load_manifest(path, "user")
    assert error in exc.value.error


def test_too_many_rules_refused_before_validating_them(tmp_path):
    rules = "".join('[[hooks.rule]]\nevent = "E"\n' for _ in range(MAX_HOOK_RULES + 1))
    path = write(tmp_path, "x.toml", f'[agent]\nkind = "generic"\n{rules}')
    with pytest.raises(ManifestError) as exc:
        load_manifest(path, "user")
    assert exc.value.error == f"[[hooks.rule]]: too many rules (257, max {MAX_HOOK_RULES})"


# Attack pass 4, N9: a known table given the wrong type, or a top-level table name that TOML
# put inside the table before it (``hooks = 5`` after ``[agent]`` is ``[agent] hooks``).
_AGENT = '[agent]\nkind = "generic"\n'


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("hooks = 5\n" + _AGENT, "[hooks]: must be a table"),
        ("hooks = []\n" + _AGENT, "[hooks]: must be a table"),
        ("session = 5\n" + _AGENT, "[session]: must be a table"),
        ('launch = "x"\n' + _AGENT, "[launch]: must be a table"),
        ("agent = 5\n", "[agent]: must be a table"),
        ("title_status = 5\n" + _AGENT, "[title_status]: must be a table"),
        ("lifecycle = 5\n" + _AGENT, "[lifecycle]: must contain [lifecycle.<Event>] tables"),
        ("lifecycle = { Stop = 5 }\n" + _AGENT, "[lifecycle.Stop]: must be a table"),
        ("screen = 5\n" + _AGENT, "[[screen]]: must be an array of tables"),
        (_AGENT + '[screen]\nname = "a"\n', "[[screen]]: must be an array of tables"),
        (_AGENT + '[hooks.rule]\nevent = "E"\n', "[[hooks.rule]]: must be an array of tables"),
        (_AGENT + "[hooks]\nrule = [5]\n", "[[hooks.rule]] #1: must be a table"),
        (_AGENT + "[launch]\nprompt = 5\n", "[launch] prompt:"),
        (_AGENT + "[session]\ndiscover = 5\n", "[session] discover:"),
        # the report's file: `hooks = 5` written last lands in [agent]
        (_AGENT + "hooks = 5\n", "[agent] hooks: 'hooks' is a top-level table"),
        (_AGENT + "[launch]\nsession = { keys = [] }\n", "[launch] session: 'session' is a top"),
        (_AGENT + '[session]\nscreen = "x"\n', "[session] screen: 'screen' is a top-level"),
        (_AGENT + "[hooks]\nlifecycle = 1\n", "[hooks] lifecycle: 'lifecycle' is a top-level"),
        (
            _AGENT + '[[hooks.rule]]\nevent = "E"\nhooks = 1\n',
            "[[hooks.rule]] #1 hooks: 'hooks' is a top-level table",
        ),
        (
            _AGENT + '[lifecycle.Stop]\nmessage = "m"\nsession = 1\n',
            "[lifecycle.Stop] session: 'session' is a top-level table",
        ),
    ],
)
def test_misplaced_or_mistyped_tables_are_refused(tmp_path, text, error):
    path = write(tmp_path, "x.toml", text)
    with pytest.raises(ManifestError) as exc:
        load_manifest(path, "user")
    assert error in exc.value.error


def test_lifecycle_key_of_a_rule_is_still_allowed(tmp_path):
    text = _AGENT + '[[hooks.rule]]\nevent = "E"\nlifecycle = "done"\n'
    assert load_manifest(write(tmp_path, "x.toml", text), "user").hooks is not None


def test_session_keys_must_be_paths(tmp_path):
    path = write(tmp_path, "x.toml", '[agent]\nkind = "generic"\n[session]\nkeys = ["a.", "b"]\n')
    with pytest.raises(ManifestError) as exc:
        load_manifest(path, "user")
    assert exc.value.error == "[session] keys: 'a.' is not a dotted key path"


def test_builtin_kinds_are_their_bundled_manifests():
    """One place says how a built-in agent is understood: its bundled file."""
    cat = load_catalog(None)
    for kind in BUILTIN_KINDS:
        adapter = ADAPTERS[kind]
        if kind == "generic":
            assert adapter.hooks.rules == {}
            assert adapter.session_keys == ("session_id",)
            continue
        entry = cat.entry(kind)
        assert entry is not None
        assert entry.kind == kind
        assert adapter.hooks == entry.hooks
        assert entry.hooks.rules
        assert adapter.session_keys == entry.session_keys
        assert adapter.resume == entry.resume
        assert adapter.display_name == entry.display_name
        assert adapter.builtin_names == frozenset(entry.binaries)
    adapters_dir = REPO / "signaltty" / "agents" / "adapters"
    assert not {p.stem for p in adapters_dir.glob("*.py")} & set(BUILTIN_KINDS)


def test_every_named_hook_is_used_and_documented():
    bundled = "".join(p.read_text() for p in sorted(BUNDLED_DIR.glob("*.toml")))
    docs = (REPO / "docs" / "manifests.md").read_text()
    for name in (*ADAPTER_HOOKS, *TEXT_FUNCTIONS):
        assert re.search(rf'(adapter|message_fn|body_fn) = "{name}"', bundled), name
        assert f"| `{name}` |" in docs, name


def test_assembly_feeds_the_rules_what_the_adapter_says():
    claude = ADAPTERS["claude"]
    pane = make_pane("claude", "working")
    payload = {"session_id": "S1", "tool_name": "Bash", "last_assistant_message": "done"}
    hook = hook_input.assemble(
        claude,
        pane,
        "Stop",
        payload,
        session_id="S1",
        decision=None,
        native_route=False,
        notification_id="notif_1",
    )
    assert hook.classification == claude.classify("Stop", payload)
    assert hook.draft == claude.notification_draft("Stop", payload)
    assert hook.resume_argv == ["claude", "--resume", "S1"]
    assert hook.resume_source == "adapter"
    assert hook.tool_name == "Bash"
    assert hook.answer_channel is False
    # a reported resume command equal to the template's result stays "reported"
    pane.agent.resume_source = "reported"
    pane.agent.resume_argv = ["claude", "--resume", "S1"]
    again = hook_input.assemble(
        claude,
        pane,
        "Stop",
        payload,
        session_id="S1",
        decision=None,
        native_route=False,
        notification_id="notif_2",
    )
    assert again.resume_source == "reported"
    codex = hook_input.assemble(
        ADAPTERS["codex"],
        pane,
        "Stop",
        {"tool_name": "x" * 201},
        session_id=None,
        decision=None,
        native_route=False,
        notification_id="notif_3",
    )
    assert codex.answer_channel is True
    assert codex.tool_name is None
    assert codex.resume_argv is None
