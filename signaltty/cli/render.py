"""Human-readable output for CLI results (pure formatting; the CLI prints it).

Every string from the daemon may come from a pane, a hook payload or a manifest, so it is
printed through the terminal sanitizer (agents.md §7.7; issue 10 §7): a field of a line
through :func:`clean` (one line, no escape sequence, control or invisible character),
multi-line text through :func:`block`, JSON through :func:`dumps` (which escapes what a
terminal would act on while decoding to the same value).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from signaltty.core.sanitize import UNSAFE_IN_JSON, cut, escape_json_unsafe, for_terminal
from signaltty.core.subject import SUBJECT_KEYS, SUBJECT_MAX, permission_subject  # noqa: F401 - re-exported

_VISIBLE: Final = re.compile("[\x00-\x08\x0b-\x1f]|" + UNSAFE_IN_JSON.pattern)


def dumps(obj: Any) -> str:
    """Compact-but-readable JSON for ``--json`` output (one object per line); code points a
    terminal would act on (C1 controls, bidi and invisible characters) are ``\\u`` escapes."""
    return escape_json_unsafe(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


def clean(value: Any) -> str:
    """One field of an output line, safe for a terminal and never a line break (§7.7)."""
    return for_terminal(str(value))


def block(text: str) -> str:
    """Multi-line text (a pane's lines) safe for a terminal; indentation and tabs kept."""
    return for_terminal(text, multiline=True)


def visible(text: str) -> str:
    """Text with escape sequences and controls shown, not acted on (``ESC`` → ``\\x1b``):
    ``pane read --raw`` on a terminal. Line breaks and tabs stay."""

    def esc(m: re.Match[str]) -> str:
        cp = ord(m.group())
        return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"

    return _VISIBLE.sub(esc, text)


def pane_line(p: dict[str, Any], short: dict[str, str] | None = None) -> str:
    """One pane: id (its short form from ``short``, core/ids.py ``short_ids``, when given),
    lifecycle/attention, live state, title, label."""
    live = p.get("live") or {}
    code = live.get("code")
    state = (
        "live"
        if live.get("state") == "live"
        else ("exited" if code is None else f"exited({clean(code)})")
    )
    if p.get("reachable") is False:  # a watched host's pane while its link is down
        state = "unreachable"
    label = f" [{clean(p['label'])}]" if p.get("label") else ""
    msg = f" — {clean(p['last_message'])}" if p.get("last_message") else ""
    return (
        f"{clean((short or {}).get(p['id'], p['id']))}  "
        f"{clean(p['lifecycle'])}/{clean(p['attention'])}  {state:<11} "
        f"{clean(p.get('restore_state', ''))} {clean(p.get('title', ''))}{label}{msg}"
    )


def workspace_line(w: dict[str, Any]) -> str:
    n = len(w.get("pane_ids") or [])
    panes = f"{n} pane" + ("" if n == 1 else "s")
    return (
        f"{clean(w['id'])}  handle {clean(w['handle']):<20} name {clean(repr(w['name']))}  "
        f"{panes}  {clean(w['cwd'])}"
    )


def status(r: dict[str, Any]) -> str:
    lines = [
        f"signaltty {clean(r['version'])} ({clean(r['protocol'])}) pid {r['pid']}, "
        f"up {r['uptime_s']:.0f} s"
        + (f", restarted in place {r['restarts']}×" if r.get("restarts") else ""),
        f"socket     {clean(r['socket'])}",
        f"state dir  {clean(r['state_dir'])}",
        f"workspaces {r['workspaces']}, panes {r['panes']} ({r['live_panes']} live), "
        f"seq {r['seq']}",
    ]
    n = r.get("notifications") or {}
    if n:
        state = (
            "off (notifications.enabled = false, or SIGNALTTY_NOTIFY=0)"
            if not n.get("enabled")
            else f"on, mode {clean(n.get('mode'))}"
            if n.get("available")
            else f"unavailable ({clean(n.get('reason') or 'not connected yet')})"
        )
        lines.append(f"notifications {state}")
    b = r.get("dbus") or {}
    if b:
        state = (
            "off (dbus.enabled = false, or SIGNALTTY_DBUS=0)"
            if not b.get("enabled")
            else "on (name owned)"
            if b.get("name_owned")
            else "unavailable (no session bus, or the name is taken)"
        )
        lines.append(f"D-Bus      {state}")
    for t in r.get("tasks") or []:
        if t.get("state") in ("running", "done"):
            continue
        why = f"; last error: {clean(t['last_error'])}" if t.get("last_error") else ""
        again = f", next start in {t['next_in_s']:.0f} s" if t.get("next_in_s") is not None else ""
        lines.append(
            f"task {clean(t.get('name'))}: {clean(t.get('state'))} "
            f"({t.get('restarts', 0)} restarts{again}{why})"
        )
    h = r.get("hardening") or {}
    if h.get("dumpable"):
        lines.append("hardening: the daemon is dumpable: pane processes may ptrace it")
    if h.get("ptrace_scope") in ("absent", 0):
        scope = "no Yama" if h["ptrace_scope"] == "absent" else "Yama ptrace_scope 0"
        lines.append(
            f"hardening: {scope}: a pane process can ptrace your other processes (docs/security.md)"
        )
    for host in r.get("hosts") or []:  # watched hosts (issue 16; `signaltty hosts list`)
        if not isinstance(host, dict):
            continue
        error = f": {clean(host['error'])[:200]}" if host.get("error") else ""
        lines.append(
            f"host {clean(host.get('name')):<10} {clean(host.get('state')):<11} "
            f"{clean(host.get('target'))}, panes {clean(host.get('panes', 0))}, "
            f"attention {clean(host.get('attention', 0))}{error}"
        )
    if r.get("config_error"):
        lines.append(f"config error: {clean(r['config_error'])}")
    return "\n".join(lines)


def pane_detail(r: dict[str, Any], short: dict[str, str] | None = None) -> str:
    """``pane get``: the pane's line (its short id from ``short`` when given), workspace,
    argv, cwd, size and pending decision."""
    p = r["pane"]
    agent = p.get("agent") or {}
    argv = " ".join(clean(a) for a in p.get("argv") or [])
    lines = [
        pane_line(p, short),
        f"  workspace {clean(p['workspace_id'])}  kind {clean(agent.get('kind'))}  argv {argv}",
        f"  cwd {clean(p['cwd'])}  size {p['pty_size']['cols']}x{p['pty_size']['rows']}",
    ]
    lines += launch_lines(agent)
    if agent.get("resume_argv"):  # what `pane resume` runs, kept launch options included
        lines.append("  resume " + " ".join(clean(a) for a in agent["resume_argv"]))
    dec = p.get("pending_decision")
    if dec:
        lines.append("  pending decision:")
        lines += ["    " + clean(line) for line in str(dec.get("prompt", "")).splitlines()]
        if dec.get("answerable"):
            lines += [
                f"    {clean(o['id'])} — {clean(o['label'])}" for o in dec.get("options") or []
            ]
        else:
            lines.append("    (read-only: answer in the terminal)")
    return "\n".join(lines)


def launch_lines(agent: dict[str, Any]) -> list[str]:
    """What ``pane resume`` adds to the agent's own resume command: the stored launch flags
    (``launch_prefix``) and environment (``config_env``); empty when it adds nothing
    (issue 10, attack 3, A4: both were invisible)."""
    lines = []
    prefix = agent.get("launch_prefix") or []
    if prefix:
        lines.append("  launch flags " + " ".join(clean(a) for a in prefix))
    env = agent.get("config_env") or {}
    if env:
        lines.append("  launch env " + " ".join(f"{clean(k)}={clean(v)}" for k, v in env.items()))
    if agent.get("session_cwd"):  # where the agent's hooks said its session runs
        lines.append(f"  session dir {clean(agent['session_cwd'])}")
    return lines


def permission_line(x: dict[str, Any], short: dict[str, str] | None = None) -> str:
    """``permission list``: ids (the pane's short form from ``short`` when given), agent,
    tool, answerable, and what is approved."""
    subject = permission_subject(str(x.get("prompt") or ""))
    pane = (short or {}).get(x["pane_id"], x["pane_id"])
    return (
        f"{clean(x['decision_id'])}  {clean(pane)}  {clean(x['agent'])}  "
        f"{clean(x.get('tool_name') or '-')}  {'answerable' if x['answerable'] else 'read-only'}  "
        f"{subject or clean((str(x.get('prompt') or '').splitlines() or [''])[0])}"
    ).rstrip()


def permission_detail(x: dict[str, Any]) -> str:
    """``permission show``: ids, agent, tool and the whole request, so a person can read
    every field of what "allow" approves before answering (issue 10, third attack pass, A3).

    A native prompt's tool input is printed as indented JSON through :func:`dumps`'s
    escaping (controls, bidi, invisible and filler characters appear as ``\\u`` escapes,
    so nothing hides); any other prompt, or one cut at its 8 KiB limit, as sanitized text.
    """
    prompt = str(x.get("prompt") or "")
    question, _, rest = prompt.partition("\n")
    lines = [
        f"decision  {clean(x['decision_id'])}",
        f"pane      {clean(x['pane_id'])}",
        f"agent     {clean(x.get('agent') or '-')}",
        f"tool      {clean(x.get('tool_name') or '-')}",
        f"session   {clean(x.get('agent_session_id') or '-')}",
        f"received  {clean(x.get('received_at') or '-')}",
        f"expires   {clean(x.get('deadline') or '-')} (then the agent asks in its terminal)",
        f"answer    {'here or in the terminal' if x.get('answerable') else 'in the terminal'}",
    ]
    if x.get("answerable"):
        options = ", ".join(
            f"{clean(o['id'])} ({clean(o['label'])})" for o in x.get("options") or []
        )
        lines.append(f"options   {options}")
    lines.append(clean(question))
    try:
        data = json.loads(rest) if rest.strip() else None
    except ValueError:
        data = None
    if data is not None:
        lines.append(escape_json_unsafe(json.dumps(data, indent=2, ensure_ascii=False)))
    elif rest.strip():
        if rest.lstrip().startswith("{"):
            lines.append("(the request was cut at 8 KiB; the rest is in the agent's terminal)")
        lines.append(block(rest))
    return "\n".join(lines)


def attention_line(a: dict[str, Any], short: dict[str, str] | None = None) -> str:
    """One pane needing you: attention, id (short form from ``short`` when given), lifecycle,
    title."""
    label = f" [{clean(a['label'])}]" if a.get("label") else ""
    msg = f" — {clean(a['last_message'])}" if a.get("last_message") else ""
    return (
        f"{clean(a['attention']):<19} {clean((short or {}).get(a['pane_id'], a['pane_id']))}  "
        f"{clean(a['lifecycle']):<8} "
        f"{clean(a.get('title', ''))}{label}{msg}"
    )


EVENT_WIDTH: Final = 20  # the longest event names (notification.created, server.will_shutdown)
PANE_WIDTH: Final = len("pane_") + 8  # the column shows ids cut to this width (core/ids.py)
SUMMARY_MAX: Final = 160


def event_line(ev: dict[str, Any], at: str = "") -> str:
    """``subscribe`` plain output: one aligned line per event (issue 13 item 9).

    Columns: ``at`` (the time the client received it, ``HH:MM:SS``), seq (right-aligned,
    ``-`` for events without one), event name, pane (the first 13 characters of its id:
    ``pane_`` plus 8 hex digits, or ``-``), and a summary of the payload
    (:func:`event_summary`). Every field is sanitized; the summary is cut to
    :data:`SUMMARY_MAX` characters.
    """
    payload = ev.get("payload") or {}
    pane = "-"
    if isinstance(payload, dict):
        for holder, key in (
            (payload, "pane_id"),
            (payload.get("pane"), "id"),
            (payload.get("notification"), "pane_id"),
        ):
            if isinstance(holder, dict) and holder.get(key):
                pane = holder[key]
                break
    seq = ev.get("seq")
    return (
        f"{clean(at):<8} {clean('-' if seq is None else seq):>6}  "
        f"{clean(ev.get('event', '?')):<{EVENT_WIDTH}}  "
        f"{clean(str(pane)[:PANE_WIDTH]):<{PANE_WIDTH}}  "
        f"{cut(clean(event_summary(ev)), SUMMARY_MAX)}"
    ).rstrip()


def event_summary(ev: dict[str, Any]) -> str:
    """What an event says, in a few words (raw values; :func:`event_line` sanitizes)."""
    name = str(ev.get("event") or "")
    p = ev.get("payload") or {}
    if not isinstance(p, dict):
        return ""
    if name.startswith("agent."):
        return f"{p.get('prev')} → {p.get('lifecycle')} ({p.get('source')})"
    if name in ("attention.created", "attention.updated"):
        return f"{p.get('prev')} → {p.get('attention')} ({p.get('cause')}, {p.get('source')})"
    if name == "attention.cleared":
        return f"{p.get('prev')} → none ({p.get('reason')})"
    if name == "notification.created":
        n = p.get("notification") or {}
        body = str(n.get("body") or "").strip().splitlines()
        return f"[{n.get('severity')}] {n.get('title')}" + (f": {body[0]}" if body else "")
    if name == "decision.created":
        d = p.get("decision") or {}
        return f"{d.get('id')}: {(str(d.get('prompt') or '').splitlines() or [''])[0]}"
    if name == "decision.answered":
        return f"{p.get('decision_id')} → {p.get('option_id')}"
    if name == "decision.cleared":
        return f"{p.get('decision_id')} ({p.get('reason')})"
    if name == "pane.exited":
        return f"code {p.get('code')}"
    if name == "server.restarting":
        return f"daemon restarting in place, {p.get('panes')} live panes kept"
    if name == "server.restarted":
        return (
            f"daemon restarted (signaltty {p.get('previous_version')} → {p.get('version')}), "
            f"{p.get('panes_kept')} panes kept"
        )
    pane = p.get("pane")
    if isinstance(pane, dict):
        if name == "pane.updated":
            changed = [str(c) for c in p.get("changed") or []]
            agent_field = pane.get("agent")
            agent = agent_field if isinstance(agent_field, dict) else {}
            return ", ".join(f"{c}: {pane[c] if c in pane else agent.get(c)}" for c in changed)
        if name == "pane.resized":
            size = pane.get("pty_size") or {}
            return f"{size.get('cols')}x{size.get('rows')}"
        argv = pane.get("argv") or []
        return " ".join(str(a) for a in argv) if isinstance(argv, list) else ""
    ws = p.get("workspace")
    if isinstance(ws, dict):
        return f"{ws.get('handle')} ({ws.get('name')})"
    if name == "pane.progress":
        prog = p.get("osc_progress") or {}
        percent = prog.get("percent")
        return f"{prog.get('state')} {percent if percent is not None else ''}".strip()
    rest = {k: v for k, v in p.items() if k not in ("pane_id", "pane", "workspace")}
    return dumps(rest) if rest else ""


def explain(r: dict[str, Any]) -> str:
    """``pane explain`` as text: one header block, then one line per rule (winner marked)."""
    matched = r.get("matched") or {}
    lines = [
        f"pane {clean(r['pane_id'])}  kind {clean(r['kind'])}"
        + (f"  catalog {clean(r['catalog_id'])}" if r.get("catalog_id") else "")
        + f"  process {clean(r.get('process') or '-')}  {'live' if r['live'] else 'not live'}",
        f"authority {clean(r['authority'])}  hooked {str(r['hooked']).lower()}  "
        f"screen rules {'classify' if r['classifies'] else 'do not classify'}  "
        f"(rules from {clean(r['source'])})",
        f"winner: {clean(matched['id'])} ({clean(matched['state'])}, #{matched['index']})"
        if matched
        else "winner: none",
    ]
    for i, rule in enumerate(r.get("rules") or []):
        mark = "*" if matched and matched.get("index") == i else ("+" if rule["matched"] else " ")
        lines.append(
            f" {mark} {i:>2} {clean(rule['id']):<28} {clean(rule['state']):<8} "
            f"{clean(rule['priority']):>6}  "
            f"{clean(rule['region'])}"
        )
    if r.get("osc_progress"):
        lines.append(f"osc progress: {clean(r['osc_progress'].get('raw'))}")
    ps = r.get("program_status")
    if ps:
        lines.append(
            f"program status: {clean(ps.get('state') or '-')} "
            f"({len(ps.get('children') or [])} child records)"
        )
    rec = r.get("recovery")
    if rec:
        lines.append(
            "recovery: "
            + ("armed" if rec["armed"] else "disabled")
            + (
                f", evidence since {clean(rec['since'])}, fires in {clean(rec['fires_in_s'])} s"
                if rec["evidence"]
                else ", no evidence"
            )
        )
    return "\n".join(lines)
