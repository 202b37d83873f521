"""Many small changes to the index as one job of the store's owner thread.

A reconcile of small files applies hundreds of records a second. As one owner job each, every
record pays a future, a queue hand-over and a wake-up of the event loop both ways, and the group
commit sees only the few records the hashing has in flight, so a scan commits every three files.
:class:`OwnerBatches` collects the items that arrive while the owner is busy and sends them
together: one job, one commit, one wake-up, while each item keeps its own savepoint, so an item
that fails is undone alone and its error reaches its own caller only, as before. Where the items
can be applied together for less (the new files of a first scan: :meth:`Index.add_new`), that
is tried first, in a savepoint of its own, and the items go one by one if it fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from isccd.pipeline.index import Index

I = TypeVar("I")  # noqa: E741 - the item, as T is the result
T = TypeVar("T")

_log = logging.getLogger("isccd.pipeline")

#: What one item came to: ``(True, result)`` or ``(False, its error)``.
_Outcome = tuple[bool, Any]


class OwnerBatches(Generic[I, T]):
    """Applies items on the owner thread, all those waiting in one job.

    At most one job is in flight; items that arrive meanwhile wait for the next one, so a batch
    is as large as the load makes it and an item alone waits for nothing.
    """

    def __init__(
        self,
        call: Callable[[Callable[[Index], list[_Outcome]]], Awaitable[list[_Outcome]]],
        apply: Callable[[Index, I], T],
        apply_many: Callable[[Index, list[I]], list[T] | None] | None = None,
    ) -> None:
        """Batch ``apply`` over ``call``.

        Args:
            call: Runs a job on the owner thread and returns its committed result.
            apply: Applies one item to the index (on the owner thread).
            apply_many: Applies many items at once, as ``apply`` on each in turn would, or
                returns ``None`` when it cannot; tried first on a job of many items. If it
                fails or cannot, what it did is undone and the items are applied one by one,
                so that only those that fail alone fail.
        """
        self._call = call
        self._apply = apply
        self._apply_many = apply_many
        self._waiting: list[tuple[list[I], asyncio.Future[list[T]]]] = []
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
        future: asyncio.Future[list[T]] = asyncio.get_running_loop().create_future()
        self._waiting.append((items, future))
        if self._sending is None:
            self._sending = asyncio.ensure_future(self._send())
        return await future

    async def drain(self) -> None:
        """Wait until every item handed over so far is applied (or failed)."""
        while self._sending is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._sending)

    async def _send(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                items = [item for items, _ in batch for item in items]
                try:
                    outcomes = await self._call(functools.partial(self._apply_all, items=items))
                except Exception as exc:  # the job as a whole failed: so did each item
                    outcomes = [(False, exc)] * len(items)
                except BaseException:  # cancelled: nobody is left to answer the callers
                    for _, future in batch + self._waiting:
                        future.cancel()
                    self._waiting = []
                    raise
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


def _undo(ix: Index, exc: Exception) -> None:
    """Undo the unit of work that raised ``exc``; if SQLite rolled back the whole transaction
    meanwhile (a full disk can), ``exc`` fails the job, and its caller learns the cause."""
    try:
        ix.rollback_to()
    except Exception:
        raise exc from None
