"""What an agent adapter makes of one hook: the shapes core rules consume (pure, stdlib only).

Adapters (``signaltty/agents/adapters/``) turn a provider's hook event and payload into these
values; ``core.rules.on_hook`` applies them in the order of states.md §3.1.
Spec: agents.md §1 (adapter interface), states.md §3.1.
"""

from __future__ import annotations

from dataclasses import dataclass

from signaltty.core.states import Attention, Lifecycle


@dataclass(frozen=True, slots=True)
class Classification:
    """One hook's meaning (agents.md §1 ``classify``).

    Attributes:
        lifecycle: new lifecycle, or ``None`` for no change.
        attention: ``Attention.NONE`` means *clear*; ``None`` means no change.
        message: value for ``last_message`` (unsanitized; the rules sanitize and cap it).
        tool_hook: a tool hook (PreToolUse, PostToolUse, …): never changes a blocked pane.
        cause: alert cause when attention is raised (``permission``, ``input``,
            ``idle_prompt``, ``error``, ``warning``, ``turn_done``, ``session_end``,
            ``message``); ``None`` lets the rules derive it from the attention value.
        notice: an alert of ``cause`` only (the draft gives its text): no lifecycle,
            attention, message or notification record change (Claude's idle reminder,
            issue 11 item 8).
    """

    lifecycle: Lifecycle | None = None
    attention: Attention | None = None
    message: str | None = None
    tool_hook: bool = False
    cause: str | None = None
    notice: bool = False

    @property
    def recognized(self) -> bool:
        """True when the hook means anything at all (states.md §3.1 step 8 uses the rest)."""
        return (
            self.lifecycle is not None
            or self.attention is not None
            or self.message is not None
            or self.tool_hook
            or self.notice
        )


UNRECOGNIZED = Classification()
TOOL_HOOK = Classification(tool_hook=True)


@dataclass(frozen=True, slots=True)
class NotificationDraft:
    """A notification an adapter suggests for a hook (agents.md §2 "Notification draft")."""

    title: str
    body: str | None = None
    severity: str = "info"
