"""``signaltty status --format waybar|i3blocks|tmux``: panes needing you, in a bar's format.

Status bars run their command every few seconds, so this command is built for that: one
``pane.list`` request with a 2 s limit, stdlib only, and it never fails the bar. Without a
daemon it prints a neutral ``off`` in the bar's format and exits 0 (nothing on stderr: a bar
that flashes an error every second helps nobody); when the daemon cannot be used (a socket
that is not the user's own, no answer in time, a protocol error) it prints ``n/a``, says why
on stderr (and in waybar's tooltip) and still exits 0.

Counts are panes by attention (states.md §1), most urgent first; the bar's class/colour is
the most urgent one present. Formats (docs/status-bars.md has the bar configurations):

- waybar: one JSON object ``{"text", "alt", "tooltip", "class", "percentage"}`` for a custom
  module with ``"return-type": "json"``; ``class``/``alt`` is ``error``, ``permission``,
  ``input``, ``warning``, ``unread``, ``idle``, ``off`` or ``unavailable``; ``percentage``
  is the share of panes needing you (0-100). Text and tooltip are Pango-escaped (waybar
  reads both as markup), and pane titles in the tooltip are sanitized.
- i3blocks: three lines, ``full_text``, ``short_text`` and the colour ``#RRGGBB``.
- tmux: one line with ``#[fg=…]`` styles for ``status-right`` (``#(signaltty status
  --format tmux)``); it holds no pane text, only counts and fixed words.

Spec: issue 13 §11.
"""

from __future__ import annotations

import html
import json
import sys
import time
from typing import TYPE_CHECKING, Any, Final

from signaltty.core.sanitize import sanitize_text
from signaltty.proto import envelope
from signaltty.proto.client import Client, ConnectError, UntrustedServer
from signaltty.proto.envelope import SignalttyError

if TYPE_CHECKING:
    from signaltty.proto.sshlink import Remote

# (attention, class, word, letter, i3blocks colour, tmux style), most urgent first
# (ATTENTION_RANK, states.md §1).
CATEGORIES: Final = (
    ("error", "error", "error", "E", "#FF5555", "red,bold"),
    ("permission_required", "permission", "perm", "P", "#FF8700", "colour208,bold"),
    ("input_required", "input", "input", "I", "#FFAF00", "colour214"),
    ("warning", "warning", "warn", "W", "#FFD75F", "yellow"),
    ("unread", "unread", "unread", "U", "#5FAFFF", "cyan"),
)
IDLE: Final = ("idle", "#8A8A8A", "colour244")
OFF: Final = ("off", "#6C6C6C", "colour242")
UNAVAILABLE: Final = ("n/a", "#6C6C6C", "colour242")
TIMEOUT_S: Final = 2.0
TOOLTIP_PANES: Final = 10  # panes listed by name in waybar's tooltip


def counts(panes: list[dict[str, Any]]) -> list[tuple[tuple[str, ...], int]]:
    """``[(category, n), …]`` for the categories with at least one pane, most urgent first."""
    by_attention: dict[str, int] = {}
    for p in panes:
        att = p.get("attention")
        if isinstance(att, str):
            by_attention[att] = by_attention.get(att, 0) + 1
    return [(cat, by_attention[cat[0]]) for cat in CATEGORIES if by_attention.get(cat[0])]


def offline(panes: list[dict[str, Any]]) -> str:
    """``" · devbox offline"`` when watched hosts' panes cannot be reached (their prompts
    cannot be answered from here now), else ``""`` (issue 16)."""
    hosts = sorted({str(p["host"]) for p in panes if p.get("host") and p.get("reachable") is False})
    if not hosts:
        return ""
    names = ", ".join(sanitize_text(h, 32) for h in hosts[:2])
    return f" · {names}{' …' if len(hosts) > 2 else ''} offline"


def _text(
    found: list[tuple[tuple[str, ...], int]], panes: list[dict[str, Any]] | None = None
) -> str:
    text = " · ".join(f"{n} {cat[2]}" for cat, n in found) if found else IDLE[0]
    return text + offline(panes or [])


def waybar(panes: list[dict[str, Any]]) -> str:
    """The waybar JSON line for ``panes`` (Pane objects from ``pane.list``)."""
    found = counts(panes)
    order = {cat[0]: i for i, cat in enumerate(CATEGORIES)}
    needing = sorted(
        (p for p in panes if p.get("attention") not in (None, "none")),
        key=lambda p: order.get(p["attention"], len(order)),
    )
    if found:
        lines = [f"{n} {cat[0]}" for cat, n in found] + [""]
        for p in needing[:TOOLTIP_PANES]:
            title = sanitize_text(str(p.get("title") or ""), 60)
            if p.get("host"):  # a watched host's pane (issue 16): say whose
                title = f"{sanitize_text(str(p['host']), 32)}/{title}"
            label = f" [{sanitize_text(str(p['label']), 40)}]" if p.get("label") else ""
            lines.append(f"{sanitize_text(str(p['attention']), 20)}: {title}{label}")
        if len(needing) > TOOLTIP_PANES:
            lines.append(f"… and {len(needing) - TOOLTIP_PANES} more")
        tooltip = "\n".join(lines)
        cls = found[0][0][1]
    else:
        tooltip = f"signaltty: {len(panes)} pane{'' if len(panes) == 1 else 's'}, none needs you"
        cls = IDLE[0]
    share = round(100 * len(needing) / len(panes)) if panes else 0
    return _waybar_json(_text(found, panes), tooltip, cls, share)


def _esc(text: str) -> str:
    """Escape for Pango markup, which waybar applies to ``text`` and ``tooltip``."""
    return html.escape(text, quote=False)


def _waybar_json(text: str, tooltip: str, cls: str, percentage: int) -> str:
    obj = {
        "text": _esc(text),
        "alt": cls,
        "tooltip": _esc(tooltip),
        "class": cls,
        "percentage": percentage,
    }
    return json.dumps(obj, ensure_ascii=False)


def i3blocks(panes: list[dict[str, Any]]) -> str:
    """The three i3blocks lines (full_text, short_text, colour) for ``panes``."""
    found = counts(panes)
    if not found:
        return f"{_text(found, panes)}\n{IDLE[0]}\n{IDLE[1]}"
    short = " ".join(f"{cat[3]}{n}" for cat, n in found)
    return f"{_text(found, panes)}\n{short}\n{found[0][0][4]}"


def tmux(panes: list[dict[str, Any]]) -> str:
    """One tmux status line with ``#[fg=…]`` styles for ``panes``."""
    found = counts(panes)
    off = offline(panes).replace("#", "##")  # tmux reads #[…] and #(…) in a status line
    if not found:
        return f"#[fg={IDLE[2]}]{IDLE[0]}{off}#[default]"
    return " ".join(f"#[fg={cat[5]}]{n} {cat[2]}#[default]" for cat, n in found) + off


def neutral(fmt: str, state: tuple[str, str, str], why: str) -> str:
    """The ``off``/``n/a`` output in ``fmt``; ``why`` goes to waybar's tooltip."""
    word, rgb, tmux_colour = state
    if fmt == "waybar":
        return _waybar_json(word, why, "off" if state is OFF else "unavailable", 0)
    if fmt == "i3blocks":
        return f"{word}\n{word}\n{rgb}"
    return f"#[fg={tmux_colour}]{word}#[default]"


FORMATTERS: Final = {"waybar": waybar, "i3blocks": i3blocks, "tmux": tmux}


def _pane_list(path: str | Remote) -> list[dict[str, Any]]:
    """``pane.list`` with an overall limit of ``TIMEOUT_S`` (a bar must never hang).

    Raises:
        ConnectError, UntrustedServer: no daemon, or not the user's own.
        TimeoutError: no answer in time.
        ConnectionError: the daemon closed the connection.
        SignalttyError: the daemon answered with an error.
        ValueError: the answer is not a protocol message.
    """
    deadline = time.monotonic() + TIMEOUT_S
    with Client(path, timeout=TIMEOUT_S) as cl:
        req_id = cl.send("pane.list")
        while True:
            try:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                msg = cl.read_message(timeout=left)
            except TimeoutError:
                raise TimeoutError(f"no answer within {TIMEOUT_S:.0f} s") from None
            if msg is None:
                raise ConnectionError("the daemon closed the connection")
            if msg.get("type") == "event" or msg.get("id") not in (req_id, "?"):
                continue
            if not msg.get("ok"):
                raise envelope.error_from_wire(msg.get("error") or {})
            panes = (msg.get("result") or {}).get("panes")
            if not isinstance(panes, list):
                raise ValueError("pane.list answered without a pane list")
            return [p for p in panes if isinstance(p, dict)]


def run(path: str | Remote, fmt: str) -> int:
    """Print the bar output for ``fmt`` (``waybar``, ``i3blocks`` or ``tmux``); returns 0."""
    try:
        panes = _pane_list(path)
    except UntrustedServer as exc:
        return _unavailable(fmt, f"refusing the socket: {exc.strerror}")
    except ConnectError:
        print(neutral(fmt, OFF, "signaltty: the daemon is not running"), flush=True)
        return 0
    except SignalttyError as exc:
        return _unavailable(fmt, f"server error {exc.code}: {exc.message}")
    except (OSError, ValueError) as exc:  # TimeoutError and ConnectionError are OSErrors
        return _unavailable(fmt, str(exc))
    print(FORMATTERS[fmt](panes), flush=True)
    return 0


def _unavailable(fmt: str, why: str) -> int:
    why = "signaltty: " + sanitize_text(why, 300)
    print(why, file=sys.stderr)
    print(neutral(fmt, UNAVAILABLE, why), flush=True)
    return 0
