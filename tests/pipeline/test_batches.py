"""Records applied in batches on the owner thread: one job for all that wait, each item undone
alone when it fails."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from isccd.model import EventType
from isccd.pipeline import changes
from isccd.pipeline.batches import Gathering, OwnerBatches
from isccd.pipeline.index import Index
from isccd.pipeline.options import PipelineOptions
from isccd.store import open_store, state_url
from isccd.store.owner import StoreOwner


def _log(ix: Index, name: str) -> str:
    """Log an event for ``name``; ``bad`` fails after logging it (which must be undone)."""
    changes.emit(ix, EventType.FILE_ADDED, "/r", f"/r/{name}", {})
    if name == "bad":
        raise ValueError("bad item")
    return name.upper()


def _run(tmp_path: Path, body: Callable[[OwnerBatches[str, str], list[int]], Any]) -> Any:
    owner: StoreOwner[Index] = StoreOwner(
        lambda: Index(open_store(state_url(tmp_path / "state")), PipelineOptions())
    )
    owner.start()
    jobs: list[int] = []

    async def call(fn: Callable[[Index], Any]) -> Any:
        jobs.append(1)
        return await asyncio.wrap_future(owner.submit(fn))

    try:
        return asyncio.run(body(OwnerBatches(call, _log), jobs))
    finally:
        owner.close()


def _logged(tmp_path: Path) -> list[str]:
    store = open_store(state_url(tmp_path / "state"), readonly=True)
    try:
        return [e.path for e in store.events_since(0, 100)]
    finally:
        store.close()


def test_items_waiting_together_go_in_one_job_and_a_failing_one_is_undone_alone(
    tmp_path: Path,
) -> None:
    async def body(apply: OwnerBatches[str, str], jobs: list[int]) -> list[Any]:
        first = asyncio.ensure_future(apply("a"))
        await asyncio.sleep(0)  # "a" is sent alone; the others wait for its job
        rest = [apply(name) for name in ("b", "bad", "c")]
        return [await first, *await asyncio.gather(*rest, return_exceptions=True), len(jobs)]

    a, b, bad, c, jobs = _run(tmp_path, body)
    assert (a, b, c) == ("A", "B", "C")
    assert isinstance(bad, ValueError)
    assert jobs == 2
    assert _logged(tmp_path) == ["/r/a", "/r/b", "/r/c"]


def test_a_failed_job_fails_each_of_its_items(tmp_path: Path) -> None:
    async def body(apply: OwnerBatches[str, str], jobs: list[int]) -> None:
        async def broken(fn: Callable[[Index], Any]) -> Any:
            raise OSError("disk full")

        failing = OwnerBatches(broken, _log)
        results = await asyncio.gather(failing("x"), failing("y"), return_exceptions=True)
        assert [type(r) for r in results] == [OSError, OSError]
        await failing.drain()

    _run(tmp_path, body)
    assert _logged(tmp_path) == []


def test_items_applied_together_fall_back_to_one_by_one_when_that_fails(tmp_path: Path) -> None:
    """The items of a job are first tried together; if that fails, what it did is undone and
    each is applied alone, so only the item that fails alone fails, and nothing is logged
    twice."""
    tried: list[list[str]] = []

    def together(ix: Index, names: list[str]) -> list[str] | None:
        tried.append(names)
        for name in names:
            changes.emit(ix, EventType.FILE_ADDED, "/r", f"/r/{name}-together", {})
        if "bad" in names:
            raise ValueError("one of them is bad")
        return None if "alone" in names else [name.upper() for name in names]

    async def body(apply: OwnerBatches[str, str], jobs: list[int]) -> list[Any]:
        batches = OwnerBatches(apply._call, _log, together)
        first = await batches.many(["a", "b"])
        second = await asyncio.gather(batches.many(["c", "bad"]), return_exceptions=True)
        third = await batches.many(["d", "alone"])
        return [first, *second, third]

    first, second, third = _run(tmp_path, body)
    assert first == ["A", "B"]
    assert isinstance(second, ValueError)
    assert third == ["D", "ALONE"]
    assert tried == [["a", "b"], ["c", "bad"], ["d", "alone"]]
    assert _logged(tmp_path) == ["/r/a-together", "/r/b-together", "/r/c", "/r/d", "/r/alone"]


def test_a_fault_only_in_applying_together_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Items that each apply alone, where applying them together failed, point at a fault in
    the batch path: it is logged (the items are applied all the same); an item that fails
    alone explains the failure, and nothing is logged."""

    def together(ix: Index, names: list[str]) -> list[str] | None:
        raise ValueError("applying together fails")

    async def body(apply: OwnerBatches[str, str], jobs: list[int]) -> list[Any]:
        batches = OwnerBatches(apply._call, _log, together)
        fine = await batches.many(["a", "b"])
        failed = await asyncio.gather(batches.many(["c", "bad"]), return_exceptions=True)
        return [fine, *failed]

    with caplog.at_level(logging.WARNING, logger="isccd.pipeline"):
        fine, failed = _run(tmp_path, body)
    assert fine == ["A", "B"]
    assert isinstance(failed, ValueError)
    logged = [r for r in caplog.records if r.getMessage() == "batch_applied_one_by_one"]
    assert len(logged) == 1
    assert logged[0].items == 2  # type: ignore[attr-defined]


def test_after_a_large_job_the_next_one_gathers_items_until_it_has_enough(tmp_path: Path) -> None:
    """While a scan floods the store, items that come one after another go in one job (one
    commit), not one job each."""
    gathering = Gathering(after=2, items=3, seconds=60, quiet=60)

    async def body(apply: OwnerBatches[str, str], jobs: list[int]) -> list[Any]:
        batches = OwnerBatches(apply._call, _log, gathering=gathering)
        first = await batches.many(["a", "b"])  # a large job: the next one gathers
        rest = []
        for name in ("c", "d", "e"):
            rest.append(asyncio.ensure_future(batches.many([name])))
            await asyncio.sleep(0)  # each comes on its own, while the job gathers
        done = await asyncio.wait_for(asyncio.gather(*rest), 5)
        return [first, done, len(jobs)]

    first, done, jobs = _run(tmp_path, body)
    assert first == ["A", "B"]
    assert done == [["C"], ["D"], ["E"]]
    assert jobs == 2
    assert _logged(tmp_path) == ["/r/a", "/r/b", "/r/c", "/r/d", "/r/e"]


def test_a_gathering_job_goes_once_no_item_comes_for_a_while(tmp_path: Path) -> None:
    """The last items of a scan wait only the quiet time, not the longest wait."""
    gathering = Gathering(after=2, items=100, seconds=60, quiet=0.05)

    async def body(apply: OwnerBatches[str, str], jobs: list[int]) -> list[Any]:
        batches = OwnerBatches(apply._call, _log, gathering=gathering)
        await batches.many(["a", "b"])
        return [await asyncio.wait_for(batches.many(["c"]), 5), len(jobs)]

    assert _run(tmp_path, body) == [["C"], 2]


def test_a_small_job_never_waits_and_drain_sends_what_gathers(tmp_path: Path) -> None:
    """Items that come one at a time (files hashed alone) go at once; once the caller drains,
    nothing waits for more items."""
    gathering = Gathering(after=2, items=100, seconds=60, quiet=60)

    async def body(apply: OwnerBatches[str, str], jobs: list[int]) -> list[Any]:
        batches = OwnerBatches(apply._call, _log, gathering=gathering)
        alone = [await asyncio.wait_for(batches(name), 5) for name in ("a", "b")]
        await batches.many(["c", "d"])  # a large job: the next one would gather
        last = asyncio.ensure_future(batches.many(["e"]))
        await asyncio.sleep(0)
        await asyncio.wait_for(batches.drain(), 5)
        return [alone, last.result(), len(jobs)]

    assert _run(tmp_path, body) == [["A", "B"], ["E"], 4]


def test_once_the_last_items_are_announced_no_job_waits_for_more(tmp_path: Path) -> None:
    """A scan's last files, hashed once every batch is taken, go as they come: not held for
    the quiet time (nor for the longest wait)."""
    gathering = Gathering(after=2, items=100, seconds=60, quiet=60)

    async def body(apply: OwnerBatches[str, str], jobs: list[int]) -> list[Any]:
        batches = OwnerBatches(apply._call, _log, gathering=gathering)
        await batches.many(["a", "b"])  # a large job: the next one gathers
        waiting = asyncio.ensure_future(batches.many(["c"]))
        await asyncio.sleep(0.01)
        batches.last_items()  # the one gathering goes now
        first = await asyncio.wait_for(waiting, 5)
        await batches.many(["d", "e"])  # large again, yet what follows does not wait
        last = await asyncio.wait_for(batches.many(["f"]), 5)
        return [first, last, len(jobs)]

    assert _run(tmp_path, body) == [["C"], ["F"], 4]
