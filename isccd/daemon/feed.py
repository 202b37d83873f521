"""From the watcher to the work queue: settling, lost events, degraded roots.

The watcher hands every change to :meth:`Feed.on_change` on the event loop; the debouncer
coalesces and settles them; one task, :meth:`Feed.run`, sleeps until the next path settles (or
a change arrives) and moves what is due into the :class:`~isccd.daemon.workqueue.WorkQueue`, in
order. Renames and new directories skip the wait. Lost events (a kernel queue overflow, a
directory that could not be watched, a flood beyond the debouncer's bound) become a
``watch.recrawl`` event and a reconcile of the root; a root or subtree that must be polled
becomes a ``watch.degraded`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import structlog

from isccd.daemon.scans import Scans
from isccd.daemon.workqueue import WorkQueue
from isccd.model import EventType
from isccd.walk import compile_ignore, is_ignored
from isccd.watch.debounce import (
    Action,
    Change,
    ChangeKind,
    DebounceOptions,
    Debouncer,
    Dirty,
    Moved,
    Recrawl,
    RecrawlReason,
)
from isccd.watch.watcher import Degradation

#: Emits a daemon-level event: (type, root, path, data).
Emit = Callable[[EventType, str, str, dict[str, Any]], None]


class Feed:
    """Settles watcher changes and feeds them to the work queue and the reconciles.

    Args:
        options: Quiet period, maximum delay, pending bound.
        queue: Where settled paths and renames go.
        scans: Where recrawls go.
        emit: Logs ``watch.recrawl`` and ``watch.degraded`` events.
        clock: Monotonic seconds.
        ignore: gitignore-style patterns of paths never indexed (relative to each root).
        on_change: Called for each change that is not ignored, as it arrives (the daemon
            starts the hashing workers then, while the change settles).
    """

    def __init__(
        self,
        options: DebounceOptions,
        queue: WorkQueue,
        scans: Scans,
        emit: Emit,
        *,
        clock: Callable[[], float] = time.monotonic,
        ignore: Sequence[str] = (),
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self._options = options
        self._on_change = on_change
        self._ignore = compile_ignore(ignore)
        self._debouncer = Debouncer(options)
        self._queue = queue
        self._scans = scans
        self._emit = emit
        self._clock = clock
        self._ready: deque[Dirty | Moved] = deque()
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Future[int]] = set()
        self._idle = asyncio.Event()  # nothing released waits to enter the queue
        self._idle.set()

    def reconfigure(self, options: DebounceOptions) -> None:
        """New settling options: what is pending is released now, the rest settles anew."""
        if options == self._options:
            return
        self._take(self._debouncer.flush())
        self._options = options
        self._debouncer = Debouncer(options)
        self._wake.set()

    def pending(self) -> int:
        """Paths waiting to settle or to enter the queue."""
        return len(self._debouncer) + len(self._ready)

    def set_ignore(self, patterns: Sequence[str]) -> None:
        """New ignore patterns (gitignore-style, relative to each root).

        Raises:
            ValueError: A pattern is malformed.
        """
        self._ignore = compile_ignore(patterns)

    def ignores(self, root: str, path: str) -> bool:
        """Whether the file ``path`` under ``root`` is left out of the index by the patterns."""
        return self._ignore is not None and self._ignored(root, path, is_dir=False)

    def on_change(self, change: Change) -> None:
        """A change seen by the watcher (on the loop)."""
        kept = self._unignored(change)
        if kept is not None:
            self._take(self._debouncer.add(kept, self._clock()))
            self._wake.set()
            if self._on_change is not None:
                self._on_change()

    def _unignored(self, change: Change) -> Change | None:
        """The change as the index sees it, leaving out ignored paths (the same patterns a
        reconcile walk honours): a rename into an ignored name is a removal, one out of it an
        arrival."""
        if self._ignore is None:
            return change
        ignored = self._ignored(change.root, change.path, change.is_dir)
        if change.kind is not ChangeKind.MOVED:
            return None if ignored else change
        dest_ignored = self._ignored(change.root, change.dest, change.is_dir)
        if ignored and dest_ignored:
            return None
        if dest_ignored:
            return Change(ChangeKind.REMOVED, change.root, change.path, is_dir=change.is_dir)
        if ignored:
            kind = ChangeKind.DIR_ADDED if change.is_dir else ChangeKind.TOUCHED
            return Change(kind, change.root, change.dest, is_dir=change.is_dir)
        return change

    def _ignored(self, root: str, path: str, is_dir: bool) -> bool:
        return is_ignored(self._ignore, root, path, is_dir)

    def on_recrawl(self, recrawl: Recrawl) -> None:
        """The watcher lost events of a root: reconcile it, and say so."""
        self._recrawl(recrawl)

    def on_degraded(self, degradation: Degradation) -> None:
        """Part of a root is polled from now on: say so."""
        structlog.get_logger().warning(
            "watch_degraded",
            root=degradation.root,
            paths=list(degradation.paths[:20]),
            reason=degradation.reason,
            fix=degradation.fix,
        )
        self._emit(
            EventType.WATCH_DEGRADED,
            degradation.root,
            degradation.paths[0] if len(degradation.paths) == 1 else "",
            {
                "paths": list(degradation.paths[:100]),
                "count": len(degradation.paths),
                "reason": degradation.reason,
                "fix": degradation.fix,
            },
        )

    def flush(self, root: str | None = None) -> None:
        """Release what waits to settle (of ``root``, or all) now: ``sync`` wants it."""
        self._take(self._debouncer.flush(root))
        self._wake.set()

    async def drained(self) -> None:
        """Wait until everything released so far is in the work queue."""
        self._wake.set()
        await self._idle.wait()

    def discard_root(self, root: str) -> None:
        """Forget what is pending for a root that is no longer watched."""
        self._debouncer.discard_root(root)
        kept = [a for a in self._ready if a.root != root]
        self._ready.clear()
        self._ready.extend(kept)
        if not kept:
            self._idle.set()

    async def run(self) -> None:
        """Move settled changes into the work queue, in order, until cancelled."""
        while True:
            self._take(self._debouncer.pop_due(self._clock()))
            while self._ready:
                await self._queue.put(self._ready.popleft())
            self._idle.set()
            self._wake.clear()
            deadline = self._debouncer.next_deadline()
            if self._ready:
                continue
            timeout = None if deadline is None else max(0.0, deadline - self._clock())
            with contextlib.suppress(TimeoutError):  # the next path has settled
                await asyncio.wait_for(self._wake.wait(), timeout)

    def _take(self, actions: list[Action] | list[Dirty]) -> None:
        for action in actions:
            if isinstance(action, Recrawl):
                self._recrawl(action)
            else:
                self._ready.append(action)
                self._idle.clear()
        if len(self._ready) > self._options.max_pending:
            # Renames and new directories come without settling; a flood of them is bounded
            # the same way: dropped for a reconcile of their roots.
            roots = {a.root for a in self._ready}
            self._ready.clear()
            self._idle.set()
            for root in roots:
                self._recrawl(Recrawl(root, RecrawlReason.PENDING))

    def _recrawl(self, recrawl: Recrawl) -> None:
        root = recrawl.root
        structlog.get_logger().warning("watch_recrawl", root=root, reason=recrawl.reason.value)
        self._emit(EventType.WATCH_RECRAWL, root, "", {"reason": recrawl.reason.value})
        # The reconcile covers whatever was pending for the root: drop it rather than look at
        # each of those paths twice.
        self.discard_root(root)
        task = asyncio.ensure_future(self._queue.discard_root(root))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self._scans.request(root, f"recrawl ({recrawl.reason.value})")
