"""``signaltty integration install|uninstall|status`` (local; no daemon needed).

The installer (tomlkit) is imported only when the command runs, so ``cli.main`` stays light
(tests/test_imports.py). Spec: integrations.md §1 (§1.5 output). Exit codes: 0 success; 1
when any provider failed (the others are still processed).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

# integrations.md §1: the installable providers, in `all` order (= installer.homes.PROVIDERS).
PROVIDERS = ("claude", "codex", "opencode", "cursor", "pi", "gemini")
_TARGETS = (*PROVIDERS, "all")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``integration`` to the top-level subparsers ``sub``."""
    ig = sub.add_parser(
        "integration", parents=[common], help="install, remove or show agent hook integrations"
    ).add_subparsers(dest="sub", required=True, metavar="ACTION")
    for action, text in (
        ("install", "install managed hooks"),
        ("uninstall", "remove managed hooks"),
    ):
        p = ig.add_parser(action, parents=[common], help=text)
        p.add_argument("agent", choices=_TARGETS)
        p.add_argument("--home", help="use DIR instead of the providers' home overrides")
    st = ig.add_parser("status", parents=[common], help="installed hooks and detection manifests")
    st.add_argument("agent", nargs="?", default="all", choices=_TARGETS)
    st.add_argument("--home", help="use DIR instead of the providers' home overrides")


def _line(action: str, report: dict[str, Any]) -> str:
    agent, file, changed = report["agent"], report["file"], report["changed"]
    if action == "install":
        text = f"{'configured' if changed else 'already configured'} {agent} hooks ({file})"
    else:
        text = (
            f"removed {agent} hooks ({file})"
            if changed
            else f"{agent} hooks not installed ({file})"
        )
    if report.get("notice"):
        text += "\n" + report["notice"]
    return text


def _change(args: argparse.Namespace) -> int:
    from signaltty.installer import api, command
    from signaltty.installer.errors import InstallError

    reports: list[dict[str, Any]] = []
    failed = False
    reporter: str | None = None
    for agent in api.select(args.agent):
        try:
            if args.sub == "install":
                reporter = reporter or command.cli_reporter()
                result = api.install(agent, reporter, home=args.home)
            else:
                result = api.uninstall(agent, home=args.home)
            report = result.to_json()
            if not args.json:
                print(_line(args.sub, report))
        except InstallError as exc:
            failed = True
            report = {"agent": agent, "error": str(exc)}
            if not args.json:
                print(f"signaltty: {agent}: {exc}", file=sys.stderr)
        reports.append(report)
    if args.json:
        print(json.dumps({"reports": reports}, indent=2))
    return 1 if failed else 0


def _status(args: argparse.Namespace) -> int:
    from signaltty.installer import api
    from signaltty.system import paths

    out: dict[str, Any] = {
        agent: api.status(agent, home=args.home) for agent in api.select(args.agent)
    }
    directory = paths.agents_dir()
    out["manifests"] = api.manifests(directory)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    lines = []
    for agent in PROVIDERS:
        if agent in out:
            s = out[agent]
            state = "installed" if s["installed"] else "not installed"
            extra = f"; {s['error']}" if s.get("error") else ""
            lines.append(f"{agent}: {state} ({s['file']}){extra}")
    for m in out["manifests"]:
        man = m["manifest"]
        if man["ok"]:
            lines.append(f"manifest {m['name']}: kind={man['kind']} ({man['file']})")
        else:
            lines.append(f"manifest {m['name']}: BROKEN: {man['error']} ({man['file']})")
    if not out["manifests"]:
        lines.append(f"manifests: none ({directory})")
    print("\n".join(lines))
    return 0


def run(args: argparse.Namespace) -> int:
    """Run one ``integration`` action; returns the exit code."""
    if args.sub == "status":
        return _status(args)
    return _change(args)
