"""The unit under a real ``systemd --user`` manager for a throwaway user: ``Type=notify``
readiness, and a stalled watchdog gets the daemon restarted (issue #6 "Service";
desktop-and-service.md §3). Needs root, systemd and writable cgroups; everything the test
creates (marker, user, runtime dir, cgroups, processes, files) is removed afterwards."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, wait_until

SYSTEMD = "/lib/systemd/systemd"
MARKER = Path("/run/systemd/system")
CGROUP_ROOTS = [Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup/systemd")]
# what `python -m signaltty daemon` imports from site-packages (copied for the user)
PACKAGES = [
    "annotated_types",
    "psutil",
    "pydantic",
    "pydantic_core",
    "pyte",
    "structlog",
    "tomlkit",
    "typing_extensions.py",
    "typing_inspection",
    "uvloop",
    "wcwidth",
    "jeepney",
]


def _usable() -> str | None:
    if os.environ.get("SIGNALTTY_TEST_SYSTEMD") != "1":
        return "opt-in: SIGNALTTY_TEST_SYSTEMD=1 (timing-sensitive under load)"
    if os.geteuid() != 0:
        return "needs root"
    for tool in (SYSTEMD, shutil.which("useradd"), shutil.which("systemctl"), "/usr/bin/python3"):
        if not tool or not os.path.exists(tool):
            return f"missing {tool}"
    if not all(
        root.is_dir() and os.access(root, os.W_OK) for root in CGROUP_ROOTS if root.exists()
    ):
        return "cgroups not writable"
    if not any(root.exists() for root in CGROUP_ROOTS):
        return "no cgroup hierarchy"
    return None


class UserManager:
    """A throwaway user with a running ``systemd --user``."""

    def __init__(self) -> None:
        self.name = "st" + secrets.token_hex(4)
        self.tmp = Path(tempfile.mkdtemp(prefix="stsd-", dir="/tmp"))
        os.chmod(self.tmp, 0o755)
        self.home = self.tmp / "home"
        self.created_marker = False
        self.created_run_systemd = False
        self.cgroups: list[Path] = []
        self.runtime: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.user_added = False
        self.created_run_user = False

    def setup(self) -> None:
        if not MARKER.exists():
            self.created_run_systemd = not MARKER.parent.exists()
            MARKER.mkdir(parents=True)
            self.created_marker = True
        subprocess.run(
            ["useradd", "-M", "-d", str(self.home), "-s", "/bin/sh", self.name], check=True
        )
        self.user_added = True
        import pwd

        pw = pwd.getpwnam(self.name)
        self.uid, self.gid = pw.pw_uid, pw.pw_gid
        self.home.mkdir()
        self.runtime = Path(f"/run/user/{self.uid}")
        self.created_run_user = not self.runtime.parent.exists()
        self.runtime.mkdir(parents=True, mode=0o700)
        # the interpreter and libraries the user can read (root's home is private)
        site = self.tmp / "site"
        src = Path(next(p for p in sys.path if p.endswith("site-packages")))
        for name in PACKAGES:
            if (src / name).is_dir():
                shutil.copytree(
                    src / name, site / name, ignore=shutil.ignore_patterns("__pycache__")
                )
            elif (src / name).exists():
                site.mkdir(exist_ok=True)
                shutil.copy2(src / name, site / name)
        bindir = self.home / "bin"
        bindir.mkdir()
        wrapper = bindir / "signaltty"
        wrapper.write_text(
            f'#!/bin/sh\nPYTHONPATH={REPO}:{site} exec /usr/bin/python3 -m signaltty "$@"\n'
        )
        wrapper.chmod(0o755)
        conf = self.home / ".config" / "signaltty"
        conf.mkdir(parents=True)
        (conf / "config.toml").write_text(
            "[dbus]\nenabled = false\n[notifications]\nenabled = false\n"
        )
        for root in CGROUP_ROOTS:
            if root.exists():
                cg = root / self.name
                cg.mkdir()
                self.cgroups.append(cg)
                for entry in [cg, *cg.iterdir()]:
                    os.chown(entry, self.uid, self.gid)
        subprocess.run(
            ["chown", "-R", f"{self.uid}:{self.gid}", str(self.home), str(self.runtime)], check=True
        )
        procs = " ".join(f"echo $$ > {cg}/cgroup.procs;" for cg in self.cgroups)
        self.proc = subprocess.Popen(
            [
                "sh",
                "-c",
                (
                    f"{procs} exec setpriv --reuid={self.uid} --regid={self.gid} --init-groups "
                    f"env -i HOME={self.home} USER={self.name} LOGNAME={self.name} "
                    f"XDG_RUNTIME_DIR={self.runtime} PATH={bindir}:/usr/bin:/bin {SYSTEMD} --user"
                ),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(
            lambda: self.systemctl("is-system-running").stdout.strip() in ("running", "degraded"),
            timeout=30,
        )

    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "USER": self.name,
            "XDG_RUNTIME_DIR": str(self.runtime),
            "PATH": f"{self.home / 'bin'}:/usr/bin:/bin",
            "LANG": "C.UTF-8",
        }

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                "setpriv",
                f"--reuid={self.uid}",
                f"--regid={self.gid}",
                "--init-groups",
                "env",
                "-i",
                *(f"{k}={v}" for k, v in self.env().items()),
                *argv,
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=str(self.home),
        )

    def systemctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("systemctl", "--user", *args)

    def show(self, prop: str) -> str:
        return self.systemctl("show", "-p", prop, "--value", "signaltty").stdout.strip()

    def teardown(self) -> None:
        if self.proc is not None:
            with _suppress():
                self.systemctl("stop", "signaltty", "--no-block")
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        for cg in reversed(self.cgroups):
            _kill_cgroup(cg)
        if self.user_added:
            subprocess.run(["pkill", "-KILL", "-U", str(self.uid)], check=False)
            subprocess.run(["userdel", "-f", self.name], check=False, capture_output=True)
        if self.runtime is not None:
            subprocess.run(["umount", "-l", str(self.runtime)], check=False, capture_output=True)
            shutil.rmtree(self.runtime, ignore_errors=True)
            if self.created_run_user:
                with _suppress():
                    self.runtime.parent.rmdir()
        if self.created_marker:
            with _suppress():
                MARKER.rmdir()
            if self.created_run_systemd:
                with _suppress():
                    MARKER.parent.rmdir()
        shutil.rmtree(self.tmp, ignore_errors=True)


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def _kill_cgroup(cg: Path) -> None:
    """SIGKILL every process below ``cg`` and remove the cgroups bottom-up."""
    for _ in range(50):
        pids = []
        for procs in cg.rglob("cgroup.procs"):
            with _suppress():
                pids += [int(x) for x in procs.read_text().split()]
        if not pids:
            break
        for pid in pids:
            with _suppress():
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    for sub in sorted(
        (p for p in cg.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True
    ):
        with _suppress():
            sub.rmdir()
    with _suppress():
        cg.rmdir()


@pytest.fixture
def manager() -> Iterator[UserManager]:
    reason = _usable()
    if reason:
        pytest.skip(reason)
    m = UserManager()
    try:
        m.setup()
        yield m
    finally:
        m.teardown()


def test_unit_starts_reports_ready_and_watchdog_restarts(manager: UserManager) -> None:
    r = manager.run("signaltty", "service", "install", "--no-dbus-activation")
    assert r.returncode == 0, (r.stdout, r.stderr)
    unit = manager.home / ".config" / "systemd" / "user" / "signaltty.service"
    assert f"ExecStart={manager.home / 'bin' / 'signaltty'} daemon" in unit.read_text()
    wait_until(lambda: manager.show("ActiveState") == "active", timeout=30)
    assert manager.show("Type") == "notify"
    assert manager.show("StatusText").startswith("listening on ")
    st = manager.run("signaltty", "--json", "status")
    assert st.returncode == 0, st.stderr
    # a stalled loop: a short watchdog (drop-in) and a stopped daemon → restart
    dropin = unit.parent / "signaltty.service.d"
    dropin.mkdir()
    (dropin / "test.conf").write_text("[Service]\nWatchdogSec=2\nTimeoutStopSec=2\n")
    subprocess.run(["chown", "-R", f"{manager.uid}:{manager.gid}", str(dropin)], check=True)
    assert manager.systemctl("daemon-reload").returncode == 0
    assert manager.systemctl("restart", "signaltty").returncode == 0
    wait_until(lambda: manager.show("ActiveState") == "active", timeout=30)
    pid = int(manager.show("MainPID"))
    assert pid > 0
    time.sleep(3)  # WATCHDOG=1 keeps it alive while the loop runs
    assert int(manager.show("MainPID")) == pid
    os.kill(pid, signal.SIGSTOP)
    wait_until(
        lambda: (
            manager.show("MainPID") not in ("0", str(pid))
            and manager.show("ActiveState") == "active"
        ),
        timeout=40,
        interval=0.2,
    )
    assert int(manager.show("NRestarts")) >= 1
    r = manager.run("signaltty", "service", "status", "--json")
    assert '"active": true' in r.stdout
    r = manager.run("signaltty", "service", "uninstall", "--force")
    assert r.returncode == 0, r.stderr
    assert not unit.exists()
