"""Console entry point: a stdlib-only dispatcher.

The hook fast path (``hook-event``/``report-session``) must not pay for pydantic, structlog
or uvloop, so this module imports nothing heavy: the two reporter commands go to
``signaltty.cli.fastpath`` and every other command to ``signaltty.cli.main``. Spec: README "Dependency rules".
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (protocol.md §10)."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("hook-event", "report-session"):
        from signaltty.cli import fastpath

        return fastpath.main(args[0], args[1:])
    from signaltty.cli import main as full

    return full.main(args)


if __name__ == "__main__":
    sys.exit(main())
