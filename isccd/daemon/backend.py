"""The daemon's side of the socket server: :class:`isccd.server.Backend` over the pipeline.

Queries are the pipeline's, so they see every committed change and are answered as a command
reading the store directly answers them. ``similar`` on a file inside the roots that is not
indexed yet (and not ignored) codes it on the fly in the worker pool, without storing it; the
server has already refused any path outside the roots. ``rescan`` starts reconciles; ``sync`` is
the barrier: what waits to settle is released, the roots are reconciled from the disk (which
catches changes whose events are still on their way), and the work queued before the request is
awaited; the reply carries the last sequence number, at or after every event those changes
caused. While the store cannot be written (a full disk, a table dropped under a fleet) or a
shared log cannot be read, that promise cannot hold: ``sync`` answers ``unavailable`` with what
is wrong, never ok.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from isccd.daemon.feed import Feed
from isccd.daemon.scans import Scans
from isccd.daemon.workqueue import WorkQueue
from isccd.errors import ProtocolError
from isccd.fspath import is_under
from isccd.model import Event, FileRecord
from isccd.pipeline import Pipeline
from isccd.protocol import ErrorCode, RescanResult
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
from isccd.server import LogBounds


class DaemonBackend:
    """Answers the socket server's questions.

    Args:
        pipeline: The pipeline.
        scans: Reconciles of whole roots.
        feed: The watcher's settling stage.
        queue: The work queue.
        roots: The watched roots now.
        status: The daemon's status now.
        degraded: Why the daemon works without its store now (``None`` while it does not).
    """

    def __init__(
        self,
        pipeline: Pipeline,
        scans: Scans,
        feed: Feed,
        queue: WorkQueue,
        *,
        roots: Callable[[], Sequence[str]],
        status: Callable[[], Awaitable[DaemonStatus]],
        degraded: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._pipeline = pipeline
        self._scans = scans
        self._feed = feed
        self._queue = queue
        self._roots = roots
        self._status = status
        self._degraded = degraded

    def roots(self) -> Sequence[str]:
        """The watched roots, symbolic links resolved."""
        return self._roots()

    def store_id(self) -> str:
        """The store's identity."""
        return self._pipeline.store_id

    def host(self) -> str:
        """The host name the store was opened for."""
        return self._pipeline.host

    async def status(self) -> DaemonStatus:
        """The daemon's status."""
        return await self._status()

    async def get(self, path: str, host: str | None = None) -> FileInfo | None:
        """What the index knows about ``path`` (tombstones included)."""
        return await self._pipeline.get(path, host)

    async def similar(self, query: SimilarQuery) -> SimilarResult:
        """Files near a file or a code (see the module docstring for a file not indexed)."""
        return await self._pipeline.similar(query, self._code)

    async def _code(self, path: str) -> FileRecord:
        """A file inside the roots that is not indexed, coded on the fly."""
        roots = self._roots_for(path)
        if not roots:  # the root was removed by a reload since the path was resolved
            raise ProtocolError(ErrorCode.OUTSIDE_ROOTS, f"{path!r} is not inside a watched root")
        if self._feed.ignores(roots[0], path):
            raise ProtocolError(
                ErrorCode.NOT_FOUND, f"{path!r} is not in the index: an ignore pattern excludes it"
            )
        return await self._pipeline.code(roots[0], path)

    async def dupes(self, query: DupesQuery) -> DupesResult:
        """Duplicate groups, the most reclaimable bytes first."""
        return await self._pipeline.dupes(query)

    async def dup_dirs(self, query: DirsQuery) -> DirsResult:
        """Duplicate folders, exact then near."""
        return await self._pipeline.dup_dirs(query)

    async def watched(self, query: WatchedQuery) -> WatchedResult:
        """The indexed files matching a watchlist's references."""
        return await self._pipeline.watched(query)

    async def rescan(self, path: str | None) -> RescanResult:
        """Start reconciles of every root, or of the directory ``path`` (a root or a directory
        inside one; for a file, or a path that is gone, its directory)."""
        if path is None:
            roots = self._roots_for(None)
            for root in roots:
                self._scans.request(root, "request")
            return RescanResult(tuple(roots))
        started = []
        for root in self._roots_for(path):
            start = path if path == root else await asyncio.to_thread(_directory_of, path)
            self._scans.request(root, "request", start)
            started.append(start)
        return RescanResult(tuple(started))

    async def sync(self, path: str | None) -> int:
        """The barrier (see the module docstring).

        Raises:
            ProtocolError: ``unavailable``: the store is degraded, the changes cannot all be
                indexed now.
        """
        roots = self._roots_for(path)
        for root in roots:
            self._feed.flush(root)
        await self._feed.drained()
        ticket = self._queue.barrier()
        await asyncio.gather(*(self._scans.request(root, "sync") for root in roots))
        await self._queue.wait_barrier(ticket)
        # Checked once the barrier passed: the changes it waited for may have failed to commit.
        problem = self._degraded()
        if problem is not None:
            raise ProtocolError(
                ErrorCode.UNAVAILABLE,
                f"degraded: {problem}; the changes are not all indexed (isccd status shows "
                "when the store recovers)",
            )
        return await self._pipeline.last_seq()

    async def log_identity(self) -> str:
        """The store's identity now (see :meth:`Pipeline.identity`)."""
        return await self._pipeline.identity()

    async def log_end(self, store: str) -> int | None:
        """The last seq the log had under ``store`` (see :meth:`Pipeline.log_end`)."""
        return await self._pipeline.log_end(store)

    async def log_bounds(self) -> LogBounds:
        """The oldest and newest sequence numbers in the log."""
        return LogBounds(*await self._pipeline.log_bounds())

    async def events_after(self, seq: int, limit: int) -> Sequence[Event]:
        """Committed events after ``seq``, of every host."""
        return await self._pipeline.events_since(seq, limit, fleet=True)

    def _roots_for(self, path: str | None) -> list[str]:
        roots = list(self._roots())
        if path is None:
            return roots
        return [r for r in roots if is_under(path, r)][:1]


def _directory_of(path: str) -> str:
    """``path`` if it is a directory, else the directory holding it (a file, or a path that no
    longer exists, whose disappearance a walk of its directory notices)."""
    return path if Path(path).is_dir() else str(Path(path).parent)
