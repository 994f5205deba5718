"""``signaltty hook-event`` and ``signaltty report-session``: the reporter fast path.

Runs inside agents on every hook, so it starts light (issue 12: ≤ 2× a bare ``python``): no
``json``, ``socket``, ``re``, ``enum`` or ``typing``, but :mod:`signaltty.cli.fastjson` and
``_socket`` through :mod:`signaltty.proto.connect`, which makes the blocking client's trust
checks (tests/cli/test_fastpath.py lists what it may load). It keeps stdout empty unless
asked (Codex ``Stop`` hooks fail on non-JSON stdout), writes one line of feedback on stderr,
and never exits 2 (Claude Code reads exit 2 as "block"). Spec: integrations.md §2,
protocol.md §6.
"""

from __future__ import annotations

import _socket
import os
import sys

from signaltty.cli import fastjson
from signaltty.proto import connect, sockpath, trust
from signaltty.proto.constants import PROTOCOL

# ``typing`` costs ~6 ms to import, which every agent hook would pay (README "Dependency
# rules"); annotations are strings here (PEP 563), so the names are only needed by checkers.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_PAYLOAD = 256 * 1024  # what the daemon takes (core.limits.MAX_HOOK_PAYLOAD)
# What we read from the agent: a larger payload (a PermissionRequest for a big file write)
# is shrunk for display, never refused (issue 11 item 11); past this it is not parsed at all.
MAX_READ = 16 * 1024 * 1024
TRUNCATED_KEY = "signaltty_truncated"
CONNECT_TIMEOUT_S = 1.0
RESPONSE_TIMEOUT_S = 5.0
WAIT_RESPONSE_TIMEOUT_S = 130.0


class _Usage(Exception):
    pass


def _err(msg: str) -> None:
    sys.stderr.write(f"signaltty: {msg}\n")


def _parse(argv: list[str], spec: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """Tiny option parser (argparse exits 2 on usage errors, which hooks must never do).

    ``spec`` maps an option to ``"value"`` or ``"flag"``; ``--opt=value`` is accepted.
    """
    opts: dict[str, Any] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i + 1 :]
            break
        if arg.startswith("--"):
            name, eq, inline = arg.partition("=")
            kind = spec.get(name)
            if kind is None:
                raise _Usage(f"unknown option {name}")
            if kind == "flag":
                if eq:
                    raise _Usage(f"{name} takes no value")
                opts[name] = True
            elif eq:
                opts[name] = inline
            else:
                if i + 1 >= len(argv):
                    raise _Usage(f"{name} needs a value")
                i += 1
                opts[name] = argv[i]
        else:
            rest.append(arg)
        i += 1
    return opts, rest


HOOK_SPEC = {
    "--agent": "value",
    "--event": "value",
    "--pane": "value",
    "--payload-stdin": "flag",
    "--wait-for-answer": "flag",
    "--wait-timeout": "value",
    "--message": "value",
    "--body": "value",
    "--title": "value",
    "--severity": "value",
    "--decision": "value",
    "--json": "flag",
    "--socket": "value",
}


def hook_event(argv: list[str]) -> int:
    """``signaltty hook-event …`` → exit code (0 or 1, never 2)."""
    try:
        opts, rest = _parse(argv, HOOK_SPEC)
        if "--agent" not in opts:
            raise _Usage("--agent is required")
        payload: Any = None
        unparsed = False
        if opts.get("--payload-stdin"):
            data = sys.stdin.buffer.read(MAX_READ + 1)
            if len(data) > MAX_READ:
                while sys.stdin.buffer.read(1 << 20):  # the agent must not block on a full pipe
                    pass
                data, unparsed = b"", True
            if data.strip():
                try:
                    payload = fastjson.loads(data)
                except (ValueError, RecursionError):
                    _err("invalid payload JSON")
                    return 1
                # the daemon measures the JSON it receives, not these bytes: escapes and
                # number spellings change the length (sixth attack pass, finding 5)
                if len(data) > MAX_PAYLOAD // 8 and _size(payload) > MAX_PAYLOAD:
                    payload = shrink_payload(payload, MAX_PAYLOAD)
            elif unparsed:
                payload = {TRUNCATED_KEY: True}
        elif rest:
            try:
                payload = fastjson.loads(rest[-1])
            except ValueError:
                _err("invalid payload JSON")
                return 1
        event = opts.get("--event")
        if event is None and isinstance(payload, dict) and isinstance(payload.get("type"), str):
            event = payload["type"]
        if (
            event is None
            and isinstance(payload, dict)
            and isinstance(payload.get("hook_event_name"), str)
        ):
            event = payload["hook_event_name"]
        if not event:
            raise _Usage("--event is required (or a payload with a type)")
        params: dict[str, Any] = {
            "agent": opts["--agent"],
            "event": event,
            "client_pid": os.getpid(),
            "payload": payload,
        }
        for opt, key in (
            ("--message", "message"),
            ("--body", "body"),
            ("--title", "title"),
            ("--severity", "severity"),
        ):
            if opt in opts:
                params[key] = opts[opt]
        if "--decision" in opts:
            try:
                params["decision"] = fastjson.loads(opts["--decision"])
            except ValueError:
                _err("invalid decision JSON")
                return 1
        # an unparsed payload cannot meet the native contract: report the state, no wait
        waiting = bool(opts.get("--wait-for-answer")) and not unparsed
        if waiting:
            params["wait_for_answer"] = True
            if "--wait-timeout" in opts:
                try:
                    params["wait_timeout_s"] = float(opts["--wait-timeout"])
                except ValueError:
                    raise _Usage("--wait-timeout needs a number of seconds") from None
    except _Usage as exc:
        _err(str(exc))
        return 1
    pane = opts.get("--pane") or os.environ.get("SIGNALTTY_PANE") or None
    if pane:
        params["pane_id"] = pane
        if not opts.get("--pane"):
            # inherited (a tmux server keeps the pane it started in): the daemon applies it
            # only if this process really runs in that pane (issue 10 §6)
            params["pane_from_env"] = True
    return _send(
        "hook-event",
        params,
        socket_flag=opts.get("--socket"),
        has_pane_context=pane is not None,
        as_json=bool(opts.get("--json")),
        waiting=waiting,
    )


def _size(value: Any) -> int:
    """The payload's length as the daemon measures it (compact JSON, characters); nesting
    too deep to encode counts as too large (it is then cut, see ``_cut``)."""
    try:
        return len(fastjson.dumps(value, ensure_ascii=False))
    except RecursionError:
        return MAX_READ


# Deeper than this, a shrunk payload keeps a marker instead of the rest (the model writes
# tool_input: 500+ levels once overflowed the recursion in here; sixth attack pass).
MAX_DEPTH = 32


def _cut(value: Any, cap: int, depth: int = 0) -> Any:
    if isinstance(value, str):
        return (
            value if len(value) <= cap else value[:cap] + f"… [{len(value) - cap} characters cut]"
        )
    if isinstance(value, list | dict) and depth >= MAX_DEPTH:
        return "… [nested too deep]"
    if isinstance(value, list):
        return [_cut(v, cap, depth + 1) for v in value[: max(1, cap // 8)]]
    if isinstance(value, dict):
        return {
            k[:256]: _cut(v, cap, depth + 1) for k, v in list(value.items())[: max(1, cap // 8)]
        }
    return value


def shrink_payload(payload: Any, limit: int) -> Any:
    """A hook payload cut to at most ``limit`` JSON characters, for display only.

    Strings are cut (marked ``… [N characters cut]``), then long arrays and objects, with a
    smaller cap each round; the top-level keys stay (``session_id``, ``tool_name`` and an
    object ``tool_input`` keep a permission request answerable) and ``signaltty_truncated``
    is set. The agent never sees this copy: our verdict does not echo the input.
    """
    if not isinstance(payload, dict):
        return None
    cap = limit // 4
    while cap >= 16:
        out = {k: (_cut(v, cap) if k != "session_id" else v) for k, v in payload.items()}
        out[TRUNCATED_KEY] = True
        if _size(out) <= limit:
            return out
        cap //= 2
    keep = ("session_id", "tool_name", "hook_event_name", "cwd", "turn_id")
    out = {
        k: payload[k] for k in keep if isinstance(payload.get(k), str) and len(payload[k]) <= 1024
    }
    if isinstance(payload.get("tool_input"), dict):
        out["tool_input"] = {}
    out[TRUNCATED_KEY] = True
    return out


# What a hook sent to a server that is not provably our daemon may carry: the session and
# the event, nothing of the tool call (no tool_name, tool_input, message or transcript path).
STATE_KEYS = ("session_id", "hook_event_name", "turn_id")


def state_only(payload: Any) -> Any:
    """A hook payload reduced to ``STATE_KEYS`` (short strings only), for a server whose
    verdict the reporter will not obey: the state report stays, what the agent is about to
    run does not leave the process. ``None`` for anything but an object."""
    if not isinstance(payload, dict):
        return None
    return {
        k: payload[k]
        for k in STATE_KEYS
        if isinstance(payload.get(k), str) and len(payload[k]) <= 1024
    }


SESSION_SPEC = {
    "--pane": "value",
    "--session": "value",
    "--agent": "value",
    "--resume-argv": "value",
    "--json": "flag",
    "--socket": "value",
}


def report_session(argv: list[str]) -> int:
    """``signaltty report-session …`` → exit code (0 or 1, never 2)."""
    try:
        opts, rest = _parse(argv, SESSION_SPEC)
        if rest:
            raise _Usage(f"unexpected argument {rest[0]}")
        if "--session" not in opts:
            raise _Usage("--session is required")
        pane = opts.get("--pane") or os.environ.get("SIGNALTTY_PANE")
        if not pane:
            raise _Usage("--pane is required (or $SIGNALTTY_PANE)")
        params: dict[str, Any] = {"pane_id": pane, "agent_session_id": opts["--session"]}
        if "--agent" in opts:
            params["agent"] = opts["--agent"]
        if "--resume-argv" in opts:
            try:
                params["resume_argv"] = fastjson.loads(opts["--resume-argv"])
            except ValueError:
                raise _Usage("--resume-argv is not JSON") from None
    except _Usage as exc:
        _err(str(exc))
        return 1
    return _send(
        "report-session",
        params,
        socket_flag=opts.get("--socket"),
        has_pane_context=True,
        as_json=bool(opts.get("--json")),
        waiting=False,
    )


def _send(
    method: str,
    params: dict[str, Any],
    *,
    socket_flag: str | None,
    has_pane_context: bool,
    as_json: bool,
    waiting: bool,
) -> int:
    path = sockpath.resolve(socket_flag)
    try:
        sock = connect.open_trusted(path, CONNECT_TIMEOUT_S, _socket.socket)
    except connect.UntrustedServer as exc:
        # Not our daemon: nothing was sent. Exit 0 with stdout empty, so the agent goes on
        # by itself (its own permission dialog) instead of obeying a stranger (issue 10 §1).
        _err(f"not reporting {method}: {exc.strerror}")
        return 0
    except connect.ConnectError:
        if not has_pane_context:
            return 0  # a hook outside signaltty (no daemon, no pane): nothing to report
        _err(f"server not reachable at {path}")
        return 1
    # (trust.verdict_source_problem: $SIGNALTTY_DAEMON, or else the server is one of this
    # process's ancestors, still alive with that pid)
    problem = trust.verdict_source_problem(sock, path) if waiting else None
    if problem is not None:
        # Not provably our own daemon (no $SIGNALTTY_DAEMON and not an ancestor: an agent in
        # an ordinary terminal, or a cleaned environment): report the state only, never wait
        # for or print a verdict; the agent asks in its own terminal (issue 10, pass 4, N1/N6).
        # The real daemon drops a verdict for a reporter outside panes anyway.
        # Nor does it tell that server what the agent is about to do: the payload shrinks to
        # the fields that name the session and the event (attack pass 5, L2).
        _err(f"not waiting for an answer: {problem}; the agent asks in its own terminal")
        params = {k: v for k, v in params.items() if k not in ("wait_for_answer", "wait_timeout_s")}
        params["payload"] = state_only(params.get("payload"))
    try:
        sock.sendall(_request(method, params))
        msg = _read_message(
            sock, WAIT_RESPONSE_TIMEOUT_S if waiting and problem is None else RESPONSE_TIMEOUT_S
        )
    except (TimeoutError, OSError, ValueError):
        msg = None
    finally:
        sock.close()
    if problem is not None:
        return 0  # stdout empty, one line on stderr: what the agent needs to go on by itself
    if msg is None:
        if not waiting:
            _err("no answer from the server")
        return 0 if waiting else 1
    if not msg.get("ok"):
        error = msg.get("error") or {}
        _err(f"server error {error.get('code')}: {error.get('message')}")
        return 1
    result = msg.get("result") or {}
    if as_json:
        sys.stdout.write(fastjson.dumps(result) + "\n")
    elif waiting:
        verdict = result.get("native_verdict")
        if verdict is not None:
            sys.stdout.write(fastjson.dumps(verdict) + "\n")
    sys.stderr.write(_feedback(method, params, result) + "\n")
    return 0


def _request(method: str, params: dict[str, Any]) -> bytes:
    """One request line, as ``Client.send`` writes it (protocol.md §2): a process sends one."""
    envelope = {
        "protocol": PROTOCOL,
        "id": f"c{os.getpid()}-1",
        "method": method,
        "params": {k: v for k, v in params.items() if v is not None},
    }
    # "replace": a lone surrogate from the agent's payload must not make the line unsendable
    return fastjson.dumps(envelope, ensure_ascii=False).encode("utf-8", "replace") + b"\n"


def _read_message(sock: _socket.socket, timeout: float) -> dict[str, Any] | None:
    """The first response line as a dict; None when the server closes first.

    Raises:
        TimeoutError: a read waited ``timeout`` seconds for nothing.
        ValueError: the line is not JSON.
    """
    buf = bytearray()
    sock.settimeout(timeout)
    while True:
        nl = buf.find(b"\n")
        if nl >= 0:
            return dict(fastjson.loads(bytes(buf[:nl])))
        chunk = sock.recv(1 << 16)
        if not chunk:
            return None
        buf += chunk


def _feedback(method: str, params: dict[str, Any], result: dict[str, Any]) -> str:
    if method == "report-session":
        pane = result.get("pane") or {}
        return (
            f"session {params['agent_session_id']} recorded for {pane.get('id', params['pane_id'])}"
        )
    name = f"{params['agent']}:{params['event']}"
    if result.get("dropped"):
        return f"dropped {name} ({result.get('reason')})"
    if result.get("pane_id") is None:
        return f"no pane for {name}"
    return (
        f"accepted {name} lifecycle={result.get('lifecycle')} attention={result.get('attention')}"
    )


USAGE = {
    "hook-event": (
        "usage: signaltty hook-event --agent AGENT [--event EVENT] [options] [PAYLOAD_JSON]\n"
        """
Report one agent hook to the daemon (run by the agents' hook configuration that
`signaltty integration install` writes; exits 0 or 1, never 2).

options:
  --agent AGENT          agent kind (claude, codex, opencode, cursor, pi, …)
  --event EVENT          hook name (default: the payload's hook_event_name or type)
  --pane PANE            pane id (default: $SIGNALTTY_PANE)
  --payload-stdin        read the hook payload JSON from stdin (over 256 KiB: cut for display)
  --wait-for-answer      wait for the person's answer and print the agent's verdict JSON
  --wait-timeout SECONDS how long to wait for that answer: 1 to 120 (default 120);
                         shorter for an agent that hides its own dialog while no one
                         can answer elsewhere (config permissions.hidden_wait_s)
  --message/--body/--title TEXT, --severity info|warning|error
                         notification text for agents without a payload
  --decision JSON        a decision the agent offers (options to answer with)
  --json                 print the daemon's result as JSON
  --socket PATH          daemon socket path
"""
    ),
    "report-session": """usage: signaltty report-session --session ID [--pane PANE] [options]

Record an agent's session id for a pane, so that `signaltty pane resume` can continue it.

options:
  --session ID           the agent's session id
  --pane PANE            pane id (default: $SIGNALTTY_PANE)
  --agent AGENT          agent kind
  --resume-argv JSON     argv that resumes the session (a JSON list of strings)
  --json                 print the daemon's result as JSON
  --socket PATH          daemon socket path
""",
}


def main(command: str, argv: list[str]) -> int:
    """Dispatch a fast-path command; any unexpected failure exits 1, never 2."""
    if argv[:1] in (["--help"], ["-h"]):
        sys.stdout.write(USAGE[command])
        return 0
    try:
        if command == "hook-event":
            return hook_event(argv)
        return report_session(argv)
    except KeyboardInterrupt:
        return 1
    except Exception as exc:  # noqa: BLE001 - a hook must never break its agent
        _err(f"internal error: {exc!r}")
        return 1
