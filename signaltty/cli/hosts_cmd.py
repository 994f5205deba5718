"""``signaltty hosts add|list|remove``: the hosts the local daemon watches over ssh (issue 16
item 3; docs/remote.md "Watched hosts").

``add``/``remove`` edit ``[hosts.NAME]`` in the config file with tomlkit, so every comment and
the layout the person wrote stay as they were outside the table edited; the write is the
installer's safe edit (lock, temp file with the file's mode, atomic rename, nothing written
when a check fails). Then ``hosts.reload`` tells a running daemon; none is started for it.
``list`` asks the daemon (``hosts.list``); without one it shows the config's entries.

These commands act on this host's config and daemon: ``--host`` is refused (exit 2), like
``daemon`` and ``service``. Exit codes: 0 done; 1 the file cannot be read or parsed, an
existing name without ``--replace``, ``remove`` of an unknown name, the daemon refused the
reload; 2 a bad name, target or socket path (nothing touched).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from signaltty.cli import render
from signaltty.cli.errors import CliError
from signaltty.core.mirror import valid_host_name
from signaltty.proto.client import Client, ConnectError, default_socket
from signaltty.proto.envelope import SignalttyError
from signaltty.proto.sshlink import BadHost, parse_host

# the daemon's own bounds on an entry (server/config.py HostEntry)
MAX_TARGET: Final = 1024
MAX_SOCKET: Final = 4096
NO_DAEMON: Final = "no daemon is running: the daemon will watch it when it starts"
FIRST_OUTCOME_S: Final = 15.0  # `add` waits this long for the first connection's outcome


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``hosts`` to the top-level subparsers ``sub``."""
    hs = sub.add_parser(
        "hosts",
        parents=[common],
        help="hosts the local daemon watches over ssh (their panes and prompts here)",
        description="Watched hosts: the local daemon keeps one ssh connection to each host's "
        "daemon and shows its panes read-only as NAME/pane_… (docs/remote.md).",
    ).add_subparsers(dest="sub", required=True, metavar="ACTION")
    config_help = "config.toml to edit (default: the daemon's default, ~/.config/signaltty/…)"
    ad = hs.add_parser(
        "add",
        parents=[common],
        help="watch a host: write [hosts.NAME] to config.toml and tell the daemon",
    )
    ad.add_argument("name", help="short name, the prefix of its pane ids (devbox)")
    ad.add_argument("target", help="what ssh takes: an alias, user@host, ssh://user@host:port")
    ad.add_argument(
        "--remote-socket",
        metavar="PATH",
        help="the daemon's socket on that host, when it is not its default (absolute)",
    )
    ad.add_argument(
        "--remote-command",
        metavar="CMD",
        help="signaltty's command line on that host when it is not on the PATH of an ssh "
        "command (e.g. '~/.local/bin/signaltty'; `bridge` is appended)",
    )
    ad.add_argument("--replace", action="store_true", help="replace an entry of the same name")
    ad.add_argument("--config", help=config_help)
    hs.add_parser("list", parents=[common], help="watched hosts: link state, panes, prompts")
    hs.add_parser(
        "reload",
        parents=[common],
        help="make the daemon read [hosts] again (after editing config.toml by hand)",
    )
    rm = hs.add_parser("remove", parents=[common], help="stop watching a host: remove [hosts.NAME]")
    rm.add_argument("name")
    rm.add_argument("--config", help=config_help)


def run(args: argparse.Namespace) -> int:
    """Run ``hosts <sub>``; returns the exit code.

    Raises:
        CliError: see the module docstring for the codes.
    """
    if args.sub == "list":
        return _list(args)
    if args.sub == "reload":
        return _reload_cmd(args)
    from signaltty.system import paths

    path = paths.config_file(args.config)
    if args.sub == "add":
        entry = _entry(args.name, args.target, args.remote_socket, args.remote_command)
        changed = _edit(path, lambda doc: _add(doc, args.name, entry, args.replace))
        done = f"watching {args.name} ({render.clean(args.target)})"
    else:
        _name(args.name)
        changed = _edit(path, lambda doc: _remove(doc, args.name))
        done = f"no longer watching {args.name}"
    out: dict[str, Any] = {"config": str(path), "changed": changed, "reload": None}
    lines = [f"{done}: {'wrote' if changed else 'unchanged'} {render.clean(path)}"]
    reloaded, problem = _reload(args)
    out["reload"] = reloaded
    if reloaded is None and problem is None:
        lines.append(NO_DAEMON if args.sub == "add" else "no daemon is running")
    elif reloaded is not None:
        names = [h.get("name") for h in reloaded.get("hosts") or []]
        if (args.name in names) != (args.sub == "add"):
            # the daemon re-read another file: started with --config, or another user's default
            problem = (
                f"the running daemon did not pick this up: it reads another config file "
                f"(started with --config?); run `signaltty hosts {args.sub}` with that --config"
            )
        for err in reloaded.get("errors") or []:
            lines.append(f"warning: config: {render.clean(err)}")
        if args.sub == "add" and problem is None:
            # a typo in the target shows now, not later in `hosts list`
            first = _first_outcome(args, args.name)
            out["host"] = first
            if first is not None:
                lines.append(f"{args.name}: {_outcome_text(first)}")
    if args.json:
        print(render.dumps(out | ({"error": problem} if problem else {})))
    else:
        print(render.block("\n".join(lines)))
    if problem:
        print(f"signaltty: {render.clean(problem)}", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------- checks


def _name(name: str) -> None:
    if not valid_host_name(name):
        raise CliError(
            f"bad host name {render.clean(name)[:40]!r}: 1-32 of A-Z a-z 0-9 _ . - "
            "(not starting with . or -); it becomes the prefix of the host's pane ids",
            2,
        )


def _entry(
    name: str, target: str, socket: str | None, remote_command: str | None = None
) -> dict[str, str]:
    """The ``[hosts.NAME]`` table, checked as the daemon will check it (server/config.py).

    Raises:
        CliError: exit 2 for a bad name, target or socket path.
    """
    _name(name)
    if len(target) > MAX_TARGET:
        raise CliError(f"bad ssh target: longer than {MAX_TARGET} characters", 2)
    try:
        parse_host(target)
    except BadHost as exc:
        raise CliError(f"bad ssh target: {exc}", 2) from None
    entry = {"target": target}
    if socket is not None:
        if not socket.startswith("/") or "\x00" in socket or len(socket) > MAX_SOCKET:
            raise CliError("--remote-socket must be an absolute path on that host", 2)
        entry["socket"] = socket
    if remote_command is not None:
        if not remote_command.strip() or any(c in remote_command for c in "\x00\n\r"):
            raise CliError("--remote-command must be one non-empty line", 2)
        entry["remote_command"] = remote_command
    return entry


# ---------------------------------------------------------------- the file


def _edit(path: Path, change: Any) -> bool:
    """Apply ``change(document)`` to the TOML file at ``path`` (created when missing).

    ``change`` returns False for "nothing to do"; it raises ``CliError`` to refuse.

    Returns:
        Whether the file was written.

    Raises:
        CliError: the file cannot be read, is not valid TOML or cannot be written (it is
            left as it was), or ``change`` refused.
    """
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    from signaltty.installer import safefile
    from signaltty.installer.errors import InstallError

    refusal: list[CliError] = []

    def transform(old: str | None) -> str | None:
        try:
            doc = tomlkit.parse(old or "")
        except TOMLKitError as exc:
            raise InstallError(f"{path} is not valid TOML ({exc}); nothing changed") from None
        try:
            if not change(doc):
                return None
        except CliError as exc:
            refusal.append(exc)
            return None
        return tomlkit.dumps(doc)

    try:
        _target, changed = safefile.edit(path, transform)
    except InstallError as exc:
        raise CliError(str(exc)) from None
    if refusal:
        raise refusal[0]
    return changed


def _hosts_table(doc: Any, create: bool) -> Any:
    import tomlkit
    from tomlkit.items import Table

    hosts = doc.get("hosts")
    if hosts is None and create:
        hosts = tomlkit.table(is_super_table=True)
        doc["hosts"] = hosts
        hosts = doc["hosts"]
    if hosts is not None and not isinstance(hosts, Table | dict):
        raise CliError("config: `hosts` is not a table; fix it by hand first")
    return hosts


def _add(doc: Any, name: str, entry: dict[str, str], replace: bool) -> bool:
    import tomlkit

    hosts = _hosts_table(doc, create=True)
    old = hosts.get(name)
    if old is not None and not replace:
        raise CliError(
            f"host {name} is already watched ({render.clean(old.get('target', '?'))}); "
            "--replace replaces it"
        )
    if old is not None and dict(old) == entry:
        return False
    table = tomlkit.table()
    for key, value in entry.items():
        table[key] = value
    table.add(tomlkit.nl())  # a blank line before whatever table follows
    hosts[name] = table
    return True


def _remove(doc: Any, name: str) -> bool:
    hosts = _hosts_table(doc, create=False)
    if hosts is None or name not in hosts:
        raise CliError(f"no watched host {name} in the config (`signaltty hosts list`)")
    del hosts[name]
    if not hosts and getattr(hosts, "is_super_table", lambda: False)():
        del doc["hosts"]  # only the implicit [hosts] that `add` made: nothing of the person's
    return True


# ---------------------------------------------------------------- the daemon


def _reload(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str | None]:
    """``hosts.reload`` on a running daemon: ``(result, None)``, ``(None, None)`` when none
    runs, ``(None, why)`` when it refused or could not be asked."""
    try:
        with Client(default_socket(args.socket)) as cl:
            return cl.call("hosts.reload"), None
    except ConnectError:
        return None, None
    except SignalttyError as exc:
        return None, f"the daemon did not reload its hosts: {exc.code}: {exc.message}"
    except (OSError, ValueError) as exc:
        return None, f"the daemon did not reload its hosts: {exc}"


def _first_outcome(args: argparse.Namespace, name: str) -> dict[str, Any] | None:
    """The host's ``hosts.list`` item once its first attempt ended (connected or
    unreachable), or as it is after ``FIRST_OUTCOME_S``; None when the daemon went away."""
    deadline = time.monotonic() + FIRST_OUTCOME_S
    try:
        with Client(default_socket(args.socket)) as cl:
            while True:
                hosts = cl.call("hosts.list").get("hosts") or []
                h = next((x for x in hosts if isinstance(x, dict) and x.get("name") == name), None)
                if h is None or h.get("state") != "connecting" or time.monotonic() > deadline:
                    return h
                time.sleep(0.2)
    except (ConnectError, SignalttyError, OSError, ValueError):
        return None


def _outcome_text(h: dict[str, Any]) -> str:
    state = h.get("state")
    if state == "connected":
        return f"connected, {h.get('panes', 0)} panes"
    if state == "unreachable":
        return f"unreachable: {render.clean(h.get('error') or '?')[:300]} (retrying)"
    return "still connecting (see `signaltty hosts list`)"


def _reload_cmd(args: argparse.Namespace) -> int:
    """``hosts reload``: the daemon reads ``[hosts]`` again (after a hand edit)."""
    reloaded, problem = _reload(args)
    if problem is not None:
        raise CliError(problem)
    if reloaded is None:
        raise CliError("no daemon is running: it reads [hosts] when it starts")
    if args.json:
        print(render.dumps(reloaded))
    else:
        print(render.block(table(reloaded, time.time())))
    return 0


def _list(args: argparse.Namespace) -> int:
    try:
        with Client(default_socket(args.socket)) as cl:
            r = cl.call("hosts.list")
    except ConnectError:
        return _list_config(args)
    if args.json:
        print(render.dumps(r))
        return 0
    print(render.block(table(r, time.time())))
    return 0


def _list_config(args: argparse.Namespace) -> int:
    """Without a daemon: the entries of the default config file, none connected."""
    import tomllib

    from signaltty.system import paths

    path = paths.config_file(None)
    try:
        raw = tomllib.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise CliError(f"no daemon is running, and {path} cannot be read: {exc}") from None
    found = raw.get("hosts")
    hosts: dict[str, Any] = found if isinstance(found, dict) else {}
    items = [
        {"name": n, "target": v.get("target"), "state": "not watched (no daemon)"}
        for n, v in hosts.items()
        if isinstance(v, dict)
    ]
    if args.json:
        print(render.dumps({"hosts": items, "daemon": False, "config": str(path)}))
        return 0
    lines = [f"no daemon is running; hosts in {path}:"]
    lines += [f"  {n['name']}  {n['target']}" for n in items] or ["  (none)"]
    print(render.block("\n".join(lines)))
    return 0


def _ago(stamp: object, now: float) -> str:
    if not isinstance(stamp, str):
        return ""
    try:
        then = datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return ""
    s = max(0, int(now - then))
    return f"{s}s" if s < 60 else f"{s // 60}m" if s < 3600 else f"{s // 3600}h"


def state_text(h: dict[str, Any], now: float) -> str:
    """``connected 5m`` / ``connecting 2s`` / ``unreachable 1m, retry in 8s``."""
    text = render.clean(h.get("state") or "?")
    since = _ago(h.get("since"), now)
    if since:
        text += f" {since}"
    retry = h.get("retry_at")
    if h.get("state") == "unreachable" and isinstance(retry, str):
        try:
            left = max(0, round(datetime.fromisoformat(retry).timestamp() - now))
            text += f", retry in {left}s"
        except ValueError:
            pass
    return text


def table(r: dict[str, Any], now: float) -> str:
    """``hosts list`` human output: one row per host, then the config entries left out."""
    head = ("NAME", "TARGET", "STATE", "PANES", "ATTENTION", "PERMISSIONS", "ERROR")
    rows = [
        (
            render.clean(h.get("name")),
            render.clean(h.get("target")),
            state_text(h, now),
            str(h.get("panes", 0)),
            str(h.get("attention", 0)),
            str(h.get("pending_permissions", 0)),
            render.clean(h.get("error") or "")[:200],
        )
        for h in r.get("hosts") or []
        if isinstance(h, dict)
    ]
    lines = []
    if rows:
        widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head) - 1)]
        for row in [head, *rows]:
            lines.append(
                "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1]
            )
    else:
        lines.append("no watched hosts (add one: signaltty hosts add NAME SSH_TARGET)")
    lines += [f"config error: {render.clean(e)}" for e in r.get("errors") or []]
    return "\n".join(line.rstrip() for line in lines)
