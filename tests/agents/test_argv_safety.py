"""Issue 10 item 4: nothing from a payload, a report or a snapshot becomes an option.

Unit level: the pure validator (core/argv_safety.py), the adapters' session id intake, the
manifest ``[session] id_format``, resume argv construction (defence in depth) and the
re-validation of restored panes. The end-to-end proofs with a real daemon are in
tests/server/test_hostile_session_ids.py.
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signaltty.agents import resume
from signaltty.agents.adapters import ADAPTERS
from signaltty.agents.adapters.overlay import resolve_adapter
from signaltty.agents.catalog import load_catalog
from signaltty.agents.manifest import ManifestError, load_manifest
from signaltty.core import argv_safety
from signaltty.core.argv_safety import UnsafeValue, check_cwd, cwd_problem, id_problem
from signaltty.core.model import AgentInfo, Pane

CLAUDE_BYPASS = "--dangerously-skip-permissions"
CODEX_BYPASS = "--dangerously-bypass-approvals-and-sandbox"
UUID = "8d27a2e7-b7c5-4958-9786-6f1975e1e647"
HOSTILE = [
    CLAUDE_BYPASS,
    CODEX_BYPASS,
    "-c",
    "-",
    "--",
    "x --dangerously-skip-permissions",
    "S1\n--yolo",
    "S1\x1b[2J",
    "S1\u202e",
    "\ud800",
    " S1",
    "x" * 129,
    "",
    "S1/../../x",
]


def pane(**agent: object) -> Pane:
    return Pane(
        id="pane_a",
        workspace_id="ws_a",
        argv=["claude"],
        cwd="/tmp",
        launch_cwd="/tmp",
        created_at=0.0,
        last_activity_at=0.0,
        agent=AgentInfo(kind="claude", **agent),  # type: ignore[arg-type]
    )


# ---------------------------------------------------------------- the pure validator


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_ids_are_refused(value: str) -> None:
    assert id_problem(value) is not None
    with pytest.raises(UnsafeValue):
        argv_safety.check_id(value)


@pytest.mark.parametrize(
    "value",
    [UUID, "01a22b73-0d6f-7052-942e-cc19b177baef", "ses_dd48edc05ffeWB7b8Hs560gm76", "S1", "a:b.c-d", "x" * 128],
)
def test_real_id_shapes_are_accepted(value: str) -> None:
    assert id_problem(value) is None


def test_real_fixture_ids_are_accepted() -> None:
    """Every session id the real agents put in their hook payloads passes the default grammar."""
    import json

    root = Path(__file__).resolve().parent.parent / "fixtures" / "real-agents"
    seen = set()
    for agent in ("claude", "codex", "gemini", "opencode"):
        samples = json.loads((root / agent / "hook_samples.json").read_text())
        adapter = ADAPTERS.get(agent, ADAPTERS["generic"])
        for payload in samples.values():
            accepted, rejected = adapter.session_identity(payload)
            assert rejected is None, (agent, rejected)
            if accepted:
                seen.add(accepted)
    assert UUID in seen
    assert len(seen) >= 3


def test_uuid_grammar() -> None:
    uuid = argv_safety.grammar("uuid")
    assert id_problem(UUID, uuid) is None
    assert id_problem("S1", uuid) == "does not match the agent's id grammar"
    assert id_problem(CLAUDE_BYPASS, uuid) is not None
    with pytest.raises(ValueError, match="unknown id format 'regex'"):
        argv_safety.grammar("regex")


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("-_.: \t\n"), max_size=140))
def test_an_accepted_id_is_always_one_plain_operand(value: str) -> None:
    if id_problem(value) is None:
        assert value[0] != "-"
        assert 0 < len(value) <= 128
        assert all(c in string.ascii_letters + string.digits + "._:-" for c in value)
        argv = resume.substitute(["claude", "--resume", "{id}"], value)
        assert argv == ["claude", "--resume", value]
    else:
        with pytest.raises(UnsafeValue):
            resume.substitute(["claude", "--resume", "{id}"], value)


@pytest.mark.parametrize(
    ("value", "ok"),
    [("/home/u/p", True), ("/", True), ("/d/\udcff", True), ("rel/p", False), ("", False),
     ("/a\x00b", False), ("/a\nb", False), ("/a\x9bb", False), ("/" + "a" * 4096, False), (None, False)],
)
def test_cwd_rule(value: object, ok: bool) -> None:
    assert (cwd_problem(value) is None) is ok
    if not ok:
        with pytest.raises(UnsafeValue, match="cwd"):
            check_cwd(value)


# ---------------------------------------------------------------- adapters (recording)


@pytest.mark.parametrize("agent", sorted(ADAPTERS))
@pytest.mark.parametrize("value", HOSTILE[:9])
def test_adapter_rejects_and_reports_hostile_ids(agent: str, value: str) -> None:
    adapter = ADAPTERS[agent]
    payload = {key: value for key in ("session_id", "sessionId", "sessionID", "thread-id")}
    assert adapter.session_identity(payload) == (None, value)
    assert adapter.session_id(payload) is None
    assert "rejected" in resume.rejection(adapter, value)


def test_a_rejected_id_does_not_let_a_lower_field_stand_in() -> None:
    codex = ADAPTERS["codex"]
    assert codex.session_identity({"session_id": CODEX_BYPASS, "thread-id": "T1"}) == (None, CODEX_BYPASS)
    # blank and non-string fields still count as absent
    assert codex.session_identity({"session_id": " ", "thread-id": "T1"}) == ("T1", None)


def test_manifest_id_format(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "heron.toml").write_text(
        '[agent]\nkind = "generic"\nbinaries = ["heron"]\n'
        '[session]\nkey = "session.id"\nresume = ["heron", "--session", "{id}"]\nid_format = "uuid"\n'
    )
    cat = load_catalog(user, bundled_dir=tmp_path / "none")
    heron = resolve_adapter(cat, "heron")
    assert heron is not None
    assert heron.session_identity({"session": {"id": UUID}}) == (UUID, None)
    assert heron.session_identity({"session": {"id": "S1"}}) == (None, "S1")
    with pytest.raises(ValueError, match="does not match the agent's id grammar"):
        resume.validate_session_id("S1", heron.session_id_grammar)
    # the default grammar for an overlay without id_format
    (user / "tern.toml").write_text('[agent]\nkind = "generic"\n[session]\nresume = ["tern", "{id}"]\n')
    tern = resolve_adapter(load_catalog(user, bundled_dir=tmp_path / "none"), "tern")
    assert tern is not None
    assert tern.session_identity({"session_id": "S1"}) == ("S1", None)


def test_manifest_unknown_id_format_refused(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text('[agent]\nkind = "generic"\n[session]\nid_format = ".*"\n')
    with pytest.raises(ManifestError, match=r"id_format.*one of default, uuid"):
        load_manifest(f, "user")


def test_overlay_keeps_the_codex_title_thread_ignored(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "codex.toml").write_text('[agent]\nkind = "codex"\n[lifecycle.Stop]\nmessage = "m"\n')
    codex = resolve_adapter(load_catalog(user, bundled_dir=tmp_path / "none"), "codex")
    title = {"type": "agent-turn-complete", "thread-id": "T9",
             "input-messages": ["Generate a concise, single-line task title for this"]}
    assert codex is not None
    assert codex.session_identity(title) == (None, None)


# ---------------------------------------------------------------- resume (defence in depth)


@pytest.mark.parametrize("value", [CLAUDE_BYPASS, CODEX_BYPASS, "-c", "a b"])
def test_resolve_refuses_an_option_like_id(value: str) -> None:
    with pytest.raises(UnsafeValue, match="rejected"):
        resume.resolve_resume_argv(["claude", "--resume", "{id}"], value)
    with pytest.raises(UnsafeValue):
        resume.resolve(pane(agent_session_id=value), ADAPTERS["codex"], value)


def test_argv_to_resume_checks_the_stored_values_again() -> None:
    # a stored id that got past every earlier check (e.g. an old daemon's snapshot)
    with pytest.raises(ValueError, match="starts with '-'"):
        resume.argv_to_resume(pane(agent_session_id=CLAUDE_BYPASS, resume_source="adapter"), ADAPTERS["claude"])
    # a stored reported argv is never run: the template is (issue 10 follow-up)
    for stored in (["-x", "S1"], ["claude", "--dangerously-skip-permissions", "--resume", "S1"], ["sh", "-c", "x"]):
        assert resume.argv_to_resume(
            pane(agent_session_id="S1", resume_source="reported", resume_argv=stored), ADAPTERS["claude"]
        ) == ["claude", "--resume", "S1"]
    assert resume.argv_to_resume(pane(agent_session_id="S1"), ADAPTERS["claude"]) == ["claude", "--resume", "S1"]
    assert resume.argv_to_resume(pane(), ADAPTERS["claude"]) is None


# ---------------------------------------------------------------- restore


def test_clean_restored_drops_a_hostile_session_id() -> None:
    p = pane(agent_session_id=CLAUDE_BYPASS, resume_argv=["claude", "--resume", CLAUDE_BYPASS],
             resume_source="adapter")
    problems = resume.clean_restored(p)
    assert len(problems) == 1
    assert "agent_session_id" in problems[0]
    assert "starts with '-'" in problems[0]
    assert (p.agent.agent_session_id, p.agent.resume_argv, p.agent.resume_source) == (None, None, None)


@pytest.mark.parametrize(
    ("agent", "fragment"),
    [
        ({"agent_session_id": "S1", "resume_argv": ["/tmp/x y", "S1"], "resume_source": "reported"}, "bare command"),
        ({"agent_session_id": "S1", "resume_argv": ["claude", CLAUDE_BYPASS], "resume_source": "adapter"},
         "does not name the session id"),
        ({"agent_session_id": "S1", "resume_argv": ["claude", "--resume", "S1\x1b"], "resume_source": "adapter"},
         "control character"),
        ({"resume_argv": ["claude", "--resume", "S1"], "resume_source": "adapter"}, "no session id"),
    ],
)
def test_clean_restored_drops_a_bad_resume_argv(agent: dict, fragment: str) -> None:
    p = pane(**agent)
    problems = resume.clean_restored(p)
    assert len(problems) == 1, problems
    assert fragment in problems[0], problems
    assert p.agent.resume_argv is None
    assert p.agent.resume_source is None


def test_clean_restored_cwds_and_clean_panes() -> None:
    p = pane(agent_session_id=UUID, resume_argv=["/opt/claude", "--resume", UUID], resume_source="adapter")
    assert resume.clean_restored(p) == []
    assert p.agent.resume_argv == ["/opt/claude", "--resume", UUID]
    p.cwd, p.launch_cwd = "relative/dir", "/ok\n"
    problems = resume.clean_restored(p)
    assert [x.split()[0] for x in problems] == ["cwd", "launch_cwd"]
    assert (p.cwd, p.launch_cwd) == ("/", "/")


def test_gemini_takes_only_uuid_session_ids() -> None:
    """Gemini CLI's `--resume` also takes `latest` and an index: from a hook either would
    resume another conversation (sixth attack pass, finding 7), so its ids are UUIDs only."""
    entry = load_catalog(None).entry("gemini")
    assert entry is not None
    grammar = entry.session_id_grammar
    assert grammar is not None
    assert id_problem(UUID, grammar) is None
    for bad in ("latest", "3", "a92fbd97"):
        assert id_problem(bad, grammar) == "does not match the agent's id grammar"
