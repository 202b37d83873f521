"""Following the event log of a database a fleet shares.

With a PostgreSQL store, several daemons (one per host name) write one event log, in one order
(``docs/protocol.md``, "The event log of a shared database"). Each daemon follows it with a
:class:`FleetLog`:

- it reads the log from where it stopped, page by page, on a connection of its own (a named
  thread runs the reads), whenever the database notifies that a transaction logged events (its
  own included), and every :data:`POLL` seconds anyway (a notification sent while the listener
  reconnected is lost; the log is not);
- it hands every event it reads, of every host, to the broker in log order: the subscribers
  then filter them by host (``subscribe`` follows its host's by default, ``fleet`` every
  host's). The daemon's own commits are published this way too, never directly, so that one
  order holds for all;
- it keeps the in-memory index of the fleet's codes current: the files that other hosts'
  ``file.*`` events changed are read again and offered to the store's owner thread
  (:mod:`isccd.pipeline.fleetindex`), which applies them before its next use of the index (and
  is asked to at once when :data:`MAX_WAITING` files wait, which bounds the memory they hold);
- every :data:`CHECK_EVERY` seconds it measures the database's round trip and reads which
  hosts opened it and when each was last heard from (``isccd status``); every
  :data:`HEARTBEAT_EVERY` seconds it tells the fleet that this host is alive.

When the database cannot be reached, the follower says so in :meth:`FleetLog.status`, logs it
once, and tries again after a pause that doubles up to :data:`MAX_PAUSE`; it resumes from the
last event it read, so a database restart loses no event and publishes none twice. The
daemon runs it supervised (a bug restarts it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import structlog

from isccd.errors import StoreError
from isccd.model import Event
from isccd.pipeline import FleetIndex, IndexUpdate, Pipeline, read_update
from isccd.results import DatabaseStatus, FleetHost
from isccd.store import Store, open_store, redact_url

if TYPE_CHECKING:
    from isccd.store.pglisten import Listener

T = TypeVar("T")

#: Events read at once.
PAGE = 1000
#: Seconds between reads of the log while no notification comes.
POLL = 5.0
#: Seconds between measurements of the round trip and reads of the hosts.
CHECK_EVERY = 5.0
#: Seconds between heartbeats.
HEARTBEAT_EVERY = 30.0
#: The longest pause between attempts to reach the database.
MAX_PAUSE = 30.0
#: Files waiting to enter the index after which the follower waits for the owner thread to
#: apply them (about 100 bytes each).
MAX_WAITING = 20_000


class FleetLog:
    """Follows the shared event log for one daemon.

    Args:
        url: The database's URL.
        host: This daemon's host name.
        pipeline: The daemon's pipeline (open).
        index: Its in-memory index's place in the shared log, kept current: the follower
            starts reading where the index stands.
        publish: Hands events to the broker, in order (called on the event loop).
        clock: Unix time.
    """

    def __init__(
        self,
        url: str,
        host: str,
        pipeline: Pipeline,
        index: FleetIndex,
        publish: Callable[[list[Event]], None],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._url = url
        self._host = host
        self._pipeline = pipeline
        self._index = index
        self._publish = publish
        self._clock = clock
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="isccd-fleet")
        self._reader: Store | None = None
        self._listener: Listener | None = None
        self._position = index.position
        self._connected = False
        self._error: str | None = None
        self._latency: float | None = None
        self._checked: float | None = None
        self._hosts: tuple[FleetHost, ...] = ()
        self._next_check = 0.0
        self._next_heartbeat = 0.0

    @property
    def position(self) -> int:
        """The last sequence number read (where the index stood, before the first read)."""
        return self._position

    def status(self) -> DatabaseStatus:
        """The database as the follower last saw it."""
        return DatabaseStatus(
            url=redact_url(self._url),
            host=self._host,
            connected=self._connected,
            latency_ms=None if self._latency is None else round(self._latency * 1000, 3),
            checked=self._checked,
            position=self.position,
            hosts=self._hosts,
            error=self._error,
        )

    async def run(self) -> None:
        """Follow the log until cancelled (started again, from where it was)."""
        pause = 1.0
        while True:
            try:
                await self._follow(self._index)
            except StoreError as exc:
                pause = 1.0 if self._connected else min(MAX_PAUSE, pause * 2)
                self._down(str(exc))
                await asyncio.sleep(pause)

    async def close(self) -> None:
        """Close the connections and the reader's thread; idempotent."""
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.close()
        await asyncio.get_running_loop().run_in_executor(self._thread, self._close_reader)
        self._thread.shutdown(wait=False)

    # -- following -----------------------------------------------------------------------------

    async def _follow(self, index: FleetIndex) -> None:
        listener = self._listener or self._new_listener()
        await listener.connect()  # listening before reading: nothing committed after is missed
        while True:
            started = time.perf_counter()
            events, update = await self._in_thread(self._read, self.position)
            self._up(time.perf_counter() - started)
            if events:
                await self._into_index(index, update)
                self._position = events[-1].seq
                self._publish(events)
            if len(events) == PAGE:
                continue
            await self._check(listener)
            await listener.wait(POLL)

    def _new_listener(self) -> Listener:
        from isccd.store.pglisten import Listener  # noqa: PLC0415 -- imports the driver

        self._listener = Listener(self._url, host=self._host)
        return self._listener

    async def _into_index(self, index: FleetIndex, update: IndexUpdate) -> None:
        """Offer what other hosts changed to the owner thread (which applies it before it
        next uses the index); when much is waiting, have it applied now."""
        index.offer(update)
        if index.waiting > MAX_WAITING:
            await self._pipeline.refresh()

    async def _check(self, listener: Listener) -> None:
        now = self._clock()
        if now >= self._next_heartbeat:
            await listener.heartbeat(now)
            self._next_heartbeat = now + HEARTBEAT_EVERY
        if now >= self._next_check:
            self._latency = await listener.ping()
            self._checked = now
            found = await self._in_thread(self._read_hosts)
            self._hosts = tuple(h for h in found if h.name != self._host)
            self._next_check = now + CHECK_EVERY

    def _up(self, seconds: float) -> None:
        if not self._connected and self._error is not None:
            structlog.get_logger().info("fleet_log_resumed", position=self.position)
        self._connected, self._error = True, None
        if self._latency is None:
            self._latency = seconds

    def _down(self, error: str) -> None:
        if self._error is None:
            structlog.get_logger().warning(
                "fleet_log_unavailable", error=error, position=self.position
            )
        self._connected, self._error = False, error

    # -- the reader's thread -------------------------------------------------------------------

    async def _in_thread(self, fn: Callable[..., T], *args: object) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, functools.partial(fn, *args))

    def _store(self) -> Store:
        if self._reader is None:
            self._reader = open_store(self._url, host=self._host, readonly=True)
        return self._reader

    def _read(self, after: int) -> tuple[list[Event], IndexUpdate]:
        """Events after ``after`` and what the other hosts' ones changed (on the thread)."""
        store = self._store()
        events = store.events_since(after, PAGE, fleet=True)
        upto = events[-1].seq if events else after
        return events, read_update(store, events, upto)

    def _read_hosts(self) -> list[FleetHost]:
        from isccd.store.postgres import PostgresStore  # noqa: PLC0415 -- imports the driver

        store = self._store()
        assert isinstance(store, PostgresStore)
        return [FleetHost(h.name, h.heard, h.last_seq) for h in store.hosts()]

    def _close_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()
