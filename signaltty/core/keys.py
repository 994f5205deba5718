"""Key names → the bytes an xterm sends (pure, stdlib only): ``pane input --keys``.

Names follow tmux ``send-keys`` (issue 13 item 9): ``Enter``, ``Escape``, ``Tab``, ``BTab``,
``BSpace``, ``Space``, ``Up``/``Down``/``Left``/``Right``, ``Home``/``End``,
``PageUp``/``PPage``, ``PageDown``/``NPage``, ``Insert``/``IC``, ``Delete``/``DC``,
``F1``–``F12``, any single character, and the modifier prefixes ``C-`` (Ctrl, also ``^x``),
``M-`` (Meta/Alt) and ``S-`` (Shift) in any order (``C-c``, ``M-x``, ``C-M-Left``).
Named keys and modifiers are matched without regard to case; a single character is sent
as typed (``a`` and ``A`` differ).

Unlike tmux, a word that is not a key name is an error, never typed literally: a
misspelt ``Entr`` sent as text to an agent would be an unwanted prompt. Text goes with
``--data``.

Encodings are xterm's in its default modes (cursor keys ``ESC [ A``, not the application
mode ``ESC O A`` a program may switch on; shells, readline, prompt_toolkit and Ink read
both). Modified cursor, Home/End and function keys use xterm's ``CSI 1;m X`` and
``CSI n;m ~`` forms (m = 1 + Shift 1 + Meta 2 + Ctrl 4); Meta on anything else is an ESC
before the key. A combination no terminal can send (``C-1``, ``S-Enter``) is an error.
"""

from __future__ import annotations

# ``typing`` is not needed at run time (annotations are strings).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

# keys sent as one fixed sequence; Meta prefixes ESC; Ctrl/Shift only where listed below
_PLAIN: Final[dict[str, bytes]] = {
    "enter": b"\r",
    "escape": b"\x1b",
    "tab": b"\t",
    "btab": b"\x1b[Z",
    "bspace": b"\x7f",
    "space": b" ",
}
# CSI 1;m <final> when modified, CSI <final> (or SS3 for F1-F4) otherwise
_CSI_FINAL: Final[dict[str, str]] = {
    "up": "A",
    "down": "B",
    "right": "C",
    "left": "D",
    "home": "H",
    "end": "F",
}
_SS3_FINAL: Final[dict[str, str]] = {"f1": "P", "f2": "Q", "f3": "R", "f4": "S"}
# CSI <n> ~ (CSI <n>;m ~ when modified)
_TILDE: Final[dict[str, int]] = {
    "insert": 2,
    "ic": 2,
    "delete": 3,
    "dc": 3,
    "pageup": 5,
    "ppage": 5,
    "pgup": 5,
    "pagedown": 6,
    "npage": 6,
    "pgdn": 6,
    "f5": 15,
    "f6": 17,
    "f7": 18,
    "f8": 19,
    "f9": 20,
    "f10": 21,
    "f11": 23,
    "f12": 24,
}
# Ctrl with a character that has a C0 code beyond the letters (xterm's table)
_CTRL_OTHER: Final[dict[str, int]] = {
    "@": 0,
    " ": 0,
    "2": 0,
    "[": 27,
    "3": 27,
    "\\": 28,
    "4": 28,
    "]": 29,
    "5": 29,
    "^": 30,
    "6": 30,
    "_": 31,
    "/": 31,
    "7": 31,
    "?": 127,
    "8": 127,
}

NAMES: Final[tuple[str, ...]] = (
    "Enter", "Escape", "Tab", "BTab", "BSpace", "Space",
    "Up", "Down", "Left", "Right", "Home", "End",
    "PageUp", "PPage", "PageDown", "NPage", "Insert", "IC", "Delete", "DC",
    *(f"F{n}" for n in range(1, 13)),
)  # fmt: skip
HELP: Final = (
    "valid keys: " + " ".join(NAMES) + ", any single character, "
    "with prefixes C- (Ctrl, or ^x), M- (Meta/Alt), S- (Shift): C-c, M-x, C-Left"
)


class KeyNameError(ValueError):
    """A word that is not a key name, or a combination no terminal sends."""


def encode_key(word: str) -> bytes:
    """The bytes an xterm sends for one key name (module docstring for the names).

    Raises:
        KeyNameError: unknown name (the message lists the valid ones) or impossible combination.
    """
    ctrl = meta = shift = False
    rest = word
    while len(rest) > 2 and rest[1] == "-" and rest[0].upper() in "CMS":
        mod = rest[0].upper()
        ctrl, meta, shift = ctrl or mod == "C", meta or mod == "M", shift or mod == "S"
        rest = rest[2:]
    if len(rest) == 2 and rest[0] == "^" and not (ctrl or meta or shift) and word == rest:
        ctrl, rest = True, rest[1]
    if not rest:
        raise KeyNameError(f"empty key name in {word!r}; {HELP}")
    name = rest.lower()
    mods = 1 + shift + 2 * meta + 4 * ctrl
    if name in _CSI_FINAL:
        final = _CSI_FINAL[name]
        return f"\x1b[1;{mods}{final}".encode() if mods > 1 else f"\x1b[{final}".encode()
    if name in _SS3_FINAL:
        final = _SS3_FINAL[name]
        return f"\x1b[1;{mods}{final}".encode() if mods > 1 else f"\x1bO{final}".encode()
    if name in _TILDE:
        n = _TILDE[name]
        return f"\x1b[{n};{mods}~".encode() if mods > 1 else f"\x1b[{n}~".encode()
    if name in _PLAIN or len(rest) == 1:
        if name in _PLAIN:
            char = " " if name == "space" else None
            base = _PLAIN[name]
        else:
            char = rest
            try:  # argv bytes that were not UTF-8 come back as they were typed
                base = rest.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:
                raise KeyNameError(f"not a character that can be typed: {word!r}") from None
        if shift:
            if name == "tab":
                base, shift = _PLAIN["btab"], False
            elif char is not None and char.isascii() and char.isalpha():
                base, shift = char.upper().encode(), False
        if ctrl:
            if char is None or (code := _ctrl_code(char)) is None:
                raise KeyNameError(f"no terminal sends {word!r} (Ctrl with {rest!r}); {HELP}")
            base = bytes([code])
        if shift:
            raise KeyNameError(f"no terminal sends {word!r} (Shift with {rest!r}); {HELP}")
        return b"\x1b" + base if meta else base
    raise KeyNameError(f"unknown key name {word!r} (for text use --data); {HELP}")


def _ctrl_code(char: str) -> int | None:
    if "a" <= char.lower() <= "z" and char.isascii():
        return ord(char.lower()) - ord("a") + 1
    return _CTRL_OTHER.get(char)


def encode_keys(words: list[str]) -> bytes:
    """Every key of ``words`` in order, as one byte string.

    Raises:
        KeyNameError: at the first word that is not a key (nothing is encoded then).
    """
    return b"".join(encode_key(w) for w in words)
