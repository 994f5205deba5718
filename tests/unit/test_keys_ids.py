"""Pure parts of the tmux habits (issue 13 item 9): key names → xterm bytes (core/keys.py),
short pane ids (core/ids.py), and the "watched" rules (core/rules.py)."""

from __future__ import annotations

import pytest

from signaltty.core import rules
from signaltty.core.ids import new_id, prefix_matches, short_ids
from signaltty.core.keys import KeyNameError, encode_key, encode_keys
from signaltty.core.rules import Alert, Emit, NotificationInput
from signaltty.core.states import Attention, Lifecycle
from tests.unit.test_rules import NOW, make_pane

# xterm's bytes (ctlseqs: "PC-Style Function Keys", "Alt and Meta Keys"), tmux's names
KEYS = [
    ("Enter", b"\r"), ("enter", b"\r"), ("Escape", b"\x1b"), ("Tab", b"\t"), ("BTab", b"\x1b[Z"),
    ("S-Tab", b"\x1b[Z"), ("BSpace", b"\x7f"), ("Space", b" "),
    ("Up", b"\x1b[A"), ("Down", b"\x1b[B"), ("Right", b"\x1b[C"), ("Left", b"\x1b[D"),
    ("Home", b"\x1b[H"), ("End", b"\x1b[F"), ("PageUp", b"\x1b[5~"), ("PPage", b"\x1b[5~"),
    ("PageDown", b"\x1b[6~"), ("NPage", b"\x1b[6~"), ("IC", b"\x1b[2~"), ("Delete", b"\x1b[3~"),
    ("F1", b"\x1bOP"), ("F4", b"\x1bOS"), ("F5", b"\x1b[15~"), ("F10", b"\x1b[21~"), ("F12", b"\x1b[24~"),
    ("C-a", b"\x01"), ("C-c", b"\x03"), ("C-z", b"\x1a"), ("C-C", b"\x03"), ("^d", b"\x04"),
    ("C-Space", b"\x00"), ("C-[", b"\x1b"), ("C-]", b"\x1d"), ("C-?", b"\x7f"),
    ("M-x", b"\x1bx"), ("M-Enter", b"\x1b\r"), ("C-M-a", b"\x1b\x01"), ("M-C-a", b"\x1b\x01"),
    ("C-Left", b"\x1b[1;5D"), ("M-Up", b"\x1b[1;3A"), ("S-Home", b"\x1b[1;2H"), ("C-S-Right", b"\x1b[1;6C"),
    ("S-F1", b"\x1b[1;2P"), ("C-F5", b"\x1b[15;5~"), ("M-PageUp", b"\x1b[5;3~"),
    ("a", b"a"), ("A", b"A"), ("S-a", b"A"), ("-", b"-"), ("é", "é".encode()), ("^", b"^"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "want"), KEYS)
def test_key_names_encode_as_xterm_sends_them(name, want):
    assert encode_key(name) == want


@pytest.mark.parametrize("name", ["Entr", "ls", "", "C-1", "S-Enter", "C-Escape", "S-1", "C-", "F13", "\udc80x"])
def test_unknown_or_impossible_keys_are_refused_with_the_valid_names(name):
    with pytest.raises(KeyNameError) as exc:
        encode_key(name)
    assert "valid keys: Enter Escape" in str(exc.value) or "not a character" in str(exc.value)


def test_a_bad_word_encodes_nothing():
    with pytest.raises(KeyNameError, match="'Nope'"):
        encode_keys(["Enter", "Nope", "C-c"])
    assert encode_keys(["C-c", "Enter"]) == b"\x03\r"


def test_prefix_matches_needs_pane_and_one_character():
    ids = ["pane_abc1", "pane_abd2", "pane_ffff"]
    assert prefix_matches("pane_ab", ids) == ["pane_abc1", "pane_abd2"]
    assert prefix_matches("pane_abc", ids) == ["pane_abc1"]
    assert prefix_matches("pane_f", ids) == ["pane_ffff"]
    assert prefix_matches("pane_ffff", ids) == ["pane_ffff"]
    assert prefix_matches("pane_", ids) == []
    assert prefix_matches("abc", ids) == []
    assert prefix_matches("pane_0", ids) == []
    assert prefix_matches("pane_abc1x", ids) == []


def test_short_ids_are_unique_and_at_least_eight_hex():
    a, b = "pane_0123456789ab" + "0" * 16, "pane_0123456789ac" + "0" * 16
    c = new_id("pane")
    short = short_ids([a, b, c, "ws_x"])
    assert short[a] == "pane_0123456789ab"
    assert short[b] == "pane_0123456789ac"
    assert short[c] == c[:13] or (short[c].startswith(c[:13]) and c.startswith(short[c]))
    assert short["ws_x"] == "ws_x"
    many = [new_id("pane") for _ in range(2000)]
    shorts = short_ids(iter(many))
    assert len(set(shorts.values())) == 2000
    for full in many:
        assert len(shorts[full]) >= 13
        assert prefix_matches(shorts[full], many) == [full]
    assert short_ids([a])[a] == a[:13]
    assert short_ids([a, a])[a] == a[:13]


# ---------------------------------------------------------------- watched panes


def raised(effects) -> list[str]:
    return [e.event for e in effects if isinstance(e, Emit) and e.event.startswith("attention.")]


def test_watched_bell_keeps_attention_but_alerts():
    pane = make_pane()
    eff = rules.on_bell(pane, now=NOW, watched=True)
    assert pane.attention == Attention.NONE
    assert raised(eff) == []
    assert [a.cause for a in eff if isinstance(a, Alert)] == ["bell"]
    assert raised(rules.on_bell(pane, now=NOW)) == ["attention.created"]


def test_watched_info_notification_is_read_on_arrival_warning_still_raises():
    pane = make_pane()
    eff = rules.on_notification(pane, NotificationInput("n1", "Deploy", "done", "info", "osc777", "osc"), now=NOW, watched=True)
    assert pane.attention == Attention.NONE
    assert raised(eff) == []
    assert pane.last_message == "Deploy: done"
    (record,) = [e.notification for e in eff if isinstance(e, rules.AddNotification)]
    assert record.read_at == NOW
    eff = rules.on_notification(pane, NotificationInput("n2", "Disk", "full", "warning", "osc99", "osc"), now=NOW, watched=True)
    assert pane.attention == Attention.WARNING
    assert raised(eff) == ["attention.created"]


@pytest.mark.parametrize(("kind", "code", "lifecycle"), [("generic", 0, "done"), ("generic", 2, "failed"), ("claude", 0, "exited")])
def test_watched_exit_changes_lifecycle_without_unread(kind, code, lifecycle):
    pane = make_pane(kind=kind, lifecycle="working")
    eff = rules.on_exit(pane, code, now=NOW, shutting_down=False, watched=True)
    assert pane.lifecycle == Lifecycle(lifecycle)
    assert pane.attention == Attention.NONE
    assert raised(eff) == []
    assert [a.cause for a in eff if isinstance(a, Alert)] == ["exit"]
    other = make_pane(kind=kind, lifecycle="working")
    rules.on_exit(other, code, now=NOW, shutting_down=False)
    assert other.attention == Attention.UNREAD


def test_watched_exit_still_clears_a_requirement():
    pane = make_pane(lifecycle="blocked", attention="input_required")
    eff = rules.on_exit(pane, 1, now=NOW, shutting_down=False, watched=True)
    assert pane.attention == Attention.NONE
    assert raised(eff) == ["attention.cleared"]
