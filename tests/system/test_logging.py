"""structlog setup: JSON log file, rotation, console (Spec: desktop-and-service.md §10.2)."""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from signaltty.system import logging as slog


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    yield
    slog.reset_logging()
    root.setLevel(level)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _owned_handlers() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if getattr(h, "_signaltty_owned", False)]


def test_json_lines_with_timestamp_level_logger(tmp_path: Path) -> None:
    log_path = slog.configure_logging(tmp_path / "state", "info", console=False)
    assert log_path == tmp_path / "state" / "signaltty.log"
    log = slog.get_logger("signaltty.test").bind(pane_id="pane_1")
    log.info("pane.spawned", agent="claude", cols=80)
    log.debug("pane.hidden")

    (record,) = _records(log_path)
    assert record["event"] == "pane.spawned"
    assert record["level"] == "info"
    assert record["logger"] == "signaltty.test"
    assert record["pane_id"] == "pane_1"
    assert record["agent"] == "claude"
    assert record["cols"] == 80
    stamp = datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
    assert stamp.utcoffset() == timedelta(0)


def test_log_file_mode_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        log_path = slog.configure_logging(tmp_path, "info", console=False)
    finally:
        os.umask(old)
    assert _mode(log_path) == 0o600
    assert _mode(tmp_path) == 0o700


def test_existing_loose_log_file_tightened(tmp_path: Path) -> None:
    log_path = tmp_path / "signaltty.log"
    log_path.write_text('{"event": "old"}\n')
    os.chmod(log_path, 0o644)
    slog.configure_logging(tmp_path, "info", console=False)
    assert _mode(log_path) == 0o600
    slog.get_logger("t").info("x.y")
    assert [r["event"] for r in _records(log_path)] == ["old", "x.y"]


def test_state_dir_tightening_is_logged(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o755)
    log_path = slog.configure_logging(state, "info", console=False)
    (record,) = _records(log_path)
    assert record["event"] == "paths.state_dir_tightened"
    assert record["level"] == "warning"
    assert "0755" in record["detail"]


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        ("debug", ["d.e", "i.e", "w.e", "e.e"]),
        ("info", ["i.e", "w.e", "e.e"]),
        ("warning", ["w.e", "e.e"]),
        ("error", ["e.e"]),
        ("INFO", ["i.e", "w.e", "e.e"]),
    ],
)
def test_levels(tmp_path: Path, level: str, expected: list[str]) -> None:
    log_path = slog.configure_logging(tmp_path, level, console=False)
    log = slog.get_logger("t")
    log.debug("d.e")
    log.info("i.e")
    log.warning("w.e")
    log.error("e.e")
    assert [r["event"] for r in _records(log_path)] == expected


@pytest.mark.parametrize("level", ["warn", "critical", "trace", "", "0"])
def test_invalid_level_raises_and_changes_nothing(tmp_path: Path, level: str) -> None:
    with pytest.raises(ValueError, match="debug, info, warning, error"):
        slog.configure_logging(tmp_path / "state", level, console=False)
    assert not (tmp_path / "state").exists()
    assert _owned_handlers() == []


def test_exception_is_formatted(tmp_path: Path) -> None:
    log_path = slog.configure_logging(tmp_path, "info", console=False)
    try:
        1 / 0  # noqa: B018
    except ZeroDivisionError:
        slog.get_logger("t").exception("pump.failed", pane_id="pane_1")
    (record,) = _records(log_path)
    assert record["event"] == "pump.failed"
    assert record["level"] == "error"
    assert "Traceback" in record["exception"]
    assert "ZeroDivisionError" in record["exception"]


def test_foreign_stdlib_records_are_json_too(tmp_path: Path) -> None:
    log_path = slog.configure_logging(tmp_path, "info", console=False)
    logging.getLogger("asyncio").warning("slow callback %s", "x")
    (record,) = _records(log_path)
    assert record["event"] == "slow callback x"
    assert record["logger"] == "asyncio"
    assert record["level"] == "warning"
    assert "timestamp" in record


def test_rotation_keeps_one_backup(tmp_path: Path) -> None:
    max_bytes = 4096
    log_path = slog.configure_logging(tmp_path, "info", console=False, max_bytes=max_bytes)
    log = slog.get_logger("t")
    for i in range(400):
        log.info("rotation.fill", i=i, pad="x" * 40)
    backup = tmp_path / "signaltty.log.1"
    assert backup.exists()
    assert not (tmp_path / "signaltty.log.2").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["signaltty.log", "signaltty.log.1"]
    for path in (log_path, backup):
        assert path.stat().st_size <= max_bytes
        assert _mode(path) == 0o600
        _records(path)  # whole JSON lines only
    last = _records(log_path)[-1]
    assert last["i"] == 399


def test_default_rotation_is_8_mib(tmp_path: Path) -> None:
    assert slog.LOG_MAX_BYTES == 8 * 1024 * 1024
    slog.configure_logging(tmp_path, "info", console=False)
    (handler,) = _owned_handlers()
    assert isinstance(handler, logging.handlers.RotatingFileHandler)
    assert handler.maxBytes == 8 * 1024 * 1024
    assert handler.backupCount == 1


def test_reconfigure_replaces_own_handlers_only(tmp_path: Path) -> None:
    foreign = logging.NullHandler()
    logging.getLogger().addHandler(foreign)
    try:
        slog.configure_logging(tmp_path / "a", "info", console=True)
        slog.configure_logging(tmp_path / "b", "info", console=True)
        assert len(_owned_handlers()) == 2
        assert foreign in logging.getLogger().handlers
        slog.get_logger("t").info("after.reconfigure")
        assert not (tmp_path / "a" / "signaltty.log").read_text()
        assert _records(tmp_path / "b" / "signaltty.log")[0]["event"] == "after.reconfigure"
        slog.reset_logging()
        slog.reset_logging()
        assert _owned_handlers() == []
    finally:
        logging.getLogger().removeHandler(foreign)


def test_console_non_tty_is_one_key_value_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    slog.configure_logging(tmp_path, "info", console=True)
    try:
        raise RuntimeError("boom\nsecond line")
    except RuntimeError:
        slog.get_logger("signaltty.test").exception("daemon.failed", pane_id="pane_1")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith("timestamp=")
    assert "level='error' logger='signaltty.test' event='daemon.failed'" in line
    assert "pane_id='pane_1'" in line
    assert "RuntimeError" in line


def test_console_tty_uses_console_renderer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class _Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = _Tty()
    monkeypatch.setattr(sys, "stderr", stream)
    slog.configure_logging(tmp_path, "info", console=True)
    slog.get_logger("signaltty.test").info("daemon.ready", socket="/s.sock")
    output = stream.getvalue()
    assert "daemon.ready" in output
    assert "event='daemon.ready'" not in output
    assert "/s.sock" in output


def test_console_off_writes_nothing_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    slog.configure_logging(tmp_path, "info", console=False)
    slog.get_logger("t").warning("quiet.please")
    assert stream.getvalue() == ""
