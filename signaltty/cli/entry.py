"""Console entry point: a stdlib-only dispatcher.

The hook fast path (``hook-event``/``report-session``) must not pay for pydantic, structlog
or uvloop, so this module imports nothing heavy: the two reporter commands go to
``signaltty.cli.fastpath`` and every other command to ``signaltty.cli.main``. Spec: README
"Dependency rules".
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (protocol.md §10)."""
    args = sys.argv[1:] if argv is None else argv
    # global options may come first (`signaltty --json hook-event …`); both commands take them
    i = 0
    while i < len(args) and (args[i] == "--json" or args[i].startswith("--socket")):
        i += 2 if args[i] == "--socket" else 1
    if i < len(args) and args[i] in ("hook-event", "report-session"):
        from signaltty.cli import fastpath

        command, rest = args[i], args[i + 1 :]
        if rest[:1] in (["-h"], ["--help"]):
            return fastpath.main(command, rest[:1])
        return fastpath.main(command, args[:i] + rest)
    from signaltty.cli import main as full

    return full.main(args)


if __name__ == "__main__":
    sys.exit(main())
