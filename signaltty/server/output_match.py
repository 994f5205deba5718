"""Output matching of ``pane.wait_for_output``: substring or time-bounded regex, and lines.

``Matcher`` finds a line of a pane's output; a regex runs in a worker thread with a
per-line time limit and a per-call budget, so a catastrophic pattern never holds the event
loop (issue 10 §10, docs/architecture.md "Bounded resources"). ``LineCollector`` splits
output that arrives after a call into ANSI-stripped lines (``new_only`` waits). Used by
``server/handlers/output.py``.
"""

from __future__ import annotations

import asyncio
import codecs
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


class LineCollector:
    """Splits raw output arriving after a call into ANSI-stripped lines (``new_only`` waits)."""

    def __init__(self) -> None:
        self._partial = b""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes) -> list[str]:
        """Return the lines completed by ``data`` plus the current partial line (last)."""
        buf = self._partial + data
        parts = re.split(rb"[\r\n]", buf)
        self._partial = parts[-1][-65536:]
        return [strip_ansi(p.decode("utf-8", "replace")) for p in parts]
