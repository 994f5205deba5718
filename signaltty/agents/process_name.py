"""Program name of a command line: runtimes are named after what they run (pure).

Spec: agents.md §3.2.

``node /usr/lib/node_modules/.bin/gemini --yolo`` is ``gemini``; ``python3 -m aider`` is
``aider``; ``node -e '…'`` stays ``node``; ``-bash`` (login shell) is ``bash``. Shells are
not unwrapped here (the process refresh walks past them, agents.md §3.3).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Final

from signaltty.core.sanitize import sanitize_text

_PYTHON: Final = re.compile(r"python(3(\.\d+)?)?")
_RUNTIMES: Final = frozenset({"node", "nodejs", "bun", "deno"})
# Runtimes whose first argument may be the subcommand ``run``.
_RUN_SUBCOMMAND: Final = frozenset({"bun", "deno"})
# Options that take the next argument as their value.
_VALUE_OPTIONS: Final = frozenset({"-r", "--require", "--import", "--loader", "-W", "-X"})
# Options that run inline code: the program is the runtime itself.
_EVAL_OPTIONS: Final = frozenset({"-c", "-e", "-p", "--eval", "--print"})
_SCRIPT_SUFFIXES: Final = (".js", ".mjs", ".cjs", ".ts", ".py", ".sh", ".bash")
# Shells: a shell running a script file is named after the script (not in agents.md §3.2,
# which leaves shells to the refresh walk; docs/decisions.md).
SHELLS: Final = frozenset({"sh", "bash", "zsh", "fish", "dash"})
# Nix's makeWrapper renames the real program: ``bin/claude`` execs ``bin/.claude-wrapped``
# (``.claude-unwrapped`` for some packages); the person started ``claude`` (issue 11 item 11).
_NIX_WRAPPED: Final = re.compile(r"\.(.+)-(?:un)?wrapped")
MAX_PROGRAM_NAME: Final = 128


def is_runtime(name: str) -> bool:
    """True for ``node``, ``nodejs``, ``bun``, ``deno``, ``python``, ``python3``, ``python3.N``.

    Spec: agents.md §3.2.
    """
    return name in _RUNTIMES or _PYTHON.fullmatch(name) is not None


def _strip_suffix(name: str) -> str:
    for suffix in _SCRIPT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _script_name(runtime: str, args: Sequence[str]) -> str:
    if runtime in _RUN_SUBCOMMAND and args and args[0] == "run":
        args = args[1:]
    python = _PYTHON.fullmatch(runtime) is not None
    skip_value = False
    for i, arg in enumerate(args):
        if skip_value:
            skip_value = False
            continue
        if arg == "--":
            rest = args[i + 1 :]
            return _strip_suffix(os.path.basename(rest[0])) if rest else runtime
        if arg in _EVAL_OPTIONS:
            return runtime
        if arg == "-m":
            return args[i + 1] if i + 1 < len(args) and args[i + 1] else runtime
        if arg in _VALUE_OPTIONS:
            skip_value = True
            continue
        if arg == "-" or not arg:
            return runtime
        if arg.startswith("-"):
            if python and arg[1:2] == "m" and not arg.startswith("--"):
                return arg[2:]  # -mMODULE
            if python and arg[1:2] == "c" and not arg.startswith("--"):
                return runtime  # -cCODE
            continue
        return _unwrapped(_strip_suffix(os.path.basename(arg))) or runtime
    return runtime


def _unwrapped(name: str) -> str:
    nix = _NIX_WRAPPED.fullmatch(name)
    return nix.group(1) if nix is not None else name


def program_name(argv: Sequence[str]) -> str:
    """Return the program name of a command line.

    Args:
        argv: the command line (``/proc/<pid>/cmdline`` split, or a spawn argv).

    Returns:
        The basename of ``argv[0]`` without a login shell's leading ``-`` (and Nix's
        ``.NAME-wrapped``/``.NAME-unwrapped`` read as ``NAME``); for a runtime,
        the name of the script or module it runs; ``""`` for an empty argv.

    Spec: agents.md §3.2.
    """
    if not argv:
        return ""
    name = os.path.basename(argv[0])
    name = name.removeprefix("-")
    nix = _NIX_WRAPPED.fullmatch(name)
    if nix is not None:
        name = nix.group(1)
    if is_runtime(name):
        name = _script_name(name, list(argv[1:]))
    elif name in SHELLS:
        name = _shell_script(name, argv[1:])
    else:
        # a script started directly is named like the same script started by its runtime
        name = _strip_suffix(name)
    return _shown(name)


def _shell_script(shell: str, args: Sequence[str]) -> str:
    """``bash ./tern`` (a shebang script, as /proc shows it) is ``tern``; an interactive
    shell, ``bash -c …`` and ``bash -s`` stay the shell (the refresh walks past those)."""
    for arg in args:
        if arg in ("-c", "-s", "-i", "--", "-"):
            return shell
        if arg.startswith("-") or arg.startswith("+"):
            continue
        return _strip_suffix(os.path.basename(arg)) or shell
    return shell


def _shown(name: str) -> str:
    """A program can set any ``argv[0]`` (``exec -a``): the name goes into events, the
    snapshot and terminals, so escapes, controls, bidi overrides, invalid UTF-8 and length are
    dealt with here (detection compares against this form too)."""
    if name.isascii() and name.isprintable() and len(name) <= MAX_PROGRAM_NAME:
        return name
    name = name.encode("utf-8", "replace").decode("utf-8")
    return sanitize_text(name, MAX_PROGRAM_NAME)
