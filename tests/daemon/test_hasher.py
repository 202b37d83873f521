"""The pipeline's hasher over the worker pool: files abandoned at shutdown are not failures, and
files caught by a worker replacement are hashed by the new workers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from isccd.daemon.hasher import Hashing, outcome
from isccd.daemon.heartbeat import Progress
from isccd.daemon.workers import WorkerOptions, WorkerPool
from isccd.model import FileIssue, FileRecord, IssueCode, IssueKind


async def _until_busy(pool: WorkerPool) -> None:
    while not pool.in_flight():
        await asyncio.sleep(0.01)


def test_replaced_workers_take_over_and_closed_ones_abandon(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as fh:
        fh.truncate(1 << 30)

    async def main() -> None:
        old = WorkerPool(WorkerOptions(workers=1))
        new = WorkerPool(WorkerOptions(workers=1))
        await asyncio.gather(old.start(), new.start())
        hashing = Hashing(old, Progress(limit=60))
        try:
            # A reload replaces the workers while a file is being hashed.
            job = asyncio.create_task(hashing(str(tmp_path), str(big), None))
            await _until_busy(old)
            hashing.pool = new
            await old.close(grace=0)
            record = await asyncio.wait_for(job, 60)
            assert record.datahash is not None
            assert new.statistics().done == 1
            # At shutdown there is no new pool: the file is abandoned, not failed.
            job = asyncio.create_task(hashing(str(tmp_path), str(big), None))
            await _until_busy(new)
            await new.close(grace=0)
            with pytest.raises(asyncio.CancelledError):
                await job
        finally:
            await old.close(grace=0)
            await new.close(grace=0)

    asyncio.run(main())


@pytest.mark.parametrize(
    ("codes", "units", "expected"),
    [
        ((), True, "coded"),
        ((IssueCode.INVALID,), True, "partial"),
        ((IssueCode.ACCESS,), False, "failed"),
        ((IssueCode.UNSTABLE,), False, "unstable"),
        ((IssueCode.VANISHED,), False, "vanished"),
    ],
)
def test_outcome_words(codes: tuple[IssueCode, ...], units: bool, expected: str) -> None:
    from isccd.model import Unit, UnitType

    record = FileRecord(
        "/x",
        None,
        units=(Unit(UnitType.DATA, "ISCC:GAA", b"\0" * 8, ""),) if units else (),
        issues=tuple(FileIssue("read", IssueKind.ERROR, "r", c) for c in codes),
    )
    assert outcome(record) == expected
