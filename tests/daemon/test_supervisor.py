"""The supervisor: a failed loop is restarted after a growing pause, or stops the daemon; a loop
that ran long enough before failing starts counting again; problems say what waits."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from isccd.daemon.supervisor import Backoff, LoopFailedError, Policy, Supervisor


class FakeTime:
    """A clock that moves only when the supervisor sleeps (or the test says so)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


class Failing:
    """A loop that fails ``times`` times, each after running ``runs`` fake seconds, then
    waits forever (as a healthy loop does)."""

    def __init__(self, time: FakeTime, times: int, runs: float = 0.0) -> None:
        self.time = time
        self.left = times
        self.runs = runs
        self.starts = 0

    async def __call__(self) -> None:
        self.starts += 1
        if self.left > 0:
            self.left -= 1
            self.time.now += self.runs
            raise RuntimeError(f"failure {self.starts}")
        await asyncio.Event().wait()


def _supervisor(time: FakeTime, fatal: list[LoopFailedError], **backoff: float) -> Supervisor:
    return Supervisor(
        fatal.append,
        backoff=Backoff(**backoff),  # type: ignore[arg-type]
        clock=time.clock,
        sleep=time.sleep,
    )


async def _settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


def test_a_restartable_loop_is_restarted_with_doubling_pauses() -> None:
    async def main() -> None:
        time, fatal = FakeTime(), list[LoopFailedError]()
        supervisor = _supervisor(time, fatal, initial=1, maximum=3, attempts=10)
        loop = Failing(time, times=4)
        restarts: list[int] = []
        with capture_logs() as logs:
            supervisor.start(
                "work", loop, Policy.RESTART, on_restart=lambda: restarts.append(loop.starts)
            )
            await _settle()
        assert loop.starts == 5
        assert time.pauses == [1, 2, 3, 3]
        assert restarts == [1, 2, 3, 4]
        assert fatal == []
        assert supervisor.problems() == []  # running again
        failed = [e for e in logs if e["event"] == "loop_failed"]
        assert [(e["loop"], e["action"], e["exc_info"]) for e in failed] == [
            ("work", "restart", True)
        ] * 4
        await supervisor.close()

    asyncio.run(main())


def test_a_loop_that_keeps_failing_is_given_up_and_a_stop_loop_at_once() -> None:
    async def main() -> None:
        time, fatal = FakeTime(), list[LoopFailedError]()
        supervisor = _supervisor(time, fatal, initial=1, maximum=1, attempts=3)
        with capture_logs():
            supervisor.start("flaky", Failing(time, times=100), Policy.RESTART)
            await _settle()
        assert [e.loop for e in fatal] == ["flaky"]
        assert "failure 3" in str(fatal[0])
        assert supervisor.dead is fatal[0]
        assert supervisor.problems() == [f"{fatal[0]}; stopping"]

        time, fatal = FakeTime(), list[LoopFailedError]()
        supervisor = _supervisor(time, fatal)
        with capture_logs():
            supervisor.start("queue", Failing(time, times=1), Policy.STOP)
            await _settle()
        assert [e.loop for e in fatal] == ["queue"]
        assert time.pauses == []

    asyncio.run(main())


def test_a_loop_that_ran_long_enough_starts_counting_again() -> None:
    async def main() -> None:
        time, fatal = FakeTime(), list[LoopFailedError]()
        supervisor = _supervisor(time, fatal, initial=1, maximum=8, attempts=2, stable=60)
        with capture_logs():
            supervisor.start("steady", Failing(time, times=5, runs=120), Policy.RESTART)
            await _settle()
        assert fatal == []  # each failure came after a long run: the first in a row
        assert time.pauses == [1, 1, 1, 1, 1]
        await supervisor.close()

    asyncio.run(main())


def test_problems_say_which_loop_waits_and_why() -> None:
    async def main() -> None:
        fatal: list[LoopFailedError] = []
        gate = asyncio.Event()

        async def sleep(seconds: float) -> None:
            await gate.wait()

        supervisor = Supervisor(fatal.append, sleep=sleep, clock=lambda: 0.0)

        async def broken() -> None:
            raise ValueError("no such thing")

        with capture_logs():
            supervisor.start("schedule", broken, Policy.RESTART)
            await _settle()
            (problem,) = supervisor.problems()
            assert problem.startswith("the schedule loop failed (1 time in a row: ValueError: ")
            assert "no such thing" in problem
            assert problem.endswith("restarting in 1 s")
            await supervisor.close()

    asyncio.run(main())


def test_a_loop_that_returns_has_finished() -> None:
    async def main() -> None:
        fatal: list[LoopFailedError] = []
        supervisor = Supervisor(fatal.append)
        done: list[str] = []

        async def once() -> None:
            done.append("done")

        supervisor.start("adopt", once, Policy.RESTART)
        await _settle()
        task = supervisor.task("adopt")
        assert task is not None
        assert task.done()
        assert done == ["done"]
        assert fatal == []

    asyncio.run(main())


def test_cancelling_is_not_a_failure() -> None:
    async def main() -> None:
        fatal: list[LoopFailedError] = []
        supervisor = Supervisor(fatal.append)
        supervisor.start("idle", asyncio.Event().wait, Policy.STOP)
        await _settle()
        await supervisor.close()
        task = supervisor.task("idle")
        assert task is not None
        assert task.cancelled()
        assert fatal == []

    asyncio.run(main())


@pytest.mark.parametrize("policy", list(Policy))
def test_the_first_fatal_failure_is_the_one_reported(policy: Policy) -> None:
    async def main() -> None:
        time, fatal = FakeTime(), list[LoopFailedError]()
        supervisor = _supervisor(time, fatal, attempts=1)
        with capture_logs():
            supervisor.start("a", Failing(time, times=1), policy)
            supervisor.start("b", Failing(time, times=1), policy)
            await _settle()
        assert [e.loop for e in fatal] == ["a"]

    asyncio.run(main())
