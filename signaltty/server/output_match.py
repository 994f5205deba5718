"""Output matching of ``pane.wait_for_output``: substring or time-bounded regex, and lines.

``Matcher`` finds a line of a pane's output; a regex runs in a worker thread with a
per-line time limit and a per-call budget, so a catastrophic pattern never holds the event
loop (issue 10 §10, docs/architecture.md "Bounded resources"). For ``new_only`` waits,
``LineCollector`` splits output that arrives after a call into ANSI-stripped lines of the
primary screen, and ``AltRows`` finds the rows a full-screen program newly drew on the
alternate screen (issue 11 item 10; docs/decisions.md "Full-screen agents in pane read and
wait-output"). Used by ``server/handlers/output.py``.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import regex

from signaltty.core.limits import (
    WAIT_REGEX_BUDGET_DEFAULT_S,
    WAIT_REGEX_SEARCH_S,
    WAIT_REGEX_SHARE,
)
from signaltty.core.sanitize import strip_ansi
from signaltty.core.screen_rules import PatternError, compile_pattern
from signaltty.proto.envelope import SignalttyError

# User patterns (issue 10 §10). A search runs in a worker thread (the ``regex`` library
# releases the GIL while matching a ``str``), so a catastrophic pattern such as ``(x+x+)+y``
# never holds the event loop; stdlib ``re`` could be neither interrupted nor run beside the
# loop. Each line's search has its own time limit and the whole call a matching budget.
_regex_pool: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _regex_pool
    if _regex_pool is None:
        # Two workers: slow patterns of several clients queue here, never on the loop.
        _regex_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="signaltty-regex")
    return _regex_pool


class Matcher:
    """Substring or regular-expression matcher of one ``pane.wait_for_output`` call.

    A regex may spend at most ``WAIT_REGEX_SEARCH_S`` on one line and, over the call,
    ``budget_s`` plus ``WAIT_REGEX_SHARE`` of the call's elapsed time. A scan starts at once
    while an eighth of the budget is left, else once that much is back (at most 5 s later
    with the defaults), so a fair pattern on a busy pane is slowed to that share and never
    cut off, while a catastrophic one uses the budget up within its first scans. Over
    either limit the call fails with ``BAD_PARAMS`` naming ``match``.

    Args:
        timeout_s: the call's own timeout; a scan that would have to wait past it does not
            run (the caller then times out as usual).
    """

    def __init__(
        self,
        match: str,
        pattern: regex.Pattern[str] | None,
        budget_s: float = WAIT_REGEX_BUDGET_DEFAULT_S,
        timeout_s: float = float("inf"),
    ) -> None:
        self._match = match
        self._pattern = pattern
        self._budget_s = budget_s
        self._started = time.perf_counter()
        self._deadline = self._started + timeout_s
        # Seconds of matching so far: written by the worker, read on the loop only once its
        # scan is over (one scan at a time per call).
        self._spent = 0.0
        self._cancelled = threading.Event()

    def _allowance(self, now: float) -> float:
        return self._budget_s + WAIT_REGEX_SHARE * (now - self._started) - self._spent

    async def first_match(self, lines: list[str]) -> str | None:
        """The first line that matches, or ``None``.

        Raises:
            SignalttyError: ``BAD_PARAMS`` (``details.field`` ``match``) when the regex
                exceeds its per-line limit or the call's matching budget.
        """
        if self._pattern is None:
            return next((ln for ln in lines if self._match in ln), None)
        now = time.perf_counter()
        delay = (self._budget_s / 8 - self._allowance(now)) / WAIT_REGEX_SHARE
        if delay > 0:
            if now + delay >= self._deadline:
                await asyncio.sleep(max(0.0, self._deadline - now))
                return None
            await asyncio.sleep(delay)
        job = _pool().submit(self._scan, lines)
        try:
            line, verdict = await asyncio.wrap_future(job)
        except asyncio.CancelledError:
            self._cancelled.set()  # a running scan stops before its next line
            raise
        if verdict is not None:
            raise SignalttyError(
                "BAD_PARAMS",
                f"regex too slow on this output ({verdict}; catastrophic backtracking?)",
                {"field": "match", "budget_s": self._budget_s},
            )
        return line

    async def last_match(self, lines: list[str]) -> str | None:
        """The last line that matches, or ``None`` (same errors as ``first_match``)."""
        return await self.first_match(lines[::-1])

    def _scan(self, lines: list[str]) -> tuple[str | None, str | None]:
        """Worker thread: ``(matching line or None, why it gave up or None)``."""
        assert self._pattern is not None
        search = self._pattern.search
        t0 = time.perf_counter()
        too_slow = f"used its {self._budget_s:g} s matching budget"
        try:
            for line in lines:
                if self._cancelled.is_set():
                    return None, None
                now = time.perf_counter()
                left = self._allowance(now) - (now - t0)
                if left <= 0:
                    return None, too_slow
                try:
                    if search(line, timeout=min(WAIT_REGEX_SEARCH_S, left)) is not None:
                        return line, None
                except TimeoutError:
                    if left > WAIT_REGEX_SEARCH_S:
                        return None, f"over {WAIT_REGEX_SEARCH_S * 1000:g} ms on one line"
                    return None, too_slow
            return None, None
        finally:
            self._spent += time.perf_counter() - t0


def compile_matcher(
    match: str,
    is_regex: bool,
    budget_s: float = WAIT_REGEX_BUDGET_DEFAULT_S,
    timeout_s: float = float("inf"),
) -> Matcher:
    """Build the matcher of ``pane.wait_for_output`` (Python ``re`` syntax, with the size
    limits of screen-rule patterns: compiling expands counted repeats, so ``a{4294967294}``
    would otherwise take GBs; see ``core.screen_rules.compile_pattern``).

    Raises:
        SignalttyError: ``BAD_PARAMS`` (``details.field`` ``match``) for an invalid or
            oversized regex.
    """
    if not is_regex:
        return Matcher(match, None, budget_s, timeout_s)
    try:
        pattern = compile_pattern(match)
    except PatternError as exc:
        raise SignalttyError("BAD_PARAMS", f"invalid regex: {exc}", {"field": "match"}) from None
    return Matcher(match, pattern, budget_s, timeout_s)


# DECSET/DECRST with private parameters (``CSI ? 1049 h``, ``CSI ? 25 ; 1049 l``) and RIS
# (``ESC c``, which also leaves the alternate screen): where the raw stream switches screens.
_SCREEN_SWITCH = re.compile(rb"\x1b\[\?([0-9;]*)([hl])|\x1bc")
_ALT_MODES = frozenset((b"47", b"1047", b"1049"))
# A kept partial line is cut to this many bytes (a full-screen program may never send \n).
_PARTIAL_BYTES = 65536


def _primary_bytes(part: bytes, alt: bool) -> tuple[bytes, bool, bool, bool]:
    """``(bytes of part written to the primary screen, alt state after part, whether any
    byte of part was on the primary screen, whether the alternate screen had a part in it)``,
    given the state at its start."""
    kept: list[bytes] = []
    seen_primary = False
    touched_alt = alt
    pos = 0
    for m in _SCREEN_SWITCH.finditer(part):
        touched_alt = True
        if not alt:
            kept.append(part[pos : m.start()])
            seen_primary = True
        pos = m.end()
        if m.group(2) is None:  # RIS
            alt = False
        elif _ALT_MODES.intersection(m.group(1).split(b";")):
            alt = m.group(2) == b"h"
    if not alt:
        kept.append(part[pos:])
        seen_primary = True
    return b"".join(kept), alt, seen_primary, touched_alt


class LineCollector:
    """Splits raw output arriving after a call into ANSI-stripped lines (``new_only`` waits).

    Only text written to the primary screen becomes lines: bytes between a switch to the
    alternate screen (``CSI ? 47/1047/1049 h``) and the switch back (``l``, or RIS) are left to
    ``AltRows``, because a full-screen program redraws rows in place and a redraw of text that
    was already shown is not new output.

    Args:
        alt: whether the alternate screen is shown where the collected output starts.
    """

    def __init__(self, alt: bool = False) -> None:
        self._partial = b""
        self._alt = alt  # the state at the start of ``_partial``
        # the last ``feed`` met the alternate screen (or a switch): only then is it worth
        # applying the screen model to look at its rows
        self.saw_alt = alt

    def feed(self, data: bytes) -> list[str]:
        """Return the lines completed by ``data`` plus the current partial line (last);
        a line written entirely on the alternate screen is left out."""
        parts = re.split(rb"[\r\n]", self._partial + data)
        out: list[bytes] = []
        saw_alt = False
        for part in parts[:-1]:
            text, self._alt, primary, touched = _primary_bytes(part, self._alt)
            saw_alt |= touched
            if primary:
                out.append(text)
        last = parts[-1]
        if len(last) > _PARTIAL_BYTES:
            cut = len(last) - _PARTIAL_BYTES
            esc = last.rfind(b"\x1b", max(0, cut - 64), cut)  # never split a switch
            cut = esc if esc >= 0 else cut
            _, self._alt, _, touched = _primary_bytes(last[:cut], self._alt)
            saw_alt |= touched
            last = last[cut:]
        self._partial = last
        text, _, primary, touched = _primary_bytes(last, self._alt)
        self.saw_alt = saw_alt or touched
        if primary:
            out.append(text)
        return [strip_ansi(p.decode("utf-8", "replace")) for p in out]


class AltRows:
    """The rows a ``new_only`` wait counts as new on the alternate screen.

    A full-screen program redraws rows in place, so new output is judged on the screen model's
    rows, not the bytes: a non-blank row is new when its text is not the last non-blank text
    seen on any row (at the call, or at a later check). Text that moves to another row
    (scrolling) or is redrawn after a clear is therefore not new; a row that changes
    (``Working (3s)`` → ``Working (4s)``) is, and so is text that comes back after other text
    replaced it on its row (``Ready`` → ``Working`` → ``Ready``).

    Args:
        rows: the alternate screen's visible rows at the call (empty when the primary screen
            was shown: everything drawn later on the alternate screen is new).
    """

    def __init__(self, rows: list[str]) -> None:
        self._seen: dict[int, str] = {}
        self.new_rows(rows)

    def new_rows(self, rows: list[str]) -> list[str]:
        """The new rows of ``rows`` (the visible rows, right-trimmed), top to bottom; they
        are then seen."""
        seen = set(self._seen.values())
        new = [text for text in rows if text.strip() and text not in seen]
        for y, text in enumerate(rows):
            if text.strip():  # a blanked row keeps its text: a redraw after a clear is old
                self._seen[y] = text
        return new
