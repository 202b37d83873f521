"""What the socket server needs from the daemon: the :class:`Backend` protocol.

The server knows neither the store nor the pipeline. The daemon implements this protocol over
them; the tests implement it with a fake. Paths handed to the backend have been resolved by the
server and are inside one of :meth:`Backend.roots`.

Errors: a method raises :class:`~isccd.errors.ProtocolError` to answer with a specific error code
(``not_found``, ``invalid_argument`` for an unparseable code, ...), and
:class:`~isccd.errors.StoreError` when the index cannot answer now (the client gets
``unavailable``). Anything else is a bug: logged, answered with ``internal_error``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from isccd.model import Event
from isccd.protocol import RescanResult
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


@dataclass(frozen=True, slots=True)
class LogBounds:
    """The sequence numbers the event log holds.

    Attributes:
        first: The oldest event kept (``last + 1`` when the log is empty).
        last: The newest event committed (0 before the first).
    """

    first: int
    last: int


class Backend(Protocol):
    """The daemon's side of the socket server.

    Every coroutine runs on the server's event loop; a method that does blocking work hands it
    to a thread or to the store's owner thread.
    """

    def roots(self) -> Sequence[str]:
        """The watched roots now, absolute with symbolic links resolved. Cannot block."""
        ...

    def store_id(self) -> str:
        """The identity of the store whose event log is served (its sequence numbers mean
        something only together with it). Cannot block."""
        ...

    def host(self) -> str:
        """The daemon's host name: a subscription follows the events about it unless it asks
        for the whole fleet's. Cannot block."""
        ...

    async def log_identity(self) -> str:
        """The identity of the served log now, read again: :meth:`store_id` is the one last
        read, and a database a fleet shares takes a new one when a daemon finds it restored
        from an older dump."""
        ...

    async def log_end(self, store: str) -> int | None:
        """The last seq the served log had under the identity ``store``, one it had earlier
        (a daemon started again has another) or has now; ``None`` if it never had it."""
        ...

    async def status(self) -> DaemonStatus:
        """The daemon's status (``server`` is left ``None``; the server fills it in)."""
        ...

    async def get(self, path: str, host: str | None = None) -> FileInfo | None:
        """What the index knows about ``path`` (tombstones included), or ``None``; ``host``:
        only its duplicates on that host."""
        ...

    async def similar(self, query: SimilarQuery) -> SimilarResult:
        """Indexed files near the units of ``query.path`` (resolved) or of ``query.code``.

        Raises:
            ProtocolError: ``not_found`` when the path is not indexed and cannot be coded;
                ``invalid_argument`` when the code cannot be decoded.
        """
        ...

    async def dupes(self, query: DupesQuery) -> DupesResult:
        """Duplicate groups, the most reclaimable bytes first (``query.root`` resolved)."""
        ...

    async def dup_dirs(self, query: DirsQuery) -> DirsResult:
        """Duplicate folders, exact then near (``query.root`` resolved)."""
        ...

    async def watched(self, query: WatchedQuery) -> WatchedResult:
        """The indexed files matching a watchlist's references (``query.root`` resolved).

        Raises:
            ProtocolError: ``not_found`` when there is no such watchlist.
        """
        ...

    async def rescan(self, path: str | None) -> RescanResult:
        """Start a reconcile scan of the root holding ``path``, or of every root.

        Returns as soon as the scans are started; they report ``scan.progress`` and
        ``scan.done`` events.
        """
        ...

    async def sync(self, path: str | None) -> int:
        """A barrier over the root holding ``path``, or over every root.

        Returns only after every change made on disk before the call has been processed and
        committed: pending watch events are settled, the affected roots reconciled and the work
        queue drained as far as those changes go.

        Returns:
            The last sequence number after the barrier; the events of those changes are in the
            log at or before it.
        """
        ...

    async def log_bounds(self) -> LogBounds:
        """The oldest and newest sequence numbers in the event log (the whole fleet's, for a
        store a fleet shares)."""
        ...

    async def events_after(self, seq: int, limit: int) -> Sequence[Event]:
        """Committed events with a sequence number above ``seq``, ascending, at most ``limit``
        (every host's, for a store a fleet shares).

        Paged so that a long backlog is never loaded at once. Must see every event committed
        before the call (a fresh read transaction).
        """
        ...
