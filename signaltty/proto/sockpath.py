"""The daemon socket path, resolved with ``os`` alone (the hook fast path cannot pay for
``pathlib``/``pwd``; ``signaltty.system.paths.socket_path`` delegates here).

It lives in ``proto`` because the clients need it and ``proto`` may not import ``system``
(the layer contracts, docs/architecture.md); ``signaltty.system.sockpath`` re-exports it.

Spec: desktop-and-service.md §1 "socket" and "runtime dir" (set-but-empty = unset).
"""

from __future__ import annotations

import os


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def _absolute(value: str) -> str:
    if value == "~" or value.startswith("~/"):
        home = _env("HOME")
        if home is None:
            import pwd

            home = pwd.getpwuid(os.getuid()).pw_dir
        value = home + value[1:]
    else:
        value = os.path.expanduser(value)
    return os.path.abspath(value)


def resolve(flag: str | None = None) -> str:
    """``--socket``, else ``$SIGNALTTY_SOCKET``, else ``<runtime dir>/signaltty.sock`` (absolute).

    The runtime dir is ``$XDG_RUNTIME_DIR/signaltty`` when that variable is absolute, else
    ``/tmp/signaltty-<uid>``.
    """
    for value in (flag, _env("SIGNALTTY_SOCKET")):
        if value:
            return _absolute(value)
    base = _env("XDG_RUNTIME_DIR")
    if base is not None and os.path.isabs(base):
        return os.path.join(base, "signaltty", "signaltty.sock")
    return os.path.join("/tmp", f"signaltty-{os.getuid()}", "signaltty.sock")
