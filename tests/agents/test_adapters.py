"""Builtin adapters: every row of agents.md §2, the real captured payloads, odd payloads, and
the research facts about each CLI (shared/research/real-agents.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from signaltty.agents.adapters import ADAPTERS, adapter_for
from signaltty.agents.adapters.base import Adapter, dig, is_valid_session_id, text
from signaltty.agents.hookrules.named import TITLE_PROMPT_PREFIX, is_title_thread
from signaltty.agents.registry import builtin_kind, detect_kind, display_name_for
from signaltty.core.hooks import Classification, NotificationDraft
from signaltty.core.states import ATTENTION_RANK, Attention, Lifecycle

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real-agents"

W, B, D, IDLE, F = (
    Lifecycle.WORKING,
    Lifecycle.BLOCKED,
    Lifecycle.DONE,
    Lifecycle.IDLE,
    Lifecycle.FAILED,
)
NONE, UNREAD, INPUT, PERM, ERR = (
    Attention.NONE,
    Attention.UNREAD,
    Attention.INPUT_REQUIRED,
    Attention.PERMISSION_REQUIRED,
    Attention.ERROR,
)
TOOL = "tool"
UNREC = "unrecognized"


def C(lifecycle=None, attention=None, message=None, cause=None) -> Classification:
    return Classification(lifecycle=lifecycle, attention=attention, message=message, cause=cause)


def fixture(agent: str) -> dict[str, Any]:
    path = FIXTURES / agent / "hook_samples.json"
    assert path.is_file(), f"missing fixture {path}"
    return json.loads(path.read_text())


# ---------------------------------------------------------------- agents.md §2 tables

ROWS: list[tuple[str, str, Any, Any]] = [
    # 2.1 Claude Code
    ("claude", "SessionStart", {"session_id": "S1"}, C(IDLE, None, "session started")),
    ("claude", "UserPromptSubmit", {"prompt": "fix"}, C(W, NONE)),
    ("claude", "PreToolUse", {"tool_name": "Bash"}, TOOL),
    ("claude", "PostToolUse", {}, TOOL),
    ("claude", "PreCompact", {}, TOOL),
    ("claude", "SubagentStop", {}, TOOL),
    (
        "claude",
        "PermissionRequest",
        {"prompt": "May I?", "message": "m"},
        C(B, PERM, "May I?", "permission"),
    ),
    ("claude", "PermissionRequest", {"message": "m"}, C(B, PERM, "m", "permission")),
    ("claude", "PermissionRequest", {}, C(B, PERM, "permission requested", "permission")),
    (
        "claude",
        "PermissionRequest",
        {"prompt": "  ", "message": 7},
        C(B, PERM, "permission requested", "permission"),
    ),
    (
        "claude",
        "Notification",
        {"notification_type": "permission_prompt", "message": "need"},
        C(B, PERM, "need", "permission"),
    ),
    (
        "claude",
        "Notification",
        {"notification_type": "idle_prompt", "message": "wait"},
        Classification(cause="idle_prompt", notice=True),  # issue 11 item 8: an alert only
    ),
    (
        "claude",
        "Notification",
        {"notification_type": "elicitation_dialog", "message": "q"},
        C(B, INPUT, "q", "input"),
    ),
    ("claude", "Notification", {"message": "q"}, C(B, INPUT, "q", "input")),
    ("claude", "Notification", {}, C(B, INPUT, None, "input")),
    (
        "claude",
        "Stop",
        {"last_assistant_message": "All tests pass."},
        C(D, UNREAD, "All tests pass.", "turn_done"),
    ),
    ("claude", "Stop", {}, C(D, UNREAD, "turn complete", "turn_done")),
    ("claude", "SessionEnd", {"reason": "other"}, C(D, UNREAD, "session ended", "session_end")),
    ("claude", "MessageDisplay", {"delta": "hi"}, UNREC),
    ("claude", "stop", {}, UNREC),  # names match exactly
    # 2.2 Codex
    ("codex", "SessionStart", {"session_id": "T"}, C(IDLE, None, "session started")),
    ("codex", "UserPromptSubmit", {}, C(W, NONE)),
    ("codex", "PreToolUse", {}, TOOL),
    ("codex", "PostToolUse", {}, TOOL),
    ("codex", "PreCompact", {}, TOOL),
    ("codex", "PostCompact", {}, TOOL),
    (
        "codex",
        "PermissionRequest",
        {"tool_name": "shell"},
        C(B, PERM, "approval requested", "permission"),
    ),
    ("codex", "Stop", {"last_assistant_message": "done"}, C(D, UNREAD, "done", "turn_done")),
    ("codex", "Stop", {}, C(D, UNREAD, "turn complete", "turn_done")),
    (
        "codex",
        "agent-turn-complete",
        {"type": "agent-turn-complete", "last-assistant-message": "ok"},
        C(D, UNREAD, "ok", "turn_done"),
    ),
    (
        "codex",
        "agent-turn-complete",
        {"last_assistant_message": "ok2"},
        C(D, UNREAD, "ok2", "turn_done"),
    ),
    (
        "codex",
        "agent-turn-complete",
        {"last-assistant-message": None},
        C(D, UNREAD, "turn complete", "turn_done"),
    ),
    ("codex", "SessionEnd", {}, C(D, UNREAD, "session ended", "session_end")),
    ("codex", "SubagentStop", {}, UNREC),
    ("codex", "SubagentStart", {"session_id": "T"}, UNREC),
    ("codex", "Notification", {}, UNREC),
    # Decision (codex.toml, the Interrupt rule): the user ended the turn at the keyboard.
    ("codex", "Interrupt", {"turn_id": "t"}, C(IDLE, NONE, "turn interrupted")),
    # 2.3 OpenCode
    ("opencode", "session.created", {"properties": {"info": {"id": "ses_1"}}}, C(IDLE)),
    ("opencode", "session.status", {"status": "busy"}, C(W, NONE)),
    ("opencode", "session.status", {"status": {"type": "busy"}}, C(W, NONE)),
    ("opencode", "session.status", {"properties": {"status": {"type": "busy"}}}, C(W, NONE)),
    ("opencode", "session.status", {"status": "idle"}, C(D, UNREAD, "session idle", "turn_done")),
    (
        "opencode",
        "session.status",
        {"status": {"type": "idle"}},
        C(D, UNREAD, "session idle", "turn_done"),
    ),
    ("opencode", "session.status", {"status": {"type": "retry"}}, UNREC),
    ("opencode", "session.status", {}, UNREC),
    ("opencode", "session.idle", {}, C(D, UNREAD, "session idle", "turn_done")),
    ("opencode", "session.error", {"message": "rate limited"}, C(F, ERR, "rate limited", "error")),
    (
        "opencode",
        "session.error",
        {"error": {"name": "APIError", "data": {"message": "quota exceeded"}}},
        C(F, ERR, "quota exceeded", "error"),
    ),
    (
        "opencode",
        "session.error",
        {"properties": {"error": {"data": {"message": "auth"}}}},
        C(F, ERR, "auth", "error"),
    ),
    ("opencode", "session.error", {}, C(F, ERR, "session error", "error")),
    ("opencode", "permission.asked", {"sessionID": "ses_1"}, UNREC),
    # 2.4 Cursor Agent
    ("cursor", "sessionStart", {"session_id": "c1"}, C(IDLE)),
    ("cursor", "beforeSubmitPrompt", {}, C(W, NONE)),
    ("cursor", "preToolUse", {}, TOOL),
    ("cursor", "postToolUse", {}, TOOL),
    ("cursor", "stop", {"status": "completed"}, C(D, UNREAD, "turn complete", "turn_done")),
    ("cursor", "sessionEnd", {}, C(D, UNREAD, "session ended", "session_end")),
    ("cursor", "Stop", {}, UNREC),
    # Pi: the managed extension's events (issue 11); generic: hooks classify nothing
    ("pi", "session_start", {"type": "session_start"}, C(IDLE)),
    ("pi", "agent_start", {}, C(W, NONE)),
    ("pi", "agent_end", {}, C(D, UNREAD, "turn finished", "turn_done")),
    ("pi", "PermissionRequest", {"tool_name": "Permission required",
                                 "tool_input": {"title": "Permission required", "message": "Allow: touch x?"}},
     C(B, PERM, "Allow: touch x?", "permission")),
    ("pi", "permission_replied", {"answer": True}, C(W, NONE)),
    ("pi", "Stop", {}, UNREC),
    ("generic", "Stop", {}, UNREC),
    ("generic", "SessionStart", {"session_id": "g"}, UNREC),
    ("generic", "PreToolUse", {}, UNREC),
]


@pytest.mark.parametrize(("agent", "event", "payload", "expected"), ROWS)
def test_table_rows(agent, event, payload, expected):
    adapter = ADAPTERS[agent]
    got = adapter.classify(event, payload)
    if expected == TOOL:
        assert got == Classification(tool_hook=True)
        assert got.recognized
        assert adapter.is_tool_hook(event)
    elif expected == UNREC:
        assert got == Classification()
        assert not got.recognized
    else:
        assert got == expected
        assert not adapter.is_tool_hook(event)


DRAFTS: list[tuple[str, str, Any, NotificationDraft | None]] = [
    (
        "claude",
        "PermissionRequest",
        {"tool_name": "Bash"},
        NotificationDraft("Claude needs approval", "Bash", "warning"),
    ),
    (
        "claude",
        "PermissionRequest",
        {},
        NotificationDraft("Claude needs approval", None, "warning"),
    ),
    (
        "claude",
        "Notification",
        {"notification_type": "permission_prompt", "message": "m"},
        NotificationDraft("Claude needs approval", "m", "warning"),
    ),
    (
        "claude",
        "Notification",
        {"notification_type": "idle_prompt", "message": "w"},
        NotificationDraft("Claude needs input", "w", "info"),
    ),
    (
        "claude",
        "Stop",
        {"last_assistant_message": "ok"},
        NotificationDraft("Claude turn complete", "ok", "info"),
    ),
    ("claude", "Stop", {}, NotificationDraft("Claude turn complete", None, "info")),
    ("claude", "SessionStart", {}, None),
    ("claude", "UserPromptSubmit", {}, None),
    ("claude", "SessionEnd", {}, None),
    ("claude", "PreToolUse", {"tool_name": "Bash"}, None),
    (
        "codex",
        "PermissionRequest",
        {"tool_name": "shell"},
        NotificationDraft("Codex needs approval", "shell", "warning"),
    ),
    (
        "codex",
        "PermissionRequest",
        {"description": "wants net"},
        NotificationDraft("Codex needs approval", "wants net", "warning"),
    ),
    (
        "codex",
        "PermissionRequest",
        {"tool_input": {"description": "why"}},
        NotificationDraft("Codex needs approval", "why", "warning"),
    ),
    (
        "codex",
        "Stop",
        {"last_assistant_message": "done"},
        NotificationDraft("Codex turn complete", "done", "info"),
    ),
    (
        "codex",
        "agent-turn-complete",
        {"last-assistant-message": "d2"},
        NotificationDraft("Codex turn complete", "d2", "info"),
    ),
    ("codex", "SessionEnd", {}, None),
    ("codex", "Interrupt", {}, None),
    (
        "opencode",
        "session.status",
        {"status": "idle"},
        NotificationDraft("OpenCode session idle", None, "info"),
    ),
    ("opencode", "session.idle", {}, NotificationDraft("OpenCode session idle", None, "info")),
    (
        "opencode",
        "session.error",
        {"message": "rate limited"},
        NotificationDraft("OpenCode session error", "rate limited", "error"),
    ),
    ("opencode", "session.error", {}, NotificationDraft("OpenCode session error", None, "error")),
    ("opencode", "session.status", {"status": "busy"}, None),
    ("opencode", "session.created", {}, None),
    ("cursor", "stop", {}, NotificationDraft("Cursor turn complete", None, "info")),
    ("cursor", "sessionEnd", {}, None),
    ("pi", "agent_end", {}, None),
    ("pi", "PermissionRequest", {"tool_input": {"message": "Allow: ls?"}},
     NotificationDraft("Pi needs approval", "Allow: ls?", "warning")),
    ("generic", "Stop", {}, None),
]


@pytest.mark.parametrize(("agent", "event", "payload", "expected"), DRAFTS)
def test_notification_drafts(agent, event, payload, expected):
    assert ADAPTERS[agent].notification_draft(event, payload) == expected


SESSION_IDS: list[tuple[str, Any, str | None]] = [
    ("claude", {"session_id": "S1"}, "S1"),
    ("claude", {"sessionId": "S1"}, None),
    ("codex", {"session_id": "T", "thread-id": "X"}, "T"),
    ("codex", {"thread-id": "X"}, "X"),
    ("opencode", {"session_id": "a", "sessionID": "b"}, "a"),
    ("opencode", {"sessionID": "b"}, "b"),
    ("opencode", {"properties": {"sessionID": "c"}}, "c"),
    ("opencode", {"properties": {"info": {"id": "ses_1"}}}, "ses_1"),
    ("cursor", {"session_id": "1", "sessionId": "2"}, "1"),
    ("cursor", {"sessionId": "2", "conversation_id": "3"}, "2"),
    ("cursor", {"conversation_id": "3", "chatId": "4"}, "3"),
    ("cursor", {"chatId": "4"}, "4"),
    ("pi", {"session_id": "p1"}, "p1"),
    ("generic", {"session_id": "g1"}, "g1"),
    # invalid values count as absent; the next field is tried
    ("cursor", {"session_id": 5, "sessionId": "2"}, "2"),
    ("claude", {"session_id": ""}, None),
    ("claude", {"session_id": "   "}, None),
    ("claude", {"session_id": "a\nb"}, None),
    ("claude", {"session_id": "x" * 128}, "x" * 128),
    ("claude", {"session_id": "x" * 129}, None),
    # issue 10 item 4: an id that could be read as an option is rejected, and the next
    # field is not tried in its place
    ("claude", {"session_id": "--dangerously-skip-permissions"}, None),
    ("codex", {"session_id": "--dangerously-bypass-approvals-and-sandbox", "thread-id": "X"}, None),
    ("opencode", {"session_id": "a b", "sessionID": "b"}, None),
    ("opencode", {"properties": {"info": "ses_1"}}, None),
]


@pytest.mark.parametrize(("agent", "payload", "expected"), SESSION_IDS)
def test_session_ids(agent, payload, expected):
    assert ADAPTERS[agent].session_id(payload) == expected


@pytest.mark.parametrize(
    ("kind", "display", "resume", "channel", "names"),
    [
        ("claude", "Claude Code", ["claude", "--resume", "{id}"], None, ("claude",)),
        ("codex", "Codex", ["codex", "resume", "{id}"], "typed_text", ("codex",)),
        ("opencode", "OpenCode", ["opencode", "--session", "{id}"], None, ("opencode",)),
        ("cursor", "Cursor Agent", ["cursor-agent", "--resume", "{id}"], None, ("cursor-agent",)),
        ("pi", "Pi", ["pi", "--session", "{id}"], None, ("pi",)),
        ("generic", "Terminal", None, None, ()),
    ],
)
def test_adapter_identity(kind, display, resume, channel, names):
    adapter = adapter_for(kind)
    assert adapter is not None
    assert adapter.kind == kind
    assert adapter.display_name == display == display_name_for(kind)
    assert adapter.default_title == display
    assert adapter.resume_template() == resume
    assert adapter.answer_channel() == channel
    assert adapter.builtin_names == frozenset(names)
    if resume is not None:  # a fresh copy each time
        adapter.resume_template().append("x")
        assert adapter.resume_template() == resume


@pytest.mark.parametrize("name", ["none", "gemini", "", "Claude", "cursor-agent"])
def test_adapter_for_unknown(name):
    assert adapter_for(name) is None


@pytest.mark.parametrize(
    ("program", "builtin", "kind"),
    [
        ("codex", "codex", "codex"),
        ("claude", "claude", "claude"),
        ("opencode", "opencode", "opencode"),
        ("cursor-agent", "cursor", "cursor"),
        ("pi", "pi", "pi"),
        ("/opt/tools/codex", "codex", "codex"),
        ("agent", None, "generic"),  # may be Grok; Cursor aliases need a manifest
        ("cursor", None, "generic"),
        ("gemini", None, "generic"),
        ("Codex", None, "generic"),
        ("bash", None, "generic"),
        ("", None, "generic"),
    ],
)
def test_kind_detection(program, builtin, kind):
    assert builtin_kind(program) == builtin
    assert detect_kind(program) == kind


def test_display_name_for_none_and_unknown():
    assert display_name_for("none") == "Terminal"
    assert display_name_for("gemini") == "Terminal"


# ---------------------------------------------------------------- real captured payloads


def _events(agent: str) -> list[tuple[str, str, Any]]:
    """(fixture key, event name as hook-event receives it, payload)."""
    out = []
    for key, payload in fixture(agent).items():
        event = key
        if agent == "codex" and key == "notify":
            # notify passes the JSON as argv[1]; the reporter's --event defaults to its type
            payload = payload["argv[1] (JSON)"]
            event = payload["type"]
        elif agent == "opencode" and key.startswith("event:"):
            event = key.removeprefix("event:")
        out.append((key, event, payload))
    return out


CLAUDE_SID = "8d27a2e7-b7c5-4958-9786-6f1975e1e647"
CODEX_SID = "01a22b73-0d6f-7052-942e-cc19b177baef"
OPENCODE_SID = "ses_dd48edc05ffeWB7b8Hs560gm76"
GEMINI_SID = "a92fbd97-efe0-45dd-a997-596dc22e84e8"

# (agent adapter, fixture dir) → fixture key → (expected classification, expected session id)
FIXTURE_EXPECTED: dict[tuple[str, str], dict[str, tuple[Any, str | None]]] = {
    ("claude", "claude"): {
        "SessionStart": (C(IDLE, None, "session started"), CLAUDE_SID),
        "UserPromptSubmit": (C(W, NONE), CLAUDE_SID),
        "MessageDisplay": (UNREC, CLAUDE_SID),
        "Stop": (
            C(D, UNREAD, "Hello from the mock model! (no real LLM here)", "turn_done"),
            CLAUDE_SID,
        ),
        "PreToolUse": (TOOL, CLAUDE_SID),
        "PermissionRequest": (C(B, PERM, "permission requested", "permission"), CLAUDE_SID),
        "PostToolUse": (TOOL, CLAUDE_SID),
        "PostToolBatch": (UNREC, CLAUDE_SID),
        "Notification": (
            Classification(cause="idle_prompt", notice=True),
            CLAUDE_SID,
        ),
        "SessionEnd": (C(D, UNREAD, "session ended", "session_end"), CLAUDE_SID),
    },
    ("codex", "codex"): {
        "SessionStart": (C(IDLE, None, "session started"), CODEX_SID),
        "UserPromptSubmit": (C(W, NONE), CODEX_SID),
        "Stop": (
            C(D, UNREAD, "Hello from the mock model! (no real LLM here)", "turn_done"),
            CODEX_SID,
        ),
        "notify": (UNREC, None),  # the hidden title thread
        "PreToolUse": (TOOL, CODEX_SID),
        "PermissionRequest": (C(B, PERM, "approval requested", "permission"), CODEX_SID),
        "PostToolUse": (TOOL, CODEX_SID),
        "Interrupt": (C(IDLE, NONE, "turn interrupted"), CODEX_SID),
        "SessionEnd": (C(D, UNREAD, "session ended", "session_end"), CODEX_SID),
    },
    ("opencode", "opencode"): {
        "plugin.init": (UNREC, None),
        "event:catalog.updated": (UNREC, None),
        "event:reference.updated": (UNREC, None),
        "event:integration.updated": (UNREC, None),
        "event:session.created": (C(IDLE), OPENCODE_SID),
        "chat.message": (UNREC, None),
        "event:message.updated": (UNREC, OPENCODE_SID),
        "event:message.part.updated": (UNREC, OPENCODE_SID),
        "event:session.updated": (UNREC, OPENCODE_SID),
        "event:session.status": (C(W, NONE), OPENCODE_SID),
        "event:session.diff": (UNREC, OPENCODE_SID),
        "event:session.idle": (C(D, UNREAD, "session idle", "turn_done"), OPENCODE_SID),
        "tool.execute.before": (UNREC, None),
        "event:permission.asked": (UNREC, OPENCODE_SID),
        "event:permission.replied": (C(W, NONE), OPENCODE_SID),  # issue 11 item 6: withdraws the request
        "tool.execute.after": (UNREC, None),
        "decision.sent": (UNREC, None),
    },
    # the research harness's raw event names: the managed extension reports three of them
    ("pi", "pi"): {
        "session_start": (C(IDLE), None),
        "agent_start": (C(W, NONE), None),
        "agent_end": (C(D, UNREAD, "turn finished", "turn_done"), None),
    } | {
        key: (UNREC, None)
        for key in (
            "input",
            "before_agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "turn_end",
            "tool_execution_start",
            "tool_call",
            "permission.decision",
            "tool_result",
            "tool_execution_end",
            "session_shutdown",
        )
    },
    # Gemini has no builtin kind: its hooks reach the generic adapter until a manifest maps them.
    ("generic", "gemini"): {
        key: (UNREC, GEMINI_SID)
        for key in (
            "SessionStart",
            "BeforeAgent",
            "PreCompress",
            "BeforeModel",
            "BeforeToolSelection",
            "AfterModel",
            "AfterAgent",
            "BeforeTool",
            "Notification",
            "AfterTool",
            "SessionEnd",
        )
    },
}


@pytest.mark.parametrize(("agent", "source"), list(FIXTURE_EXPECTED))
def test_every_fixture_event_is_expected(agent, source):
    assert {key for key, _, _ in _events(source)} == set(FIXTURE_EXPECTED[(agent, source)])


FIXTURE_CASES = [
    pytest.param(agent, source, key, id=f"{source}:{key}")
    for (agent, source), table in FIXTURE_EXPECTED.items()
    for key in table
]


@pytest.mark.parametrize(("agent", "source", "key"), FIXTURE_CASES)
def test_real_payloads(agent, source, key):
    adapter = ADAPTERS[agent]
    event, payload = next((ev, p) for k, ev, p in _events(source) if k == key)
    expected, sid = FIXTURE_EXPECTED[(agent, source)][key]
    got = adapter.classify(event, payload)
    if expected == TOOL:
        assert got.tool_hook
        assert got.lifecycle is None
        assert got.attention is None
    elif expected == UNREC:
        assert not got.recognized
    else:
        assert got == expected
    assert adapter.session_id(payload) == sid


def test_real_claude_permission_request_draft():
    payload = fixture("claude")["PermissionRequest"]
    draft = ADAPTERS["claude"].notification_draft("PermissionRequest", payload)
    assert draft == NotificationDraft("Claude needs approval", "Bash", "warning")


# ---------------------------------------------------------------- odd payloads never raise

ODD_PAYLOADS: list[Any] = [
    None, [], [1, 2], "text", 0, 3.5, True, {},
    {"session_id": 5}, {"session_id": None}, {"session_id": ["S"]}, {"session_id": {"a": 1}},
    {"session_id": "\x00"}, {"session_id": "s" * 10_000},
    {"notification_type": 3, "message": [1]}, {"notification_type": None},
    {"notification_type": ["permission"]}, {"prompt": {}, "message": None},
    {"last_assistant_message": 42, "last-assistant-message": {"x": 1}},
    {"status": 7}, {"status": {"type": None}}, {"status": ["busy"]}, {"status": {"type": {"a": 1}}},
    {"properties": "x"}, {"properties": {"info": None, "sessionID": 3, "status": "busy"}},
    {"error": "boom"}, {"error": {"data": "x"}}, {"error": {"data": {"message": 9}}},
    {"input-messages": "Generate a concise, single-line task title"}, {"input-messages": [None]},
    {"input-messages": []}, {"input-messages": [{"text": "x"}]}, {"thread-id": 9},
    {"tool_name": 1, "description": [], "tool_input": "x"}, {"tool_input": {"description": 3}},
    {"sessionId": 1.5, "conversation_id": False, "chatId": None},
]  # fmt: skip
ALL_EVENTS = sorted({event for _, event, _, _ in ROWS} | {"", "x" * 200, "\x00", "Interrupt"})


@pytest.mark.parametrize("agent", sorted(ADAPTERS))
@pytest.mark.parametrize("payload", ODD_PAYLOADS, ids=lambda p: json.dumps(p)[:40])
def test_odd_payloads_never_raise(agent, payload):
    adapter = ADAPTERS[agent]
    for event in ALL_EVENTS:
        c = adapter.classify(event, payload)
        assert isinstance(c, Classification)
        assert c.message is None or (isinstance(c.message, str) and c.message.strip())
        draft = adapter.notification_draft(event, payload)
        assert draft is None or isinstance(draft, NotificationDraft)
        assert draft is None or draft.body is None or isinstance(draft.body, str)
        assert isinstance(adapter.is_auxiliary(event, payload, None), bool)
        assert isinstance(adapter.is_auxiliary(event, payload, "S"), bool)
    sid = adapter.session_id(payload)
    assert sid is None or is_valid_session_id(sid)


@pytest.mark.parametrize(
    ("payload", "path", "expected"),
    [
        ({"a": {"b": {"c": 1}}}, "a.b.c", 1),
        ({"a": {"b": [1]}}, "a.b.0", None),
        ({"a": 1}, "a.b", None),
        (None, "a", None),
        ([{"a": 1}], "a", None),
        ({"a.b": 1}, "a.b", None),
    ],
)
def test_dig(payload, path, expected):
    assert dig(payload, path) == expected


def test_text_first_non_blank_string():
    assert text({"a": "", "b": 3, "c": "  ", "d": "yes"}, "a", "b", "c", "d") == "yes"
    assert text({"a": " keep "}, "a") == " keep "
    assert text("nope", "a") is None


# ---------------------------------------------------------------- research facts as tests


def fold(
    adapter: Adapter, hooks: list[tuple[str, Any]], start=(Lifecycle.UNKNOWN, NONE), known=None
):
    """A minimal model of states.md §3.1 steps 7, 9, 11, 12 for adapter facts.

    Returns (lifecycle, attention, session id, number of hooks that changed the lifecycle).
    Auxiliary hooks are skipped as the rules drop them.
    """
    lifecycle, attention = start
    changes = 0
    for event, payload in hooks:
        if adapter.is_auxiliary(event, payload, known):
            continue
        known = adapter.session_id(payload) or known
        c = adapter.classify(event, payload)
        if c.tool_hook and lifecycle == Lifecycle.BLOCKED:
            continue
        if c.lifecycle is not None and c.lifecycle != lifecycle:
            lifecycle, changes = c.lifecycle, changes + 1
        if c.attention == NONE:
            attention = NONE
        elif c.attention is not None and ATTENTION_RANK[c.attention] > ATTENTION_RANK[attention]:
            attention = c.attention
    return lifecycle, attention, known, changes


def test_claude_esc_interrupt_fires_no_hook():
    """Fact: Esc while streaming fires no hook; only the earlier UserPromptSubmit arrived.

    The adapter therefore has no interrupt event and the pane stays working (the screen
    rules and stuck recovery end it).
    """
    claude = ADAPTERS["claude"]
    assert not claude.classify("Interrupt", {"session_id": "S"}).recognized
    assert fold(claude, [("UserPromptSubmit", {"prompt": "slow"})])[:2] == (W, NONE)


def test_claude_no_answer_fires_no_hook():
    """Fact: answering "No" in the dialog fires nothing (no Stop, no PermissionDenied)."""
    claude = ADAPTERS["claude"]
    hooks = [
        ("UserPromptSubmit", {}),
        ("PreToolUse", {}),
        ("PermissionRequest", {"tool_name": "Bash"}),
    ]
    assert fold(claude, hooks)[:2] == (B, PERM)
    # the next prompt is what moves the pane on
    assert fold(claude, [*hooks, ("UserPromptSubmit", {"prompt": "instead"})])[:2] == (W, NONE)


def test_claude_late_permission_notification_restates():
    """Fact: Notification permission_prompt arrives ~6 s after PermissionRequest."""
    claude = ADAPTERS["claude"]
    request = claude.classify("PermissionRequest", {"tool_name": "Bash"})
    late = claude.classify(
        "Notification",
        {"notification_type": "permission_prompt", "message": "Claude needs your permission"},
    )
    assert (late.lifecycle, late.attention, late.cause) == (
        request.lifecycle,
        request.attention,
        request.cause,
    )
    hooks = [("PermissionRequest", {"tool_name": "Bash"})]
    later = [*hooks, ("Notification", {"notification_type": "permission_prompt"})]
    assert fold(claude, hooks, start=(W, NONE))[3] == fold(claude, later, start=(W, NONE))[3] == 1


def test_claude_clear_gives_new_session():
    """Fact: /clear fires SessionEnd then SessionStart with a new session_id."""
    claude = ADAPTERS["claude"]
    end = {"session_id": "S1", "reason": "clear"}
    start = {"session_id": "S2", "source": "clear"}
    assert claude.classify("SessionEnd", end).cause == "session_end"
    assert claude.classify("SessionStart", start).lifecycle == IDLE
    assert fold(claude, [("SessionEnd", end), ("SessionStart", start)], known="S1")[2] == "S2"


@pytest.mark.parametrize("order", [("MessageDisplay", "Stop"), ("Stop", "MessageDisplay")])
def test_claude_message_display_and_stop_in_either_order(order):
    """Fact: after "hello", MessageDisplay and Stop arrive in either order."""
    claude = ADAPTERS["claude"]
    samples = fixture("claude")
    hooks = [("UserPromptSubmit", samples["UserPromptSubmit"]), *((e, samples[e]) for e in order)]
    assert fold(claude, hooks)[:2] == (D, UNREAD)


def test_codex_title_thread_notify_does_not_clobber_pane():
    """Fact: the TUI's hidden title thread fires notify with its own thread-id."""
    codex = ADAPTERS["codex"]
    title = fixture("codex")["notify"]["argv[1] (JSON)"]
    assert is_title_thread(title)
    assert title["input-messages"][0].startswith(TITLE_PROMPT_PREFIX)
    assert not codex.classify("agent-turn-complete", title).recognized
    assert codex.session_id(title) is None
    assert codex.notification_draft("agent-turn-complete", title) is None
    assert codex.is_auxiliary("agent-turn-complete", title, None)
    assert codex.is_auxiliary("agent-turn-complete", title, CODEX_SID)


def test_codex_notify_thread_rule():
    """The pane's own thread's notify counts; another thread's notify is auxiliary."""
    codex = ADAPTERS["codex"]
    own = {
        "type": "agent-turn-complete",
        "thread-id": "T1",
        "input-messages": ["hello"],
        "last-assistant-message": "hi",
    }
    other = {**own, "thread-id": "T2"}
    assert not codex.is_auxiliary("agent-turn-complete", own, "T1")
    assert codex.is_auxiliary("agent-turn-complete", other, "T1")
    assert not codex.is_auxiliary("agent-turn-complete", other, None)  # nothing known yet
    # hooks with a session_id are identity updates, never auxiliary
    assert not codex.is_auxiliary("Stop", {"session_id": "T2"}, "T1")
    assert not codex.is_auxiliary("SessionStart", {"session_id": "T2"}, "T1")
    assert not ADAPTERS["claude"].is_auxiliary("agent-turn-complete", other, "T1")


def test_codex_hello_turn_with_two_notifies():
    """Fact: "hello" fires SessionStart, UserPromptSubmit, Stop, then notify ×2 (title + real)."""
    codex = ADAPTERS["codex"]
    samples = fixture("codex")
    title = samples["notify"]["argv[1] (JSON)"]
    real = {
        **title,
        "thread-id": CODEX_SID,
        "input-messages": ["hello"],
        "last-assistant-message": "Hello",
    }
    hooks = [
        ("SessionStart", samples["SessionStart"]),
        ("UserPromptSubmit", samples["UserPromptSubmit"]),
        ("Stop", samples["Stop"]),
        ("agent-turn-complete", title),
        ("agent-turn-complete", real),
    ]
    assert fold(codex, hooks) == (D, UNREAD, CODEX_SID, 3)
    # notify configured without hooks: the title thread still never becomes the session
    assert fold(codex, hooks[3:]) == (D, UNREAD, CODEX_SID, 1)


def test_codex_esc_while_streaming_fires_interrupt():
    """Fact: Esc while streaming fires Interrupt{turn_id} (and no Stop)."""
    codex = ADAPTERS["codex"]
    samples = fixture("codex")
    hooks = [("UserPromptSubmit", samples["UserPromptSubmit"]), ("Interrupt", samples["Interrupt"])]
    assert fold(codex, hooks)[:2] == (IDLE, NONE)


def test_codex_esc_in_dialog_fires_notify_then_interrupt():
    """Fact: Esc in the approval dialog fires notify then Interrupt, no Stop.

    Interrupt clears attention, which also clears the pending permission decision.
    """
    codex = ADAPTERS["codex"]
    samples = fixture("codex")
    notify = {
        "type": "agent-turn-complete",
        "thread-id": CODEX_SID,
        "input-messages": ["perm"],
        "last-assistant-message": None,
    }
    hooks = [
        ("UserPromptSubmit", samples["UserPromptSubmit"]),
        ("PreToolUse", samples["PreToolUse"]),
        ("PermissionRequest", samples["PermissionRequest"]),
        ("agent-turn-complete", notify),
        ("Interrupt", samples["Interrupt"]),
    ]
    assert fold(codex, hooks) == (IDLE, NONE, CODEX_SID, 4)
    assert codex.classify("Interrupt", samples["Interrupt"]).attention == NONE


def test_codex_has_no_notification_hook():
    """Fact: Codex has no Notification-type hook; permission waiting is PermissionRequest only."""
    codex = ADAPTERS["codex"]
    assert not codex.classify("Notification", {"notification_type": "permission_prompt"}).recognized
    assert (
        codex.classify("PermissionRequest", fixture("codex")["PermissionRequest"]).attention == PERM
    )


def test_codex_permission_request_body_from_real_payload():
    payload = fixture("codex")["PermissionRequest"]
    draft = ADAPTERS["codex"].notification_draft("PermissionRequest", payload)
    assert draft == NotificationDraft("Codex needs approval", "Bash", "warning")


def test_gemini_session_end_three_times():
    """Fact: Gemini fires SessionEnd 3× on /quit. Without a manifest it classifies nothing
    (no triple alert); the id stays the same, so no session generation bump."""
    generic = ADAPTERS["generic"]
    end = fixture("gemini")["SessionEnd"]
    assert fold(generic, [("SessionEnd", end)] * 3, start=(W, NONE)) == (W, NONE, GEMINI_SID, 0)


def test_gemini_tool_permission_needs_a_manifest():
    """Fact: Gemini's permission wait is Notification{notification_type: ToolPermission}."""
    payload = fixture("gemini")["Notification"]
    assert payload["notification_type"] == "ToolPermission"
    assert not ADAPTERS["generic"].classify("Notification", payload).recognized


def test_opencode_interruption_is_reported_as_idle():
    """Fact/plugin contract: interruption arrives as idle → done/unread like a finished turn."""
    opencode = ADAPTERS["opencode"]
    hooks = [
        ("session.status", {"status": {"type": "busy"}}),
        ("session.status", {"status": {"type": "idle"}}),
    ]
    assert fold(opencode, hooks)[:2] == (D, UNREAD)


def test_opencode_permission_ask_hook_never_fires():
    """Fact: OpenCode's permission.ask plugin hook is dead; the managed plugin reports the
    permission.asked *event* as a waiting PermissionRequest (issue 11 item 6), so neither raw
    name classifies."""
    opencode = ADAPTERS["opencode"]
    for event in ("permission.ask", "permission.asked"):
        assert not opencode.classify(event, {"sessionID": "s"}).recognized
    asked = opencode.classify("PermissionRequest", {"session_id": "s", "tool_name": "bash",
                                                    "tool_input": {"command": "touch x"}})
    assert (asked.lifecycle, asked.attention, asked.message, asked.cause) == (B, PERM, "bash: touch x", "permission")
    draft = opencode.notification_draft("PermissionRequest", {"tool_name": "edit", "tool_input": {"patterns": ["a.py"]}})
    assert draft == NotificationDraft("OpenCode needs approval", "edit: a.py", "warning")


def test_pi_and_opencode_have_no_exit_hook():
    """Fact: Pi and OpenCode fire nothing at process exit; exit semantics come from the PTY.
    Pi's session_shutdown (an extension event) classifies nothing either."""
    assert (
        not ADAPTERS["pi"]
        .classify("session_shutdown", fixture("pi")["session_shutdown"])
        .recognized
    )
    for event in ("SessionEnd", "sessionEnd", "session.deleted"):
        assert not ADAPTERS["opencode"].classify(event, {}).recognized


def test_hooks_inherit_environment_so_session_keys_suffice():
    """Claude's hook payload session_id equals $CLAUDE_CODE_SESSION_ID on every hook."""
    claude = ADAPTERS["claude"]
    assert {claude.session_id(p) for p in fixture("claude").values()} == {CLAUDE_SID}


def test_tool_hooks_never_carry_state():
    for adapter in ADAPTERS.values():
        for event in adapter.tool_events:
            c = adapter.classify(event, {"session_id": "S"})
            assert c.tool_hook
            assert c.lifecycle is None
            assert c.attention is None
            assert c.message is None
            assert adapter.notification_draft(event, {"tool_name": "Bash"}) is None
