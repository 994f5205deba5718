"""systemd notify protocol over a real datagram socket (Spec: desktop-and-service.md §3.2)."""

from __future__ import annotations

import os
import socket
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from signaltty.system import sdnotify


@pytest.fixture
def receiver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A bound AF_UNIX datagram socket that $NOTIFY_SOCKET points at."""
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(os.fspath(path))
    sock.settimeout(5)
    monkeypatch.setenv("NOTIFY_SOCKET", os.fspath(path))
    yield sock
    sock.close()


def _no_datagram(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        sock.recv(4096)
    except BlockingIOError:
        return True
    return False


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda: sdnotify.ready(), b"READY=1"),
        (lambda: sdnotify.ready("listening on /s.sock"), b"READY=1\nSTATUS=listening on /s.sock"),
        (lambda: sdnotify.status("PATH hydration done"), b"STATUS=PATH hydration done"),
        (lambda: sdnotify.status("two\nlines"), b"STATUS=two lines"),
        (lambda: sdnotify.stopping(), b"STOPPING=1"),
        (lambda: sdnotify.stopping("shutting down"), b"STOPPING=1\nSTATUS=shutting down"),
        (lambda: sdnotify.watchdog(), b"WATCHDOG=1"),
        (lambda: sdnotify.notify("A=1", "B=2"), b"A=1\nB=2"),
    ],
)
def test_datagrams(receiver: socket.socket, call: Callable[[], bool], expected: bytes) -> None:
    assert call() is True
    assert receiver.recv(4096) == expected
    assert _no_datagram(receiver)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract namespace is Linux-only")
def test_abstract_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"signaltty-test-{os.getpid()}-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert sdnotify.ready("up") is True
        assert sock.recv(4096) == b"READY=1\nSTATUS=up"


@pytest.mark.parametrize("value", [None, ""])
def test_unset_or_empty_is_a_no_op(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    else:
        monkeypatch.setenv("NOTIFY_SOCKET", value)
    assert sdnotify.ready() is False
    assert sdnotify.watchdog() is False
    assert sdnotify.stopping() is False
    assert sdnotify.status("x") is False


def test_errors_never_raise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", os.fspath(tmp_path / "missing.sock"))
    assert sdnotify.ready() is False
    monkeypatch.setenv("NOTIFY_SOCKET", "relative.sock")
    assert sdnotify.ready() is False
    monkeypatch.setenv("NOTIFY_SOCKET", "/" + "x" * 300)
    assert sdnotify.ready() is False


def test_unencodable_text_never_raises(receiver: socket.socket) -> None:
    assert sdnotify.status("bad \udcff surrogate") is False
    assert _no_datagram(receiver)


def test_nothing_to_send(receiver: socket.socket) -> None:
    assert sdnotify.notify() is False
    assert _no_datagram(receiver)


@pytest.mark.parametrize(
    ("usec", "pid", "expected"),
    [
        ("30000000", None, 15.0),
        ("30000000", "", 15.0),
        ("30000000", "self", 15.0),
        ("30000000", "other", None),
        ("30000000", "not-a-pid", None),
        ("1000", None, 0.0005),
        (None, None, None),
        ("", None, None),
        ("0", None, None),
        ("-5", None, None),
        ("abc", None, None),
    ],
)
def test_watchdog_interval(
    monkeypatch: pytest.MonkeyPatch, usec: str | None, pid: str | None, expected: float | None
) -> None:
    if usec is None:
        monkeypatch.delenv("WATCHDOG_USEC", raising=False)
    else:
        monkeypatch.setenv("WATCHDOG_USEC", usec)
    if pid is None:
        monkeypatch.delenv("WATCHDOG_PID", raising=False)
    else:
        value = {"self": str(os.getpid()), "other": str(os.getpid() + 1)}.get(pid, pid)
        monkeypatch.setenv("WATCHDOG_PID", value)
    assert sdnotify.watchdog_interval_s() == expected
