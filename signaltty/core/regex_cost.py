"""The compile cost of a Python ``re`` pattern, read from its text (pure, stdlib only).

The ``regex`` library expands counted repeats when it compiles (``a{1000000000}`` takes GBs
and never finishes), so a pattern from a user's file is measured before it is compiled. This
scanner follows the pattern's structure the way CPython's ``re`` parser reads it (escapes,
character classes, groups, alternation, quantifiers, comments and the verbose flag; see
``Lib/re/_parser.py``) without importing that private module, and counts the pattern's items
with every counted repeat multiplied out.

The count never falls below what ``re``'s parse tree holds: where the two differ, ``re`` merges
(``a|b`` becomes one set) and this scanner does not, and a group counts at least one item. The
scanner does not validate: a pattern ``re`` rejects is measured as far as it goes, and the
caller compiles it with ``re`` afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# What ``re`` skips in verbose mode, and the only characters it reads as repeat bounds
# (ASCII digits, not ``str.isdigit``: ``a{١٠}`` is a literal there).
_WHITESPACE: Final = frozenset(" \t\n\r\v\f")
_DIGITS: Final = frozenset("0123456789")
_FLAGS: Final = frozenset("aiLmsux")


class CostError(ValueError):
    """The pattern breaks one of the ``CostLimits``; the message says which and by how much."""


@dataclass(frozen=True, slots=True)
class CostLimits:
    """Bounds for ``expanded_size``.

    Attributes:
        max_repeat: the largest bound a counted repeat may name (``{m}``, ``{m,n}``, ``{m,}``).
        max_weight: the most items once nested repeats are multiplied out.
        max_nesting: the most groups inside one another.
    """

    max_repeat: int
    max_weight: int
    max_nesting: int


class _VerboseFromStart(Exception):
    """A global ``(?x)`` was met: ``re`` reads the whole pattern again in verbose mode."""


def expanded_size(text: str, limits: CostLimits) -> int:
    """Items of ``text`` with every counted repeat multiplied out (``(?:ab){3}c`` → 7).

    Reads ``len(text)`` characters once (twice with a global ``(?x)``); no regex is compiled.

    Raises:
        CostError: a repeat bound above ``limits.max_repeat`` (``counted repeat {5000,} too
            large (max 1000)``), groups nested deeper than ``limits.max_nesting``, or more than
            ``limits.max_weight`` items.
    """
    try:
        return _Scanner(text, limits, verbose=False).run()
    except _VerboseFromStart:
        return _Scanner(text, limits, verbose=True).run()


class _Scanner:
    """One left-to-right reading of a pattern; ``pos`` is the next character."""

    def __init__(self, text: str, limits: CostLimits, *, verbose: bool) -> None:
        self.text = text
        self.limits = limits
        self.verbose_from_start = verbose
        self.pos = 0

    def run(self) -> int:
        total = self._alternation(0, self.verbose_from_start)
        while self.pos < len(self.text):  # a stray ")" (``re`` rejects it): measure the rest
            self.pos += 1
            total = self._checked(total + self._alternation(0, self.verbose_from_start))
        return total

    def _checked(self, total: int) -> int:
        if total > self.limits.max_weight:
            raise CostError(
                f"too large once repeats are expanded (more than {self.limits.max_weight} items)"
            )
        return total

    def _alternation(self, depth: int, verbose: bool) -> int:
        """Branches separated by ``|`` up to ``)`` or the end: their items add up."""
        total = self._sequence(depth, verbose)
        while self.pos < len(self.text) and self.text[self.pos] == "|":
            self.pos += 1
            total = self._checked(total + self._sequence(depth, verbose))
        return total

    def _sequence(self, depth: int, verbose: bool) -> int:
        """Items up to ``|``, ``)`` or the end; a quantifier multiplies the item before it."""
        text, n = self.text, len(self.text)
        total = 0
        last: int | None = None  # the item a quantifier would apply to
        while self.pos < n:
            c = text[self.pos]
            if c in "|)":
                break
            if verbose and c in _WHITESPACE:
                self.pos += 1
                continue
            if verbose and c == "#":
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
                continue
            if c in "*+?":
                self.pos += 1
                self._skip_repeat_suffix()
                continue  # at most one of the item: its count stands
            if c == "{":
                times = self._counted_repeat()
                if times is not None:
                    if last is not None:
                        total -= last
                        last = max(times, 1) * last
                        total = self._checked(total + last)
                    continue
                weight = 1  # a literal "{"
            elif c == "\\":
                weight = 1
                self._skip_escape()
            elif c == "[":
                weight = 1
                self._skip_class()
            elif c == "(":
                group = self._group(depth, verbose)
                if group is None:
                    continue  # a comment or global flags: the previous item stays repeatable
                weight = group
            else:
                weight = 1
                self.pos += 1
            last = weight
            total = self._checked(total + weight)
        return total

    def _skip_repeat_suffix(self) -> None:
        """A lazy ``?`` or possessive ``+`` after a quantifier."""
        if self.pos < len(self.text) and self.text[self.pos] in "?+":
            self.pos += 1

    def _counted_repeat(self) -> int | None:
        """At ``{``: the repeat's count (the upper bound, else the lower), or None when the
        brace is a literal (``re``: ``{`` not followed by digits, a comma and ``}``)."""
        text, n = self.text, len(self.text)
        start = self.pos
        i = start + 1
        lo_start = i
        while i < n and text[i] in _DIGITS:
            i += 1
        lo_text = text[lo_start:i]
        hi_text: str | None = lo_text
        if i < n and text[i] == ",":
            i += 1
            hi_start = i
            while i < n and text[i] in _DIGITS:
                i += 1
            hi_text = text[hi_start:i] or None
        if i >= n or text[i] != "}" or (i == start + 1):
            self.pos = start + 1
            return None
        self.pos = i + 1
        self._skip_repeat_suffix()
        lo = int(lo_text) if lo_text else 0
        hi = int(hi_text) if hi_text else None
        bound = self.limits.max_repeat
        if lo > bound or (hi is not None and hi > bound):
            shown = f"{{{lo}}}" if lo == hi else f"{{{lo},{'' if hi is None else hi}}}"
            raise CostError(f"counted repeat {shown} too large (max {bound})")
        return hi if hi is not None else lo

    def _skip_escape(self) -> None:
        """``\\x`` is one item; ``\\N{NAME}`` runs to its brace."""
        text = self.text
        if text.startswith("\\N{", self.pos):
            end = text.find("}", self.pos)
            self.pos = len(text) if end < 0 else end + 1
        else:
            self.pos = min(self.pos + 2, len(text))

    def _skip_class(self) -> None:
        """``[...]``: a leading ``]`` (after an optional ``^``) is a member, ``\\`` escapes."""
        text, n = self.text, len(self.text)
        i = self.pos + 1
        if i < n and text[i] == "^":
            i += 1
        if i < n and text[i] == "]":
            i += 1
        while i < n and text[i] != "]":
            i += 2 if text[i] == "\\" else 1
        self.pos = min(i + 1, n)

    def _group(self, depth: int, verbose: bool) -> int | None:
        """At ``(``: the group's items (at least 1), or None for ``(?#...)`` and global flags."""
        text, n = self.text, len(self.text)
        if depth + 1 > self.limits.max_nesting:
            raise CostError(f"nested too deeply (max {self.limits.max_nesting} levels)")
        self.pos += 1
        inner_verbose = verbose
        if self.pos < n and text[self.pos] == "?":
            self.pos += 1
            c = text[self.pos : self.pos + 1]
            if c == "#":  # a comment runs to a ")" that no backslash escapes
                i = self.pos + 1
                while i < n and text[i] != ")":
                    i += 2 if text[i] == "\\" else 1
                self.pos = min(i + 1, n)
                return None
            if c in (":", ">", "=", "!"):
                self.pos += 1
            elif text.startswith(("<=", "<!"), self.pos):
                self.pos += 2
            elif text.startswith("P<", self.pos):
                end = text.find(">", self.pos)
                self.pos = n if end < 0 else end + 1
            elif text.startswith("P=", self.pos):  # a backreference by name: one item
                end = text.find(")", self.pos)
                self.pos = n if end < 0 else end + 1
                return 1
            elif c == "(":  # (?(group)yes|no): the condition, then the branches
                end = text.find(")", self.pos)
                self.pos = n if end < 0 else end + 1
            else:
                added, removed = self._flags()
                if text.startswith(")", self.pos):  # global flags, e.g. (?x)
                    self.pos += 1
                    if "x" in added and not self.verbose_from_start:
                        raise _VerboseFromStart
                    return None
                if text.startswith(":", self.pos):
                    self.pos += 1
                    if "x" in added:
                        inner_verbose = True
                    if "x" in removed:
                        inner_verbose = False
        weight = self._alternation(depth + 1, inner_verbose)
        if self.pos < n and text[self.pos] == ")":
            self.pos += 1
        return max(weight, 1)

    def _flags(self) -> tuple[str, str]:
        """Inline flag letters ``aiLmsux``, optionally ``-`` and the flags turned off."""
        text, n = self.text, len(self.text)
        start = self.pos
        while self.pos < n and text[self.pos] in _FLAGS:
            self.pos += 1
        added = text[start : self.pos]
        removed = ""
        if self.pos < n and text[self.pos] == "-":
            self.pos += 1
            start = self.pos
            while self.pos < n and text[self.pos] in _FLAGS:
                self.pos += 1
            removed = text[start : self.pos]
        return added, removed
