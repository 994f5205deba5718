"""The core end-to-end tests again, with the daemon on the stdlib asyncio loop instead of uvloop
(``SIGNALTTY_LOOP=asyncio``): the daemon must behave the same on both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import DaemonProc
from tests.server.test_panes_e2e import (  # noqa: F401 - collected here with this module's fixture
    test_attach_snapshot_and_stream,
    test_child_dies_during_input,
    test_ctrl_c_reaches_python_child,
    test_exit_zero_done_unread_and_nonzero_failed,
    test_osc_777_notification_reaches_attention_and_subscribe,
    test_wait_for_output_tail_and_new_only_and_exit,
)


@pytest.fixture
def daemon(tmp_root: Path) -> Iterator[DaemonProc]:
    d = DaemonProc(tmp_root, {"SIGNALTTY_LOOP": "asyncio"})
    d.start()
    try:
        assert "loop='asyncio.unix_events'" in d.stderr()
        yield d
    finally:
        d.stop()
        assert not d.kill_leftovers()
