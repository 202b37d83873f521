"""Reconciles of roots, or of directories inside them: at start, periodically, after lost
events, on request (``rescan PATH``), for ``sync``.

At most one reconcile per root runs at a time. A request while one runs is queued to run after
it (the running walk may already have passed the change that prompted the request), and every
later request joins that queued one: the queued reconcile walks the whole root if any of its
requests asked for it, else each directory asked for (one inside another is walked once, as
part of the outer one). Each request returns a future of the final counters, which is how
``sync`` and ``rescan --wait`` know the disk has been reconciled.

Progress is reported three ways: :meth:`Scans.progress` for ``isccd status``, ``scan.progress``
events every few seconds (``scan.done`` is logged by the pipeline at the end), and a callback
the daemon turns into the systemd status line. How each reconcile ended (:class:`Outcome`: its
counters or its error, and whether the root is available) goes to a second callback.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from isccd.errors import StoreError
from isccd.fspath import is_below, is_under
from isccd.model import EventType
from isccd.pipeline import Pipeline, ScanStats
from isccd.results import ScanProgress
from isccd.walk import IssueReason, ScanOptions

#: Seconds between two ``scan.progress`` events of one reconcile.
PROGRESS_EVERY = 2.0


@dataclass(slots=True)
class _Request:
    reason: str
    #: Directories to walk, none inside another; ``None`` for the whole root.
    starts: list[str] | None
    futures: list[asyncio.Future[ScanStats | None]] = field(default_factory=list)

    def join(self, start: str | None, future: asyncio.Future[ScanStats | None]) -> None:
        """Cover ``start`` (``None``: the whole root) too, and resolve ``future`` with the rest."""
        self.futures.append(future)
        if self.starts is None:
            return
        if start is None:
            self.starts = None
        elif not any(is_under(start, s) for s in self.starts):
            self.starts = [s for s in self.starts if not is_under(s, start)] + [start]


@dataclass(slots=True)
class _Root:
    running: _Request | None = None
    started: float = 0.0
    stats: ScanStats | None = None
    queued: _Request | None = None
    task: asyncio.Task[None] | None = None
    last_report: float = 0.0
    unavailable: str | None = None


def _unavailable(root: str, stats: ScanStats) -> str | None:
    """The message of a reconcile that could not see the root itself."""
    for issue in stats.issues:
        if issue.path == root and issue.reason in _ROOT_UNAVAILABLE:
            return issue.message
    return None


_ROOT_UNAVAILABLE = frozenset({IssueReason.MISSING, IssueReason.UNAVAILABLE})


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a reconcile of a whole root ended.

    Attributes:
        root: The root.
        reason: Why it ran.
        stats: Its final counters; None when it failed.
        error: Why it failed (a store that cannot be written, ...); None when it did not.
        unavailable: Why the root is unavailable after it (see :meth:`Scans.unavailable`).
        was_unavailable: Why it was unavailable before it.
    """

    root: str
    reason: str
    stats: ScanStats | None
    error: Exception | None
    unavailable: str | None
    was_unavailable: str | None


class Scans:
    """Runs and coalesces the reconciles of roots and of directories inside them.

    Args:
        pipeline: The pipeline.
        scan_options: Symlink policy and ignore patterns (replaced on reload).
        on_change: Called whenever a reconcile starts, progresses or ends (the status line).
        clock: Monotonic seconds, to pace progress events.
        on_done: Called with the :class:`Outcome` of each reconcile.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        scan_options: ScanOptions,
        on_change: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        on_done: Callable[[Outcome], None] = lambda outcome: None,
    ) -> None:
        self._pipeline = pipeline
        self.scan_options = scan_options
        self._on_change = on_change
        self._on_done = on_done
        self._clock = clock
        self._roots: dict[str, _Root] = {}
        self._closing = False

    def request(
        self, root: str, reason: str, start: str | None = None
    ) -> asyncio.Future[ScanStats | None]:
        """Reconcile ``root``, or only the directory ``start`` inside it; the future gives the
        final counters (of the last directory walked; None if it was cancelled or failed)."""
        future: asyncio.Future[ScanStats | None] = asyncio.get_running_loop().create_future()
        if self._closing:
            future.set_result(None)
            return future
        if start is not None and not is_below(start, root):
            start = None  # the root itself (or, defensively, anything not inside it)
        state = self._roots.setdefault(root, _Root())
        if state.running is None:
            state.running = _Request(reason, None if start is None else [start], [future])
            state.task = asyncio.create_task(self._run(root, state), name=f"reconcile {root}")
        elif state.queued is None:
            state.queued = _Request(reason, None if start is None else [start], [future])
        else:
            state.queued.join(start, future)
        return future

    def progress(self, root: str) -> ScanProgress | None:
        """The reconcile of ``root`` under way, for ``status``."""
        state = self._roots.get(root)
        if state is None or state.running is None:
            return None
        stats = state.stats
        return ScanProgress(
            reason=state.running.reason,
            phase="hashing" if stats is not None and stats.walked else "walking",
            files_seen=stats.seen if stats else 0,
            files_queued=stats.queued if stats else 0,
            files_done=stats.hashed if stats else 0,
            errors=stats.errors if stats else 0,
            started=state.started,
        )

    def unavailable(self, root: str) -> str | None:
        """Why the last complete reconcile found ``root`` unavailable (missing, or an empty
        mount point on another device), if it did; the index kept its files."""
        state = self._roots.get(root)
        return None if state is None else state.unavailable

    def summary(self) -> str:
        """One line about the reconciles under way, for the systemd status."""
        parts = []
        for root, state in self._roots.items():
            if state.running is None:
                continue
            stats = state.stats
            seen = stats.seen if stats else 0
            queued = stats.queued if stats else 0
            hashed = stats.hashed if stats else 0
            parts.append(
                f"{state.running.reason} reconcile of {root}: {seen} files seen, "
                f"{hashed}/{queued} hashed"
            )
        return "; ".join(parts)

    def forget(self, root: str) -> None:
        """Cancel the reconciles of a root that is no longer watched."""
        state = self._roots.pop(root, None)
        if state is not None and state.task is not None:
            state.task.cancel()

    async def close(self) -> None:
        """Cancel every reconcile; waiting requests resolve to None."""
        self._closing = True
        tasks = [s.task for s in self._roots.values() if s.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for state in self._roots.values():
            for request in (state.running, state.queued):
                for future in request.futures if request else []:
                    if not future.done():
                        future.set_result(None)

    async def _run(self, root: str, state: _Root) -> None:
        log = structlog.get_logger()
        while state.running is not None:
            request = state.running
            state.started, state.stats, state.last_report = time.time(), None, self._clock()
            self._on_change()
            result: ScanStats | None = None
            error: Exception | None = None
            was_unavailable = state.unavailable
            try:
                starts: list[str | None] = [None] if request.starts is None else [*request.starts]
                for start in starts:
                    result = await self._reconcile(root, start, state, request.reason)
            except asyncio.CancelledError:
                self._resolve(request, None)
                raise
            except StoreError as exc:
                # The disk is full, ...: the daemon has it done again once the store can be
                # written (on_done).
                log.warning("reconcile_failed", root=root, reason=request.reason, error=str(exc))
                error = exc
            except Exception as exc:
                log.exception("reconcile_failed", root=root, reason=request.reason)
                result = None
                error = exc
            self._resolve(request, result)
            self._on_done(
                Outcome(root, request.reason, result, error, state.unavailable, was_unavailable)
            )
            state.running, state.queued = state.queued, None
            self._on_change()

    async def _reconcile(
        self, root: str, start: str | None, state: _Root, reason: str
    ) -> ScanStats:
        """Walk the root, or the directory ``start`` in it, and log how it went."""
        log = structlog.get_logger()
        where = {"root": root} | ({"start": start} if start is not None else {})
        log.info("reconcile_started", **where, reason=reason)
        result = await self._pipeline.reconcile(
            root,
            start=start,
            scan=self.scan_options,
            progress=lambda s: self._progress(root, state, s),
        )
        if start is None:  # only a walk of the whole root can tell the root is missing
            state.unavailable = _unavailable(root, result)
            if state.unavailable is not None:
                log.warning("root_unavailable", root=root, error=state.unavailable)
        log.info(
            "reconcile_done",
            **where,
            reason=reason,
            seen=result.seen,
            hashed=result.hashed,
            seconds=round(result.seconds, 3),
        )
        return result

    @staticmethod
    def _resolve(request: _Request, result: ScanStats | None) -> None:
        for future in request.futures:
            if not future.done():
                future.set_result(result)

    def _progress(self, root: str, state: _Root, stats: ScanStats) -> None:
        state.stats = stats
        now = self._clock()
        if now - state.last_report < PROGRESS_EVERY:
            return
        state.last_report = now
        reason = state.running.reason if state.running else ""
        data = {
            "reason": reason,
            "phase": "hashing" if stats.walked else "walking",
            "seen": stats.seen,
            "queued": stats.queued,
            "hashed": stats.hashed,
            "errors": stats.errors,
            "seconds": round(stats.seconds, 3),
        }
        self._pipeline.emit(EventType.SCAN_PROGRESS, root, "", data)
        self._on_change()
