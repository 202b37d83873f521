"""The event log of a shared database has one order a resuming reader can trust: sequence order
is commit order, so a reader that has seen an event never misses, later, a lower one that
committed after it (``docs/protocol.md``, "The event log of a shared database")."""

from __future__ import annotations

import threading

import pytest

from isccd.model import EventType
from isccd.store import Store, open_store
from tests.store.conftest import make_record

ROOT = "/data"


def _append(store: Store, path: str) -> int:
    return store.append_event(EventType.FILE_ADDED, ROOT, path, {}, 1.0).seq


def _tail(reader: Store, since: int, seen: list[int]) -> int:
    """Read every event after ``since`` as a resuming subscriber does; the new resume point."""
    while batch := reader.events_since(since, limit=100, fleet=True):
        seen.extend(e.seq for e in batch)
        since = batch[-1].seq
    return since


@pytest.mark.slow
def test_a_lower_number_never_commits_after_a_higher_one_was_read(pg_url: str) -> None:
    # Without the log's lock: A numbers an event, B numbers the next and commits, a reader
    # reads B's, then A commits its lower number behind the reader's back.
    a, b = open_store(pg_url, host="a"), open_store(pg_url, host="b")
    reader = open_store(pg_url, host="r", readonly=True)
    a_numbered, b_committed, read = threading.Event(), threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def write_a() -> None:
        try:
            a.begin()
            _append(a, "/a")
            a_numbered.set()
            read.wait(10)
            a.commit()
        except BaseException as exc:
            failures.append(exc)

    def write_b() -> None:
        try:
            a_numbered.wait(10)
            b.begin()
            _append(b, "/b")  # waits here for A's commit: the log's lock
            b.commit()
            b_committed.set()
        except BaseException as exc:
            failures.append(exc)

    seen: list[int] = []
    try:
        threads = [threading.Thread(target=write_a), threading.Thread(target=write_b)]
        for thread in threads:
            thread.start()
        a_numbered.wait(10)
        # B cannot commit before A: give it a while to show that it does not.
        assert not b_committed.wait(0.5)
        since = _tail(reader, 0, seen)
        read.set()
        for thread in threads:
            thread.join(10)
        _tail(reader, since, seen)
        assert failures == []
        assert [e.path for e in reader.events_since(0, fleet=True)] == ["/a", "/b"]
        assert seen == [e.seq for e in reader.events_since(0, fleet=True)]
    finally:
        for store in (a, b, reader):
            store.close()


@pytest.mark.slow
def test_concurrent_writers_and_a_tailing_reader_miss_nothing(pg_url: str) -> None:
    hosts = [f"h{i}" for i in range(4)]
    stores = [open_store(pg_url, host=h) for h in hosts]
    reader = open_store(pg_url, host="reader", readonly=True)
    failures: list[BaseException] = []

    def write(store: Store, host: str) -> None:
        try:
            for n in range(40):
                store.begin()
                # Work before the first event, as a batch of the pipeline does.
                store.add_file(ROOT, make_record(f"/data/{host}/{n}", ino=n), 1.0)
                for k in range(1 + n % 3):
                    _append(store, f"/data/{host}/{n}/{k}")
                store.commit()
        except BaseException as exc:
            failures.append(exc)

    seen: list[int] = []
    pairs = zip(stores, hosts, strict=True)
    threads = [threading.Thread(target=write, args=pair) for pair in pairs]
    try:
        for thread in threads:
            thread.start()
        since = 0
        while any(t.is_alive() for t in threads):
            since = _tail(reader, since, seen)
        _tail(reader, since, seen)
        assert failures == []
        everything: list[int] = []
        since = 0
        while batch := reader.events_since(since, limit=1000, fleet=True):
            everything.extend(e.seq for e in batch)
            since = batch[-1].seq
        assert len(everything) == 4 * sum(1 + n % 3 for n in range(40))
        assert seen == everything  # nothing missed, nothing twice, in order
    finally:
        for store in (*stores, reader):
            store.close()
