"""The daemon's hasher: the worker pool behind the pipeline's ``Hasher`` interface, with the
canonical log line of every processed file.

The pipeline asks for a record (:meth:`Hashing.__call__`); the pool computes it in a worker.
Each file hashed gives one line, ``file_processed``, with its path, outcome (``coded``,
``partial`` when some unit failed, ``failed``, ``unstable``, ``vanished``), the units computed,
bytes, milliseconds and media type; what the index made of it (added, changed, duplicates)
follows as events. The heartbeat's :class:`~isccd.daemon.heartbeat.Progress` is told of each.
"""

from __future__ import annotations

import asyncio
import time

import structlog

from isccd.daemon.heartbeat import Progress
from isccd.daemon.workers import PoolClosedError, WorkerPool
from isccd.model import FileRecord, IssueCode, IssueKind, UnitType


def outcome(record: FileRecord) -> str:
    """A one-word summary of how hashing a file went."""
    codes = {i.code for i in record.issues}
    if IssueCode.UNSTABLE in codes:
        return "unstable"
    if IssueCode.VANISHED in codes or IssueCode.NOT_REGULAR in codes:
        return "vanished"
    if not record.units:
        return "failed"
    if any(i.kind is IssueKind.ERROR for i in record.issues):
        return "partial"
    return "coded"


class Hashing:
    """Hashes files in the worker pool for the pipeline.

    Args:
        pool: The started worker pool.
        progress: Told whenever a file is done.
    """

    def __init__(self, pool: WorkerPool, progress: Progress) -> None:
        self.pool = pool
        self._progress = progress

    async def __call__(self, root: str, path: str, units: frozenset[UnitType] | None) -> FileRecord:
        """Hash one file of ``root`` (all units, or only ``units``) and log its line."""
        started = time.monotonic()
        while True:
            pool = self.pool
            try:
                record = await pool.compute(path, units, root=root)
                break
            except PoolClosedError:
                if self.pool is pool:
                    # Shutting down: the file is abandoned, not failed (the next start's
                    # reconcile picks it up), so it must not be recorded as an error.
                    raise asyncio.CancelledError from None
                # The workers were replaced (a reload): hash it with the new ones.
        self._progress.advanced()
        errors = [i.reason for i in record.issues if i.kind is IssueKind.ERROR]
        structlog.get_logger("isccd.processed").info(
            "file_processed",
            path=path,
            outcome=outcome(record),
            units=[u.type.value for u in record.units],
            bytes=record.filesize,
            ms=round((time.monotonic() - started) * 1000, 1),
            mediatype=record.mediatype,
            partial=units is not None,
            **({"errors": errors} if errors else {}),
        )
        return record
