"""The owner thread: one thread owns the store, jobs come back as futures after commit."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from isccd.errors import StoreError, StoreFullError
from isccd.model import EventType
from isccd.store import SqliteStore, Store, open_store, state_url
from isccd.store.owner import OwnerOptions, StoreOwner
from tests.store.conftest import make_record

ROOT = "/data"


@dataclass
class Tally:
    """What a :class:`CountingStore` saw, readable from the test's thread."""

    commits: int = 0
    threads: set[str] = field(default_factory=set)
    fail_commit: BaseException | None = None


class CountingStore(SqliteStore):
    """A SQLite store that counts commits, notes the committing thread, and can fail commits.
    Like every store it is opened on the thread that uses it (the owner's)."""

    def __init__(self, path: Path, tally: Tally) -> None:
        super().__init__(path / "isccd.db")
        self.tally = tally

    def commit(self) -> None:
        self.tally.threads.add(threading.current_thread().name)
        if self.tally.fail_commit is not None:
            raise self.tally.fail_commit
        super().commit()
        self.tally.commits += 1


def add_numbered(i: int, store: Store) -> int:
    return store.add_file(ROOT, make_record(f"/data/{i}", ino=i), 1.0)


def _still(clock_value: float = 0.0) -> float:
    return clock_value  # a clock that never moves: batches end only when the queue is empty


def test_jobs_waiting_together_are_committed_together(tmp_path: Path) -> None:
    tally = Tally()
    owner = StoreOwner(lambda: CountingStore(tmp_path, tally), clock=_still)
    owner.start()
    gate = threading.Event()
    try:
        first = owner.submit(lambda s: gate.wait(10))
        rest = [owner.submit(functools.partial(add_numbered, i)) for i in range(100)]
        gate.set()
        assert first.result(10) is True
        ids = [f.result(10) for f in rest]
        assert len(set(ids)) == 100
        assert tally.commits == 1
        assert tally.threads == {"isccd-store"}
    finally:
        owner.close()


def test_a_failing_job_is_undone_alone(tmp_path: Path) -> None:
    tally = Tally()
    owner = StoreOwner(lambda: CountingStore(tmp_path, tally), clock=_still)
    owner.start()
    gate = threading.Event()

    def failing(s: Store) -> None:
        s.add_file(ROOT, make_record("/data/bad", ino=2), 1.0)
        raise ValueError("bad job")

    try:
        blocker = owner.submit(lambda s: gate.wait(10))
        good = owner.submit(lambda s: s.add_file(ROOT, make_record("/data/good", ino=1), 1.0))
        bad = owner.submit(failing)
        after = owner.submit(lambda s: s.file_at("/data/good") is not None)
        gate.set()
        blocker.result(10)
        assert good.result(10) > 0
        with pytest.raises(ValueError, match="bad job"):
            bad.result(10)
        assert after.result(10) is True
        assert owner.call(lambda s: s.file_at("/data/bad")) is None
        assert tally.commits == 2  # the batch with the failing job still committed
    finally:
        owner.close()


def test_a_failed_commit_fails_every_job_of_the_batch_and_keeps_nothing(
    tmp_path: Path,
) -> None:
    tally = Tally()
    owner = StoreOwner(lambda: CountingStore(tmp_path, tally), clock=_still)
    owner.start()
    gate = threading.Event()
    try:
        blocker = owner.submit(lambda s: gate.wait(10))  # the first batch holds only this job
        tally.fail_commit = StoreFullError("disk full")
        gate.set()
        with pytest.raises(StoreFullError):
            blocker.result(10)
        jobs = [owner.submit(functools.partial(add_numbered, i)) for i in range(3)]
        for job in jobs:
            with pytest.raises(StoreFullError):
                job.result(10)
        tally.fail_commit = None
        assert owner.call(lambda s: s.files_under("/")) == []
    finally:
        owner.close()


class FullStore(SqliteStore):
    """A SQLite store on a full disk: a transaction that wrote a file cannot be committed."""

    def __init__(self, path: Path) -> None:
        super().__init__(path / "isccd.db")
        self.wrote = False

    def begin(self) -> None:
        super().begin()
        self.wrote = False

    def add_file(self, *args: object, **kwargs: object) -> int:
        self.wrote = True
        return super().add_file(*args, **kwargs)  # type: ignore[arg-type]

    def commit(self) -> None:
        if self.wrote:
            raise StoreFullError("disk full")
        super().commit()


def test_questions_batched_with_writes_that_cannot_be_committed_are_still_answered(
    tmp_path: Path,
) -> None:
    owner = StoreOwner(lambda: FullStore(tmp_path), clock=_still)
    owner.start()
    gate = threading.Event()
    try:
        blocker = owner.submit(lambda s: gate.wait(10))
        writes = [owner.submit(functools.partial(add_numbered, i)) for i in range(3)]
        question = owner.submit(lambda s: s.files_under("/"))
        gate.set()  # all of them form one batch, whose commit fails
        assert blocker.result(10) is True
        assert question.result(10) == []
        for write in writes:
            with pytest.raises(StoreFullError):
                write.result(10)
    finally:
        owner.close()


def test_a_result_arrives_only_once_its_changes_are_visible_to_other_readers(
    store_url: str,
) -> None:
    url = store_url
    owner: StoreOwner[Store] = StoreOwner(lambda: open_store(url))
    owner.start()
    try:
        event = owner.call(lambda s: s.append_event(EventType.FILE_ADDED, ROOT, "/data/a", {}, 1.0))
        reader = open_store(url, readonly=True)
        try:
            assert reader.events_since(0) == [event]
        finally:
            reader.close()
    finally:
        owner.close()


def test_opening_errors_surface_in_start_and_a_closed_owner_refuses_work(tmp_path: Path) -> None:
    (tmp_path / "isccd.db").write_bytes(b"not a database at all" * 100)
    broken: StoreOwner[Store] = StoreOwner(lambda: open_store(state_url(tmp_path)))
    with pytest.raises(StoreError, match=r"unreadable|damaged"):
        broken.start()
    owner: StoreOwner[Store] = StoreOwner(
        lambda: open_store(state_url(tmp_path / "other")), options=OwnerOptions(max_batch=1)
    )
    owner.start()
    owner.close()
    owner.close()
    with pytest.raises(StoreError, match="closed"):
        owner.submit(lambda s: None)
