"""Shared helpers of the benchmarks: a private daemon in a temp dir, stats, output.

Not part of the package and not a test: ``bench/flood.py`` and ``bench/idle.py`` import it from
their own directory. Everything here uses only the standard library, ``psutil`` (a runtime
dependency of signaltty) and the blocking client ``signaltty.proto.client.Client``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Self

import psutil

from signaltty.proto.client import Client, ConnectError

MB = 1_000_000  # all MB figures of the benchmarks are 10^6 bytes

# Environment variables of the caller that would change how the private daemon behaves.
# PS1 too: a venv's activate script exports "(.venv) " where PS1 was empty, and the panes'
# `bash --norc -i` would show that prompt, which the benches' prompt checks do not know.
_DROP_ENV = (
    "NOTIFY_SOCKET",
    "WATCHDOG_USEC",
    "WATCHDOG_PID",
    "LISTEN_FDS",
    "LISTEN_PID",
    "TMUX",
    "PS1",
)
# The daemon's engine switches, passed on so that a run can compare them (every other
# SIGNALTTY_* variable of the caller's is dropped: the bench daemon is private).
KEEP_ENV = ("SIGNALTTY_READER_THREADS", "SIGNALTTY_PURE_PYTHON")


def log(msg: str) -> None:
    """Progress line on stderr (stdout is kept for the table or the JSON)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0:
        return None
    return a / b


def fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def print_table(
    title: str, header: Sequence[str], rows: Sequence[Sequence[Any]], out: Any = None
) -> None:
    """A plain fixed-width table."""
    out = out or sys.stdout
    cells = [[str(h) for h in header]] + [
        [fmt(c) if not isinstance(c, str) else c for c in r] for r in rows
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(title, file=out)
    for n, row in enumerate(cells):
        print(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=False))
            ),
            file=out,
        )
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)
    print(file=out)


def dump_json(data: dict[str, Any]) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def code_version() -> str:
    """``<short commit>`` of the checkout the daemon runs from, ``+dirty`` when signaltty/ has
    uncommitted changes (figures then belong to the working tree, not to the commit)."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(
            ["git", "-C", repo, "rev-parse", "--short", "HEAD"],
            check=False,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", repo, "status", "--porcelain", "--", "signaltty"],
            check=False,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+dirty" if dirty else "")


def machine_info() -> dict[str, Any]:
    import platform

    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "mem_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "code": code_version(),
        "engine_env": {k: os.environ[k] for k in KEEP_ENV if k in os.environ},
    }


@contextlib.contextmanager
def terminate_on_signals() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into KeyboardInterrupt so ``finally`` blocks clean up."""

    def handler(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class BenchDaemon:
    """A private ``signaltty daemon`` in a fresh temp dir under /tmp; always cleaned up.

    Use as a context manager. ``tmp`` is the temp dir (input files may go there too); it is
    removed on exit together with every process the daemon started. ``config`` is written as
    the daemon's ``config.toml``; ``setup(tmp)`` runs before the start (input files the
    daemon reads at start) and returns extra environment variables for it.
    """

    def __init__(
        self,
        prefix: str = "stb-",
        start_timeout: float = 30.0,
        config: str | None = None,
        setup: Callable[[str], dict[str, str]] | None = None,
    ) -> None:
        self.prefix = prefix
        self.start_timeout = start_timeout
        self.config = config
        self.setup = setup
        self.tmp = ""
        self.sock = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self.ps: psutil.Process | None = None
        self._children: dict[int, psutil.Process] = {}
        self.leftovers: list[str] = []
        self.exit_code: int | None = None

    # -------------------------------------------------------------- start

    def __enter__(self) -> Self:
        self.tmp = tempfile.mkdtemp(prefix=self.prefix, dir="/tmp")
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def path(self, name: str) -> str:
        return os.path.join(self.tmp, name)

    def _start(self) -> None:
        self.sock = self.path("s.sock")
        if len(self.sock.encode()) > 107:
            raise RuntimeError(f"socket path too long: {self.sock}")
        dirs = {name: self.path(name) for name in ("xdg-state", "xdg-config", "run", "home")}
        for d in dirs.values():
            os.makedirs(d, mode=0o700, exist_ok=True)
        if self.config is not None:
            os.makedirs(os.path.join(dirs["xdg-config"], "signaltty"), mode=0o700, exist_ok=True)
            with open(os.path.join(dirs["xdg-config"], "signaltty", "config.toml"), "w") as fh:
                fh.write(self.config)
        extra = self.setup(self.tmp) if self.setup is not None else {}
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in _DROP_ENV and (k in KEEP_ENV or not k.startswith("SIGNALTTY_"))
        }
        env.update(
            SIGNALTTY_SOCKET=self.sock,
            XDG_STATE_HOME=dirs["xdg-state"],
            XDG_CONFIG_HOME=dirs["xdg-config"],
            XDG_RUNTIME_DIR=dirs["run"],
            HOME=dirs["home"],
            SIGNALTTY_DBUS="0",
            SIGNALTTY_NOTIFY="0",
            SIGNALTTY_SHELL_PATH="0",
            TERM=env.get("TERM") or "xterm-256color",
        )
        env.update(extra)
        self.env = env
        self._out = open(self.path("daemon.out"), "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "signaltty", "daemon", "--state-dir", self.path("state")],
            env=env,
            cwd=self.tmp,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.ps = psutil.Process(self.proc.pid)
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"daemon exited with {self.proc.returncode} at start:\n{self.output_tail()}"
                )
            try:
                with Client(self.sock, timeout=2.0) as c:
                    c.call("server.status")
                return
            except (ConnectError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"daemon did not answer within {self.start_timeout}s:\n{self.output_tail()}"
                    ) from None
                time.sleep(0.05)

    def client(self, timeout: float | None = 5.0) -> Client:
        return Client(self.sock, timeout=timeout)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One request on a fresh connection."""
        with self.client() as c:
            return c.call(method, params)

    # -------------------------------------------------------------- observation

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def cpu_seconds(self) -> float:
        """User + system CPU of the daemon process itself (children excluded)."""
        assert self.ps is not None
        t = self.ps.cpu_times()
        return t.user + t.system

    def rss_mb(self) -> float:
        assert self.ps is not None
        return self.ps.memory_info().rss / MB

    def note_children(self) -> None:
        """Remember the daemon's descendants so that cleanup can kill any that outlive it."""
        if self.ps is None:
            return
        with contextlib.suppress(psutil.Error):
            for child in self.ps.children(recursive=True):
                self._children.setdefault(child.pid, child)

    def output_tail(self, lines: int = 40) -> str:
        try:
            with open(self.path("daemon.out"), "rb") as f:
                data = f.read()
        except OSError:
            return ""
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])

    # -------------------------------------------------------------- stop

    def close(self) -> None:
        """Shut the daemon down (force), kill whatever is left, remove the temp dir."""
        try:
            if self.proc is not None:
                self.note_children()
                if self.proc.poll() is None:
                    with contextlib.suppress(Exception), Client(self.sock, timeout=2.0) as c:
                        c.call("server.shutdown", {"force": True})
                    try:
                        self.proc.wait(20)
                    except subprocess.TimeoutExpired:
                        log("daemon did not stop within 20 s of server.shutdown; SIGTERM")
                        self.proc.terminate()
                        try:
                            self.proc.wait(5)
                        except subprocess.TimeoutExpired:
                            log("daemon ignored SIGTERM; SIGKILL")
                            self.proc.kill()
                            self.proc.wait(5)
                self.exit_code = self.proc.returncode
                for pid, child in self._children.items():
                    with contextlib.suppress(psutil.Error):
                        if child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
                            self.leftovers.append(f"{pid} {' '.join(child.cmdline())}")
                            child.kill()
                if self.leftovers:
                    log(
                        f"killed {len(self.leftovers)} processes left behind by the daemon: "
                        f"{self.leftovers[:5]}"
                    )
        finally:
            if getattr(self, "_out", None) is not None:
                self._out.close()
            if self.tmp:
                shutil.rmtree(self.tmp, ignore_errors=True)
