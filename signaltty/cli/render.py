"""Human-readable output for CLI results (pure formatting; the CLI prints it)."""

from __future__ import annotations

import json
from typing import Any


def dumps(obj: Any) -> str:
    """Compact-but-readable JSON for ``--json`` output (one object per line)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def pane_line(p: dict[str, Any]) -> str:
    """One pane: id, lifecycle/attention, live state, title, label."""
    live = p.get("live") or {}
    code = live.get("code")
    state = "live" if live.get("state") == "live" else ("exited" if code is None else f"exited({code})")
    label = f" [{p['label']}]" if p.get("label") else ""
    msg = f" — {p['last_message']}" if p.get("last_message") else ""
    return (
        f"{p['id']}  {p['lifecycle']}/{p['attention']}  {state:<11} {p.get('restore_state', '')} "
        f"{p.get('title', '')}{label}{msg}"
    )


def workspace_line(w: dict[str, Any]) -> str:
    n = len(w.get("pane_ids") or [])
    panes = f"{n} pane" + ("" if n == 1 else "s")
    return f"{w['id']}  handle {w['handle']:<20} name {w['name']!r}  {panes}  {w['cwd']}"


def status(r: dict[str, Any]) -> str:
    lines = [
        f"signaltty {r['version']} ({r['protocol']}) pid {r['pid']}, up {r['uptime_s']:.0f} s",
        f"socket     {r['socket']}",
        f"state dir  {r['state_dir']}",
        f"workspaces {r['workspaces']}, panes {r['panes']} ({r['live_panes']} live), seq {r['seq']}",
    ]
    if r.get("config_error"):
        lines.append(f"config error: {r['config_error']}")
    return "\n".join(lines)


def pane_detail(r: dict[str, Any]) -> str:
    p = r["pane"]
    agent = p.get("agent") or {}
    lines = [
        pane_line(p),
        f"  workspace {p['workspace_id']}  kind {agent.get('kind')}  argv {' '.join(p.get('argv') or [])}",
        f"  cwd {p['cwd']}  size {p['pty_size']['cols']}x{p['pty_size']['rows']}",
    ]
    dec = p.get("pending_decision")
    if dec:
        lines.append("  pending decision:")
        lines += ["    " + line for line in str(dec.get("prompt", "")).splitlines()]
        if dec.get("answerable"):
            lines += [f"    {o['id']} — {o['label']}" for o in dec.get("options") or []]
        else:
            lines.append("    (read-only: answer in the terminal)")
    return "\n".join(lines)


def attention_line(a: dict[str, Any]) -> str:
    label = f" [{a['label']}]" if a.get("label") else ""
    msg = f" — {a['last_message']}" if a.get("last_message") else ""
    return f"{a['attention']:<19} {a['pane_id']}  {a['lifecycle']:<8} {a.get('title', '')}{label}{msg}"


def event_line(ev: dict[str, Any]) -> str:
    payload = ev.get("payload") or {}
    pane = payload.get("pane_id") or (payload.get("pane") or {}).get("id") or ""
    rest = {k: v for k, v in payload.items() if k not in ("pane_id", "pane", "workspace")}
    return f"{ev.get('seq', '-'):>6} {ev['event']:<22} {pane} {dumps(rest) if rest else ''}".rstrip()


def explain(r: dict[str, Any]) -> str:
    """``pane explain`` as text: one header block, then one line per rule (winner marked)."""
    matched = r.get("matched") or {}
    lines = [
        f"pane {r['pane_id']}  kind {r['kind']}"
        + (f"  catalog {r['catalog_id']}" if r.get("catalog_id") else "")
        + f"  process {r.get('process') or '-'}  {'live' if r['live'] else 'not live'}",
        f"authority {r['authority']}  hooked {str(r['hooked']).lower()}  "
        f"screen rules {'classify' if r['classifies'] else 'do not classify'}  (rules from {r['source']})",
        f"winner: {matched['id']} ({matched['state']}, #{matched['index']})" if matched else "winner: none",
    ]
    for i, rule in enumerate(r.get("rules") or []):
        mark = "*" if matched and matched.get("index") == i else ("+" if rule["matched"] else " ")
        lines.append(
            f" {mark} {i:>2} {rule['id']:<28} {rule['state']:<8} {rule['priority']:>6}  {rule['region']}"
        )
    if r.get("osc_progress"):
        lines.append(f"osc progress: {r['osc_progress'].get('raw')}")
    ps = r.get("program_status")
    if ps:
        lines.append(f"program status: {ps.get('state') or '-'} ({len(ps.get('children') or [])} child records)")
    rec = r.get("recovery")
    if rec:
        lines.append(
            "recovery: "
            + ("armed" if rec["armed"] else "disabled")
            + (f", evidence since {rec['since']}, fires in {rec['fires_in_s']} s" if rec["evidence"] else ", no evidence")
        )
    return "\n".join(lines)
