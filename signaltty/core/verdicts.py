"""Which option of a non-native decision a verdict means (pure, stdlib only).

Shared by the answer path (``server/hooks.py``: ``decision.answer`` with a ``verdict``) and
the notification buttons (``desktop/notify.py``: Allow/Deny are offered only when both map),
so the two always agree. Spec: integrations.md §4 ``decision.answer`` "option" row.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

# Option ids (compared lower-cased) that ``verdict: allow`` / ``verdict: deny`` select.
ALLOW_IDS: Final = ("once", "allow", "yes", "y", "approve", "accept")
DENY_IDS: Final = ("deny", "no", "n", "reject", "decline")


def maps_allow_and_deny(option_ids: Iterable[str]) -> bool:
    """True when ``option_ids`` hold an id for each verdict (case-insensitive).

    Args:
        option_ids: the ``id`` of each option of a decision, as offered by the agent.
    """
    ids = {oid.lower() for oid in option_ids}
    return not ids.isdisjoint(ALLOW_IDS) and not ids.isdisjoint(DENY_IDS)
