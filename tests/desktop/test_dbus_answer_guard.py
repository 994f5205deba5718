"""D-Bus ``AnswerPermission`` goes through the self-approval guard and unambiguous ids
(issue #10 items 3 and 5), on a real private bus with clients nobody here wrote.

A process inside a pane calls ``AnswerPermission`` with ``dbus-send``: the daemon asks the bus
for the caller's pid (``GetConnectionUnixProcessID``), traces it to the pane and answers
``dev.signaltty.Error.FORBIDDEN``. The same call from outside every pane is obeyed (the
notification button, the daemon's own process, is covered by ``test_desktop_e2e.py``). A
bare decision id pending on two panes is ``dev.signaltty.Error.AMBIGUOUS``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.conftest import DaemonProc, wait_until
from tests.desktop.conftest import require
from tests.desktop.test_dbus_interface import IFACE, NAME, PATH, call, err_name, owned
from tests.server.test_hooks_e2e import _permission_agent
from tests.server.test_trust_answers import REFUSAL, _codex_decision, _shell_pane, _typed


def _dbus_send_from_pane(d: DaemonProc, bus, target: str, verdict: str = "allow") -> dict:
    require("dbus-send")
    out = d.root / f"dbus-{time.monotonic_ns()}"
    cmd = (
        f"dbus-send --bus={bus.address} --print-reply --dest={NAME} {PATH} "
        f"{IFACE}.AnswerPermission string:{target} string:{verdict}"
    )
    _shell_pane(d, f"{cmd} >{out}.out 2>{out}.err; echo $? >{out}.rc; exec sleep 60", "dbus")
    rc = wait_until(lambda: Path(f"{out}.rc").exists() and Path(f"{out}.rc").read_text().strip(), 30)
    return {"rc": int(rc), "stdout": Path(f"{out}.out").read_text(), "stderr": Path(f"{out}.err").read_text()}


def test_pane_process_is_refused_over_dbus(ddaemon, bus, tmp_root):
    owned(ddaemon)
    a, _ = _permission_agent(ddaemon, tmp_root)
    did = a.get()["pending_decision"]["id"]
    for target in (a.id, did):
        r = _dbus_send_from_pane(ddaemon, bus, target)
        assert r["rc"] != 0, r
        assert "dev.signaltty.Error.FORBIDDEN" in r["stderr"], r
        assert REFUSAL in r["stderr"]
    assert a.get()["pending_decision"] is not None
    assert len(a.entries()) == 2
    # the person's D-Bus client, outside every pane, is obeyed
    reply = call(bus, "AnswerPermission", "ss", (a.id, "allow"))
    assert err_name(reply) is None
    assert reply.body == ("working", "none")
    verdict = json.loads(a.wait_entries(3)[2]["stdout"])["hookSpecificOutput"]["decision"]
    assert verdict == {"behavior": "allow"}


def test_ambiguous_id_over_dbus(ddaemon, bus):
    owned(ddaemon)
    a = _codex_decision(ddaemon, "dup")
    b = _codex_decision(ddaemon, "dup")
    reply = call(bus, "AnswerPermission", "ss", ("dup", "deny"))
    assert err_name(reply) == "dev.signaltty.Error.AMBIGUOUS"
    assert a.id in reply.body[0]
    assert b.id in reply.body[0]
    assert a.get()["pending_decision"] is not None
    assert b.get()["pending_decision"] is not None
    # naming the pane answers that pane only
    assert err_name(call(bus, "AnswerPermission", "ss", (b.id, "deny"))) is None
    wait_until(lambda: _typed(ddaemon, b).endswith("^["))  # Codex's "No" (Esc), attack 3 A10
    assert a.get()["pending_decision"] is not None
