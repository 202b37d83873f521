"""One named thread that owns the store; work is sent to it and results come back as futures.

SQLite allows one writer at a time and its connections belong to the thread that made them, so
isccd gives the write connection (and whatever is built on it: the pipeline's index and its
in-memory index) to a single thread. Any thread submits a job, a callable that receives the
owned object; the owner runs jobs in submission order and returns each result through a
:class:`concurrent.futures.Future` (``asyncio.wrap_future`` makes it awaitable).

Group commit: the owner opens one transaction, runs every job already waiting (up to
``max_batch`` jobs or ``max_batch_seconds``), each inside its own savepoint so that a failing job
is undone alone, then commits once and resolves the futures. Under load this batches hundreds of
changes per transaction (SQLite manages about 1,000 commits per second but 500,000 rows per second
in batches); when idle a job commits at once. A future resolves only after its changes are
committed, so nothing is announced that could still be rolled back. If the commit fails (a full
disk), the batch is rolled back and each of its jobs run again in a transaction of its own, so
that only the jobs whose own writes cannot be committed fail (a question asked while the disk
is full is still answered).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from isccd.errors import StoreError
from isccd.store.base import Transactional

C = TypeVar("C", bound=Transactional)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class OwnerOptions:
    """Batching and queueing of the owner thread.

    Attributes:
        max_batch: Jobs committed together at most.
        max_batch_seconds: A batch stops taking new jobs after this long, bounding latency.
        queue_size: Jobs waiting at most; :meth:`StoreOwner.submit` blocks when full.
    """

    max_batch: int = 512
    max_batch_seconds: float = 0.05
    queue_size: int = 4096


@dataclass(slots=True)
class _Job:
    fn: Callable[[Any], Any]
    future: Future[Any]


_STOP = object()


class StoreOwner(Generic[C]):
    """Runs jobs against an object owned by one thread, with group commit.

    Lifecycle: :meth:`start` (opens the object on the thread), :meth:`submit` / :meth:`call`,
    then :meth:`close` (runs what is queued, commits, closes the object, joins the thread).
    """

    def __init__(
        self,
        open_owned: Callable[[], C],
        *,
        name: str = "isccd-store",
        options: OwnerOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Prepare the owner.

        Args:
            open_owned: Builds the owned object; called on the owner thread.
            name: The thread's name (it shows in logs and debuggers).
            options: Batching and queueing.
            clock: Monotonic clock for batch deadlines.
        """
        self._open = open_owned
        self._options = options or OwnerOptions()
        self._clock = clock
        self._queue: queue.Queue[_Job | object] = queue.Queue(self._options.queue_size)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._ready: Future[None] = Future()
        self._closed = False
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the thread and wait until the owned object is open.

        Raises:
            Exception: Whatever opening raised (e.g. :class:`~isccd.errors.StoreError`).
        """
        self._thread.start()
        self._ready.result()

    def submit(self, fn: Callable[[C], T]) -> Future[T]:
        """Queue ``fn(owned)``; the future resolves after its transaction commits.

        Raises:
            StoreError: The owner is closed.
        """
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            future: Future[T] = Future()
            self._queue.put(_Job(fn, future))
        return future

    def call(self, fn: Callable[[C], T]) -> T:
        """Run ``fn(owned)`` on the owner thread and wait for its committed result."""
        return self.submit(fn).result()

    def close(self, timeout: float | None = None) -> None:
        """Finish queued jobs, close the owned object and join the thread; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join(timeout)

    # -- the owner thread ----------------------------------------------------------------------

    def _run(self) -> None:
        try:
            owned = self._open()
        except BaseException as exc:
            self._ready.set_exception(exc)
            return
        self._ready.set_result(None)
        try:
            while self._run_batch(owned):
                pass
        finally:
            try:
                owned.rollback()
            finally:
                owned.close()
                self._fail_waiting(StoreError("the store was closed"))

    def _run_batch(self, owned: C) -> bool:
        """Run one batch; False when told to stop."""
        item = self._queue.get()
        if item is _STOP:
            return False
        assert isinstance(item, _Job)
        try:
            owned.begin()
        except BaseException as exc:
            if item.future.set_running_or_notify_cancel():
                item.future.set_exception(exc)
            return True
        ran: list[_Job] = []
        outcomes: list[tuple[bool, Any]] = []
        deadline = self._clock() + self._options.max_batch_seconds
        keep_going = True
        try:
            self._run_job(owned, item, ran, outcomes)
            while len(ran) < self._options.max_batch and self._clock() < deadline:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    keep_going = False
                    break
                assert isinstance(item, _Job)
                self._run_job(owned, item, ran, outcomes)
            owned.commit()
        except BaseException as exc:
            with contextlib.suppress(Exception):  # the original error is what callers need
                owned.rollback()
            if isinstance(exc, Exception) and len(ran) > 1:
                self._run_alone(owned, ran)
            else:
                _resolve(ran, [(False, exc)] * len(ran))
            return keep_going
        _resolve(ran, outcomes)
        return keep_going

    def _run_job(
        self, owned: C, job: _Job, ran: list[_Job], outcomes: list[tuple[bool, Any]]
    ) -> None:
        if not job.future.set_running_or_notify_cancel():
            return
        ran.append(job)
        try:
            outcomes.append(self._apply(owned, job))
        except BaseException as exc:
            outcomes.append((False, exc))
            raise

    @staticmethod
    def _apply(owned: C, job: _Job) -> tuple[bool, Any]:
        """Run a job in a savepoint: ``(True, result)``, or ``(False, its error)`` undone."""
        owned.savepoint()
        try:
            value = job.fn(owned)
        except Exception as exc:  # the job's own failure goes to its caller, not the batch
            try:
                owned.rollback_to()
            except Exception:  # the transaction is gone (a full disk): the cause fails the batch
                raise exc from None
            return False, exc
        owned.release()
        return True, value

    def _run_alone(self, owned: C, jobs: list[_Job]) -> None:
        """After a batch failed to commit: each job again, committed on its own."""
        for job in jobs:
            try:
                owned.begin()
                ok, value = self._apply(owned, job)
                owned.commit()
            except Exception as exc:
                with contextlib.suppress(Exception):
                    owned.rollback()
                ok, value = False, exc
            _resolve([job], [(ok, value)])

    def _fail_waiting(self, exc: BaseException) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Job) and item.future.set_running_or_notify_cancel():
                item.future.set_exception(exc)


def _resolve(jobs: list[_Job], outcomes: list[tuple[bool, Any]]) -> None:
    for job, (ok, value) in zip(jobs, outcomes, strict=True):
        if ok:
            job.future.set_result(value)
        else:
            job.future.set_exception(value)
