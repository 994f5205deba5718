"""Adapter base: one hook dialect → Classification, identity, draft, resume (pure; imports core only).

An adapter is a stateless, synchronous translator. Every method takes the hook's event name
and its payload exactly as the reporter received them; payload values may be of any JSON
type or missing, and a value of the wrong type counts as absent. No method raises.

Overlay slot (catalog manifests, agents.md §4.3, a later issue): an overlay wraps a builtin
adapter and replaces single fields of its answers — ``dataclasses.replace`` on the
``Classification`` for a ``[lifecycle.<Event>]`` table, a dotted path prepended to
``session_keys`` for ``[session] key``, and ``resume_template`` for ``[session] resume``.
Builtin adapters therefore keep every per-agent fact in class attributes and small pure
methods, never in hidden state.

Spec: agents.md §1, §2; states.md §3.1.
"""

from __future__ import annotations

from typing import Final

from signaltty.core.hooks import UNRECOGNIZED, Classification, NotificationDraft

# protocol.md §6 report-session: a session id is 1–256 printable characters.
MAX_SESSION_ID: Final = 256


def dig(payload: object, path: str) -> object | None:
    """Return the value at a dotted ``path`` inside nested JSON objects, else ``None``.

    Args:
        payload: any JSON value (``dict``, ``list``, scalar, ``None``).
        path: keys separated by ``.``, e.g. ``"properties.info.id"``.

    Returns:
        The value found, or ``None`` when any step is missing or not an object.

    Spec: agents.md §4.1 ``[session] key`` (dotted path into the hook payload).
    """
    value: object = payload
    for key in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def text(payload: object, *paths: str) -> str | None:
    """Return the first value among ``paths`` that is a non-blank string.

    Args:
        payload: any JSON value.
        paths: dotted paths tried in order.

    Returns:
        The string as given (not stripped), or ``None`` when none qualifies.

    Spec: agents.md §2 ("payload X, else Y, else …").
    """
    for path in paths:
        value = dig(payload, path)
        if isinstance(value, str) and value.strip():
            return value
    return None


def is_valid_session_id(value: object) -> bool:
    """True for a string of 1–256 printable characters that is not blank.

    Spec: protocol.md §6 ``report-session`` (id 1–256 printable chars).
    """
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_SESSION_ID
        and value.isprintable()
        and bool(value.strip())
    )


class Adapter:
    """A builtin hook dialect (agents.md §1). Subclasses set the class attributes below.

    Attributes:
        kind: closed taxonomy value (``claude``, ``codex``, ``opencode``, ``cursor``, ``pi``,
            ``generic``).
        display_name: human name of the agent (``Terminal`` for generic).
        default_title: notification title for explicit hook messages without ``title``.
        builtin_names: program basenames that identify the kind without a manifest.
        session_keys: dotted payload paths tried in order for the session id.
        tool_events: events that are tool hooks (never change a blocked pane).
        resume: resume argv template with ``{id}``, or ``None``.
        answer: ``"typed_text"`` when explicit decisions are answered by typing, else ``None``.
    """

    kind: str = "generic"
    display_name: str = "Terminal"
    default_title: str = "Terminal"
    builtin_names: tuple[str, ...] = ()
    session_keys: tuple[str, ...] = ("session_id",)
    tool_events: frozenset[str] = frozenset()
    resume: tuple[str, ...] | None = None
    answer: str | None = None

    def classify(self, event: str, payload: object) -> Classification:
        """Return what the hook means for the pane.

        Args:
            event: hook name exactly as the provider spells it.
            payload: hook JSON (normally an object; anything else counts as empty).

        Returns:
            A Classification; ``UNRECOGNIZED`` when the event means nothing to this dialect.
            ``attention=Attention.NONE`` means *clear*, ``None`` means no change.

        Spec: agents.md §2 tables; states.md §3.1 "Alert causes from hooks".
        """
        if event in self.tool_events:
            return Classification(tool_hook=True)
        return self._classify(event, payload if isinstance(payload, dict) else {})

    def _classify(self, event: str, p: dict[str, object]) -> Classification:
        return UNRECOGNIZED

    def session_id(self, payload: object) -> str | None:
        """Return the agent's session id carried by the payload, if any.

        Args:
            payload: hook JSON of any type.

        Returns:
            The first value among ``session_keys`` that is a valid session id (a string of
            1–256 printable characters, not blank), else ``None``.

        Spec: agents.md §2 "Session id" lines; protocol.md §6 (id validity).
        """
        for key in self.session_keys:
            value = dig(payload, key)
            if is_valid_session_id(value):
                return value  # type: ignore[return-value]
        return None

    def notification_draft(self, event: str, payload: object) -> NotificationDraft | None:
        """Return the notification this hook suggests, if any (agents.md §2 last column).

        Args:
            event: hook name.
            payload: hook JSON of any type.

        Returns:
            ``NotificationDraft(title, body, severity)`` or ``None``. The rules use it only
            when the hook carries no explicit ``message``/``body`` (states.md §3.1 step 14).

        Spec: agents.md §2 "Notification draft".
        """
        if event in self.tool_events:
            return None
        return self._draft(event, payload if isinstance(payload, dict) else {})

    def _draft(self, event: str, p: dict[str, object]) -> NotificationDraft | None:
        return None

    def resume_template(self) -> list[str] | None:
        """Return a fresh copy of the resume argv template (``{id}`` placeholder), or ``None``.

        Spec: agents.md §2 "Resume" lines, §3.4.
        """
        return list(self.resume) if self.resume is not None else None

    def answer_channel(self) -> str | None:
        """Return ``"typed_text"`` when explicit decisions are answered by typing, else ``None``.

        Spec: agents.md §1 (Codex only), integrations.md §4.2 "typed channel".
        """
        return self.answer

    def is_tool_hook(self, event: str) -> bool:
        """True when ``event`` is one of this dialect's tool hooks (states.md §3.1 step 9)."""
        return event in self.tool_events

    def is_auxiliary(self, event: str, payload: object, known_session_id: str | None) -> bool:
        """True when the hook belongs to a hidden side thread of the agent, not the pane's session.

        The rules treat an auxiliary hook as unrecognized (dropped ``unrecognized_hook``,
        identity untouched). Only Codex has such threads today (see ``codex.py``).

        Args:
            event: hook name.
            payload: hook JSON of any type.
            known_session_id: the pane's current ``agent_session_id``, if any.

        Spec: research/real-agents.md §4 (Codex title thread fires ``notify``).
        """
        return False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} kind={self.kind!r}>"
