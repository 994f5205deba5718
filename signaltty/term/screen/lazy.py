"""The lazy window: decoded output held back until a read, then mostly skipped.

Layer rule: standard library, ``pyte`` and ``signaltty.core`` only; no I/O.
Spec: agents.md §7.6; design and figures: docs/decisions.md, "Screen engine" (issue 12).

Text moves through three stages on its way into the model (``HardenedScreen``):

``lazy`` (held, not yet looked at) → ``committed`` (must be drawn, in order) → the model.

A *resolve* looks at the lazy text and, where it can prove the result is the same, replaces
drawing by a cheaper equivalent: the line printer (``history.advance``) for runs of simple
lines, cuts at clears of the alternate screen (``fastforward.scan``), and frame elision
(``repaint``) for TUIs that repaint rows in place: writes that later output overwrites are
skipped (a partial resolve keeps the last quarter of the text held, where the next output
may still overwrite them, and draws at most a budget of live writes at once). What is left is
drawn by pyte: at once for a *final* resolve (a read needs the exact model), or queued as
committed text for the sliced drain of a *partial* resolve (the window is full). Committed
text counts as pending for the pump's backpressure. Held text counts as pending only while
resolves skip nothing (``skipping`` is false: output with no clear, line run or overwritten
write to skip, or a new pane before its output has shown it can be skipped): the drain then
commits it and draws it in
slices as without fast-forward, so a read or a cursor report never draws a window of it at
once. While resolves do skip, held text is not pending and every read resolves it first
(cheap: most of it is skipped); the window then stays at its full size, otherwise it shrinks
to ``window // 8``.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import Final

from signaltty.term.screen import fastforward, history, repaint
from signaltty.term.screen.parser import TolerantStream
from signaltty.term.screen.state import HardenedScreen

# Chars held lazily before a partial resolve (about one PTY read of 64 KiB, twice).
WINDOW: Final = 128 * 1024
# A resolve that ends on the ground state never needs this much one-char feeding to get back.
_RESYNC_MAX: Final = 4096
# A partial resolve lets pyte draw the lines before a fold (the rest of the cursor's line, the
# lines down to the bottom row) at once up to this size; more is committed to the sliced drain.
_PRELUDE_MAX: Final = 16 * 1024


class LazyFeed:
    """Lazy and committed text of one screen, and the resolves between them.

    Args:
        screen, stream: the model and its parser (decoding happens before ``push``).
        window: chars held lazily before a partial resolve; ``window // 4`` stay held after
            one, for a later cut to skip.

    Attributes:
        stats: counters — ``skipped`` chars not drawn, ``drawn`` chars drawn by pyte,
            ``lines`` lines folded by the line printer, ``cuts`` clears skipped to,
            ``resolves``, and ``blocked:<reason>`` / ``fault`` for the times a skip was refused.
    """

    def __init__(
        self, screen: HardenedScreen, stream: TolerantStream, window: int = WINDOW
    ) -> None:
        if window < 16:
            raise ValueError(f"window must be at least 16 chars, got {window}")
        self.screen = screen
        self.stream = stream
        self.window = window
        self._limit = window
        self._lazy: list[str] = []
        self._lazy_len = 0
        self._committed: deque[str] = deque()
        self._committed_len = 0
        self.stats: Counter[str] = Counter()
        # Whether the last resolve skipped anything. While it did not, held text counts as
        # pending: the pump drains it in slices instead of a read drawing it all at once.
        self.skipping = False
        self._stopped = False
        self._at = 0
        self._no_cut_before = 0
        self._prelude_budget = _PRELUDE_MAX

    # --- state ---------------------------------------------------------------------------------

    @property
    def committed(self) -> int:
        """Chars that must be drawn before the lazy text (pending for the pump)."""
        return self._committed_len

    @property
    def held(self) -> int:
        """Chars held lazily."""
        return self._lazy_len

    def resolves_after(self, chars: int) -> bool:
        """True when pushing ``chars`` more chars would resolve the window (``push``)."""
        return not self._committed_len and self._lazy_len + chars >= self._limit

    def clear(self) -> None:
        self._lazy.clear()
        self._lazy_len = 0
        self._committed.clear()
        self._committed_len = 0

    # --- input ---------------------------------------------------------------------------------

    def push(self, text: str) -> None:
        """Hold decoded text; a full window is resolved (partially) once nothing is committed."""
        if text:
            self._lazy.append(text)
            self._lazy_len += len(text)
            if self._lazy_len >= self._limit and not self._committed_len:
                self.resolve(final=False)

    def hold(self, text: str) -> None:
        """Hold decoded text without resolving (a read resolves right after)."""
        if text:
            self._lazy.append(text)
            self._lazy_len += len(text)

    def draw_committed(self, limit: int) -> int:
        """Draw at most ``limit`` committed chars, oldest first; returns how many were drawn."""
        done = 0
        committed = self._committed
        while committed and done < limit:
            piece = committed.popleft()
            if len(piece) > limit - done:
                committed.appendleft(piece[limit - done :])
                piece = piece[: limit - done]
            self._draw(piece)
            done += len(piece)
        self._committed_len -= done
        return done

    def materialize(self) -> None:
        """Everything committed and held, drawn or skipped: the model is exact."""
        while self._committed:
            self.draw_committed(1 << 30)
        if self._lazy_len:
            self.resolve(final=True)

    # --- resolving -----------------------------------------------------------------------------

    def _draw(self, text: str) -> None:
        self.stream.feed_text(text)
        self.stats["drawn"] += len(text)

    def _commit(self, text: str) -> None:
        if text:
            self._committed.append(text)
            self._committed_len += len(text)

    def resolve(self, *, final: bool) -> None:
        """Skip what can be skipped in the lazy text; draw (final) or commit (partial) the rest.

        A partial resolve lets pyte draw at once only what a plan needs and is short (the
        rest of the cursor's line, the clear itself); anything longer is committed and the
        resolve stops there, because the next plan depends on the model having drawn it.
        """
        assert not self._committed_len, "committed text goes first"
        text = "".join(self._lazy)
        self._lazy.clear()
        self._lazy_len = 0
        self.stats["resolves"] += 1
        skipped_before = self.stats["skipped"]
        self._stopped = False
        self._at = 0
        self._no_cut_before = 0
        self._prelude_budget = _PRELUDE_MAX
        try:
            pos = self._run(text, final)
        except Exception as exc:  # noqa: BLE001 - a fast-forward bug must not lose output
            # Every plan checks before it changes the model; pyte draws on from where the
            # failing step started. The fault counter makes such a bug visible (tests need 0).
            self.stream._record_fault(exc)
            self.stats["fault"] += 1
            pos = self._at
            self._stopped = False
        rest = text[pos:]
        if final:
            self._draw(rest)
            if self.stats["skipped"] > skipped_before:
                self.skipping = True
            return
        # Held text stays bounded: a quarter of the window after a plain resolve (the rest is
        # the candidate tail), the window itself after one that stopped to let pyte catch up.
        keep = self._limit if self._stopped else self._limit // 4
        if len(rest) > keep:
            self._commit(rest[: len(rest) - keep])
            rest = rest[len(rest) - keep :]
        if rest:
            self._lazy.append(rest)
            self._lazy_len = len(rest)
        self.skipping = self.stats["skipped"] > skipped_before
        self._limit = self.window if self.skipping else max(16, self.window // 8)

    def flush(self) -> int:
        """Nothing committed or undecoded is left and the held text is not being skipped:
        resolve it once more (it may have become skippable), then commit whatever is still
        held, so that the sliced drain draws it. Returns the chars that moved on."""
        held = self._lazy_len
        if held and not self._committed_len:
            self.resolve(final=False)
            if not self.skipping and self._lazy_len:
                self._commit("".join(self._lazy))
                self._lazy.clear()
                self._lazy_len = 0
        return held - self._lazy_len

    def _run(self, text: str, final: bool) -> int:
        """The plans over ``text``; returns where the tail starts (drawn or held by the caller)."""
        screen = self.screen
        stream = self.stream
        n = len(text)
        pos = 0
        while pos < n and not self._stopped:
            self._at = pos
            if not stream._taking_plain_text:
                pos = self._resync(text, pos, final)
            elif screen.alt_active:
                pos, done = self._alt(text, pos, final)
                if done:
                    break
            elif history.applicable(screen):
                pos, done = self._lines(text, pos, final)
                if done:
                    break
            else:
                break
        return pos

    def _through(self, text: str, pos: int, upto: int, final: bool) -> int:
        """pyte draws ``text[pos:upto]``: now when final, else it is committed and the resolve
        stops (the next plan needs the model to stand at ``upto``)."""
        if final:
            self._draw(text[pos:upto])
        else:
            self._commit(text[pos:upto])
            self._stopped = True
        return upto

    def _resync(self, text: str, pos: int, final: bool) -> int:
        """A previous slice ended inside a sequence: one char at a time until ground."""
        stream = self.stream
        stop = min(len(text), pos + _RESYNC_MAX)
        while pos < stop and not stream._taking_plain_text:
            self._draw(text[pos])
            pos += 1
        if stream._taking_plain_text:
            return pos
        self.stats["blocked:resync"] += 1
        return self._through(text, pos, len(text), final)

    def _alt(self, text: str, pos: int, final: bool) -> tuple[int, bool]:
        if pos < self._no_cut_before and repaint.applicable(self.screen):
            # An earlier scan of this text found no clear to cut to before there.
            return self._repaint(text, pos, final)
        if not fastforward.may_clear(text, pos) and repaint.applicable(self.screen):
            self._no_cut_before = len(text)  # no ED: no clear anywhere in the rest
            return self._repaint(text, pos, final)
        found = fastforward.scan(text, pos)
        self._no_cut_before = found.end
        if found.cut is not None:
            start, end = found.cut
            if fastforward.apply_cut(self.screen, self.stream, text, pos, found):
                self.stats["cuts"] += 1
                self.stats["skipped"] += start - pos
                self.stats["drawn"] += end - start
            else:
                self.stats["blocked:last-char"] += 1
                self._through(text, pos, end, final)
            pos = end
            self._at = pos
            if self._stopped:
                return pos, False
        if repaint.applicable(self.screen):
            return self._repaint(text, pos, final)
        if found.blocker is not None:
            reason, _start, stop = found.blocker
            self.stats[f"blocked:{reason}"] += 1
            return self._through(text, pos, max(stop, pos + 1), final), False
        return pos, True  # the rest holds no clear to skip to (yet)

    def _lines(self, text: str, pos: int, final: bool) -> tuple[int, bool]:
        found = history.plan(self.screen, text, pos)
        if found.kind == "prelude":
            if final or found.upto - pos <= self._prelude_budget:
                self._prelude_budget -= found.upto - pos
                self._draw(text[pos : found.upto])
                return found.upto, False
            return self._through(text, pos, found.upto, final), True
        if found.kind == "fold":
            history.fold(self.screen, self.stream, text, pos, found)
            self.stats["lines"] += len(found.lines)
            self.stats["skipped"] += found.upto - pos
            pos = found.upto
            self._at = pos
        if found.simple_end >= len(text) or _unfinished(text, found.simple_end):
            return pos, True  # simple to the end: the kept lines wait for more
        # Something not simple: pyte draws the kept lines and on to where simple lines may
        # start again (the next line, or the end of a switch of screens), or, when the
        # kept lines are short, draws them and follows what comes next as a repaint.
        self.stats["blocked:not-simple"] += 1
        upto = found.simple_end
        if repaint.applicable(self.screen) and (final or upto - pos <= self._prelude_budget):
            if not final:
                self._prelude_budget -= upto - pos
            self._draw(text[pos:upto])
            self._at = upto
            return self._repaint(text, upto, final)
        return self._through(text, pos, _restart(text, found.simple_end), final), False

    def _repaint(self, text: str, pos: int, final: bool) -> tuple[int, bool]:
        """Frame elision over the segment at ``pos`` (``repaint``): dead writes skipped, the
        rest drawn; then pyte draws the barrier that ended the segment, if any. A partial
        resolve leaves the last quarter window held (later output may overwrite it) and
        draws at most its budget at once: the rest is committed to the sliced drain."""
        screen = self.screen
        seg = repaint.scan(screen, text, pos)
        writes = seg.writes
        count = len(writes)
        act_end = seg.end
        state = seg.state
        if not final and seg.blocker is None:
            # Writes near the end may still be overwritten: held for the next resolve.
            tail = len(text) - min(self._limit, len(text)) // 4
            while count and writes[count - 1][1] > tail:
                count -= 1
            if not count:
                return pos, True
            if count < len(writes):
                act_end = writes[count][0]
                state = (writes[count][3], writes[count][4], writes[count][5])
        if count:
            live = repaint.plan(screen, seg)
            dead = count - sum(live[:count])
            if not dead:
                self.stats["blocked:repaint-live"] += 1
                self._through(text, pos, act_end, final)
                if self._stopped:
                    return act_end, False
            else:
                self.stats["elided"] += dead
                for draw, a, b, at in _runs(seg, live, count, act_end, state):
                    if draw:
                        if not final:
                            if b - a > self._prelude_budget:
                                # Drawn enough at once: the rest goes to the sliced drain.
                                self.stats["blocked:repaint-budget"] += 1
                                return self._through(text, a, act_end, final), False
                            self._prelude_budget -= b - a
                        self._draw(text[a:b])
                    else:
                        repaint.apply_skip(screen, self.stream, text, seg, a, b, at)
                        self.stats["skipped"] += b - a
                    self._at = b
        elif act_end > pos:  # no write at all: pyte draws the rest (modes, moves...)
            self._through(text, pos, act_end, final)
            if self._stopped:
                return act_end, False
        if seg.blocker is None or act_end < seg.end:
            return act_end, True
        reason, b0, b1 = seg.blocker
        b1 = max(b1, b0 + 1)
        self.stats[f"blocked:{reason}"] += 1
        # a scroll moves every row and may push one into history: it costs about a row of
        # characters, so a run of bare line feeds is not drawn ~16 Ki scrolls at once
        cost = (b1 - b0) * (self.screen.columns if reason == "scroll" else 1)
        if final or cost <= self._prelude_budget:
            if not final:
                self._prelude_budget -= cost
            self._draw(text[b0:b1])
            return b1, False
        return self._through(text, b0, b1, final), False


def _runs(
    seg: repaint.Segment, live: bytearray, count: int, end: int, at_end: tuple[int, int, str]
) -> list[tuple[bool, int, int, tuple[int, int, str]]]:
    """The first ``count`` writes of ``seg`` and the text up to ``end`` as runs to draw
    (live writes) and runs to skip (dead ones): ``(draw, start, end, state at the end)``;
    ``at_end`` is the state at ``end``.
    The text before a write goes with the write's run; the text after the last write with
    the last run."""
    writes = seg.writes
    runs: list[tuple[bool, int, int, tuple[int, int, str]]] = []
    a = seg.start
    for i in range(count):
        draw = bool(live[i])
        if i + 1 < count and bool(live[i + 1]) == draw:
            continue
        if i + 1 < count:
            nxt = writes[i + 1]
            b = nxt[0]
            state = (nxt[3], nxt[4], nxt[5])
        else:
            b = end
            state = at_end
        runs.append((draw, a, b, state))
        a = b
    return runs


def _unfinished(text: str, at: int) -> bool:
    """True when ``text[at:]`` is only the start of a sequence or of a CR LF (more to come)."""
    return text[at:] == "\r" or fastforward.UNFINISHED.match(text, at) is not None


def _restart(text: str, at: int) -> int:
    """After a non-simple element at ``at``: the end of the next screen switch or line."""
    nl = text.find("\r\n", at)
    upto = nl + 2 if nl >= 0 else len(text)
    m = fastforward.SCREEN_SWITCH.search(text, at, upto)
    return m.end() if m is not None else upto
