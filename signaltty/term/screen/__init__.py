"""Terminal screen models: a backend-neutral interface and a hardened, fast-forwarding pyte backend.

Layer rule: ``term`` imports only the standard library, ``pyte`` and ``signaltty.core``; no I/O.

Spec: agents.md §7.6 (screen model), protocol.md §5 (``pane.read``, ``pane.attach``), §9 (limits).

The parts, in the order bytes meet them:

* ``engine`` — ``PyteScreen``, the ``VirtualScreen`` the daemon uses: cheap ``feed``, sliced
  ``drain``, and the lazy window that lets most output skip the cell model (``fastforward``,
  ``history``, ``repaint``) while every read stays identical to feeding every byte.
* ``parser`` — ``TolerantStream``, a byte-exact ECMA-48 tokenizer (CSI private markers and
  intermediates, colon sub-parameters, OSC with a length cap, DCS/SOS/PM/APC swallowed, ``ESC``
  inside a sequence restarts it) with regex fast paths for whole sequences. pyte 0.8.2 draws the
  tail of sequences it does not understand (``CSI < 1 u`` shows ``1u``), draws DCS payloads as
  text, raises ``ValueError`` on parameters longer than 4300 digits, and drops the rest of a
  feed on any handler exception.
* ``state`` (with ``cells`` and ``sgr``) — ``HardenedScreen``: accepts ``*args, **kwargs`` in
  every handler, bounds every count by the screen size, keeps history in a bounded deque,
  implements the alternate screen, and fixes the pyte faults listed in its docstring.
* ``history`` — the line-printer fast-forward: rows that scroll into history computed as text.
* ``fastforward`` — cuts at full clears of the alternate screen, with the state the skipped
  bytes leave behind folded exactly.
* ``repaint`` — frame elision: in output that repaints rows in place without clearing, the
  writes that later writes overwrite before anything reads them are skipped.
* ``snapshot`` — the visible grid as terminal output; ``queries`` — the read interface.
* ``scrollback`` — the rows that left the top of the main grid (5000), kept in blocks of joined
  UTF-8 rather than one string a row.
"""

from __future__ import annotations

from signaltty.term.screen.engine import PendingBytes, PyteScreen
from signaltty.term.screen.parser import TolerantStream
from signaltty.term.screen.queries import TailText, VirtualScreen
from signaltty.term.screen.state import HardenedScreen

__all__ = [
    "HardenedScreen",
    "PendingBytes",
    "PyteScreen",
    "TailText",
    "TolerantStream",
    "VirtualScreen",
]
