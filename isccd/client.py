"""Clients of the daemon's socket: :class:`Client` (blocking, for the command line) and
:class:`AsyncClient` (asyncio, for programs and tests).

Both speak :mod:`isccd.protocol`: they send typed requests and return typed results. Replies are
matched to requests by id; events that arrive while a reply is awaited are kept, in order, for
:meth:`Client.events`. ``last_seq`` always holds the point to resume a subscription from: the
``since`` of the subscription, then the ``seq`` of each event received; ``store`` the identity
of the store those sequence numbers belong to, to give back with ``since``.

Errors: :class:`~isccd.errors.DaemonUnavailableError` when no daemon answers on the socket or
the connection is lost; :class:`~isccd.errors.ProtocolError` for an error reply (its ``code``
is an :class:`~isccd.protocol.ErrorCode` value) or a reply that cannot be read.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import itertools
import os
import socket
import stat
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Self, TypeVar

from isccd import __version__
from isccd.errors import DaemonUnavailableError, ProtocolError
from isccd.model import Event, EventType
from isccd.protocol import (
    PROTOCOL_VERSION,
    DirsRequest,
    DupesRequest,
    ErrorCode,
    EventFilter,
    GetRequest,
    HelloRequest,
    HelloResult,
    Reply,
    Request,
    RescanRequest,
    RescanResult,
    SimilarRequest,
    StatusRequest,
    SubscribeRequest,
    SubscribeResult,
    SyncRequest,
    SyncResult,
    UnknownEvent,
    UnsubscribeRequest,
    UnsubscribeResult,
    WatchedRequest,
    decode_message,
    encode_request,
    from_wire,
    normalize_path,
)
from isccd.results import (
    DaemonStatus,
    DupesQuery,
    DupesResult,
    FileInfo,
    SimilarQuery,
    SimilarResult,
    WatchedQuery,
    WatchedResult,
)
from isccd.results.folders import DirsResult
from isccd.results.queries import DirsQuery

T = TypeVar("T")

#: Longest line accepted from the server (a large ``dupes`` reply is one line).
MAX_REPLY_BYTES = 256 << 20

CLIENT_NAME = f"isccd-client {__version__}"


def _unavailable(path: Path, exc: OSError) -> DaemonUnavailableError:
    if isinstance(exc, PermissionError):
        return DaemonUnavailableError(
            f"permission denied connecting to {str(path)!r}: connecting needs write access to "
            "the socket (be a member of its group)"
        )
    try:
        mode = path.stat().st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISSOCK(mode):
        return DaemonUnavailableError(
            f"{str(path)!r} exists and is not a socket: no isccd daemon can listen there "
            "(a wrong --socket, ISCCD_SERVER__SOCKET or [server] socket?)"
        )
    return DaemonUnavailableError(
        f"no isccd daemon is listening on {str(path)!r} ({exc.strerror or exc}); "
        "start one with `isccd run`"
    )


def _closed(path: Path) -> DaemonUnavailableError:
    return DaemonUnavailableError(f"the daemon at {str(path)!r} closed the connection")


def _result(cls: type[T], result: Mapping[str, Any]) -> T:
    try:
        return from_wire(cls, result)
    except ValueError as exc:
        raise ProtocolError(ErrorCode.INVALID_REPLY, f"unexpected reply: {exc}") from None


def _subscribe_request(
    request_id: int,
    since: int | None,
    *,
    types: Collection[EventType | str] | None,
    roots: Collection[str] | None,
    store: str | None,
    fleet: bool,
) -> SubscribeRequest:
    event_filter = EventFilter(
        types=None if types is None else frozenset(EventType(t) for t in types),
        roots=None if roots is None else frozenset(normalize_path(r) for r in roots),
    )
    return SubscribeRequest(request_id, since, event_filter, store, fleet)


class _State:
    """What both clients track: request ids, events kept aside, the resume point."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.pending: collections.deque[Event | UnknownEvent] = collections.deque()
        self.last_seq: int | None = None
        self.store: str | None = None
        self.eof = False

    def accept(self, message: Reply | Event | UnknownEvent, request_id: int | None) -> Reply | None:
        """File a message read from the server; return it if it is the awaited reply."""
        if not isinstance(message, Reply):
            self.pending.append(message)
            return None
        if message.id == request_id or (message.id is None and not message.ok):
            return message
        raise ProtocolError(ErrorCode.INVALID_REPLY, f"reply to an unknown request {message.id}")

    def take(self) -> Event | None:
        """The next event kept aside; ``None`` for one of an unknown type (skipped)."""
        event = self.pending.popleft()
        self.last_seq = event.seq
        return event if isinstance(event, Event) else None


class Client:
    """A blocking connection to the daemon.

    Args:
        path: The daemon's socket.
        timeout: Seconds to wait for the connection and for each reply (``None``: forever).
            Waiting for events is never timed out.

    Raises:
        DaemonUnavailableError: Nothing answers on ``path``.
    """

    def __init__(self, path: Path | str, *, timeout: float | None = 30.0) -> None:
        self.path = Path(path)
        self._timeout = timeout
        self._state = _State()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(os.fspath(self.path))
        except OSError as exc:
            self._sock.close()
            raise _unavailable(self.path, exc) from None
        self._file: BinaryIO = self._sock.makefile("rb")

    @property
    def last_seq(self) -> int | None:
        """Where a subscription would resume: the last event's seq, or the subscription's since."""
        return self._state.last_seq

    @property
    def store(self) -> str | None:
        """The identity of the store :attr:`last_seq` belongs to (from the subscription)."""
        return self._state.store

    def close(self) -> None:
        """Close the connection. Idempotent."""
        self._file.close()
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def hello(self) -> HelloResult:
        """Protocol version, server version, commands and events."""
        return self._call(HelloResult, lambda i: HelloRequest(i, PROTOCOL_VERSION, CLIENT_NAME))

    def status(self) -> DaemonStatus:
        """The daemon's status."""
        return self._call(DaemonStatus, StatusRequest)

    def get(self, path: str, host: str | None = None) -> FileInfo:
        """What the index knows about an absolute ``path`` (``host``: only its duplicates on
        that host)."""
        return self._call(FileInfo, lambda i: GetRequest(i, path, host))

    def similar(self, query: SimilarQuery) -> SimilarResult:
        """Files near a file's or a code's units."""
        return self._call(SimilarResult, lambda i: SimilarRequest(i, query))

    def dupes(self, query: DupesQuery | None = None) -> DupesResult:
        """Duplicate groups."""
        return self._call(DupesResult, lambda i: DupesRequest(i, query or DupesQuery()))

    def dup_dirs(self, query: DirsQuery) -> DirsResult:
        """Duplicate folders."""
        return self._call(DirsResult, lambda i: DirsRequest(i, query))

    def watched(self, query: WatchedQuery) -> WatchedResult:
        """The indexed files matching a watchlist's references."""
        return self._call(WatchedResult, lambda i: WatchedRequest(i, query))

    def rescan(self, path: str | None = None) -> RescanResult:
        """Start a rescan of the root holding ``path``, or of every root."""
        return self._call(RescanResult, lambda i: RescanRequest(i, path))

    def sync(self, path: str | None = None, *, timeout: float | None = None) -> int:
        """Wait until every change made on disk so far is indexed; return the last seq then."""
        with self.waiting(timeout):
            return self._call(SyncResult, lambda i: SyncRequest(i, path)).seq

    @contextlib.contextmanager
    def waiting(self, timeout: float | None) -> Iterator[None]:
        """Wait up to ``timeout`` seconds (``None``: as long as it takes) for each reply to a
        request made inside the block, e.g. a ``similar`` that codes a large file."""
        self._sock.settimeout(timeout)
        try:
            yield
        finally:
            self._sock.settimeout(self._timeout)

    def subscribe(
        self,
        since: int | None = None,
        *,
        types: Collection[EventType | str] | None = None,
        roots: Collection[str] | None = None,
        store: str | None = None,
        fleet: bool = False,
    ) -> SubscribeResult:
        """Subscribe; then read the events with :meth:`events`.

        Args:
            since: Replay the events after this seq first; ``None``: only new events.
            types: Only these event types.
            roots: Only events of these roots (and daemon-wide ones).
            store: The identity of the store ``since`` comes from (:attr:`store` of an earlier
                subscription): refused with ``store_mismatch`` if the daemon's is another.
            fleet: Every host's events (of a fleet sharing the store), not only the daemon's.
        """
        result = self._call(
            SubscribeResult,
            lambda i: _subscribe_request(
                i, since, types=types, roots=roots, store=store, fleet=fleet
            ),
        )
        self._state.last_seq, self._state.store = result.since, result.store
        return result

    def unsubscribe(self) -> UnsubscribeResult:
        """End the subscription; events received before the reply stay readable."""
        return self._call(UnsubscribeResult, UnsubscribeRequest)

    def events(self) -> Iterator[Event]:
        """The subscription's events, as they come; ends when the server closes the connection.

        A ``subscriber.lagged`` event is the last one: resume with ``since`` = its ``seq``.
        """
        self._sock.settimeout(None)
        try:
            while True:
                while self._state.pending:
                    if (event := self._state.take()) is not None:
                        yield event
                if self._state.eof:
                    return
                self._read_one(None)
        finally:
            self._sock.settimeout(self._timeout)

    def _call(self, cls: type[T], make: Callable[[int], Request]) -> T:
        request_id = next(self._state.ids)
        request = make(request_id)
        try:
            self._sock.sendall(encode_request(request))
        except OSError as exc:
            raise _unavailable(self.path, exc) from None
        while True:
            reply = self._read_one(request_id)
            if reply is not None:
                return _result(cls, reply.unwrap())
            if self._state.eof:
                raise _closed(self.path)

    def _read_one(self, request_id: int | None) -> Reply | None:
        try:
            line = self._file.readline(MAX_REPLY_BYTES)
        except TimeoutError:
            raise DaemonUnavailableError(
                f"the daemon at {str(self.path)!r} did not answer within {self._timeout} s"
            ) from None
        except OSError as exc:
            raise _unavailable(self.path, exc) from None
        if not line.endswith(b"\n"):
            self._state.eof = True
            return None
        return self._state.accept(decode_message(line[:-1]), request_id)


class AsyncClient:
    """An asyncio connection to the daemon. Open it with :meth:`connect`."""

    def __init__(
        self, path: Path, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.path = path
        self._reader = reader
        self._writer = writer
        self._state = _State()

    @classmethod
    async def connect(cls, path: Path | str, *, limit: int = MAX_REPLY_BYTES) -> AsyncClient:
        """Connect to the daemon at ``path``.

        Args:
            path: The daemon's socket.
            limit: The longest line accepted. Up to twice as much is read ahead of the
                caller; past that the socket is left unread, so that a subscriber reading
                slowly is lagged by the daemon rather than buffer without bound.

        Raises:
            DaemonUnavailableError: Nothing answers there.
        """
        try:
            reader, writer = await asyncio.open_unix_connection(path, limit=limit)
        except OSError as exc:
            raise _unavailable(Path(path), exc) from None
        return cls(Path(path), reader, writer)

    @property
    def last_seq(self) -> int | None:
        """Where a subscription would resume (see :attr:`Client.last_seq`)."""
        return self._state.last_seq

    @property
    def store(self) -> str | None:
        """The identity of the store :attr:`last_seq` belongs to (see :attr:`Client.store`)."""
        return self._state.store

    async def close(self) -> None:
        """Close the connection. Idempotent."""
        self._writer.close()
        with contextlib.suppress(OSError):  # the server may already have reset it
            await self._writer.wait_closed()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def request(self, request: Request) -> Reply:
        """Send any request and return its reply, error or not (``id`` is set by the client)."""
        request_id = next(self._state.ids)
        request = dataclasses.replace(request, id=request_id)
        self._writer.write(encode_request(request))
        await self._writer.drain()
        while True:
            reply = await self._read_one(request_id)
            if reply is not None:
                return reply
            if self._state.eof:
                raise _closed(self.path)

    async def send_raw(self, data: bytes) -> None:
        """Send bytes as they are (to test how the server copes with malformed input)."""
        self._writer.write(data)
        await self._writer.drain()

    async def read_reply(self) -> Reply:
        """Read until the next reply, keeping events aside."""
        while True:
            line = await self._readline()
            if line is None:
                raise DaemonUnavailableError("connection closed")
            message = decode_message(line)
            if isinstance(message, Reply):
                return message
            self._state.pending.append(message)

    async def hello(self) -> HelloResult:
        """Protocol version, server version, commands and events."""
        reply = await self.request(HelloRequest(0, PROTOCOL_VERSION, CLIENT_NAME))
        return _result(HelloResult, reply.unwrap())

    async def status(self) -> DaemonStatus:
        """The daemon's status."""
        return _result(DaemonStatus, (await self.request(StatusRequest(0))).unwrap())

    async def get(self, path: str, host: str | None = None) -> FileInfo:
        """What the index knows about an absolute ``path`` (see :meth:`Client.get`)."""
        return _result(FileInfo, (await self.request(GetRequest(0, path, host))).unwrap())

    async def sync(self, path: str | None = None) -> int:
        """Wait until every change made on disk so far is indexed; return the last seq then."""
        return _result(SyncResult, (await self.request(SyncRequest(0, path))).unwrap()).seq

    async def subscribe(
        self,
        since: int | None = None,
        *,
        types: Collection[EventType | str] | None = None,
        roots: Collection[str] | None = None,
        store: str | None = None,
        fleet: bool = False,
    ) -> SubscribeResult:
        """Subscribe; then read the events with :meth:`events` (see :meth:`Client.subscribe`)."""
        request = _subscribe_request(0, since, types=types, roots=roots, store=store, fleet=fleet)
        reply = await self.request(request)
        result = _result(SubscribeResult, reply.unwrap())
        self._state.last_seq, self._state.store = result.since, result.store
        return result

    async def unsubscribe(self) -> UnsubscribeResult:
        """End the subscription."""
        return _result(UnsubscribeResult, (await self.request(UnsubscribeRequest(0))).unwrap())

    async def events(self) -> AsyncIterator[Event]:
        """The subscription's events as they come; ends when the server closes the connection."""
        while True:
            while self._state.pending:
                if (event := self._state.take()) is not None:
                    yield event
            if self._state.eof:
                return
            await self._read_one(None)

    async def _read_one(self, request_id: int | None) -> Reply | None:
        line = await self._readline()
        if line is None:
            return None
        return self._state.accept(decode_message(line), request_id)

    async def _readline(self) -> bytes | None:
        try:
            line = await self._reader.readline()
        except (ConnectionError, asyncio.IncompleteReadError):
            line = b""
        if not line.endswith(b"\n"):
            self._state.eof = True
            return None
        return line[:-1]
