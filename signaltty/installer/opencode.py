"""OpenCode: the whole managed plugin file ``<root>/plugins/signaltty.js``
(Spec: integrations.md §1.3).

Rendered from ``integrations/opencode/signaltty.js.tmpl``; a file without the managed
first line belongs to the user and is never overwritten nor removed.
"""

from __future__ import annotations

from signaltty.installer.managed_file import ManagedFile

AGENT = "opencode"
FILE = ManagedFile(
    agent=AGENT,
    relpath="plugins/signaltty.js",
    template="opencode/signaltty.js.tmpl",
    marker="// signaltty hook-event shim for OpenCode (managed by signaltty integration).",
    kind="plugin",
)
MARKER = FILE.marker
FOREIGN = FILE.foreign
plugin_file = FILE.path
render = FILE.render
is_managed = FILE.is_managed
install = FILE.install
uninstall = FILE.uninstall
status = FILE.status
