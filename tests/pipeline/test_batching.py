"""A reconcile hashes small files in batches (one round trip to a worker for many files) and
applies their records together; each file keeps its own outcome: a file that changes while read
is retried alone, a batch whose hashing fails costs its files, never the scan."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from isccd.model import EventType, FileRecord, UnitType
from isccd.pipeline.pipeline import BATCH_FILE_SIZE, BATCH_FILES
from tests.pipeline.harness import PAD, FamilyHasher, Harness, kinds


def test_small_files_go_in_batches_and_a_large_one_alone(h: Harness) -> None:
    assert isinstance(h.hasher, FamilyHasher)
    for i in range(2 * BATCH_FILES + 6):
        h.write(f"d/f{i:03d}", f"F{i}:0")
    large = h.write("large", "L:0" + PAD + "x" * BATCH_FILE_SIZE)
    events = h.scan()
    added = [e for e in events if e.type is EventType.FILE_ADDED]
    assert len(added) == 2 * BATCH_FILES + 7
    assert sum(h.hasher.batches) == 2 * BATCH_FILES + 6  # the large file is not among them
    assert max(h.hasher.batches) == BATCH_FILES
    assert h.hasher.calls[str(large)] == 1
    assert all(count == 1 for count in h.hasher.calls.values())


def test_an_unstable_file_of_a_batch_is_retried_alone(h: Harness) -> None:
    assert isinstance(h.hasher, FamilyHasher)
    paths = [h.write(f"f{i}", f"F{i}:0") for i in range(5)]
    h.hasher.unstable[str(paths[2])] = 2  # changes during its first two reads
    events = h.scan()
    assert sorted(kinds(events)) == sorted(
        [("file.added", p.name) for p in paths] + [("scan.done", "")]
    )
    assert h.hasher.batches == [5]
    assert h.hasher.calls[str(paths[2])] == 3
    assert h.stored(str(paths[2])).record.units


class _FailingBatches(FamilyHasher):
    """Hashes one file at a time, but every batch fails (a broken round trip)."""

    async def many(
        self, files: Sequence[tuple[str, str, frozenset[UnitType] | None]]
    ) -> list[FileRecord]:
        self.batches.append(len(files))
        raise RuntimeError("the batch was lost")


def test_a_failed_batch_costs_its_files_not_the_scan(tmp_path: Path) -> None:
    hasher = _FailingBatches()
    h = Harness(tmp_path, hasher=hasher)
    try:
        for i in range(3):
            h.write(f"f{i}", f"F{i}:0")
        events = h.scan()
        errors = [e for e in events if e.type is EventType.FILE_ERROR]
        assert sorted(e.path.rsplit("/", 1)[-1] for e in errors) == ["f0", "f1", "f2"]
        for error in errors:
            [issue] = error.data["issues"]
            assert issue["code"] == "internal"
            assert "the batch was lost" in issue["reason"]
        assert hasher.batches == [3]
        assert [e.type for e in events][-1] is EventType.SCAN_DONE
    finally:
        h.close()
