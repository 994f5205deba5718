"""A manifest's hook map, evaluated: hook event + payload → Classification and draft (pure).

The ``[hooks]`` table and its ``[[hooks.rule]]`` array (docs/manifests.md "Hook maps";
validated in ``agents/manifest_schema.py``) become a :class:`HookMap`. For one hook the
first rule of the event whose ``when`` conditions all hold decides; no rule means the hook is
unrecognized. Built-in agents (``claude.toml``, ``codex.toml``, …) and user manifests use the
same data. Nothing here raises on any payload.

Spec: agents.md §2 tables, §4.1; states.md §3.1 "Alert causes from hooks"; issue 14 item 4.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from signaltty.agents.hookrules.named import TEXT_FUNCTIONS
from signaltty.agents.hookrules.payload import first_string, text
from signaltty.core.hooks import UNRECOGNIZED, Classification, NotificationDraft
from signaltty.core.states import Attention, Lifecycle


@dataclass(frozen=True, slots=True)
class Condition:
    """``when = { field = …, equals = …, contains = … }``: a test on one payload value.

    ``fields`` are dotted paths; the first one holding a string is the value tested (a
    missing value fails every test). Both ``equals`` and ``contains`` must hold when set.
    """

    fields: tuple[str, ...]
    equals: str | None = None
    contains: str | None = None

    def holds(self, p: dict[str, object]) -> bool:
        value = first_string(p, self.fields)
        if value is None:
            return False
        if self.equals is not None and value != self.equals:
            return False
        return self.contains is None or self.contains in value


@dataclass(frozen=True, slots=True)
class Text:
    """A text taken from the payload: the first non-blank string of ``paths``, else the named
    function ``fn`` (``hookrules/named.py``), else ``default`` (``None``: no text)."""

    paths: tuple[str, ...] = ()
    default: str | None = None
    fn: str | None = None

    def render(self, p: dict[str, object]) -> str | None:
        found = text(p, *self.paths) if self.paths else None
        if found is None and self.fn is not None:
            found = TEXT_FUNCTIONS[self.fn](p)
        return found if found is not None else self.default


@dataclass(frozen=True, slots=True)
class DraftSpec:
    """``notification = { title, body, body_from, body_fn, severity }`` of a rule."""

    title: str
    body: Text = Text()
    severity: str = "info"

    def draft(self, p: dict[str, object]) -> NotificationDraft:
        return NotificationDraft(self.title, self.body.render(p), self.severity)


@dataclass(frozen=True, slots=True)
class HookRule:
    """One ``[[hooks.rule]]``: what ``event`` means when every ``when`` condition holds.

    ``lifecycle``/``attention`` ``None`` mean no change (``Attention.NONE`` clears);
    ``notice`` makes an alert of ``cause`` only (states.md §3.1 step 14).
    """

    event: str
    when: tuple[Condition, ...] = ()
    lifecycle: Lifecycle | None = None
    attention: Attention | None = None
    message: Text = Text()
    cause: str | None = None
    notice: bool = False
    notification: DraftSpec | None = None

    def matches(self, p: dict[str, object]) -> bool:
        return all(c.holds(p) for c in self.when)

    def classification(self, p: dict[str, object]) -> Classification:
        return Classification(
            lifecycle=self.lifecycle,
            attention=self.attention,
            message=self.message.render(p),
            cause=self.cause,
            notice=self.notice,
        )


@dataclass(frozen=True, slots=True)
class HookMap:
    """A manifest's ``[hooks]``: rules by event plus dialect settings.

    Attributes:
        rules: event name → its rules in file order (the first match decides).
        tool_events: events that are tool hooks (never change a blocked pane); ``None``:
            not set here (inherit).
        answer: ``typed_text`` when explicit decisions are answered by typing; ``None``:
            not set here.
        adapter: name of an ``ADAPTER_HOOKS`` guard (``hookrules/named.py``); ``None``: not
            set here.
    """

    rules: Mapping[str, tuple[HookRule, ...]] = field(default_factory=dict)
    tool_events: frozenset[str] | None = None
    answer: str | None = None
    adapter: str | None = None

    def rule_for(self, event: str, p: dict[str, object]) -> HookRule | None:
        """The first rule of ``event`` whose conditions hold, else ``None``."""
        for rule in self.rules.get(event, ()):
            if rule.matches(p):
                return rule
        return None

    def classify(self, event: str, p: dict[str, object]) -> Classification:
        rule = self.rule_for(event, p)
        return UNRECOGNIZED if rule is None else rule.classification(p)

    def draft(self, event: str, p: dict[str, object]) -> NotificationDraft | None:
        rule = self.rule_for(event, p)
        return None if rule is None or rule.notification is None else rule.notification.draft(p)

    def over(self, base: HookMap) -> HookMap:
        """This map on top of ``base``: its events' rules replace ``base``'s rules of the
        same event whole; its settings replace single settings (docs/manifests.md §1
        "Overriding a bundled entry")."""
        return HookMap(
            rules={**base.rules, **self.rules},
            tool_events=self.tool_events if self.tool_events is not None else base.tool_events,
            answer=self.answer if self.answer is not None else base.answer,
            adapter=self.adapter if self.adapter is not None else base.adapter,
        )


EMPTY = HookMap()
