"""Title changes are saved on the tails' cadence, not each on its own (issue 12: an agent
retitles its pane up to 10×/s; a snapshot save every ``snapshot_debounce_s`` for that cost
~5–8 % of the daemon's CPU under 20 replayed Codex turns, bench/replay.py)."""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path

from signaltty.server.bus import Bus
from signaltty.server.store import Store
from tests.conftest import DaemonProc, wait_until

PY = sys.executable
# each line the pane reads becomes its title
TITLER = (
    "import sys\n"
    "print('ready', flush=True)\n"
    "for line in sys.stdin:\n"
    "    sys.stdout.write('\\x1b]2;title-' + line.strip() + '\\x07'); sys.stdout.flush()\n"
)


def test_a_title_only_update_waits_and_any_other_change_saves_at_once():
    store = Store(Bus())
    store.emit("pane.updated", {"pane": {}, "changed": ["title"]})
    assert (store.dirty, store.dirty_later) == (False, True)
    store.emit("pane.updated", {"pane": {}, "changed": ["title", "cwd"]})
    assert store.dirty
    store.dirty = False
    store.emit("pane.updated", {"pane": {}, "changed": []})  # nothing named: saved as before
    assert store.dirty
    store.dirty = False
    store.emit("attention.created", {"pane_id": "p", "attention": "unread", "changed": ["title"]})
    assert store.dirty


def _saved_title(snap: Path, pane_id: str) -> str | None:
    try:
        data = json.loads(snap.read_text())
    except (OSError, ValueError):
        return None
    for pane in data.get("panes", []):
        if pane.get("id") == pane_id:
            return pane.get("title")
    return None


def _retitle(d: DaemonProc, pane_id: str, word: str) -> None:
    """Type ``word`` into the pane and wait for the ``pane.updated`` of its new title."""
    with d.client(timeout=None) as sub:
        sub.call("subscribe", {"events": ["pane.updated"]})
        data = base64.b64encode(f"{word}\n".encode()).decode()
        d.call("pane.input", {"pane_id": pane_id, "data_b64": data})
        while (ev := sub.next_event(timeout=10))["payload"]["changed"] != ["title"]:
            pass
    assert ev["payload"]["pane"]["title"] == f"title-{word}"


def test_a_retitled_pane_is_saved_with_the_next_periodic_save_and_at_shutdown(daemon):
    snap = daemon.state_dir / "snapshot.json"
    ws = daemon.call("workspace.create", {"name": "t", "cwd": str(daemon.root)})["workspace"]
    p = daemon.call("pane.spawn", {"workspace_id": ws["id"], "argv": [PY, "-c", TITLER]})["pane"]
    # the new pane and its first output: saved with its tail within snapshot_debounce_s (2 s);
    # the next periodic save (tails, and titles alone) is 10 s after that one
    tail = daemon.state_dir / "history" / f"{p['id']}.tail"
    wait_until(tail.exists, timeout=15, what="the first tail saved")
    first_save = time.monotonic()
    _retitle(daemon, p["id"], "two")
    if time.monotonic() - first_save < 5:
        # two debounce periods later the title alone has not caused a save (skipped on a
        # machine so slow that the periodic save, 10 s after the first, may be due)
        time.sleep(4.0)
        if time.monotonic() - first_save < 9.5:
            assert _saved_title(snap, p["id"]) != "title-two"
    # the periodic save writes it with no other change
    wait_until(
        lambda: _saved_title(snap, p["id"]) == "title-two", timeout=20, what="the title saved"
    )

    _retitle(daemon, p["id"], "three")
    daemon.stop()  # the shutdown save writes everything not saved yet
    assert _saved_title(snap, p["id"]) == "title-three"
