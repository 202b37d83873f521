"""The systemd watchdog heartbeat: ``WATCHDOG=1`` only while the daemon demonstrably works.

A blind timer would keep pinging from a daemon whose pipeline is stuck. Each beat first asks a
probe: the event loop runs (the beat itself runs on it), the store's owner thread answers, and
work moves (:class:`Progress`: when files wait, one must have finished recently). If the probe
names a problem the beat is withheld and logged; after ``WatchdogSec=`` systemd restarts the
service, which resumes from its store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog

from isccd.sdnotify import Notifier

#: Returns None when healthy, else what is wrong.
Probe = Callable[[], Awaitable[str | None]]


class Progress:
    """Tells a pipeline that moves from one that is stuck.

    The pipeline calls :meth:`advanced` whenever it finishes a unit of work; :meth:`stalled`
    says whether work has been waiting for longer than ``limit`` seconds without any finishing.

    Args:
        limit: Seconds without progress, while work waits, that count as stuck. Set it above
            the longest a single file may take (the workers' own timeout).
        clock: Monotonic seconds (injectable for tests).
        settled: A running count of what the workers are through with; any change is
            progress too. A batch of small files is finished for the pipeline only once all
            its files are, and one that runs out of time is hashed again one file at a time:
            its slow file may hold it twice the time limit while the workers move on.
    """

    def __init__(
        self,
        limit: float,
        clock: Callable[[], float] = time.monotonic,
        settled: Callable[[], int] | None = None,
    ) -> None:
        self.limit = limit
        self._clock = clock
        self._last = clock()
        self._settled = settled
        self._count: int | None = None

    def advanced(self) -> None:
        """Something finished just now."""
        self._last = self._clock()

    def stalled(self, pending: int) -> float | None:
        """Seconds since the last progress if ``pending`` work has waited longer than the limit,
        else None. Idle (nothing pending) is never stalled."""
        now = self._clock()
        if self._settled is not None and (count := self._settled()) != self._count:
            self._count, self._last = count, now
        if pending == 0:
            self._last = now
            return None
        waited = now - self._last
        return waited if waited > self.limit else None


async def run_heartbeat(notifier: Notifier, interval: float, probe: Probe) -> None:
    """Send a heartbeat every ``interval`` seconds while ``probe`` finds nothing wrong.

    Runs until cancelled. The probe gets half the interval to answer; a probe that does not
    answer in time, or that raises, counts as a problem.
    """
    log = structlog.get_logger()
    withheld = False
    while True:
        try:
            problem = await asyncio.wait_for(probe(), timeout=interval / 2)
        except TimeoutError:
            problem = f"health check did not answer within {interval / 2:g} s"
        except Exception as exc:  # the check itself failed (the store is closed): no beat
            problem = f"health check failed: {type(exc).__name__}: {exc}"
        if problem is None:
            notifier.watchdog()
            if withheld:
                log.info("watchdog_resumed")
                withheld = False
        else:
            log.error("watchdog_withheld", problem=problem)
            withheld = True
        await asyncio.sleep(interval)
