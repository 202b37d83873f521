"""The pipeline's hasher over the worker pool: files abandoned at shutdown are not failures, and
files caught by a worker replacement are hashed by the new workers."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from isccd.daemon.hasher import DaemonHasher, log_processed, outcome
from isccd.daemon.heartbeat import Progress
from isccd.hashing.pool import WorkerOptions, WorkerPool
from isccd.logconf import configure_logging
from isccd.model import FileIssue, FileRecord, IssueCode, IssueKind, Unit, UnitType


async def _until_busy(pool: WorkerPool) -> None:
    while not pool.in_flight():
        await asyncio.sleep(0.01)


@pytest.mark.slow
def test_replaced_workers_take_over_and_closed_ones_abandon(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as fh:
        fh.truncate(1 << 30)

    async def main() -> None:
        old = WorkerPool(WorkerOptions(workers=1))
        new = WorkerPool(WorkerOptions(workers=1))
        await asyncio.gather(old.start(), new.start())
        hashing = DaemonHasher(old, Progress(limit=60))
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
    assert outcome(_record(codes, units)) == expected


def _record(codes: tuple[IssueCode, ...], units: bool) -> FileRecord:
    return FileRecord(
        "/x",
        None,
        units=(Unit(UnitType.DATA, "ISCC:GAA", b"\0" * 8, ""),) if units else (),
        issues=tuple(FileIssue("read", IssueKind.ERROR, f"because {c}", c) for c in codes),
    )


@pytest.fixture
def captured_log() -> Iterator[io.StringIO]:
    """The JSON log lines written meanwhile (logging is restored afterwards)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    out = io.StringIO()
    configure_logging("info", "json", stream=out, env={})
    yield out
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.captureWarnings(False)
    structlog.reset_defaults()


def test_processed_files_log_at_the_level_of_their_outcome_with_the_same_fields(
    captured_log: io.StringIO,
) -> None:
    cases = [
        ((), True, "info"),
        ((IssueCode.INVALID,), True, "warning"),
        ((IssueCode.ACCESS,), False, "error"),
        ((IssueCode.UNSTABLE,), False, "info"),
        ((IssueCode.VANISHED,), False, "info"),
    ]
    for codes, units, _ in cases:
        log_processed("/x", _record(codes, units), frozenset({UnitType.META}), 0.25)
    lines = [json.loads(line) for line in captured_log.getvalue().splitlines()]
    assert [line["level"] for line in lines] == [level for _, _, level in cases]
    assert [line["outcome"] for line in lines] == [
        "coded", "partial", "failed", "unstable", "vanished"
    ]  # fmt: skip
    assert {frozenset(line) for line in lines} == {frozenset(lines[0])}  # the same fields
    assert lines[1]["errors"] == ["because invalid"] and lines[0]["errors"] == []
    assert lines[0]["requested"] == ["meta"] and lines[0]["ms"] == 250.0


@pytest.mark.slow
def test_a_batch_held_by_its_slow_file_is_not_taken_for_stuck_work(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as fh:
        fh.truncate(8 << 30)  # takes far longer than the time limit to hash
    small = tmp_path / "small.txt"
    small.write_text("small file")
    root = str(tmp_path)
    limit = 1.0

    async def main() -> None:
        pool = WorkerPool(WorkerOptions(workers=1, file_timeout=limit))
        await pool.start()
        # As the daemon sets it: above the longest one file may take.
        progress = Progress(limit=limit + 0.5, settled=lambda: pool.statistics().settled)
        hashing = DaemonHasher(pool, progress)
        try:
            batch = asyncio.create_task(
                hashing.many([(root, str(big), None), (root, str(small), None)])
            )
            stalled = []
            while not batch.done():
                stalled.append(progress.stalled(pending=1))
                await asyncio.sleep(0.02)
            records = await batch
            # The batch ran out of time, then the big file alone: twice the limit in all.
            assert pool.statistics().timeouts == 2
            assert records[1].iscc is not None
            assert [s for s in stalled if s is not None] == []
        finally:
            await pool.close(grace=0)

    asyncio.run(asyncio.wait_for(main(), 60))
