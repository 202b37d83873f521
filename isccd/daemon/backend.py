"""The daemon's side of the socket server: :class:`isccd.server.Backend` over the pipeline.

Queries run as jobs on the store's owner thread (so they see every committed change) and are
translated into the wire types of :mod:`isccd.protocol`. ``rescan`` starts reconciles; ``sync``
is the barrier: what waits to settle is released, the roots are reconciled from the disk (which
catches changes whose events are still on their way), and the work queued before the request is
awaited; the reply carries the last sequence number, at or after every event those changes
caused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from isccd.daemon.feed import Feed
from isccd.daemon.scans import Scans
from isccd.daemon.workqueue import WorkQueue
from isccd.errors import ProtocolError
from isccd.iscc import IsccError, iscc_decode, iscc_decompose
from isccd.iscc.constants import MT, ST_CC
from isccd.model import Event, FileRecord, Unit, UnitType
from isccd.pipeline import Pipeline
from isccd.pipeline import queries as q
from isccd.protocol import (
    DaemonStatus,
    DupesQuery,
    DupesResult,
    DupGroup,
    DupKind,
    DupMember,
    ErrorCode,
    FileInfo,
    RescanResult,
    SimilarMatch,
    SimilarQuery,
    SimilarResult,
)
from isccd.server import LogBounds
from isccd.store import StoredFile

_CONTENT = {
    ST_CC.TEXT: UnitType.TEXT,
    ST_CC.IMAGE: UnitType.IMAGE,
    ST_CC.AUDIO: UnitType.AUDIO,
    ST_CC.VIDEO: UnitType.VIDEO,
    ST_CC.MIXED: UnitType.MIXED,
}
_MAIN = {MT.META: UnitType.META, MT.DATA: UnitType.DATA, MT.INSTANCE: UnitType.INSTANCE}


def units_of_code(code: str) -> tuple[Unit, ...]:
    """The comparable units of an ISCC-CODE or of a single unit.

    Raises:
        ProtocolError: ``invalid_argument`` when the code cannot be decoded.
    """
    try:
        parts = iscc_decompose(code)
        units = []
        for part in parts:
            maintype, subtype, _, _, body = iscc_decode(part)
            unit_type = _CONTENT.get(ST_CC(subtype)) if maintype == MT.CONTENT else None
            unit_type = unit_type or _MAIN.get(MT(maintype))
            if unit_type is not None:
                units.append(Unit(unit_type, f"ISCC:{part}", body, ""))
    except (IsccError, ValueError, TypeError) as exc:
        raise ProtocolError(ErrorCode.INVALID_ARGUMENT, f"cannot decode {code!r}: {exc}") from None
    if not units:
        raise ProtocolError(ErrorCode.INVALID_ARGUMENT, f"{code!r} has no comparable unit")
    return tuple(units)


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


class DaemonBackend:
    """Answers the socket server's questions.

    Args:
        pipeline: The pipeline.
        scans: Reconciles of whole roots.
        feed: The watcher's settling stage.
        queue: The work queue.
        roots: The watched roots now.
        status: The daemon's status now.
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
    ) -> None:
        self._pipeline = pipeline
        self._scans = scans
        self._feed = feed
        self._queue = queue
        self._roots = roots
        self._status = status

    def roots(self) -> Sequence[str]:
        """The watched roots, symbolic links resolved."""
        return self._roots()

    async def status(self) -> DaemonStatus:
        """The daemon's status."""
        return await self._status()

    async def get(self, path: str) -> FileInfo | None:
        """What the index knows about ``path`` (tombstones included)."""
        view = await self._pipeline.get(path)
        if view is None:
            return None
        stored = view.file
        return FileInfo.from_record(
            stored.record, stored.root, indexed=stored.indexed_at, removed=stored.removed_at
        )

    async def similar(self, query: SimilarQuery) -> SimilarResult:
        """Files near an indexed file or a code."""
        if query.path is not None:
            path = query.path
            stored = await self._pipeline.call(lambda ix: ix.store.file_at(path))
            if stored is None:
                raise ProtocolError(ErrorCode.NOT_FOUND, f"{path!r} is not in the index")
        else:
            record = FileRecord(path="", stat=None, units=units_of_code(query.code or ""))
            stored = StoredFile(0, "", record, 0.0)
        peers = await self._pipeline.similar(stored, query.max_distance)
        matches = tuple(
            SimilarMatch(p.path, p.root, p.unit, p.distance, p.threshold, p.code or p.iscc or "")
            for p in peers[: query.limit]
        )
        return SimilarResult(matches, truncated=len(peers) > query.limit)

    async def dupes(self, query: DupesQuery) -> DupesResult:
        """Duplicate groups, largest wasted bytes first."""
        groups = await self._pipeline.dupes(query.near)
        if query.root is not None:
            top = query.root
            groups = [g for g in groups if any(_under(p, top) for m in g.members for p in m.paths)]
        thresholds = self._pipeline.options.thresholds
        out = tuple(_group(g, thresholds.of) for g in groups[: query.limit])
        return DupesResult(out, truncated=len(groups) > query.limit)

    async def rescan(self, path: str | None) -> RescanResult:
        """Start reconciles of the root holding ``path``, or of every root."""
        roots = self._roots_for(path)
        for root in roots:
            self._scans.request(root, "request")
        return RescanResult(tuple(roots))

    async def sync(self, path: str | None) -> int:
        """The barrier (see the module docstring)."""
        roots = self._roots_for(path)
        for root in roots:
            self._feed.flush(root)
        await self._feed.drained()
        ticket = self._queue.barrier()
        await asyncio.gather(*(self._scans.request(root, "sync") for root in roots))
        await self._queue.wait_barrier(ticket)
        return await self._pipeline.last_seq()

    async def log_bounds(self) -> LogBounds:
        """The oldest and newest sequence numbers in the log."""
        first, last = await self._pipeline.call(
            lambda ix: (ix.store.first_seq(), ix.store.last_seq())
        )
        return LogBounds(first, last)

    async def events_after(self, seq: int, limit: int) -> Sequence[Event]:
        """Committed events after ``seq``."""
        return await self._pipeline.events_since(seq, limit)

    def _roots_for(self, path: str | None) -> list[str]:
        roots = list(self._roots())
        if path is None:
            return roots
        return [r for r in roots if _under(path, r)][:1]


def _group(group: q.DupGroup, threshold_of: Callable[[UnitType], int | None]) -> DupGroup:
    """A pipeline group as the protocol shows it: one entry per path, with the distance of
    each member to the first."""
    if group.kind == "exact" or not group.links:
        unit, threshold = UnitType.INSTANCE, 0
        distance_of: dict[int, int] = {}
    else:
        counts: dict[UnitType, int] = {}
        for link in group.links:
            counts[link.unit] = counts.get(link.unit, 0) + 1
        unit = max(counts, key=lambda u: counts[u])
        threshold = threshold_of(unit) or 0
        distance_of = {}
        for link in group.links:
            for member, other in ((link.a, link.b), (link.b, link.a)):
                if other == 0:
                    distance_of[member] = min(distance_of.get(member, 64), link.distance)
    members = tuple(
        DupMember(path, m.root, m.size, m.iscc, distance_of.get(i, 0) if i else 0)
        for i, m in enumerate(group.members)
        for path in m.paths
    )
    kind = DupKind.EXACT if group.kind == "exact" else DupKind.NEAR
    return DupGroup(kind, unit, threshold, group.wasted, members)
