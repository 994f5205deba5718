"""The ``signaltty`` command tree (every command except the hook fast path).

Exit codes (protocol.md §10): 0 success; 1 error; 2 usage error; 124 when ``wait`` or
``pane wait-output`` time out. Server errors print ``signaltty: server error CODE: message``.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from signaltty import __version__
from signaltty.cli import completion_cmd, hosts_cmd, integration_cmd, render, service_cmd
from signaltty.cli.errors import CliError
from signaltty.proto.client import (
    Client,
    ConnectError,
    LineTooLong,
    UntrustedServer,
    default_socket,
)
from signaltty.proto.constants import PROTOCOL
from signaltty.proto.envelope import SignalttyError
from signaltty.proto.sshlink import REMOTE_COMMAND_ENV, BadHost, LinkError, Remote

EXIT_TIMEOUT = 124
_KEYS_HELP = (
    "Enter Escape Tab BTab BSpace Space Up Down Left Right Home End PageUp (PPage) "
    "PageDown (NPage) Insert Delete F1-F12, any single character, with C- (Ctrl), M- (Meta) "
    "and S- (Shift) prefixes (C-c, M-x, C-Left). Other words are refused, not typed."
)


def _command(rest: list[str]) -> list[str] | None:
    if rest and rest[0] == "--":
        rest = rest[1:]
    return rest or None


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as JSON on stderr when the command line asked for ``--json``
    (exit 2 kept, protocol.md §10). Subparsers inherit the class (``add_subparsers``)."""

    json_errors = False  # set by main() from the raw argv: parsing has not finished yet

    def error(self, message: str) -> Any:  # argparse's signature; never returns
        if not _Parser.json_errors:
            super().error(message)
        err = {"error": {"code": "USAGE", "message": f"{self.prog}: {message}"}}
        print(json.dumps(err), file=sys.stderr)
        self.exit(2)


def build_parser() -> argparse.ArgumentParser:
    # parents share the subcommands' class (their error() is never called: parents only lend
    # their arguments), which is what argparse's type stubs ask of `parents=`
    common = _Parser(add_help=False)
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print raw JSON results"
    )
    common.add_argument("--socket", default=argparse.SUPPRESS, help="daemon socket path")
    common.add_argument("--host", default=argparse.SUPPRESS, help="the daemon of HOST, over ssh")
    # `top` draws a screen: --json would do nothing there
    socket_only = _Parser(add_help=False)
    socket_only.add_argument("--socket", default=argparse.SUPPRESS, help="daemon socket path")
    socket_only.add_argument(
        "--host", default=argparse.SUPPRESS, help="the daemon of HOST, over ssh"
    )

    ap = _Parser(
        prog="signaltty",
        description="Supervise AI coding agents (and any program) in PTYs owned by a per-user "
        "daemon.",
        epilog="Lifecycle values: unknown working blocked done idle failed exited. "
        "Attention values: none unread warning input_required permission_required error. "
        "A pane id may be shortened to any unique prefix (pane_3f2a), as `pane list` shows it; "
        "so may a workspace id (ws_9c), or give its handle.",
    )
    ap.add_argument("--version", action="version", version=f"signaltty {__version__} ({PROTOCOL})")
    ap.add_argument("--json", action="store_true", default=False, help="print raw JSON results")
    ap.add_argument(
        "--socket",
        default=None,
        help="daemon socket path (default: $SIGNALTTY_SOCKET, else the runtime dir)",
    )
    ap.add_argument(
        "--host",
        default=None,
        help="use the daemon of HOST through `ssh HOST signaltty bridge` (an ssh alias, "
        "user@host, ssh://user@host:port; default: $SIGNALTTY_HOST; docs/remote.md)",
    )
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    d = sub.add_parser("daemon", parents=[common], help="run the server")
    d.add_argument(
        "--detach", action="store_true", help="start in the background unless one is running"
    )
    d.add_argument("--state-dir", help="snapshot, tails and log (default ~/.local/state/signaltty)")
    d.add_argument("--agents-dir", help="user agent manifests directory")
    d.add_argument("--config", help="config.toml path (default ~/.config/signaltty/config.toml)")
    d.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    d.add_argument(
        "--check",
        action="store_true",
        help="load config, manifests and code as a start would, then exit (0: it would start)",
    )
    d.add_argument("--check-handover", type=int, help=argparse.SUPPRESS)  # `restart`'s check

    st = sub.add_parser(
        "status", parents=[common], help="server status, or counts for a status bar"
    )
    st.add_argument(
        "--format",
        choices=["waybar", "i3blocks", "tmux"],
        help="panes needing you in a bar's own format; prints `off` and exits 0 without a daemon "
        "(docs/status-bars.md)",
    )
    sub.add_parser(
        "top",
        parents=[socket_only],
        help="full-screen live view of every pane: attach, mark seen, answer",
        description="Live view of every pane. Keys: up/down or j/k move, Enter attaches (Ctrl+] "
        "comes back), s marks seen, a then y allows once, d denies, n jumps to the next pane "
        "needing you, q quits (docs/status-bars.md).",
    )
    sub.add_parser("schema", parents=[common], help="protocol schema")
    sub.add_parser(
        "restart",
        parents=[common],
        help="upgrade in place: re-exec the daemon with the installed code; every pane keeps "
        "running (what `systemctl --user reload signaltty` runs)",
        description="Checks that the installed signaltty starts and can restore this daemon's "
        "state (`daemon --check`), then the same pid execs it. Pane programs, screens, "
        "states, pending permissions and event seqs carry over; `pane attach` and `subscribe` "
        "reconnect by themselves. If the check fails, the running daemon goes on and this "
        'prints why (exit 1). docs/service.md "Restart in place".',
    )
    s = sub.add_parser(
        "shutdown",
        parents=[common],
        help="stop the daemon; its pane programs end (to upgrade without that: "
        "`signaltty restart`)",
    )
    s.add_argument(
        "--force", action="store_true", help="stop even when panes are live (they are ended)"
    )

    n = sub.add_parser(
        "new", parents=[common], help="new workspace + pane (default command: $SHELL)"
    )
    n.add_argument("--name", help="workspace name (default: workspace)")
    n.add_argument("--cwd", help="working directory (default: the current one)")
    n.add_argument("--agent", help="catalog agent id instead of a command")
    _launch_flags(n)
    _env_flag(n)
    n.add_argument(
        "--attach", action="store_true", help="attach to the new pane at once (Ctrl+] detaches)"
    )
    n.add_argument(
        "cmd_argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...", help="program and arguments"
    )

    w = sub.add_parser(
        "workspace", parents=[common], help="list, show, rename, close workspaces"
    ).add_subparsers(dest="sub", required=True, metavar="ACTION")
    w.add_parser("list", parents=[common], help="workspaces with their panes")
    w.add_parser("get", parents=[common], help="one workspace and its panes").add_argument(
        "id", help="workspace id or handle"
    )
    r = w.add_parser(
        "rename", parents=[common], help="give a workspace a new display name (its handle stays)"
    )
    r.add_argument("id")
    r.add_argument("name")
    c = w.add_parser("close", parents=[common], help="close a workspace and end its panes")
    c.add_argument("id")
    c.add_argument("--signal", help="signal sent to live panes (default HUP)")

    pn = sub.add_parser(
        "pane", parents=[common], help="spawn, read, attach, control panes"
    ).add_subparsers(dest="sub", required=True, metavar="ACTION")
    sp = pn.add_parser(
        "spawn", parents=[common], help="start a program in a new pane of a workspace"
    )
    sp.add_argument("--workspace", required=True)
    sp.add_argument("--cwd")
    sp.add_argument("--agent", help="catalog agent id instead of a command")
    _launch_flags(sp)
    _env_flag(sp)
    sp.add_argument(
        "--hint",
        metavar="KIND",
        help="agent kind the program is (claude, codex, ...: `signaltty agents list`), for a "
        "wrapper script the process name does not reveal; its screen rules then apply",
    )
    sp.add_argument("--label")
    sp.add_argument("--parent-pane")
    sp.add_argument("--relationship", choices=["fork", "subagent"])
    sp.add_argument("--cols", type=int)
    sp.add_argument("--rows", type=int)
    sp.add_argument("cmd_argv", nargs=argparse.REMAINDER)
    sl = pn.add_parser(
        "split", parents=[common], help="start a program in a new pane beside another one"
    )
    sl.add_argument("id")
    sl.add_argument("--cwd")
    sl.add_argument("--agent", help="catalog agent id instead of a command")
    _launch_flags(sl)
    _env_flag(sl)
    sl.add_argument("--label")
    sl.add_argument("cmd_argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    ls = pn.add_parser("list", parents=[common], help="panes with lifecycle, attention and title")
    ls.add_argument("--workspace")
    ls.add_argument("--live", action="store_true", default=None)
    ls.add_argument("--exited", dest="live", action="store_false")
    pn.add_parser(
        "get", parents=[common], help="one pane record and its wait baseline"
    ).add_argument("id")
    pi = pn.add_parser(
        "input",
        parents=[common],
        help="type text or keys into a pane (as if from its terminal)",
        description="Types --data (or stdin), then --keys, into the pane in one write. "
        "Key names as tmux send-keys: " + _KEYS_HELP,
    )
    # optional for argparse only: `--keys Enter pane_x` puts the id among the keys (nargs="+"
    # swallows it); _input_target() takes it back from there
    pi.add_argument("id", nargs="?", help="pane id (before --keys, or as its last word)")
    g = pi.add_mutually_exclusive_group()
    g.add_argument("--data", help="text typed as is")
    g.add_argument("--stdin", action="store_true", help="type what stdin holds")
    pi.add_argument(
        "--keys",
        nargs="+",
        metavar="KEY",
        help="key names typed after the text: Enter C-c Escape Up F5 M-x …",
    )
    rz = pn.add_parser("resize", parents=[common], help="set a pane's terminal size")
    rz.add_argument("id")
    rz.add_argument("--cols", type=int, required=True)
    rz.add_argument("--rows", type=int, required=True)
    sg = pn.add_parser("signal", parents=[common], help="send a signal to a pane's program")
    sg.add_argument("id")
    sg.add_argument(
        "--signal", default="INT", help="INT TERM KILL HUP QUIT WINCH USR1 USR2 (default INT)"
    )
    sg.add_argument("--group", action="store_true", help="signal the foreground process group")
    rd = pn.add_parser("read", parents=[common], help="print a pane's screen or recent output")
    rd.add_argument("id")
    rd.add_argument(
        "--mode",
        choices=["screen", "tail"],
        help="visible screen, or history + screen (default tail)",
    )
    rd.add_argument("--lines", type=int, help="lines of tail (1-5000, default 200)")
    rd.add_argument(
        "--raw",
        action="store_true",
        help="raw output ring, escape sequences kept (shown as \\x1b… when stdout is a terminal)",
    )
    wo = pn.add_parser(
        "wait-output", parents=[common], help="wait until a pane prints a text or pattern"
    )
    wo.add_argument("id")
    wo.add_argument("--match", required=True, help="substring (or regex with --regex) to wait for")
    wo.add_argument("--regex", action="store_true", help="--match is a Python regular expression")
    wo.add_argument("--new-only", action="store_true", help="only output arriving after the call")
    wo.add_argument("--timeout", type=float, help="seconds (default 30); exit 124 on timeout")
    pn.add_parser(
        "attach", parents=[common], help="interactive view; Ctrl+] detaches"
    ).add_argument("id")
    pn.add_parser(
        "explain",
        parents=[common],
        help="why the pane has its state: authority, rules, program status",
    ).add_argument("id")
    for name, what in (
        ("close", "end a pane's program and remove the pane"),
        ("mark-seen", "clear a pane's unread mark"),
        ("resume", "start a restored agent pane again with its own resume command"),
    ):
        x = pn.add_parser(name, parents=[common], help=what)
        x.add_argument("id")
        if name == "close":
            x.add_argument("--signal")
    sm = pn.add_parser(
        "submit", parents=[common], help="paste a prompt into an agent and press Enter"
    )
    sm.add_argument("id")
    g = sm.add_mutually_exclusive_group(required=True)
    g.add_argument("--text")
    g.add_argument("--stdin", action="store_true")
    sm.add_argument("--submit-delay-ms", type=int)
    sm.add_argument("--stall-timeout", type=float)

    dc = sub.add_parser(
        "decision", parents=[common], help="answer a pending decision"
    ).add_subparsers(dest="sub", required=True, metavar="ACTION")
    da = dc.add_parser(
        "answer", parents=[common], help="answer a pending decision with one of its options"
    )
    da.add_argument("--pane", help="the pane whose decision to answer")
    da.add_argument("--decision", help="decision id (with --pane when ids repeat across panes)")
    g = da.add_mutually_exclusive_group(required=True)
    g.add_argument("--option")
    g.add_argument("--verdict", choices=["allow", "deny"])

    pm = sub.add_parser(
        "permission", parents=[common], help="pending permission requests"
    ).add_subparsers(dest="sub", required=True, metavar="ACTION")
    pl = pm.add_parser("list", parents=[common], help="permission requests waiting for an answer")
    pl.add_argument("--pane")
    ps = pm.add_parser(
        "show", parents=[common], help="every field of one pending request (a decision or pane id)"
    )
    ps.add_argument("target")
    pa = pm.add_parser(
        "answer",
        parents=[common],
        help="answer allow|deny for a pane_… (or a watched host's devbox/pane_…) or a decision id",
    )
    pa.add_argument("target")
    pa.add_argument("verdict", choices=["allow", "deny"])
    pa.add_argument(
        "--pane", help="the pane of a decision id (when the id is pending on several panes)"
    )

    nt = sub.add_parser("notify", parents=[common], help="post a notification")
    nt.add_argument("--title", required=True)
    nt.add_argument("--body")
    nt.add_argument("--pane", help="pane to mark (default $SIGNALTTY_PANE)")
    nt.add_argument(
        "--severity",
        choices=["info", "warning", "error"],
        help="info → unread (default), warning, error",
    )

    sb = sub.add_parser("subscribe", parents=[common], help="print events")
    sb.add_argument(
        "--events", help="comma-separated names or globs: agent.*, attention.created, * (default)"
    )
    sb.add_argument("--from-seq", type=int, help="replay retained events after this seq first")

    wt = sub.add_parser("wait", parents=[common], help="wait for a pane state")
    wt.add_argument("--pane", required=True)
    wt.add_argument(
        "--until",
        required=True,
        help="comma-separated outcomes, first satisfied wins: a lifecycle value, an attention "
        "value, seen, attention_cleared or exited (e.g. done,failed)",
    )
    wt.add_argument(
        "--after-baseline",
        help="wait_baseline JSON from `pane get --json`: only newer transitions count",
    )
    wt.add_argument("--timeout", type=float, help="seconds (default 3600); exit 124 on timeout")

    fc = sub.add_parser(
        "focus", parents=[common], help="the pane that needs you most"
    ).add_subparsers(dest="sub", required=True, metavar="ACTION")
    fn = fc.add_parser(
        "next-unread", parents=[common], help="print (or --attach) the most urgent pane"
    )
    fn.add_argument("--attach", action="store_true", help="attach to it")

    at = sub.add_parser("attention", parents=[common], help="panes that need you")
    at.add_argument("--limit", type=int, help="at most this many panes (1-500, default 50)")
    ag = sub.add_parser("agents", parents=[common], help="agent catalog manifests").add_subparsers(
        dest="sub", required=True, metavar="ACTION"
    )
    ag.add_parser(
        "list", parents=[common], help="loaded manifests (bundled and user) and failed files"
    )
    ag.add_parser(
        "reload",
        parents=[common],
        help="re-read the user agents directory (like SIGHUP); exits 1 when a file failed "
        "(the others are active and the failures listed)",
    )
    ag.add_parser(
        "catalog",
        parents=[common],
        help="agents you can launch with --agent: installed on PATH or not",
    ).add_argument("--refresh", action="store_true", help="re-run PATH hydration and look again")
    integration_cmd.add_parser(sub, common)
    service_cmd.add_parser(sub, common)
    hosts_cmd.add_parser(sub, common)
    completion_cmd.add_parser(sub, common)
    # dispatched before argparse by cli/entry.py (stdlib-only fast path); listed for --help only
    for name, what in (
        ("hook-event", "report an agent hook (what agents' hook configuration runs)"),
        ("report-session", "record an agent's session id for a pane"),
        ("bridge", "relay signaltty/1 between stdin/stdout and this host's daemon (for ssh)"),
    ):
        sub.add_parser(name, help=what, add_help=False).add_argument(
            "rest", nargs=argparse.REMAINDER
        )
    return ap


def main(argv: list[str]) -> int:
    """Parse ``argv`` and run one command; returns the exit code.

    Errors go to stderr as one ``signaltty: …`` line, or with ``--json`` as one JSON object
    ``{"error": {"code", "message"}}``. A reader that closes stdout early (``| head``) ends
    the command quietly, as coreutils do (SIGPIPE).
    """
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # a shell asking for completions (cli/completion_cmd.py)
        import argcomplete

        from signaltty.cli import completers

        completers.attach(parser)
        argcomplete.autocomplete(parser)
    # `--json` anywhere before a `--` (after it the words are a pane's command)
    _Parser.json_errors = "--json" in (argv[: argv.index("--")] if "--" in argv else argv)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except CliError as exc:
        return _fail(args, "CLIENT_ERROR", str(exc), exc.code)
    except SignalttyError as exc:
        timeout = exc.code == "TIMEOUT" and (
            args.cmd == "wait" or (args.cmd == "pane" and getattr(args, "sub", "") == "wait-output")
        )
        return _fail(args, exc.code, exc.message, EXIT_TIMEOUT if timeout else 1, server=True)
    except UntrustedServer as exc:
        # nothing was sent: the socket is another user's (issue 10 §1)
        return _fail(args, "UNTRUSTED_SERVER", f"refusing to use the socket: {exc.strerror}", 1)
    except LinkError as exc:  # before ConnectionError: ssh's own reason, not a generic close
        return _fail(args, "REMOTE_UNREACHABLE", f"over ssh to {exc}", 1)
    except LineTooLong as exc:
        return _fail(args, "BAD_SERVER_LINE", str(exc), 1)
    except ConnectError as exc:
        return _fail(
            args,
            "NO_DAEMON",
            f"{exc.strerror} (is the daemon running? start it with `signaltty daemon --detach`)",
            1,
        )
    except (ConnectionError, BrokenPipeError):
        if _stdout_closed():
            return _quiet_sigpipe()
        return _fail(
            args,
            "CONNECTION_CLOSED",
            "the daemon closed the connection (if it restarted in place, run the same command "
            "again: a `wait` keeps its baseline)",
            1,
        )
    except KeyboardInterrupt:
        return 130


def _fail(
    args: argparse.Namespace, code: str, message: str, status: int, *, server: bool = False
) -> int:
    if getattr(args, "json", False):
        print(json.dumps({"error": {"code": code, "message": message}}), file=sys.stderr)
    elif server:
        print(
            f"signaltty: server error {render.clean(code)}: {render.clean(message)}",
            file=sys.stderr,
        )
    else:
        print(f"signaltty: {render.clean(message)}", file=sys.stderr)
    return status


def _stdout_closed() -> bool:
    """Whether the reader of stdout went away (a pipe with no reader polls as an error)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _fd, ev in poller.poll(0))
    except (OSError, ValueError):
        return False


def _quiet_sigpipe() -> int:
    """End like a coreutils program whose reader left: no message, killed by SIGPIPE."""
    import signal

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not complain
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)
    return 128 + signal.SIGPIPE  # not reached on POSIX


# commands that act on this host only (`bridge`, `hook-event` and `report-session` are
# dispatched before argparse; named here so `--host` before them is refused, not ignored)
LOCAL_ONLY = (
    "daemon",
    "integration",
    "service",
    "hosts",  # edits this host's config and asks this host's daemon (docs/remote.md)
    "completion",
    "bridge",
    "hook-event",
    "report-session",
)


def _watched_host(name: str) -> tuple[str, str | None, str | None] | None:
    """``(target, socket, remote_command)`` of ``[hosts.NAME]`` in the default config file,
    so ``--host devbox`` reaches the host whose panes show as ``devbox/…``; None when
    ``name`` is no watched host's name (then it is what ssh takes)."""
    from signaltty.core.mirror import valid_host_name

    if not valid_host_name(name):
        return None
    import tomllib

    from signaltty.system import paths

    try:
        doc = tomllib.loads(paths.config_file(None).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    hosts = doc.get("hosts")
    entry = hosts.get(name) if isinstance(hosts, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("target"), str):
        return None
    socket, command = entry.get("socket"), entry.get("remote_command")
    return (
        entry["target"],
        socket if isinstance(socket, str) else None,
        command if isinstance(command, str) else None,
    )


def _target(args: argparse.Namespace) -> str | Remote:
    """The socket path, or the remote host from ``--host`` / ``$SIGNALTTY_HOST`` (issue 16).

    ``$SIGNALTTY_HOST`` is not read by local-only commands, nor inside a pane (a program
    there talks to its own daemon unless it names ``--host``).

    Raises:
        CliError: ``--host`` on a local-only command, or a host string ssh must not get.
    """
    host = getattr(args, "host", None)
    if host is not None and args.cmd in LOCAL_ONLY:
        # a reporter never exits 2 (Claude Code reads it as "block"; protocol.md §10)
        code = 1 if args.cmd in ("hook-event", "report-session") else 2
        raise CliError(f"--host does not apply to `{args.cmd}`: run it on that host", code)
    if host is None and args.cmd not in LOCAL_ONLY and "SIGNALTTY_DAEMON" not in os.environ:
        host = os.environ.get("SIGNALTTY_HOST") or None
    if host is None:
        return default_socket(args.socket)
    watched = _watched_host(host)
    try:
        if watched is not None:  # a watched host's name: its entry, as the daemon's link
            target, socket, command = watched
            env = dict(os.environ)
            if command:
                env[REMOTE_COMMAND_ENV] = command
            return Remote(target, args.socket or socket, environ=env)
        return Remote(host, args.socket)
    except BadHost as exc:
        raise CliError(str(exc), 2) from None
    except ValueError as exc:
        raise CliError(f"$SIGNALTTY_SSH_COMMAND: {exc}", 2) from None


def _client(args: argparse.Namespace) -> Client:
    return Client(_target(args))


def _out(args: argparse.Namespace, result: Any, human: str | None = None) -> int:
    # human text passes the terminal sanitizer once more as a whole: whatever a formatter
    # missed, no escape sequence or control from a pane or payload reaches the terminal
    if args.json or human is None:
        print(render.dumps(result))
    elif human:
        print(render.block(human))
    return 0


def _run(args: argparse.Namespace) -> int:
    cmd = args.cmd
    if cmd in LOCAL_ONLY:
        _target(args)  # refuses --host
    if cmd == "daemon":
        return _daemon(args)
    if cmd == "integration":
        return integration_cmd.run(args)
    if cmd == "service":
        return service_cmd.run(args)
    if cmd == "completion":
        return completion_cmd.run(args)
    if cmd == "hosts":
        return hosts_cmd.run(args)
    if cmd == "status" and args.format:
        from signaltty.cli import statusbar

        return statusbar.run(_target(args), args.format)
    if cmd == "top":  # prompt_toolkit is loaded by this command only
        from signaltty.cli import top

        return top.run(_target(args))
    with _client(args) as cl:
        if cmd == "status":
            r = cl.call("server.status")
            return _out(args, r, render.status(r))
        if cmd == "schema":
            return _out(args, cl.call("server.schema"))
        if cmd == "restart":
            try:
                r = cl.call("server.restart")
            except ConnectionError:
                raise CliError(
                    "the daemon did not answer after switching to the installed code (it may "
                    "have failed to restore; every pane program is kept where possible): see "
                    "signaltty.log in its state dir (and daemon.out for a detached daemon); "
                    "`signaltty status` shows whether it is back"
                ) from None
            before = r.get("previous_version")
            version = r.get("version")
            change = f"{before} → {version}" if before and before != version else f"{version}"
            return _out(
                args,
                r,
                f"restarted in place: pid {r.get('pid')}, signaltty {change}, "
                f"{r.get('panes_kept')} pane{'' if r.get('panes_kept') == 1 else 's'} kept "
                f"(switch {r.get('switch_ms')} ms)",
            )
        if cmd == "shutdown":
            try:
                r = cl.call("server.shutdown", {"force": True if args.force else None})
            except SignalttyError as exc:
                if exc.code == "PANES_ALIVE":
                    raise CliError(
                        f"{exc.message.split(';')[0]}; `signaltty shutdown --force` ends them"
                    ) from None
                raise
            return _out(args, r, "server stopping")
        if cmd == "new":
            return _new(args, cl)
        if cmd == "workspace":
            return _workspace(args, cl)
        if cmd == "pane":
            return _pane(args, cl)
        if cmd == "notify":
            pane = args.pane or os.environ.get("SIGNALTTY_PANE") or None
            r = cl.call(
                "notify",
                {
                    "pane_id": pane,
                    "title": args.title,
                    "body": args.body,
                    "severity": args.severity,
                },
            )
            return _out(args, r, r["notification"]["id"])
        if cmd == "subscribe":
            return _subscribe(args, cl)
        if cmd == "wait":
            return _wait(args, cl)
        if cmd == "focus":
            r = cl.call("focus.next_unread")
            if args.attach and r.get("pane_id"):
                from signaltty.cli.attach import attach

                _require_terminal("focus next-unread --attach")
                return attach(cl.path, r["pane_id"])
            return _out(args, r, r.get("pane_id") or "(none)")
        if cmd == "decision":
            try:
                r = cl.call(
                    "decision.answer",
                    {
                        "pane_id": args.pane,
                        "decision_id": args.decision,
                        "option_id": args.option,
                        "verdict": args.verdict,
                    },
                )
            except SignalttyError as exc:
                if exc.code == "AMBIGUOUS":
                    raise CliError(_ambiguous(exc, None)) from None
                raise
            return _out(args, r, f"answered {r['decision_id']} with {r['option_id']}")
        if cmd == "permission":
            return _permission(args, cl)
        if cmd == "agents" and args.sub in ("list", "reload"):
            r = cl.call("agents." + args.sub)
            rc = _out(args, r, _agents_table(r))
            # a reload that could not read every file is applied but fails, for scripts
            return 1 if args.sub == "reload" and r.get("failures") else rc
        if cmd == "agents":
            r = cl.call("agents.catalog", {"refresh": True if args.refresh else None})
            return _out(args, r, _catalog_table(r))
        if cmd == "attention":
            r = cl.call("attention.pending", {"limit": args.limit})
            if args.json:
                return _out(args, r)
            short = _short_ids(cl) if r["panes"] else {}
            human = (
                "\n".join(render.attention_line(a, short) for a in r["panes"])
                or "(nothing needs you)"
            )
            return _out(args, r, human)
    raise CliError(f"unknown command {cmd}", 2)


# a daemon that is still starting (restoring a large snapshot) may take this long to listen
DETACH_START_TIMEOUT_S = 10.0


def _daemon(args: argparse.Namespace) -> int:
    socket_flag = args.socket
    if args.config:
        from signaltty.system import paths

        # named on purpose, so its absence is a mistake (the default path may be missing)
        config = paths.config_file(args.config)
        if not config.is_file():
            why = "not a regular file" if config.exists() else "no such file"
            raise CliError(f"config file {config}: {why}")
    if args.detach:
        return _detach(args)
    if args.check:
        from signaltty.server.daemon import check_daemon

        return check_daemon(
            handover_fd=args.check_handover,
            socket_flag=socket_flag,
            state_dir_flag=args.state_dir,
            config_flag=args.config,
            agents_dir_flag=args.agents_dir,
            log_level=args.log_level,
        )
    from signaltty.server.daemon import run_daemon

    return run_daemon(
        socket_flag=socket_flag,
        state_dir_flag=args.state_dir,
        config_flag=args.config,
        agents_dir_flag=args.agents_dir,
        log_level=args.log_level,
    )


def _detach(args: argparse.Namespace) -> int:
    """``daemon --detach`` (desktop-and-service.md §2.1)."""
    from signaltty.system import paths

    sock = default_socket(args.socket)
    status = _try_status(sock)
    if status is not None:
        return _out(args, status, f"server already running on {sock}")
    state = paths.state_dir(args.state_dir)
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "signaltty", "daemon"]
    for flag, value in (
        ("--socket", args.socket),
        ("--state-dir", args.state_dir),
        ("--agents-dir", args.agents_dir),
        ("--config", args.config),
        ("--log-level", args.log_level),
    ):
        if value:
            cmd += [flag, os.path.abspath(value) if flag != "--log-level" else value]
    out_path = state / "daemon.out"
    # From "/": ``python -m`` puts the current directory first on sys.path, and a source
    # checkout there would shadow the installed package.
    cwd = "/"
    with open(out_path, "ab") as out, open(os.devnull, "rb") as devnull:
        start = out.tell()
        child = subprocess.Popen(
            cmd,
            stdin=devnull,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
            cwd=cwd,
        )
    from signaltty.proto import trust

    if trust.DAEMON_ENV in os.environ:
        # started from a pane: the clients here trust only that pane's daemon; the one to
        # wait for is the child just started (same check: pid and start time)
        os.environ[trust.DAEMON_ENV] = trust.identity_token(child.pid)
    deadline = time.monotonic() + DETACH_START_TIMEOUT_S
    while time.monotonic() < deadline:
        status = _try_status(sock)
        if status is not None:
            if status.get("config_error") and not args.json:
                # it runs on defaults: say so now, not only in `status` and the log
                print(
                    "signaltty: warning: config error (running with defaults): "
                    f"{render.clean(status['config_error'])}",
                    file=sys.stderr,
                )
            return _out(args, status, f"server started on {sock} (log: {state / 'signaltty.log'})")
        if child.poll() is not None:
            # the daemon said why on its stderr (one line, startup errors): show it at once
            why = _tail_since(out_path, start) or f"exit status {child.returncode}"
            raise CliError(f"server did not start: {why}")
        time.sleep(0.05)
    raise CliError(f"server did not answer within {DETACH_START_TIMEOUT_S:.0f} s; see {out_path}")


def _tail_since(path: Path, offset: int, limit: int = 4096) -> str:
    """The last non-empty line written to ``path`` after ``offset`` (sanitized), or ``""``."""
    try:
        with open(path, "rb") as f:
            f.seek(max(offset, os.path.getsize(path) - limit))
            data = f.read(limit)
    except OSError:
        return ""
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return ""
    from signaltty.core.sanitize import sanitize_text

    # the daemon's own "signaltty: …" line goes after our "signaltty: server did not start: "
    return sanitize_text(lines[-1].removeprefix("signaltty: "), 300)


def _try_status(sock: str) -> dict[str, Any] | None:
    try:
        with Client(sock, timeout=1.0) as cl:
            return cl.call("server.status")
    except UntrustedServer:
        raise  # a stranger's socket: say so rather than start a daemon that must refuse it
    except (OSError, SignalttyError, ValueError):
        return None


def _agents_table(r: dict[str, Any]) -> str:
    """``agents list|reload`` human output: id/kind/source/file table, then the failures."""
    rows = [(m["id"], m["kind"], m["source"], m["file"]) for m in r.get("manifests", [])]
    head = ("ID", "KIND", "SOURCE", "FILE")
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(3)]
    lines = [f"agents dir: {r.get('dir') or '(none)'}"]
    for row in [head, *rows]:
        lines.append(
            "  ".join(c.ljust(w) for c, w in zip(row[:3], widths, strict=False)) + "  " + row[3]
        )
    failures = r.get("failures", [])
    if failures:
        lines.append(f"{len(failures)} failed:")
        lines += [f"  {f['file']}: {f['error']}" for f in failures]
    return "\n".join(lines)


def _catalog_table(r: dict[str, Any]) -> str:
    """``agents catalog`` human output: installed agents first (with their path), then the rest."""
    hyd = r.get("path_hydration") or {}
    lines = [
        f"PATH hydration: {hyd.get('state', '?')}"
        + (f" (+{len(hyd['added'])} dirs)" if hyd.get("added") else "")
    ]
    for installed in (True, False):
        rows = [a for a in r.get("agents", []) if bool(a["installed"]) is installed]
        if not rows:
            continue
        lines.append("installed:" if installed else "not installed:")
        for a in rows:
            where = (
                a.get("path") if installed else (a.get("install_url") or a.get("homepage") or "")
            )
            if a.get("missing_requires"):
                where = "needs " + ", ".join(a["missing_requires"])
            row = f"  {a['id']:<14} {a['display_name']:<20} {a['integration']:<7} {where or ''}"
            lines.append(row.rstrip())
    return "\n".join(lines)


def _launch_flags(parser: argparse.ArgumentParser) -> None:
    """``--prompt``, ``--bypass``/``--no-bypass``, ``--continue`` for ``--agent`` launches
    (protocol.md §10; agents.md §4.4). Without ``--bypass``/``--no-bypass`` the daemon's
    default applies (config ``agents.automatic_permissions`` for claude, codex, antigravity)."""
    parser.add_argument(
        "--prompt", help="first prompt for --agent (one argument, never a shell string)"
    )
    parser.add_argument(
        "--bypass",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="launch --agent with (or, --no-bypass, without) its automatic-permission flags",
    )
    parser.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue the agent's last conversation",
    )


def _env_pair(text: str) -> tuple[str, str]:
    """``-e KEY=VALUE`` → ``(KEY, VALUE)``; the daemon checks the name (server/spawning.py)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _env_flag(parser: argparse.ArgumentParser) -> None:
    """``-e/--env KEY=VALUE``, repeatable, as ``tmux new-session -e``."""
    parser.add_argument(
        "-e",
        "--env",
        action="append",
        type=_env_pair,
        metavar="KEY=VALUE",
        help="environment variable for the program (repeatable; the last one of a KEY wins)",
    )


def _env_param(args: argparse.Namespace) -> dict[str, str] | None:
    return dict(args.env) if getattr(args, "env", None) else None


def _encode_keys(names: list[str]) -> bytes:
    """``--keys`` names → bytes (core/keys.py); an unknown name is a usage error (exit 2)."""
    from signaltty.core.keys import KeyNameError, encode_keys

    try:
        return encode_keys(names)
    except KeyNameError as exc:
        raise CliError(str(exc), 2) from None


def _input_target(args: argparse.Namespace) -> None:
    """``pane input --keys Enter pane_x``: the ``--keys`` list swallowed the id; take a last
    word that looks like a pane id (``pane_…``, never a key name) back as the id."""
    if args.id is not None:
        return
    if args.keys and _is_pane_ref(args.keys[-1]):
        args.id = args.keys.pop()
        return
    raise CliError("pane input: give the pane id (`signaltty pane input ID --keys Enter`)", 2)


def _short_ids(cl: Client, panes: list[dict[str, Any]] | None = None) -> dict[str, str]:
    """Every pane id → its shortest unique prefix (core/ids.py), unique among ALL panes:
    ``panes`` when it is the full list, else fetched. A watched host's pane (``devbox/pane_…``)
    is shortened among that host's panes and keeps its ``host/`` (what the daemon resolves)."""
    from signaltty.core.ids import short_ids

    if panes is None:
        panes = cl.call("pane.list")["panes"]
    ids = [str(p["id"]) for p in panes]
    out = short_ids(i for i in ids if _PANE_HOST_SEP not in i)
    by_host: dict[str, list[str]] = {}
    for i in ids:
        host, sep, rid = i.partition(_PANE_HOST_SEP)
        if sep:
            by_host.setdefault(host, []).append(rid)
    for host, rids in by_host.items():
        for rid, short in short_ids(rids).items():
            out[f"{host}{_PANE_HOST_SEP}{rid}"] = f"{host}{_PANE_HOST_SEP}{short}"
    return out


# a watched host's pane ids are ``NAME/<its id there>`` (core/mirror.py SEP)
_PANE_HOST_SEP = "/"


def _is_pane_ref(text: str) -> bool:
    """``pane_…`` here, or ``host/pane_…`` of a watched host (never a decision id)."""
    return text.startswith("pane_") or text.partition(_PANE_HOST_SEP)[2].startswith("pane_")


def _launch_params(args: argparse.Namespace) -> dict[str, Any]:
    """The ``prompt``/``bypass``/``continue`` request fields (absent when not given)."""
    return {
        "prompt": args.prompt,
        "bypass": args.bypass,
        "continue": True if args.continue_ else None,
    }


def _split_tail(args: argparse.Namespace) -> list[str] | None:
    """``pane split ID [--cwd] [--agent ID] … [-- cmd]``: after the positional ID argparse's
    REMAINDER holds the options too; parse those written before ``--`` (or all of them when
    no command follows) into ``args`` and return the command, else ``None``."""
    rest = list(args.cmd_argv or [])
    if "--" in rest:
        cut = rest.index("--")
        opts, cmd = rest[:cut], rest[cut + 1 :]
    elif rest and rest[0].startswith("-"):
        opts, cmd = rest, []
    else:
        opts, cmd = [], rest
    if opts:
        tail = argparse.ArgumentParser(prog="signaltty pane split ID", add_help=False)
        tail.add_argument("--json", action="store_true", default=None)
        tail.add_argument("--cwd")
        tail.add_argument("--agent")
        tail.add_argument("--label")
        _launch_flags(tail)
        _env_flag(tail)
        for key, value in vars(tail.parse_args(opts)).items():
            if key == "env" and value:
                setattr(args, key, [*(args.env or []), *value])
            elif value is not None and value is not False:
                setattr(args, key, value)
    return cmd or None


def _abs_cwd(value: str | None, cl: Client) -> str | None:
    """``--cwd`` as the daemon needs it: absolute, read against the directory the command runs
    in (the daemon has its own; a new-user pass found `--cwd .` refused). Through ``--host``
    this directory means nothing there: a relative one is refused.

    Raises:
        CliError: a relative ``--cwd`` with ``--host``.
    """
    if value is None or os.path.isabs(value):
        return value
    if _remote(cl):
        raise CliError(f"--cwd {value}: give an absolute directory on {cl.path} with --host", 2)
    return os.path.abspath(value)


def _remote(cl: Client) -> bool:
    """Whether ``cl`` reaches another host's daemon (``--host``)."""
    return not isinstance(cl.path, str)


def _default_shell(cl: Client) -> list[str]:
    """The program of a pane started without one: ``$SHELL``, here or (``--host``) the
    remote daemon's (what ssh gave the session that started it)."""
    if _remote(cl):
        return ["sh", "-c", 'exec "${SHELL:-sh}"']
    return [os.environ.get("SHELL") or "sh"]


def _require_terminal(what: str) -> None:
    """Refuse an interactive attach without a terminal on stdin, as tmux does ("open
    terminal failed: not a terminal"): raw mode and the screen need one, and nothing is
    written to stdout (no escape codes into a file or pipe)."""
    try:
        ok = os.isatty(sys.stdin.fileno())
    except (OSError, ValueError):
        ok = False
    if not ok:
        raise CliError(f"{what}: not a terminal (stdin must be a terminal to attach)")


def _new(args: argparse.Namespace, cl: Client) -> int:
    if args.attach:  # before the workspace exists: a refusal leaves nothing behind
        _require_terminal("new --attach")
    argv = _command(args.cmd_argv)
    if argv is None and args.agent is None:
        argv = _default_shell(cl)
    # through --host the daemon's default (its home) stands in for a directory of this host
    cwd = _abs_cwd(args.cwd, cl) or (None if _remote(cl) else os.getcwd())
    ws = cl.call("workspace.create", {"name": args.name, "cwd": cwd})["workspace"]
    try:
        r = cl.call(
            "pane.spawn",
            {
                "workspace_id": ws["id"],
                "argv": argv,
                "agent": args.agent,
                **_launch_params(args),
                "env": _env_param(args),
            },
        )
    except SignalttyError:
        cl.call("workspace.close", {"workspace_id": ws["id"]})
        raise
    out: dict[str, Any] = {
        "workspace_id": ws["id"],
        "handle": ws["handle"],
        "pane_id": r["pane"]["id"],
    }
    if r.get("integration") is not None:
        out["integration"] = r["integration"]
    if args.attach:
        # like tmux new-session: straight into the pane; the id is printed after detaching,
        # to come back with `pane attach`
        from signaltty.cli.attach import attach

        code = attach(cl.path, r["pane"]["id"])
        _out(args, out, f"{r['pane']['id']}  (workspace {ws['handle']})")
        return code
    return _out(args, out, f"{r['pane']['id']}  (workspace {ws['handle']})")


def _workspace(args: argparse.Namespace, cl: Client) -> int:
    sub = args.sub
    if sub == "list":
        r = cl.call("workspace.list")
        return _out(
            args,
            r,
            "\n".join(render.workspace_line(w) for w in r["workspaces"]) or "(no workspaces)",
        )
    if sub == "get":
        r = cl.call("workspace.get", {"workspace_id": args.id})
        if args.json:
            return _out(args, r)
        short = _short_ids(cl)
        human = "\n".join(
            [render.workspace_line(r["workspace"])]
            + ["  " + render.pane_line(p, short) for p in r["panes"]]
        )
        return _out(args, r, human)
    if sub == "rename":
        r = cl.call("workspace.rename", {"workspace_id": args.id, "name": args.name})
        return _out(args, r, render.workspace_line(r["workspace"]))
    r = cl.call("workspace.close", {"workspace_id": args.id, "signal": args.signal})
    return _out(args, r, "closed")


def _pane(args: argparse.Namespace, cl: Client) -> int:
    sub = args.sub
    if sub == "spawn":
        argv = _command(args.cmd_argv)
        if argv is None and args.agent is None:
            argv = _default_shell(cl)
        r = cl.call(
            "pane.spawn",
            {
                "workspace_id": args.workspace,
                "argv": argv,
                "agent": args.agent,
                **_launch_params(args),
                "cwd": _abs_cwd(args.cwd, cl),
                "agent_hint": args.hint,
                "label": args.label,
                "parent_pane_id": args.parent_pane,
                "relationship": args.relationship,
                "cols": args.cols,
                "rows": args.rows,
                "env": _env_param(args),
            },
        )
        if args.hint and r["pane"].get("agent", {}).get("kind") == "none":
            # the protocol reads an unknown hint as no agent (protocol.md §5 pane.spawn)
            print(
                f"signaltty: warning: no agent kind {args.hint!r} (signaltty agents list): "
                "the pane gets no agent's rules",
                file=sys.stderr,
            )
        return _out(args, r, r["pane"]["id"])
    if sub == "split":
        argv = _split_tail(args)
        r = cl.call(
            "pane.split",
            {
                "pane_id": args.id,
                "argv": argv,
                "agent": args.agent,
                **_launch_params(args),
                "cwd": _abs_cwd(args.cwd, cl),
                "label": args.label,
                "env": _env_param(args),
            },
        )
        return _out(args, r, r["pane"]["id"])
    if sub == "list":
        r = cl.call("pane.list", {"workspace_id": args.workspace, "live": args.live})
        if args.json:
            return _out(args, r)
        short = _short_ids(cl, None if args.workspace or args.live is not None else r["panes"])
        return _out(
            args, r, "\n".join(render.pane_line(p, short) for p in r["panes"]) or "(no panes)"
        )
    if sub == "get":
        r = cl.call("pane.get", {"pane_id": args.id})
        if args.json:
            return _out(args, r)
        return _out(args, r, render.pane_detail(r, _short_ids(cl)))
    if sub == "input":
        _input_target(args)
        if not (args.stdin or args.data is not None or args.keys):
            raise CliError("pane input: give --data, --stdin or --keys", 2)
        keys = _encode_keys(args.keys or [])  # before reading stdin: a bad name loses nothing
        data = sys.stdin.buffer.read() if args.stdin else (args.data or "").encode()
        r = cl.call(
            "pane.input", {"pane_id": args.id, "data_b64": base64.b64encode(data + keys).decode()}
        )
        return _out(args, r, "")
    if sub == "resize":
        r = cl.call("pane.resize", {"pane_id": args.id, "cols": args.cols, "rows": args.rows})
        return _out(args, r, "")
    if sub == "signal":
        r = cl.call(
            "pane.signal", {"pane_id": args.id, "signal": args.signal, "group": args.group or None}
        )
        return _out(args, r, "")
    if sub == "read":
        params: dict[str, Any] = {"pane_id": args.id, "mode": args.mode, "lines": args.lines}
        if args.raw:
            params["strip_ansi"] = False
        r = cl.call("pane.read", params)
        if args.json:
            return _out(args, r)
        # the pane's text is sanitized; --raw keeps escape sequences, shown (\x1b…) rather
        # than acted on when stdout is a terminal
        text = r["text"]
        if not args.raw:
            text = render.block(text)
        elif sys.stdout.isatty():
            text = render.visible(text)
        sys.stdout.write(text + ("" if text.endswith("\n") or not text else "\n"))
        return 0
    if sub == "wait-output":
        r = cl.call(
            "pane.wait_for_output",
            {
                "pane_id": args.id,
                "match": args.match,
                "regex": args.regex or None,
                "new_only": args.new_only or None,
                "timeout_s": args.timeout,
            },
        )
        return _out(args, r, r["matched_line"])
    if sub == "attach":
        from signaltty.cli.attach import attach

        _require_terminal("pane attach")
        return attach(cl.path, args.id)
    if sub == "close":
        r = cl.call("pane.close", {"pane_id": args.id, "signal": args.signal})
        return _out(args, r, "")
    if sub == "resume":
        if not args.json:
            # said before it runs: what the restored pane adds to the agent's resume command
            before = cl.call("pane.get", {"pane_id": args.id})["pane"]
            extra = render.launch_lines(before.get("agent") or {})
            print(
                render.block(
                    "\n".join([f"resuming {before['id']} with:", *extra])
                    if extra
                    else f"resuming {before['id']} (no added flags or env)"
                ),
                flush=True,
            )
            planned = (before.get("agent") or {}).get("resume_argv") or []
            if planned:  # the whole command, kept launch options (--model) included
                print(
                    render.block("  command " + " ".join(render.clean(a) for a in planned)),
                    flush=True,
                )
        r = cl.call("pane.resume", {"pane_id": args.id})
        agent = r["pane"]["agent"]
        ran = " ".join(render.clean(a) for a in agent["resume_argv"] or [])
        # the argv run holds the flags; the environment added is said apart
        env = render.launch_lines({"config_env": agent.get("config_env")})
        where = f"  in {render.clean(r['pane']['cwd'])}"
        return _out(args, r, "\n".join([f"resumed {r['pane']['id']}: {ran}", where, *env]))
    if sub == "explain":
        r = cl.call("pane.explain", {"pane_id": args.id})
        return _out(args, r, render.explain(r))
    if sub == "submit":
        text = sys.stdin.read() if args.stdin else args.text
        r = cl.call(
            "pane.submit",
            {
                "pane_id": args.id,
                "text": text,
                "submit_delay_ms": args.submit_delay_ms,
                "stall_timeout_s": args.stall_timeout,
            },
        )
        return _out(args, r, f"submitted ({r['outcome']})")
    r = cl.call("pane.mark_seen", {"pane_id": args.id})
    return _out(args, r, "")


def _permission(args: argparse.Namespace, cl: Client) -> int:
    """``permission list|show|answer`` (integrations.md §4.3)."""
    if args.sub == "show":
        items = cl.call("permission.list", {"pane_id": None})["permissions"]
        # showing is harmless, so a decision id may be shortened like a pane id; a pane
        # reference matches pane ids only (a watched host may name a decision `pane_…` to
        # make the person's own request ambiguous: watched-host trust pass, F6)
        pane_ref = _is_pane_ref(args.target or "")
        found = (
            [
                x
                for x in items
                if (not pane_ref and str(x["decision_id"]).startswith(args.target))
                or str(x["pane_id"]).startswith(args.target)
            ]
            if args.target
            else []
        )
        if len(found) != 1:
            what = "no pending request" if not found else f"{len(found)} pending requests"
            raise CliError(
                f"{what} for {render.clean(args.target)[:80]}: name a pane id, or a decision id "
                "or its start (`signaltty permission list` shows them)",
                1,
            )
        if args.json:
            return _out(args, {"permission": found[0]})
        return _out(args, found[0], render.permission_detail(found[0]))
    if args.sub == "list":
        r = cl.call("permission.list", {"pane_id": args.pane})
        if args.json:
            return _out(args, r)
        short = _short_ids(cl) if r["permissions"] else {}
        lines = [
            render.permission_line(x, short) for x in r["permissions"]
        ]  # with what is approved
        return _out(args, r, "\n".join(lines) or "no pending permissions")
    params: dict[str, Any] = {"verdict": args.verdict}
    if _is_pane_ref(args.target):
        # either may be a short id (a prefix of the other)
        if args.pane and not (
            args.pane.startswith(args.target) or args.target.startswith(args.pane)
        ):
            raise CliError("--pane names another pane than the target", 2)
        params["pane_id"] = args.target
    else:
        params["decision_id"] = args.target
        if args.pane:
            params["pane_id"] = args.pane
    try:
        r = cl.call("decision.answer", params)
    except SignalttyError as exc:
        if exc.code == "AMBIGUOUS":
            raise CliError(_ambiguous(exc, args.verdict)) from None
        raise
    return _out(args, r, f"answered {r['decision_id']} with {r['option_id']}")


def _ambiguous(exc: SignalttyError, verdict: str | None) -> str:
    """The ``AMBIGUOUS`` error as advice: which panes, and the command naming one."""
    from signaltty.core.sanitize import sanitize_text

    details = exc.details if isinstance(exc.details, dict) else {}
    panes = [sanitize_text(str(x), 64) for x in details.get("pane_ids") or [] if x]
    decision = sanitize_text(str(details.get("decision_id") or "?"), 128)
    if not panes or details.get("decision_id") is None:  # a short pane id matching several
        return f"server error AMBIGUOUS: {sanitize_text(exc.message, 500)}"
    lines = [f"decision {decision} is pending on {len(panes)} panes: {', '.join(panes)}"]
    if verdict is not None:
        lines += [
            f"name the pane: signaltty permission answer {decision} {verdict} --pane {p}"
            for p in panes
        ]
    else:
        lines.append("name the pane with --pane")
    return "\n".join(lines)


def _subscribe(args: argparse.Namespace, cl: Client) -> int:
    """Print events; across an in-place restart of the daemon (``server.restarting``, issue
    15) reconnect and go on from the last seq printed, so nothing is missed or repeated."""
    from signaltty.cli.attach import REATTACH_WITHIN_S

    wanted = [e.strip() for e in args.events.split(",") if e.strip()] if args.events else None
    # the restart notice is asked for too, and shown only when it was asked for
    events = [*wanted, "server.restarting"] if wanted else None
    r = cl.call("subscribe", {"events": events, "from_seq": args.from_seq})
    if not r.get("subscribed"):
        _out(args, r, f"not subscribed: {r.get('replay', {}).get('status')}")
        return 1
    if args.json:
        print(render.dumps(r), flush=True)
    last_seq = r.get("seq")
    restarting = False
    while True:
        ev = cl.next_event()
        if ev is None:
            if not isinstance(last_seq, int):
                return 0
            # without the notice (lost with the connection under load): one quick try
            again = _resubscribe(args, events, last_seq, REATTACH_WITHIN_S if restarting else 0)
            if again is None:
                if restarting:
                    raise CliError(
                        f"the daemon did not come back within {REATTACH_WITHIN_S:g} s of "
                        f"restarting, or came back without the events after seq {last_seq}"
                    )
                return 0
            restarting = False
            cl.close()
            cl = again
            continue
        name = str(ev.get("event") or "")
        if isinstance(ev.get("seq"), int):
            last_seq = ev["seq"]
        restarting = restarting or name == "server.restarting"
        if wanted and not any(
            p == "*" or p == name or (p.endswith(".*") and name.startswith(p[:-1])) for p in wanted
        ):
            continue
        print(
            render.dumps(ev) if args.json else render.event_line(ev, time.strftime("%H:%M:%S")),
            flush=True,
        )


def _resubscribe(
    args: argparse.Namespace, events: list[str] | None, from_seq: int, within_s: float
) -> Client | None:
    """A subscription to the restarted daemon replaying what came after ``from_seq``; tries
    for ``within_s`` (0: once — a daemon that shut down refuses the connect at once)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            cl = Client(_target(args))
        except OSError:
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.2)
            continue
        try:
            r = cl.call("subscribe", {"events": events, "from_seq": from_seq})
        except (OSError, ConnectionError):
            cl.close()
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.2)
            continue
        if r.get("subscribed"):
            return cl
        cl.close()
        return None


def _wait(args: argparse.Namespace, cl: Client) -> int:
    until: Any = [u.strip() for u in args.until.split(",") if u.strip()]
    if len(until) == 1:
        until = until[0]
    after = None
    if args.after_baseline:
        try:
            after = json.loads(args.after_baseline)
        except ValueError as exc:
            raise CliError(f"--after-baseline is not JSON: {exc}") from None
    r = cl.call(
        "wait", {"pane_id": args.pane, "until": until, "after": after, "timeout_s": args.timeout}
    )
    return _out(args, r, f"{r['outcome']} ({r['lifecycle']}/{r['attention']})")
