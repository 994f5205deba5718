#!/usr/bin/env python3
"""Watched hosts over real OpenSSH (issue 16 item 4): latency and load.

Reuses the test tier of tests/remote/test_ssh_host.py (its own ``sshd`` on 127.0.0.1, a
throwaway user as the remote account whose ``signaltty`` is this checkout) and the desktop
tests' private ``dbus-daemon`` with the test notification server. The local daemon (root's,
D-Bus and notifications on, ``settle_ms = 0``) watches ``[hosts.devbox] target = "remote"``
through a LAN-like link: 20 ms (``--delay-ms``) added in each direction. With ``tc netem``
(a network namespace joined by a veth pair, netem on both ends, ssh run in the namespace) when
the kernel has it; otherwise an asyncio TCP relay on 127.0.0.1 between ssh and sshd that holds
every chunk for the delay in each direction, in order. Which one was used, and why, is in the
report (``link``).

Measured:

* **latency** — a scripted Claude (tests/fixtures/fake_agent.py, real ``signaltty
  hook-event`` calls) in a pane of the remote daemon goes through ``--cycles`` turns of
  UserPromptSubmit → PermissionRequest (waiting) → Stop. *permission*: from the remote
  daemon's ``received_at`` of the request to the local notification server receiving the
  ``Notify`` that carries the "Allow once" button (pressed then, which answers it there);
  *turn done*: from the remote pane's ``lifecycle_since`` of ``done`` to the "finished"
  ``Notify``. The same agent in a pane of the local daemon, measured in the same run, is the
  baseline (the ratio remote / local of the medians). Same clock on both sides: one machine.
* **links** — ssh processes of the local daemon and bridges on the remote side with 1,
  ``--panes`` … remote panes (one connection per host however many panes).
* **unreachable** — two idle local daemons side by side for ``--idle-s`` seconds, one
  watching ``nosuchhost.invalid``: CPU seconds of each daemon (and of the ssh attempts it
  started, reaped children) and the number of attempts.

Not a test: nothing asserts a time. Runs as root (it creates a user). Usage:
``python bench/remote_latency.py [--quick] [--json]``; a table on stdout (with ``--json`` the
JSON report on stdout, the table on stderr). Exit 1 when something went wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# after the path set-up above: the test suite's sshd, bus and daemon helpers
from _harness import log, median, percentile  # noqa: E402
from signaltty.core.model import parse_iso  # noqa: E402
from signaltty.proto.client import Client  # noqa: E402
from tests.conftest import DaemonProc, wait_until  # noqa: E402
from tests.desktop.busfix import NotificationServer, PrivateBus  # noqa: E402
from tests.desktop.conftest import desktop_daemon  # noqa: E402
from tests.remote.test_ssh_host import Remote, _ssh_children, _usable  # noqa: E402
from tests.server.test_hooks_e2e import Agent  # noqa: E402

WATCH = '[hosts.devbox]\ntarget = "remote"\n[notifications]\nsettle_ms = 0\n'
GAP_S = 2.5  # between a pane's turns: more than the notifier's 2 s per-cause coalescing


# ------------------------------------------------------------------ the delayed link


class DelayRelay:
    """TCP relay ``listen`` → ``target`` holding every chunk ``delay_s`` in each direction
    (in order), on its own event loop thread."""

    def __init__(self, target: tuple[str, int], delay_s: float, host: str = "127.0.0.1") -> None:
        self.target = target
        self.delay_s = delay_s
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.port = 0
        self.host = host
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        if not self.ready.wait(10):
            raise RuntimeError("relay did not start")

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._conn, self.host, 0))
        self.port = int(server.sockets[0].getsockname()[1])
        self.ready.set()
        self.loop.run_forever()
        server.close()

    async def _conn(self, r1: asyncio.StreamReader, w1: asyncio.StreamWriter) -> None:
        try:
            r2, w2 = await asyncio.open_connection(*self.target)
        except OSError:
            w1.close()
            return
        await asyncio.gather(self._pipe(r1, w2), self._pipe(r2, w1), return_exceptions=True)
        for w in (w1, w2):
            w.close()

    async def _pipe(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def send() -> None:
            while True:
                due, data = await queue.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    with contextlib.suppress(OSError):
                        w.write_eof()
                    return
                w.write(data)
                await w.drain()

        sender = asyncio.ensure_future(send())
        try:
            while True:
                data = await r.read(65536)
                queue.put_nowait((time.monotonic() + self.delay_s, data))
                if not data:
                    break
            await sender
        finally:
            sender.cancel()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class Netem:
    """A network namespace joined to this one by a veth pair with ``netem`` on both ends."""

    def __init__(self, delay_ms: int) -> None:
        self.ns = f"stlat{os.getpid()}"
        self.outer, self.inner = f"stl{os.getpid()}a", f"stl{os.getpid()}b"
        self.outer_ip, self.inner_ip = "10.231.77.1", "10.231.77.2"
        steps = [
            ["ip", "netns", "add", self.ns],
            ["ip", "link", "add", self.outer, "type", "veth", "peer", "name", self.inner],
            ["ip", "link", "set", self.inner, "netns", self.ns],
            ["ip", "addr", "add", f"{self.outer_ip}/30", "dev", self.outer],
            ["ip", "link", "set", self.outer, "up"],
            ["ip", "-n", self.ns, "addr", "add", f"{self.inner_ip}/30", "dev", self.inner],
            ["ip", "-n", self.ns, "link", "set", self.inner, "up"],
            ["ip", "-n", self.ns, "link", "set", "lo", "up"],
            ["tc", "qdisc", "add", "dev", self.outer, "root", "netem", "delay", f"{delay_ms}ms"],
            ["ip", "netns", "exec", self.ns, "tc", "qdisc", "add", "dev", self.inner, "root"]
            + ["netem", "delay", f"{delay_ms}ms"],
        ]
        for argv in steps:
            r = subprocess.run(argv, capture_output=True, text=True, check=False)
            if r.returncode != 0:
                self.close()
                raise RuntimeError(f"{' '.join(argv[:6])}…: {r.stderr.strip()}")

    def close(self) -> None:
        subprocess.run(["ip", "link", "del", self.outer], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True, check=False)


def delayed_link(remote: Remote, delay_ms: int) -> tuple[str, dict[str, Any], list[Any]]:
    """The ssh command line through a delayed link, what it is, and what to close."""
    config = remote.tmp / "ssh_config"
    host_key = (remote.tmp / "keys" / "host.pub").read_text()
    known = remote.tmp / "known_hosts"
    why = "needs root, ip and tc"
    if os.geteuid() == 0 and shutil.which("ip") and shutil.which("tc"):
        try:
            netem = Netem(delay_ms)
        except RuntimeError as exc:
            why = str(exc)
        else:
            # sshd listens on 127.0.0.1 only: a relay without delay on the veth's address
            relay = DelayRelay(("127.0.0.1", remote.port), 0.0, host=netem.outer_ip)
            with known.open("a") as fh:
                fh.write(f"[{netem.outer_ip}]:{relay.port} {host_key}")
            cmd = (
                f"ip netns exec {netem.ns} ssh -F {config} "
                f"-o HostName={netem.outer_ip} -p {relay.port}"
            )
            return cmd, {"kind": "netem", "delay_ms_each_way": delay_ms}, [relay, netem]
    relay = DelayRelay(("127.0.0.1", remote.port), delay_ms / 1000.0)
    with known.open("a") as fh:
        fh.write(f"[127.0.0.1]:{relay.port} {host_key}")
    info = {"kind": "relay", "delay_ms_each_way": delay_ms, "why_not_netem": why}
    return f"ssh -F {config} -p {relay.port}", info, [relay]


# ------------------------------------------------------------------ measuring


class Clock:
    """The notification server stamps calls with ``time.monotonic()``; daemons with wall
    time. One offset read at start converts (the same machine, the same clocks)."""

    def __init__(self) -> None:
        self.offset = time.time() - time.monotonic()

    def wall(self, mono: float) -> float:
        return mono + self.offset


def plan(cycles: int) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [
        {"hook": "SessionStart", "agent": "claude", "payload": {"session_id": "L1"}}
    ]
    for i in range(cycles):
        steps += [
            {"hook": "UserPromptSubmit", "agent": "claude", "payload": {"session_id": "L1"}},
            {"sleep": 0.3},
            {
                "hook": "PermissionRequest",
                "agent": "claude",
                "payload": {
                    "session_id": "L1",
                    "tool_name": "Bash",
                    "tool_input": {"command": f"echo {i}"},
                },
                "args": ["--wait-for-answer", "--wait-timeout", "120"],
            },
            {"sleep": 0.3},
            {"hook": "Stop", "agent": "claude", "payload": {"session_id": "L1"}},
            {"sleep": GAP_S},
        ]
    return [*steps, {"sleep": 600}]


def next_notify(
    notif: NotificationServer, start: int, pred: Any, timeout: float = 60
) -> tuple[int, tuple[Any, ...], float]:
    """The first ``Notify`` from index ``start`` of the server's log with ``pred(args)``:
    (its index, its args, its monotonic time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with notif._lock:
            calls = list(zip(notif.log, notif.received_at, strict=True))
        for i in range(start, len(calls)):
            (member, args), (_m, at) = calls[i]
            if member == "Notify" and pred(args):
                return i, args, at
        time.sleep(0.005)
    raise TimeoutError(f"no such Notify within {timeout} s")


def shown_id(notif: NotificationServer, summary: str, body: str) -> int:
    with notif._lock:
        ids = [n for n, i in notif.shown.items() if i["summary"] == summary and i["body"] == body]
    return max(ids)


def run_cycles(
    notif: NotificationServer,
    clock: Clock,
    cycles: int,
    decision_at: Any,
    done_at: Any,
    summary_prefix: str,
) -> dict[str, Any]:
    """Drive ``cycles`` turns of an agent already started; the latencies in seconds.
    ``summary_prefix``: "devbox/" for the remote pane's notifications, "" for a local one."""

    def ours(a: tuple[Any, ...]) -> bool:
        summary = str(a[3])
        return summary.startswith(summary_prefix) and (
            bool(summary_prefix) or not summary.startswith("devbox/")
        )

    perm, turn, extra = [], [], 0
    start = len(notif.log)
    for _ in range(cycles):
        i, args, at = next_notify(
            notif,
            start,
            lambda a: ours(a) and a[3].endswith("needs approval") and "Allow once" in a[5],
        )
        # a Notify for the request before the one with buttons (shown without them first)
        extra += sum(
            1
            for m, a in notif.log[start:i]
            if m == "Notify" and ours(a) and "needs approval" in a[3]
        )
        perm.append(clock.wall(at) - decision_at())
        notif.press(shown_id(notif, args[3], args[4]), "Allow once")
        j, _args, at2 = next_notify(
            notif,
            i + 1,
            lambda a: ours(a) and a[3].endswith("finished"),
        )
        turn.append(clock.wall(at2) - done_at())
        start = j + 1
    return {"permission": perm, "turn_done": turn, "buttonless_first": extra}


def summarize(values: list[float]) -> dict[str, Any]:
    def ms(v: float | None) -> float | None:
        return None if v is None else round(v * 1000, 1)

    return {
        "n": len(values),
        "median_ms": ms(median(values)),
        "p95_ms": ms(percentile(values, 95)),
        "max_ms": ms(max(values) if values else None),
    }


def ts(value: object) -> float:
    got = parse_iso(value) if isinstance(value, str) else None
    if got is None:
        raise ValueError(f"not a time: {value!r}")
    return got


def measure_remote(
    local: DaemonProc, remote: Remote, notif: NotificationServer, clock: Clock, cycles: int
) -> dict[str, Any]:
    agent_log = remote.home / "bench-agent.log"
    rid = remote.new(
        "--name",
        "bench",
        "-e",
        f"SIGNALTTY_FAKE_LOG={agent_log}",
        "--",
        "claude",
        json.dumps(plan(cycles)),
    )
    mid = f"devbox/{rid}"

    def decision_at() -> float:
        dec = local.call("pane.get", {"pane_id": mid})["pane"]["pending_decision"]
        return ts(dec["received_at"])  # the remote daemon's stamp, mirrored as it is

    def done_at() -> float:
        return ts(remote.json("pane", "get", rid)["pane"]["lifecycle_since"])

    try:
        return run_cycles(notif, clock, cycles, decision_at, done_at, "devbox/")
    finally:
        remote.cli("pane", "close", rid)


def measure_local(
    local: DaemonProc, notif: NotificationServer, clock: Clock, cycles: int
) -> dict[str, Any]:
    a = Agent(local, plan(cycles), linger=600)

    def decision_at() -> float:
        return ts(a.get()["pending_decision"]["received_at"])

    def done_at() -> float:
        return ts(a.get()["lifecycle_since"])

    try:
        return run_cycles(notif, clock, cycles, decision_at, done_at, "")
    finally:
        local.call("pane.close", {"pane_id": a.id})


def mirrored_all(local: DaemonProc, remote_ids: list[str]) -> bool:
    here = {p["id"] for p in local.call("pane.list")["panes"]}
    return all(f"devbox/{p}" in here for p in remote_ids)


def measure_links(local: DaemonProc, remote: Remote, counts: list[int]) -> list[dict[str, Any]]:
    out = []
    assert local.proc is not None
    spawned: list[str] = []
    for n in counts:
        while len(spawned) < n:
            spawned.append(remote.new("--name", f"l{len(spawned)}", "--", "sleep", "600"))
        wait_until(
            lambda: mirrored_all(local, spawned),
            60,
            what="the mirrored panes",
        )
        wait_until(lambda: len(remote.bridges()) <= 1, 30, what="the CLI bridges to exit")
        out.append(
            {
                "remote_panes": n,
                "local_ssh_processes": len(_ssh_children(psutil.Process(local.proc.pid))),
                "remote_bridges": len(remote.bridges()),
            }
        )
        log(f"links: {out[-1]}")
    for pane_id in spawned:
        remote.cli("pane", "close", pane_id)
    return out


def cpu(proc: psutil.Process) -> tuple[float, float]:
    t = proc.cpu_times()
    return t.user + t.system, t.children_user + t.children_system


def measure_unreachable(root: Path, remote: Remote, seconds: float) -> dict[str, Any]:
    ssh = f"ssh -F {remote.tmp / 'ssh_config'}"
    daemons = {}
    for name, config in (
        ("none", ""),
        ("unreachable", '[hosts.nowhere]\ntarget = "nosuchhost.invalid"\n'),
    ):
        (root / name).mkdir(mode=0o700)
        d = DaemonProc(root / name, {"SIGNALTTY_SSH_COMMAND": ssh})
        if config:
            d.write_config(config)
        d.start()
        daemons[name] = d
    try:
        bad = daemons["unreachable"]
        wait_until(
            lambda: bad.call("hosts.list")["hosts"][0]["state"] == "unreachable",
            60,
            what="the host unreachable",
        )
        attempts = [0]
        stop = threading.Event()

        def count() -> None:
            with Client(bad.socket, timeout=None) as cl:
                cl.call("subscribe", {"events": ["host.updated"]})
                while not stop.is_set():
                    try:
                        msg = cl.next_event(timeout=0.5)
                    except TimeoutError:
                        continue
                    if msg is not None and msg["payload"]["host"]["state"] == "connecting":
                        attempts[0] += 1

        counter = threading.Thread(target=count, daemon=True)
        counter.start()
        procs = {k: psutil.Process(d.proc.pid) for k, d in daemons.items() if d.proc is not None}
        before = {k: cpu(p) for k, p in procs.items()}
        t0 = time.monotonic()
        time.sleep(seconds)
        wall = time.monotonic() - t0
        after = {k: cpu(p) for k, p in procs.items()}
        stop.set()
        counter.join(5)
        out: dict[str, Any] = {"window_s": round(wall, 1), "attempts_in_window": attempts[0]}
        for k in procs:
            own = after[k][0] - before[k][0]
            kids = after[k][1] - before[k][1]
            out[k] = {
                "daemon_cpu_s": round(own, 3),
                "daemon_cpu_pct": round(100 * own / wall, 3),
                "ssh_attempts_cpu_s": round(kids, 3),
            }
        return out
    finally:
        for d in daemons.values():
            d.stop()
            d.kill_leftovers()


# ------------------------------------------------------------------ main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="5 cycles, 10 panes, 15 s idle")
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--panes", type=int, default=30)
    ap.add_argument("--idle-s", type=float, default=60.0)
    ap.add_argument("--delay-ms", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.cycles, args.panes, args.idle_s = 5, 10, 15.0
    reason = _usable()
    if reason:
        print(f"remote_latency: cannot run here: {reason}", file=sys.stderr)
        return 1
    report: dict[str, Any] = {"load_avg_at_start": os.getloadavg()}
    ok = True
    remote = Remote()
    bus: PrivateBus | None = None
    notif: NotificationServer | None = None
    closers: list[Any] = []
    local: DaemonProc | None = None
    root = Path(tempfile.mkdtemp(prefix="stlat-", dir="/tmp"))
    try:
        remote.setup()
        bus = PrivateBus()
        notif = NotificationServer(bus.address)
        clock = Clock()
        ssh_cmd, report["link"], closers = delayed_link(remote, args.delay_ms)
        log(f"link: {report['link']}")
        (root / "local").mkdir(mode=0o700)
        # a watching link never starts the remote daemon (bridge --no-start): a --host
        # command does, as the person's first one would
        remote.json("status")
        local = desktop_daemon(root / "local", bus, WATCH, SIGNALTTY_SSH_COMMAND=ssh_cmd)
        wait_until(
            lambda: (
                local is not None and local.call("hosts.list")["hosts"][0]["state"] == "connected"
            ),
            60,
            what="devbox connected",
        )
        log(f"latency: {args.cycles} remote cycles")
        far = measure_remote(local, remote, notif, clock, args.cycles)
        log(f"latency: {args.cycles} local cycles")
        near = measure_local(local, notif, clock, args.cycles)
        lat: dict[str, Any] = {}
        for kind in ("permission", "turn_done"):
            r, n = summarize(far[kind]), summarize(near[kind])
            lat[kind] = {
                "remote": r,
                "local": n,
                "ratio_median": round(r["median_ms"] / n["median_ms"], 2)
                if r["median_ms"] and n["median_ms"]
                else None,
            }
        lat["buttonless_first"] = {
            "remote": far["buttonless_first"],
            "local": near["buttonless_first"],
        }
        report["latency"] = lat
        counts = sorted({1, max(1, args.panes // 3), args.panes})
        report["links"] = measure_links(local, remote, counts)
        log(f"unreachable: {args.idle_s:g} s")
        report["unreachable"] = measure_unreachable(root, remote, args.idle_s)
    except Exception as exc:  # noqa: BLE001 - reported, then everything is cleaned up
        report["error"] = f"{type(exc).__name__}: {exc}"
        ok = False
    finally:
        if local is not None:
            local.stop()
            if local.kill_leftovers():
                report["leftovers"] = True
                ok = False
        for c in reversed(closers):
            c.close()
        if notif is not None:
            notif.close()
        if bus is not None:
            bus.stop()
        problems = remote.teardown()
        if problems:
            report["teardown"] = problems
            ok = False
        shutil.rmtree(root, ignore_errors=True)
    report["load_avg_at_end"] = os.getloadavg()
    table = render(report)
    if args.json:
        print(json.dumps(report, indent=2))
        print(table, file=sys.stderr)
    else:
        print(table)
    return 0 if ok else 1


def render(report: dict[str, Any]) -> str:
    lines = [f"link: {json.dumps(report.get('link'))}"]
    lat = report.get("latency") or {}
    for kind in ("permission", "turn_done"):
        if kind in lat:
            r, n = lat[kind]["remote"], lat[kind]["local"]
            lines.append(
                f"{kind:<11} remote median {r['median_ms']} ms p95 {r['p95_ms']} ms (n={r['n']})"
                f" | local median {n['median_ms']} ms p95 {n['p95_ms']} ms"
                f" | ratio {lat[kind]['ratio_median']}"
            )
    for row in report.get("links", []):
        lines.append(
            f"links: {row['remote_panes']} remote panes → {row['local_ssh_processes']} ssh here,"
            f" {row['remote_bridges']} bridge there"
        )
    if "unreachable" in report:
        u = report["unreachable"]
        lines.append(
            f"idle {u['window_s']} s: none {u['none']['daemon_cpu_pct']}% CPU;"
            f" unreachable host {u['unreachable']['daemon_cpu_pct']}% CPU"
            f" + {u['unreachable']['ssh_attempts_cpu_s']} s CPU in"
            f" {u['attempts_in_window']} ssh attempts"
        )
    if "error" in report:
        lines.append(f"error: {report['error']}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
