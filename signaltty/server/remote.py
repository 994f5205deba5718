"""Hosts this daemon watches over ssh: one bridge per host, their panes mirrored read-only.

This module owns the links (ssh, the handshake, requests, reconnecting) and the hosts as a
whole (``RemoteHosts``: config, lookups, forwarded answers); what arrives over a link is
applied by its ``remote_mirror.HostMirror``.

For every ``[hosts.NAME]`` of the config (``signaltty hosts add``; docs/remote.md "Watched
hosts") one supervised task keeps one ``ssh … signaltty bridge`` connection to that host's
daemon, however many panes it has. On connecting it subscribes to the state events and
reads ``pane.list`` and ``workspace.list``; from then on the events keep a mirror of the
remote panes up to date. Mirrored panes live here, never in ``Store.panes``: their ids are
``NAME/<remote id>``, they are never persisted, run nothing and cannot be attached. What the
local surfaces need of them — ``pane.list``, ``pane.get``, ``attention.pending``,
``permission.list``, ``server.status.hosts``, D-Bus ``ListPanes``, desktop notifications —
they read through :class:`RemoteHosts`, and their changes are published on the local event
bus under those ids (``Store.emit_mirrored``), so ``top``, ``subscribe`` and D-Bus signals
see them.

Trust (issue 16 "Bad input"): what a remote sends is cleaned by ``core.mirror`` (ids plain,
text sanitized and capped, enums known, at most ``MAX_PANES`` panes); one line is at most
``MAX_LINE``; a line that is no message ends the link (``BadLine``). This daemon sends a
remote only reads on its own (``subscribe``, the two lists, ``pane.get`` after a pane's
transitions);
``decision.answer`` and ``pane.mark_seen`` are sent only for a local caller that passed the
self-approval guard or a notification button the person pressed
(``hooks.HookService.answer``). Nothing a remote sends can make this daemon answer anything.

Reconnecting: after a link ends the host is ``unreachable`` (its panes stay, marked
``reachable: false``) and the next attempt comes after 1, 2, 4 … 60 s; a remote that said
it restarts in place is tried again after 0.5 s (three times in a row at most, so a remote
that says so and hangs up again and again gets the back-off). An unreachable host costs
one timer.

Load (hostile-remote attack pass): one line is at most ``MAX_LINE`` (8 MiB), not the
32 MiB a local client takes; mirrored ``pane.updated`` are coalesced per host (latest wins,
one per ``UPDATE_WINDOW_S``); a flood of other events costs CPU only, bounded by the link's
back-pressure (this daemon reads as fast as it applies), and the loop stays responsive.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import structlog

from signaltty.core import mirror, rules
from signaltty.core.model import Pane, iso
from signaltty.core.sanitize import sanitize_text
from signaltty.core.states import Attention
from signaltty.proto import envelope
from signaltty.proto.client import AsyncClient, ConnectError, LineTooLong
from signaltty.proto.envelope import SignalttyError
from signaltty.proto.sshlink import REMOTE_COMMAND_ENV, BadHost, LinkError, Remote
from signaltty.server.config import HostEntry
from signaltty.server.remote_mirror import HostMirror
from signaltty.server.store import Store

log = structlog.get_logger("signaltty.remote")

BACKOFF_S: Final = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
RESTART_RETRY_S: Final = 0.5
# quick retries after "server.restarting" in a row without a healthy link: a remote that
# says it restarts and hangs up, again and again, gets the back-off after these
QUICK_RETRIES: Final = 3
HEALTHY_S: Final = 30.0  # a link that lasted this long starts the back-off again from 1 s
HANDSHAKE_S: Final = 30.0  # ssh login, remote daemon start, subscribe and the two lists
REQUEST_S: Final = 10.0  # a forwarded answer
EVENTS: Final = ["pane.*", "agent.*", "attention.*", "decision.*", "workspace.*", "server.*"]
# ssh options for a link nobody watches: never prompt, notice a dead peer within ~30 s
SSH_OPTIONS: Final = (
    "-o",
    "BatchMode=yes",
    "-o",
    "ServerAliveInterval=10",
    "-o",
    "ServerAliveCountMax=3",
)
_ERROR_CHARS: Final = 400
# The longest line read from a watched host, bytes: a quarter of what a local client
# takes (``proto.client.MAX_SERVER_LINE``), because another user's machine may send lines
# of any length and asyncio holds up to twice the limit per link. The largest line a
# genuine daemon sends here is pane.list: at most 512 panes of a few KiB each (an 8 KiB
# decision prompt, a 300-character last message, argv and paths), about 1–3 MiB; a longer
# one ends the link (the host shows "unreachable" with the reason).
MAX_LINE: Final = 8 * 1024 * 1024
_request_ids = itertools.count(1)


class RemoteUnreachable(SignalttyError):
    """The host's link is down (``REMOTE_UNREACHABLE``)."""

    def __init__(self, host: str, why: str | None) -> None:
        super().__init__(
            "REMOTE_UNREACHABLE",
            f"host {host} is unreachable" + (f": {why}" if why else ""),
            {"host": host},
        )


class BadLine(ConnectionError):
    """The remote sent a line that is no ``signaltty/1`` message: the link is ended."""


@dataclass(slots=True)
class _Reply:
    future: asyncio.Future[dict[str, Any]]
    then: Callable[[dict[str, Any]], None] | None = None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SignalttyError):
        text = f"{exc.code}: {exc.message}"
    elif isinstance(exc, TimeoutError):
        text = "no answer within the time allowed"
    else:
        text = str(exc) or type(exc).__name__
    return sanitize_text(text, _ERROR_CHARS) or type(exc).__name__


class HostLink:
    """One watched host: its ssh link, its state and the mirror of its panes.

    Attributes:
        name: the ``[hosts.NAME]`` name (the prefix of its panes' ids).
        entry: its config entry (target, socket).
        state: ``connecting`` | ``connected`` | ``unreachable``.
        panes: local id (``NAME/pane_…``) → the mirrored record (read only outside here).
    """

    def __init__(self, name: str, entry: HostEntry, owner: RemoteHosts) -> None:
        self.name = name
        self.entry = entry
        self._owner = owner
        self.state = "connecting"
        self.error: str | None = None
        self.since = time.time()
        self.retry_at: float | None = None
        self.connects = 0
        self._client: AsyncClient | None = None
        self._replies: dict[str, _Reply] = {}
        self._restarting = False
        self.mirror = HostMirror(name, owner, self)
        self.task: asyncio.Task[None] | None = None

    # ---------------------------------------------------------------- status

    @property
    def reachable(self) -> bool:
        return self.state == "connected"

    @property
    def panes(self) -> dict[str, Pane]:
        """Local id (``NAME/pane_…``) → the mirrored record (read only)."""
        return self.mirror.panes

    @property
    def workspaces(self) -> dict[str, str]:
        """Local workspace id → its name."""
        return self.mirror.workspaces

    def status(self) -> dict[str, Any]:
        """``server.status.hosts[]`` / ``hosts.list`` item (protocol.md §6 ``hosts.list``)."""
        return {
            "name": self.name,
            "target": self.entry.target,
            "state": self.state,
            "since": iso(self.since),
            "error": self.error,
            "panes": len(self.panes),
            "attention": sum(1 for p in self.panes.values() if p.attention != Attention.NONE),
            "pending_permissions": sum(
                1 for p in self.panes.values() if p.pending_decision is not None
            ),
            "retry_at": iso(self.retry_at) if self.state == "unreachable" else None,
            "connects": self.connects,
        }

    def wire(self, pane: Pane) -> dict[str, Any]:
        """A mirrored pane as a protocol Pane (``HostMirror.wire``)."""
        return self.mirror.wire(pane)

    def _set_state(self, state: str, error: str | None = None) -> None:
        if state == self.state and error == self.error:
            return
        if (state == "connected") != (self.state == "connected"):
            # "since" is when the host came up or went down, not the last attempt's start
            self.since = time.time()
        self.state = state
        self.error = error
        self._owner.emit("host.updated", {"host": self.status()})

    # ---------------------------------------------------------------- the loop

    async def run(self) -> None:
        """Connect, mirror, and reconnect with back-off, until cancelled."""
        failures = quick = 0
        while True:
            self._set_state("connecting", self.error)
            started = time.monotonic()
            why: str | None = None
            try:
                await self._session()
                why = "the remote daemon closed the connection"
            except asyncio.CancelledError:
                await self._drop()
                raise
            except (
                LinkError,
                BadHost,
                ConnectError,
                ConnectionError,
                LineTooLong,
                OSError,
                ValueError,
                TimeoutError,
                SignalttyError,
            ) as exc:
                why = _describe(await self._link_failure(exc))
            except Exception as exc:  # noqa: BLE001 - a bug must cost a reconnect, not an ssh
                # left running by a task the supervisor restarts (hostile-remote attack pass)
                log.exception("remote.session_failed", host=self.name)
                why = _describe(exc)
            await self._drop()
            if time.monotonic() - started >= HEALTHY_S:
                failures = quick = 0
            if self._restarting and quick < QUICK_RETRIES:
                delay = RESTART_RETRY_S
                quick += 1
            else:
                delay = BACKOFF_S[min(failures, len(BACKOFF_S) - 1)]
                failures += 1
            self._restarting = False
            self.retry_at = time.time() + delay  # before host.updated, which shows it
            self.mirror.flush_updates()
            self._set_state("unreachable", why)
            for pane in self.panes.values():  # kept, shown as unreachable
                self._owner.emit(
                    "pane.updated", {"pane": self.wire(pane), "changed": ["reachable"]}
                )
            log.info("remote.unreachable", host=self.name, error=why, retry_s=delay)
            await asyncio.sleep(delay)

    async def _link_failure(self, exc: BaseException) -> BaseException:
        """What ssh said, for a write to its ended link ("Connection lost" says nothing: the
        host did not resolve, the key was refused …); else ``exc``."""
        link = getattr(self._client, "_link", None)
        if isinstance(exc, LinkError | LineTooLong | BadLine | TimeoutError) or not isinstance(
            exc, OSError
        ):
            return exc  # the remote's own fault (or silence): ssh runs on, has nothing to add
        if link is None:
            return exc
        return await asyncio.to_thread(link.ended_badly) or exc

    async def _session(self) -> None:
        environ = None
        if self.entry.remote_command:
            environ = dict(os.environ, **{REMOTE_COMMAND_ENV: self.entry.remote_command})
        remote = Remote(
            self.entry.target,
            self.entry.socket,
            environ=environ,
            options=SSH_OPTIONS,
            # watching must not bring back a daemon the person shut down
            bridge_args=("--no-start",),
        )
        self._client = await AsyncClient.connect(remote, limit=MAX_LINE)
        self.mirror.synced = False
        reader = asyncio.get_running_loop().create_task(self._read(self._client))
        try:
            async with asyncio.timeout(HANDSHAKE_S):
                await self._request("subscribe", {"events": EVENTS})
                await self._request("workspace.list", {}, then=self.mirror.sync_workspaces)
                await self._request("pane.list", {}, then=self.mirror.sync_panes)
            self.connects += 1
            self.retry_at = None
            link = getattr(self._client, "_link", None)
            if link is not None:  # a later failure is explained by what ssh says from now on
                link.forget_stderr()
            self._set_state("connected")
            for pane in self.panes.values():
                self._owner.emit(
                    "pane.updated", {"pane": self.wire(pane), "changed": ["reachable"]}
                )
            log.info("remote.connected", host=self.name, panes=len(self.panes))
            await reader
        finally:
            if not reader.done():
                reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader  # its error, if any, was passed on through the replies

    async def _read(self, client: AsyncClient) -> None:
        """Apply what the remote sends until the link ends, then fail the requests still
        waiting with why (the handshake would otherwise wait ``HANDSHAKE_S`` for nothing)."""
        try:
            await self._read_lines(client)
        except Exception as exc:
            self._fail_replies(exc)
            raise
        self._fail_replies(ConnectionError("the remote daemon closed the connection"))

    def _fail_replies(self, exc: Exception) -> None:
        for reply in self._replies.values():
            if not reply.future.done():
                reply.future.set_exception(exc)
        self._replies.clear()

    async def _read_lines(self, client: AsyncClient) -> None:
        while True:
            try:
                msg = await client.read_message()
            except (ValueError, TypeError, RecursionError) as exc:
                # not JSON, not an object (dict() of a list or a number), nested too deep
                raise BadLine(
                    f"the remote sent a line that is not a message ({exc!s:.80})"
                ) from None
            if msg is None:
                return
            if not isinstance(msg, dict):
                continue
            if msg.get("type") == "event":
                name = msg.get("event")
                if name in ("server.restarting", "server.will_shutdown"):
                    self._restarting = name == "server.restarting"  # how soon to reconnect
                elif self.mirror.synced:
                    self.mirror.on_event(name, msg.get("payload"))
                continue
            reply = self._replies.pop(str(msg.get("id")), None)
            if reply is None or reply.future.done():
                continue
            if msg.get("ok") is True and isinstance(msg.get("result"), dict):
                result: dict[str, Any] = msg["result"]
                if reply.then is not None:
                    reply.then(result)  # in order: before any later event is applied
                reply.future.set_result(result)
            else:
                err = msg.get("error")
                reply.future.set_exception(_remote_error(self.name, err))

    async def _request(
        self,
        method: str,
        params: dict[str, Any],
        then: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any]:
        client = self._client
        if client is None:
            raise RemoteUnreachable(self.name, self.error)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        req_id = f"h{next(_request_ids)}"
        self._replies[req_id] = _Reply(future, then)  # before sending: the answer may be quick
        await client.send_raw(envelope.encode(envelope.request(req_id, method, params)))
        return await future

    def send_nowait(
        self, method: str, params: dict[str, Any], then: Callable[[dict[str, Any]], None]
    ) -> bool:
        """A read request nobody awaits (``HostMirror``'s read-backs): ``then(result)`` runs
        in order with the events; an error answer (a pane closed meanwhile) is dropped.
        False when the link is down."""
        client = self._client
        if client is None:
            return False
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        req_id = f"h{next(_request_ids)}"
        self._replies[req_id] = _Reply(future, then)
        client.write_nowait(envelope.encode(envelope.request(req_id, method, params)))
        return True

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``method`` on the remote daemon (``REQUEST_S`` at most).

        Raises:
            SignalttyError: the remote's error (its code when it is one of ours, else
                ``REMOTE_ERROR``), ``REMOTE_UNREACHABLE`` when the link is down or ends
                before the answer, ``TIMEOUT`` after ``REQUEST_S``.
        """
        if not self.reachable:
            raise RemoteUnreachable(self.name, self.error)
        try:
            async with asyncio.timeout(REQUEST_S):
                return await self._request(method, params)
        except TimeoutError:
            raise SignalttyError(
                "TIMEOUT", f"host {self.name} did not answer within {REQUEST_S:g} s"
            ) from None
        except (ConnectionError, OSError) as exc:
            raise RemoteUnreachable(self.name, _describe(exc)) from None

    async def _drop(self) -> None:
        client, self._client = self._client, None
        self.mirror.link_down()
        for reply in self._replies.values():
            if not reply.future.done():
                reply.future.set_exception(RemoteUnreachable(self.name, "the link ended"))
        self._replies.clear()
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

    async def stop(self) -> None:
        """End the task and the link; the mirrored panes are withdrawn (``pane.closed``)."""
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
        await self._drop()
        self.mirror.close()


_KNOWN_CODES: Final = frozenset(
    {
        "NO_SUCH_PANE",
        "NO_SUCH_DECISION",
        "AMBIGUOUS",
        "BAD_PARAMS",
        "FORBIDDEN",
        "PANE_EXITED",
        "IO_ERROR",
        "TIMEOUT",
        "BUSY",
    }
)


def _remote_error(host: str, err: object) -> SignalttyError:
    """A remote's error, its text cleaned and its code one of ours or ``REMOTE_ERROR``."""
    code = err.get("code") if isinstance(err, dict) else None
    message = err.get("message") if isinstance(err, dict) else None
    text = sanitize_text(message, _ERROR_CHARS) if isinstance(message, str) else "no message"
    return SignalttyError(
        code if isinstance(code, str) and code in _KNOWN_CODES else "REMOTE_ERROR",
        f"{host}: {text}",
        {"host": host},
    )


class RemoteHosts:
    """Every watched host (``[hosts]``), for the handlers, the notifier and the daemon.

    Args:
        store: the state store (``emit_mirrored`` and the alert sinks).
        start: starts a named supervised task (``Supervisor.start`` with ``RESTART``).
    """

    def __init__(
        self,
        *,
        store: Store,
        start: Callable[[str, Callable[[], Any]], asyncio.Task[None] | None],
    ) -> None:
        self._store = store
        self._start = start
        self.links: dict[str, HostLink] = {}
        self.errors: list[str] = []
        self._warned: set[tuple[str, str]] = set()

    # ---------------------------------------------------------------- config

    async def apply(self, hosts: dict[str, HostEntry], errors: Iterable[str] = ()) -> None:
        """Watch exactly ``hosts``: new ones start, removed ones stop (their panes are
        withdrawn), changed targets reconnect. ``errors`` are the entries left out."""
        self.errors = list(errors)
        for name in [n for n in self.links if n not in hosts or hosts[n] != self.links[n].entry]:
            link = self.links.pop(name)
            await link.stop()
            self.emit("host.removed", {"host": name})
        for name, entry in hosts.items():
            if name in self.links:
                continue
            link = HostLink(name, entry, self)
            self.links[name] = link
            link.task = self._start(f"host:{name}", link.run)
        for err in self.errors:
            log.warning("remote.config", error=err)

    async def stop(self) -> None:
        """Stop every link (shutdown)."""
        for link in list(self.links.values()):
            await link.stop()
        self.links.clear()

    def child_pids(self) -> set[int]:
        """The pids of the ssh processes of live links (not orphans of a pane)."""
        out = set()
        for link in self.links.values():
            client = link._client
            proc = getattr(getattr(client, "_link", None), "proc", None)
            if proc is not None:
                out.add(int(proc.pid))
        return out

    # ---------------------------------------------------------------- reads

    def status(self) -> list[dict[str, Any]]:
        return [link.status() for link in self.links.values()]

    def panes(self) -> Iterable[tuple[HostLink, Pane]]:
        for link in self.links.values():
            for pane in link.panes.values():
                yield link, pane

    def find(self, pane_id: str) -> tuple[HostLink, Pane] | None:
        parts = mirror.split_id(pane_id)
        if parts is None:
            return None
        link = self.links.get(parts[0])
        if link is None:
            return None
        pane = link.panes.get(pane_id)
        return (link, pane) if pane is not None else None

    def resolve(self, ref: str) -> str | list[str]:
        """``host/prefix`` → the one mirrored pane id it starts, else every match (a list:
        empty when none)."""
        parts = mirror.split_id(ref)
        link = self.links.get(parts[0]) if parts is not None else None
        if link is None:
            return []
        if ref in link.panes:
            return ref
        matches = sorted(p for p in link.panes if p.startswith(ref))
        return matches[0] if len(matches) == 1 else matches

    def host_of(self, pane_id: str) -> HostLink | None:
        parts = mirror.split_id(pane_id)
        return self.links.get(parts[0]) if parts is not None else None

    def workspace_name(self, link: HostLink, pane: Pane) -> str | None:
        return link.workspaces.get(pane.workspace_id) or None

    # ---------------------------------------------------------------- writes (person only)

    async def answer(
        self, pane_id: str, decision_id: str | None, option_id: str | None, verdict: str | None
    ) -> dict[str, Any]:
        """Forward ``decision.answer`` for the mirrored pane ``pane_id``; the caller was
        checked by the self-approval guard already (``HookService.answer``).

        Returns:
            The remote's result with the pane's id as it is here.

        Raises:
            SignalttyError: ``NO_SUCH_DECISION`` (no such mirrored decision),
                ``REMOTE_UNREACHABLE``, ``TIMEOUT``, or the remote's error.
        """
        found = self.find(pane_id)
        if found is None or found[1].pending_decision is None:
            raise SignalttyError("NO_SUCH_DECISION", f"no pending decision on {pane_id}")
        link, pane = found
        dec = pane.pending_decision
        assert dec is not None
        if decision_id is not None and decision_id != dec.id:
            raise SignalttyError(
                "NO_SUCH_DECISION", f"no such decision on {pane_id}: {decision_id}"
            )
        rid = pane_id.partition(mirror.SEP)[2]
        params: dict[str, Any] = {"pane_id": rid, "decision_id": dec.id}
        if option_id is not None:
            params["option_id"] = option_id
        else:
            params["verdict"] = verdict
        log.info("remote.answer", host=link.name, pane_id=pane_id, decision_id=dec.id)
        result = await link.call("decision.answer", params)
        out: dict[str, Any] = {"answered": bool(result.get("answered")), "decision_id": dec.id}
        option = result.get("option_id")
        out["option_id"] = sanitize_text(option, 64) if isinstance(option, str) else option_id
        for key, now in (("lifecycle", pane.lifecycle.value), ("attention", pane.attention.value)):
            value = result.get(key)
            out[key] = value if isinstance(value, str) and value.isidentifier() else now
        out["host"] = link.name
        return out

    async def mark_seen(self, pane_id: str) -> dict[str, Any]:
        """Forward ``pane.mark_seen`` (a click on the pane's notification, or a local client).

        Raises:
            SignalttyError: ``NO_SUCH_PANE``, ``REMOTE_UNREACHABLE``, ``TIMEOUT``, the remote's.
        """
        found = self.find(pane_id)
        if found is None:
            raise SignalttyError("NO_SUCH_PANE", f"no such pane: {pane_id}")
        link, pane = found
        await link.call("pane.mark_seen", {"pane_id": pane_id.partition(mirror.SEP)[2]})
        return {"pane": link.wire(pane)}  # its new attention arrives as an event

    # ---------------------------------------------------------------- to the local side

    def emit(self, name: str, payload: dict[str, Any]) -> None:
        self._store.emit_mirrored(name, payload)

    def alert(self, alert: rules.Alert) -> None:
        for sink in list(self._store.alert_sinks):
            try:
                sink(alert)
            except Exception:  # noqa: BLE001 - one sink must not stop the others
                log.exception("remote.alert_sink_failed")

    def warn_once(self, host: str, what: str, **fields: Any) -> None:
        if (host, what) in self._warned:
            return
        self._warned.add((host, what))
        log.warning(f"remote.{what}", host=host, **fields)
