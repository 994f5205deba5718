"""Pi: the whole managed extension file ``<root>/extensions/signaltty.ts`` (issue 11).

``<root>`` is ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``; Pi loads every extension in
``extensions/`` at start. Rendered from ``integrations/pi/signaltty.ts.tmpl``; a file
without the managed first line belongs to the user and is never overwritten nor removed.
"""

from __future__ import annotations

from signaltty.installer.managed_file import ManagedFile

AGENT = "pi"
FILE = ManagedFile(
    agent=AGENT,
    relpath="extensions/signaltty.ts",
    template="pi/signaltty.ts.tmpl",
    marker="// signaltty extension for Pi (managed by signaltty integration).",
    kind="extension",
)
MARKER = FILE.marker
FOREIGN = FILE.foreign
extension_file = FILE.path
render = FILE.render
is_managed = FILE.is_managed
install = FILE.install
uninstall = FILE.uninstall
status = FILE.status
