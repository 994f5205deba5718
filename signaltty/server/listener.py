"""Unix-socket listener and the per-connection loop of ``signaltty/1``.

Each connection: peer-uid check, bounded line framing, requests handled one at a time in
arrival order, a bounded outbound queue shared by responses, state events and ``pty.data``,
and the single-flight rule (a further line or EOF cancels a pending ``wait`` and closes the
connection without a response). Spec: protocol.md §1–§3, desktop-and-service.md §9.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from signaltty.core.limits import CONN_QUEUE_BYTES, CONN_QUEUE_EVENTS, MAX_CONNECTIONS
from signaltty.proto import envelope
from signaltty.proto.constants import is_reserved, is_single_flight
from signaltty.proto.envelope import SignalttyError
from signaltty.proto.framing import TOO_LONG, LineBuffer
from signaltty.server.bus import glob_match
from signaltty.system.peercred import peer_uid

if TYPE_CHECKING:
    from signaltty.server.daemon import Daemon

log = structlog.get_logger("signaltty.listener")
# Transport buffer below which a message is written at once instead of queued.
_DIRECT_WRITE_MAX = 64 * 1024
_conn_ids = itertools.count(1)


class Connection:
    """One client connection: request loop, outbound queue, subscriptions, attachments."""

    def __init__(self, daemon: Daemon, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.d = daemon
        self.id = next(_conn_ids)
        self.log = log.bind(conn_id=self.id)
        self._reader = reader
        self._writer = writer
        self._queue: deque[bytes] = deque()
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
        self.dropped_events = 0

    # ---------------------------------------------------------------- outbound

    def _enqueue(self, data: bytes, *, is_event: bool) -> bool:
        if self._closing:
            return False
        if is_event and (
            self._queued_events >= CONN_QUEUE_EVENTS or self._queued_bytes + len(data) > CONN_QUEUE_BYTES
        ):
            if self._filters is not None or self.attached:
                self.log.warning("conn.slow_reader_closed", queued=self._queued_events)
                self.abort()
            else:
                self.dropped_events += 1
            return False
        if not self._queue and self._writer.transport.get_write_buffer_size() < _DIRECT_WRITE_MAX:
            # Nothing queued and the socket keeps up: write now, saving the writer task's
            # loop turn (which may sit behind a screen-drain step).
            self._writer.write(data)
            return True
        self._queue.append(data)
        self._queued_bytes += len(data)
        if is_event:
            self._queued_events += 1
        self._drained.clear()
        self._wake.set()
        return True

    def send(self, obj: dict[str, Any]) -> None:
        """Queue a response (never dropped; request reading waits while the queue is full)."""
        self._enqueue(envelope.encode(obj), is_event=False)

    def subscribe(self, patterns: list[str]) -> None:
        """Replace the event filter (protocol.md §5 ``subscribe``)."""
        first = self._filters is None
        self._filters = patterns
        if first:
            self.d.bus.add_sink(self)

    def deliver_event(self, seq: int, name: str, payload: dict[str, Any]) -> None:
        if self._filters is None or not any(glob_match(g, name) for g in self._filters):
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
                    chunk = self._queue.popleft()
                    self._queued_bytes -= len(chunk)
                    if chunk.startswith(b'{"protocol":"signaltty/1","type":"event"'):
                        self._queued_events -= 1
                    self._writer.write(chunk)
                    if self._writer.transport.get_write_buffer_size() > 1 << 20:
                        await self._writer.drain()
                await self._writer.drain()
                self._drained.set()
                if self._closing:
                    return
        except (ConnectionError, OSError):
            self._closing = True
            self._drained.set()

    # ---------------------------------------------------------------- lifecycle

    def abort(self) -> None:
        """Drop the queue and close now (idempotent)."""
        self._closing = True
        self._queue.clear()
        self._queued_bytes = self._queued_events = 0
        self._wake.set()
        self._drained.set()
        self._writer.transport.abort()

    async def close(self) -> None:
        """Flush what is queued, then close (idempotent)."""
        self._closing = True
        self._wake.set()
        with contextlib.suppress(TimeoutError, ConnectionError, OSError):
            async with asyncio.timeout(2):
                await self._drained.wait()
        self._writer.close()

    def _cleanup(self) -> None:
        self.d.bus.remove_sink(self)
        for pane_id in list(self.attached):
            rt = self.d.runtimes.get(pane_id)
            if rt is not None:
                rt.viewers.discard(self)
        self.attached.clear()

    # ---------------------------------------------------------------- request loop

    async def run(self) -> None:
        writer_task = asyncio.create_task(self._writer_loop(), name=f"conn-{self.id}-writer")
        lines = LineBuffer()
        pending: deque[bytes | object] = deque()
        try:
            while not self._closing:
                if not pending:
                    data = await self._reader.read(1 << 16)
                    if not data:
                        break
                    pending.extend(lines.feed(data))
                    continue
                # Backpressure: a client that never reads stops being read.
                while self._queued_bytes > CONN_QUEUE_BYTES and not self._closing:
                    self._drained.clear()
                    await self._drained.wait()
                item = pending.popleft()
                if item is TOO_LONG:
                    self.send(envelope.fail("?", SignalttyError("RATE_LIMITED", "line too large")))
                    continue
                assert isinstance(item, bytes)
                if not item.strip():
                    continue
                keep_going = await self._handle_line(item, pending, lines)
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

    async def _handle_line(self, line: bytes, pending: deque[bytes | object], lines: LineBuffer) -> bool:
        try:
            req_id, method, params = envelope.decode_request(line)
        except SignalttyError as err:
            self.send(envelope.fail(envelope.request_id_of(err), err))
            return True
        if is_reserved(method):
            self.send(envelope.fail(req_id, SignalttyError("UNKNOWN_METHOD", f"unknown method: {method}")))
            return True
        if is_single_flight(method, params):
            return await self._single_flight(req_id, method, params, pending, lines)
        await self._respond(req_id, self._dispatch(method, params))
        return not self.close_after_response

    async def _dispatch(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self.d.router.call(self, method, params)

    async def _respond(self, req_id: str, coro: Any) -> None:
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
        method: str,
        params: dict[str, Any],
        pending: deque[bytes | object],
        lines: LineBuffer,
    ) -> bool:
        """Run a single-flight call; any further input, EOF or shutdown cancels it silently."""
        call = asyncio.create_task(self._respond(req_id, self._dispatch(method, params)))
        self.d.single_flight.add(call)
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
            self.d.single_flight.discard(call)
            if call.cancelled():
                self._queue.clear()
                self._queued_bytes = self._queued_events = 0


class Listener:
    """Accepts connections on the daemon's socket (at most 256 at a time)."""

    def __init__(self, daemon: Daemon) -> None:
        self.d = daemon
        self.connections: set[Connection] = set()
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._uid = os.getuid()
        self.refused_uid = 0

    async def start(self, path: str) -> None:
        """Bind, chmod 0600 and listen (the socket file is the singleton lock)."""
        old_umask = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(self._on_client, path=path, backlog=MAX_CONNECTIONS * 2)
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)

    def stats(self) -> dict[str, Any]:
        return {
            "open": len(self.connections),
            "queued_events": sum(c._queued_events for c in self.connections),
            "dropped_events": sum(c.dropped_events for c in self.connections),
        }

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        uid = peer_uid(sock) if sock is not None else None
        if uid is not None and uid != self._uid:
            self.refused_uid += 1
            log.warning("conn.refused_uid", peer_uid=uid)
            writer.transport.abort()
            return
        if len(self.connections) >= MAX_CONNECTIONS or self.d.shutting_down:
            err = SignalttyError("RATE_LIMITED", "too many connections")
            with contextlib.suppress(ConnectionError, OSError):
                writer.write(envelope.encode(envelope.fail("?", err)))
                await writer.drain()
            writer.close()
            return
        conn = Connection(self.d, reader, writer)
        self.connections.add(conn)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)
            if task is not None:
                self._tasks.discard(task)

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
