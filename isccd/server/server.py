"""The socket server's lifecycle: bind, serve, and a bounded, idempotent shutdown.

:meth:`Server.start` creates the socket (see :mod:`isccd.server.listener`) and starts accepting;
from then on every connection is served by a :class:`~isccd.server.connection.Connection`.
:meth:`Server.close` stops accepting, lets requests in progress finish for at most
:attr:`~ServerOptions.shutdown_timeout` seconds, gives each connection
:attr:`~ServerOptions.close_timeout` seconds to flush, aborts what remains, and removes the
socket file.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import cast

import structlog

from isccd.protocol import ErrorCode, encode_error
from isccd.results import ServiceStatistics

from .backend import Backend
from .broker import Broker, BrokerStatistics
from .connection import Connection, ConnectionStatistics
from .handlers import Context
from .listener import SocketFile, open_socket
from .options import ServerOptions


@dataclass(frozen=True, slots=True)
class ServerStatistics:
    """The server's figures.

    Attributes:
        connections: Each open connection's figures.
        accepted: Connections accepted since start.
        refused: Connections refused because ``max_clients`` were open.
        broker: The broker's figures.
    """

    connections: tuple[ConnectionStatistics, ...]
    accepted: int
    refused: int
    broker: BrokerStatistics


class _Refused(asyncio.Protocol):
    """Answers a connection it cannot serve with one error line, then closes it."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        self._line = encode_error(None, code, message)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.WriteTransport, transport)  # a Unix stream socket's transport
        transport.write(self._line)
        transport.close()


class Server:
    """The daemon's Unix-socket server.

    Args:
        backend: The daemon's side (status, queries, the event log).
        broker: Where the daemon publishes committed events.
        options: Socket location, permissions and bounds.
        clock: Unix time now (injectable for tests).
    """

    def __init__(
        self,
        backend: Backend,
        broker: Broker,
        options: ServerOptions,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._options = options
        self._broker = broker
        self._context = Context(backend, broker, options, self.service_statistics, clock)
        self._socket: SocketFile | None = None
        self._server: asyncio.Server | None = None
        self._connections: dict[int, Connection] = {}
        self._next_id = 0
        self._refused = 0
        self._closing = False
        self._closed = asyncio.Event()

    @property
    def path(self) -> Path:
        """Where clients connect."""
        return self._options.socket_path

    async def start(self) -> None:
        """Create the socket and start accepting connections.

        Raises:
            SocketSetupError: The socket cannot be created safely (see
                :func:`~isccd.server.listener.open_socket`).
        """
        if self._socket is not None or self._closing:
            raise RuntimeError("a server starts once")
        options = self._options
        self._socket = await asyncio.to_thread(
            open_socket, options.socket_path, mode=options.socket_mode, group=options.socket_group
        )
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_unix_server(
                self._make_protocol, sock=self._socket.sock
            )
        except BaseException:
            self._socket.close()
            raise
        structlog.get_logger().info(
            "socket_listening",
            path=str(self._socket.path),
            mode=f"{options.socket_mode:04o}",
            group=options.socket_group,
        )

    async def close(self) -> None:
        """Stop accepting, close every connection within the timeouts, remove the socket file.

        Idempotent; a second caller waits for the first to finish.
        """
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        try:
            if self._server is not None:
                self._server.close()
            connections = list(self._connections.values())
            for connection in connections:
                connection.shutdown()
            tasks = [c.task for c in connections if c.task is not None]
            if tasks:
                _, pending = await asyncio.wait(tasks, timeout=self._options.shutdown_timeout)
                for task in pending:
                    task.cancel()
                if pending:
                    await asyncio.wait(pending, timeout=self._options.close_timeout)
                for connection in connections:
                    connection.abort()
            if self._server is not None:
                await self._server.wait_closed()
        finally:
            if self._socket is not None:
                self._socket.close()
            self._closed.set()
            structlog.get_logger().info("socket_closed", path=str(self._options.socket_path))

    async def __aenter__(self) -> Server:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def statistics(self) -> ServerStatistics:
        """The server's figures now."""
        return ServerStatistics(
            connections=tuple(c.statistics() for c in self._connections.values()),
            accepted=self._next_id,
            refused=self._refused,
            broker=self._broker.statistics(),
        )

    def service_statistics(self) -> ServiceStatistics:
        """The summary ``status`` reports."""
        broker = self._broker.statistics()
        return ServiceStatistics(
            connections=len(self._connections),
            subscribers=broker.subscribers,
            events_published=broker.published,
            subscribers_lagged=broker.lagged,
        )

    def _make_protocol(self) -> asyncio.Protocol:
        if self._closing:
            return _Refused(ErrorCode.SHUTTING_DOWN, "the daemon is stopping")
        if len(self._connections) >= self._options.max_clients:
            self._refused += 1
            structlog.get_logger().warning("client_refused", connections=len(self._connections))
            return _Refused(ErrorCode.TOO_MANY_CLIENTS, "too many clients; try again later")
        self._next_id += 1
        connection = Connection(self._context, self._next_id, on_close=self._closed_connection)
        # Counted now, as it is accepted: asyncio makes the protocols of a burst of accepted
        # connections before any of them is told it is connected, so a count taken at
        # connection_made would let the whole burst past the limit.
        self._connections[connection.id] = connection
        return connection

    def _closed_connection(self, connection: Connection) -> None:
        self._connections.pop(connection.id, None)
