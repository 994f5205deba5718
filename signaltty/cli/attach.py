"""Interactive ``pane attach``: raw mode, snapshot, live output, Ctrl+] detaches.

One connection streams (``subscribe`` to ``pane.exited``/``pane.closed`` + ``pane.attach``);
a second one carries ``pane.input`` and ``pane.resize`` so a slow write never stalls the
output stream. When the daemon restarts in place (``server.restarting``, issue 15) the
stream reconnects by itself and attaches again: the new snapshot shows everything printed
meanwhile. Spec: protocol.md §10 ``pane attach``.
"""

from __future__ import annotations

import base64
import os
import select
import shutil
import signal
import sys
import termios
import time
import tty
from typing import TYPE_CHECKING, Any

from signaltty.proto.client import Client

if TYPE_CHECKING:
    from signaltty.proto.sshlink import Remote

DETACH_BYTE = b"\x1d"  # Ctrl+]
# a restarting daemon answers again within this (its code check takes most of it)
REATTACH_WITHIN_S = 45.0
_STREAM_EVENTS = ["pane.exited", "pane.closed", "server.restarting"]


def _size() -> tuple[int, int]:
    size = shutil.get_terminal_size((80, 24))
    return size.columns, size.lines


class _Control:
    """The ``pane.input``/``pane.resize`` connection. It sends only while the person types,
    so the daemon may close it as idle (``server.idle_timeout_s``); it is then reopened and
    the call sent once more (an idle close happens only with no request in flight, so the
    first one was never read)."""

    def __init__(self, socket_path: str | Remote) -> None:
        self._path = socket_path
        self._client = Client(socket_path)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._client.call(method, params)
        except ConnectionError:
            self._client.close()
            self._client = Client(self._path)
            return self._client.call(method, params)

    def close(self) -> None:
        self._client.close()


def attach(socket_path: str | Remote, pane_id: str) -> int:
    """Attach the controlling terminal to ``pane_id``; returns the exit code.

    Raises:
        SignalttyError: the pane does not exist (from ``pane.attach``).
    """
    stream = Client(socket_path)
    control = _Control(socket_path)
    stdin_fd = sys.stdin.fileno()
    out = sys.stdout.buffer
    is_tty = os.isatty(stdin_fd)
    try:
        stream.call("subscribe", {"events": _STREAM_EVENTS})
        cols, rows = _size() if is_tty else (None, None)
        r = stream.call("pane.attach", {"pane_id": pane_id, "cols": cols, "rows": rows})
        pane_id = r.get("pane_id") or pane_id  # the full id when a short one was typed
        out.write(base64.b64decode(r["snapshot_b64"]))
        out.flush()
        if not r["live"]:
            out.write(b"\r\n[signaltty: pane is not live; Ctrl+] not needed]\r\n")
            out.flush()
            return 0
        winch = {"pending": False}
        old_handler = signal.signal(signal.SIGWINCH, lambda *_: winch.__setitem__("pending", True))
        saved = termios.tcgetattr(stdin_fd) if is_tty else None
        if is_tty:
            # TCSANOW: keys typed while attaching are kept, not flushed.
            tty.setraw(stdin_fd, termios.TCSANOW)
        try:
            return _loop(stream, control, pane_id, stdin_fd, out, winch, socket_path, is_tty)
        finally:
            if saved is not None:
                termios.tcsetattr(stdin_fd, termios.TCSADRAIN, saved)
            signal.signal(signal.SIGWINCH, old_handler)
    finally:
        stream.close()
        control.close()


def _reattach(
    socket_path: str | Remote, pane_id: str, out: Any, is_tty: bool, patient: bool
) -> Client | None:
    """A new stream to the restarted daemon, its snapshot drawn; None if it does not answer
    within ``REATTACH_WITHIN_S``. Not ``patient`` (no ``server.restarting`` seen — under
    heavy output the notice can be lost with the connection): one try, and a refused
    connect (a daemon that shut down has closed its socket) gives up at once; a daemon
    restarting in place keeps its socket, so the connect waits in its backlog."""
    deadline = time.monotonic() + REATTACH_WITHIN_S
    while time.monotonic() < deadline:
        try:
            stream = Client(socket_path)
        except OSError:
            if not patient:
                return None
            time.sleep(0.2)
            continue
        try:
            stream.call("subscribe", {"events": _STREAM_EVENTS})
            cols, rows = _size() if is_tty else (None, None)
            r = stream.call("pane.attach", {"pane_id": pane_id, "cols": cols, "rows": rows})
        except (OSError, ConnectionError):
            stream.close()
            if not patient:
                return None
            time.sleep(0.2)
            continue
        if not r.get("live"):
            stream.close()
            return None
        out.write(b"\x1b[H\x1b[2J" + base64.b64decode(r["snapshot_b64"]))
        out.flush()
        return stream
    return None


def _loop(
    stream: Client,
    control: _Control,
    pane_id: str,
    stdin_fd: int,
    out: Any,
    winch: dict[str, bool],
    socket_path: str | Remote | None = None,
    is_tty: bool = False,
) -> int:
    stdin_open = True
    restarting = False
    while True:
        if winch["pending"]:
            winch["pending"] = False
            cols, rows = _size()
            control.call("pane.resize", {"pane_id": pane_id, "cols": cols, "rows": rows})
        while stream.events:
            queued = stream.events.popleft()
            restarting = restarting or queued.get("event") == "server.restarting"
            if _handle(queued, pane_id, out):
                return 0
        fds = [stream.fileno()] + ([stdin_fd] if stdin_open else [])
        try:
            # messages already in the client's buffer: do not wait for the socket
            ready, _, _ = select.select(fds, [], [], 0 if stream.buffered() else 0.5)
        except InterruptedError:
            continue
        if stream.fileno() in ready or stream.buffered():
            ev = stream.read_message()
            if ev is None and socket_path is not None:
                again = _reattach(socket_path, pane_id, out, is_tty, patient=restarting)
                restarting = False
                if again is not None:
                    stream.close()
                    stream = again
                    continue
            if ev is None:
                out.write(b"\r\n[signaltty: server closed the connection]\r\n")
                out.flush()
                return 1
            restarting = restarting or ev.get("event") == "server.restarting"
            if ev.get("type") == "event" and _handle(ev, pane_id, out):
                return 0
        if stdin_open and stdin_fd in ready:
            data = os.read(stdin_fd, 4096)
            if not data:
                stdin_open = False
                continue
            cut = data.find(DETACH_BYTE)
            if cut >= 0:
                if cut:
                    _send(control, pane_id, data[:cut])
                out.write(b"\r\n[signaltty: detached]\r\n")
                out.flush()
                return 0
            _send(control, pane_id, data)


def _send(control: _Control, pane_id: str, data: bytes) -> None:
    control.call("pane.input", {"pane_id": pane_id, "data_b64": base64.b64encode(data).decode()})


def _handle(ev: dict[str, Any], pane_id: str, out: Any) -> bool:
    """Write output; return True when the pane ended."""
    payload = ev.get("payload") or {}
    name = ev.get("event")
    if name == "pty.data" and payload.get("pane_id") == pane_id:
        out.write(base64.b64decode(payload["data_b64"]))
        out.flush()
        return False
    if name in ("pane.exited", "pane.closed") and payload.get("pane_id") == pane_id:
        what = f"exited (code {payload.get('code')})" if name == "pane.exited" else "closed"
        out.write(f"\r\n[signaltty: pane {what}]\r\n".encode())
        out.flush()
        return True
    return False
