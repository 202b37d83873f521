"""The pipeline as the daemon and ``isccd scan`` use it: a closed asyncio facade over the index
on the store's owner thread, with hashing delegated.

Threads and processes: the :class:`Pipeline` lives on the event loop; every store and index
operation is a job on the owner thread (:class:`isccd.store.owner.StoreOwner`), and the
file-system calls a job depends on are made before it is submitted, never on that thread (a hung
``stat`` would stall every commit). Hashing is delegated to a :class:`Hasher`; one that raises
for a file fails only that file's record, except :class:`~isccd.errors.HashingUnavailableError`,
which fails the scan.

Committed events reach the ``on_commit`` callback on the owner thread, batch by batch in
sequence order; a daemon forwards them to its loop with ``call_soon_threadsafe``. The event lists
the methods return are the same events, for callers that only care about their own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from isccd.errors import HashingUnavailableError
from isccd.match import Thresholds
from isccd.model import (
    Event,
    EventType,
    FileIssue,
    FileRecord,
    FileStat,
    IssueCode,
    IssueKind,
    UnitType,
)
from isccd.pipeline import changes, composition, groups, policy, queries, watched
from isccd.pipeline.batches import OwnerBatches
from isccd.pipeline.changes import GONE, is_unstable, issue_codes
from isccd.pipeline.fleetindex import FleetIndex
from isccd.pipeline.index import Index
from isccd.pipeline.options import PipelineOptions
from isccd.pipeline.reconcile import (
    HashJob,
    Reconciler,
    ScanStats,
    Sighting,
    Step,
    look,
    place,
    plan_path,
)
from isccd.pipeline.rootdev import device_of
from isccd.results import (
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

# The log mark's name in a state directory, handed on by the package with the pipeline.
from isccd.store import LOG_MARK_NAME as LOG_MARK_NAME  # noqa: PLC0414
from isccd.store import SqliteOptions, open_store
from isccd.store.owner import OwnerOptions, StoreOwner
from isccd.walk import NO_FILE, Listing, ScanOptions, examine

T = TypeVar("T")


class Hasher(Protocol):
    """Computes a file's record: all units, or only ``units``."""

    def __call__(
        self, root: str, path: str, units: frozenset[UnitType] | None
    ) -> Awaitable[FileRecord]:
        """Hash one file of ``root``, opened beneath the root's directory (never through a
        symbolic link that leads out of it)."""
        ...


@runtime_checkable
class BatchHasher(Hasher, Protocol):
    """A :class:`Hasher` that also hashes several small files in one round trip."""

    def many(
        self, files: Sequence[tuple[str, str, frozenset[UnitType] | None]]
    ) -> Awaitable[list[FileRecord]]:
        """Hash ``(root, path, units)`` each, as :meth:`__call__` would; the records in order."""
        ...


#: Files a reconcile hashes in one round trip to a worker, and the largest file it puts in
#: such a batch: the hand-over costs more than hashing a file of a few kilobytes, and a batch
#: of them still takes only about 10 ms. 64 rather than 32 halved the messages, wakeups and
#: owner jobs (0.1-0.2 s less CPU time in the command's process of a first scan of 20,000
#: small files); 128 rather than 64 made that scan 2-4 % faster again, once the store's share
#: had shrunk; 256 was no faster than 128 (docs/benchmarks.md).
BATCH_FILES = 128
BATCH_FILE_SIZE = 64 * 1024


@dataclass(frozen=True, slots=True)
class Counts:
    """What the index holds, read together.

    Attributes:
        files: Live files per root.
        last_seq: The last sequence number committed.
    """

    files: Mapping[str, int]
    last_seq: int


def unstable_reason(record: FileRecord) -> str:
    """Why a record was found unstable."""
    return next(
        (i.reason for i in record.issues if i.code is IssueCode.UNSTABLE), "changed while read"
    )


def failed_record(path: str, exc: BaseException) -> FileRecord:
    """The record of a file whose hashing failed outside compute_record (a crashed worker)."""
    issue = FileIssue("read", IssueKind.ERROR, f"hashing failed: {exc!r}", IssueCode.INTERNAL)
    return FileRecord(path=path, stat=None, issues=(issue,))


#: Applies a reconcile's records in owner jobs.
_Apply = OwnerBatches[tuple[HashJob, FileRecord], tuple[list[Event], list[HashJob], ScanStats]]


def batched(jobs: list[HashJob]) -> list[list[HashJob]]:
    """Small files together, :data:`BATCH_FILES` at most to a batch, the others alone."""
    out, small = [], []
    for job in jobs:
        if job.stat is None or job.stat.size > BATCH_FILE_SIZE:
            out.append([job])
            continue
        small.append(job)
        if len(small) == BATCH_FILES:
            out.append(small)
            small = []
    return out + ([small] if small else [])


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first non-cancellation leaf of an exception group."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_error(exc)
        if not isinstance(exc, asyncio.CancelledError):
            return exc
    return group.exceptions[0]


class Pipeline:
    """Scans, hashing results and watcher changes applied to the store and index.

    Lifecycle: :meth:`open` (blocking: opens, checks and migrates the store and loads the
    index; run it with ``asyncio.to_thread`` on a loop), the async methods, :meth:`close`.
    """

    def __init__(
        self,
        store_url: str,
        options: PipelineOptions | None = None,
        *,
        host: str | None = None,
        hasher: Hasher | None = None,
        sqlite: SqliteOptions | None = None,
        log_mark: Path | None = None,
        owner: OwnerOptions | None = None,
        clock: Callable[[], float] = time.time,
        on_commit: Callable[[Sequence[Event]], None] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """Prepare a pipeline.

        Args:
            store_url: Where the store lives (see :func:`isccd.store.open_store`).
            options: Thresholds, retention, retries.
            host: The host name the store is opened for (default: the machine's).
            hasher: How files are hashed (needed by :meth:`reconcile` and
                :meth:`process_path`).
            sqlite: SQLite tuning.
            log_mark: Where the store remembers how far it followed a shared database's
                event log (see :func:`isccd.store.open_store`).
            owner: Batching of the owner thread.
            clock: Unix time for events.
            on_commit: Receives each committed batch of events, on the owner thread.
            sleep: Waits between retries of an unstable file (injectable for tests).
        """
        self._options = options or PipelineOptions()
        self._hasher = hasher
        self._sleep = sleep
        self._adopting = threading.Lock()
        self._composing = threading.Lock()

        def build() -> Index:
            store = open_store(store_url, host=host, sqlite=sqlite, log_mark=log_mark)
            try:
                return Index(store, self._options, clock=clock, on_commit=on_commit)
            except BaseException:
                store.close()
                raise

        self._owner: StoreOwner[Index] = StoreOwner(build, name="isccd-store", options=owner)
        self._store_id: str | None = None
        self._host = ""
        self._fleet: FleetIndex | None = None

    def open(self, *, adopt: bool = True) -> policy.Adopted:
        """Open the store and load the index (blocking), and bring the stored relations under
        this pipeline's duplicate policy (:mod:`isccd.pipeline.policy`) and the stored
        ISCC-CODEs under its composition (:mod:`isccd.pipeline.composition`).

        Args:
            adopt: Do both now. Otherwise the store's policy stays in force until :meth:`adopt`
                is awaited, and the codes are composed again by :meth:`recompose` (the daemon,
                which serves meanwhile).

        Returns:
            What adopting the policy took: nothing when the store's policy is this one.

        Raises:
            StoreError: The store cannot be opened, is corrupt, or the disk is full.
        """
        self._owner.start()
        try:
            self._store_id, self._host, self._fleet = self._owner.call(
                lambda ix: (ix.store.identity, ix.store.host, ix.fleet)
            )
            if adopt:
                adopted = self._adopt(None)
                self._recompose()
                return adopted
            self._owner.call(functools.partial(policy.keep, fallback=self._options.thresholds))
        except BaseException:
            self._owner.close()
            raise
        return policy.Adopted()

    def close(self) -> None:
        """Commit what is queued and close the store; idempotent."""
        self._owner.close()

    @property
    def store_id(self) -> str:
        """The store's identity (:attr:`isccd.store.Store.identity`).

        Raises:
            RuntimeError: The pipeline was not opened.
        """
        if self._store_id is None:
            raise RuntimeError("the pipeline is not open")
        return self._store_id

    @property
    def host(self) -> str:
        """The host name the store was opened for (``""`` until it is open)."""
        return self._host

    @property
    def fleet(self) -> FleetIndex | None:
        """The other hosts' part of the index, which a follower of the shared log feeds (a
        store a fleet shares; ``None`` otherwise, and until it is open)."""
        return self._fleet

    async def refresh(self) -> None:
        """Apply what the follower offered :attr:`fleet` now, rather than before the index is
        next used."""
        await self._call(lambda ix: ix.refresh())

    @property
    def options(self) -> PipelineOptions:
        """The options it works under (:meth:`set_options` changes them)."""
        return self._options

    async def set_options(self, options: PipelineOptions, chunk: int = 256) -> policy.Adopted:
        """Work under ``options`` from now on, here and on the owner thread; when their
        duplicate policy is another one, bring the stored relations under it (:meth:`adopt`).

        Returns:
            What adopting the policy took: nothing when it did not change.
        """
        previous, self._options = self._options, options  # first: an adopt yet to begin takes it
        await self._call(functools.partial(Index.set_options, options=options))
        if options.thresholds == previous.thresholds:
            return policy.Adopted()
        return await self.adopt(options.thresholds, chunk)

    def _submit(self, fn: Callable[[Index], T]) -> concurrent.futures.Future[T]:
        """Run ``fn(index)`` on the owner thread; the future resolves once it is committed."""
        return self._owner.submit(fn)

    async def _call(self, fn: Callable[[Index], T]) -> T:
        """Run ``fn(index)`` on the owner thread and await its committed result."""
        return await asyncio.wrap_future(self._submit(fn))

    # -- scanning and hashing ------------------------------------------------------------------

    def _need_hasher(self) -> Hasher:
        if self._hasher is None:
            raise RuntimeError("this pipeline was built without a hasher")
        return self._hasher

    async def _hash(self, job: HashJob, first: FileRecord | None = None) -> tuple[FileRecord, int]:
        """Hash with retries while the file keeps changing; returns the last record and the
        number of attempts (``first``: the first attempt's record, hashed in a batch)."""
        hasher = self._need_hasher()
        delay = self._options.unstable_delay
        attempts = max(1, self._options.unstable_attempts)
        for attempt in range(1, attempts + 1):
            if first is not None:
                record, first = first, None
            else:
                try:
                    record = await hasher(job.root, job.path, job.units)
                except HashingUnavailableError:
                    raise  # nothing can be hashed: the scan fails, no file is recorded failed
                except Exception as exc:  # a crashed worker is a per-file error, never fatal
                    return failed_record(job.path, exc), attempt
            if not is_unstable(record) or attempt == attempts:
                return await self._unopened(job.root, record), attempt
            await self._sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    async def _hash_batch(self, hasher: BatchHasher, jobs: list[HashJob]) -> list[FileRecord]:
        """The first attempt at each of ``jobs``, in one round trip."""
        try:
            return await hasher.many([(job.root, job.path, job.units) for job in jobs])
        except HashingUnavailableError:
            raise
        except Exception as exc:  # as for one file: each file's error, never fatal
            return [failed_record(job.path, exc) for job in jobs]

    async def _unopened(self, root: str, record: FileRecord) -> FileRecord:
        """The record of a file that could not be opened, saying ``vanished`` when its path no
        longer holds a file of the tree (asked of the disk here, not on the owner thread)."""
        if record.stat is not None or issue_codes(record) & GONE:
            return record
        follow = self._options.follow_symlinks
        found = await asyncio.to_thread(examine, root, [record.path], follow_symlinks=follow)
        error = found[record.path]
        if not isinstance(error, OSError) or error.errno not in NO_FILE:
            return record  # there, or it cannot be told: unreadable
        issue = FileIssue("read", IssueKind.ERROR, "no longer there", IssueCode.VANISHED)
        return replace(record, issues=(*record.issues, issue))

    async def reconcile(
        self,
        root: str,
        *,
        start: str | None = None,
        scan: ScanOptions | None = None,
        progress: Callable[[ScanStats], None] | None = None,
    ) -> ScanStats:
        """Bring the store in line with the disk under ``root`` (or its subtree ``start``):
        stat every file, hash only what changed, apply renames without hashing, tombstone
        what vanished, recompute units whose profile is outdated, and log ``scan.done`` (for a
        subtree too, with its ``start``).

        Args:
            root: The root (absolute, normalized).
            start: A directory inside the root to reconcile instead of the whole root.
            scan: Symlink policy and ignore patterns.
            progress: Called on the loop with the counters after each step and result.

        Returns:
            The final counters (also logged in ``scan.done``).
        """
        stats, _ = await self._reconcile(root, start, scan, progress, collect=False)
        return stats

    async def _reconcile(
        self,
        root: str,
        start: str | None,
        scan: ScanOptions | None,
        progress: Callable[[ScanStats], None] | None,
        *,
        collect: bool,
    ) -> tuple[ScanStats, list[Event]]:
        device = await asyncio.to_thread(device_of, root)
        rec = await self._call(
            lambda ix: Reconciler(
                ix, root, scan, start=start, device=device, collect=collect, announce=not collect
            )
        )
        follow = scan.follow_symlinks if scan is not None else False
        concurrency = max(1, self._options.hash_concurrency)
        batching = self._hasher if isinstance(self._hasher, BatchHasher) else None
        queue: asyncio.Queue[list[HashJob] | None] = asyncio.Queue(maxsize=2 * concurrency)

        def report(stats: ScanStats) -> None:
            if progress is not None:
                progress(stats)

        # The records of small files arrive by the hundred per second: applied in batches.
        apply: _Apply = OwnerBatches(
            self._call, lambda ix, done: rec.applied(*done), lambda ix, done: rec.applied_many(done)
        )

        async def worker() -> None:
            while (jobs := await queue.get()) is not None:
                todo = jobs
                if batching is not None and len(jobs) > 1:
                    todo = await self._settle_batch(rec, apply, report, batching, jobs)
                while todo:
                    todo.extend(await self._settle(rec, apply, report, todo.pop()))
            # The walk is done and every batch taken: what the other workers still hash is
            # all that will come, and need not wait for more.
            apply.last_items()

        def batches(jobs: list[HashJob]) -> list[list[HashJob]]:
            return batched(jobs) if batching is not None else [[job] for job in jobs]

        async def placed(sightings: list[Sighting]) -> tuple[list[HashJob], ScanStats]:
            present = await asyncio.to_thread(look, sightings, follow_symlinks=follow)
            return await self._call(lambda ix: rec.settle(sightings, present))

        async def planned(listings: list[Listing], walked: bool) -> Step:
            return await self._call(lambda ix: rec.step(listings, walked))

        async def produce() -> None:
            done = False
            while not done:
                step = await planned(*await asyncio.to_thread(rec.walk))
                jobs, stats = step.jobs, step.stats
                if step.sightings:
                    more, stats = await placed(step.sightings)
                    jobs = jobs + more
                for batch in batches(jobs):
                    await queue.put(batch)
                report(stats)
                done = step.done
            for batch in batches(await self._call(lambda ix: rec.finish())):
                await queue.put(batch)
            for _ in range(concurrency):
                await queue.put(None)

        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(produce())
                for _ in range(concurrency):
                    group.create_task(worker())
        except BaseExceptionGroup as failed:
            # Workers share the store: one failure (a full disk) usually fails them all alike.
            # Callers get the first error itself, as from any other method.
            raise _first_error(failed) from failed
        finally:
            await apply.drain()
        stats, _ = await self._call(lambda ix: rec.close())
        report(stats)
        return stats, rec.events or []

    async def _settle(
        self,
        rec: Reconciler,
        apply: _Apply,
        report: Callable[[ScanStats], None],
        job: HashJob,
        first: FileRecord | None = None,
    ) -> list[HashJob]:
        """Hash a job of a reconcile (``first``: its first attempt, made in a batch) and
        apply the record; the jobs that follow from it."""
        record, attempts = await self._hash(job, first)
        if is_unstable(record):
            reason = unstable_reason(record)
            stats = await self._call(lambda ix: rec.unstable(job, attempts, reason))
            report(stats)
            return []
        _, more, stats = await apply((job, record))
        report(stats)
        return more

    async def _settle_batch(
        self,
        rec: Reconciler,
        apply: _Apply,
        report: Callable[[ScanStats], None],
        hasher: BatchHasher,
        jobs: list[HashJob],
    ) -> list[HashJob]:
        """Hash small files of a reconcile in one round trip and apply their records in one
        owner job; a file that changed while read is tried again alone, after the others."""
        records = await self._hash_batch(hasher, jobs)
        done, unstable = [], []
        for job, record in zip(jobs, records, strict=True):
            if record.issues and is_unstable(record):
                unstable.append((job, record))
            elif record.stat is None:  # not opened: ask the disk why (a file read needs no look)
                done.append((job, await self._unopened(job.root, record)))
            else:
                done.append((job, record))
        more: list[HashJob] = []
        applied = await apply.many(done)
        for _, after, _ in applied:
            more += after
        if applied:
            report(applied[-1][2])
        for job, record in unstable:
            more += await self._settle(rec, apply, report, job, record)
        return more

    async def process_path(self, root: str, path: str) -> list[Event]:
        """A watcher saw ``path`` created or modified: index it (a directory is reconciled).

        Returns:
            The events logged.
        """
        follow = self._options.follow_symlinks
        examined = await asyncio.to_thread(examine, root, [path], follow_symlinks=follow)
        events, todo, is_dir = await self._call(
            lambda ix: plan_path(ix, root, path, examined[path])
        )
        if is_dir:
            _, found = await self._reconcile(root, path, None, None, collect=True)
            return events + found
        if isinstance(todo, Sighting):
            sighting = todo
            present = await asyncio.to_thread(look, [sighting], follow_symlinks=follow)
            placed, hashing = await self._call(lambda ix: place(ix, sighting, present))
            events += placed
            todo = HashJob(root, path, sighting.stat) if hashing else None
        if todo is None:
            return events
        job = todo
        record, attempts = await self._hash(job)
        if is_unstable(record):
            reason = unstable_reason(record)
            return events + await self._call(
                lambda ix: changes.apply_unstable(ix, root, path, attempts, reason)
            )
        return events + await self._call(
            lambda ix: changes.apply_record(ix, root, record, job.stat)
        )

    async def remove_path(self, path: str) -> list[Event]:
        """A file or directory was deleted: tombstone what the store held there."""
        return await self._call(lambda ix: changes.remove_path(ix, path))

    async def move_path(self, src: str, root: str, dst: str) -> list[Event]:
        """A file or directory was renamed: the stored files move with it, unhashed."""
        stored = await self._call(lambda ix: [f.path for f in ix.store.files_under(src)])
        moved = [dst + path[len(src) :] for path in stored]
        follow = self._options.follow_symlinks
        examined = await asyncio.to_thread(examine, root, moved, follow_symlinks=follow)
        found = {
            p: FileStat.from_os(st) for p, st in examined.items() if not isinstance(st, OSError)
        }
        return await self._call(lambda ix: changes.move_path(ix, src, root, dst, found))

    async def adopt(self, thresholds: Thresholds | None = None, chunk: int = 256) -> policy.Adopted:
        """Bring the stored relations under a duplicate policy (this pipeline's by default):
        finish a switch the store records as under way, then re-evaluate the files the change
        from the store's policy affects, ``chunk`` files per transaction. Other work goes on
        between the chunks; one switch runs at a time.

        Returns:
            The policy left, the files re-evaluated and the events logged.
        """
        return await asyncio.to_thread(self._adopt, thresholds, chunk)

    def _adopt(self, thresholds: Thresholds | None, chunk: int = 256) -> policy.Adopted:
        """Finish a switch the store records as under way, then switch to ``thresholds`` (by
        default :attr:`options`', read once the previous switch is done) if the store's policy
        is another one; chunk by chunk (blocking)."""
        with self._adopting:
            target = self._options.thresholds if thresholds is None else thresholds
            return self._switch(target, chunk)

    def _switch(self, thresholds: Thresholds, chunk: int) -> policy.Adopted:
        call = self._owner.call
        found = call(policy.recorded)
        if found is None:
            call(lambda ix: policy.record(ix, policy.Recorded(thresholds)))
            return policy.Adopted()
        steps = [] if found.target is None else [(found.decided, found.target, found.done)]
        if found.effective != thresholds:
            steps.append((found.effective, thresholds, 0))
        events: list[Event] = []
        files = 0
        for previous, target, done in steps:
            switch = call(
                functools.partial(policy.begin, previous=previous, target=target, done=done)
            )
            for start in range(0, len(switch.ids), chunk):
                part = switch.ids[start : start + chunk]
                events += call(functools.partial(policy.step, switch=switch, part=part))
            files += len(switch.ids)
        return policy.Adopted(found.decided, files, events) if steps else policy.Adopted()

    async def recompose(self, chunk: int = 1024) -> list[Event]:
        """Compose the stored ISCC-CODEs again when they were composed with another ``wide``
        option than :attr:`options`' (:mod:`isccd.pipeline.composition`), ``chunk`` files per
        transaction; other work goes on between the chunks.

        Returns:
            The events logged (``file.changed`` for each ISCC-CODE that changed).
        """
        return await asyncio.to_thread(self._recompose, chunk)

    def _recompose(self, chunk: int = 1024) -> list[Event]:
        with self._composing:
            call = self._owner.call
            wide = self._options.wide
            ids = call(functools.partial(composition.outdated, wide=wide))
            if ids is None:
                return []
            events: list[Event] = []
            for start in range(0, len(ids), chunk):
                part = ids[start : start + chunk]
                events += call(functools.partial(changes.recompose, file_ids=part, wide=wide))
            call(functools.partial(composition.record, wide=wide))
            return events

    async def watch_folders(self, settle: float) -> None:
        """Keep the folders' sums and announce duplicate folders from now on, each once its
        files have been quiet for ``settle`` seconds (reads every file once)."""
        await self._call(functools.partial(changes.watch_folders, settle=settle))

    async def folders_due(self) -> float | None:
        """When :meth:`settle_folders` has something to decide (Unix time), or ``None``.

        Raises:
            RuntimeError: The folders' sums were dropped after a failure (logged).
        """
        return await self._call(changes.folders_due)

    async def settle_folders(self) -> list[Event]:
        """Log the ``dir.dup`` and ``dir.resolved`` events of the folders quiet long enough."""
        return await self._call(changes.settle_folders)

    async def purge(self) -> tuple[int, int]:
        """Forget tombstones and events past their retention."""
        return await self._call(changes.purge)

    # -- questions -----------------------------------------------------------------------------

    async def code(self, root: str, path: str) -> FileRecord:
        """Hash ``path``, a file of ``root``, once and store nothing (``similar`` on a file not
        indexed yet).

        Returns:
            Its record; one that could not be computed carries the reason in its issues.
        """
        hasher = self._need_hasher()
        try:
            return await hasher(root, path, None)
        except Exception as exc:  # a crashed worker is a per-file error, as in _hash
            return failed_record(path, exc)

    async def get(self, path: str, host: str | None = None) -> FileInfo | None:
        """What the index knows about ``path`` (a tombstone if it was removed), or ``None``;
        ``host``: only its duplicates on that host."""
        return await self._call(lambda ix: queries.get(ix, path, host))

    async def similar(
        self, query: SimilarQuery, code: Callable[[str], Awaitable[FileRecord]]
    ) -> SimilarResult:
        """Files related to a file or a code (see :func:`isccd.pipeline.queries.similar`).

        Args:
            query: The question.
            code: Codes a file the index does not hold (``query.path``), without storing it.

        Raises:
            InvalidCodeError: The code cannot be decoded.
            NotIndexedError: The file is not indexed and cannot be coded.
        """
        found = await self._call(lambda ix: queries.subject(ix, query))
        subject = queries.coded(found, await code(found)) if isinstance(found, str) else found
        return await self._call(lambda ix: queries.similar(ix, subject, query))

    async def identity(self) -> str:
        """The store's identity now, read again (:attr:`store_id` is then this one): a shared
        database's changes while the daemon runs when a writer finds it restored from an
        older dump (:mod:`isccd.store.pgruns`)."""
        self._store_id = await self._call(lambda ix: ix.store.identity)
        return self._store_id

    async def log_end(self, identity: str) -> int | None:
        """The last seq the log had under ``identity`` (:meth:`isccd.store.Store.log_end`)."""
        return await self._call(lambda ix: ix.store.log_end(identity))

    async def dupes(self, query: DupesQuery) -> DupesResult:
        """Duplicate groups, the most reclaimable bytes first."""
        return await self._call(lambda ix: groups.dupes(ix, query))

    async def dup_dirs(self, query: DirsQuery) -> DirsResult:
        """Duplicate folders, exact then near (see :mod:`isccd.pipeline.folders`)."""
        return await self._call(lambda ix: groups.dup_dirs(ix, query))

    async def watched(self, query: WatchedQuery) -> WatchedResult:
        """The indexed files matching a watchlist (see :mod:`isccd.pipeline.watched`).

        Raises:
            UnknownWatchlistError: There is no such watchlist.
        """
        return await self._call(lambda ix: watched.watched(ix, query))

    async def counts(self) -> Counts:
        """The live files per root and the last sequence number (every host's, in a store a
        fleet shares), read together."""
        return await self._call(
            lambda ix: Counts(ix.store.live_by_root(), ix.store.last_seq(fleet=True))
        )

    # -- the event log -------------------------------------------------------------------------

    def emit(
        self, type: EventType, root: str, path: str, data: dict[str, Any]
    ) -> concurrent.futures.Future[Event]:
        """Log an event of the caller's (progress, watch problems, the store's recovery) in a
        job of its own; the future resolves once it is committed."""
        return self._submit(
            functools.partial(changes.emit, type=type, root=root, path=path, data=data)
        )

    async def flush(self) -> None:
        """Wait until every job submitted before is committed.

        Raises:
            StoreError: The store cannot commit (a full disk, a database deleted or replaced).
        """
        await self._call(lambda ix: None)

    async def events_since(
        self, seq: int, limit: int = 1000, *, fleet: bool = False
    ) -> list[Event]:
        """Committed events after ``seq`` (for ``subscribe since=N``; ``fleet``: every host's)."""
        return await self._call(lambda ix: ix.store.events_since(seq, limit, fleet=fleet))

    async def last_seq(self) -> int:
        """The last sequence number committed."""
        return await self._call(lambda ix: ix.store.last_seq())

    async def log_bounds(self) -> tuple[int, int]:
        """The oldest sequence number still in the log and the last one committed (every
        host's, in a store a fleet shares)."""
        return await self._call(
            lambda ix: (ix.store.first_seq(fleet=True), ix.store.last_seq(fleet=True))
        )
