"""Console entry point: a stdlib-only dispatcher.

The hook fast path (``hook-event``/``report-session``) must not pay for pydantic, structlog
or uvloop, so this module imports nothing heavy: the two reporter commands go to
``signaltty.cli.fastpath`` and every other command to ``signaltty.cli.main``. Spec: README
"Dependency rules"; issue 12 (a hook costs ≤ 2× a bare interpreter start).
"""

from __future__ import annotations

import sys

FAST_COMMANDS = ("hook-event", "report-session")


def _command_index(args: list[str]) -> int:
    """Index of the command in ``args``, after the global options the light commands take."""
    # global options may come first (`signaltty --json hook-event …`); `--host` is skipped
    # too, so that the light commands refuse it themselves (a reporter never exits 2)
    i = 0
    while i < len(args) and (args[i] == "--json" or args[i].startswith(("--socket", "--host"))):
        i += 2 if args[i] in ("--socket", "--host") else 1
    return i


def _fast_command(args: list[str]) -> int | None:
    """Index of a reporter command in ``args`` after the global options, else None."""
    i = _command_index(args)
    return i if i < len(args) and args[i] in FAST_COMMANDS else None


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (protocol.md §10)."""
    args = sys.argv[1:] if argv is None else argv
    if "SIGNALTTY_HANDOVER" in __import__("os").environ:
        # the image a restart exec'd: dumpable again after execve, it must not be ptraced
        # by pane processes while it imports (attack pass 8, A2); the window left is the
        # interpreter's own start
        from signaltty.system.hardening import set_not_dumpable

        set_not_dumpable()
    j = _command_index(args)
    if j < len(args) and args[j] == "bridge":
        # started for every ssh connection (docs/remote.md): as light as the reporters
        from signaltty.cli import bridge

        return bridge.main(args[:j] + args[j + 1 :])
    i = _fast_command(args)
    if i is not None:
        from signaltty.cli import fastpath

        command, rest = args[i], args[i + 1 :]
        if rest[:1] in (["-h"], ["--help"]):
            return fastpath.main(command, rest[:1])
        return fastpath.main(command, args[:i] + rest)
    from signaltty.cli import main as full

    return full.main(args)


def script() -> int:
    """The ``signaltty`` console script and ``python -m signaltty``: :func:`main` on
    ``sys.argv``; returns its exit code, except after a reporter command, which ends the
    process itself.

    A reporter has nothing to tear down (its socket is closed, no thread, no ``atexit``
    handler), yet the interpreter's shutdown takes ~2 ms, a third of a bare start, on every
    agent hook: it flushes stdout and stderr and leaves with ``os._exit``. A failed flush
    (the agent closed the pipe) exits 1, never 2 (integrations.md §2).
    """
    code = main()
    if _fast_command(sys.argv[1:]) is None:
        return code
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: Python was started with that fd closed
                stream.flush()
        except (OSError, ValueError):
            code = 1
    os._exit(code)


if __name__ == "__main__":
    sys.exit(script())
