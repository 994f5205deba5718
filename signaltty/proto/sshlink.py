"""A connection to another host's daemon through the user's own ``ssh`` (stdlib only).

``ssh [opts] HOST signaltty bridge`` runs the remote side (:mod:`signaltty.cli.bridge`);
its stdin and stdout are one end of a socket pair whose other end the clients use as they
use the daemon's socket, so every command works unchanged over it. signaltty opens no port
and handles no key: authentication, host keys, ``~/.ssh/config`` (aliases, ProxyJump,
ControlMaster) are ssh's. Issue 16 item 2; docs/remote.md.

The ssh command line: ``$SIGNALTTY_SSH_COMMAND`` split like a shell would (``shlex``; the
way ``GIT_SSH_COMMAND`` works for git), else ``ssh``; then ``-T`` (no terminal: the stream
is bytes), ``-p PORT`` for an ``ssh://`` URL with a port, the host, and the remote command:
``$SIGNALTTY_REMOTE_COMMAND`` (a command line for the remote shell, for a signaltty that is
not on the remote ``PATH``), else ``signaltty``, followed by ``bridge``. It is run as an
argument list, never through a local shell.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import threading

SSH_COMMAND_ENV = "SIGNALTTY_SSH_COMMAND"
REMOTE_COMMAND_ENV = "SIGNALTTY_REMOTE_COMMAND"
STDERR_KEPT = 8192  # bytes of ssh's stderr kept for the error message (the last ones)
EXIT_WAIT_S = 3.0  # how long a closed link may take to tell why (ssh's exit status)
SUMMARY_CHARS = 400


class LinkError(ConnectionError):
    """The ssh link to a host failed or ended abnormally.

    ``str()`` is one line: the host, the last lines ssh (or the remote bridge) wrote on
    stderr, and ssh's exit status or signal.
    """


class BadHost(ValueError):
    """A host string signaltty refuses to hand to ssh (one sentence)."""


class Remote:
    """Where to connect: a host as ssh takes it (``devbox``, ``user@host``,
    ``ssh://user@host:2222``), plus an optional socket path on that host.

    Args:
        host: the host string.
        socket_path: passed to the remote ``signaltty bridge --socket``.
        environ: where ``SIGNALTTY_SSH_COMMAND`` / ``SIGNALTTY_REMOTE_COMMAND`` are read,
            and ssh's environment (default: this process's).
        options: more ssh options, put after ``-T`` (the daemon's watched-host links add
            ``-o BatchMode=yes`` and keep-alives: nobody is there to answer a prompt).
        bridge_args: more arguments for the remote ``signaltty bridge`` (plain words: they
            reach the remote shell as they are; a watching daemon passes ``--no-start``).

    Raises:
        BadHost: an empty host, one starting with ``-`` (ssh would read an option), one with
            whitespace or control characters, or a malformed ``ssh://`` URL.
        ValueError: ``SIGNALTTY_SSH_COMMAND`` cannot be split (unbalanced quotes) or is empty.
    """

    def __init__(
        self,
        host: str,
        socket_path: str | None = None,
        environ: dict[str, str] | None = None,
        options: tuple[str, ...] = (),
        bridge_args: tuple[str, ...] = (),
    ) -> None:
        env = dict(os.environ if environ is None else environ)
        self.environ = environ
        self.host = host
        self.target, self.port = parse_host(host)
        ssh = shlex.split(env.get(SSH_COMMAND_ENV) or "ssh")
        if not ssh:
            raise ValueError(f"${SSH_COMMAND_ENV} names no command")
        remote = env.get(REMOTE_COMMAND_ENV) or "signaltty"
        remote_argv = [remote, "bridge", *bridge_args]
        if socket_path:
            remote_argv += ["--socket", shlex.quote(socket_path)]
        self.argv = [
            *ssh,
            "-T",
            *options,
            *(["-p", str(self.port)] if self.port is not None else []),
            self.target,
            *remote_argv,
        ]

    def __str__(self) -> str:
        return self.host

    def open(self) -> Link:
        """Start ssh and return the link (nothing has been exchanged yet: a host that cannot
        be reached shows as :class:`LinkError` on the first read).

        Raises:
            LinkError: the ssh program could not be started.
        """
        return Link(self)


def parse_host(host: str) -> tuple[str, int | None]:
    """``(target for ssh, port or None)`` from a host string.

    ``ssh://[user@]host[:port][/]`` becomes ``[user@]host`` and the port (IPv6 in
    brackets), and so does ``[user@]host:port`` (one colon, digits after it: the issue's
    ``user@host:port``; ssh itself would look up ``host:port`` as a name); anything else is
    passed as is (an alias, ``user@host``, a bare IPv6 address: ssh reads it and
    ``~/.ssh/config``).

    Raises:
        BadHost: see :class:`Remote`.
    """
    if not host:
        raise BadHost("the host is empty")
    if host.startswith("-"):
        raise BadHost(f"refusing host {host!r}: it starts with '-' (ssh would read an option)")
    if any(c.isspace() or not c.isprintable() for c in host):
        raise BadHost(f"refusing host {host!r}: it contains whitespace or control characters")
    if not host.startswith("ssh://"):
        if host.count(":") != 1 or not host.rpartition(":")[2].isdigit():
            return host, None
        rest = host
    else:
        rest = host[len("ssh://") :].rstrip("/")
    if "/" in rest or "?" in rest or "#" in rest:
        raise BadHost(f"refusing host {host!r}: an ssh:// URL names a host, not a path")
    user, at, hostport = rest.rpartition("@")
    port: int | None = None
    if hostport.startswith("["):  # [v6]:port
        name, _, after = hostport[1:].partition("]")
        port_text = after[1:] if after.startswith(":") else None
        if after and port_text is None:
            raise BadHost(f"refusing host {host!r}: malformed address")
    else:
        name, colon, port_text_raw = hostport.partition(":")
        port_text = port_text_raw if colon else None
    if port_text is not None:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise BadHost(f"refusing host {host!r}: bad port {port_text!r}")
        port = int(port_text)
    if not name or name.startswith("-") or (at and (not user or user.startswith("-"))):
        raise BadHost(f"refusing host {host!r}: no host name, or a part starting with '-'")
    return f"{user}{at}{name}", port


class Link:
    """A running ``ssh … signaltty bridge`` and our end of its stdin/stdout (``sock``)."""

    def __init__(self, remote: Remote) -> None:
        self.remote = remote
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.proc = subprocess.Popen(
                remote.argv,
                stdin=theirs.fileno(),
                stdout=theirs.fileno(),
                stderr=subprocess.PIPE,
                close_fds=True,
                env=remote.environ,
            )
        except OSError as exc:
            self.sock.close()
            raise LinkError(
                f"{remote.host}: cannot run {remote.argv[0]!r}: {exc.strerror}"
            ) from exc
        finally:
            theirs.close()
        self._stderr = bytearray()
        self._reader = threading.Thread(target=self._drain, name="ssh-stderr", daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        # read all of ssh's stderr (a full pipe would stall ssh), keep the end
        stream = self.proc.stderr
        assert stream is not None
        try:
            while chunk := os.read(stream.fileno(), 4096):
                self._stderr += chunk
                if len(self._stderr) > STDERR_KEPT:
                    del self._stderr[: len(self._stderr) - STDERR_KEPT]
        except (OSError, ValueError):  # closed by close() while a forked ssh still holds it
            pass

    def ended_badly(self, wait: float = EXIT_WAIT_S) -> LinkError | None:
        """After our end saw EOF or a write error: the error to raise, or None when ssh
        exited 0 (the remote daemon closed the connection, as it does locally)."""
        try:
            code = self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            return LinkError(f"{self.remote.host}: the ssh link closed ({self.summary()})")
        self._reader.join(1.0)
        if code == 0:
            return None
        why = f"ssh was killed by signal {-code}" if code < 0 else f"ssh exit status {code}"
        said = self.summary()
        return LinkError(f"{self.remote.host}: {said + ' (' + why + ')' if said else why}")

    def forget_stderr(self) -> None:
        """Drop what ssh and the remote wrote so far (a login banner, the remote daemon's
        start-up line): a later failure is explained by what came after."""
        self._stderr.clear()

    def summary(self) -> str:
        """The last lines ssh wrote on stderr, printable and short ("" when none)."""
        text = bytes(self._stderr).decode("utf-8", "replace")
        lines = ["".join(c for c in ln if c.isprintable()).strip() for ln in text.splitlines()]
        kept = [ln for ln in lines if ln][-3:]
        out = " / ".join(kept)
        return out if len(out) <= SUMMARY_CHARS else "…" + out[-SUMMARY_CHARS:]

    def close(self) -> None:
        """Close our end (ssh then ends the remote bridge) and reap ssh; idempotent."""
        self.sock.close()
        if self.proc.poll() is None:
            try:
                self.proc.wait(EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr is not None:
            self._reader.join(1.0)
            self.proc.stderr.close()
