"""The adapter: one agent's hook dialect → Classification, identity, draft, resume (pure).

An adapter is a stateless, synchronous translator built from manifest data: a
:class:`~signaltty.agents.hookrules.hook_map.HookMap` (``[hooks]``/``[[hooks.rule]]``), the
session id fields (``[session] keys``/``key``), the resume template (``[session] resume``)
and, for what data cannot say, a named Python guard (``[hooks] adapter``,
``hookrules/named.py``). The built-in kinds are the bundled manifests
``signaltty/agents/manifests/<kind>.toml`` (``adapters/__init__.py``); catalog entries overlay
them (``adapters/overlay.py``). Every method takes the hook's event name and its payload
exactly as the reporter received them; payload values may be of any JSON type or missing,
and a value of the wrong type counts as absent. No method raises.

Spec: agents.md §1, §2; states.md §3.1; issue 14 item 4.
"""

from __future__ import annotations

import re
from typing import Final

from signaltty.agents.hookrules.hook_map import EMPTY, HookMap
from signaltty.agents.hookrules.named import ADAPTER_HOOKS, NO_HOOK, AdapterHook
from signaltty.agents.hookrules.payload import dig, text
from signaltty.core.argv_safety import MAX_ID, check_id, id_problem
from signaltty.core.hooks import TOOL_HOOK, UNRECOGNIZED, Classification, NotificationDraft

__all__ = ["MAX_SESSION_ID", "Adapter", "dig", "is_valid_session_id", "text"]

# A session id ends up as an operand of the resume argv: issue 10 item 4 bounds it to 128
# characters (protocol.md §6 said 256; the issue wins) and argv_safety says what else.
MAX_SESSION_ID: Final = MAX_ID
DEFAULT_SESSION_KEYS: Final = ("session_id",)


def is_valid_session_id(value: object, grammar: re.Pattern[str] | None = None) -> bool:
    """True for an id that may become an argv operand (``argv_safety.id_problem`` is ``None``).

    Args:
        value: the candidate.
        grammar: the agent's id pattern; ``None`` means the default grammar
            ``[A-Za-z0-9][A-Za-z0-9._:-]{0,127}``.

    Spec: issue 10 item 4 (never an option: no leading ``-``, no whitespace or control
    characters, at most 128 characters, the agent's id grammar).
    """
    return id_problem(value, grammar) is None


class Adapter:
    """One agent's hook dialect, from manifest data (agents.md §1).

    Args:
        kind: closed taxonomy value (``claude``, ``codex``, ``opencode``, ``cursor``, ``pi``,
            ``generic``).
        display_name: human name of the agent (``Terminal`` for generic); also the default
            notification title for explicit hook messages without ``title``.
        builtin_names: program basenames that identify the agent process.
        hooks: the hook map (rules, tool events, answer channel, named guard).
        session_keys: dotted payload paths tried in order for the session id.
        resume: resume argv template with ``{id}``, or ``None``.
        session_id_grammar: the agent's session id pattern (``fullmatch``), or ``None`` for
            the default grammar of ``core.argv_safety``.

    Raises:
        KeyError: ``hooks.adapter`` names no guard of ``ADAPTER_HOOKS`` (the schema refuses
            such a manifest first).
    """

    def __init__(
        self,
        kind: str,
        *,
        display_name: str = "Terminal",
        builtin_names: frozenset[str] = frozenset(),
        hooks: HookMap = EMPTY,
        session_keys: tuple[str, ...] = DEFAULT_SESSION_KEYS,
        resume: tuple[str, ...] | None = None,
        session_id_grammar: re.Pattern[str] | None = None,
    ) -> None:
        self.kind = kind
        self.display_name = display_name
        self.default_title = display_name
        self.builtin_names = builtin_names
        self.hooks = hooks
        self.session_keys = session_keys
        self.tool_events: frozenset[str] = hooks.tool_events or frozenset()
        self.resume = resume
        self.answer = hooks.answer
        self.session_id_grammar = session_id_grammar
        self.guard: AdapterHook = NO_HOOK if hooks.adapter is None else ADAPTER_HOOKS[hooks.adapter]

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
            return TOOL_HOOK
        p = payload if isinstance(payload, dict) else {}
        if self.guard.drops(event, p):
            return UNRECOGNIZED
        return self.hooks.classify(event, p)

    def session_id(self, payload: object) -> str | None:
        """Return the agent's session id carried by the payload, if any.

        Args:
            payload: hook JSON of any type.

        Returns:
            The accepted id of :meth:`session_identity`, else ``None``.

        Spec: agents.md §2 "Session id" lines; issue 10 item 4 (id validity).
        """
        return self.session_identity(payload)[0]

    def session_identity(self, payload: object) -> tuple[str | None, str | None]:
        """Return ``(accepted id, rejected value)`` for the payload's session id.

        The first ``session_keys`` path holding a non-blank string decides: it is accepted
        when it passes :meth:`check_session_id`, else it is *rejected* (returned second, for
        the caller to log) and no later key is tried, so a hostile value never lets a
        lower-priority field stand in for it. Missing keys, blank strings and non-strings
        count as absent.

        Args:
            payload: hook JSON of any type.

        Returns:
            ``(id, None)``, ``(None, rejected value)`` or ``(None, None)``.

        Spec: issue 10 item 4 ("rejected values are logged and not stored").
        """
        if self.ignores_identity(payload):
            return None, None
        for key in self.session_keys:
            value = dig(payload, key)
            if not isinstance(value, str) or not value.strip():
                continue
            if id_problem(value, self.session_id_grammar) is None:
                return value, None
            return None, value
        return None, None

    def ignores_identity(self, payload: object) -> bool:
        """True when the payload's id fields never name the pane's session (Codex title thread)."""
        return self.guard.ignores_identity(payload)

    def check_session_id(self, value: object) -> str:
        """Return ``value`` when it is a session id of this agent.

        Raises:
            UnsafeValue: (a ``ValueError``) the reason, e.g. ``session id '--x' rejected:
                starts with '-' (would be read as an option)``.

        Spec: issue 10 item 4; ``core.argv_safety``.
        """
        return check_id(value, self.session_id_grammar)

    def notification_draft(self, event: str, payload: object) -> NotificationDraft | None:
        """Return the notification this hook suggests, if any (the rule's ``notification``).

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
        p = payload if isinstance(payload, dict) else {}
        if self.guard.drops(event, p):
            return None
        return self.hooks.draft(event, p)

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
        identity untouched). Only Codex has such threads today (``[hooks] adapter =
        "codex_title"``, ``hookrules/named.py``).

        Args:
            event: hook name.
            payload: hook JSON of any type.
            known_session_id: the pane's current ``agent_session_id``, if any.

        Spec: research/real-agents.md §4 (Codex title thread fires ``notify``).
        """
        return self.guard.is_auxiliary(event, payload, known_session_id)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} kind={self.kind!r}>"
