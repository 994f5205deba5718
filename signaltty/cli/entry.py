"""Console entry point: a stdlib-only dispatcher.

The hook fast path (``hook-event``/``report-session``, coming with the agent-awareness work)
must not pay for pydantic, structlog or uvloop, so this module imports nothing heavy and
hands every other command to ``signaltty.cli.main``. Spec: README "Dependency rules".
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (protocol.md §10)."""
    args = sys.argv[1:] if argv is None else argv
    from signaltty.cli import main as full

    return full.main(args)


if __name__ == "__main__":
    sys.exit(main())
