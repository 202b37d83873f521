"""Listening to a fleet's shared database: woken when another transaction logged events.

A transaction that logs events sends ``NOTIFY isccd_events`` (:data:`~isccd.store.pgschema.
EVENTS_CHANNEL`), which PostgreSQL delivers to every listening session once it commits. A
notification only says that the log has something new: the log table is the truth, and the
listener's reader reads it from where it stopped (notifications sent while a listener is
disconnected are lost; so is nothing else).

:class:`Listener` holds one asynchronous, autocommit connection of its own (a pooled session
could be replaced, losing its ``LISTEN``), connected on first use and again after it broke.
It also measures the database's round trip (:meth:`Listener.ping`) and tells the fleet that
this host is alive (:meth:`Listener.heartbeat`): a single-row update in autocommit, outside the
writers' turns, which waits at most for this host's own transaction.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from isccd.errors import StoreUnavailableError
from isccd.store.pgschema import EVENTS_CHANNEL
from isccd.store.pgurl import libpq_url, redact_url


class Listener:
    """A ``LISTEN`` on the event channel of a fleet's database, for one host.

    Args:
        url: The database's URL (libpq).
        host: This host's name.
        connect_timeout: Seconds to wait for a connection.
    """

    def __init__(self, url: str, *, host: str, connect_timeout: float = 10.0) -> None:
        self._url = libpq_url(url)
        self._redacted = redact_url(url)
        self._host = host
        self._timeout = connect_timeout
        self._conn: psycopg.AsyncConnection[Any] | None = None

    async def _session(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is not None and not self._conn.broken and not self._conn.closed:
            return self._conn
        await self.close()
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._url,
                autocommit=True,
                connect_timeout=max(2, int(self._timeout)),
                fallback_application_name=f"isccd {self._host} listener",
            )
            await conn.execute(f"LISTEN {EVENTS_CHANNEL}".encode())
        except psycopg.Error as exc:
            raise self._lost(exc) from None
        self._conn = conn
        return conn

    def _lost(self, exc: psycopg.Error) -> StoreUnavailableError:
        return StoreUnavailableError(f"the index database {self._redacted} is unavailable ({exc})")

    async def connect(self) -> None:
        """Connect and listen now.

        Raises:
            StoreUnavailableError: The database cannot be reached.
        """
        await self._session()

    async def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a notification, then take any others already
        there.

        Returns:
            True when one came.

        Raises:
            StoreUnavailableError: The connection was lost (the next call connects again).
        """
        conn = await self._session()
        try:
            came = False
            async for _ in conn.notifies(timeout=timeout, stop_after=1):
                came = True
            if came:
                async for _ in conn.notifies(timeout=0.0):
                    pass
        except psycopg.Error as exc:
            await self.close()
            raise self._lost(exc) from None
        return came

    async def ping(self) -> float:
        """The seconds a trivial statement takes there and back.

        Raises:
            StoreUnavailableError: The connection was lost.
        """
        conn = await self._session()
        start = time.perf_counter()
        try:
            await conn.execute("SELECT 1")
        except psycopg.Error as exc:
            await self.close()
            raise self._lost(exc) from None
        return time.perf_counter() - start

    async def heartbeat(self, now: float) -> None:
        """Note that this host was heard from now.

        Raises:
            StoreUnavailableError: The connection was lost.
        """
        conn = await self._session()
        try:
            await conn.execute(
                "UPDATE hosts SET seen_at = greatest(seen_at, %s) WHERE name = %s",
                (now, self._host),
            )
        except psycopg.Error as exc:
            await self.close()
            raise self._lost(exc) from None

    async def close(self) -> None:
        """Close the connection; idempotent."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()
