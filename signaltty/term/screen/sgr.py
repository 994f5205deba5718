"""SGR (``CSI ... m``) parameters applied to pyte ``Char`` attributes.

Colours use pyte's vocabulary: names for the 16 ANSI colours, ``"rrggbb"`` for 256-colour and
truecolor (Spec: agents.md §7.6).
"""

from __future__ import annotations

import re
from typing import Any, Final

from pyte import graphics as g
from pyte.screens import Char

# pyte's clamp for one numeric CSI parameter; every count is further bounded by the screen size.
_PARAM_MAX: Final = 9999
_SGR_PARAMS_RE: Final = re.compile("[0-9;:]*")

# SGR tables in pyte's vocabulary, with 105 spelled correctly (pyte 0.8.2: "bfightmagenta").
_FG_NAMES: Final[dict[int, str]] = {**g.FG_ANSI, **g.FG_AIXTERM}
_BG_NAMES: Final[dict[int, str]] = {**g.BG_ANSI, **g.BG_AIXTERM, 105: "brightmagenta"}
_TEXT_ATTRS: Final[dict[int, tuple[str, bool]]] = {
    code: (name[1:], name[0] == "+") for code, name in g.TEXT.items()
}
_SGR_RESET: Final[dict[str, Any]] = {
    "fg": "default",
    "bg": "default",
    "bold": False,
    "italics": False,
    "underscore": False,
    "strikethrough": False,
    "reverse": False,
    "blink": False,
}


def _extended_color(sub: tuple[int, ...]) -> str | None:
    """Colour from the parameters after 38/48 in colon form: ``5:n`` or ``2:[cs:]r:g:b``."""
    if sub[0] == 5 and len(sub) >= 2:
        return g.FG_BG_256[sub[1]] if sub[1] < 256 else None
    if sub[0] == 2 and len(sub) >= 4:
        rgb = sub[1:4] if len(sub) == 4 else sub[2:5]
        if max(rgb) < 256:
            return "{:02x}{:02x}{:02x}".format(*rgb)
    return None


def _sgr_apply(attrs: Char, groups: list[tuple[int, ...]]) -> Char:
    """Apply SGR parameter groups (one tuple per ``;`` field, split at ``:``) to ``attrs``.

    Colours use pyte's vocabulary: names for 30-37/90-97 (and backgrounds), ``"rrggbb"`` for
    256-colour and truecolor. Out-of-range colours are ignored instead of producing pyte's
    malformed hex strings.
    """
    changes: dict[str, Any] = {}
    n = len(groups)
    i = 0
    while i < n:
        group = groups[i]
        i += 1
        code = group[0]
        if len(group) > 1:  # colon sub-parameters
            if code in (38, 48):
                color = _extended_color(group[1:])
                if color is not None:
                    changes["fg" if code == 38 else "bg"] = color
            elif code == 4:
                changes["underscore"] = group[1] != 0
            elif code in _TEXT_ATTRS:
                name, on = _TEXT_ATTRS[code]
                changes[name] = on
            continue
        if code == 0:
            changes.update(_SGR_RESET)
        elif code in _TEXT_ATTRS:
            name, on = _TEXT_ATTRS[code]
            changes[name] = on
        elif code in _FG_NAMES:
            changes["fg"] = _FG_NAMES[code]
        elif code in _BG_NAMES:
            changes["bg"] = _BG_NAMES[code]
        elif code in (38, 48) and i < n:
            key = "fg" if code == 38 else "bg"
            kind = groups[i][0]
            i += 1
            if kind == 5 and i < n:
                index = groups[i][0]
                i += 1
                if index < 256:
                    changes[key] = g.FG_BG_256[index]
            elif kind == 2:
                rgb = [group[0] for group in groups[i : i + 3]]
                i += len(rgb)
                if len(rgb) == 3 and max(rgb) < 256:
                    changes[key] = "{:02x}{:02x}{:02x}".format(*rgb)
    return attrs._replace(**changes) if changes else attrs


def _sgr_from_string(attrs: Char, params: str) -> Char:
    if not _SGR_PARAMS_RE.fullmatch(params):
        return attrs
    groups = [
        tuple(min(int(v), _PARAM_MAX) if v else 0 for v in field.split(":"))
        for field in params.split(";")
    ]
    return _sgr_apply(attrs, groups)


# Two attribute sets that differ in every field: an SGR whose result is the same from both
# sets every field itself (``_sgr_apply``'s changes depend on the parameters alone).
_ALL_OFF: Final = Char(" ")
_ALL_ON: Final = Char(
    " ",
    fg="red",
    bg="blue",
    bold=True,
    italics=True,
    underscore=True,
    strikethrough=True,
    reverse=True,
    blink=True,
)
_ABSOLUTE: dict[str, bool] = {}


def absolute_sgr(params: str) -> bool:
    """True when ``CSI params m`` sets every attribute, whatever the attributes before it
    (``CSI 0 m``, ``CSI m``, ``CSI 0;1;31 m``; not ``CSI 1 m`` or ``CSI 38;5;0 m``).

    Fast-forwarding folds the SGR sequences of skipped output from the last such sequence on.
    """
    known = _ABSOLUTE.get(params)
    if known is None:
        known = _sgr_from_string(_ALL_OFF, params) == _sgr_from_string(_ALL_ON, params)
        if len(_ABSOLUTE) >= 4096:
            _ABSOLUTE.clear()
        _ABSOLUTE[params] = known
    return known
