"""argcomplete completers for values only the daemon or the catalog knows: pane and
workspace ids, ``--keys`` names, ``--agent`` ids (issue 13 §2).

They run while a shell waits for TAB, so the daemon is asked with one short deadline
(:data:`ASK_TIMEOUT_S`) and any failure — no daemon, a stranger's socket, a slow or odd
answer — completes nothing, silently: completion must never print an error into the
person's command line. Loaded only when a shell asks (``_ARGCOMPLETE`` set).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Final

ASK_TIMEOUT_S: Final = 0.5  # connect + answer, total
# common Ctrl/Meta chords offered beside the named keys (any C-x/M-x is valid)
_CHORDS: Final = ("C-c", "C-d", "C-z", "C-l", "C-a", "C-e", "C-u", "C-r", "M-x")


def _ask(parsed_args: Any, method: str) -> dict[str, Any] | None:
    """``method``'s result from the daemon named by ``--socket``/the environment, or None."""
    try:
        from signaltty.proto.client import Client, default_socket

        deadline = time.monotonic() + ASK_TIMEOUT_S
        with Client(
            default_socket(getattr(parsed_args, "socket", None)), timeout=ASK_TIMEOUT_S
        ) as cl:
            req_id = cl.send(method)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                msg = cl.read_message(timeout=left)
                if msg is None:
                    return None
                if msg.get("id") == req_id:
                    result = msg.get("result")
                    return result if msg.get("ok") and isinstance(result, dict) else None
    except Exception:  # noqa: BLE001 - no daemon, untrusted socket, timeout, bad JSON: nothing
        return None


def pane_ids(prefix: str, parsed_args: Any = None, **_: Any) -> list[str]:
    """Ids of the daemon's panes that start with ``prefix`` (live ones first)."""
    r = _ask(parsed_args, "pane.list") or {}
    panes = [
        p for p in r.get("panes") or [] if isinstance(p, dict) and isinstance(p.get("id"), str)
    ]
    panes.sort(key=lambda p: not p.get("live"))
    return [p["id"] for p in panes if p["id"].startswith(prefix)]


def workspace_refs(prefix: str, parsed_args: Any = None, **_: Any) -> list[str]:
    """Handles and ids of the daemon's workspaces that start with ``prefix``."""
    r = _ask(parsed_args, "workspace.list") or {}
    out: list[str] = []
    for w in r.get("workspaces") or []:
        if isinstance(w, dict):
            out += [
                v
                for v in (w.get("handle"), w.get("id"))
                if isinstance(v, str) and v.startswith(prefix)
            ]
    return out


def key_names(prefix: str, parsed_args: Any = None, **_: Any) -> list[str]:
    """``--keys`` names (core/keys.py); a ``pane_…`` word completes as a pane id, since
    ``pane input --keys Enter pane_x`` takes its last word back as the id."""
    if prefix.startswith("pane_"):
        return pane_ids(prefix, parsed_args)
    from signaltty.core.keys import NAMES

    return [n for n in (*NAMES, *_CHORDS) if n.startswith(prefix)]


def agent_ids(prefix: str, parsed_args: Any = None, **_: Any) -> list[str]:
    """Catalog agent ids: the daemon's catalog (user manifests included), else the bundled
    manifests' names."""
    r = _ask(parsed_args, "agents.catalog")
    if r is not None:
        ids = [a.get("id") for a in r.get("agents") or [] if isinstance(a, dict)]
    else:
        from pathlib import Path

        # agents/catalog.py BUNDLED_DIR, without importing the catalog; one file per id
        bundled = Path(__file__).resolve().parent.parent / "agents" / "manifests"
        ids = [f.stem for f in bundled.glob("*.toml")]
    return sorted(i for i in ids if isinstance(i, str) and i.startswith(prefix))


_PANE_DESTS: Final = frozenset({"pane", "parent_pane"})


def attach(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> None:
    """Set ``completer`` on every action of ``parser``'s tree that takes a pane id, a
    workspace, key names or an agent id (by ``dest`` and the command path)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                attach(sub, (*path, name))
            continue
        dest = action.dest
        completer = None
        if (
            dest in _PANE_DESTS
            or (dest == "id" and path[:1] == ("pane",))
            or (dest == "target" and path[:1] == ("permission",))
        ):
            completer = pane_ids
        elif dest == "workspace" or (dest == "id" and path[:1] == ("workspace",)):
            completer = workspace_refs
        elif dest == "keys":
            completer = key_names
        elif dest == "agent" and action.option_strings:
            completer = agent_ids
        if completer is not None:
            action.completer = completer  # type: ignore[attr-defined]
