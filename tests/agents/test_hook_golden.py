"""Built-in hook maps against the golden table captured from the Python adapters they replaced.

``tests/fixtures/hook_golden.json`` was written by this module (``python -m
tests.agents.test_hook_golden``) from the last Python ``match``-based adapters, before the
built-in agents became bundled manifests (issue 14 item 4). It holds every ``(event,
payload)`` the adapter and hook-rule tests fed an adapter, every captured real payload of
``tests/fixtures/real-agents/*/hook_samples.json``, and each kind's own events crossed with
every payload, together with what each kind (and each bundled catalog entry, through
``resolve_adapter``) made of them: classification, notification draft, session identity,
auxiliary-thread answers, and the identity attributes. The data-driven adapters must
reproduce it exactly; regenerate only for a deliberate behaviour change, and say so in the
commit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from signaltty.agents.adapters import ADAPTERS
from signaltty.agents.adapters.base import Adapter
from signaltty.agents.adapters.overlay import resolve_adapter
from signaltty.agents.catalog import load_catalog

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "fixtures" / "hook_golden.json"
REAL = ROOT / "fixtures" / "real-agents"
KINDS = ("claude", "codex", "opencode", "cursor", "pi", "generic")
# Every event a builtin dialect names (agents.md §2 tables, tool hooks included).
OWN_EVENTS: dict[str, tuple[str, ...]] = {
    "claude": (
        "SessionStart",
        "UserPromptSubmit",
        "PermissionRequest",
        "Notification",
        "Stop",
        "SessionEnd",
        "PreToolUse",
        "PostToolUse",
        "PreCompact",
        "PostCompact",
        "SubagentStop",
    ),
    "codex": (
        "SessionStart",
        "UserPromptSubmit",
        "PermissionRequest",
        "Stop",
        "agent-turn-complete",
        "SessionEnd",
        "Interrupt",
        "PreToolUse",
        "PostToolUse",
        "PreCompact",
        "PostCompact",
    ),
    "opencode": (
        "session.created",
        "session.status",
        "session.idle",
        "PermissionRequest",
        "permission.replied",
        "session.error",
    ),
    "cursor": (
        "sessionStart",
        "beforeSubmitPrompt",
        "stop",
        "sessionEnd",
        "preToolUse",
        "postToolUse",
        "preCompact",
        "postCompact",
    ),
    "pi": ("session_start", "agent_start", "agent_end", "PermissionRequest", "permission_replied"),
    "generic": ("SessionStart", "Stop"),
}
KNOWN_IDS = (None, "S1")


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def fixture_cases() -> list[tuple[str, Any]]:
    """Every real captured payload, under its raw key and the event hook-event receives."""
    out: list[tuple[str, Any]] = []
    for path in sorted(REAL.glob("*/hook_samples.json")):
        for key, payload in json.loads(path.read_text()).items():
            out.append((key, payload))
            if isinstance(payload, dict) and isinstance(payload.get("argv[1] (JSON)"), dict):
                notify = payload["argv[1] (JSON)"]
                out.append((str(notify.get("type")), notify))
            if key.startswith("event:"):
                out.append((key.removeprefix("event:"), payload))
    return out


def identity(a: Adapter) -> dict[str, Any]:
    grammar = a.session_id_grammar
    return {
        "kind": a.kind,
        "display_name": a.display_name,
        "default_title": a.default_title,
        "builtin_names": sorted(a.builtin_names),
        "session_keys": list(a.session_keys),
        "tool_events": sorted(a.tool_events),
        "resume": a.resume_template(),
        "answer": a.answer_channel(),
        "grammar": None if grammar is None else grammar.pattern,
    }


def outcome(a: Adapter, event: str, payload: Any) -> dict[str, Any]:
    c = a.classify(event, payload)
    d = a.notification_draft(event, payload)
    thread = payload.get("thread-id") if isinstance(payload, dict) else None
    known = (*KNOWN_IDS, thread) if isinstance(thread, str) else KNOWN_IDS
    return {
        "c": [
            None if c.lifecycle is None else c.lifecycle.value,
            None if c.attention is None else c.attention.value,
            c.message,
            c.tool_hook,
            c.cause,
            c.notice,
        ],
        "d": None if d is None else [d.title, d.body, d.severity],
        "id": list(a.session_identity(payload)),
        "aux": [a.is_auxiliary(event, payload, k) for k in known],
    }


def adapters() -> dict[str, Adapter]:
    """The six kinds bare, then every bundled catalog entry resolved like ``hook-event``."""
    out: dict[str, Adapter] = {f"kind:{k}": ADAPTERS[k] for k in KINDS}
    catalog = load_catalog(None)
    for entry in catalog.entries():
        if entry.kind == "generic" and not entry.lifecycle:
            continue  # the generic kind with another name: covered by kind:generic
        resolved = resolve_adapter(catalog, entry.id)
        assert resolved is not None, entry.id
        out[f"entry:{entry.id}"] = resolved
    return out


def compute(cases: list[tuple[str, Any]]) -> dict[str, Any]:
    """The golden document for ``cases`` (deduplicated payloads and outcomes, by index)."""
    payloads: dict[str, int] = {}
    results: dict[str, int] = {}
    # rows[adapter][event] = [payload index, result index, payload index, result index, …]
    rows: dict[str, dict[str, list[int]]] = {}
    idents: dict[str, Any] = {}
    pairs = sorted({(e, _canon(p)) for e, p in cases})
    distinct = sorted({p for _, p in pairs})
    for name, a in adapters().items():
        idents[name] = identity(a)
        todo = set(pairs)
        if name.startswith("kind:"):  # a kind's own events with every payload seen anywhere
            todo |= {(e, p) for e in OWN_EVENTS[a.kind] for p in distinct}
        out: dict[str, list[int]] = {}
        for event, canon in sorted(todo):
            res = _canon(outcome(a, event, json.loads(canon)))
            pi = payloads.setdefault(canon, len(payloads))
            ri = results.setdefault(res, len(results))
            out.setdefault(event, []).extend((pi, ri))
        rows[name] = out
    return {
        "about": "tests/agents/test_hook_golden.py; inputs and outcomes of the builtin adapters",
        "cases": [[e, payloads[p]] for e, p in pairs],
        "payloads": [json.loads(p) for p in payloads],
        "results": [json.loads(r) for r in results],
        "identity": idents,
        "rows": rows,
    }


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text())


def test_identity_matches_golden(golden: dict[str, Any]) -> None:
    got = {name: identity(a) for name, a in adapters().items()}
    assert got == golden["identity"]


def test_classification_matches_golden(golden: dict[str, Any]) -> None:
    table = adapters()
    assert set(table) == set(golden["rows"])
    wrong = []
    for name, by_event in golden["rows"].items():
        a = table[name]
        for event, pi, ri in _triples(by_event):
            payload = golden["payloads"][pi]
            got = outcome(a, event, payload)
            if got != golden["results"][ri]:
                wrong.append((name, event, payload, got, golden["results"][ri]))
    assert not wrong, f"{len(wrong)} differ; first: {wrong[0]}"


def test_golden_covers_every_real_payload(golden: dict[str, Any]) -> None:
    have = {_canon(p) for p in golden["payloads"]}
    assert all(_canon(p) in have for _, p in fixture_cases())


def _triples(by_event: dict[str, list[int]]) -> list[tuple[str, int, int]]:
    return [
        (e, flat[i], flat[i + 1]) for e, flat in by_event.items() for i in range(0, len(flat), 2)
    ]


def _recorded(path: Path) -> list[tuple[str, Any]]:
    cases = []
    for line in path.read_text().splitlines():
        item = json.loads(line)
        cases.append((item["event"], item["payload"]))
    return cases


if __name__ == "__main__":
    # python -m tests.agents.test_hook_golden [recorded.jsonl]: rewrite the golden file from the
    # adapters as they are now, from the real payloads, the golden's own inputs and an optional
    # JSON-lines file of {"event", "payload"} recorded from a test run.
    cases = fixture_cases()
    if GOLDEN.exists():
        old = json.loads(GOLDEN.read_text())
        cases += [(e, old["payloads"][pi]) for e, pi in old["cases"]]
    if len(sys.argv) > 1:
        cases += _recorded(Path(sys.argv[1]))
    GOLDEN.write_text(json.dumps(compute(cases), separators=(",", ":"), sort_keys=True) + "\n")
