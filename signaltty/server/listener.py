"""Unix-socket listener and the per-connection loop of ``signaltty/1``.

Each connection: peer-uid check, bounded line framing, requests handled one at a time in
arrival order, a bounded outbound queue shared by responses, state events and ``pty.data``,
and the single-flight rule (a further line or EOF cancels a pending ``wait`` and closes the
connection without a response). Bounded (issue 10 §10): all queues together stay under
``server.outbound_total_mib`` and idle connections close after ``server.idle_timeout_s``
(docs/architecture.md "Bounded resources"). Spec: protocol.md §1–§3, desktop-and-service.md §9.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any

import structlog

from signaltty.core.limits import (
    CONN_QUEUE_BYTES,
    CONN_QUEUE_EVENTS,
    CONN_TRANSPORT_BYTES,
    MAX_CONNECTIONS,
)
from signaltty.proto import envelope
from signaltty.proto.constants import is_reserved, is_single_flight
from signaltty.proto.envelope import SignalttyError
from signaltty.proto.framing import TOO_LONG, LineBuffer
from signaltty.server.bus import Bus, glob_match
from signaltty.server.config import Config
from signaltty.server.hooks import Caller, HookService
from signaltty.server.ports import Control, Dispatcher, Runtimes
from signaltty.system.peercred import peer_uid
from signaltty.system.peerpid import peer_pid
from signaltty.system.procref import ProcessRef

log = structlog.get_logger("signaltty.listener")
# Transport buffer below which a message is written at once instead of queued.
_DIRECT_WRITE_MAX = 64 * 1024
_conn_ids = itertools.count(1)


class Connection:
    """One client connection: request loop, outbound queue, subscriptions, attachments.

    Bounded (issue 10 §10): its queue holds at most 4096 events / 8 MiB (protocol.md §3 slow
    reader) and counts toward the listener's total; with no subscription, attachment or call
    in flight it is closed after ``server.idle_timeout_s`` without a complete request.
    """

    def __init__(
        self,
        listener: Listener,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self._listener = listener
        self.id = next(_conn_ids)
        self.log = log.bind(conn_id=self.id)
        self._reader = reader
        self._writer = writer
        self._queue: deque[tuple[bytes, bool]] = deque()  # (message, is_event)
        self._queued_bytes = 0
        self._queued_events = 0
        self._wake = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._closing = False
        self._filters: list[str] | None = None
        self.attached: set[str] = set()
        self.after_response: Callable[[], None] | None = None
        self.close_after_response = False
        self.pending_replay: list[tuple[int, str, dict[str, Any]]] | None = None
        # id of the call being answered: a restart hands the connection over with it
        self.request_id: str | None = None
        self.dropped_events = 0
        self._last_request = asyncio.get_running_loop().time()
        # Who connected (kernel-recorded at connect time) and when: hook routing and the
        # self-approval guard trace this process, never a pid the client claims.
        sock = writer.get_extra_info("socket")
        self.peer_pid: int | None = peer_pid(sock) if sock is not None else None
        self.opened_at = time.time()
        # which process that pid is (a pidfd, else its start time now): a pid reused after
        # the peer exited is refused (attack pass 3, A2); closed in _cleanup
        self.peer_ref: ProcessRef | None = (
            ProcessRef.of_socket(sock, self.peer_pid)
            if sock is not None and self.peer_pid is not None
            else None
        )

    # ---------------------------------------------------------------- outbound

    def _enqueue(self, data: bytes, *, is_event: bool) -> bool:
        """Write or queue one message; False when it was not (closing, dropped, lost).

        Never raises: events are delivered from the pane pump and the bus, which must go on
        with the chunk (its OSC items, the other viewers) whatever happened to this client.
        """
        if self._closing:
            return False
        if self._writer.transport.is_closing():
            # The peer reset the connection and the request loop has not seen it yet.
            self._lost()
            return False
        if is_event and (
            self._queued_events >= CONN_QUEUE_EVENTS
            or self._queued_bytes + len(data) > CONN_QUEUE_BYTES
        ):
            if self._filters is not None or self.attached:
                self.drop("queue_full")
            else:
                self.dropped_events += 1
            return False
        if not self._queue and self._writer.transport.get_write_buffer_size() < _DIRECT_WRITE_MAX:
            # Nothing queued and the socket keeps up: write now, saving the writer task's
            # loop turn (which may sit behind a screen-drain step).
            return self._write(data)
        self._queue.append((data, is_event))
        self._account(len(data), 1 if is_event else 0)
        self._drained.clear()
        self._wake.set()
        self._listener.shed()  # may close this very connection
        return not self._closing

    def _write(self, data: bytes) -> bool:
        try:
            self._writer.write(data)
        except (RuntimeError, ConnectionError, OSError):
            # uvloop raises RuntimeError on a transport closed under us (peer reset).
            self._lost()
            return False
        return True

    def _account(self, nbytes: int, nevents: int) -> None:
        self._queued_bytes += nbytes
        self._queued_events += nevents
        self._listener.queued_total += nbytes

    def _clear_queue(self) -> None:
        self._account(-self._queued_bytes, -self._queued_events)
        self._queue.clear()

    @property
    def queued_bytes(self) -> int:
        """Bytes waiting in this connection's queue (not yet handed to the transport)."""
        return self._queued_bytes

    def drop(self, reason: str) -> None:
        """Close a reader that fell too far behind (``queue_full``, ``outbound_total``,
        ``stalled``), logging why; its queue is released at once."""
        if self._closing:
            return
        self.log.warning(
            "conn.slow_reader_closed",
            reason=reason,
            queued_bytes=self._queued_bytes,
            queued_events=self._queued_events,
            subscribed=self._filters is not None,
            attached=len(self.attached),
        )
        self._listener.closed_slow += 1
        self.abort()

    def send(self, obj: dict[str, Any]) -> None:
        """Queue a response (never dropped; request reading waits while the queue is full)."""
        self._enqueue(envelope.encode(obj), is_event=False)

    def subscribe(self, patterns: list[str]) -> None:
        """Replace the event filter (protocol.md §5 ``subscribe``)."""
        first = self._filters is None
        self._filters = patterns
        if first:
            self._listener.bus.add_sink(self)

    def wants(self, name: str) -> bool:
        """Whether this connection's subscription receives state event ``name``."""
        return self._filters is not None and any(glob_match(g, name) for g in self._filters)

    def deliver_event(self, seq: int, name: str, payload: dict[str, Any]) -> None:
        if not self.wants(name):
            return
        self._enqueue(envelope.encode(envelope.event(name, payload, seq)), is_event=True)

    def deliver_data(self, pane_id: str, data: bytes, output_offset: int) -> None:
        payload = {
            "pane_id": pane_id,
            "data_b64": base64.b64encode(data).decode(),
            "output_offset": output_offset,
        }
        self._enqueue(envelope.encode(envelope.event("pty.data", payload, None)), is_event=True)

    def detached(self, pane_id: str) -> None:
        """The pane went away (closed); stop streaming it."""
        self.attached.discard(pane_id)

    async def _writer_loop(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self._queue:
                    chunk, is_event = self._queue.popleft()
                    self._account(-len(chunk), -1 if is_event else 0)
                    self._writer.write(chunk)
                    # Bounded transport buffer: the backlog of a stalled reader stays in the
                    # queue, where it is counted and capped.
                    if self._writer.transport.get_write_buffer_size() > CONN_TRANSPORT_BYTES:
                        await self._writer.drain()
                await self._writer.drain()
                self._drained.set()
                if self._closing:
                    return
        except (ConnectionError, OSError, RuntimeError):
            self._lost()

    # ---------------------------------------------------------------- lifecycle

    def abort(self) -> None:
        """Drop the queue and close now (idempotent)."""
        self._closing = True
        self._clear_queue()
        self._wake.set()
        self._drained.set()
        with contextlib.suppress(RuntimeError):
            self._writer.transport.abort()

    def _lost(self) -> None:
        """The transport failed or was closed by the peer: stop writing, release the queue."""
        if not self._closing:
            self.log.debug("conn.lost")
        self.abort()

    async def close(self) -> None:
        """Flush what is queued, then close (idempotent)."""
        self._closing = True
        self._wake.set()
        with contextlib.suppress(TimeoutError, ConnectionError, OSError):
            async with asyncio.timeout(2):
                await self._drained.wait()
        self._writer.close()

    def _cleanup(self) -> None:
        if self.peer_ref is not None:
            self.peer_ref.close()
        self._listener.bus.remove_sink(self)
        for pane_id in list(self.attached):
            rt = self._listener.runtimes.get(pane_id)
            if rt is not None:
                rt.viewers.discard(self)
        self.attached.clear()

    # ---------------------------------------------------------------- request loop

    async def run(
        self, held: tuple[str, Coroutine[Any, Any, dict[str, Any]]] | None = None
    ) -> None:
        """Serve requests until EOF; ``held`` is a call handed over by a restart (issue 15)
        whose answer is still owed, under the single-flight rule."""
        writer_task = asyncio.create_task(self._writer_loop(), name=f"conn-{self.id}-writer")
        lines = LineBuffer()
        pending: deque[bytes | object] = deque()
        try:
            keep = True
            if held is not None:
                await self._single_flight(held[0], held[1], pending, lines)
                # and ends with it: the peer identity read now (pid, else start time) may
                # belong to a process that reused a dead connector's pid (attack pass 8, A1)
                keep = False
            while keep and not self._closing:
                if not pending:
                    try:
                        async with asyncio.timeout_at(self._idle_deadline()):
                            data = await self._reader.read(1 << 16)
                    except TimeoutError:
                        self._close_idle()
                        break
                    if not data:
                        break
                    pending.extend(lines.feed(data))
                    continue
                # Backpressure: a client that never reads stops being read (and is closed
                # when its queue does not drain within the idle timeout).
                if not await self._wait_drained():
                    break
                item = pending.popleft()
                if item is TOO_LONG:
                    self.send(envelope.fail("?", SignalttyError("RATE_LIMITED", "line too large")))
                    continue
                assert isinstance(item, bytes)
                if not item.strip():
                    continue
                self._last_request = asyncio.get_running_loop().time()
                try:
                    keep_going = await self._handle_line(item, pending, lines)
                finally:
                    # a long call (a 60 s wait) is not idleness: the clock starts after it
                    self._last_request = asyncio.get_running_loop().time()
                if not keep_going:
                    break
        except (ConnectionError, OSError):
            pass
        except Exception:  # noqa: BLE001 - a connection's fault must not reach the daemon
            self.log.exception("conn.failed")
        finally:
            self._cleanup()
            await self.close()
            writer_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await writer_task

    def _idle_deadline(self) -> float | None:
        """Loop time at which this connection counts as idle, or None while it is exempt:
        subscribed or attached (it waits for us, not we for it)."""
        if self._filters is not None or self.attached:
            return None
        return self._last_request + self._listener.config.server.idle_timeout_s

    def _close_idle(self) -> None:
        self.log.info(
            "conn.idle_closed", idle_timeout_s=self._listener.config.server.idle_timeout_s
        )
        self._listener.closed_idle += 1

    async def _wait_drained(self) -> bool:
        """Wait while the queue is over its cap; False (connection dropped) when it does
        not drain within the idle timeout."""
        while self._queued_bytes > CONN_QUEUE_BYTES and not self._closing:
            self._drained.clear()
            try:
                async with asyncio.timeout(self._listener.config.server.idle_timeout_s):
                    await self._drained.wait()
            except TimeoutError:
                self.drop("stalled")
                return False
        return not self._closing

    async def _handle_line(
        self, line: bytes, pending: deque[bytes | object], lines: LineBuffer
    ) -> bool:
        try:
            req_id, method, params = envelope.decode_request(line)
        except SignalttyError as err:
            self.send(envelope.fail(envelope.request_id_of(err), err))
            return True
        if is_reserved(method):
            self.send(
                envelope.fail(req_id, SignalttyError("UNKNOWN_METHOD", f"unknown method: {method}"))
            )
            return True
        if is_single_flight(method, params):
            return await self._single_flight(req_id, self._dispatch(method, params), pending, lines)
        await self._respond(req_id, self._dispatch(method, params))
        return not self.close_after_response

    async def _dispatch(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self._listener.dispatcher.call(self, method, params)

    async def _respond(self, req_id: str, coro: Any) -> None:
        self.request_id = req_id
        try:
            result = await coro
        except SignalttyError as err:
            self.send(envelope.fail(req_id, err))
            return
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001
            self.log.exception("router.internal_error")
            self.send(envelope.fail(req_id, SignalttyError("INTERNAL", "internal error")))
            return
        self.send(envelope.ok(req_id, result))
        replay, self.pending_replay = self.pending_replay, None
        for seq, name, payload in replay or ():
            self._enqueue(envelope.encode(envelope.event(name, payload, seq)), is_event=True)
        if self.after_response is not None:
            callback, self.after_response = self.after_response, None
            if self._queue:
                await self._drained.wait()
            with contextlib.suppress(ConnectionError, OSError):
                await self._writer.drain()
            callback()

    async def _single_flight(
        self,
        req_id: str,
        coro: Coroutine[Any, Any, dict[str, Any]],
        pending: deque[bytes | object],
        lines: LineBuffer,
    ) -> bool:
        """Run a single-flight call; any further input, EOF or shutdown cancels it silently."""
        call = asyncio.create_task(self._respond(req_id, coro))
        self._listener.single_flight.add(call)
        try:
            if pending:
                call.cancel()
                return False
            read = asyncio.create_task(self._reader.read(1 << 16))
            done, _ = await asyncio.wait({call, read}, return_when=asyncio.FIRST_COMPLETED)
            if call not in done:
                # Input (or EOF) arrived while the call was pending: cancel, close, no response.
                call.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await call
                return False
            # The call finished (input may have arrived in the same loop turn, after the
            # response went out): keep whatever was read for the next requests.
            if not read.done():
                read.cancel()
            try:
                data: bytes | None = await read
            except asyncio.CancelledError:
                data = None
            call.result()
            if data is None:
                return True
            if not data:
                return False
            pending.extend(lines.feed(data))
            return True
        except asyncio.CancelledError:
            call.cancel()
            raise
        finally:
            self._listener.single_flight.discard(call)
            if call.cancelled():
                self._clear_queue()


# Connection slots kept for processes outside every pane (issue 10 follow-up, item 5).
OUTSIDE_RESERVE = 32
ORIGIN_CACHE_S = 5.0


class Listener:
    """Accepts connections on the daemon's socket (at most 256 at a time; the last
    ``OUTSIDE_RESERVE`` only for processes outside every pane).

    Keeps the total of all connections' outbound queues under ``server.outbound_total_mib``
    (issue 10 §10): stalled readers cannot hold more than that between them.
    """

    def __init__(
        self,
        *,
        config: Config,
        bus: Bus,
        runtimes: Runtimes,
        dispatcher: Dispatcher,
        hooks: HookService,
        control: Control,
        single_flight: set[asyncio.Task[Any]],
    ) -> None:
        """``dispatcher`` runs each request (``Router``); ``hooks`` traces a peer near the
        connection limit (``HookService.origin``); ``single_flight`` collects the calls
        under the single-flight rule, which the daemon cancels at shutdown."""
        self.config = config
        self.bus = bus
        self.runtimes = runtimes
        self.dispatcher = dispatcher
        self.hooks = hooks
        self.control = control
        self.single_flight = single_flight
        self.connections: set[Connection] = set()
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._uid = os.getuid()
        self.refused_uid = 0
        self.queued_total = 0  # bytes in every connection's queue (Connection._account)
        self.queued_cap = config.server.outbound_total_mib << 20
        self.closed_slow = 0
        self.closed_idle = 0
        self.refused_full = 0
        self._refused_logged_at = float("-inf")
        self._origins: dict[int, tuple[bool, float]] = {}  # pid → (inside a pane, valid until)
        self._deciding = 0  # accepted connections awaiting their origin walk

    def shed(self) -> None:
        """While the queues together exceed the cap, close the connection with the largest
        backlog (a stalled reader; a reading one has next to nothing queued)."""
        while self.queued_total > self.queued_cap:
            victim = max(self.connections, key=lambda c: c.queued_bytes, default=None)
            if victim is None or victim.queued_bytes == 0:
                return
            victim.drop("outbound_total")

    async def start(self, path: str) -> None:
        """Bind, chmod 0600 and listen (the socket file is the singleton lock)."""
        old_umask = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(
                self._on_client, path=path, backlog=MAX_CONNECTIONS * 2
            )
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)

    async def start_on(self, sock: Any) -> None:
        """Listen on a socket handed over by a restart (issue 15): its queued connections are
        accepted here."""
        self._server = await asyncio.start_unix_server(
            self._on_client, sock=sock, backlog=MAX_CONNECTIONS * 2
        )

    def listening_fd(self) -> int | None:
        """The listening socket's fd (handed over by a restart), or None."""
        server = self._server
        socks = getattr(server, "sockets", None) if server is not None else None
        return socks[0].fileno() if socks else None

    def adopt(
        self,
        sock: Any,
        req_id: str,
        answer: Callable[[Connection], Coroutine[Any, Any, dict[str, Any]]],
    ) -> None:
        """Serve a connection handed over by a restart whose call ``req_id`` is answered by
        ``answer(connection)``; the connection closes after that answer."""

        async def serve() -> None:
            try:
                reader, writer = await asyncio.open_unix_connection(sock=sock)
            except OSError:
                sock.close()
                return
            conn = Connection(self, reader, writer)
            self.connections.add(conn)
            try:
                await conn.run(held=(req_id, answer(conn)))
            except asyncio.CancelledError:
                pass
            finally:
                self.connections.discard(conn)

        task = asyncio.get_running_loop().create_task(serve())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def rebind(self, path: str) -> None:
        """Listen on ``path`` again after it was taken from us (server/socketwatch.py): the
        caller has removed what was there. Open connections stay; the old listening socket
        (perhaps renamed elsewhere) is closed.

        Raises:
            OSError: the bind failed (the path was taken again in between).
        """
        old = self._server
        await self.start(path)
        if old is not None:
            old.close()

    def stats(self) -> dict[str, Any]:
        return {
            "open": len(self.connections),
            "queued_events": sum(c._queued_events for c in self.connections),
            "dropped_events": sum(c.dropped_events for c in self.connections),
            "queued_bytes": self.queued_total,
            "closed_slow": self.closed_slow,
            "closed_idle": self.closed_idle,
            "refused_full": self.refused_full,
        }

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        uid = peer_uid(sock) if sock is not None else None
        if uid is not None and uid != self._uid:
            self.refused_uid += 1
            log.warning("conn.refused_uid", peer_uid=uid)
            writer.transport.abort()
            return
        why: str | None = None
        reserved = MAX_CONNECTIONS - OUTSIDE_RESERVE
        # Counted with the accepts still deciding (awaiting the origin walk below), so the
        # slots go in accept order: a later client never takes the place of an earlier one.
        taken = len(self.connections) + self._deciding
        if taken >= MAX_CONNECTIONS or self.control.shutting_down:
            idle_s = self.config.server.idle_timeout_s
            why = (
                "the daemon is shutting down"
                if self.control.shutting_down
                else (
                    f"{taken} open; connections idle for {idle_s:g} s are closed "
                    "(subscribers, viewers and calls in flight are not), try again"
                )
            )
        elif taken >= reserved:
            # asked only near the limit. The last OUTSIDE_RESERVE slots are kept for processes
            # outside every pane (the person's CLI, top, status bars): pane processes cannot
            # lock them out
            self._deciding += 1
            try:
                from_pane = await self._from_pane(sock)
            finally:
                self._deciding -= 1
            if from_pane:
                why = (
                    f"{taken} open; processes inside signaltty panes share "
                    f"{reserved} of the {MAX_CONNECTIONS} slots, the rest are "
                    "kept for processes outside panes"
                )
        if why is not None:
            self.refused_full += 1
            now = time.monotonic()
            if (
                now - self._refused_logged_at >= 10
            ):  # a client retrying in a loop: one line per 10 s
                self._refused_logged_at = now
                log.warning(
                    "conn.refused_full", open=len(self.connections), refused_total=self.refused_full
                )
            err = SignalttyError("RATE_LIMITED", f"too many connections ({why})")
            with contextlib.suppress(ConnectionError, OSError, RuntimeError):
                writer.write(envelope.encode(envelope.fail("?", err)))
                async with asyncio.timeout(2):  # a refused client that never reads
                    await writer.drain()
            with contextlib.suppress(RuntimeError):
                writer.close()
            return
        conn = Connection(self, reader, writer)
        self.connections.add(conn)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await conn.run()
        except asyncio.CancelledError:
            # close_all() at shutdown: end quietly. A handler task that ends cancelled makes
            # asyncio's StreamReaderProtocol done-callback log a traceback (task.exception()
            # raises CancelledError, CPython 3.11).
            pass
        finally:
            self.connections.discard(conn)
            if task is not None:
                self._tasks.discard(task)

    async def _from_pane(self, sock: Any) -> bool:
        """True when the peer runs inside a pane (or cannot be traced); cached per pid for
        ``ORIGIN_CACHE_S``. Only asked near the limit, so the hook fast path never pays for it.
        The walk is the self-approval guard's (``HookService.origin``), off the loop."""
        pid = peer_pid(sock) if sock is not None else None
        if pid is None:
            return True
        now = time.monotonic()
        cached = self._origins.get(pid)
        if cached is not None and cached[1] > now:
            return cached[0]
        try:
            inside = (await self.hooks.origin(Caller("socket", pid))).inside
        except Exception:  # noqa: BLE001 - untraceable counts as a pane's (the safe side)
            log.exception("conn.origin_failed")
            inside = True
        if len(self._origins) >= MAX_CONNECTIONS:
            self._origins.clear()
        self._origins[pid] = (inside, now + ORIGIN_CACHE_S)
        return inside

    def stop_listening(self) -> None:
        """Stop accepting (the listening socket is closed here; a restart keeps a dup)."""
        if self._server is not None:
            self._server.close()
            self._server = None

    async def stop_accepting(self) -> None:
        if self._server is not None:
            self._server.close()

    async def close_all(self) -> None:
        for conn in list(self.connections):
            conn.abort()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=2)
