"""A fake daemon for the socket server: an in-memory event log and index behind the Backend API."""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from isccd.errors import ProtocolError, StoreError, UnknownWatchlistError
from isccd.model import Event, EventType, RelationKind, UnitType
from isccd.protocol import ErrorCode, RescanResult
from isccd.results import (
    DaemonStatus,
    DupesQuery,
    DupesResult,
    FileInfo,
    Match,
    RootStatus,
    SimilarQuery,
    SimilarResult,
    WatchedQuery,
    WatchedResult,
)
from isccd.results.folders import DirsResult
from isccd.results.queries import DirsQuery
from isccd.server import Backend, Broker, LogBounds, Server, ServerOptions, ServerStatistics

T = TypeVar("T")

#: The fake daemon's host name.
HOST = "host-a"


class FakeBackend:
    """Implements :class:`isccd.server.Backend` over lists and dicts.

    ``commit`` appends to the log (what the store does); publishing is left to the test, so it
    can hold events committed but not yet published, as the daemon does between its commit and
    its call to ``Broker.publish``.
    """

    def __init__(self, roots: Sequence[str], *, clock: float = 1_700_000_000.0) -> None:
        self._roots = list(roots)
        self.log: list[Event] = []
        self._seqs: list[int] = []
        self.first = 1
        self.files: dict[str, FileInfo] = {}
        self.calls: list[tuple[str, Any]] = []
        self.sync_gate: asyncio.Event | None = None
        self.fail_with: BaseException | None = None
        self.replay_error: StoreError | None = None
        self.replay_pause = 0
        self.store = "00000000-0000-4000-8000-000000000001"
        self._time = clock

    # test controls ---------------------------------------------------------------------------

    def commit(
        self, event_type: EventType, root: str, path: str, *, host: str = "", **data: Any
    ) -> Event:
        seq = (self._seqs[-1] if self._seqs else self.first - 1) + 1
        self._time += 0.001
        event = Event(seq, event_type, self._time, root, path, data, host)
        self.log.append(event)
        self._seqs.append(seq)
        return event

    def prune(self, upto: int) -> None:
        """Forget events up to ``upto`` (retention)."""
        keep = bisect.bisect_right(self._seqs, upto)
        self.log, self._seqs = self.log[keep:], self._seqs[keep:]
        self.first = upto + 1

    def set_roots(self, roots: Sequence[str]) -> None:
        self._roots = list(roots)

    def _check(self) -> None:
        if self.fail_with is not None:
            raise self.fail_with

    # Backend ---------------------------------------------------------------------------------

    def roots(self) -> Sequence[str]:
        return list(self._roots)

    def store_id(self) -> str:
        return self.store

    def host(self) -> str:
        return HOST

    async def log_identity(self) -> str:
        return self.store

    async def log_end(self, store: str) -> int | None:
        return (self.log[-1].seq if self.log else 0) if store == self.store else None

    async def status(self) -> DaemonStatus:
        self._check()
        return DaemonStatus(
            version="isccd test",
            pid=os.getpid(),
            state="ready",
            started=1_700_000_000.0,
            roots=tuple(RootStatus(r, "inotify", len(self.files)) for r in self._roots),
            queue_depth=3,
            files_indexed=len(self.files),
            last_seq=self._seqs[-1] if self._seqs else self.first - 1,
        )

    async def get(self, path: str, host: str | None = None) -> FileInfo | None:
        self.calls.append(("get", path) if host is None else ("get", (path, host)))
        self._check()
        return self.files.get(path)

    async def similar(self, query: SimilarQuery) -> SimilarResult:
        self.calls.append(("similar", query))
        self._check()
        if query.code == "bad":
            raise ProtocolError(ErrorCode.INVALID_ARGUMENT, "not an ISCC")
        matches = tuple(
            Match(
                info.path,
                info.root,
                RelationKind.NEAR,
                UnitType.DATA,
                3,
                12,
                info.iscc,
                "ISCC:GAAQQICA",
                info.size,
            )
            for info in self.files.values()
            if info.path != query.path
        )
        return SimilarResult(matches[: query.limit], truncated=len(matches) > query.limit)

    async def dupes(self, query: DupesQuery) -> DupesResult:
        self.calls.append(("dupes", query))
        self._check()
        return DupesResult(())

    async def dup_dirs(self, query: DirsQuery) -> DirsResult:
        self.calls.append(("dirs", query))
        self._check()
        return DirsResult(())

    async def watched(self, query: WatchedQuery) -> WatchedResult:
        self.calls.append(("watched", query))
        self._check()
        if query.watchlist != "brand":
            raise UnknownWatchlistError(f"there is no watchlist {query.watchlist!r}")
        return WatchedResult("brand", None, 0, ())

    async def rescan(self, path: str | None) -> RescanResult:
        self.calls.append(("rescan", path))
        self._check()
        return RescanResult(tuple(self._roots if path is None else [path]))

    async def sync(self, path: str | None) -> int:
        self.calls.append(("sync", path))
        if self.sync_gate is not None:
            await self.sync_gate.wait()
        return self._seqs[-1] if self._seqs else self.first - 1

    async def log_bounds(self) -> LogBounds:
        self._check()
        last = self._seqs[-1] if self._seqs else self.first - 1
        return LogBounds(self.first, last)

    async def events_after(self, seq: int, limit: int) -> Sequence[Event]:
        # A real store answers from another thread: let the loop run (and publish) meanwhile.
        for _ in range(self.replay_pause + 1):
            await asyncio.sleep(0)
        if self.replay_error is not None:
            raise self.replay_error
        start = bisect.bisect_right(self._seqs, seq)
        return self.log[start : start + limit]


def _typecheck(backend: FakeBackend) -> Backend:
    return backend  # mypy proves FakeBackend satisfies the protocol


def publish_all(backend: FakeBackend, broker: Broker) -> None:
    """Publish every committed event the broker has not seen."""
    for event in backend.log:
        if event.seq > broker.last_seq:
            broker.publish(event)


@contextlib.asynccontextmanager
async def serving(
    backend: FakeBackend, directory: Path, *, queue_size: int = 1000, **options: Any
) -> AsyncIterator[tuple[Server, Broker]]:
    """A real server on a real socket in ``directory``, closed on exit."""
    broker = Broker(queue_size=queue_size)
    server = Server(
        backend,
        broker,
        ServerOptions(directory / "run" / "isccd.sock", **options),
        clock=lambda: 5.0,
    )
    await server.start()
    try:
        yield server, broker
    finally:
        await server.close()


class ServerThread:
    """A server on its own event loop in a thread, for clients that block (the CLI, processes)."""

    def __init__(self, backend: FakeBackend, directory: Path, **options: Any) -> None:
        self.backend = backend
        self.loop = asyncio.new_event_loop()
        self.path = directory / "run" / "isccd.sock"
        self.broker = Broker(queue_size=options.pop("queue_size", 1000))
        self._server = Server(backend, self.broker, ServerOptions(self.path, **options))
        self._thread = threading.Thread(target=self.loop.run_forever, name="test-server")

    def __enter__(self) -> ServerThread:
        self._thread.start()
        self.call(self._server.start)
        return self

    def __exit__(self, *exc: object) -> None:
        self.call(self._server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()

    def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run a coroutine function on the server's loop and wait for its result."""

        async def run() -> T:
            return await fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=30)

    def publish(self, event_type: EventType, root: str, path: str, **data: Any) -> Event:
        """Commit and publish one event on the server's loop."""

        async def commit() -> Event:
            event = self.backend.commit(event_type, root, path, **data)
            self.broker.publish(event)
            return event

        return self.call(commit)

    def statistics(self) -> ServerStatistics:
        async def get() -> ServerStatistics:
            return self._server.statistics()

        return self.call(get)
