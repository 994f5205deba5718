"""One hook's ``rules.HookInput`` from the adapter, the pane and the request (pure; no I/O).

``server/hooks.py`` calls :func:`assemble` once the pane, the session id and the decision
are known (states.md §3.1 steps 6–15 then run in ``core.rules.on_hook``); the hook-rule tests
(``tests/unit/test_hook_rules.py``) call the same function, so what they check is what the
daemon feeds the rules. Spec: states.md §3.1; agents.md §1; issue 14 item 6.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from signaltty.agents import keyed, resume
from signaltty.core import rules

if TYPE_CHECKING:
    from signaltty.agents.adapters.base import Adapter
    from signaltty.core.model import Decision, Pane

# A tool name is only compared (a pending decision's tool against PostToolUse), never shown.
MAX_TOOL_NAME: Final = 200


def tool_name(payload: object) -> str | None:
    """The payload's ``tool_name`` when it is a string of at most 200 characters, else ``None``."""
    name = payload.get("tool_name") if isinstance(payload, dict) else None
    return name if isinstance(name, str) and len(name) <= MAX_TOOL_NAME else None


def assemble(
    adapter: Adapter,
    pane: Pane,
    event: str,
    payload: object,
    *,
    session_id: str | None,
    decision: Decision | None,
    native_route: bool,
    notification_id: str,
    foreign_harness: bool = False,
    message: str | None = None,
    body: str | None = None,
    title: str | None = None,
    severity: str | None = None,
) -> rules.HookInput:
    """Return what ``core.rules.on_hook`` needs to apply one hook to ``pane``.

    Args:
        adapter: the resolved adapter (``overlay.resolve_adapter``).
        pane: the pane the hook belongs to (read only: its stored resume command).
        event: the hook's event name; ``payload``: its JSON (any type).
        session_id: the id ``adapter.session_identity`` accepted, or ``None``.
        decision: the native, explicit or keyed decision the hook carries, if any.
        native_route: a reporter waits for the verdict (``--wait-for-answer``).
        notification_id: id for a notification record the hook may add.
        foreign_harness: the payload names another known agent (states.md §3.1 step 6).
        message, body, title, severity: the explicit ``hook-event`` options.

    Returns:
        The ``HookInput``: the adapter's classification and draft, the resume argv for
        ``session_id`` (``resume_source`` ``reported`` when it equals the pane's reported
        command), and the answer channel (typed, or a dialog answered by keys).

    Raises:
        UnsafeValue: ``session_id`` fails the adapter's id grammar (``session_identity``
            never returns such an id).
    """
    resume_argv = resume.resolve(pane, adapter, session_id) if session_id else None
    reported = (
        pane.agent.resume_source == "reported"
        and resume_argv is not None
        and resume_argv == pane.agent.resume_argv
    )
    return rules.HookInput(
        agent=adapter.kind,
        event=event,
        classification=adapter.classify(event, payload),
        session_id=session_id,
        resume_argv=resume_argv,
        resume_source="reported" if reported else "adapter",
        draft=adapter.notification_draft(event, payload),
        default_title=adapter.default_title,
        display_name=adapter.display_name,
        decision=decision,
        # only a fixed dialog spec makes a non-native decision answerable (keyed.py, A10)
        answer_channel=keyed.is_keyed(decision)
        or (adapter.answer_channel() is not None and adapter.kind in keyed.TYPED),
        native_route=native_route,
        foreign_harness=foreign_harness,
        message=message,
        body=body,
        title=title,
        severity=severity,
        notification_id=notification_id,
        tool_name=tool_name(payload),
    )
