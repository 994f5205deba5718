"""Text a Python ``re`` pattern cannot match without: a prefilter for screen-rule searches.

Pure, standard library only. Why (issue 12): every screen-rule search runs under the
``regex`` library's time limit, and that limit reads the process CPU clock twice per search
(``clock_gettime(CLOCK_PROCESS_CPUTIME_ID)``, a system call, about 1 µs each here): 2.4 µs
for a search that takes 0.5 µs without it. Most rules do not match most screens, and most
patterns hold a run of plain characters that no match can do without (``MCP server "``,
``/btw``, ``esc to cancel``). A region text without such a run cannot match, and the search
is skipped. Only a search that may match is run, under its time limit as before.

``required_text`` reads the pattern text the way ``re``'s parser does (escapes, classes,
groups, quantifiers, inline flags; see ``Lib/re/_parser.py``) and is conservative: it returns
``None`` (no prefilter: always search) for anything it does not follow exactly, such as a
top-level ``|``, a verbose-mode pattern, a ``[`` inside a class (a POSIX class for ``regex``)
or a ``{`` that is not a repeat (a fuzzy constraint for ``regex``). A run it returns occurs in
every text the ``regex`` library (version 0) finds a match in: ``tests/unit/test_regex_literals.py``
checks this against generated patterns and texts and against every bundled rule and screen.

Case-insensitive patterns keep only ASCII runs, lower-cased, and are compared with
``fold(text)``: the ``regex`` library matches an ASCII letter with its other case and with
exactly four other characters, ``İ`` (U+0130) for ``i``, ``ı`` (U+0131) for ``I``, ``ſ``
(U+017F) for ``s`` and the Kelvin sign (U+212A) for ``k`` (found by trying every code point;
the test repeats it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

# Runs shorter than this are in nearly every screen: checking them costs more than it saves.
MIN_RUN: Final = 3
# At most this many runs are kept per pattern (the longest: the rarest, usually).
MAX_RUNS: Final = 2

_CLASS_ESCAPES: Final = frozenset("dDsSwWbBAZ")  # one-character escapes that match no literal
_CHAR_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_GLOBAL_FLAGS: Final = re.compile(r"\(\?([a-zA-Z]+)\)")
_FLAG_LETTERS: Final = frozenset("imsau")
# Any inline flag group naming x (verbose: whitespace and # comments change meaning) or i.
_VERBOSE_ANYWHERE: Final = re.compile(r"\(\?[a-zA-Z-]*x")
_IGNORECASE_ANYWHERE: Final = re.compile(r"\(\?[a-zA-Z-]*i")
# re reads "{" as a repeat only in these forms ("{}" is a literal); anything else is a literal
# for re but may be a fuzzy constraint for regex: such a pattern gets no prefilter.
_REPEAT: Final = re.compile(r"\{(?:\d+(?:,\d*)?|,\d*)\}")


@dataclass(frozen=True, slots=True)
class RequiredText:
    """Runs of text every match of a pattern contains.

    Attributes:
        runs: each occurs in any text the pattern matches (longest first, lower-case ASCII
            when ``fold``).
        fold: the pattern ignores case: look for the runs in ``fold(text)``.
    """

    runs: tuple[str, ...]
    fold: bool

    def may_match(self, text: str, folded: str | None = None) -> bool:
        """False when the pattern cannot match ``text`` (a run is missing); ``folded`` is
        ``fold(text)`` when the caller has it (computed here otherwise)."""
        if self.fold:
            text = folded if folded is not None else fold(text)
        return all(run in text for run in self.runs)


def fold(text: str) -> str:
    """``text`` lower-cased so that an ASCII run of a case-insensitive pattern occurs in it
    wherever the ``regex`` library would match it: ``casefold`` (which maps ``ſ`` and the
    Kelvin sign to ASCII); ``İ``, which it turns into ``i`` + U+0307, back to ``i``; and the
    dotless ``ı``, which it keeps, to ``i`` (``regex`` matches it with ``I``, not with ``i``)."""
    out = text.casefold()
    if "\u0307" in out:
        out = out.replace("i\u0307", "i")
    if "\u0131" in out:
        out = out.replace("\u0131", "i")
    return out


def required_text(pattern: str, *, ignore_case: bool = False) -> RequiredText | None:
    """The runs of plain characters outside any group, class or repeat that every match of
    ``pattern`` contains, or ``None`` when there is none or the pattern is not read exactly.

    Args:
        pattern: a pattern ``re.compile`` accepts (the caller checked it), compiled without
            the verbose flag (an inline ``(?x)`` is read here).
        ignore_case: it is compiled with the ignore-case flag (an inline ``(?i)`` is read
            here).
    """
    if _VERBOSE_ANYWHERE.search(pattern):
        return None
    at = 0
    while (m := _GLOBAL_FLAGS.match(pattern, at)) is not None:
        if not set(m[1]) <= _FLAG_LETTERS:
            return None
        at = m.end()
    ignore_case = ignore_case or _IGNORECASE_ANYWHERE.search(pattern) is not None
    runs = _top_level_runs(pattern, at, ignore_case)
    if runs is None:
        return None
    kept = sorted((r for r in runs if len(r) >= MIN_RUN), key=len, reverse=True)[:MAX_RUNS]
    return RequiredText(tuple(kept), ignore_case) if kept else None


def _top_level_runs(pattern: str, at: int, ignore_case: bool) -> list[str] | None:
    """Runs of literal characters at the top level of ``pattern[at:]``; None: do not filter."""
    n = len(pattern)
    runs: list[str] = []
    run: list[str] = []
    taken = False  # the item just read is the last character of ``run``
    # After an escape whose arguments follow it (\x41, \1, \N{...}), later characters are
    # not read as literals; the rest is still read, for a top-level "|".
    reading = True

    def cut() -> None:
        if run and reading:
            runs.append("".join(run))
        run.clear()

    while at < n:
        char = pattern[at]
        literal: str | None = None
        if char == "\\":
            if at + 1 >= n:
                return None
            esc = pattern[at + 1]
            at += 2
            if esc in _CHAR_ESCAPES:
                literal = _CHAR_ESCAPES[esc]
            elif esc.isascii() and esc.isalnum():
                cut()
                if esc not in _CLASS_ESCAPES:
                    reading = False
                if esc == "N" and pattern.startswith("{", at):
                    end = pattern.find("}", at)
                    if end < 0:
                        return None
                    at = end + 1
                taken = False
                continue
            else:
                literal = esc
        elif pattern.startswith("(?#", at):
            # A comment is nothing at all: a repeat after it repeats the item before it
            # (``ab(?#c)?`` matches "a"), so neither the run nor ``taken`` change.
            end = pattern.find(")", at)
            if end < 0:
                return None
            at = end + 1
            continue
        elif char in "[(":
            skip = _class_end(pattern, at) if char == "[" else _group_end(pattern, at)
            if skip is None:
                return None
            cut()
            at, taken = skip, False
            continue
        elif char in "|)":
            return None
        elif char in "*+?{":
            if char == "{":
                m = _REPEAT.match(pattern, at)
                if m is None:
                    return None
                at = m.end()
            else:
                at += 1
            if at < n and pattern[at] in "?+":  # lazy or possessive
                at += 1
            if taken:
                run.pop()  # the repeated character may occur 0 times, or more than once
            cut()
            taken = False
            continue
        elif char in ".^$]}":
            cut()
            at, taken = at + 1, False
            continue
        else:
            literal = char
            at += 1
        if ignore_case and not literal.isascii():
            cut()
            taken = False
            continue
        run.append(literal.lower() if ignore_case else literal)
        taken = True
    cut()
    return runs


def _class_end(pattern: str, at: int) -> int | None:
    """Index after the class opened at ``at`` (``re`` rules: a leading ``]`` is a member);
    None for a ``[`` inside it (a POSIX class or nested set for ``regex``) or no end."""
    n = len(pattern)
    j = at + 1
    if j < n and pattern[j] == "^":
        j += 1
    if j < n and pattern[j] == "]":
        j += 1
    while j < n:
        c = pattern[j]
        if c == "\\":
            j += 2
        elif c == "[":
            return None
        elif c == "]":
            return j + 1
        else:
            j += 1
    return None


def _group_end(pattern: str, at: int) -> int | None:
    """Index after the group opened at ``at``, or None when it does not close."""
    n = len(pattern)
    depth = 0
    j = at
    while j < n:
        c = pattern[j]
        if c == "\\":
            j += 2
        elif c == "[":
            end = _class_end(pattern, j)
            if end is None:
                return None
            j = end
        elif c == "(" and pattern.startswith("(?#", j):
            end = pattern.find(")", j)  # a comment ends at the first ")"
            if end < 0:
                return None
            j = end + 1  # (a comment at the top level never gets here: it is no group)
        elif c == "(":
            depth += 1
            j += 1
        elif c == ")":
            depth -= 1
            j += 1
            if depth == 0:
                return j
        else:
            j += 1
    return None
