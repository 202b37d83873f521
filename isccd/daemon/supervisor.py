"""Supervision of the daemon's background loops: no loop dies unnoticed.

Every long-running task of the daemon (the feed, the work queue, the schedule, reloads, the
status line, the heartbeat, the store's health, the roots' presence) runs under a
:class:`Supervisor`. A loop that raises is logged with its traceback (``loop_failed``), and
then, by the policy it was started with:

- :attr:`Policy.RESTART`: started again after a pause that doubles from
  :attr:`Backoff.initial` up to :attr:`Backoff.maximum`, for loops that keep no state of their
  own between rounds. While it waits, :meth:`Supervisor.problems` says so (``isccd status``, the
  systemd status line). A loop that failed :attr:`Backoff.attempts` times in a row (a run that
  lasted :attr:`Backoff.stable` seconds resets the count) is given up, as below;
- :attr:`Policy.STOP`: the daemon stops with :class:`LoopFailedError` (exit status 70, which
  systemd restarts), for loops whose state cannot be trusted after a failure; the service
  resumes from its store, and the start's reconcile finds whatever was in flight.

A loop that returns has finished (one-shot tasks); cancellation is how every loop ends at
shutdown.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import structlog


class LoopFailedError(Exception):
    """A background loop of the daemon failed for good; the daemon stopped (exit status 70).

    Attributes:
        loop: The loop's name.
    """

    def __init__(self, loop: str, error: BaseException) -> None:
        super().__init__(f"the {loop} loop failed: {type(error).__name__}: {error}")
        self.loop = loop


class Policy(enum.Enum):
    """What a failure of a loop leads to."""

    RESTART = "restart"
    """Start the loop again after a pause (it keeps no state between rounds)."""
    STOP = "stop"
    """Stop the daemon (its state cannot be trusted after a failure)."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Pauses between attempts: of a failed loop, or of a store that cannot be written.

    Attributes:
        initial: Seconds before the first retry.
        maximum: The longest pause; each failure doubles the previous one up to it.
        attempts: Failures in a row after which a restarted loop is given up.
        stable: Seconds a loop must have run for its next failure to count as the first.
    """

    initial: float = 1.0
    maximum: float = 60.0
    attempts: int = 5
    stable: float = 60.0

    def delays(self) -> Callable[[], float]:
        """A source of pauses: ``initial``, then doubled each call, up to ``maximum``."""
        delay = self.initial / 2

        def pause() -> float:
            nonlocal delay
            delay = min(self.maximum, delay * 2)
            return delay

        return pause


@dataclass(frozen=True, slots=True)
class _Failing:
    failures: int
    error: str
    retry_at: float


class Supervisor:
    """Runs named loops and acts on their failures.

    Args:
        on_fatal: Called once, with the :class:`LoopFailedError`, when a loop fails for good.
        on_change: Called whenever :meth:`problems` changes (a loop failed or restarted).
        backoff: Pauses between restarts.
        clock: Monotonic seconds.
        sleep: Waits between restarts.
    """

    def __init__(
        self,
        on_fatal: Callable[[LoopFailedError], None],
        on_change: Callable[[], None] = lambda: None,
        *,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._on_fatal = on_fatal
        self._on_change = on_change
        self._backoff = backoff or Backoff()
        self._clock = clock
        self._sleep = sleep
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._failing: dict[str, _Failing] = {}
        self._dead: LoopFailedError | None = None
        self._unnamed = 0

    def start(
        self,
        name: str,
        loop: Callable[[], Coroutine[Any, Any, object]],
        policy: Policy,
        *,
        on_restart: Callable[[], None] = lambda: None,
    ) -> None:
        """Run ``loop()`` under supervision.

        Args:
            name: The loop's name (unique; a second loop of the same name gets a suffix).
            loop: Makes the coroutine to run; called again for each restart.
            policy: What a failure leads to.
            on_restart: Called before each restart (to make up for what the failure lost).
        """
        if name in self._tasks and not self._tasks[name].done():
            self._unnamed += 1
            name = f"{name}-{self._unnamed}"
        supervised = self._supervise(name, loop, policy, on_restart)
        self._tasks[name] = asyncio.create_task(supervised, name=name)

    def task(self, name: str) -> asyncio.Task[None] | None:
        """The task running the loop ``name``, if one was started."""
        return self._tasks.get(name)

    @property
    def dead(self) -> LoopFailedError | None:
        """The failure that stopped the daemon, if a loop failed for good."""
        return self._dead

    def problems(self) -> list[str]:
        """A sentence per loop that failed and waits to be restarted, or that failed for good."""
        now = self._clock()
        found = [
            f"the {name} loop failed ({f.failures} time{'s' if f.failures > 1 else ''} in a "
            f"row: {f.error}); restarting in {max(0.0, f.retry_at - now):.0f} s"
            for name, f in sorted(self._failing.items())
        ]
        if self._dead is not None:
            found.append(f"{self._dead}; stopping")
        return found

    async def close(self) -> None:
        """Cancel every loop and wait for them to end."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _supervise(
        self,
        name: str,
        loop: Callable[[], Coroutine[Any, Any, object]],
        policy: Policy,
        on_restart: Callable[[], None],
    ) -> None:
        log = structlog.get_logger()
        pause = self._backoff.delays()
        failures = 0
        while True:
            started = self._clock()
            try:
                await loop()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self._clock() - started >= self._backoff.stable:
                    failures, pause = 0, self._backoff.delays()
                failures += 1
                give_up = policy is Policy.STOP or failures >= self._backoff.attempts
                log.exception(
                    "loop_failed",
                    loop=name,
                    failures=failures,
                    action="stop" if give_up else "restart",
                )
                if give_up:
                    self._fail(LoopFailedError(name, exc))
                    return
                delay = pause()
                error = f"{type(exc).__name__}: {exc}"
                self._failing[name] = _Failing(failures, error, self._clock() + delay)
                self._on_change()
                try:
                    await self._sleep(delay)
                finally:
                    self._failing.pop(name, None)
                log.info("loop_restarted", loop=name, failures=failures)
                on_restart()
                self._on_change()
            else:
                return

    def _fail(self, error: LoopFailedError) -> None:
        if self._dead is not None:
            return  # the first failure is the one reported; the daemon is stopping anyway
        self._dead = error
        self._on_change()
        self._on_fatal(error)
