"""The daemon's hasher: the worker pool behind the pipeline's ``Hasher`` interface, with the
canonical log line of every processed file.

The pipeline asks for a record (:meth:`DaemonHasher.__call__`); the pool computes it in a worker.
Each file hashed gives one line, ``file_processed`` (:func:`log_processed`), with the same
fields whatever happened: its path, outcome, the units computed, bytes, milliseconds, media
type, the units asked for (``requested``: ``null`` for all of them, else the ones whose profile
was outdated) and the reasons of the errors (``errors``). Its level follows the outcome, so that
``journalctl -p warning`` lists every file that did not get all its units: ``coded`` at info,
``partial`` (some unit failed) at warning, ``failed`` (no unit) at error; ``unstable`` (changed
while read, retried) and ``vanished`` (gone) at info. What the index made of it (added,
changed, duplicates) follows as events. The heartbeat's
:class:`~isccd.daemon.heartbeat.Progress` is told of each. A missing tool (``fpcalc``, ``ffmpeg``)
is logged once, at warning, with the package that provides it (``tool_missing``), the first time
a file lacks a unit for want of it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import structlog

from isccd.daemon.heartbeat import Progress
from isccd.extract.missing import MissingTools
from isccd.hashing.pool import PoolClosedError, WorkerPool
from isccd.model import FileRecord, IssueCode, IssueKind, UnitType

#: The log level of each outcome.
LEVELS = {
    "coded": logging.INFO,
    "partial": logging.WARNING,
    "failed": logging.ERROR,
    "unstable": logging.INFO,
    "vanished": logging.INFO,
}


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


class DaemonHasher:
    """Hashes files in the worker pool for the pipeline.

    Args:
        pool: The started worker pool.
        progress: Told whenever a file is done.
    """

    def __init__(self, pool: WorkerPool, progress: Progress) -> None:
        self.pool = pool
        self._progress = progress
        self._missing = MissingTools()

    async def __call__(self, root: str, path: str, units: frozenset[UnitType] | None) -> FileRecord:
        """Hash one file of ``root`` (all units, or only ``units``) and log its line."""
        return (await self.many([(root, path, units)]))[0]

    async def many(
        self, files: Sequence[tuple[str, str, frozenset[UnitType] | None]]
    ) -> list[FileRecord]:
        """Hash small files, ``(root, path, units)`` each, in one round trip to a worker, and
        log a line for each (its ``ms``: its share of the batch's time)."""
        started = time.monotonic()
        while True:
            pool = self.pool
            try:
                records = await pool.compute_many(files)
                break
            except PoolClosedError:
                if self.pool is pool:
                    # Shutting down: the files are abandoned, not failed (the next start's
                    # reconcile picks them up), so they must not be recorded as errors.
                    raise asyncio.CancelledError from None
                # The workers were replaced (a reload): hash them with the new ones.
        seconds = (time.monotonic() - started) / max(1, len(files))
        for (_, path, units), record in zip(files, records, strict=True):
            self._progress.advanced()
            log_processed(path, record, units, seconds)
            for fix in self._missing.add(record.issues):
                structlog.get_logger("isccd.processed").warning("tool_missing", fix=fix, path=path)
        return records


def log_processed(
    path: str, record: FileRecord, requested: frozenset[UnitType] | None, seconds: float
) -> None:
    """Log the ``file_processed`` line of a hashed file (see the module docstring).

    Args:
        path: The file.
        record: What hashing it gave.
        requested: The units asked for; ``None`` for all.
        seconds: How long it took.
    """
    result = outcome(record)
    structlog.get_logger("isccd.processed").log(
        LEVELS[result],
        "file_processed",
        path=path,
        outcome=result,
        units=[u.type.value for u in record.units],
        bytes=record.filesize,
        ms=round(seconds * 1000, 1),
        mediatype=record.mediatype,
        requested=None if requested is None else sorted(t.value for t in requested),
        errors=[i.reason for i in record.issues if i.kind is IssueKind.ERROR],
    )
