"""``signaltty completion bash|zsh|fish [--install]``: shell completion scripts.

The scripts come from argcomplete, which completes from the same argparse tree as ``--help``
(``cli/main.py`` calls ``argcomplete.autocomplete`` when a shell asks), so a new action is
completed without touching this file. ``--install`` writes the script where each shell looks
for per-user completions:

- bash: ``$XDG_DATA_HOME/bash-completion/completions/signaltty`` (the bash-completion package,
  ≥ 2, loads it on first use; without that package the command prints the ``source`` line
  for ``~/.bashrc``);
- zsh: ``$XDG_DATA_HOME/zsh/site-functions/_signaltty`` (that directory must be on ``fpath``
  before ``compinit``; the command says so);
- fish: ``$XDG_CONFIG_HOME/fish/completions/signaltty.fish``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

SHELLS = ("bash", "zsh", "fish")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``completion`` to the top-level subparsers ``sub``."""
    # no --json/--socket: the script is text for a shell and needs no daemon
    c = sub.add_parser(
        "completion",
        help="print or install the shell completion script (bash, zsh, fish)",
        description="Print the completion script for SHELL, or install it with --install.",
    )
    c.add_argument(
        "shell",
        choices=SHELLS,
        metavar="SHELL",
        help="the shell to complete for: bash, zsh or fish",
    )
    c.add_argument("--install", action="store_true", help="write it where the shell finds it")


def script(shell: str) -> str:
    """The completion script for ``shell`` (one of ``SHELLS``) as text."""
    from argcomplete.shell_integration import shellcode

    return shellcode(["signaltty"], shell=shell)


def install_path(shell: str, env: dict[str, str] | None = None) -> Path:
    """Where ``--install`` writes the script for ``shell`` (XDG base directories)."""
    env = dict(os.environ if env is None else env)
    home = Path(env.get("HOME") or Path.home())
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    if shell == "bash":
        return data / "bash-completion" / "completions" / "signaltty"
    if shell == "zsh":
        return data / "zsh" / "site-functions" / "_signaltty"
    return config / "fish" / "completions" / "signaltty.fish"


def run(args: argparse.Namespace) -> int:
    """Run ``completion``; returns the exit code (1 when the file cannot be written)."""
    text = script(args.shell)
    if not args.install:
        sys.stdout.write(text)
        return 0
    target = install_path(args.shell)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, target)
    except OSError as exc:
        print(f"signaltty: cannot write {target}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"wrote {target}")
    if args.shell == "bash":
        # bash itself never reads that directory; the bash-completion package does
        print(
            "bash loads it only when the bash-completion package is installed (apt/dnf/brew "
            "install bash-completion); without it add to ~/.bashrc:\n"
            f"  source {shlex.quote(str(target))}",
            file=sys.stderr,
        )
    if args.shell == "zsh":
        print(
            f"add to ~/.zshrc before compinit: fpath=({target.parent} $fpath)",
            file=sys.stderr,
        )
    return 0
