#!/usr/bin/env python3
"""D-Bus and notification benchmark (issue #6 "Performance").

Starts a private ``dbus-daemon``, the test notification server and a private daemon with
D-Bus and notifications on (settle 0), then measures:

* method round trips over the bus: ``Status`` and ``ListPanes`` with 200 panes (p50/p99);
* a burst of state changes (OSC 777 notifications printed by one pane, each stamped with its
  wall-clock time): ``NotificationCreated`` signals delivered in order, none missing, the
  client connection still up, signal latency p50/p99 (PTY → daemon → bus → client);
* alert → ``Notify`` call latency at the notification server, excluding the settle delay.

Not a test: nothing asserts a time. Exit status 1 when signals were lost or out of order.
Usage: ``python bench/dbus.py [--quick]`` (prints a JSON report).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from jeepney import DBusAddress, HeaderFields, MatchRule, MessageType, message_bus, new_method_call
from jeepney.io.blocking import open_dbus_connection

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# after the path set-up above: the test suite's bus and daemon helpers live in the repository
from _harness import percentile  # noqa: E402
from tests.conftest import DaemonProc  # noqa: E402
from tests.desktop.busfix import NotificationServer, PrivateBus  # noqa: E402

OBJ = DBusAddress(
    "/dev/signaltty/Signaltty",
    bus_name="dev.signaltty.Signaltty",
    interface="dev.signaltty.Signaltty1",
)


def _ms(values: list[float]) -> dict[str, float | None]:
    return {
        "p50_ms": _r(percentile(values, 50)),
        "p99_ms": _r(percentile(values, 99)),
        "n": len(values),
    }


def _r(v: float | None) -> float | None:
    return None if v is None else round(v * 1000, 3)


def round_trips(address: str, member: str, n: int) -> list[float]:
    out = []
    with open_dbus_connection(bus=address) as conn:
        for _ in range(n):
            t0 = time.perf_counter()
            reply = conn.send_and_get_reply(new_method_call(OBJ, member), timeout=10)
            out.append(time.perf_counter() - t0)
            assert reply.header.message_type == MessageType.method_return
    return out


def burst(d: DaemonProc, address: str, count: int) -> dict[str, object]:
    code = (
        "import sys, time\n"
        f"for i in range({count}):\n"
        "    sys.stdout.write(f'\\x1b]777;notify;B{i}@{time.time():.6f};x\\x1b\\\\')\n"
        "sys.stdout.flush(); time.sleep(600)\n"
    )
    ws = d.call("workspace.create", {"name": "burst"})["workspace"]
    with open_dbus_connection(bus=address) as conn:
        rule = MatchRule(type="signal", path=OBJ.object_path, member="NotificationCreated")
        conn.send_and_get_reply(
            new_method_call(message_bus, "AddMatch", "s", (rule.serialise(),)), timeout=5
        )
        d.call("pane.spawn", {"workspace_id": ws["id"], "argv": [sys.executable, "-c", code]})
        seen: list[int] = []
        lat: list[float] = []
        deadline = time.monotonic() + 120
        while len(seen) < count and time.monotonic() < deadline:
            try:
                msg = conn.receive(timeout=5)
            except TimeoutError:
                break
            if msg.header.fields.get(HeaderFields.member) != "NotificationCreated":
                continue
            title = msg.body[2]
            if title.startswith("B") and "@" in title:
                i, stamp = title[1:].split("@")
                seen.append(int(i))
                lat.append(time.time() - float(stamp))
        ordered = seen == sorted(seen)
        alive = (
            conn.send_and_get_reply(new_method_call(message_bus, "GetId"), timeout=5) is not None
        )
    return {
        "sent": count,
        "received": len(seen),
        "in_order": ordered,
        "connection_alive": alive,
        "latency": _ms(lat),
    }


def notify_latency(
    d: DaemonProc, server: NotificationServer, panes: list[str], n: int
) -> dict[str, float | None]:
    out = []
    for pane_id in panes[:n]:
        server.reset()
        t0 = time.monotonic()
        d.call("notify", {"pane_id": pane_id, "title": "bench", "severity": "error"})
        deadline = t0 + 10
        while time.monotonic() < deadline:
            hits = [t for m, t in list(server.received_at) if m == "Notify"]
            if hits:
                out.append(hits[0] - t0)
                break
            time.sleep(0.0005)
    return _ms(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer calls and a 2 000-change burst")
    args = ap.parse_args()
    calls, burst_n, panes_n = (100, 2000, 200) if args.quick else (1000, 20000, 200)
    bus = PrivateBus()
    server = NotificationServer(bus.address)
    root = Path(tempfile.mkdtemp(prefix="stdb-", dir="/tmp"))
    (root / "config" / "signaltty").mkdir(parents=True)
    (root / "config" / "signaltty" / "config.toml").write_text(
        '[notifications]\nsettle_ms = 0\nmode = "quiet"\n'
    )
    d = DaemonProc(root, {**bus.env(), "SIGNALTTY_DBUS": "1", "SIGNALTTY_NOTIFY": "1"})
    report: dict[str, object] = {}
    try:
        d.start()
        deadline = time.monotonic() + 10
        while not d.call("server.status")["dbus"]["name_owned"] and time.monotonic() < deadline:
            time.sleep(0.05)
        report["status_round_trip"] = _ms(round_trips(bus.address, "Status", calls))
        ws = d.call("workspace.create", {"name": "many"})["workspace"]
        panes = [
            d.call("pane.spawn", {"workspace_id": ws["id"], "argv": ["sleep", "600"]})["pane"]["id"]
            for _ in range(panes_n)
        ]
        report["list_panes_200_round_trip"] = _ms(
            round_trips(bus.address, "ListPanes", max(20, calls // 10))
        )
        report["alert_to_notify"] = notify_latency(d, server, panes, 20)
        report["burst"] = burst(d, bus.address, burst_n)
    finally:
        d.stop()
        d.kill_leftovers()
        server.close()
        bus.stop()
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    text = json.dumps(report, indent=2)
    print(text)
    b = report.get("burst") or {}
    ok = isinstance(b, dict) and b.get("received") == b.get("sent") and b.get("in_order")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
