"""Pi: the managed extension's events (pure; Spec: agents.md §2.5, issue 11).

The extension ``signaltty integration install pi`` writes (``integrations/pi/``) reports
``session_start`` (idle, with the session id), ``agent_start`` (working), ``agent_end``
(done/unread) and, for every extension confirmation dialog (``ctx.ui.confirm``, e.g. a
permission gate), a waiting ``PermissionRequest`` (blocked/permission_required, a native
decision) and ``permission_replied`` when the dialog was answered in the terminal. Pi has no
permission model of its own; without the extension the bundled screen rules classify.
Resume is offered only with a known id.
"""

from __future__ import annotations

from signaltty.agents.adapters.base import Adapter, text
from signaltty.core.hooks import UNRECOGNIZED, Classification, NotificationDraft
from signaltty.core.states import Attention, Lifecycle


class PiAdapter(Adapter):
    """Pi (``pi``): a Node program that sets ``process.title`` to ``pi``."""

    kind = "pi"
    display_name = "Pi"
    default_title = "Pi"
    builtin_names = ("pi",)
    session_keys = ("session_id",)
    resume = ("pi", "--session", "{id}")

    def _classify(self, event: str, p: dict[str, object]) -> Classification:
        match event:
            case "session_start":
                return Classification(lifecycle=Lifecycle.IDLE)
            case "agent_start":
                return Classification(lifecycle=Lifecycle.WORKING, attention=Attention.NONE)
            case "agent_end":
                return Classification(
                    lifecycle=Lifecycle.DONE, attention=Attention.UNREAD, message="turn finished", cause="turn_done"
                )
            case "PermissionRequest":
                return Classification(
                    lifecycle=Lifecycle.BLOCKED,
                    attention=Attention.PERMISSION_REQUIRED,
                    message=_dialog(p),
                    cause="permission",
                )
            case "permission_replied":
                return Classification(lifecycle=Lifecycle.WORKING, attention=Attention.NONE)
        return UNRECOGNIZED

    def _draft(self, event: str, p: dict[str, object]) -> NotificationDraft | None:
        if event == "PermissionRequest":
            return NotificationDraft("Pi needs approval", _dialog(p), "warning")
        return None


def _dialog(p: dict[str, object]) -> str:
    """The dialog's message (``Allow: touch x?``), else its title."""
    return text(p, "tool_input.message", "tool_input.title", "tool_name") or "confirmation requested"
