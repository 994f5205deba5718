"""Login-shell PATH hydration: ask the user's interactive login shell for its PATH.

A service manager starts the daemon with a minimal PATH, so CLIs installed through nvm,
pipx, cargo or vendor installers would be invisible to panes. Spec: desktop-and-service.md §5
(seed 002 §2): ``$SHELL -ilc`` printing PATH between delimiters, stdin ``/dev/null``, own
session, 5 s timeout (the whole process group is killed), merged into the current PATH.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import signal
from dataclasses import dataclass, field

BEGIN = "__SIGNALTTY_PATH_BEGIN__"
END = "__SIGNALTTY_PATH_END__"
TIMEOUT_S = 5.0
MAX_PATH_BYTES = 256 * 1024
# The kernel refuses any one environment string over 128 KiB (MAX_ARG_STRLEN): a merged PATH
# stays well below, or no program could be started with it.
MAX_MERGED_PATH_BYTES = 64 * 1024
_READ_BYTES = 64 * 1024
_REAP_S = 2.0
_SCRIPT = f"printf '%s' {BEGIN}; printf '%s' \"$PATH\"; printf '%s' {END}"


@dataclass
class Hydration:
    """Result of one hydration: ``state`` is ``done`` or ``failed``; ``path`` the merged PATH."""

    state: str
    path: str
    added: list[str] = field(default_factory=list)
    reason: str | None = None


def login_shell(env: dict[str, str]) -> str:
    """``$SHELL``, else the passwd login shell, else ``/bin/bash``."""
    if env.get("SHELL"):
        return env["SHELL"]
    try:
        shell = pwd.getpwuid(os.getuid()).pw_shell
    except KeyError:
        shell = ""
    return shell or "/bin/bash"


def parse(output: bytes) -> str | None:
    """The text between the first begin delimiter and the next end delimiter, else ``None``."""
    text = output.decode("utf-8", "replace")
    start = text.find(BEGIN)
    if start < 0:
        return None
    start += len(BEGIN)
    end = text.find(END, start)
    return None if end < 0 else text[start:end]


async def read_delimited(stream: asyncio.StreamReader) -> bytes:
    """Read until the end delimiter, keeping only what ``parse`` needs.

    An rc file may print megabytes: before the begin delimiter only the last few bytes are
    kept, and a "PATH" longer than ``MAX_PATH_BYTES`` is given up on. Returns the begin
    delimiter + PATH + end delimiter, or what was kept when the stream ended first.
    """
    begin, end = BEGIN.encode(), END.encode()
    buf = b""
    inside = False
    while True:
        chunk = await stream.read(_READ_BYTES)
        if not chunk:
            return buf
        buf += chunk
        if not inside:
            i = buf.find(begin)
            if i < 0:
                buf = buf[-(len(begin) - 1) :]
                continue
            inside = True
            buf = buf[i:]
        if buf.find(end, len(begin)) >= 0:
            return buf
        if len(buf) > MAX_PATH_BYTES + len(begin) + len(end):
            return b""


async def _reap(proc: asyncio.subprocess.Process) -> None:
    """Wait for a killed probe, but never for long (a process stuck in the kernel must not
    hold the hydration task forever)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), _REAP_S)


def merge(current: str, found: str) -> tuple[str, list[str]]:
    """Keep ``current`` in order; append new absolute, non-empty segments of ``found`` while
    the result stays within ``MAX_MERGED_PATH_BYTES`` (later segments are dropped)."""
    have = [p for p in current.split(":") if p]
    seen = set(have)
    size = len(":".join(have).encode("utf-8", "surrogateescape"))
    added: list[str] = []
    for seg in found.split(":"):
        if not seg or not os.path.isabs(seg) or seg in seen:
            continue
        cost = len(seg.encode("utf-8", "surrogateescape")) + 1
        if size + cost > MAX_MERGED_PATH_BYTES:
            break
        seen.add(seg)
        added.append(seg)
        size += cost
    return ":".join([*have, *added]), added


def _reads_rc_only_when_interactive(shell: str) -> bool:
    """True for bash: a login bash reads ``~/.bash_profile`` (or ``~/.bash_login``,
    ``~/.profile``) and never ``~/.bashrc``, which only an interactive non-login bash reads —
    the shell of every terminal the person opens. zsh (``.zshrc``) and fish read theirs in a
    login shell too."""
    return os.path.basename(shell) == "bash"


async def _probe(shell: str, flags: str, env: dict[str, str], timeout_s: float) -> str:
    """Run ``shell flags _SCRIPT`` and return the PATH it printed.

    Raises:
        _ProbeFailed: the shell could not start, did not answer within ``timeout_s`` (its
            whole process group is killed) or printed no delimited PATH; the message says which.
    """
    try:
        proc = await asyncio.create_subprocess_exec(
            shell,
            flags,
            _SCRIPT,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
            env={**env, "SIGNALTTY_PATH_PROBE": "1"},
        )
    except OSError as exc:
        raise _ProbeFailed(f"cannot start {shell}: {exc.strerror}") from None
    try:
        assert proc.stdout is not None
        out = await asyncio.wait_for(read_delimited(proc.stdout), timeout_s)
    except TimeoutError:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        await _reap(proc)
        raise _ProbeFailed(f"{shell} did not answer within {timeout_s:g} s") from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            await _reap(proc)  # reap it and close the transport while the loop still runs
    found = parse(out)
    if found is None:
        code = proc.returncode
        raise _ProbeFailed(
            f"{shell} printed no PATH" + (f" (exit {code})" if code is not None else "")
        )
    return found


class _ProbeFailed(Exception):
    """One probe gave no PATH; ``str(exc)`` is the reason shown in ``server.status``."""


async def hydrate(env: dict[str, str], *, timeout_s: float = TIMEOUT_S) -> Hydration:
    """Run the probe and merge its PATH into ``env["PATH"]`` (``env`` is not modified).

    For bash a second probe, ``bash -ic`` (interactive, not login: what a terminal runs), runs
    at the same time, so what ``~/.bashrc`` adds is found even when ``~/.bash_profile`` does
    not source it (issue 11 item 11). Both share the one ``timeout_s`` limit; the login
    shell's PATH is merged first, then what only the interactive shell adds. One probe
    failing is enough to go on with the other.

    Never raises: every failure gives ``state="failed"`` with the existing PATH.
    """
    current = env.get("PATH", os.defpath)
    shell = login_shell(env)
    flags = ["-ilc", "-ic"] if _reads_rc_only_when_interactive(shell) else ["-ilc"]
    results = await asyncio.gather(
        *(_probe(shell, f, env, timeout_s) for f in flags), return_exceptions=True
    )
    merged, added = current, list[str]()
    reason: str | None = None
    for result in results:
        if isinstance(result, _ProbeFailed):
            reason = reason or str(result)
            continue
        if isinstance(result, BaseException):
            raise result
        merged, more = merge(merged, result)
        added += more
    if all(isinstance(r, BaseException) for r in results):
        return Hydration("failed", current, reason=reason)
    return Hydration("done", merged, added)
