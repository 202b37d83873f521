"""Whether the store can be written, and what the daemon does while it cannot.

A write to the store can fail for a while: the disk is full
(:class:`~isccd.errors.StoreFullError`), an I/O error, a lock held too long. Such a failure
must lose nothing and must be seen. :class:`StoreHealth` is told of every write that failed (a
change from the work queue, a reconcile, a purge, an event). The first one makes the store
*degraded*: it is logged (``store_degraded``), announced to subscribers (a ``store.degraded``
notice, which is not part of the log: the log cannot be written) and shown by ``isccd status``
and the systemd status line. The loop (:meth:`StoreHealth.run`) then tries a write after a pause
that doubles up to :attr:`~isccd.daemon.supervisor.Backoff.maximum`; the first write that
commits is the ``store.recovered`` event itself. Then ``on_recovered`` has every root reconciled,
which finds again from the disk whatever failed to be written meanwhile.

A database that was deleted or replaced, or that is corrupt, is not waited for: ``on_fatal``
stops the daemon (exit 74). While the store is healthy, the loop commits an empty transaction
every :data:`CHECK_EVERY` seconds, so that a deleted state directory is noticed while nothing
else is written (the database checks its identity before each commit).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

import structlog

from isccd.daemon.supervisor import Backoff
from isccd.errors import StoreCorruptError, StoreError, StoreRemovedError
from isccd.model import EventType
from isccd.pipeline import Pipeline

#: Seconds between two checks that the database is still the file opened.
CHECK_EVERY = 2.0


class StoreHealth:
    """Tracks whether the store takes writes, and retries until it does again.

    Args:
        pipeline: The pipeline whose store this is.
        notify: Announces the store degraded (with the reason) to subscribers.
        on_recovered: Called once a write succeeded again.
        on_fatal: Called with an error the store does not recover from.
        on_change: Called whenever :meth:`problem` changes.
        backoff: Pauses between attempts while degraded.
        clock: Unix time.
        sleep: Waits between attempts.
        check_every: Seconds between identity checks while healthy.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        notify: Callable[[str], None],
        on_recovered: Callable[[], None],
        on_fatal: Callable[[StoreError], None],
        on_change: Callable[[], None] = lambda: None,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        check_every: float = CHECK_EVERY,
    ) -> None:
        self._pipeline = pipeline
        self._notify = notify
        self._on_recovered = on_recovered
        self._on_fatal = on_fatal
        self._on_change = on_change
        self._backoff = backoff or Backoff()
        self._clock = clock
        self._sleep = sleep
        self._check_every = check_every
        self._wake = asyncio.Event()
        self._fatal = False
        self.reason: str | None = None
        """Why the store cannot be written; None while it can."""
        self.since: float | None = None
        """Unix time the store was found degraded."""

    def failed(self, exc: BaseException) -> bool:
        """A write failed.

        Returns:
            True when the failure is the store's (it is taken care of: the work is found again
            once the store can be written, or the daemon stops); False for any other error,
            which the caller reports.
        """
        if isinstance(exc, StoreRemovedError | StoreCorruptError):
            if not self._fatal:
                self._fatal = True
                self._on_fatal(exc)
            return True
        if not isinstance(exc, StoreError):
            return False
        if self.reason is None:
            self.reason, self.since = str(exc), self._clock()
            structlog.get_logger().warning("store_degraded", error=self.reason)
            self._notify(self.reason)
            self._on_change()
            self._wake.set()
        else:
            self.reason = str(exc)  # the latest cause
        return True

    def problem(self) -> str | None:
        """The sentence for ``isccd status`` while the store cannot be written."""
        if self.reason is None or self.since is None:
            return None
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return (
            f"the store cannot be written since {since} ({self.reason}); retrying, and what "
            "failed meanwhile is reconciled from the disk once it can"
        )

    async def run(self) -> None:
        """Check the store while healthy, retry writes while degraded; until cancelled."""
        while not self._fatal:
            if self.reason is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._check_every)
                self._wake.clear()
                if self.reason is None:
                    try:
                        await self._pipeline.flush()
                    except StoreError as exc:
                        self.failed(exc)
                    continue
            await self._recover()
        await asyncio.Event().wait()  # stopping: the daemon cancels this loop

    async def _recover(self) -> None:
        log = structlog.get_logger()
        pause = self._backoff.delays()
        while self.reason is not None and not self._fatal:
            await self._sleep(pause())
            reason, since = self.reason, self.since or self._clock()
            data = {"reason": reason, "seconds": round(self._clock() - since, 3)}
            try:
                await asyncio.wrap_future(
                    self._pipeline.emit(EventType.STORE_RECOVERED, "", "", data)
                )
            except StoreError as exc:
                self.failed(exc)
                continue
            log.info("store_recovered", seconds=data["seconds"], error=reason)
            self.reason = self.since = None
            self._on_change()
            self._on_recovered()
