"""The work queue with a fake pipeline: one entry per path, overlapping paths in order and never
at once, unrelated paths side by side, a bound, and barriers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection

import pytest

from isccd.daemon.workqueue import WorkQueue
from isccd.model import Event, EventType
from isccd.watch.debounce import Dirty, Moved

R = "/r"


class FakePipeline:
    """Records what it is asked and holds each call until the test releases it."""

    def __init__(self, moved: Collection[str] = ()) -> None:
        self.calls: list[tuple[str, str]] = []
        self.active: set[str] = set()
        self.overlaps: list[tuple[str, str]] = []
        self.gates: dict[str, asyncio.Event] = {}
        self.moved = moved

    def gate(self, path: str) -> asyncio.Event:
        return self.gates.setdefault(path, asyncio.Event())

    async def _run(self, what: str, path: str) -> None:
        self.calls.append((what, path))
        for other in self.active:
            if other == path or other.startswith(path + "/") or path.startswith(other + "/"):
                self.overlaps.append((other, path))
        self.active.add(path)
        await self.gate(path).wait()
        self.active.discard(path)

    async def process_path(self, root: str, path: str) -> list[Event]:
        await self._run("process", path)
        return []

    async def move_path(self, src: str, root: str, dst: str) -> list[Event]:
        await self._run("move", src)
        if src in self.moved:
            return [Event(1, EventType.FILE_MOVED, 0.0, root, dst, {"from": src})]
        return []


def _run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 10))


async def _settle() -> None:
    for _ in range(20):  # let the consumers take what they can
        await asyncio.sleep(0)


def test_one_entry_per_path_and_unrelated_paths_side_by_side() -> None:
    async def scenario() -> None:
        fake = FakePipeline()
        queue = WorkQueue(fake, concurrency=4)
        runner = asyncio.create_task(queue.run())
        for path in ("/r/a", "/r/b", "/r/a", "/r/a"):
            await queue.put(Dirty(R, path))
        await _settle()
        assert sorted(fake.active) == ["/r/a", "/r/b"]
        assert queue.depth() == 2
        fake.gate("/r/a").set()
        fake.gate("/r/b").set()
        await queue.wait_barrier(queue.barrier())
        assert sorted(fake.calls) == [("process", "/r/a"), ("process", "/r/b")]
        await queue.close()
        await runner

    _run(scenario)


def test_overlapping_paths_run_in_order_and_never_at_once() -> None:
    async def scenario() -> None:
        fake = FakePipeline()
        queue = WorkQueue(fake, concurrency=4)
        runner = asyncio.create_task(queue.run())
        await queue.put(Dirty(R, "/r/d/x"))
        await queue.put(Moved(R, "/r/d", "/r/e", is_dir=True))
        await queue.put(Dirty(R, "/r/e/x"))
        await queue.put(Dirty(R, "/r/other"))
        await _settle()
        # The rename waits for the file inside it; the unrelated path does not.
        assert sorted(fake.active) == ["/r/d/x", "/r/other"]
        for path in ("/r/d/x", "/r/other", "/r/d", "/r/e", "/r/e/x"):
            fake.gate(path).set()
        await queue.wait_barrier(queue.barrier())
        assert fake.overlaps == []
        order = [c for c in fake.calls if c[1] != "/r/other"]
        # A directory rename is followed by a look at its destination.
        assert order == [
            ("process", "/r/d/x"),
            ("move", "/r/d"),
            ("process", "/r/e"),
            ("process", "/r/e/x"),
        ]
        await queue.close()
        await runner

    _run(scenario)


@pytest.mark.parametrize(("known", "looks_at_destination"), [(True, False), (False, True)])
def test_a_file_rename_looks_at_the_destination_only_when_nothing_moved(
    known: bool, looks_at_destination: bool
) -> None:
    async def scenario() -> None:
        fake = FakePipeline(moved={"/r/a.part"} if known else set())
        for path in ("/r/a.part", "/r/a"):
            fake.gate(path).set()
        queue = WorkQueue(fake, concurrency=1)
        runner = asyncio.create_task(queue.run())
        await queue.put(Moved(R, "/r/a.part", "/r/a"))
        await queue.wait_barrier(queue.barrier())
        assert (("process", "/r/a") in fake.calls) is looks_at_destination
        await queue.close()
        await runner

    _run(scenario)


def test_a_change_after_a_rename_is_not_folded_into_one_before_it() -> None:
    async def scenario() -> None:
        fake = FakePipeline()
        queue = WorkQueue(fake, concurrency=1)
        await queue.put(Dirty(R, "/r/a"))
        await queue.put(Moved(R, "/r/a", "/r/b"))
        await queue.put(Dirty(R, "/r/a"))  # a new file at the old name
        assert queue.depth() == 3
        for path in ("/r/a", "/r/b"):
            fake.gate(path).set()
        runner = asyncio.create_task(queue.run())
        await queue.wait_barrier(queue.barrier())
        assert fake.calls == [
            ("process", "/r/a"),
            ("move", "/r/a"),
            ("process", "/r/b"),
            ("process", "/r/a"),
        ]
        await queue.close()
        await runner

    _run(scenario)


def test_a_full_queue_makes_the_producer_wait() -> None:
    async def scenario() -> None:
        fake = FakePipeline()
        queue = WorkQueue(fake, capacity=2, concurrency=1)
        await queue.put(Dirty(R, "/r/1"))
        await queue.put(Dirty(R, "/r/2"))
        third = asyncio.create_task(queue.put(Dirty(R, "/r/3")))
        await _settle()
        assert not third.done()
        runner = asyncio.create_task(queue.run())
        await _settle()  # the consumer takes /r/1: room for /r/3
        assert third.done()
        for i in (1, 2, 3):
            fake.gate(f"/r/{i}").set()
        await queue.wait_barrier(queue.barrier())
        await queue.close()
        await runner

    _run(scenario)


def test_a_barrier_waits_for_what_came_before_it_only() -> None:
    async def scenario() -> None:
        fake = FakePipeline()
        queue = WorkQueue(fake, concurrency=2)
        runner = asyncio.create_task(queue.run())
        await queue.put(Dirty(R, "/r/before"))
        ticket = queue.barrier()
        await queue.put(Dirty(R, "/r/after"))
        waiter = asyncio.create_task(queue.wait_barrier(ticket))
        await _settle()
        assert not waiter.done()
        fake.gate("/r/before").set()
        await asyncio.wait_for(waiter, 5)  # /r/after still runs
        assert fake.active == {"/r/after"}
        fake.gate("/r/after").set()
        await queue.close()
        await runner

    _run(scenario)


def test_discarding_a_root_drops_its_waiting_entries_and_frees_barriers() -> None:
    async def scenario() -> None:
        fake = FakePipeline()
        queue = WorkQueue(fake, concurrency=1)
        await queue.put(Dirty(R, "/r/a"))
        await queue.put(Dirty("/s", "/s/b"))
        ticket = queue.barrier()
        assert await queue.discard_root(R) == 1
        fake.gate("/s/b").set()
        runner = asyncio.create_task(queue.run())
        await queue.wait_barrier(ticket)
        assert fake.calls == [("process", "/s/b")]
        await queue.close()
        await runner

    _run(scenario)
