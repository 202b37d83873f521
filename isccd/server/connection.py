"""One client connection: reading requests, answering them, streaming its subscription.

A connection is an :class:`asyncio.Protocol` with one task that handles its requests one at a
time, in order (a client wanting concurrency opens more connections), and, while subscribed, a
second task that streams events. Both write whole lines to the transport, so lines never
interleave; replies to a request and events may. Everything is bounded: request lines by
:attr:`~ServerOptions.max_line_bytes`, buffered requests by
:attr:`~ServerOptions.max_pending_requests` and by the length of a line (reading pauses beyond),
a reply by :attr:`~ServerOptions.max_reply_bytes` (``reply_too_large`` beyond), bytes waiting to
be sent by :attr:`~ServerOptions.write_buffer_bytes` (a reply is written in pieces of that size,
each after the client took the one before; a client that takes nothing for
:attr:`~ServerOptions.send_timeout` is disconnected), and events by the subscription's queue (the
subscriber lags beyond). A connection never holds more than one reply: the next request is read
from the buffer only once the reply before it was handed to the client.

At shutdown a question in progress (``status``, ``get``, ``similar``, ``dupes``...) is given up
at once with ``shutting_down`` (the store's thread skips it if it has not started it), and a
connection whose client is not reading is closed at once: neither delays the stop.

Replay joins live without gap or duplicate: the subscription is registered with the broker
*before* the log is read, so every event committed after the last read of the log is also in
the queue; the replay pages through the log until it has caught up, and the live stream then
skips the queued events at or below the last one replayed (see :mod:`isccd.server.broker`).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import structlog

from isccd.errors import ProtocolError, StoreError
from isccd.protocol import (
    ErrorCode,
    LineSplitter,
    OversizedLine,
    Request,
    RequestError,
    RescanRequest,
    SubscribeRequest,
    SubscribeResult,
    SyncRequest,
    UnsubscribeRequest,
    UnsubscribeResult,
    decode_request,
    encode_error,
    encode_event,
    encode_result,
    lagged_event,
)

from .backend import LogBounds
from .broker import Subscription, SubscriptionStatistics
from .handlers import Context, Query, handle
from .listener import PeerCredentials, peer_credentials


@dataclass(frozen=True, slots=True)
class ConnectionStatistics:
    """A connection's figures.

    Attributes:
        id: Its number in this server's life.
        peer: Who connected (``None`` if the kernel did not say).
        connected: Unix time it connected.
        requests: Request lines received.
        errors: Requests answered with an error.
        write_buffer: Bytes waiting to be sent.
        subscription: Its subscription's figures, if it has one.
    """

    id: int
    peer: PeerCredentials | None
    connected: float
    requests: int
    errors: int
    write_buffer: int
    subscription: SubscriptionStatistics | None


class Connection(asyncio.Protocol):
    """Serves one client. Made by the server's protocol factory.

    Args:
        context: What all connections share.
        conn_id: Its number, for logs.
        on_close: Called when it has been served and closed.
    """

    def __init__(
        self,
        context: Context,
        conn_id: int,
        *,
        on_close: Callable[[Connection], None],
    ) -> None:
        self._context = context
        self.id = conn_id
        self._on_close = on_close
        self.peer: PeerCredentials | None = None
        self.task: asyncio.Task[None] | None = None
        self._transport: asyncio.Transport | None = None
        self._splitter = LineSplitter(context.options.max_line_bytes)
        self._inbox: collections.deque[bytes | OversizedLine] = collections.deque()
        self._inbox_bytes = 0
        self._wakeup: asyncio.Future[None] | None = None
        self._reading_paused = False
        self._writing_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._eof = False
        self._stopping = False
        self._lost: asyncio.Future[None] | None = None
        self._abort_handle: asyncio.TimerHandle | None = None
        self._idle_handle: asyncio.TimerHandle | None = None
        self._active = 0.0  # loop time of the last bytes received or reply sent
        self._busy = False  # a request is being handled
        self._subscription: Subscription | None = None
        self._stream: asyncio.Task[None] | None = None
        self._query: asyncio.Task[object] | None = None  # a question being answered
        self._connected = context.clock()
        self._started = time.monotonic()
        self._requests = 0
        self._errors = 0
        self._end_reason = "closed by client"

    # asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Start serving (called by the event loop)."""
        transport = cast(asyncio.Transport, transport)  # a Unix stream socket's transport
        self._transport = transport
        transport.set_write_buffer_limits(high=self._context.options.write_buffer_bytes)
        sock = transport.get_extra_info("socket")
        self.peer = peer_credentials(sock) if sock is not None else None
        loop = asyncio.get_running_loop()
        self._lost = loop.create_future()
        peer = self.peer
        structlog.get_logger().info(
            "client_connected",
            conn=self.id,
            pid=peer.pid if peer else None,
            uid=peer.uid if peer else None,
            gid=peer.gid if peer else None,
        )
        self.task = loop.create_task(self._run(), name=f"isccd-connection-{self.id}")
        self.task.add_done_callback(lambda _: self._on_close(self))
        self._touch()
        self._arm_idle(self._context.options.idle_timeout)

    def data_received(self, data: bytes) -> None:
        """Split received bytes into request lines; pause reading when enough are waiting."""
        lines = self._splitter.feed(data)
        # Any byte counts, a part of a line too: a client writing a long request slowly (a
        # busy machine, small writes) is sending, not idle, and closing it mid-line would
        # break its pipe. A client trickling bytes could as well send a request now and then.
        self._touch()
        self._inbox.extend(lines)
        self._inbox_bytes += sum(len(line) for line in lines if isinstance(line, bytes))
        if self._inbox_full():
            self._pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        """The client will send no more: answer what it sent, then close (subscription too)."""
        self._inbox.extend(self._splitter.eof())
        self._eof = True
        self._wake()
        return True  # keep the transport open for the replies

    def connection_lost(self, exc: Exception | None) -> None:
        """The connection is gone: stop everything it was doing."""
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)
        if self._abort_handle is not None:
            self._abort_handle.cancel()
        if self._idle_handle is not None:
            self._idle_handle.cancel()
        self._end_subscription()
        self._wake()
        self._release_writers()

    def pause_writing(self) -> None:
        """The write buffer passed its high-water mark: writers wait."""
        self._writing_paused = True

    def resume_writing(self) -> None:
        """The write buffer drained below its low-water mark."""
        self._writing_paused = False
        self._release_writers()

    # control ---------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Close: at once if the client is not reading or a question is being answered (it
        gets ``shutting_down``), after it otherwise (a ``sync`` or ``rescan`` in progress has
        the server's ``shutdown_timeout``). Called by the server when it closes."""
        self._end_reason = "server shutting down"
        self._stopping = True
        self._end_subscription()
        if self._query is not None:
            self._query.cancel()
        if self._writing_paused:
            self._close_transport()
        self._wake()

    def abort(self) -> None:
        """Drop the connection at once."""
        # Never after connection_lost: a transport closed after flushing its buffer does not
        # expect abort() any more (it fails on the loop it has already let go of).
        if self._transport is not None and not self._is_lost():
            self._transport.abort()

    def statistics(self) -> ConnectionStatistics:
        """The connection's figures now."""
        sub = self._subscription
        transport = self._transport
        return ConnectionStatistics(
            id=self.id,
            peer=self.peer,
            connected=self._connected,
            requests=self._requests,
            errors=self._errors,
            write_buffer=transport.get_write_buffer_size() if transport is not None else 0,
            subscription=sub.statistics() if sub is not None else None,
        )

    # the request task ------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while (item := await self._next_item()) is not None:
                await self._handle(item)
        except ConnectionError:
            if self._end_reason == "closed by client":
                self._end_reason = "connection lost"
        finally:
            await self._finish()

    async def _next_item(self) -> bytes | OversizedLine | None:
        while True:
            if self._stopping or self._is_lost():
                return None
            if self._inbox:
                item = self._inbox.popleft()
                if isinstance(item, bytes):
                    self._inbox_bytes -= len(item)
                if self._reading_paused and not self._inbox_full(half=True):
                    self._resume_reading()
                return item
            if self._eof:
                return None
            self._wakeup = asyncio.get_running_loop().create_future()
            try:
                await self._wakeup
            finally:
                self._wakeup = None

    async def _handle(self, item: bytes | OversizedLine) -> None:
        self._busy = True
        try:
            await self._answer(item)
        finally:
            self._busy = False
            self._touch()

    async def _answer(self, item: bytes | OversizedLine) -> None:
        self._requests += 1
        log = structlog.get_logger()
        if isinstance(item, OversizedLine):
            await self._reply_error(
                None,
                ErrorCode.LINE_TOO_LONG,
                f"request line longer than {item.limit} bytes; discarded up to its newline",
            )
            return
        try:
            request = decode_request(item)
        except RequestError as exc:
            log.debug("request_invalid", conn=self.id, code=exc.code, message=exc.message)
            await self._reply_error(exc.request_id, exc.code, exc.message)
            return
        except Exception as exc:
            # Validation should have said what is wrong; whatever slipped through is a bug,
            # and must cost neither the connection nor the requests queued behind this one.
            log.exception("request_undecodable", conn=self.id)
            await self._reply_error(
                None, ErrorCode.INTERNAL_ERROR, f"internal error: {type(exc).__name__}"
            )
            return
        try:
            result = await self._execute(request)
        except ProtocolError as exc:
            await self._reply_error(request.id, exc.code, exc.message)
        except ConnectionError:
            raise
        except StoreError as exc:
            log.warning(
                "request_unavailable", conn=self.id, cmd=type(request).__name__, error=str(exc)
            )
            await self._reply_error(request.id, ErrorCode.UNAVAILABLE, f"index unavailable: {exc}")
        except Exception as exc:
            # A bug must not take the daemon or this connection down: log it, answer, carry on.
            log.exception("request_failed", conn=self.id, cmd=type(request).__name__)
            await self._reply_error(
                request.id, ErrorCode.INTERNAL_ERROR, f"internal error: {type(exc).__name__}"
            )
        else:
            if result is not None:
                # Only the encoded line waits for the client: the result's objects take several
                # times its bytes, and a client that does not read would hold them too.
                line = encode_result(request.id, result)
                del result
                await self._send_reply(request.id, line)

    async def _send_reply(self, request_id: Any, line: bytes) -> None:
        limit = self._context.options.max_reply_bytes
        if len(line) > limit:
            structlog.get_logger().warning(
                "reply_too_large", conn=self.id, bytes=len(line), limit=limit
            )
            del line  # let go of it before answering
            await self._reply_error(
                request_id,
                ErrorCode.REPLY_TOO_LARGE,
                f"the reply would be longer than {limit} bytes ([server] max_reply_bytes); "
                "ask for less (a lower limit, a narrower root)",
            )
            return
        await self._send(line, timeout=self._context.options.send_timeout)

    async def _execute(self, request: Request) -> object | None:
        if isinstance(request, SubscribeRequest):
            await self._subscribe(request)
            return None  # _subscribe replied itself, before the first event
        if isinstance(request, UnsubscribeRequest):
            return await self._unsubscribe()
        if isinstance(request, SyncRequest | RescanRequest):
            return await handle(self._context, request)
        # A question runs as a task of its own, so that a shutdown can give it up at once.
        question: Query = request
        query = asyncio.get_running_loop().create_task(handle(self._context, question))
        self._query = query
        try:
            return await query
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if query.cancelled() and current is not None and not current.cancelling():
                raise ProtocolError(
                    ErrorCode.SHUTTING_DOWN, "the daemon is stopping; ask again once it is back"
                ) from None
            raise
        finally:
            self._query = None

    async def _reply_error(self, request_id: Any, code: str, message: str) -> None:
        self._errors += 1
        await self._send(encode_error(request_id, code, message))

    # idleness ------------------------------------------------------------------------------

    def _touch(self) -> None:
        self._active = asyncio.get_running_loop().time()

    def _arm_idle(self, delay: float) -> None:
        if self._context.options.idle_timeout > 0:
            loop = asyncio.get_running_loop()
            self._idle_handle = loop.call_later(delay, self._check_idle)

    def _check_idle(self) -> None:
        """Close a connection that has sent nothing for the idle time, unless it holds a
        subscription or a request is in progress or waiting; otherwise look again later."""
        timeout = self._context.options.idle_timeout
        if self._stopping or self._is_lost():
            return
        if self._subscription is not None or self._busy or self._inbox:
            self._arm_idle(timeout)
            return
        remaining = self._active + timeout - asyncio.get_running_loop().time()
        if remaining > 0:
            self._arm_idle(remaining)
            return
        structlog.get_logger().info("client_idle", conn=self.id, seconds=timeout)
        self._write(
            encode_error(
                None,
                ErrorCode.IDLE_TIMEOUT,
                f"no request for {timeout:g} s and no subscription: connection closed",
            )
        )
        self._end_reason = "idle"
        self._stopping = True
        self._close_transport()
        self._wake()

    # subscriptions ---------------------------------------------------------------------------

    async def _subscribe(self, request: SubscribeRequest) -> None:
        if self._subscription is not None:
            raise ProtocolError(
                ErrorCode.ALREADY_SUBSCRIBED, "this connection is already subscribed"
            )
        # Read again: a shared database's changes when it is found restored from a dump.
        store = await self._context.backend.log_identity()
        if request.store is not None and request.store != store:
            await self._check_resume(request.store, request.since, store)
        broker = self._context.broker
        host = None if request.fleet else self._context.backend.host()
        sub = broker.subscribe(dataclasses.replace(request.filter, host=host), self._lagged)
        try:
            bounds = await self._context.backend.log_bounds()
            since = _start_of(request.since, bounds)
            sub.cursor = since
            complete = since + 1 >= bounds.first
            result = SubscribeResult(since, bounds.last, bounds.first, complete, store)
            self._subscription = sub
            await self._send(encode_result(request.id, result))
        except BaseException:
            self._subscription = None
            broker.unsubscribe(sub)
            raise
        structlog.get_logger().info(
            "client_subscribed", conn=self.id, since=since, head=bounds.last
        )
        self._stream = asyncio.get_running_loop().create_task(
            self._pump(sub, since), name=f"isccd-subscription-{self.id}"
        )

    async def _check_resume(self, earlier: str, since: int | None, store: str) -> None:
        """Accept a ``since`` from an earlier run of this log (``earlier``, the identity it
        had then) only if that run went as far: a log restored from an older copy ended its
        runs where the copy ended, and the numbers after that count other events.

        Raises:
            ProtocolError: ``store_mismatch``.
        """
        end = await self._context.backend.log_end(earlier)
        if end is None:
            raise ProtocolError(
                ErrorCode.STORE_MISMATCH,
                f"the store {earlier} is not this daemon's ({store}): its sequence "
                "numbers are another event log's (or this one's, restored from an older copy "
                "since); subscribe without since and store, and resynchronize",
            )
        if since is not None and since > end:
            raise ProtocolError(
                ErrorCode.STORE_MISMATCH,
                f"the event log went backwards: under {earlier} it ended at seq {end}, before "
                f"since {since} (the store was restored from an older copy; now {store}); "
                "the events after it are not the ones missed: subscribe without since and "
                "store, and resynchronize",
            )

    async def _unsubscribe(self) -> UnsubscribeResult:
        sub = self._subscription
        if sub is None:
            return UnsubscribeResult(subscribed=False)
        self._end_subscription()
        if self._stream is not None:
            await asyncio.wait([self._stream])
            self._stream = None
        return UnsubscribeResult(subscribed=True, seq=sub.cursor)

    async def _pump(self, sub: Subscription, since: int) -> None:
        """Replay the log after ``since``, then stream live events, until the end."""
        try:
            cursor = await self._replay(sub, since)
            if sub.closed:
                return
            sub.go_live(cursor)
            while batch := await sub.next_batch():
                self._write(b"".join([line for _, line in batch]))
                sub.handed_over(batch[-1][0], len(batch))
                await self._drain()
        except ConnectionError:
            pass
        except StoreError as exc:
            structlog.get_logger().warning(
                "subscription_replay_failed", conn=self.id, error=str(exc)
            )
            self._end_reason = "event log unavailable"
            self._close_transport()
        except Exception:
            structlog.get_logger().exception("subscription_failed", conn=self.id)
            self._end_reason = "internal error"
            self._close_transport()

    async def _replay(self, sub: Subscription, cursor: int) -> int:
        backend = self._context.backend
        page = self._context.options.replay_page
        while not sub.closed:
            events = await backend.events_after(cursor, page)
            lines = []
            for event in events:
                if event.seq <= cursor:
                    continue  # a backend must not return these; never send them twice
                cursor = event.seq
                if sub.filter.matches(event):
                    lines.append(encode_event(event))
            if lines and not sub.closed:
                self._write(b"".join(lines))
            sub.handed_over(cursor, len(lines))
            if lines:
                await self._drain()
            # A short page means the log had nothing more when it was read; everything
            # committed since then is in the queue, unless the queue overflowed meanwhile.
            if len(events) < page and not sub.take_overflow():
                break
        return cursor

    def _lagged(self, sub: Subscription) -> None:
        if sub is not self._subscription or self._transport is None:
            return
        queue_size = self._context.broker.queue_size
        structlog.get_logger().warning(
            "subscriber_lagged", conn=self.id, resume=sub.cursor, queue_size=queue_size
        )
        self._write(encode_event(lagged_event(sub.cursor, self._context.clock(), queue_size)))
        self._end_reason = "lagged"
        self._stopping = True
        self._end_subscription()
        self._close_transport()
        self._wake()

    def _end_subscription(self) -> None:
        if self._subscription is not None:
            self._context.broker.unsubscribe(self._subscription)
            self._subscription = None
        if self._stream is not None and self._stream is not asyncio.current_task():
            self._stream.cancel()

    # writing and closing ---------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    async def _send(self, data: bytes, *, timeout: float = 0.0) -> None:
        """Write ``data`` in pieces of the write buffer's size, each once the client took the
        one before (so that only one piece waits in the transport, and a client is judged by
        whether it reads, not by how long a large reply takes); a client that takes nothing
        for ``timeout`` seconds (if positive) is disconnected."""
        piece = self._context.options.write_buffer_bytes
        view = memoryview(data)
        for start in range(0, len(data), piece):
            if self._transport is None or self._transport.is_closing():
                raise ConnectionResetError("connection closing")
            self._transport.write(view[start : start + piece])
            await self._drain(timeout)

    async def _drain(self, timeout: float = 0.0) -> None:
        while self._writing_paused and not self._is_lost():
            waiter = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(waiter)
            if timeout <= 0:
                await waiter
                continue
            done, _ = await asyncio.wait([waiter], timeout=timeout)
            if not done:
                self._not_reading(timeout)
        if self._is_lost():
            raise ConnectionResetError("connection lost")

    def _not_reading(self, timeout: float) -> None:
        """The client took nothing of its reply for ``timeout`` seconds: drop it, and with it
        what was queued for it (it would not read a last line either)."""
        transport = self._transport
        unsent = transport.get_write_buffer_size() if transport is not None else 0
        structlog.get_logger().warning(
            "client_not_reading", conn=self.id, seconds=timeout, unsent=unsent
        )
        self._end_reason = "not reading"
        self._stopping = True
        self.abort()

    def _release_writers(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _close_transport(self) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        transport.close()  # flushes what is buffered first
        loop = asyncio.get_running_loop()
        self._abort_handle = loop.call_later(self._context.options.close_timeout, self.abort)

    async def _finish(self) -> None:
        self._end_subscription()
        try:
            if self._stream is not None:
                await asyncio.wait([self._stream])
            self._close_transport()
            if self._lost is not None:
                await asyncio.wait([self._lost], timeout=self._context.options.close_timeout)
        finally:
            self.abort()
            structlog.get_logger().info(
                "client_disconnected",
                conn=self.id,
                reason=self._end_reason,
                requests=self._requests,
                errors=self._errors,
                seconds=round(time.monotonic() - self._started, 3),
            )

    def _is_lost(self) -> bool:
        return self._lost is not None and self._lost.done()

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def _inbox_full(self, *, half: bool = False) -> bool:
        """Whether the buffered requests reach their bounds (``half``: half of them): a
        number of lines, and the bytes of one longest line."""
        options = self._context.options
        lines, size = options.max_pending_requests, options.max_line_bytes
        if half:
            lines, size = lines // 2, size // 2
        return len(self._inbox) >= lines or self._inbox_bytes >= size

    def _pause_reading(self) -> None:
        if not self._reading_paused and self._transport is not None:
            self._reading_paused = True
            self._transport.pause_reading()

    def _resume_reading(self) -> None:
        if self._reading_paused and self._transport is not None and not self._is_lost():
            self._reading_paused = False
            self._transport.resume_reading()


def _start_of(since: int | None, bounds: LogBounds) -> int:
    """Where a subscription starts: after ``since``, or after the log's head without it."""
    if since is None:
        return bounds.last
    if since > bounds.last:
        raise ProtocolError(
            ErrorCode.UNKNOWN_SEQ,
            f"since {since} is ahead of the event log (last seq {bounds.last}): the log was "
            "reset; subscribe without since and resynchronize",
        )
    return since
