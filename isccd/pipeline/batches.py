"""Many small changes to the index as one job of the store's owner thread.

A reconcile of small files applies hundreds of records a second. As one owner job each, every
record pays a future, a queue hand-over and a wake-up of the event loop both ways, and the group
commit sees only the few records the hashing has in flight, so a scan commits every three files.
:class:`OwnerBatches` collects the items that arrive while the owner is busy and sends them
together: one job, one commit, one wake-up, while each item keeps its own savepoint, so an item
that fails is undone alone and its error reaches its own caller only, as before. Where the items
can be applied together for less (the new files of a first scan:
:func:`isccd.pipeline.changes.add_new`), that is tried first, in a savepoint of its own, and
the items go one by one if it fails.

While a scan floods the store (a job of many items has just been applied), the next job waits
a little for more items (:class:`Gathering`): the owner applies a job faster than the workers
hash one, so a scan would otherwise commit every worker message (128 small files), and a
transaction's fixed costs (the ``COMMIT``, the pages of the indexes it rewrites, the reads and
searches of a job) would be paid every 128 files instead of every few hundred. Nothing is
acknowledged before its commit, so what a crash loses is what no caller was told of: the files
of the job being gathered, which the next scan hashes again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from isccd.pipeline.index import Index

I = TypeVar("I")  # noqa: E741 - the item, as T is the result
T = TypeVar("T")

_log = logging.getLogger("isccd.pipeline")

#: What one item came to: ``(True, result)`` or ``(False, its error)``.
_Outcome = tuple[bool, Any]


@dataclass(frozen=True, slots=True)
class Gathering:
    """How long a job waits for more items while the store is flooded.

    A job waits only after a job of at least ``after`` items (records arriving by the hundred:
    a scan's batches of small files; a file hashed alone never waits), and then until it holds
    ``items`` items, or no item has come for ``quiet`` seconds (the scan's last files), or it
    has waited ``seconds``, whichever comes first.

    Attributes:
        after: Items of the job before, at least, for the next one to wait.
        items: Items a job gathers at most before it is sent.
        seconds: Longest wait, bounding how late an item is committed (and its event seen).
        quiet: Seconds without a new item after which the job is sent.
    """

    after: int = 32
    items: int = 512
    seconds: float = 0.15
    quiet: float = 0.03


class OwnerBatches(Generic[I, T]):
    """Applies items on the owner thread, all those waiting in one job.

    At most one job is in flight; items that arrive meanwhile wait for the next one, so a batch
    is as large as the load makes it and an item alone waits for nothing. After a large job,
    the next one gathers items for a while (:class:`Gathering`).
    """

    def __init__(
        self,
        call: Callable[[Callable[[Index], list[_Outcome]]], Awaitable[list[_Outcome]]],
        apply: Callable[[Index, I], T],
        apply_many: Callable[[Index, list[I]], list[T] | None] | None = None,
        gathering: Gathering | None = Gathering(),
    ) -> None:
        """Batch ``apply`` over ``call``.

        Args:
            call: Runs a job on the owner thread and returns its committed result.
            apply: Applies one item to the index (on the owner thread).
            apply_many: Applies many items at once, as ``apply`` on each in turn would, or
                returns ``None`` when it cannot; tried first on a job of many items. If it
                fails or cannot, what it did is undone and the items are applied one by one,
                so that only those that fail alone fail.
            gathering: How a job waits for more items while the store is flooded; ``None``:
                never (each job takes what waits, at once).
        """
        self._call = call
        self._apply = apply
        self._apply_many = apply_many
        self._gathering = gathering
        self._waiting: list[tuple[list[I], asyncio.Future[list[T]]]] = []
        self._count = 0  # the items waiting
        self._last = 0.0  # when the last of them came (the loop's clock)
        self._woken: asyncio.Future[None] | None = None  # a gathering job waits on it
        self._flooded = False  # the job before was large: the next one gathers
        self._ending = False  # no more items but those of callers at work: none gathers
        self._sending: asyncio.Task[None] | None = None

    async def __call__(self, item: I) -> T:
        """Apply ``item`` with whatever else is waiting; its result once committed.

        Raises:
            Exception: What applying it raised (it was undone), or why the job failed.
        """
        return (await self.many([item]))[0]

    async def many(self, items: list[I]) -> list[T]:
        """Apply ``items``, each in its own savepoint, with whatever else is waiting; their
        results once committed.

        Raises:
            Exception: What applying the first item that failed raised (each item that
                failed was undone alone; the others are applied), or why the job failed.
        """
        if not items:
            return []
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[T]] = loop.create_future()
        self._waiting.append((items, future))
        self._count += len(items)
        self._last = loop.time()
        if self._woken is not None and not self._woken.done():
            self._woken.set_result(None)
        if self._sending is None:
            self._sending = asyncio.ensure_future(self._send())
        return await future

    def last_items(self) -> None:
        """Say that no more items will come but those of callers already at work (a scan's
        last files are being hashed): from now on no job waits for more, so that the last
        ones are not held for the quiet time."""
        self._ending = True
        self._stop_gathering()

    async def drain(self) -> None:
        """Wait until every item handed over so far is applied (or failed); nothing waits
        for more items meanwhile."""
        self._stop_gathering()
        while self._sending is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._sending)

    def _stop_gathering(self) -> None:
        """Send the job gathering now, and let the next one wait only after a large job."""
        self._flooded = False
        if self._woken is not None and not self._woken.done():
            self._woken.set_result(None)

    async def _gather(self, gathering: Gathering) -> None:
        """Wait, while the store is flooded, for more items (see :class:`Gathering`)."""
        loop = asyncio.get_running_loop()
        until = loop.time() + gathering.seconds
        while self._flooded and self._count < gathering.items:
            wait = min(until, self._last + gathering.quiet) - loop.time()
            if wait <= 0:
                return
            woken = self._woken = loop.create_future()
            timer = loop.call_later(wait, _wake, woken)
            try:
                await woken
            finally:
                timer.cancel()
                self._woken = None

    async def _send(self) -> None:
        batch: list[tuple[list[I], asyncio.Future[list[T]]]] = []
        try:
            while self._waiting:
                if self._flooded and self._gathering is not None:
                    await self._gather(self._gathering)
                batch, self._waiting, self._count = self._waiting, [], 0
                items = [item for items, _ in batch for item in items]
                self._flooded = (
                    self._gathering is not None
                    and not self._ending
                    and len(items) >= self._gathering.after
                )
                try:
                    outcomes = await self._call(functools.partial(self._apply_all, items=items))
                except Exception as exc:  # the job as a whole failed: so did each item
                    outcomes = [(False, exc)] * len(items)
                start = 0
                for mine, future in batch:
                    done, start = outcomes[start : start + len(mine)], start + len(mine)
                    if future.done():  # its caller gave up
                        continue
                    failed = next((value for ok, value in done if not ok), None)
                    if failed is not None:
                        future.set_exception(failed)
                    else:
                        future.set_result([value for _, value in done])
                batch = []
        except BaseException:  # cancelled: nobody is left to answer the callers
            for _, future in batch + self._waiting:
                future.cancel()
            self._waiting, self._count = [], 0
            raise
        finally:
            self._sending = None

    def _apply_all(self, ix: Index, items: list[I]) -> list[_Outcome]:
        together: Exception | None = None
        if self._apply_many is not None and len(items) > 1:
            ix.savepoint()
            try:
                values = self._apply_many(ix, items)
            except Exception as exc:  # undone; applied one by one below, each failure its own
                _undo(ix, exc)
                together = exc
            else:
                if values is not None:
                    ix.release()
                    return [(True, value) for value in values]
                ix.rollback_to()
        outcomes = self._apply_each(ix, items)
        if together is not None and all(ok for ok, _ in outcomes):
            # No item fails alone, so the fault is in applying them together: slower, not wrong.
            _log.warning(
                "batch_applied_one_by_one",
                extra={"items": len(items), "error": repr(together)},
                exc_info=together,
            )
        return outcomes

    def _apply_each(self, ix: Index, items: list[I]) -> list[_Outcome]:
        outcomes: list[_Outcome] = []
        for item in items:
            ix.savepoint()
            try:
                value = self._apply(ix, item)
            except Exception as exc:  # this item's failure, undone alone
                _undo(ix, exc)
                outcomes.append((False, exc))
                continue
            ix.release()
            outcomes.append((True, value))
        return outcomes


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


def _undo(ix: Index, exc: Exception) -> None:
    """Undo the unit of work that raised ``exc``; if SQLite rolled back the whole transaction
    meanwhile (a full disk can), ``exc`` fails the job, and its caller learns the cause."""
    try:
        ix.rollback_to()
    except Exception:
        raise exc from None
