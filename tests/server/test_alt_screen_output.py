"""Full-screen programs in ``pane.read`` (tail) and ``pane.wait_for_output`` (issue 11 item 10).

Codex and OpenCode draw on the alternate screen. A driver in a real PTY (through a real daemon)
switches to it (``CSI ? 1049 h``), draws, redraws rows in place and leaves; the real Codex and
OpenCode captures (``tests/fixtures/real-agents/``, plain screens from ``capture-pane``, which
carry no screen switch) are replayed inside the alternate screen. Semantics:
docs/decisions.md "Full-screen agents in pane read and wait-output".
"""

from __future__ import annotations

import base64
import json
import select
import sys
from pathlib import Path
from typing import Any

import pytest

from signaltty.proto.client import Client
from signaltty.server.output_match import AltRows, LineCollector
from tests.conftest import DaemonProc, wait_until

PY = sys.executable
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DRIVER = FIXTURES / "screen_driver.py"
REAL = FIXTURES / "real-agents"
ALT_ON, ALT_OFF = "\x1b[?1049h", "\x1b[?1049l"


def frame(rows: dict[int, str], clear: bool = False) -> str:
    """Rows (1-based) drawn in place, each erased first, as a TUI's renderer does."""
    head = "\x1b[H\x1b[2J" if clear else ""
    return head + "".join(f"\x1b[{y};1H\x1b[2K{text}" for y, text in rows.items())


def spawn_driver(daemon: DaemonProc, cols: int = 80, rows: int = 12) -> str:
    ws = daemon.call("workspace.create", {"name": "w"})["workspace"]["id"]
    pid: str = daemon.call(
        "pane.spawn",
        {"workspace_id": ws, "argv": [PY, str(DRIVER)], "cols": cols, "rows": rows},
    )["pane"]["id"]
    wait_until(lambda: "driver ready" in read(daemon, pid)["text"], what="driver ready")
    return pid


def draw(daemon: DaemonProc, pid: str, item: str | dict[str, str]) -> None:
    """One write of the driver: a string as is, or ``{"file": …}`` (clear + a whole frame)."""
    data = (json.dumps(item) + "\r").encode()
    daemon.call("pane.input", {"pane_id": pid, "data_b64": base64.b64encode(data).decode()})


def read(daemon: DaemonProc, pid: str, **params: Any) -> dict[str, Any]:
    return daemon.call("pane.read", {"pane_id": pid, **params})


def shows(daemon: DaemonProc, pid: str, text: str) -> bool:
    return text in read(daemon, pid, mode="screen")["text"]


def start_wait(daemon: DaemonProc, pid: str, match: str, **params: Any) -> tuple[Client, str]:
    """Send a wait on its own connection, then a round trip on another one, so the daemon
    has taken the wait (its baseline) before the test draws anything new."""
    cl = daemon.client(timeout=None)
    req = cl.send(
        "pane.wait_for_output", {"pane_id": pid, "match": match, "timeout_s": 15, **params}
    )
    read(daemon, pid)
    return cl, req


def answer(cl: Client, req: str) -> dict[str, Any]:
    try:
        msg = cl.read_message(timeout=20)
    finally:
        cl.close()
    assert msg is not None
    assert msg["id"] == req
    assert "error" not in msg, msg
    result: dict[str, Any] = msg["result"]
    return result


# ------------------------------------------------------------------------- pane.read tail


def test_tail_shows_the_alternate_screen_after_the_history_and_forgets_it_on_leaving(
    daemon: DaemonProc,
) -> None:
    pid = spawn_driver(daemon)
    draw(daemon, pid, "shell line one\r\nshell line two\r\n")
    wait_until(lambda: shows(daemon, pid, "shell line two"), what="primary output")
    before = read(daemon, pid)
    assert before["alt_screen"] is False
    assert before["text"] == "driver ready\nshell line one\nshell line two"

    draw(daemon, pid, ALT_ON + frame({1: "ALT TITLE", 5: "Working (1s)", 8: "› prompt"}, True))
    wait_until(lambda: shows(daemon, pid, "› prompt"), what="alternate frame")
    tail = read(daemon, pid)
    assert tail["alt_screen"] is True
    alt = "ALT TITLE\n\n\n\nWorking (1s)\n\n\n› prompt"
    assert tail["text"] == before["text"] + "\n" + alt
    assert tail["truncated"] is False
    # a short window is the bottom of what the person sees
    short = read(daemon, pid, lines=2)
    assert (short["text"], short["truncated"]) == ("\n› prompt", True)
    short = read(daemon, pid, lines=9)
    assert (short["text"], short["truncated"]) == ("shell line two\n" + alt, True)

    # a row redrawn in place replaces its text; nothing is appended twice
    draw(daemon, pid, frame({5: "Working (2s)"}))
    wait_until(lambda: shows(daemon, pid, "Working (2s)"), what="redrawn row")
    text = read(daemon, pid)["text"]
    assert text.count("Working") == 1
    assert "Working (2s)" in text

    # leaving restores the primary screen: the tail is the one from before, as in xterm
    draw(daemon, pid, ALT_OFF)
    wait_until(lambda: not read(daemon, pid, mode="screen")["alt_screen"], what="alt left")
    after = read(daemon, pid)
    assert (after["text"], after["alt_screen"]) == (before["text"], False)


def test_default_wait_matches_text_on_the_alternate_screen(daemon: DaemonProc) -> None:
    pid = spawn_driver(daemon)
    draw(daemon, pid, ALT_ON + frame({4: "• Working (3s • esc to interrupt)"}, True))
    r = daemon.call(
        "pane.wait_for_output", {"pane_id": pid, "match": "esc to interrupt", "timeout_s": 10}
    )
    assert r["matched_line"] == "• Working (3s • esc to interrupt)"
    assert r["text"].endswith("• Working (3s • esc to interrupt)")


# ------------------------------------------------------------------- new_only on the alt screen


def test_new_only_matches_changed_rows_not_a_redraw_or_a_scroll(daemon: DaemonProc) -> None:
    pid = spawn_driver(daemon)
    draw(daemon, pid, ALT_ON + frame({3: "Ready", 6: "footer"}, True))
    wait_until(lambda: shows(daemon, pid, "footer"), what="first frame")
    # the whole frame is cleared and drawn again with the same text, plus one new row: only
    # that row is new (before the fix the raw bytes made one line "Readyfootermarker 1")
    cl, req = start_wait(daemon, pid, "Ready|marker", regex=True, new_only=True)
    draw(daemon, pid, frame({3: "Ready", 6: "footer", 9: "marker 1"}, True))
    assert answer(cl, req)["matched_line"] == "marker 1"

    # scrolling moves old text to other rows; only the row that comes in is new
    draw(daemon, pid, frame({10: "log a", 11: "log b", 12: "log c"}))
    wait_until(lambda: shows(daemon, pid, "log c"), what="log rows")
    cl, req = start_wait(daemon, pid, "log a|log d", regex=True, new_only=True)
    draw(daemon, pid, "\x1b[12;1H\r\nlog d")
    assert answer(cl, req)["matched_line"] == "log d"
    assert read(daemon, pid, mode="screen")["text"].split("\n")[9:] == ["log b", "log c", "log d"]


def test_new_only_sees_text_that_comes_back_to_its_row(daemon: DaemonProc) -> None:
    """``Ready`` → ``Working`` → ``Ready``: waiting for the agent to be ready again."""
    pid = spawn_driver(daemon)
    draw(daemon, pid, ALT_ON + frame({3: "Ready"}, True))
    wait_until(lambda: shows(daemon, pid, "Ready"), what="ready")
    cl, req = start_wait(daemon, pid, "Ready", new_only=True)
    draw(daemon, pid, frame({3: "Working"}))
    wait_until(lambda: shows(daemon, pid, "Working"), what="working")
    # still waiting: nothing from the daemon on that connection
    assert not cl.buffered()
    assert not select.select([cl.fileno()], [], [], 0)[0]
    draw(daemon, pid, frame({3: "Ready"}))
    assert answer(cl, req)["matched_line"] == "Ready"


def test_new_only_keeps_primary_text_around_the_switches(daemon: DaemonProc) -> None:
    pid = spawn_driver(daemon)
    cl, req = start_wait(daemon, pid, "ALT ONLY|after alt", regex=True, new_only=True)
    # one write: primary text, a frame drawn and left at once, primary text again
    draw(
        daemon, pid, "before alt\r\n" + ALT_ON + frame({2: "ALT ONLY"}) + ALT_OFF + "after alt\r\n"
    )
    assert answer(cl, req)["matched_line"] == "after alt"
    cl, req = start_wait(daemon, pid, "before", new_only=True)
    draw(daemon, pid, "before alt again\r\n")
    assert answer(cl, req)["matched_line"] == "before alt again"


@pytest.mark.parametrize(
    ("agent", "working"),
    [("codex", "• Working (0s • esc to interrupt)"), ("opencode", "esc interrupt")],
)
def test_real_full_screen_agents_on_the_alternate_screen(
    daemon: DaemonProc, agent: str, working: str
) -> None:
    """The real Codex/OpenCode screens of a turn, drawn as whole frames on the alternate
    screen (120×40, as captured): the answer already shown is not new, the working row is."""
    pid = spawn_driver(daemon, cols=120, rows=40)
    draw(daemon, pid, ALT_ON)
    draw(daemon, pid, {"file": str(REAL / agent / "02_idle_after_hello_ansi.txt")})
    wait_until(lambda: shows(daemon, pid, "Hello from the mock model!"), what="idle frame")
    assert "Hello from the mock model!" in read(daemon, pid)["text"]
    cl, req = start_wait(
        daemon, pid, "Hello from the mock|esc (to )?interrupt", regex=True, new_only=True
    )
    draw(daemon, pid, {"file": str(REAL / agent / "03_working_ansi.txt")})
    assert working in answer(cl, req)["matched_line"]
    r = daemon.call("pane.wait_for_output", {"pane_id": pid, "match": working, "timeout_s": 10})
    assert working in r["matched_line"]
    assert read(daemon, pid)["alt_screen"] is True


# --------------------------------------------------------------------------- the pure parts


def test_line_collector_follows_switches_split_across_reads() -> None:
    c = LineCollector()
    assert c.feed(b"one\ntw") == ["one", "tw"]
    assert not c.saw_alt  # primary only: the wait does not apply the screen model
    assert c.feed(b"o\x1b[?10")[0].startswith("two")  # the switch is not complete yet
    assert c.feed(b"49hHIDDEN\x1b[5;1Hmore") == ["two"]
    assert c.saw_alt
    assert c.feed(b"\n\x1b[?25;1049lthree\n") == ["two", "three", ""]  # "" is the new partial line
    assert LineCollector(alt=True).feed(b"frame\x1bcreset\n") == ["reset", ""]
    assert LineCollector(alt=True).feed(b"\x1b[?1047lshown\x1b[?47hgone\n") == ["shown"]
    # a frame with no newline longer than the kept partial line: the switch back is kept
    long = LineCollector()
    long.feed(b"\x1b[?1049h" + b"x" * 70000)
    assert long.feed(b"y" * 70000 + b"\x1b[?1049lback") == ["back"]


def test_alt_rows_new_text_only() -> None:
    rows = AltRows(["Ready", "", "footer"])
    assert rows.new_rows(["", "", ""]) == []  # a clear
    assert rows.new_rows(["Ready", "", "footer"]) == []  # the redraw after it
    assert rows.new_rows(["Working", "", "footer"]) == ["Working"]
    assert rows.new_rows(["Ready", "", "footer"]) == ["Ready"]  # back on its row
    assert rows.new_rows(["", "footer", "log"]) == ["log"]  # scrolled up one row
    assert AltRows([]).new_rows(["a", " ", "b"]) == ["a", "b"]
