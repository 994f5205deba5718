"""The screen-rule sweep: every 500 ms, classify changed panes and watch for stuck turns.

For each live pane the sweep keeps a copy of the visible rows and refreshes only the rows
the screen reports dirty (``VirtualScreen.take_dirty_rows``, which never applies pending
bytes on the loop). A pane is evaluated only when its rows, OSC title, OSC 9;4 payload,
applicable rules or authority changed since its last evaluation:

* authority ``screen`` (not hooked, no program status, has rules): the winning rule's state
  is applied through ``core.layer_rules.on_screen_state`` (states.md §3.7);
* hooked or program-status panes left ``working`` are evaluated in shadow mode for the
  stuck-working recovery (states.md §3.8): a non-fallback ``idle`` winner (or, for a hooked
  pane, an ``idle``/``done`` OSC 7501 root record) that lasts ``server.stuck_recovery_s``
  while no hook or report arrives makes the pane ``done`` + ``unread``.

Applicable rules come from the active catalog (``Catalog.rules_for(kind, process_name)``,
agents.md §5.4), cached per pane until the catalog, the kind or the program changes.
Spec: agents.md §5, states.md §3.7–§3.8, protocol.md §6 ``pane.explain``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import structlog

from signaltty.agents.process_name import SHELLS
from signaltty.core import layer_rules
from signaltty.core.model import Pane, iso
from signaltty.core.screen_rules import ScreenRule, ScreenView, evaluate, priority_order, winner
from signaltty.core.states import Authority, Lifecycle
from signaltty.server.config import Config
from signaltty.server.panes import PaneRuntime
from signaltty.server.ports import CatalogSource, Runtimes
from signaltty.server.sleep import SleepWatch
from signaltty.server.store import Store

log = structlog.get_logger("signaltty.sweep")

_NO_RULES: tuple[str, tuple[ScreenRule, ...]] = ("none", ())
# Yield to the loop after this much sweep work (README quality bar: the loop is never
# blocked for more than 50 ms).
SLICE_S = 0.010
# Screen bytes a pane may leave pending before the sweep applies them in slices.
PIECE_BYTES = 4096
# A rule whose search runs out of time this often is skipped until the catalog is reloaded.
TIMEOUTS_TO_DISABLE = 3


@dataclass(slots=True)
class PaneSweep:
    """What the sweep remembers about one pane between ticks."""

    rows: list[str] = field(default_factory=list)
    rules_key: tuple[Any, ...] | None = None
    source: str = "none"
    rules: tuple[ScreenRule, ...] = ()
    order: tuple[int, ...] = ()
    view_key: tuple[Any, ...] | None = None
    evaluated: bool = False
    winner: int | None = None
    evidence_since: float | None = None
    # since when an ``ends_turn`` idle rule wins on a hooked working/blocked pane (issue 11)
    settle_since: float | None = None
    # since when an idle winner would end a screen-driven turn or dialog (held IDLE_HOLD_S)
    idle_since: float | None = None
    # since when a ``when_hooked`` dialog wins on a hooked working pane (held DIALOG_HOLD_S)
    dialog_since: float | None = None
    # the pane is blocked because a held ``when_hooked`` dialog made it so (not another rule,
    # e.g. Codex's start-up "Hooks need review", which ends in idle, not in a running turn)
    dialog_blocked: bool = False
    # output was left pending by the last visit's drain budget: visit again next tick
    backlog: bool = False
    evaluations: int = 0
    # everything the outcome depends on, cheap to compare: an unchanged pane costs one compare
    stamp: tuple[Any, ...] | None = None
    quick: tuple[Any, ...] | None = None
    # each rule's last region text and outcome (``screen_rules.winner``'s memo)
    memo: dict[int, tuple[str | None, bool]] = field(default_factory=dict)

    @property
    def timing(self) -> bool:
        """A timer runs (recovery, settling, a held idle or dialog) or output is left to
        apply: visited every tick."""
        return (
            self.backlog
            or self.evidence_since is not None
            or self.settle_since is not None
            or self.idle_since is not None
            or self.dialog_since is not None
        )

    def stop_timers(self) -> None:
        self.evidence_since = self.settle_since = self.idle_since = self.dialog_since = None


def _screen_view(pane: Pane, rows: list[str]) -> ScreenView:
    progress = pane.osc_progress.get("raw") if pane.osc_progress else None
    return ScreenView(rows, pane.title if pane.title_from_osc else None, progress)


class ScreenSweep:
    """The 500 ms loop (see module docstring); ``await tick()`` is one pass."""

    def __init__(
        self,
        *,
        store: Store,
        config: Config,
        runtimes: Runtimes,
        catalogs: CatalogSource,
        clock: SleepWatch | None = None,
    ) -> None:
        self.store = store
        # the holds below count wall-clock seconds; a sleep must not count (server/sleep.py)
        self.clock = clock if clock is not None else SleepWatch()
        self.clock.listeners.append(self.after_sleep)
        self.config = config
        self.runtimes = runtimes
        self.catalogs = catalogs
        self.state: dict[str, PaneSweep] = {}
        self.last_tick_s = 0.0
        self.max_tick_s = 0.0
        self.total_tick_s = 0.0
        self.busy_s = 0.0
        self.ticks = 0
        self.evaluations = 0
        # id(rule) → searches that ran out of time; rules at the limit are skipped
        self._timeouts: dict[int, int] = {}
        self.disabled: dict[int, ScreenRule] = {}
        self._catalog_id = 0
        self._seq = -1
        self._panes = -1

    # ---------------------------------------------------------------- loop

    async def run(self) -> None:
        interval = self.config.server.screen_sweep_ms / 1000
        loop = asyncio.get_running_loop()
        next_at = loop.time() + interval
        while True:
            # a fixed schedule: a long tick does not push every later tick back
            await asyncio.sleep(max(0.0, next_at - loop.time()))
            next_at = max(next_at + interval, loop.time())
            try:
                await self.tick()
            except Exception:  # noqa: BLE001 - one bad pane must not stop classification
                log.exception("sweep.failed")

    def after_sleep(self, shift_s: float) -> None:
        """Move every running hold and recovery timer forward by ``shift_s`` seconds asleep:
        a sleep is neither quiet time nor time an idle screen was held (states.md §3.8)."""
        for st in self.state.values():
            if st.evidence_since is not None:
                st.evidence_since += shift_s
            if st.settle_since is not None:
                st.settle_since += shift_s
            if st.idle_since is not None:
                st.idle_since += shift_s
            if st.dialog_since is not None:
                st.dialog_since += shift_s

    async def tick(self) -> None:
        """One pass over every pane, yielding every ``SLICE_S``; never raises for one pane."""
        started = slice_start = time.perf_counter()
        busy = 0.0
        self.clock.poll()  # first: a tick right after a resume must see the shift
        now = self.store.now()
        runtimes = self.runtimes
        store = self.store
        for pane_id in [p for p in self.state if p not in runtimes]:
            del self.state[pane_id]
        if store.seq != self._seq or len(runtimes) != self._panes:
            visit = list(runtimes.items())  # some state changed: look at every pane
        else:
            # Nothing but output happened: only panes that printed, or whose recovery timer
            # runs, can have a new outcome (idle panes cost nothing).
            ids = store.touched | {p for p, st in self.state.items() if st.timing}
            visit = [(p, runtimes[p]) for p in ids if p in runtimes]
        store.touched.clear()
        seq_at_start = store.seq
        for pane_id, rt in visit:
            if rt.closed:
                continue
            try:
                self._sweep_pane(rt, now)
            except Exception:  # noqa: BLE001
                log.exception("sweep.pane_failed", pane_id=pane_id)
            elapsed = time.perf_counter() - slice_start
            if elapsed >= SLICE_S:
                busy += elapsed
                await asyncio.sleep(0)
                slice_start = time.perf_counter()
        busy += time.perf_counter() - slice_start
        # An event during the pass (ours included) makes the next pass a full one: a pane
        # visited before a hook arrived for it must be looked at again.
        self._seq = seq_at_start
        self._panes = len(runtimes)
        self.ticks += 1
        self.last_tick_s = time.perf_counter() - started
        self.busy_s += busy
        self.total_tick_s += busy
        self.max_tick_s = max(self.max_tick_s, busy)

    def stats(self) -> dict[str, Any]:
        """Sweep counters for ``server.status`` (benchmarks read them): times in ms, busy time
        only (the sweep yields to the loop between slices)."""
        return {
            "ticks": self.ticks,
            "evaluations": self.evaluations,
            "last_tick_ms": round(self.last_tick_s * 1000, 3),
            "max_tick_ms": round(self.max_tick_s * 1000, 3),
            "mean_tick_ms": round(self.total_tick_s * 1000 / self.ticks, 3) if self.ticks else 0.0,
            "busy_ms": round(self.busy_s * 1000, 3),
            "disabled_rules": [f"{r.file}:{r.id}" for r in self.disabled.values()],
        }

    def _note_timeouts(
        self, rules: tuple[ScreenRule, ...], timed_out: tuple[int, ...], pane_id: str
    ) -> None:
        for i in timed_out:
            rule = rules[i]
            count = self._timeouts[id(rule)] = self._timeouts.get(id(rule), 0) + 1
            log.warning(
                "sweep.rule_timeout", pane_id=pane_id, rule=rule.id, file=rule.file, count=count
            )
            if count >= TIMEOUTS_TO_DISABLE:
                self.disabled[id(rule)] = rule
                log.error("sweep.rule_disabled", rule=rule.id, file=rule.file)

    # ---------------------------------------------------------------- one pane

    def rules_for(self, pane: Pane) -> tuple[str, tuple[ScreenRule, ...]]:
        """Applicable rules and their source (agents.md §5.4); ``("none", ())`` without any.

        In a pane the process refresh promoted (an agent started from its shell), the
        agent kind's rules do not apply while only the shell is in front: the agent has left,
        and the shell's screen would be read as the agent's (docs/decisions.md). A kind given
        at spawn (hint, catalog launch, program name) keeps its rules.
        """
        catalog = self.catalogs.catalog
        kind = pane.agent.kind
        if pane.promoted and pane.process_name in SHELLS:
            return _NO_RULES
        return catalog.rules_for(kind, pane.process_name)

    def _refresh_rules(self, st: PaneSweep, pane: Pane) -> None:
        key = (id(self.catalogs.catalog), pane.agent.kind, pane.process_name)
        if key != st.rules_key:
            st.rules_key = key
            had_rules = bool(st.rules)
            st.source, st.rules = self.rules_for(pane)
            if had_rules and not st.rules and pane.authority == Authority.SCREEN:
                self.store.apply(layer_rules.end_screen_rules(pane, now=self.store.now()))
            st.order = priority_order(st.rules)
            st.memo.clear()
            if key[0] != self._catalog_id:
                # a reloaded catalog has new rule objects: forget the old ones' record
                self._catalog_id = key[0]
                self._timeouts.clear()
                self.disabled.clear()
            st.view_key = None  # re-evaluate with the new rules
        pane.screen_rules = bool(st.rules)

    def _refresh_rows(self, st: PaneSweep, rt: PaneRuntime) -> None:
        screen = rt.screen
        # Output waits here until a reader or the sweep needs it (panes.py): apply it now, in
        # small pieces so one pane's backlog cannot hold the tick. ``drain`` counts bytes
        # decoded and chars drawn, so the fast-forward window may need about twice the
        # backlog's count to empty.
        budget = 2 * screen.pending + PIECE_BYTES
        while budget > 0 and screen.pending:
            budget -= max(1, screen.drain(min(budget, PIECE_BYTES)))
        # Rows read now miss the rest of a backlog; with no further output nothing else would
        # bring the pane back (Codex drew its start-up dialog, then printed nothing for
        # seconds while the sweep held the rows from before it).
        st.backlog = bool(screen.pending)
        dirty = screen.take_dirty_rows()
        rows_n = screen.size[1]
        if dirty is None or len(st.rows) != rows_n:
            st.rows = screen.peek_rows()
            st.view_key = None
        elif dirty:
            ys = sorted(dirty)
            for y, text in zip(ys, screen.peek_rows(ys), strict=False):
                if st.rows[y] != text:
                    st.rows[y] = text
                    st.view_key = None

    def _stamp(self, rt: PaneRuntime) -> tuple[Any, ...]:
        pane = rt.pane
        progress = pane.osc_progress
        status = pane.program_status
        return (
            rt.output_offset,
            id(self.catalogs.catalog),
            pane.agent.kind,
            pane.process_name,
            pane.title,
            progress.get("raw") if progress else None,
            pane.hooked,
            status.get("state") if status else None,
            pane.lifecycle,
            pane.lifecycle_since,  # blocked and back before a tick is a change too
            pane.pending_decision is None,
            rt.screen.size,
        )

    def _sweep_pane(self, rt: PaneRuntime, now: float) -> None:
        pane = rt.pane
        st = self.state.get(pane.id)
        if st is None:
            st = self.state[pane.id] = PaneSweep()
        if not rt.live:
            st.stop_timers()
            st.backlog = False
            st.stamp = None
            return
        if not st.timing:
            # Every state change emits an event (store.seq moves); output moves the offset;
            # the refresh's program name is the one input that changes silently.
            quick = (rt.output_offset, self.store.seq, pane.process_name, rt.screen.size)
            if quick == st.quick:
                return
            st.quick = quick
        stamp = self._stamp(rt)
        if stamp == st.stamp and not st.timing:
            return  # nothing this pane's outcome depends on has changed
        st.stamp = stamp
        self._refresh_rules(st, pane)
        if not st.rules:
            st.evaluated = False
            st.winner = None
            st.idle_since = st.dialog_since = None
            st.backlog = False
            self._recovery(st, rt, now)
            return
        self._refresh_rows(st, rt)
        authority = pane.authority
        shadow = authority != Authority.SCREEN
        if shadow and not (
            layer_rules.recovery_candidate(pane)
            or layer_rules.settle_candidate(pane)
            or layer_rules.dialog_candidate(pane)
        ):
            st.stop_timers()
            return
        if shadow:
            st.idle_since = None
        progress = pane.osc_progress.get("raw") if pane.osc_progress else None
        view_key = (pane.title if pane.title_from_osc else None, progress, authority)
        if view_key != st.view_key or not st.evaluated:
            st.view_key = view_key
            st.winner, timed_out = winner(
                st.rules, _screen_view(pane, st.rows), st.order, self.disabled, st.memo
            )
            st.evaluated = True
            st.evaluations += 1
            self.evaluations += 1
            if timed_out:
                self._note_timeouts(st.rules, timed_out, pane.id)
            if not shadow:
                self._apply_screen(st, rt, now)
        elif not shadow and st.idle_since is not None:
            self._apply_screen(st, rt, now)  # the same idle winner, still held
        if shadow:
            self._recovery(st, rt, now)

    def _apply_screen(self, st: PaneSweep, rt: PaneRuntime, now: float) -> None:
        """Apply the winner on a screen-authority pane; an idle winner that would end a turn
        or dialog must hold ``IDLE_HOLD_S`` first (issue 11 item 11: a clear and redraw
        mid-turn is no turn end)."""
        pane = rt.pane
        rule = st.rules[st.winner] if st.winner is not None else None
        state = rule.state if rule is not None else None
        if layer_rules.holds_idle(pane, state):
            if st.idle_since is None:
                st.idle_since = now
            if now - st.idle_since < layer_rules.IDLE_HOLD_S:
                return
        st.idle_since = None
        self.store.apply(
            layer_rules.on_screen_state(
                pane,
                state,
                now=now,
                fallback=rule is not None and rule.is_fallback,
                message=rule.message if rule is not None else None,
            )
        )
        st.stamp = self._stamp(rt)  # the lifecycle just changed by our own hand
        st.quick = None

    def _evidence(self, st: PaneSweep, pane: Pane) -> bool:
        if st.evaluated and st.winner is not None:
            rule = st.rules[st.winner]
            if rule.state == "idle" and not rule.is_fallback:
                return True
        status = pane.program_status
        return bool(pane.hooked and status and status.get("state") in ("idle", "done"))

    def _settle(self, st: PaneSweep, pane: Pane, now: float) -> bool:
        """Issue 11 items 1, 2: the agent's own idle prompt (an ``ends_turn`` rule) held for
        ``SETTLE_S`` after the last hook ends a hooked turn or dialog the agent sent no hook
        for (Claude's Esc, "No" in its dialog). True when it fired."""
        rule = st.rules[st.winner] if st.evaluated and st.winner is not None else None
        if rule is None or not rule.ends_turn or not layer_rules.settle_candidate(pane):
            st.settle_since = None
            return False
        if st.settle_since is None:
            st.settle_since = now
        since = max(st.settle_since, pane.last_signal_at or 0.0, pane.lifecycle_since or 0.0)
        if now - since < layer_rules.SETTLE_S:
            return False
        log.info("sweep.settled", pane_id=pane.id, rule=rule.id, lifecycle=pane.lifecycle.value)
        st.settle_since = st.evidence_since = None
        self.store.apply(layer_rules.settle(pane, now=now))
        return True

    def _hooked_dialog(self, st: PaneSweep, pane: Pane, now: float) -> bool:
        """Issue 11 item 11: a ``when_hooked`` dialog (Cursor's "Run this command?") that wins
        for ``DIALOG_HOLD_S`` after the last hook makes a hooked working pane blocked; once it
        leaves the screen the pane works again. True when the pane changed."""
        rule = st.rules[st.winner] if st.evaluated and st.winner is not None else None
        dialog = rule is not None and rule.state == "blocked" and rule.when_hooked
        if pane.lifecycle != Lifecycle.BLOCKED:
            st.dialog_blocked = False  # a hook or another layer moved the pane on
        if not layer_rules.dialog_candidate(pane):
            st.dialog_since = None
            st.dialog_blocked = False
            return False
        if pane.lifecycle == Lifecycle.BLOCKED:  # the screen made this hooked pane blocked
            st.dialog_since = None
            if not st.dialog_blocked:
                return False  # another blocked rule: the ordinary screen rules decide
            if rule is not None and rule.state == "blocked":
                return False  # a dialog is still up (any blocked rule: states.md H16)
            st.dialog_blocked = False
            log.info("sweep.dialog_left", pane_id=pane.id)
            self.store.apply(layer_rules.dialog_left(pane, now=now))
            return True
        if rule is None or not dialog:
            st.dialog_since = None
            return False
        if st.dialog_since is None:
            st.dialog_since = now
        since = max(st.dialog_since, pane.last_signal_at or 0.0, pane.lifecycle_since or 0.0)
        if now - since < layer_rules.DIALOG_HOLD_S:
            return False
        log.info("sweep.hooked_dialog", pane_id=pane.id, rule=rule.id)
        st.dialog_blocked = True
        st.dialog_since = st.evidence_since = st.settle_since = None
        effects = layer_rules.on_screen_state(pane, "blocked", now=now, message=rule.message)
        self.store.apply(effects)
        return True

    def _recovery(self, st: PaneSweep, rt: PaneRuntime, now: float) -> None:
        pane = rt.pane
        if self._hooked_dialog(st, pane, now) or self._settle(st, pane, now):
            return
        n = self.config.server.stuck_recovery_s
        if n <= 0 or not layer_rules.recovery_candidate(pane) or not self._evidence(st, pane):
            st.evidence_since = None
            return
        if st.evidence_since is None:
            st.evidence_since = now
        since = self.evidence_start(st, pane)
        if layer_rules.recovery_due(since, pane.last_signal_at, n, now):
            log.info("sweep.recovered", pane_id=pane.id, after_s=round(now - since, 1))
            st.evidence_since = None
            self.store.apply(layer_rules.recover(pane, now=now))

    @staticmethod
    def evidence_start(st: PaneSweep, pane: Pane) -> float:
        """When the current evidence counts from: a hook, report or lifecycle change restarts it."""
        starts = [st.evidence_since or 0.0, pane.last_signal_at or 0.0, pane.lifecycle_since or 0.0]
        return max(starts)

    # ---------------------------------------------------------------- pane.explain

    def explain(self, pane: Pane, rt: PaneRuntime | None) -> dict[str, Any]:
        """``pane.explain`` (protocol.md §6): a fresh, read-only evaluation of the pane.

        A pane without a live process lists its rules unevaluated (``matched`` false).
        """
        live = rt is not None and rt.live
        source, rules = self.rules_for(pane)
        ev = None
        if rules and rt is not None and live:
            ev = evaluate(rules, _screen_view(pane, rt.screen.peek_rows()), self.disabled)
            if ev.timed_out:
                self._note_timeouts(rules, ev.timed_out, pane.id)
        winner = ev.winner if ev is not None else None
        st = self.state.get(pane.id)
        now = self.store.now()
        n = self.config.server.stuck_recovery_s
        recovery: dict[str, Any] | None = None
        if live and layer_rules.recovery_candidate(pane):
            since = self.evidence_start(st, pane) if st and st.evidence_since is not None else None
            recovery = {
                "armed": n > 0,
                "evidence": since is not None,
                "since": iso(since),
                "fires_in_s": round(max(0.0, since + n - now), 1)
                if since is not None and n > 0
                else None,
            }
        authority = pane.authority
        return {
            "pane_id": pane.id,
            "kind": pane.agent.kind,
            "catalog_id": pane.agent.catalog_id,
            "process": pane.process_name,
            "source": source if rules else "none",
            "live": live,
            "hooked": pane.hooked,
            "authority": authority.value,
            "classifies": authority == Authority.SCREEN,
            "matched": (
                {"id": rules[winner].id, "state": rules[winner].state, "index": winner}
                if winner is not None
                else None
            ),
            "rules": [
                {
                    "id": r.id,
                    "state": r.state,
                    "region": r.label,
                    "priority": r.priority,
                    "matched": ev.matched[i] if ev is not None else False,
                    "file": r.file,
                    **({"disabled": "search ran out of time"} if id(r) in self.disabled else {}),
                }
                for i, r in enumerate(rules)
            ],
            "osc_progress": pane.osc_progress,
            "program_status": pane.program_status,
            "recovery": recovery,
        }
