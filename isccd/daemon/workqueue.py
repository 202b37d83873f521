"""The work queue between the watcher and the pipeline: bounded, one entry per path, in order.

The debouncer releases settled paths (:class:`~isccd.watch.debounce.Dirty`) and renames
(:class:`~isccd.watch.debounce.Moved`); this queue hands them to the pipeline with a few
consumers. Its rules:

- *One entry per path.* A path already waiting is not queued twice; the pipeline looks at the
  disk when the entry's turn comes, so the newest state is what gets indexed.
- *Order where it matters.* Two entries whose paths overlap (the same path, or one inside the
  other) never run at the same time, and run in the order they were queued: a file being
  hashed is not renamed under the pipeline's feet, and a rename is applied before the next
  change at its destination. Unrelated paths run side by side.
- *Bounded.* Whoever queues into a full queue waits. The debouncer in front of it collapses a
  flood into a reconcile instead (:attr:`~isccd.watch.debounce.RecrawlReason.PENDING`).
- *Barriers.* :meth:`WorkQueue.barrier` takes a ticket; :meth:`WorkQueue.wait_barrier` returns
  once everything queued before it is done (``sync``).
- *Failures are handed on.* An entry whose application fails goes to ``on_failed``, which
  says whether it took care of it (a store that cannot be written: the daemon has the root
  reconciled once it can); otherwise it is logged with its traceback.
"""

from __future__ import annotations

import asyncio
import heapq
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import structlog

from isccd.model import Event, EventType
from isccd.watch.debounce import Dirty, Moved

#: Entries looked at when picking the next one that does not collide with work in flight.
LOOKAHEAD = 256


class Applier(Protocol):
    """What the queue needs of the pipeline (:class:`isccd.pipeline.Pipeline`)."""

    async def process_path(self, root: str, path: str) -> list[Event]:
        """Index a created, modified or deleted path (a directory is reconciled)."""
        ...

    async def move_path(self, src: str, root: str, dst: str) -> list[Event]:
        """Move what is stored at or below ``src`` to ``dst``, keeping its codes."""
        ...


@dataclass(slots=True)
class _Entry:
    action: Dirty | Moved
    ticket: int

    @property
    def paths(self) -> tuple[str, ...]:
        action = self.action
        return (action.path,) if isinstance(action, Dirty) else (action.src, action.dest)


def _ancestors(path: str) -> list[str]:
    """``/a/b/c`` -> ``["/a/b", "/a"]`` (the root ``/`` is left out: it is no one's entry)."""
    out = []
    while (cut := path.rfind("/")) > 0:
        path = path[:cut]
        out.append(path)
    return out


class _Busy:
    """Paths in use: a path collides with one in use, or with one inside or above it."""

    def __init__(self) -> None:
        self._paths: set[str] = set()
        self._above: set[str] = set()  # every ancestor of a path in use

    def add(self, paths: tuple[str, ...]) -> None:
        for path in paths:
            self._paths.add(path)
            self._above.update(_ancestors(path))

    def collides(self, paths: tuple[str, ...]) -> bool:
        return any(
            path in self._paths
            or path in self._above
            or any(a in self._paths for a in _ancestors(path))
            for path in paths
        )


class WorkQueue:
    """Applies watcher actions through the pipeline.

    Args:
        applier: The pipeline.
        capacity: Entries waiting at most.
        concurrency: Entries applied at once.
        on_failed: Told of an entry whose application raised; returns True when it took care
            of it.
    """

    def __init__(
        self,
        applier: Applier,
        capacity: int = 10_000,
        concurrency: int = 4,
        *,
        on_failed: Callable[[Dirty | Moved, Exception], bool] = lambda action, exc: False,
    ) -> None:
        self._applier = applier
        self._on_failed = on_failed
        self._capacity = capacity
        self._concurrency = concurrency
        self._queue: OrderedDict[int, _Entry] = OrderedDict()
        self._waiting_dirty: dict[str, _Entry] = {}
        self._in_flight: dict[int, _Entry] = {}
        self._changed = asyncio.Condition()
        self._ticket = 0
        self._unfinished: list[int] = []
        self._finished: set[int] = set()
        self._barriers: list[tuple[int, asyncio.Future[None]]] = []
        self._closing = False

    def depth(self) -> int:
        """Entries waiting or being applied."""
        return len(self._queue) + len(self._in_flight)

    async def put(self, action: Dirty | Moved) -> None:
        """Queue an action; waits while the queue is full."""
        async with self._changed:
            if isinstance(action, Dirty):
                waiting = self._waiting_dirty.get(action.path)
                if waiting is not None:
                    waiting.action = action  # the newest kind (file or directory) wins
                    return
            else:
                self._forget_dirty(action.src, action.is_dir)
                self._forget_dirty(action.dest, action.is_dir)
            await self._changed.wait_for(lambda: self._closing or len(self._queue) < self._capacity)
            if self._closing:
                return
            if isinstance(action, Dirty) and action.path in self._waiting_dirty:
                self._waiting_dirty[action.path].action = action
                return
            self._ticket += 1
            entry = _Entry(action, self._ticket)
            heapq.heappush(self._unfinished, entry.ticket)
            self._queue[entry.ticket] = entry
            if isinstance(action, Dirty):
                self._waiting_dirty[action.path] = entry
            self._changed.notify_all()

    def barrier(self) -> int:
        """A ticket for :meth:`wait_barrier`: everything queued so far."""
        return self._ticket

    async def wait_barrier(self, ticket: int) -> None:
        """Return once every entry queued up to ``ticket`` has been applied (or dropped)."""
        if self._lowest_unfinished() > ticket:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._barriers.append((ticket, future))
        await future

    async def run(self) -> None:
        """Apply entries until :meth:`close`."""
        async with asyncio.TaskGroup() as group:
            for _ in range(self._concurrency):
                group.create_task(self._consume())

    async def discard_root(self, root: str) -> int:
        """Drop the waiting entries of ``root``: a reconcile of the whole root covers them.

        Returns:
            How many were dropped.
        """
        async with self._changed:
            dropped = [e for e in self._queue.values() if e.action.root == root]
            for entry in dropped:
                del self._queue[entry.ticket]
                action = entry.action
                if isinstance(action, Dirty) and self._waiting_dirty.get(action.path) is entry:
                    del self._waiting_dirty[action.path]
                self._finish(entry.ticket)
            self._changed.notify_all()
            return len(dropped)

    async def close(self) -> None:
        """Stop; waiting entries are dropped (the next start's reconcile finds their changes)."""
        async with self._changed:
            self._closing = True
            for entry in self._queue.values():
                self._finish(entry.ticket)
            self._queue.clear()
            self._waiting_dirty.clear()
            self._changed.notify_all()

    # -- internals -----------------------------------------------------------------------------

    def _forget_dirty(self, path: str, is_dir: bool) -> None:
        """Entries for ``path`` (and below it) queued before a rename stay where they are, but
        later changes must not be folded into them."""
        self._waiting_dirty.pop(path, None)
        if is_dir:
            prefix = path + "/"
            for key in [k for k in self._waiting_dirty if k.startswith(prefix)]:
                del self._waiting_dirty[key]

    def _pick(self) -> _Entry | None:
        busy = _Busy()
        for entry in self._in_flight.values():
            busy.add(entry.paths)
        for count, entry in enumerate(self._queue.values()):
            if count >= LOOKAHEAD:
                return None
            if not busy.collides(entry.paths):
                return entry
            busy.add(entry.paths)  # later entries on these paths wait for this one
        return None

    async def _take(self) -> _Entry | None:
        async with self._changed:
            entry: _Entry | None = None

            def ready() -> bool:
                nonlocal entry
                entry = None if self._closing else self._pick()
                return self._closing or entry is not None

            await self._changed.wait_for(ready)
            if entry is None:
                return None
            del self._queue[entry.ticket]
            action = entry.action
            if isinstance(action, Dirty) and self._waiting_dirty.get(action.path) is entry:
                del self._waiting_dirty[action.path]
            self._in_flight[entry.ticket] = entry
            self._changed.notify_all()
            return entry

    async def _consume(self) -> None:
        while (entry := await self._take()) is not None:
            try:
                await self._apply(entry.action)
            except Exception as exc:
                if not self._on_failed(entry.action, exc):
                    # A bug: logged; the periodic reconcile repairs the index.
                    structlog.get_logger().exception("change_failed", paths=list(entry.paths))
            finally:
                async with self._changed:
                    del self._in_flight[entry.ticket]
                    self._finish(entry.ticket)
                    self._changed.notify_all()

    async def _apply(self, action: Dirty | Moved) -> None:
        if isinstance(action, Dirty):
            await self._applier.process_path(action.root, action.path)
            return
        events = await self._applier.move_path(action.src, action.root, action.dest)
        moved = any(e.type is EventType.FILE_MOVED for e in events)
        if action.is_dir or not moved:
            # Not indexed under the old name (a download renamed into place, a file that was
            # ignored), or a directory whose content may hold more: look at the destination.
            await self._applier.process_path(action.root, action.dest)

    def _lowest_unfinished(self) -> int:
        while self._unfinished and self._unfinished[0] in self._finished:
            self._finished.discard(heapq.heappop(self._unfinished))
        return self._unfinished[0] if self._unfinished else self._ticket + 1

    def _finish(self, ticket: int) -> None:
        self._finished.add(ticket)
        lowest = self._lowest_unfinished()
        waiting = []
        for wanted, future in self._barriers:
            if wanted < lowest:
                if not future.done():
                    future.set_result(None)
            else:
                waiting.append((wanted, future))
        self._barriers = waiting
