"""``signaltty service install|uninstall|status`` (local; no daemon needed).

Exit codes: 0 success (warnings go to stderr), 1 refusal (foreign unit without ``--force``,
live panes on uninstall without ``--force``). Spec: desktop-and-service.md §4.2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``service`` to the top-level subparsers ``sub``."""
    sv = sub.add_parser(
        "service",
        parents=[common],
        help="install, remove or show the user service (systemd/launchd)",
    ).add_subparsers(dest="sub", required=True, metavar="ACTION")
    ins = sv.add_parser("install", parents=[common], help="write and enable the user service")
    ins.add_argument("--no-enable", action="store_true", help="do not enable the unit")
    ins.add_argument("--no-start", action="store_true", help="do not start the unit")
    ins.add_argument(
        "--no-dbus-activation", action="store_true", help="do not write the D-Bus activation file"
    )
    ins.add_argument("--force", action="store_true", help="replace a unit not written by signaltty")
    un = sv.add_parser(
        "uninstall", parents=[common], help="stop, disable and remove the user service"
    )
    un.add_argument("--force", action="store_true", help="uninstall even while panes are live")
    sv.add_parser("status", parents=[common], help="where the service stands")


def run(args: argparse.Namespace) -> int:
    """Run ``service <sub>``; returns the exit code."""
    from signaltty.system import service

    try:
        if args.sub == "status":
            st = service.status()
            if args.json:
                print(json.dumps(st, indent=2))
            else:
                for key, value in st.items():
                    print(f"{key}: {value if value is not None else '-'}")
            return 0
        if args.sub == "install":
            report = service.install(
                enable=not args.no_enable,
                start=not args.no_start,
                dbus_activation=not args.no_dbus_activation,
                force=args.force,
            )
        else:
            report = service.uninstall(force=args.force)
    except service.ServiceError as exc:
        print(f"signaltty: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(
            json.dumps(
                {**report.data, "actions": report.lines, "warnings": report.warnings}, indent=2
            )
        )
    else:
        for line in report.lines:
            print(line)
    for warning in report.warnings:
        print(f"signaltty: warning: {warning}", file=sys.stderr)
    return 0
