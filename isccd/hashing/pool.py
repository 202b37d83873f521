"""The hashing workers: processes that run :func:`isccd.hashing.compute_record`, one file at a time.

A small pool of its own rather than :class:`concurrent.futures.ProcessPoolExecutor`, because the
daemon must know which file each worker holds:

- a worker that dies (a segfault in a decoder, the OOM killer) takes down only the file it was
  hashing, which is recorded with an ``internal`` issue; the worker is replaced and the files
  queued behind it go to other workers. ``ProcessPoolExecutor`` breaks as a whole
  (``BrokenProcessPool``) and cannot say which file was to blame;
- a file that takes longer than ``file_timeout`` gets its worker killed and replaced, and is
  recorded as failed, instead of holding a worker forever;
- a worker may use at most ``memory`` bytes (``[hashing] worker_memory``): a stage that needs
  more fails (``too_large``), the file keeps the units that fit, and the worker is replaced.

The memory bound is the kernel's ``RLIMIT_DATA``, set in the worker once it is warm. Since
Linux 4.7 it counts the heap and every private writable mapping, so it follows what the worker
allocates (measured: 137 MiB when idle, 1.7 GiB while decoding the largest image the pixel
limit admits, 128 MP of 16-bit RGBA, within 60 MiB of the resident size), and the allocation
that would pass it fails at once, as a :class:`MemoryError` that the stage reports, before the
memory is used. ``RLIMIT_AS`` cannot serve: it counts reserved address space, and the document
extractor alone reserves 32 GiB of it when it loads (an idle worker: 357 MiB). A
watcher polling each worker's resident size from the daemon would act only after the memory is
used, and kill the worker with the file's other units; per-worker cgroups need a delegated
cgroup v2 tree, which a plain service (or a cgroup v1 host) does not have. External tools a
worker runs (ffmpeg, fpcalc) inherit the limit. A library that does not check a failed
allocation may crash its worker instead, which costs that file only, as any crash does.

Each worker starts from a fork server (safe whatever threads the daemon runs), warms up the
compiled kernels before it takes work, and talks to the daemon over a pipe that the event loop
reads (``add_reader``): no threads. Every worker holds at most :attr:`WorkerOptions.depth` files
(the next one is already waiting when it finishes one), so the work in flight is bounded.

An idle pool lets go of its processes: when no file has been hashed for
:attr:`WorkerOptions.idle_timeout` seconds and none is waiting or in flight, the workers are
stopped, and then the fork server, which holds the hashing code and the compiled kernels (about
100 MiB, most of an idle daemon's memory). The next file starts them again and waits for the
first worker to warm up (about half a second); files that arrive meanwhile wait in line, none
is lost or hashed twice. The daemon wakes the pool as soon as the watcher sees a change
(:meth:`WorkerPool.wake`), so the start overlaps the change's settle time. The fork server is
multiprocessing's, one per process: it is stopped only when no pool of the process has a
worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import multiprocessing.connection
import threading
import time
import weakref
from collections import deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from isccd import forkserver
from isccd.errors import HashingUnavailableError
from isccd.hashing import CodeOptions
from isccd.hashing.wire import unpack
from isccd.hashing.worker import failed_record, worker_main
from isccd.model import FileRecord, UnitType

#: The default bound of a worker's memory: the largest image the default pixel limit admits
#: (128 MP, 16-bit RGBA) takes 1.7 GiB to decode, so every file the ISCC SDK codes is coded.
DEFAULT_WORKER_MEMORY = 2 << 30

#: Seconds to wait before starting a worker again after one died while starting.
_RESPAWN_BACKOFF = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
#: Workers that die while starting, before any ever started, that make :meth:`start` fail.
_START_ATTEMPTS = 3
#: Seconds :meth:`WorkerPool.close` waits for workers still starting. A start waits for the
#: fork server, which may be loading the kernels for a long while on a busy machine (or be
#: wedged): a worker that arrives later is stopped as it arrives, by the loop or, once the loop
#: is gone, by the thread that started it.
_START_WAIT = 5.0
#: The default :attr:`WorkerOptions.idle_timeout`: long enough for a burst of changes to be one
#: start, short enough that an idle daemon soon holds only its own process.
DEFAULT_IDLE_TIMEOUT = 60.0

#: Every pool of this process, for whether the fork server they share may be stopped.
_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


class PoolClosedError(Exception):
    """The pool was closed before the file was hashed; it was abandoned, not failed."""


class WorkersUnavailableError(HashingUnavailableError):
    """No hashing worker could be started (each died while starting; see the log)."""


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How files are hashed.

    Attributes:
        workers: Worker processes.
        depth: Hand-overs given to one worker at once (2 hides the hand-over latency).
        max_in_flight: Hand-overs the pool takes at once (a file, or a batch of
            :meth:`WorkerPool.compute_many`), handed out or waiting for a worker; 0 for
            ``workers * depth``. Callers beyond it wait in :meth:`WorkerPool.compute`.
        file_timeout: Seconds one file may take before its worker is replaced.
        memory: Bytes of memory a worker may use (its heap and private writable mappings);
            0 for no limit.
        code: How files are coded.
        follow_symlinks: Follow symbolic links that stay beneath a file's root.
        start_method: ``forkserver`` (default), ``spawn`` or ``fork``.
        idle_timeout: Seconds without work after which the workers (and the fork server) are
            stopped, to be started again by the next file; 0 to keep them running.
    """

    workers: int = 1
    depth: int = 2
    max_in_flight: int = 0
    file_timeout: float = 1800.0
    memory: int = DEFAULT_WORKER_MEMORY
    code: CodeOptions = field(default_factory=CodeOptions)
    follow_symlinks: bool = False
    start_method: str = "forkserver"
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT


@dataclass(frozen=True, slots=True)
class WorkerStatistics:
    """The pool's figures.

    Attributes:
        workers: Workers running (warming up included).
        busy: Files being hashed now.
        waiting: Files waiting for a worker.
        done: Files hashed since start.
        crashed: Workers that died while hashing.
        timeouts: Files given up for taking too long.
        started: Worker processes started since start (replacements included).
        over_memory: Files that needed more memory than a worker may use.
        state: ``"running"`` (workers started or starting), ``"stopping"`` (letting go of
            them after a quiet period) or ``"idle"`` (none: the next file starts them).
        idle_stops: Times the pool let go of its workers after a quiet period.
        ready: Workers warmed up and taking files (of ``workers``): a file waiting while one
            of them has room waits for ``max_in_flight``, not for a worker to start.
    """

    workers: int
    busy: int
    waiting: int
    done: int
    crashed: int
    timeouts: int
    started: int
    over_memory: int = 0
    state: str = "running"
    idle_stops: int = 0
    ready: int = 0

    @property
    def settled(self) -> int:
        """What the workers are through with: files hashed, and jobs given up for time or
        lost with their worker (a batch's files are then hashed again one at a time)."""
        return self.done + self.timeouts + self.crashed


#: A file to hash as the caller names it and a worker is sent it: ``(root, path, units)``.
_Request = tuple[str | None, str, frozenset[UnitType] | None]


@dataclass(slots=True)
class _Batch:
    """The files one caller waits for, and their records as they come."""

    records: list[FileRecord | None]
    left: int
    future: asyncio.Future[list[FileRecord]]

    def finish(self, index: int, record: FileRecord) -> None:
        if self.records[index] is None:
            self.records[index] = record
            self.left -= 1
        if not self.left and not self.future.done():
            self.future.set_result(self.records)  # type: ignore[arg-type]  # all filled


@dataclass(slots=True)
class _Job:
    """Files of one caller's batch that one worker is sent at once (one message, one answer):
    ``files[i]`` is the batch's file ``first + i``, sent as the caller named it.

    A job is the whole batch as handed over, or a part of it split off to be hashed again
    (the rest of a batch whose worker ran out of memory, or each file of a batch whose worker
    died): no per-file object is built for the thousands of small files a scan hands over.
    """

    id: int
    batch: _Batch
    first: int
    files: Sequence[_Request]
    started: float = 0.0
    timer: asyncio.TimerHandle | None = None

    @property
    def path(self) -> str:
        """The first file (what a log line or a status names)."""
        return self.files[0][1]

    def abandoned(self) -> bool:
        """Whether the caller waiting for these files gave up."""
        return self.batch.future.done()

    def part(self, start: int, end: int | None = None) -> tuple[int, Sequence[_Request]]:
        """The batch's index of ``files[start]``, and ``files[start:end]``."""
        return self.first + start, self.files[start:end]


@dataclass(slots=True)
class _Worker:
    number: int
    process: Any  # multiprocessing's BaseProcess; its context-specific type is not public
    conn: multiprocessing.connection.Connection
    ready: bool = False
    pid: int = 0
    jobs: deque[_Job] = field(default_factory=deque)


class WorkerPool:
    """Worker processes hashing files on behalf of the event loop.

    Lifecycle: :meth:`start`, any number of :meth:`compute`, :meth:`close`. Every method runs
    on the event loop that called :meth:`start`. Between files the pool may let go of its
    workers and start them again (``idle_timeout``): callers see no difference but the wait.
    """

    def __init__(self, options: WorkerOptions) -> None:
        if options.workers < 1 or options.depth < 1:
            raise ValueError("workers and depth must be at least 1")
        self._options = options
        # Typed loosely: the start method is configurable, and each context has its own
        # Process class.
        if options.start_method == "forkserver":
            # The fork server imports the hashing code and loads the compiled kernels once;
            # every worker forked from it shares those pages (about 70 MiB less per worker)
            # and starts warm.
            self._context: Any = forkserver.context()
        else:
            self._context = multiprocessing.get_context(options.start_method)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._workers: dict[int, _Worker] = {}
        self._waiting: deque[_Job] = deque()
        self._slots = asyncio.Semaphore(options.max_in_flight or options.workers * options.depth)
        self._tasks: set[asyncio.Task[None]] = set()
        self._starting: set[asyncio.Future[None]] = set()  # worker starts in their threads
        self._next_job = 0
        self._next_worker = 0
        self._closing = False
        self._ready = asyncio.Event()
        self._done = 0
        self._crashed = 0
        self._timeouts = 0
        self._over_memory = 0
        self._failed_starts = 0
        self._start_failed: asyncio.Future[str] | None = None
        self._state = "running"
        self._idle_timer: asyncio.TimerHandle | None = None
        self._idle_stops = 0
        self._spawning = 0  # worker processes being started, not attached yet
        self._told_kernels: str | None = None
        _POOLS.add(self)

    async def start(self) -> None:
        """Start the workers and wait until the first one is warmed up.

        Raises:
            WorkersUnavailableError: Workers die while starting, again and again.
        """
        self._loop = asyncio.get_running_loop()
        self._start_failed = self._loop.create_future()
        self._start_workers()
        ready = asyncio.ensure_future(self._ready.wait())
        waiters: list[asyncio.Future[Any]] = [ready, self._start_failed]
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if not self._ready.is_set():
            ready.cancel()
            await self.close(grace=0)
            reason = self._start_failed.result()
            if self._options.start_method == "forkserver":
                # A worker that cannot import its code dies before it can say so.
                problem = await asyncio.to_thread(forkserver.import_problem)
                if problem is not None:
                    reason = f"{reason}; they cannot import their code: {problem}"
            raise WorkersUnavailableError(f"the hashing workers cannot start: {reason}")

    async def compute(
        self, path: str, units: Collection[UnitType] | None = None, *, root: str | None
    ) -> FileRecord:
        """Hash one file in a worker.

        Waits while ``max_in_flight`` files are already in flight. Problems with the file
        are in the record's issues; a worker crash or timeout is an ``internal`` issue.

        Args:
            path: The file.
            units: Only these units (all by default).
            root: The watched root holding ``path``: the worker opens it beneath the root's
                directory (see :func:`isccd.hashing.compute_record`). ``None`` only for a file
                a user names on the command line.

        Raises:
            PoolClosedError: The pool closed before the file was hashed.
        """
        units_set = None if units is None else frozenset(units)
        return (await self.compute_many([(root, path, units_set)]))[0]

    async def compute_many(self, files: Sequence[_Request]) -> list[FileRecord]:
        """Hash several files, ``(root, path, units)`` each, sent to one worker in one message
        and answered in one: for small files, whose hashing costs less than handing each over.

        Each file keeps what :meth:`compute` promises: when the worker dies or runs past the
        time limit on a batch, its files are hashed again one by one (so that only the file to
        blame fails), and a file that runs out of memory ends the batch there, the rest going
        to the replacement worker. Keep batches to files that take milliseconds: the time limit
        applies to the batch as a whole. ``files`` is sent as it is, and must not change until
        the records are returned.

        Returns:
            The records, in the order of ``files``.

        Raises:
            PoolClosedError: The pool closed before the files were hashed.
        """
        if not files:
            return []
        async with self._slots:
            if self._closing:
                raise PoolClosedError(files[0][1])
            future: asyncio.Future[list[FileRecord]] = asyncio.get_running_loop().create_future()
            batch = _Batch([None] * len(files), len(files), future)
            self._waiting.append(self._job(batch, 0, files))
            self._start_again()
            self._dispatch()
            return await future

    def _job(self, batch: _Batch, first: int, files: Sequence[_Request]) -> _Job:
        self._next_job += 1
        return _Job(self._next_job, batch, first, files)

    async def close(self, grace: float) -> int:
        """Stop taking files, give those in flight ``grace`` seconds, then stop the workers.

        Idempotent.

        Returns:
            Files abandoned (left unhashed); they are picked up again at the next start.
        """
        self._closing = True
        self._forget_idle_timer()
        abandoned = 0
        while self._waiting:
            abandoned += _abandon(self._waiting.popleft())
        jobs = [job for worker in self._workers.values() for job in worker.jobs]
        in_flight = {job.batch.future for job in jobs}
        if in_flight:
            await asyncio.wait(in_flight, timeout=grace)
        workers = list(self._workers.values())
        for worker in workers:
            self._detach(worker)
            for job in worker.jobs:
                if job.timer is not None:
                    job.timer.cancel()
                abandoned += _abandon(job)
            worker.jobs.clear()
        # Files of a worker that died or ran out of time meanwhile went back in line.
        while self._waiting:
            abandoned += _abandon(self._waiting.popleft())
        await asyncio.gather(*(asyncio.to_thread(_terminate, w) for w in workers))
        # Workers still starting are stopped as they arrive (see _attach and _spawn): waited
        # for a while only, since a start waits for the fork server.
        if self._starting:
            await asyncio.wait(list(self._starting), timeout=_START_WAIT)
        # The stopping of replaced workers (bounded: see _terminate).
        while self._tasks:
            await asyncio.wait(list(self._tasks))
        return abandoned

    def wake(self) -> None:
        """Start the workers now if the pool let go of them, ahead of files to come (a change
        that is settling); they are let go again after the quiet period if none comes."""
        if self._loop is None:  # not started
            return
        self._start_again()
        self._watch_idle()

    def statistics(self) -> WorkerStatistics:
        """The pool's figures now."""
        return WorkerStatistics(
            workers=len(self._workers),
            busy=sum(len(j.files) for w in self._workers.values() for j in w.jobs),
            waiting=sum(len(j.files) for j in self._waiting),
            done=self._done,
            crashed=self._crashed,
            timeouts=self._timeouts,
            started=self._next_worker,
            over_memory=self._over_memory,
            state=self._state,
            idle_stops=self._idle_stops,
            ready=sum(w.ready for w in self._workers.values()),
        )

    def in_flight(self, now: float | None = None) -> list[tuple[str, int, float]]:
        """``(path, worker pid, seconds so far)`` of each file being hashed now (of a batch,
        its first file)."""
        now = time.monotonic() if now is None else now
        return [
            (w.jobs[0].path, w.pid, now - w.jobs[0].started)
            for w in self._workers.values()
            if w.jobs and w.jobs[0].started
        ]

    # -- idle ----------------------------------------------------------------------------------

    def _idle(self) -> bool:
        """Whether no file is waiting or in flight."""
        return not self._waiting and not any(w.jobs for w in self._workers.values())

    def _holds_processes(self) -> bool:
        """Whether this pool has workers, running or being started."""
        return bool(self._workers) or self._spawning > 0

    def _watch_idle(self) -> None:
        """Start counting the quiet period when the pool runs out of work; stop counting when
        work arrives."""
        assert self._loop is not None
        timeout = self._options.idle_timeout
        if not timeout or self._closing or self._state != "running" or not self._idle():
            self._forget_idle_timer()
        elif self._idle_timer is None:
            self._idle_timer = self._loop.call_later(timeout, self._quiet)

    def _forget_idle_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _quiet(self) -> None:
        """The quiet period has passed: let go of the workers, unless one is still starting
        (then look again after another period)."""
        assert self._loop is not None
        self._idle_timer = None
        if self._closing or self._state != "running" or not self._idle():
            return
        if self._spawning or not all(w.ready for w in self._workers.values()):
            self._watch_idle()
            return
        self._state = "stopping"
        task = self._loop.create_task(self._let_go())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _let_go(self) -> None:
        """Stop the idle workers, then the fork server when no pool of this process uses it;
        start again at once if files arrived meanwhile."""
        workers = list(self._workers.values())
        for worker in workers:
            self._detach(worker)
        await asyncio.gather(*(asyncio.to_thread(_terminate, w) for w in workers))
        shared = any(p._holds_processes() for p in _POOLS if p is not self)
        fork_server = self._options.start_method == "forkserver" and not shared
        if fork_server and not await asyncio.to_thread(forkserver.stop):
            structlog.get_logger().warning("fork_server_kept", reason="no ForkServer._stop")
        self._idle_stops += 1
        self._state = "idle"
        structlog.get_logger().info(
            "workers_idle", workers=len(workers), seconds=self._options.idle_timeout
        )
        if self._waiting and not self._closing:
            self._start_again()

    def _start_again(self) -> None:
        """Start the workers again if the pool let go of them; while it is letting go, they
        start once the old ones are gone (:meth:`_let_go`)."""
        if self._state != "idle" or self._closing:
            return
        self._state = "running"
        structlog.get_logger().info("workers_waking", workers=self._options.workers)
        self._start_workers()

    # -- workers -------------------------------------------------------------------------------

    def _start_workers(self) -> None:
        for _ in range(self._options.workers):
            self._start_worker()

    def _start_worker(self) -> None:
        """Start a worker process in a thread (the fork server may have to start first); it is
        attached to the loop when it exists, whoever waits for it.

        The thread is a daemon thread of its own, not one of the loop's executor: a start
        waits for the fork server without a bound, and neither the loop's end nor the
        interpreter's may wait for it.
        """
        assert self._loop is not None
        # Numbered here, on the loop: threads starting workers side by side must not share
        # a counter (two workers under one number, one of them lost to the pool).
        self._next_worker += 1
        self._spawning += 1
        started: asyncio.Future[None] = self._loop.create_future()
        self._starting.add(started)
        started.add_done_callback(self._spawned)
        number = self._next_worker
        threading.Thread(
            target=self._spawn, args=(number, started), name=f"isccd-worker-start-{number}",
            daemon=True,
        ).start()  # fmt: skip

    def _spawned(self, task: asyncio.Future[None]) -> None:
        self._starting.discard(task)
        if task.cancelled() or task.exception() is None:
            return  # attached (or stopped at once, the pool closing) by _attach
        self._spawning -= 1
        # The process could not even be started (no memory, no fork server).
        how = str(task.exception())
        structlog.get_logger().error("worker_start_failed", how=how)
        if self._start_failed_again(how):
            return
        if self._loop is not None and not self._closing:
            self._loop.call_later(self._backoff(), self._respawn)

    def _start_failed_again(self, how: str) -> bool:
        """Count a worker that died while starting; True when :meth:`start` gives up (no
        worker ever started, and this was the last attempt)."""
        self._failed_starts += 1
        if self._ready.is_set() or self._failed_starts < _START_ATTEMPTS:
            return False
        if self._start_failed is not None and not self._start_failed.done():
            self._start_failed.set_result(how)
        return True

    def _backoff(self) -> float:
        """Seconds before the next worker start: none unless starts have been failing."""
        if not self._failed_starts:
            return 0.0
        return _RESPAWN_BACKOFF[min(self._failed_starts, len(_RESPAWN_BACKOFF)) - 1]

    def _spawn(self, number: int, started: asyncio.Future[None]) -> None:
        """Start worker ``number`` (blocking, on its own thread) and hand it to the loop;
        ``started`` is resolved there. A worker the loop cannot take any more (it is closed) is
        stopped here."""
        loop = self._loop
        assert loop is not None
        try:
            parent, child = self._context.Pipe(duplex=True)
            process = self._context.Process(
                target=worker_main,
                args=(
                    child, self._options.code, self._options.memory, self._options.follow_symlinks
                ),
                name=f"isccd-worker-{number}",
                daemon=True,
            )  # fmt: skip
            # The fork server, started by the first worker (and again after an idle stop),
            # must not import a folder named isccd in the working directory in place of the
            # package.
            with forkserver.import_from_here():
                process.start()
            child.close()
        except Exception as exc:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to tell
                loop.call_soon_threadsafe(_resolve, started, exc)
            return
        worker = _Worker(number, process, parent)
        try:
            loop.call_soon_threadsafe(self._attach, worker, started)
        except RuntimeError:  # the loop is closed: no one will ever use or stop it
            process.kill()
            parent.close()

    def _attach(self, worker: _Worker, started: asyncio.Future[None] | None = None) -> None:
        assert self._loop is not None
        if started is not None:
            _resolve(started, None)
        self._spawning -= 1
        if self._closing:  # it arrives too late: it has nothing to do
            worker.process.kill()
            worker.conn.close()
            return
        self._workers[worker.number] = worker
        self._loop.add_reader(worker.conn.fileno(), self._readable, worker)

    def _detach(self, worker: _Worker) -> None:
        assert self._loop is not None
        if self._workers.pop(worker.number, None) is not None:
            self._loop.remove_reader(worker.conn.fileno())

    def _cleanup(self, worker: _Worker) -> None:
        """Stop a detached worker's process in a thread, keeping track of it for close()."""
        assert self._loop is not None
        task = self._loop.create_task(asyncio.to_thread(_terminate, worker))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _readable(self, worker: _Worker) -> None:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            self._died(worker)
            return
        if message[0] == "ready":
            worker.ready, worker.pid = True, message[1]
            self._failed_starts = 0
            self._ready.set()
            if message[2] is not None and message[2] != self._told_kernels:
                self._told_kernels = message[2]  # once, not at every worker's start
                structlog.get_logger().warning("kernels_not_cached", problem=message[2])
        else:
            job_id, packed, retire = message
            job = worker.jobs.popleft()
            assert job.id == job_id, "a worker answers in order"
            if job.timer is not None:
                job.timer.cancel()
            self._done += len(packed)
            batch = job.batch
            for index, record in enumerate(packed, job.first):
                batch.finish(index, unpack(record))
            if retire:
                self._over_memory += 1
                structlog.get_logger().warning(
                    "worker_memory_exceeded",
                    worker=worker.number,
                    path=job.files[len(packed) - 1][1],
                    limit_mib=self._options.memory >> 20,
                )
                first, rest = job.part(len(packed))
                if rest:  # not hashed: first in line, for the worker that replaces this one
                    worker.jobs.appendleft(self._job(batch, first, rest))
                worker.process.kill()  # the next files it holds go to the new worker
                self._replace(worker, None)
                return
            if worker.jobs:
                self._start_clock(worker.jobs[0])
        self._dispatch()

    def _start_clock(self, job: _Job) -> None:
        assert self._loop is not None
        job.started = time.monotonic()
        job.timer = self._loop.call_later(self._options.file_timeout, self._timed_out, job)

    def _dispatch(self) -> None:
        # Not to workers being let go either: the files wait for the ones started after.
        if self._closing or self._state != "running":
            return
        for worker in self._workers.values():
            while worker.ready and self._waiting and len(worker.jobs) < self._options.depth:
                job = self._waiting.popleft()
                if job.abandoned():  # its caller gave up (a cancelled reconcile)
                    continue
                try:
                    worker.conn.send((job.id, job.files))
                except OSError:  # the worker is dying; its EOF is handled by _readable
                    self._waiting.appendleft(job)
                    break
                worker.jobs.append(job)
                if len(worker.jobs) == 1:
                    self._start_clock(job)
        self._watch_idle()

    def _timed_out(self, job: _Job) -> None:
        for worker in self._workers.values():
            if worker.jobs and worker.jobs[0] is job:
                self._timeouts += 1
                seconds = self._options.file_timeout
                structlog.get_logger().error(
                    "worker_timeout", path=job.path, files=len(job.files), seconds=seconds
                )
                worker.process.kill()
                reason = f"hashing took longer than {seconds:g} s; given up"
                self._replace(worker, reason)
                return

    def _died(self, worker: _Worker) -> None:
        worker.process.join(timeout=1)
        code = worker.process.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        log = structlog.get_logger()
        if not worker.ready:
            log.error("worker_start_failed", worker=worker.number, how=how)
            if self._start_failed_again(how):
                self._detach(worker)
                self._cleanup(worker)
                return
            self._replace(worker, None)
            return
        self._crashed += 1
        culprit = worker.jobs[0] if worker.jobs else None
        path = culprit.path if culprit else None
        files = len(culprit.files) if culprit else 0
        log.error("worker_died", worker=worker.number, how=how, path=path, files=files)
        reason = f"the hashing process died ({how}) on this file"
        self._replace(worker, None if culprit is None else reason)

    def _replace(self, worker: _Worker, failure: str | None) -> None:
        """Retire a worker: fail the file it was on with ``failure`` (a batch is hashed again
        one file at a time, so that only the file to blame fails), requeue the rest, start a
        new one."""
        assert self._loop is not None
        self._detach(worker)
        self._cleanup(worker)
        jobs = list(worker.jobs)
        worker.jobs.clear()
        if failure is not None and jobs:
            culprit = jobs.pop(0)
            if culprit.timer is not None:
                culprit.timer.cancel()
            if len(culprit.files) == 1:
                culprit.batch.finish(culprit.first, failed_record(culprit.path, failure))
            else:
                jobs[:0] = [
                    self._job(culprit.batch, *culprit.part(i, i + 1))
                    for i in range(len(culprit.files))
                ]
        for job in reversed(jobs):  # not started yet: first in line for the other workers
            if job.timer is not None:
                job.timer.cancel()
            job.started, job.timer = 0.0, None
            self._waiting.appendleft(job)
        if self._closing:
            return
        self._loop.call_later(self._backoff(), self._respawn)
        self._dispatch()

    def _respawn(self) -> None:
        assert self._loop is not None
        # Not for a pool that let go of its workers meanwhile, nor beyond the number asked
        # for (the pool may have started them all again since).
        if self._closing or self._state != "running":
            return
        if len(self._workers) + self._spawning >= self._options.workers:
            return
        self._start_worker()


def _resolve(future: asyncio.Future[None], error: BaseException | None) -> None:
    """Resolve a worker start's future (on the loop), with its error if it failed."""
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


def _abandon(job: _Job) -> int:
    """Tell the caller still waiting for a job's files that the pool closed; the number of
    files abandoned."""
    future = job.batch.future
    if not future.done():
        future.set_exception(PoolClosedError(job.path))
    # A caller that gave up has cancelled its future already: its files are not counted.
    if not _closed(future):
        return 0
    records = job.batch.records[job.first : job.first + len(job.files)]
    return sum(record is None for record in records)


def _closed(future: asyncio.Future[Any]) -> bool:
    return not future.cancelled() and isinstance(future.exception(), PoolClosedError)


def _terminate(worker: _Worker) -> None:
    """Ask a detached worker to exit, and make sure it does (blocking)."""
    with contextlib.suppress(OSError):
        worker.conn.send(None)
    worker.process.join(timeout=2)
    if worker.process.is_alive():
        worker.process.kill()
        worker.process.join(timeout=5)
    worker.conn.close()
