"""Screens captured from the real agent CLIs classify as their file names say (agents.md §6).

The captures live in ``tests/fixtures/real-agents/<agent>/`` (see its
README): ``NN_<state>.txt`` is ``tmux capture-pane -p`` of a 120x40 pane, ``*_ansi.txt`` the
same frame with colours, which is fed through the daemon's virtual screen here. Each file is
evaluated with the bundled rule set of the agent (through the catalog, as the daemon does),
with no title and no OSC progress, since the plain captures carry neither.

``EXPECTED`` fixes the state and the winning rule per capture; a capture missing from the
table (or a table row without its file) fails, so a new capture must be classified on purpose.
Decisions for the captures whose name does not fix a state (startup, after quit) are in
docs/agents.md "Bundled screen rules".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from signaltty.agents.catalog import load_catalog
from signaltty.core.screen_rules import ScreenView, evaluate
from signaltty.term.screen import PyteScreen

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real-agents"
COLS, ROWS = 120, 40

# capture (agent/stem) -> (state, winning rule id)
EXPECTED: dict[str, tuple[str, str]] = {
    "claude/01_startup": ("idle", "live_prompt_box"),
    "claude/02_idle_after_hello": ("idle", "live_prompt_box"),
    "claude/03_working": ("working", "live_turn_working"),
    "claude/04_idle_after_slow": ("idle", "live_prompt_box"),
    "claude/05_permission": ("blocked", "bash_permission_prompt"),
    "claude/06_after_approve": ("idle", "live_prompt_box"),
    "claude/07_after_hook_allow": ("idle", "live_prompt_box"),
    "claude/08_after_interrupt": ("idle", "live_prompt_box"),
    # /exit typed into the prompt box, the slash-command menu below, then the shell prompt.
    "claude/09_after_quit": ("idle", "live_prompt_box"),
    "codex/01_startup": ("idle", "composer_idle"),
    "codex/02_idle_after_hello": ("idle", "composer_idle"),
    "codex/03_working": ("working", "screen_working_fallback"),
    "codex/04_idle_after_slow": ("idle", "composer_idle"),
    "codex/05_permission": ("blocked", "live_strong_blocker"),
    "codex/06_after_approve": ("idle", "composer_idle"),
    "codex/07_after_hook_allow": ("idle", "composer_idle"),
    "codex/08_after_interrupt": ("idle", "composer_idle"),
    "codex/09_after_quit": ("idle", "idle_fallback"),
    # the dialog Codex shows when hooks are new or changed (ours, at the first start; issue 11 item 4)
    "codex/10_hooks_review": ("blocked", "hooks_review"),
    "opencode/01_startup": ("idle", "prompt_idle"),
    "opencode/02_idle_after_hello": ("idle", "prompt_idle"),
    "opencode/03_working": ("working", "interrupt_hint"),
    "opencode/04_idle_after_slow": ("idle", "prompt_idle"),
    "opencode/05_permission": ("blocked", "permission_required"),
    "opencode/06_after_approve": ("idle", "prompt_idle"),
    "opencode/07_after_hook_allow": ("idle", "prompt_idle"),
    "opencode/09_after_quit": ("idle", "idle_fallback"),
    "opencode/10_attach_permission_from_api_prompt": ("blocked", "permission_required"),
    "opencode/11_attach_after_api_reply": ("idle", "prompt_idle"),
    "pi/01_startup": ("idle", "footer_idle"),
    "pi/02_idle_after_hello": ("idle", "footer_idle"),
    "pi/03_working": ("working", "working_text"),
    "pi/04_idle_after_slow": ("idle", "footer_idle"),
    "pi/05_permission": ("blocked", "selector_dialog"),
    "pi/06_after_approve": ("idle", "footer_idle"),
    # pi's last frame stays above the shell prompt, footer included.
    "pi/09_after_quit": ("idle", "footer_idle"),
    "gemini/01_startup": ("idle", "input_prompt"),
    "gemini/02_idle_after_hello": ("idle", "input_prompt"),
    "gemini/03_working": ("working", "esc_to_cancel"),
    "gemini/04_idle_after_slow": ("idle", "input_prompt"),
    "gemini/05_permission": ("blocked", "confirmation"),
    "gemini/06_after_approve": ("idle", "input_prompt"),
    "gemini/09_after_quit": ("idle", "idle_fallback"),
}


def plain_captures() -> list[Path]:
    return sorted(p for p in REAL.glob("*/[0-9]*.txt") if not p.name.endswith("_ansi.txt"))


def ansi_captures() -> list[Path]:
    return sorted(REAL.glob("*/[0-9]*_ansi.txt"))


pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason=f"real captures not found at {REAL}")

CATALOG = load_catalog(None)


def classify(agent: str, rows: list[str]) -> tuple[str, str]:
    entry = CATALOG.entry(agent)
    assert entry is not None, agent
    rules = entry.rules
    ev = evaluate(rules, ScreenView(rows))
    assert ev.timed_out == ()
    assert ev.winner is not None
    winner = rules[ev.winner]
    return winner.state, winner.id


def key(path: Path) -> str:
    return f"{path.parent.name}/{path.name.removesuffix('.txt').removesuffix('_ansi')}"


def test_table_and_files_agree() -> None:
    found = {key(p) for p in plain_captures()}
    assert found == set(EXPECTED), {
        "not in EXPECTED": sorted(found - set(EXPECTED)),
        "missing files": sorted(set(EXPECTED) - found),
    }
    for path in ansi_captures():
        assert key(path) in EXPECTED, path


@pytest.mark.parametrize("path", plain_captures(), ids=key)
def test_plain_capture(path: Path) -> None:
    rows = path.read_text(encoding="utf-8").split("\n")[:ROWS]
    assert classify(path.parent.name, rows) == EXPECTED[key(path)]


@pytest.mark.parametrize("path", ansi_captures(), ids=key)
def test_ansi_capture_through_virtual_screen(path: Path) -> None:
    raw = path.read_bytes()
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    screen = PyteScreen(COLS, ROWS)
    # tmux wrote the frame with bare LFs; a PTY carries CRLF.
    screen.feed(raw.replace(b"\n", b"\r\n"))
    assert classify(path.parent.name, screen.lines()) == EXPECTED[key(path)]


def test_idle_prompts_give_recovery_evidence() -> None:
    """Stuck-working recovery (states.md §3.8) needs a non-fallback idle winner on the idle
    prompt after a turn; every captured agent has one."""
    for name, (state, rule_id) in EXPECTED.items():
        if "_idle_after_" in name:
            assert state == "idle", name
            assert rule_id != "idle_fallback", name
