"""Codex ``--no-daemon`` at spawn: argv classification (pure) and a bounded support probe.

A detached shared Codex daemon can keep an earlier terminal's ``SIGNALTTY_PANE``, so for
direct, local, interactive launches signaltty inserts ``--no-daemon`` after ``argv[0]``
(spawn, split and resume). The stored argv is never changed; utility subcommands are left
alone; remote and unrecognized invocations keep their argv with a notice.

``classify_argv``/``with_no_daemon``/``plan`` are pure. ``probe_no_daemon`` runs
``<codex> --no-daemon --version`` (its own process group, stdio to ``/dev/null``, 500 ms)
and caches the answer per (real path, size, mtime); call it from a worker thread.

Spec: integrations.md §3.1; seed 000 (ADR-0014 paragraph).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

NO_DAEMON: Final = "--no-daemon"
PROBE_TIMEOUT_S: Final = 0.5
NOTICE_REMOTE: Final = "Codex uses a remote app-server; terminal hook attribution is unavailable."
NOTICE_UNKNOWN: Final = "Codex: unrecognized launch options; --no-daemon was not added."
NOTICE_UNSUPPORTED: Final = (
    "Codex: this version has no --no-daemon; hooks may be attributed to another terminal."
)

_INTERACTIVE: Final = frozenset({"resume", "fork"})
_UTILITY: Final = frozenset(
    {
        "exec", "e", "review", "app-server", "mcp", "mcp-server", "login", "logout",
        "completion", "apply", "a", "sandbox", "debug", "cloud", "features", "help",
        "--help", "-h", "--version", "-V",
    }
)  # fmt: skip
# Top-level options of the interactive CLI (`codex --help`) that take a value.
_VALUE_OPTIONS: Final = frozenset(
    {
        "-c", "--config", "--enable", "--disable", "-i", "--image", "-m", "--model",
        "--local-provider", "-p", "--profile", "-s", "--sandbox", "-a", "--ask-for-approval",
        "-C", "--cd", "--add-dir",
    }
)  # fmt: skip
# Top-level flags without a value.
_FLAGS: Final = frozenset(
    {
        "--oss", "--full-auto", "--dangerously-bypass-approvals-and-sandbox", "--yolo",
        "--search", "--no-alt-screen", "--dangerously-bypass-hook-trust",
    }
)  # fmt: skip

Kind = Literal["interactive", "utility", "remote", "unknown", "already"]


@dataclass(frozen=True, slots=True)
class Invocation:
    """What a Codex argv is, for the ``--no-daemon`` decision.

    Attributes:
        kind: ``interactive`` (insert if supported), ``utility`` (unchanged), ``remote``
            (unchanged + notice), ``unknown`` (unrecognized option; unchanged + notice),
            ``already`` (contains ``--no-daemon``).
        notice: the integration notice text, or ``None``.
    """

    kind: Kind
    notice: str | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """The argv to execute and the notice to report (``None`` = no notice)."""

    argv: list[str]
    notice: str | None = None


def _options_end(args: Sequence[str]) -> int:
    return args.index("--") if "--" in args else len(args)


def _is_known_option(arg: str) -> tuple[bool, bool]:
    """Return (known, consumes_next) for one option token."""
    if arg in _FLAGS:
        return True, False
    if arg in _VALUE_OPTIONS:
        return True, True
    if arg.startswith("--") and "=" in arg:
        return arg.split("=", 1)[0] in _VALUE_OPTIONS, False
    if len(arg) > 2 and not arg.startswith("--") and arg[:2] in _VALUE_OPTIONS:
        return True, False  # -mMODEL
    return False, False


def classify_argv(argv: Sequence[str]) -> Invocation:
    """Classify a Codex launch (``argv[0]`` is the codex executable).

    Args:
        argv: the full launch argv.

    Returns:
        An ``Invocation``; only ``interactive`` launches get ``--no-daemon``.

    Spec: integrations.md §3.1 table.
    """
    args = list(argv[1:])
    head = args[: _options_end(args)]
    if NO_DAEMON in head:
        return Invocation("already")
    if any(a == "--remote" or a.startswith("--remote=") for a in head):
        return Invocation("remote", NOTICE_REMOTE)
    skip = False
    for arg in head:
        if skip:
            skip = False
            continue
        if arg in _UTILITY:
            return Invocation("utility")
        if arg.startswith("-"):
            known, skip = _is_known_option(arg)
            if not known:
                return Invocation("unknown", NOTICE_UNKNOWN)
            continue
        return Invocation("interactive")  # resume, fork or a prompt
    return Invocation("interactive")


def with_no_daemon(argv: Sequence[str]) -> list[str]:
    """Return a new argv with ``--no-daemon`` right after ``argv[0]``."""
    return [argv[0], NO_DAEMON, *argv[1:]]


def plan(argv: Sequence[str], supported: Callable[[], bool]) -> Plan:
    """Decide the argv to execute for a Codex launch.

    Args:
        argv: the stored launch argv (never modified).
        supported: called only for interactive launches; True when the installed Codex
            accepts ``--no-daemon`` (normally ``lambda: probe_no_daemon(path)``).

    Returns:
        ``Plan(argv, notice)``: ``--no-daemon`` inserted for a supported interactive launch;
        otherwise a copy of ``argv`` with the notice of the table row, if any.

    Spec: integrations.md §3.1.
    """
    inv = classify_argv(argv)
    if inv.kind != "interactive":
        return Plan(list(argv), inv.notice)
    if not supported():
        return Plan(list(argv), NOTICE_UNSUPPORTED)
    return Plan(with_no_daemon(argv))


# ---------------------------------------------------------------- probe (I/O)

_cache: dict[tuple[str, int, int], bool] = {}
_cache_lock = threading.Lock()


def _run_probe(executable: str, timeout_s: float) -> bool | None:
    """Exit 0 → True, other exit → False, timeout or exec failure → None."""
    try:
        proc = subprocess.Popen(
            [executable, NO_DAEMON, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return None
    try:
        return proc.wait(timeout=timeout_s) == 0
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def probe_no_daemon(executable: str, *, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """True when ``<executable> --no-daemon --version`` exits 0 within the timeout.

    Blocking (up to ``timeout_s``); run it in a worker thread. Definite answers are cached
    per (real path, size, mtime in ns), so an upgraded Codex is probed again. Timeouts and
    exec failures answer False and are not cached (a cold first start may be slow).

    Args:
        executable: path of the codex executable (resolved on the hydrated PATH).
        timeout_s: bound on the probe (s); the whole process group is killed after it.

    Spec: integrations.md §3.1 "Support probe".
    """
    try:
        real = os.path.realpath(executable)
        st = os.stat(real)
    except OSError:
        return False
    key = (real, st.st_size, st.st_mtime_ns)
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    result = _run_probe(executable, timeout_s)
    if result is None:
        return False
    with _cache_lock:
        _cache[key] = result
    return result


def clear_probe_cache() -> None:
    """Forget every cached probe answer (tests; ``agents.catalog {refresh: true}``)."""
    with _cache_lock:
        _cache.clear()
