"""Fixtures of the desktop tests: one private bus + notification server per test module."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DaemonProc
from tests.desktop.busfix import NotificationServer, PrivateBus, have_dbus

# re-exported so pytest finds the fixture by name in every desktop test module
from tests.desktop.otheruser import other_user as other_user


@pytest.fixture(scope="module")
def bus() -> Iterator[PrivateBus]:
    if not have_dbus():
        if os.environ.get("CI"):
            pytest.fail("dbus-daemon is missing (install Debian package dbus)")
        pytest.skip("dbus-daemon is missing")
    b = PrivateBus()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="module")
def notif_server(bus: PrivateBus) -> Iterator[NotificationServer]:
    server = NotificationServer(bus.address)
    try:
        yield server
    finally:
        server.close()


def require(tool: str) -> None:
    """Skip without ``tool`` (fail instead when CI is set: tests/run.sh installs it)."""
    if shutil.which(tool) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{tool} is missing (tests/run.sh installs it)")
        pytest.skip(f"{tool} is missing")


def desktop_daemon(root: Path, bus: PrivateBus, config: str = "", **env: str) -> DaemonProc:
    """A daemon on the private bus with D-Bus and notifications on (``config`` = toml text)."""
    if config:
        (root / "config" / "signaltty").mkdir(parents=True, exist_ok=True)
        (root / "config" / "signaltty" / "config.toml").write_text(config)
    # a body click starts a terminal (issue 13 item 6): `true` stands in, so a test run on a
    # desktop never opens windows (tests of the click set their own stand-in)
    base = {**bus.env(), "SIGNALTTY_DBUS": "1", "SIGNALTTY_NOTIFY": "1", "TERMINAL": "true"}
    d = DaemonProc(root, {**base, **env})
    d.start()
    return d


@pytest.fixture
def ddaemon(
    tmp_root: Path, bus: PrivateBus, notif_server: NotificationServer
) -> Iterator[DaemonProc]:
    notif_server.reset()
    d = desktop_daemon(tmp_root, bus)
    try:
        yield d
    finally:
        d.stop()
        leftovers = d.kill_leftovers()
        assert not leftovers, f"daemon left children running: {leftovers}"
