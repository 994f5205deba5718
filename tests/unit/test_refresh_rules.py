"""states.md §3.6 process refresh, on the pure rule ``core.refresh.on_process_refresh``."""

from __future__ import annotations

import pytest

from signaltty.core.model import AgentInfo, Pane
from signaltty.core.refresh import Detection, on_process_refresh
from signaltty.core.rules import Emit
from signaltty.core.states import Attention, Lifecycle

NOW = 1_800_000_000.0
CLAUDE = Detection("claude", None, "Claude Code")
CODEX = Detection("codex", None, "Codex")
TERN = Detection("generic", "tern", "Tern")


def make_pane(kind: str = "generic", *, display: str = "Terminal", catalog_id: str | None = None, **kw) -> Pane:
    return Pane(
        id="pane_x",
        workspace_id="ws_x",
        argv=["bash"],
        cwd="/start",
        launch_cwd="/start",
        created_at=NOW,
        last_activity_at=NOW,
        agent=AgentInfo(kind=kind, display_name=display, catalog_id=catalog_id),
        process_instance="pi_1",
        **kw,
    )


def refresh(pane: Pane, name: str | None, detection: Detection | None, cwd: str | None = None, is_dir: bool = True):
    return on_process_refresh(pane, process_name=name, cwd=cwd, cwd_is_dir=is_dir, detection=detection)


def only_update(effects) -> dict:
    assert len(effects) == 1, effects
    (eff,) = effects
    assert isinstance(eff, Emit)
    assert eff.event == "pane.updated"
    return eff.payload


# (pane kind, pane display, detection, expected kind, expected display, expected catalog id, event?)
TABLE = [
    ("generic", "Terminal", CLAUDE, "claude", "Claude Code", None, True),  # promotion
    ("none", "Terminal", CODEX, "codex", "Codex", None, True),  # promotion
    ("claude", "Claude Code", CODEX, "claude", "Claude Code", None, False),  # never switched
    ("claude", "Claude Code", None, "claude", "Claude Code", None, False),  # never demoted
    ("claude", "Claude Code", TERN, "claude", "Claude Code", None, False),  # never demoted
    ("codex", "Codex", CLAUDE, "codex", "Codex", None, False),
    ("generic", "Terminal", TERN, "generic", "Tern", "tern", True),  # catalog entry followed
    ("none", "Terminal", TERN, "none", "Terminal", None, False),  # none: specific kinds only
    ("generic", "Terminal", None, "generic", "Terminal", None, False),
    ("generic", "Terminal", Detection("generic", None, "Terminal"), "generic", "Terminal", None, False),
]


@pytest.mark.parametrize(("kind", "display", "det", "want_kind", "want_display", "want_cat", "event"), TABLE)
def test_kind_table(kind, display, det, want_kind, want_display, want_cat, event):
    pane = make_pane(kind, display=display)
    effects = refresh(pane, "prog", det)
    assert (pane.agent.kind, pane.agent.display_name, pane.agent.catalog_id) == (want_kind, want_display, want_cat)
    assert pane.process_name == "prog"
    if event:
        payload = only_update(effects)
        assert payload["pane"]["agent"]["kind"] == want_kind
        assert payload["pane"]["agent"]["display_name"] == want_display
    else:
        assert effects == []


def test_promotion_lists_changed_fields_in_one_event():
    pane = make_pane("generic")
    payload = only_update(refresh(pane, "claude", CLAUDE, cwd="/work", is_dir=True))
    assert payload["changed"] == ["kind", "display_name", "cwd", "process_name"]
    assert payload["pane"]["cwd"] == "/work"
    assert payload["pane"]["process_name"] == "claude"
    assert (pane.agent.kind, pane.cwd) == ("claude", "/work")


def test_generic_follows_a_new_generic_entry_and_promotes_later():
    pane = make_pane("generic", display="Tern", catalog_id="tern")
    payload = only_update(refresh(pane, "muse", Detection("generic", "muse", "Muse")))
    assert payload["changed"] == ["catalog_id", "display_name", "process_name"]
    payload = only_update(refresh(pane, "claude", CLAUDE))
    assert (pane.agent.kind, pane.agent.catalog_id, pane.agent.display_name) == ("claude", None, "Claude Code")
    assert payload["changed"] == ["kind", "catalog_id", "display_name", "process_name"]
    # and never back to generic
    assert refresh(pane, "bash", None) == []
    assert refresh(pane, "tern", TERN) == []
    assert pane.agent.kind == "claude"


def test_promotion_keeps_lifecycle_attention_and_session():
    pane = make_pane("generic", lifecycle=Lifecycle.WORKING, attention=Attention.UNREAD)
    pane.agent.agent_session_id = "s1"
    refresh(pane, "codex", CODEX)
    assert (pane.lifecycle, pane.attention, pane.agent.agent_session_id) == (Lifecycle.WORKING, Attention.UNREAD, "s1")


@pytest.mark.parametrize(
    ("cwd", "is_dir", "want"),
    [("/tmp/x", True, "/tmp/x"), ("/tmp/file.txt", False, "/start"), (None, False, "/start"), (None, True, "/start")],
)
def test_cwd_follows_only_directories(cwd, is_dir, want):
    pane = make_pane("claude", display="Claude Code")
    pane.process_name = "claude"
    effects = refresh(pane, "claude", CLAUDE, cwd=cwd, is_dir=is_dir)
    assert pane.cwd == want
    if want != "/start":
        assert only_update(effects)["changed"] == ["cwd"]
    else:
        assert effects == []


def test_process_name_alone_emits_nothing():
    pane = make_pane("generic")
    assert refresh(pane, "vim", None, cwd="/start") == []
    assert pane.process_name == "vim"
    assert refresh(pane, "less", None, cwd="/start") == []
    assert pane.process_name == "less"


def test_unreadable_process_keeps_previous_values():
    pane = make_pane("generic")
    pane.process_name = "vim"
    assert refresh(pane, None, None, cwd=None, is_dir=False) == []
    assert (pane.process_name, pane.cwd) == ("vim", "/start")


def test_nothing_changed_nothing_emitted():
    pane = make_pane("generic")
    only_update(refresh(pane, "claude", CLAUDE, cwd="/w"))
    assert refresh(pane, "claude", CLAUDE, cwd="/w") == []


def test_exited_pane_is_left_alone():
    pane = make_pane("generic", live=False)
    assert refresh(pane, "claude", CLAUDE, cwd="/w") == []
    assert (pane.agent.kind, pane.cwd, pane.process_name) == ("generic", "/start", None)


def test_cwd_that_is_not_utf8_is_not_followed():
    from signaltty.core.model import Pane
    from signaltty.core.refresh import on_process_refresh

    pane = Pane(id="pane_1", workspace_id="ws", argv=["bash"], cwd="/tmp", launch_cwd="/tmp",
                created_at=0.0, last_activity_at=0.0)
    effects = on_process_refresh(pane, process_name="bash", cwd="/tmp/x\udcff", cwd_is_dir=True, detection=None)
    assert pane.cwd == "/tmp"
    assert effects == []
