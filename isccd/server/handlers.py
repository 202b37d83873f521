"""The commands that ask the daemon something: hello, status, get, similar, dupes, watched,
rescan, sync.

Each takes a validated request, resolves its paths inside the watched roots (in a thread, since
that examines the file system), asks the :class:`~isccd.server.backend.Backend` and returns the
result object of the reply. Subscriptions are connection state and live in
:mod:`isccd.server.connection`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from isccd.errors import ProtocolError
from isccd.model import EventType
from isccd.protocol import (
    PROTOCOL_VERSION,
    SUPPORTED_VERSIONS,
    Command,
    DirsRequest,
    DupesRequest,
    ErrorCode,
    GetRequest,
    HelloRequest,
    HelloResult,
    RescanRequest,
    SimilarRequest,
    StatusRequest,
    SyncRequest,
    SyncResult,
    WatchedRequest,
)
from isccd.results import DirsQuery, DupesQuery, ServiceStatistics, WatchedQuery

from .backend import Backend
from .broker import Broker
from .options import ServerOptions
from .paths import resolve_in_roots

Query = (
    HelloRequest
    | StatusRequest
    | GetRequest
    | SimilarRequest
    | DupesRequest
    | DirsRequest
    | WatchedRequest
)
Action = RescanRequest | SyncRequest
_Rooted = TypeVar("_Rooted", DupesQuery, DirsQuery, WatchedQuery)


@dataclass(frozen=True, slots=True)
class Context:
    """What every connection of a server shares.

    Attributes:
        backend: The daemon's side.
        broker: The event broker.
        options: The server's options.
        statistics: The server's figures for ``status``.
        clock: Unix time now (injectable for tests).
    """

    backend: Backend
    broker: Broker
    options: ServerOptions
    statistics: Callable[[], ServiceStatistics]
    clock: Callable[[], float]


async def resolve(context: Context, path: str) -> str:
    """Resolve a client's path inside the current roots.

    Raises:
        ProtocolError: ``outside_roots`` or ``invalid_argument``
            (see :func:`~isccd.server.paths.resolve_in_roots`).
    """
    roots = tuple(context.backend.roots())
    if not roots:
        raise ProtocolError(ErrorCode.OUTSIDE_ROOTS, "no roots are watched")
    return await asyncio.to_thread(resolve_in_roots, path, roots)


async def handle(context: Context, request: Query | Action) -> object:
    """Execute a request and return its result (a dataclass, that
    :func:`isccd.protocol.encode_result` writes).

    Raises:
        ProtocolError: The error reply to send.
        StoreError: The index cannot answer now.
    """
    backend = context.backend
    result: object
    match request:
        case HelloRequest():
            result = _hello(context, request)
        case StatusRequest():
            status = await backend.status()
            result = dataclasses.replace(status, server=context.statistics())
        case GetRequest(path=path, host=host):
            resolved = await resolve(context, path)
            result = await backend.get(resolved, host)
            if result is None:
                raise ProtocolError(ErrorCode.NOT_FOUND, f"{resolved!r} is not in the index")
        case SimilarRequest(query=query):
            if query.path is not None:
                query = dataclasses.replace(query, path=await resolve(context, query.path))
            result = await backend.similar(query)
        case DupesRequest(query=query):
            result = await backend.dupes(await _rooted(context, query))
        case DirsRequest(query=folders):
            result = await backend.dup_dirs(await _rooted(context, folders))
        case WatchedRequest(query=watch):
            result = await backend.watched(await _rooted(context, watch))
        case RescanRequest(path=path):
            target = None if path is None else await resolve(context, path)
            result = await backend.rescan(target)
        case SyncRequest(path=path):
            target = None if path is None else await resolve(context, path)
            result = SyncResult(await backend.sync(target))
    return result


async def _rooted(context: Context, query: _Rooted) -> _Rooted:
    """The query with its ``root`` (if any) resolved inside the watched roots."""
    if query.root is None:
        return query
    return dataclasses.replace(query, root=await resolve(context, query.root))


def _hello(context: Context, request: HelloRequest) -> HelloResult:
    if request.protocol is not None and request.protocol not in SUPPORTED_VERSIONS:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_VERSION,
            f"protocol {request.protocol} is not supported; this server speaks "
            f"{', '.join(map(str, sorted(SUPPORTED_VERSIONS)))}",
        )
    return HelloResult(
        protocol=PROTOCOL_VERSION if request.protocol is None else request.protocol,
        server=context.options.server_name,
        commands=tuple(c.value for c in Command),
        events=tuple(t.value for t in EventType),
        max_line_bytes=context.options.max_line_bytes,
        subscriber_queue=context.broker.queue_size,
        store=context.backend.store_id(),
    )
