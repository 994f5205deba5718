"""OSC 7501 program status of one pane: records, authority and coalesced events.

One ``ProgramStatusLayer`` per ``PaneRuntime``. Reports come from the pump (already scanned
out of the PTY stream); the layer parses them, keeps the records of the current process
instance, applies root reports through ``core.layer_rules`` when the pane is not hooked, and
ends the authority on ``clear``, RIS, OSC 133;A or a different foreground program.
``pane.program_status`` events are coalesced like ``pane.progress`` (one per 250 ms, latest
wins), so a program flooding reports costs a parse each and no event storm.
Spec: agents.md §7.4, states.md §2, §3.3, protocol.md §7.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from signaltty.core import layer_rules
from signaltty.core.model import Pane, iso
from signaltty.server.coalesce import Coalescer
from signaltty.term.program_status import Records, parse_report

if TYPE_CHECKING:
    from signaltty.server.store import Store

# Programs named like this are the pane's shell, not the program that reported (§3.3).
_SHELLS = frozenset({"sh", "bash", "zsh", "fish", "dash"})
_LIVE_ROOT_STATES = frozenset({"idle", "working", "blocked"})


class ProgramStatusLayer:
    """Program status of one pane (see module docstring)."""

    def __init__(self, store: Store, pane: Pane) -> None:
        self.store = store
        self.pane = pane
        self.records = Records()
        self.instance = pane.process_instance
        # Foreground program when the first root report arrived; None = not yet observed.
        self.program: str | None = None
        self.reports = 0
        self.discarded = 0
        self._events = Coalescer(self._emit)

    # ---------------------------------------------------------------- inputs

    def on_report(self, payload: str, size: int = 0) -> None:
        """One ``OSC 7501;<report>`` from the PTY (``size``: the whole sequence in bytes)."""
        self._follow_instance()
        report = parse_report(payload, size)
        if report is None:
            self.discarded += 1
            return
        self.reports += 1
        pane = self.pane
        now = self.store.now()
        pane.last_signal_at = now
        if report.state == "clear" and not report.id:
            self._end(now)
            return
        had_root = self.records.root is not None
        self.records.apply(report, now)
        if report.id or report.state == "clear":
            self._publish()
            return
        if not had_root:
            self.program = pane.process_name if pane.process_name not in _SHELLS else None
        self._publish()
        if pane.hooked:
            return  # recorded only: recovery evidence (states.md §3.3, P11)
        self.store.apply(
            layer_rules.on_program_status(
                pane, report.state, report.kind, report.msg or report.title, now=now
            )
        )

    def on_prompt_start(self) -> None:
        """OSC 133;A: a shell prompt ends live root states."""
        root = self.records.root
        if root is not None and root.state in _LIVE_ROOT_STATES:
            self._end(self.store.now())

    def on_reset(self) -> None:
        """RIS ``ESC c`` clears every record."""
        if self.records:
            self._end(self.store.now())

    def on_foreground(self, process_name: str | None) -> None:
        """Process refresh result: a different program (or only the shell) ends authority."""
        if self.records.root is None or not self.pane.live:
            return
        if process_name is None or process_name in _SHELLS:
            self._end(self.store.now())
        elif self.program is None:
            self.program = process_name
        elif process_name != self.program:
            self._end(self.store.now())

    def reset(self) -> None:
        """New process instance or exit: records dropped without state effects."""
        self.records.clear()
        self.program = None
        self.instance = self.pane.process_instance
        self._events.cancel()

    # ---------------------------------------------------------------- internals

    def _follow_instance(self) -> None:
        if self.instance != self.pane.process_instance:
            self.reset()

    def _end(self, now: float) -> None:
        pane = self.pane
        self.records.clear()
        self.program = None
        effects = [] if pane.hooked else layer_rules.end_program_status(pane, now=now)
        self._publish()
        self.store.apply(effects)

    def _publish(self) -> None:
        """Update ``pane.program_status`` now (authority is read from it) and emit later."""
        self.pane.program_status = self.records.to_wire(iso)
        self._events.poke()

    def _emit(self) -> None:
        if not self.pane.live:
            return
        self.store.emit(
            "pane.program_status",
            {"pane_id": self.pane.id, "program_status": self.pane.program_status},
        )
