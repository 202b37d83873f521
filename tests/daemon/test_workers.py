"""The hashing workers with real processes: results equal in-process hashing, a worker killed
mid-file costs only that file, a file over the time limit is given up, and closing abandons
what is still in flight."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from isccd.hashing import ALL_UNITS, OUT_OF_MEMORY, compute_record
from isccd.hashing.pool import PoolClosedError, WorkerOptions, WorkerPool
from isccd.model import FileRecord, IssueCode, IssueKind, UnitType
from tests import leaks
from tests.extract.media import huge_png

#: Every unit but the Image-Code.
_NO_IMAGE = ALL_UNITS - {UnitType.IMAGE}


def _without_timings(record: FileRecord) -> FileRecord:
    return dataclasses.replace(record, timings=())


def _sparse(path: Path, size: int) -> Path:
    """A file that takes a worker a while to hash (sparse: no disk used)."""
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


async def _until(condition: Callable[[], bool]) -> None:
    """Wait for a condition that the pool's own progress makes true."""
    while not condition():
        await asyncio.sleep(0.01)


def _run(main: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(main(), 90))


def test_records_equal_in_process_hashing(tmp_path: Path) -> None:
    files = []
    for i in range(6):
        path = tmp_path / f"f{i}.txt"
        path.write_text(f"file number {i} " * (i * 100 + 1))
        files.append(str(path))
    files.append(str(tmp_path / "missing.txt"))

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=2))
        await pool.start()
        try:
            records = await asyncio.gather(*(pool.compute(p, root=str(tmp_path)) for p in files))
            stats = pool.statistics()
        finally:
            assert await pool.close(grace=5) == 0
        for path, record in zip(files, records, strict=True):
            assert _without_timings(record) == _without_timings(compute_record(path))
        assert stats.done == len(files)
        assert stats.started == 2
        assert records[-1].issues[0].code is IssueCode.VANISHED

    _run(main)


def test_a_batch_is_hashed_in_one_round_trip_with_the_records_of_single_files(
    tmp_path: Path,
) -> None:
    files = []
    for i in range(5):
        path = tmp_path / f"f{i}.txt"
        path.write_text(f"file number {i} " * (i * 50 + 1))
        files.append(str(path))
    files.insert(2, str(tmp_path / "missing.txt"))
    root = str(tmp_path)

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1))
        await pool.start()
        try:
            records = await pool.compute_many([(root, p, None) for p in files])
            assert await pool.compute_many([]) == []
            stats = pool.statistics()
        finally:
            assert await pool.close(grace=5) == 0
        for path, record in zip(files, records, strict=True):
            assert _without_timings(record) == _without_timings(compute_record(path))
        assert records[2].issues[0].code is IssueCode.VANISHED
        assert (stats.done, stats.busy, stats.waiting) == (len(files), 0, 0)

    _run(main)


def test_a_batch_opens_each_root_once_with_the_records_and_refusals_of_single_files(
    tmp_path: Path,
) -> None:
    # A root's directory is opened once per message; what each file gets must not change,
    # and a root replaced between two messages is the new root for the second.
    first, second, outside = tmp_path / "first", tmp_path / "second", tmp_path / "outside"
    for folder in (first, second, outside):
        folder.mkdir()
    (first / "a.txt").write_text("alpha " * 40)
    (second / "b.txt").write_text("beta " * 40)
    (outside / "c.txt").write_text("gamma " * 40)
    (first / "race").symlink_to(outside)
    files = [
        (str(first), f"{first}/a.txt"),
        (str(second), f"{second}/b.txt"),
        (str(first), f"{first}/race/c.txt"),
        (str(tmp_path / "gone"), f"{tmp_path}/gone/d.txt"),
        (str(first), f"{first}/a.txt"),
    ]

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1))
        await pool.start()
        try:
            records = await pool.compute_many([(r, p, None) for r, p in files])
            alone = [compute_record(p, root=r) for r, p in files]
            first.rename(tmp_path / "first-old")
            first.mkdir()
            (first / "a.txt").write_text("ALPHA " * 40)
            again = await pool.compute_many([(str(first), f"{first}/a.txt", None)])
        finally:
            assert await pool.close(grace=5) == 0
        assert [_without_timings(r) for r in records] == [_without_timings(r) for r in alone]
        codes = [r.issues[0].code if r.issues else None for r in records]
        assert codes == [None, None, IssueCode.NOT_REGULAR, IssueCode.VANISHED, None]
        assert records[0].iscc == records[4].iscc is not None
        assert again[0].iscc is not None and again[0].iscc != records[0].iscc
        assert _without_timings(again[0]) == _without_timings(
            compute_record(f"{first}/a.txt", root=str(first))
        )

    _run(main)


def test_a_worker_killed_on_a_batch_costs_only_the_file_it_was_on(tmp_path: Path) -> None:
    big = str(_sparse(tmp_path / "big.bin", 8 << 30))
    smalls = []
    for i in range(3):
        path = tmp_path / f"small{i}.txt"
        path.write_text(f"small file {i}")
        smalls.append(str(path))
    root = str(tmp_path)

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1, depth=2))
        await pool.start()
        try:
            files = [smalls[0], big, smalls[1], smalls[2]]
            batch = asyncio.create_task(pool.compute_many([(root, p, None) for p in files]))
            await _until(lambda: bool(pool.in_flight()))
            ((_, pid, _),) = pool.in_flight()
            os.kill(pid, signal.SIGKILL)  # while it hashes the batch: which file is unknown
            # The batch is hashed again one file at a time: the big file is alone now.
            await _until(lambda: [p for p, _, _ in pool.in_flight()] == [big])
            ((_, pid, _),) = pool.in_flight()
            os.kill(pid, signal.SIGKILL)
            records = await batch
            [issue] = records[1].issues
            assert issue.code is IssueCode.INTERNAL
            assert "died (signal 9)" in issue.reason
            for path, record in zip(files, records, strict=True):
                if path != big:
                    assert record.iscc == compute_record(path).iscc
            assert pool.statistics().crashed == 2
        finally:
            await pool.close(grace=0)

    _run(main)


@pytest.mark.slow
def test_a_batch_over_the_time_limit_costs_only_the_slow_file(tmp_path: Path) -> None:
    big = str(_sparse(tmp_path / "big.bin", 8 << 30))
    small = tmp_path / "small.txt"
    small.write_text("small file")
    root = str(tmp_path)

    async def main() -> None:
        # The sparse 8 GiB take seconds to hash; the small file, on a worker started anew,
        # has as long, however busy the machine.
        pool = WorkerPool(WorkerOptions(workers=1, file_timeout=2.0))
        await pool.start()
        try:
            records = await pool.compute_many([(root, big, None), (root, str(small), None)])
            assert "longer than 2 s" in records[0].issues[0].reason
            assert records[1].iscc == compute_record(str(small)).iscc
            # The batch, then the slow file alone.
            assert pool.statistics().timeouts == 2
        finally:
            await pool.close(grace=0)

    _run(main)


def test_a_worker_opens_a_file_beneath_its_root_only(tmp_path: Path) -> None:
    # The path names a file inside the root by name, through a directory that is a symbolic
    # link to a folder outside it: the worker, which opens it, must refuse it.
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("not for the index " * 20)
    (root / "inside.txt").write_text("for the index " * 20)
    (root / "race").symlink_to(outside)

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1))
        await pool.start()
        try:
            refused = await pool.compute(f"{root}/race/secret.txt", root=str(root))
            elsewhere = await pool.compute(str(outside / "secret.txt"), root=str(root))
            inside = await pool.compute(str(root / "inside.txt"), root=str(root))
        finally:
            await pool.close(grace=5)
        assert not refused.units and refused.issues[0].code is IssueCode.NOT_REGULAR
        assert "symbolic link" in refused.issues[0].reason
        assert not elsewhere.units and elsewhere.issues[0].code is IssueCode.NOT_REGULAR
        assert inside.iscc is not None

    _run(main)


@pytest.mark.slow
def test_every_worker_started_takes_files(tmp_path: Path) -> None:
    # Workers start side by side: each must join the pool under its own number.
    bigs = [str(_sparse(tmp_path / f"big{i}.bin", 8 << 30)) for i in range(3)]

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=3, depth=1))
        await pool.start()
        jobs = [asyncio.create_task(pool.compute(path, root=str(tmp_path))) for path in bigs]
        try:
            await asyncio.wait_for(_until(lambda: len(pool.in_flight()) == 3), 20)
            assert {path for path, _, _ in pool.in_flight()} == set(bigs)
            assert len({pid for _, pid, _ in pool.in_flight()}) == 3
            assert pool.statistics().workers == 3
        finally:
            await pool.close(grace=0)
            for job in jobs:
                job.cancel()

    _run(main)


@pytest.mark.slow
@pytest.mark.parametrize(("max_in_flight", "taken"), [(1, 1), (0, 2)])
def test_max_in_flight_bounds_the_files_taken_at_once(
    tmp_path: Path, max_in_flight: int, taken: int
) -> None:
    # Unbounded (0), the same two files are both taken: the bound is what holds one back.
    bigs = [str(_sparse(tmp_path / f"big{i}.bin", 8 << 30)) for i in range(2)]

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=2, depth=1, max_in_flight=max_in_flight))
        await pool.start()
        jobs = [asyncio.create_task(pool.compute(path, root=str(tmp_path))) for path in bigs]
        try:
            # Both workers warmed up, and the first file taken (the second file's caller ran
            # just after the first's): a worker takes a waiting file as it says it is ready,
            # so any file the bound did not hold back is in flight by then.
            await asyncio.wait_for(
                _until(lambda: pool.statistics().ready == 2 and bool(pool.in_flight())), 60
            )
            assert len(pool.in_flight()) == taken
            assert pool.statistics().waiting == 0
            assert not any(job.done() for job in jobs)
        finally:
            await pool.close(grace=0)
            for job in jobs:
                job.cancel()

    _run(main)


def test_a_killed_worker_costs_only_its_file(tmp_path: Path) -> None:
    big = str(_sparse(tmp_path / "big.bin", 8 << 30))
    small = tmp_path / "small.txt"
    small.write_text("small file")

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1, depth=2))
        await pool.start()
        try:
            first = asyncio.create_task(pool.compute(big, root=str(tmp_path)))
            second = asyncio.create_task(pool.compute(str(small), root=str(tmp_path)))
            await _until(lambda: bool(pool.in_flight()))
            ((path, pid, _),) = pool.in_flight()
            assert path == big
            os.kill(pid, signal.SIGKILL)  # what the OOM killer would do
            record = await first
            assert record.issues[0].code is IssueCode.INTERNAL
            assert "died (signal 9)" in record.issues[0].reason
            # The file queued behind it is hashed by the replacement worker.
            assert (await second).iscc == compute_record(str(small)).iscc
            stats = pool.statistics()
            assert stats.crashed == 1
            assert stats.started == 2
        finally:
            await pool.close(grace=0)

    _run(main)


@pytest.mark.slow
def test_a_file_over_the_time_limit_is_given_up(tmp_path: Path) -> None:
    big = str(_sparse(tmp_path / "big.bin", 8 << 30))
    small = tmp_path / "small.txt"
    small.write_text("small file")

    async def main() -> None:
        # The sparse 8 GiB take seconds to hash; the small file, on a worker started anew,
        # has as long, however busy the machine.
        pool = WorkerPool(WorkerOptions(workers=1, file_timeout=2.0))
        await pool.start()
        try:
            record = await pool.compute(big, root=str(tmp_path))
            assert record.issues[0].code is IssueCode.INTERNAL
            assert "longer than 2 s" in record.issues[0].reason
            assert (await pool.compute(str(small), root=str(tmp_path))).iscc is not None
            assert pool.statistics().timeouts == 1
        finally:
            await pool.close(grace=0)

    _run(main)


@pytest.mark.slow
def test_closing_abandons_what_is_in_flight(tmp_path: Path) -> None:
    big = str(_sparse(tmp_path / "big.bin", 8 << 30))

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1, depth=1))
        await pool.start()
        in_flight = asyncio.create_task(pool.compute(big, root=str(tmp_path)))
        waiting = asyncio.create_task(pool.compute(big, root=str(tmp_path)))
        await _until(lambda: bool(pool.in_flight()))
        assert await pool.close(grace=0.1) == 1  # the second never got a slot
        with pytest.raises(PoolClosedError):
            await in_flight
        with pytest.raises(PoolClosedError):
            await waiting
        with pytest.raises(PoolClosedError):
            await pool.compute(big, root=str(tmp_path))
        assert pool.statistics().workers == 0

    _run(main)


def test_a_file_whose_caller_gave_up_is_not_hashed(tmp_path: Path) -> None:
    small = tmp_path / "small.txt"
    small.write_text("small file")

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1))
        starting = asyncio.create_task(pool.start())
        # Queued while the worker warms up, then given up (a reconcile cancelled at shutdown).
        job = asyncio.create_task(pool.compute(str(small), root=str(tmp_path)))
        await asyncio.sleep(0)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        await starting
        assert (await pool.compute(str(small), root=str(tmp_path))).iscc is not None
        assert pool.statistics().done == 1
        assert await pool.close(grace=0) == 0

    _run(main)


@pytest.mark.slow
@pytest.mark.parametrize("batched", [False, True], ids=["separate", "batched"])
def test_a_file_over_the_memory_limit_keeps_what_fits_and_its_worker_is_replaced(
    tmp_path: Path, batched: bool
) -> None:
    huge = str(huge_png(tmp_path / "huge.png"))  # 127 MP of 16-bit RGBA: about 1 GB decoded
    small = tmp_path / "small.txt"
    small.write_text("a small file queued behind the huge one " * 10)

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1, depth=2, memory=400 << 20))
        await pool.start()
        try:
            # Both are handed to the one worker at once, one message each or both in one: the
            # second is not lost with it.
            if batched:
                record, after = await pool.compute_many(
                    [(str(tmp_path), huge, None), (str(tmp_path), str(small), None)]
                )
            else:
                record, after = await asyncio.gather(
                    pool.compute(huge, root=str(tmp_path)),
                    pool.compute(str(small), root=str(tmp_path)),
                )
            [issue] = [i for i in record.issues if i.kind is IssueKind.ERROR]
            assert (issue.stage, issue.code, issue.reason) == (
                "image",
                IssueCode.TOO_LARGE,
                OUT_OF_MEMORY,
            )
            assert {u.type for u in record.units} == {
                UnitType.META, UnitType.DATA, UnitType.INSTANCE
            }  # fmt: skip
            assert record.iscc == compute_record(huge, units=_NO_IMAGE).iscc
            assert _without_timings(after) == _without_timings(compute_record(str(small)))
            statistics = pool.statistics()
            assert (statistics.over_memory, statistics.started, statistics.crashed) == (1, 2, 0)
            await _until(lambda: pool.statistics().workers == 1)
            assert (
                await pool.compute(str(small), root=str(tmp_path))
            ).iscc == after.iscc  # the new worker
        finally:
            await pool.close(grace=0)

    _run(main)


async def _until_state(pool: WorkerPool, state: str) -> None:
    """Wait, one event-loop turn at a time, until the pool is in ``state``."""
    while pool.statistics().state != state:
        await asyncio.sleep(0)


@pytest.mark.slow
def test_an_idle_pool_lets_go_of_its_workers_and_the_fork_server(tmp_path: Path) -> None:
    small = tmp_path / "small.txt"
    small.write_text("a small file to hash " * 10)

    async def main() -> None:
        # Idle for 1 s: long enough that the workers still run when the first file's record
        # is back, however busy the machine.
        pool = WorkerPool(WorkerOptions(workers=2, idle_timeout=1.0))
        await pool.start()
        try:
            first = await pool.compute(str(small), root=str(tmp_path))
            running = leaks.by_kind(os.getpid())
            assert len(running["fork server"]) == 1
            workers = running["workers"]
            assert len(workers) == 2
            await _until(lambda: pool.statistics().state == "idle")
            idle = leaks.by_kind(os.getpid())
            assert (idle["fork server"], idle["workers"], idle["other"]) == ([], [], [])
            assert all(not Path(f"/proc/{pid}").exists() for pid in workers)
            # The next file starts them again, and is hashed as before.
            again = await pool.compute(str(small), root=str(tmp_path))
            assert again.iscc == first.iscc is not None
            assert len(leaks.by_kind(os.getpid())["fork server"]) == 1
            stats = pool.statistics()
            assert (stats.state, stats.idle_stops, stats.started, stats.done) == (
                "running",
                1,
                4,
                2,
            )
        finally:
            await pool.close(grace=0)

    _run(main)


@pytest.mark.slow
def test_files_arriving_while_the_pool_lets_go_are_hashed_once_each(tmp_path: Path) -> None:
    files = []
    for i in range(3):
        path = tmp_path / f"f{i}.txt"
        path.write_text(f"file number {i} " * 50)
        files.append(str(path))

    async def main() -> None:
        # Idle long enough that the pool is still running when the test reads it after the
        # last file, however busy the machine.
        pool = WorkerPool(WorkerOptions(workers=1, idle_timeout=0.5))
        await pool.start()
        try:
            await _until_state(pool, "stopping")
            records = await asyncio.gather(*(pool.compute(p, root=str(tmp_path)) for p in files))
            stats = pool.statistics()
        finally:
            await pool.close(grace=0)
        assert [r.iscc for r in records] == [compute_record(p).iscc for p in files]
        assert (stats.done, stats.idle_stops, stats.started, stats.state) == (3, 1, 2, "running")

    _run(main)


def test_an_idle_pool_keeps_the_fork_server_another_pool_uses(tmp_path: Path) -> None:
    small = tmp_path / "small.txt"
    small.write_text("a small file to hash " * 10)

    async def main() -> None:
        idle = WorkerPool(WorkerOptions(workers=1, idle_timeout=0.05))
        busy = WorkerPool(WorkerOptions(workers=1, idle_timeout=0))
        await asyncio.gather(idle.start(), busy.start())
        try:
            await _until(lambda: idle.statistics().state == "idle")
            assert len(leaks.by_kind(os.getpid())["fork server"]) == 1
            assert (await busy.compute(str(small), root=str(tmp_path))).iscc is not None
            assert busy.statistics().state == "running"
        finally:
            await asyncio.gather(idle.close(grace=0), busy.close(grace=0))

    _run(main)


@pytest.mark.slow
def test_waking_an_idle_pool_starts_its_workers_before_a_file_arrives(tmp_path: Path) -> None:
    small = tmp_path / "small.txt"
    small.write_text("a small file to hash " * 10)

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1, idle_timeout=0.05))
        await pool.start()
        try:
            await _until(lambda: pool.statistics().state == "idle")
            pool.wake()
            assert pool.statistics().state == "running"
            await _until(lambda: len(leaks.by_kind(os.getpid())["workers"]) == 1)
            assert pool.statistics().started == 2
            # Nothing came: let go again.
            await _until(lambda: pool.statistics().idle_stops == 2)
            assert (await pool.compute(str(small), root=str(tmp_path))).iscc is not None
        finally:
            await pool.close(grace=0)

    _run(main)


def test_a_batch_requeued_while_the_pool_closes_is_abandoned(tmp_path: Path) -> None:
    big = str(_sparse(tmp_path / "big.bin", 8 << 30))
    small = tmp_path / "small.txt"
    small.write_text("small file")
    root = str(tmp_path)

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1, depth=2))
        await pool.start()
        files = [(root, str(small), None), (root, big, None)]
        batch = asyncio.create_task(pool.compute_many(files))
        await _until(lambda: bool(pool.in_flight()))
        ((_, pid, _),) = pool.in_flight()
        closing = asyncio.create_task(pool.close(grace=0.5))
        await asyncio.sleep(0)
        # It dies during the grace period: its batch goes back in line, one file a job, and
        # the closing pool has no worker left to hash them.
        os.kill(pid, signal.SIGKILL)
        assert await asyncio.wait_for(closing, 10) == 2
        with pytest.raises(PoolClosedError):
            await asyncio.wait_for(batch, 5)

    _run(main)


@pytest.mark.slow
def test_a_file_arriving_as_the_quiet_period_ends_is_not_lost(tmp_path: Path) -> None:
    small = tmp_path / "small.txt"
    small.write_text("a small file to hash " * 10)
    root = str(tmp_path)

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1, idle_timeout=60))
        await pool.start()
        try:
            # A caller woken in the same turn of the loop as the idle timer runs first: its
            # file must not go to a worker that is being let go.
            batch = asyncio.create_task(pool.compute_many([(root, str(small), None)]))
            pool._quiet()  # what the idle timer runs when the quiet period is over
            [record] = await asyncio.wait_for(batch, 10)
            assert record.iscc == compute_record(str(small)).iscc
            assert pool.statistics().idle_stops == 1
        finally:
            await pool.close(grace=0)

    _run(main)


#: A process whose fork server never answers: it sleeps in its start until its parent is gone.
_WEDGED_FORK_SERVER = """
import os, sys, time
if sys.argv[:1] == ["-c"]:  # the fork server (and the resource tracker)
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.05)
    os._exit(0)
"""

_CLOSE_WHILE_STARTING = """
import asyncio, sys, time
from isccd.hashing.pool import WorkerOptions, WorkerPool

async def main():
    pool = WorkerPool(WorkerOptions(workers=1))
    start = asyncio.create_task(pool.start())
    while not pool._spawning:
        await asyncio.sleep(0.01)
    began = time.monotonic()
    await pool.close(grace=0)
    start.cancel()
    print(round(time.monotonic() - began, 1), flush=True)

asyncio.run(main())
"""


@pytest.mark.slow
def test_closing_does_not_wait_for_a_fork_server_that_does_not_answer(tmp_path: Path) -> None:
    # A worker's start waits for the fork server (which may be loading the kernels for long on
    # a busy machine): a closing pool, and then the process, must not wait for it unbounded,
    # or the daemon does not exit on SIGTERM.
    import subprocess
    import sys

    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_WEDGED_FORK_SERVER)
    script = tmp_path / "close.py"  # not run with -c: that is how the fork server is told
    script.write_text(_CLOSE_WHILE_STARTING)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hooks), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 30  # waited _START_WAIT, not for the fork server
