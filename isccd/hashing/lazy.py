"""Hashing for the commands in worker processes (:mod:`isccd.hashing.pool`), started on first use.

``isccd scan`` and ``isccd code`` hash in the same workers as the daemon, so that a file which
crashes a decoder or runs past the file time limit costs only its own record (an ``internal``
issue) and never the command. The workers start when the first file is to be hashed: a scan of
an unchanged tree starts none. ``isccd scan`` starts their fork server first thing, on a
machine with more than one CPU (:func:`isccd.forkserver.start_early`), so that they start warm.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable, Iterator, Sequence

from isccd.hashing.pool import WorkerOptions, WorkerPool, WorkersUnavailableError
from isccd.model import FileRecord, UnitType


class LazyWorkers:
    """A :class:`isccd.pipeline.Hasher` over a worker pool started on first use.

    Args:
        options: The pool's workers, file time limit and coding options.
    """

    def __init__(self, options: WorkerOptions) -> None:
        self._options = options
        self._pool: WorkerPool | None = None
        self._failed: WorkersUnavailableError | None = None
        self._starting: asyncio.Lock | None = None

    async def __call__(
        self, root: str | None, path: str, units: frozenset[UnitType] | None = None
    ) -> FileRecord:
        """Hash one file in a worker: a file of ``root`` (``isccd scan``), or one a user
        names (``root`` is ``None``, ``isccd code``).

        Raises:
            WorkersUnavailableError: The workers cannot start (then and at every later call).
        """
        pool = await self._started()
        return await pool.compute(path, units, root=root)

    async def many(
        self, files: Sequence[tuple[str, str, frozenset[UnitType] | None]]
    ) -> list[FileRecord]:
        """Hash several small files of their roots, ``(root, path, units)`` each, in one round
        trip to a worker (see :meth:`WorkerPool.compute_many`).

        Raises:
            WorkersUnavailableError: The workers cannot start.
        """
        pool = await self._started()
        return await pool.compute_many(files)

    async def _started(self) -> WorkerPool:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._failed is not None:
                raise self._failed
            if self._pool is None:
                pool = WorkerPool(self._options)
                try:
                    await pool.start()
                except WorkersUnavailableError as exc:
                    self._failed = exc
                    raise
                self._pool = pool
            return self._pool

    async def close(self) -> None:
        """Stop the workers at once (files in flight are abandoned); idempotent."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close(grace=0)


def records(
    paths: Iterable[str | None], options: WorkerOptions, ahead: int
) -> Iterator[FileRecord | None]:
    """The record of each path, in order, hashed in workers; ``None`` for a ``None`` path.

    At most ``ahead`` files are handed out beyond the one whose record is awaited, so a long
    list is never queued whole.

    Raises:
        WorkersUnavailableError: The workers cannot start.
    """
    with asyncio.Runner() as runner:
        loop = runner.get_loop()
        hasher = LazyWorkers(options)
        window: deque[asyncio.Task[FileRecord] | None] = deque()

        async def result(job: asyncio.Task[FileRecord]) -> FileRecord:
            return await job

        try:
            for path in paths:
                window.append(None if path is None else loop.create_task(hasher(None, path)))
                while len(window) > ahead:
                    job = window.popleft()
                    yield None if job is None else runner.run(result(job))
            while window:
                job = window.popleft()
                yield None if job is None else runner.run(result(job))
        finally:
            for job in window:
                if job is not None:
                    job.cancel()
            runner.run(hasher.close())
