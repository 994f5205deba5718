"""What ``signaltty top`` shows: the view state and its rendering into styled lines (pure).

No terminal and no socket here: :func:`render` turns a :class:`TopState` and a terminal size
into lines of ``(style, text)`` fragments that ``cli/top.py`` hands to prompt_toolkit, so the
layout rules (columns, truncation, the "too small" view) can be read and checked on their own.
Every text that comes from the daemon (titles, labels, messages, workspace names, permission
inputs, error messages) goes through :func:`signaltty.core.sanitize.sanitize_text` here, and
every cell is cut to its width in terminal cells (wide characters count twice).
Spec: issue 13 §10.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from prompt_toolkit.utils import get_cwidth

from signaltty.core.sanitize import sanitize_text
from signaltty.core.states import ATTENTION_RANK, Attention
from signaltty.core.subject import SUBJECT_KEYS

Fragment = tuple[str, str]
Line = list[Fragment]

# Below this size the table cannot be laid out: a short "terminal too small" view instead.
MIN_COLS: Final = 40
MIN_ROWS: Final = 8
# Header (title bar + column names) and footer (message + keys) lines around the table.
HEADER_LINES: Final = 2
FOOTER_LINES: Final = 2
# Longest text kept from the daemon for one cell before fitting (cut again to the column).
TEXT_LIMIT: Final = 300

ATTENTION_LABEL: Final = {
    "none": "-",
    "unread": "unread",
    "warning": "warning",
    "input_required": "input",
    "permission_required": "permission",
    "error": "error",
}
# ANSI colour names so the view follows the person's palette and works in 16-colour terminals.
ATTENTION_STYLE: Final = {
    "none": "ansibrightblack",
    "unread": "ansicyan bold",
    "warning": "ansiyellow bold",
    "input_required": "ansimagenta bold",
    "permission_required": "ansired bold",
    "error": "bg:ansired ansiwhite bold",
}
LIFECYCLE_STYLE: Final = {
    "working": "ansigreen",
    "blocked": "ansiyellow",
    "done": "ansiblue",
    "failed": "ansired",
    "idle": "",
    "unknown": "ansibrightblack",
    "exited": "ansibrightblack",
}
DEAD_STYLE: Final = "ansibrightblack"
KEYS_HELP: Final = "enter attach  s seen  a allow  d deny  n next unread  j/k move  q quit"
# tool_input fields that say what a permission is for, most telling first.
_INPUT_KEYS: Final = (*SUBJECT_KEYS, "description")


# One line of an indented JSON object: ``  "command": "make deploy",`` → ``make deploy``.
_LOOSE_FIELD: Final = re.compile(r'\s*"[^"]*":\s*"?(.*?)"?,?\s*$')


@dataclass
class Confirm:
    """An "Allow once" waiting for the person's ``y``: the exact decision it will answer."""

    pane_id: str
    decision_id: str
    summary: str


@dataclass
class TopState:
    """Everything the view shows; ``cli/top.py`` updates it from the daemon and the keys.

    ``panes`` are Pane objects (protocol.md §4) in ``pane.list`` order, ``workspaces`` maps a
    workspace id to its handle (unique, unlike names: two "workspace"s stay apart), ``permissions``
    maps a pane id to its ``permission.list`` item.
    """

    panes: list[dict[str, Any]] = field(default_factory=list)
    workspaces: dict[str, str] = field(default_factory=dict)
    permissions: dict[str, dict[str, Any]] = field(default_factory=dict)
    # watched hosts by name: ``hosts.list`` items (issue 16), for their targets and states
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    selected: str | None = None
    scroll: int = 0
    message: str = ""
    message_style: str = ""
    connected: bool = True
    offline_reason: str = ""
    confirm: Confirm | None = None

    def set_panes(self, panes: list[dict[str, Any]]) -> None:
        """Replace the panes, keeping the selection on the same pane (or the same row)."""
        old_ids = [p.get("id") for p in self.panes]
        old_index = old_ids.index(self.selected) if self.selected in old_ids else 0
        self.panes = panes
        ids = [p.get("id") for p in panes]
        if self.selected not in ids:
            self.selected = ids[min(old_index, len(ids) - 1)] if ids else None
        if self.confirm is not None and self.confirm.pane_id not in ids:
            self.confirm = None

    def selected_pane(self) -> dict[str, Any] | None:
        return next((p for p in self.panes if p.get("id") == self.selected), None)

    def move(self, delta: int) -> None:
        """Move the selection ``delta`` rows (clamped)."""
        if not self.panes:
            return
        ids = [p.get("id") for p in self.panes]
        i = ids.index(self.selected) if self.selected in ids else 0
        self.selected = ids[max(0, min(len(ids) - 1, i + delta))]

    def next_unread(self) -> str | None:
        """Select the next pane needing attention and return its id (``None``: none does).

        The order is ``focus.next_unread``'s (protocol.md §5): highest attention, then most
        recent activity, then pane id; pressing again goes on from the selected pane, round.
        """
        needing = [p for p in self.panes if p.get("attention", "none") != "none"]
        if not needing:
            return None
        needing.sort(key=_focus_key, reverse=True)
        ids: list[str] = [p["id"] for p in needing]
        target = ids[(ids.index(self.selected) + 1) % len(ids)] if self.selected in ids else ids[0]
        self.selected = target
        return target


def _rank(attention: object) -> int:
    """The attention's rank (states.md §1); an unknown value (a newer daemon) ranks 0."""
    try:
        return ATTENTION_RANK[Attention(str(attention))]
    except ValueError:
        return 0


def _focus_key(p: dict[str, Any]) -> tuple[int, str, str]:
    # ISO-8601 UTC stamps of one format compare in time order as strings
    return (
        _rank(p.get("attention", "none")),
        str(p.get("last_activity_at") or ""),
        str(p.get("id") or ""),
    )


def clean(value: object, limit: int = TEXT_LIMIT) -> str:
    """One line of untrusted text made safe to draw (escapes, controls, bidi removed)."""
    if value is None:
        return ""
    return sanitize_text(str(value), limit)


def fit(text: str, width: int) -> str:
    """``text`` cut (with "…") or padded with spaces to exactly ``width`` terminal cells."""
    if width <= 0:
        return ""
    if get_cwidth(text) <= width:
        return text + " " * (width - get_cwidth(text))
    out, used = [], 0
    for ch in text:
        w = get_cwidth(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…" + " " * (width - 1 - used)


def age(seconds: float) -> str:
    """A short duration: ``42s``, ``5m``, ``3h``, ``2d`` (negative clock skew reads ``0s``)."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def _stamp(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()  # Python ≥ 3.11 reads a final "Z"
    except ValueError:
        return None


def dead_state(p: dict[str, Any]) -> str | None:
    """What a pane without a running program shows instead of its lifecycle, or None when
    it is live: ``exited 0``/``exited 1`` (its exit code), ``exited``, ``restored`` (came
    back from a snapshot, program gone) or ``resumable`` (an agent `pane resume` can start
    again). Source: the Pane's ``restore_state`` and ``live`` (states.md §4)."""
    restore = str(p.get("restore_state") or "LIVE")
    live_field = p.get("live")
    live = live_field if isinstance(live_field, dict) else {}
    if restore in ("RESTORED", "RESUMABLE"):
        return restore.lower()
    if restore == "EXITED" or live.get("state") == "exited":
        code = live.get("code")
        return f"exited {code}" if isinstance(code, int) else "exited"
    return None


def why_not_attach(p: dict[str, Any], hosts: dict[str, dict[str, Any]] | None = None) -> str | None:
    """The footer message for Enter on a pane with no program to attach to here, else None:
    one that has ended, or a watched host's pane (attached through ``--host``: ``hosts`` maps
    host names to ``hosts.list`` items, for the ssh target to name). Ids are shortened as
    `pane list` shows them (at least; a prefix is accepted)."""
    if p.get("host"):
        host = clean(p["host"], 40)
        rid = clean(str(p.get("id")).partition("/")[2], 80)[: len("pane_") + 8]
        target = clean(((hosts or {}).get(str(p["host"])) or {}).get("target"), 200) or host
        return f"{host}/{rid} runs on {host}: signaltty --host {target} pane attach {rid}"
    dead = dead_state(p)
    if dead is None:
        return None
    pid = clean(p.get("id"), 80)[: len("pane_") + 8]
    if dead == "resumable":
        return f"cannot attach: {pid} is not running; start it again: signaltty pane resume {pid}"
    if dead == "restored":
        return (
            f"cannot attach: {pid} was restored, its program is gone; "
            f"output: signaltty pane read {pid}"
        )
    code = dead.removeprefix("exited").strip()
    ended = f"exited (code {code})" if code else "exited"
    return f"cannot attach: {pid} has {ended}; output: signaltty pane read {pid}"


def pane_age(p: dict[str, Any], now: float) -> str:
    """Time in the current lifecycle (``lifecycle_since``, else since the pane was created);
    for a pane whose program is gone, the time since it ended (a new-user pass found every
    dead pane at a useless ``0s`` when it was frozen at the last output)."""
    since = _stamp(p.get("lifecycle_since")) or _stamp(p.get("created_at"))
    if since is None:
        return "-"
    return age(now - since)


def _input_from_prompt(prompt: object) -> object:
    """The tool input of a native prompt ``Allow <tool>?\\n<JSON>`` (agents/permission.py)."""
    if not isinstance(prompt, str) or "\n" not in prompt:
        return None
    rest = prompt.split("\n", 1)[1]
    try:
        return json.loads(rest)
    except ValueError:
        pass
    # Cut at 8 KiB, so no longer JSON: the first ``"key": value`` line is still telling.
    for line in rest.splitlines():
        m = _LOOSE_FIELD.match(line)
        if m:
            return m.group(1)
    return rest


def permission_summary(item: dict[str, Any]) -> str:
    """One safe line saying what a pending permission would allow: ``Bash: rm -rf build/``.

    Args:
        item: a ``permission.list`` item (or a Pane's ``pending_decision``): ``tool_name``,
            ``tool_input`` when the daemon sends it, else the ``prompt`` text.

    Returns:
        ``<tool>: <the command, file or URL>`` — the first line only (`` …`` marks that more
        lines follow), sanitized, at most ``TEXT_LIMIT`` characters; the prompt's first line
        when nothing better is known.
    """
    tool = clean(item.get("tool_name"), 60)
    value = item.get("tool_input")
    if value is None and tool:  # a native prompt: "Allow <tool>?" then the input as JSON
        value = _input_from_prompt(item.get("prompt"))
    detail = ""
    if isinstance(value, dict):
        picked = next(
            (value[k] for k in _INPUT_KEYS if isinstance(value.get(k), str) and value[k].strip()),
            None,
        )
        if picked is None and len(value) == 1 and isinstance(next(iter(value.values())), str):
            picked = next(iter(value.values()))
        detail = (
            picked
            if picked is not None
            else json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        )
    elif isinstance(value, str):
        detail = value
    elif value is not None:
        detail = json.dumps(value, ensure_ascii=False, default=str)
    lines = [ln for ln in detail.strip().splitlines() if ln.strip()]
    first = clean(lines[0]) if lines else ""
    if first and len(lines) > 1:
        first += " …"
    if not first:
        prompt = str(item.get("prompt") or "").strip().splitlines()
        return clean(prompt[0]) if prompt else tool
    return f"{tool}: {first}" if tool else first


def _columns(cols: int) -> list[tuple[str, int]]:
    """Column names and widths for a terminal ``cols`` wide (the marker column not counted)."""
    rest = cols - 2
    if cols < 60:
        fixed = [("LIFECYCLE", 10), ("ATTENTION", 11)]
        return [("TITLE", rest - 21)] + fixed
    fixed_w = 10 + 11 + 6  # lifecycle, attention, age (each with its separating space)
    free = rest - fixed_w
    ws = max(8, min(16, free // 5))
    title = max(12, min(40, (free - ws) * 2 // 5))
    msg = free - ws - title
    return [
        ("WORKSPACE", ws),
        ("TITLE", title),
        ("LIFECYCLE", 10),
        ("ATTENTION", 11),
        ("AGE", 6),
        ("MESSAGE", msg),
    ]


def _row(
    p: dict[str, Any], state: TopState, cols: list[tuple[str, int]], now: float, selected: bool
) -> Line:
    title = clean(p.get("title"))
    if p.get("label"):
        title += f" [{clean(p.get('label'), 80)}]"
    life = str(p.get("lifecycle", "unknown"))
    att = str(p.get("attention", "none"))
    dead = dead_state(p)
    if p.get("reachable") is False:  # a watched host's pane while its link is down
        dead = "offline"  # (the header says "NAME unreachable"; the column holds 9 cells)
    dim = DEAD_STYLE if dead is not None else ""  # a pane with no program looks dead
    failed = dead is not None and life == "failed"
    workspace = state.workspaces.get(str(p.get("workspace_id")), "")
    if p.get("host"):  # another host's workspaces are not in workspace.list: the record's
        workspace = f"{clean(p['host'], 40)}/{clean(p.get('workspace_name') or '', 60)}"
    cells = {
        "WORKSPACE": (clean(workspace), dim),
        "TITLE": (title, "bold" if att != "none" else dim),
        "LIFECYCLE": (
            (dead, "ansired" if failed else DEAD_STYLE)
            if dead is not None
            else (life, LIFECYCLE_STYLE.get(life, ""))
        ),
        "ATTENTION": (ATTENTION_LABEL.get(att, clean(att, 20)), ATTENTION_STYLE.get(att, "")),
        "AGE": (pane_age(p, now), dim),
        "MESSAGE": (clean(p.get("last_message")), dim),
    }
    base = "reverse" if selected else ""
    line: Line = [(base, "> " if selected else "  ")]
    for name, width in cols:
        text, style = cells[name]
        line.append((f"{base} {style}".strip(), fit(text, width - 1) + " "))
    return line


def _permission_line(p: dict[str, Any], state: TopState, width: int, selected: bool) -> Line | None:
    item = state.permissions.get(str(p.get("id")))
    if item is None:
        dec = p.get("pending_decision")
        if not isinstance(dec, dict):
            return None
        item = dec
    how = (
        "  [a] allow once  [d] deny"
        if item.get("answerable")
        else "  (answer in its terminal: enter)"
    )
    text = "  ? " + permission_summary(item)
    room = width - get_cwidth(how)
    if room < 12:  # too narrow for both: the command matters more than the key help
        return [("ansired", fit(text, width))]
    return [("ansired bold" if selected else "ansired", fit(text, room)), ("ansibrightblack", how)]


def _too_small(cols: int, rows: int) -> list[Line]:
    lines = ["terminal too small", f"{cols}x{rows}, need {MIN_COLS}x{MIN_ROWS}", "q quits"]
    return [[("bold", fit(text, cols))] for text in lines[: max(rows, 1)]]


def _header(state: TopState, cols: int, now: float) -> Line:
    needing: dict[str, int] = {}
    for p in state.panes:
        att = str(p.get("attention", "none"))
        if att != "none":
            needing[att] = needing.get(att, 0) + 1
    parts = [f"{len(state.panes)} pane" + ("" if len(state.panes) == 1 else "s")]
    for att in sorted(needing, key=_rank, reverse=True):
        parts.append(f"{needing[att]} {ATTENTION_LABEL.get(att, clean(att, 20))}")
    for name, host in sorted(state.hosts.items()):  # watched hosts not connected now
        if host.get("state") != "connected":
            parts.append(f"{clean(name, 40)} {clean(host.get('state'), 20)}")
    left = "signaltty top  " + "  ".join(parts)
    clock = datetime.fromtimestamp(now).strftime("%H:%M:%S")
    if not state.connected:
        left = "signaltty top  " + (
            clean(state.offline_reason) or "daemon not running; reconnecting"
        )
        return [("reverse ansired", fit(left, cols - 9) + " " + clock)]
    return [("reverse", fit(left, cols - 9) + " " + clock)]


def render(state: TopState, cols: int, rows: int, now: float) -> list[Line]:
    """The whole screen as ``rows`` lines of styled fragments, each ``cols`` cells wide at most.

    Args:
        state: what to show; ``state.scroll`` is updated so the selection stays visible.
        cols, rows: the terminal size in cells.
        now: wall-clock seconds, for the clock and the ages.

    Returns:
        At most ``rows`` lines; below ``MIN_COLS`` x ``MIN_ROWS`` a short "terminal too
        small" view (the keys keep working, ``q`` still quits).
    """
    if cols < MIN_COLS or rows < MIN_ROWS:
        return _too_small(cols, rows)
    columns = _columns(cols)
    head: Line = [("bold", "  " + "".join(fit(name, width - 1) + " " for name, width in columns))]
    body: list[Line] = []
    spans: dict[str, tuple[int, int]] = {}
    for p in state.panes:
        sel = p.get("id") == state.selected
        start = len(body)
        body.append(_row(p, state, columns, now, sel))
        extra = _permission_line(p, state, cols, sel)
        if extra is not None:
            body.append(extra)
        spans[str(p.get("id"))] = (start, len(body))
    height = rows - HEADER_LINES - FOOTER_LINES
    if not body:
        body = [[("ansibrightblack", fit("  (no panes: start one with `signaltty new`)", cols))]]
    if state.selected in spans:
        start, end = spans[state.selected]
        if start < state.scroll:
            state.scroll = start
        elif end > state.scroll + height:
            state.scroll = end - height
    state.scroll = max(0, min(state.scroll, max(0, len(body) - height)))
    shown = body[state.scroll : state.scroll + height]
    shown += [[("", "")]] * (height - len(shown))
    return [
        _header(state, cols, now),
        head,
        *shown,
        _footer_message(state, cols),
        [("ansibrightblack", fit(KEYS_HELP, cols))],
    ]


def _footer_message(state: TopState, cols: int) -> Line:
    if state.confirm is not None:
        text = f"Allow once: {state.confirm.summary}?  y allows, any other key cancels"
        return [("ansiyellow bold", fit(text, cols))]
    return [(state.message_style, fit(clean(state.message), cols))]


__all__ = [
    "Confirm",
    "MIN_COLS",
    "MIN_ROWS",
    "TopState",
    "age",
    "dead_state",
    "fit",
    "permission_summary",
    "render",
]
