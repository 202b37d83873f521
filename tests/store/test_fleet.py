"""What the PostgreSQL backend promises a fleet: an event about another host's file is that
host's, a near relation across hosts is each host's, the fleet's log says where purges may have
left holes, writers take turns from their first write (so none deadlocks another), and a
listener is woken by every commit that logged events."""

from __future__ import annotations

import asyncio
import threading
import time

import psycopg
import pytest

from isccd.errors import StoreUnavailableError
from isccd.model import EventType, UnitType
from isccd.store import NearPair, open_store
from isccd.store.pglisten import Listener
from isccd.store.pgschema import EVENTS_LOCK, LOCK_SPACE
from tests.pg import PgServer
from tests.store.conftest import hashed
from tests.store.test_postgres import ROOT, _add


def test_an_event_about_another_hosts_file_is_in_that_hosts_log(pg_url: str) -> None:
    a, b = open_store(pg_url, host="a"), open_store(pg_url, host="b")
    try:
        b_file = _add(b, "/b/x", 1, hashed(1))
        a.begin()
        mine = a.append_event(EventType.DUP_EXACT, ROOT, "/a/x", {}, 2.0)
        theirs = a.append_event(EventType.DUP_EXACT, ROOT, "/b/x", {}, 2.0, host="b")
        changed = a.append_event(EventType.FILE_ADDED, ROOT, "/a/x", {}, 2.0, file_id=b_file)
        a.commit()
        assert (mine.host, theirs.host, changed.file_id) == ("a", "b", b_file)
        assert [e.seq for e in b.events_since(0)] == [theirs.seq]
        assert b.last_seq() == theirs.seq and a.last_seq() == changed.seq
        assert a.last_seq(fleet=True) == b.last_seq(fleet=True) == changed.seq
        read = a.events_since(0, fleet=True)
        assert [(e.host, e.file_id) for e in read] == [("a", None), ("b", None), ("a", b_file)]
    finally:
        a.close()
        b.close()


def test_a_near_relation_across_hosts_is_each_hosts(pg_url: str) -> None:
    a, b = open_store(pg_url, host="a"), open_store(pg_url, host="b")
    try:
        on_a = _add(a, "/a/x", 1, hashed(1))
        on_b = _add(b, "/b/x", 2, hashed(2))
        also_a = _add(a, "/a/y", 3, hashed(3))
        across = NearPair.of(on_a, on_b, UnitType.DATA, 3)
        inside = NearPair.of(on_a, also_a, UnitType.DATA, 5)
        a.begin()
        a.add_near([across, inside])
        a.commit()
        assert b.near_of(on_b) == [across]
        assert list(b.near_pairs()) == [across]
        assert list(b.near_pairs(fleet=True)) == sorted([across, inside])
        a.begin()
        a.remove_near([across])
        a.commit()
        assert b.near_of(on_b) == [] and a.near_of(on_a) == [inside]
    finally:
        a.close()
        b.close()


def test_the_fleets_log_starts_above_every_number_a_purge_removed(pg_url: str) -> None:
    a, b = open_store(pg_url, host="a"), open_store(pg_url, host="b")
    try:
        seqs = []
        for store, when in ((b, 1.0), (a, 1.0), (a, 2.0), (b, 9.0)):
            store.begin()
            seqs.append(store.append_event(EventType.FILE_ADDED, ROOT, "/x", {}, when).seq)
            store.commit()
        assert a.first_seq(fleet=True) == seqs[0]
        a.begin()
        assert a.purge_events(before=5.0) == 2  # a's two; b keeps its older one
        a.commit()
        # Events below seqs[2] may be gone (a's were): b's event at seqs[0] does not make the
        # log look complete from there.
        assert a.first_seq(fleet=True) == b.first_seq(fleet=True) == seqs[2] + 1
        assert b.first_seq() == seqs[0]
    finally:
        a.close()
        b.close()


def _waiting_for_the_writers_lock(conninfo: str) -> bool:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
            "AND classid = %s::bigint::oid AND objid = %s::bigint::oid",
            (LOCK_SPACE, EVENTS_LOCK),
        ).fetchone()
    return bool(row and row[0])


def test_writers_take_turns_from_their_first_write(pg_url: str) -> None:
    a, b = open_store(pg_url, host="a"), open_store(pg_url, host="b")
    try:
        a.begin()
        a.set_property("x", "1")  # a write without an event: a holds the turn from here
        done = threading.Event()

        def other() -> None:
            b.begin()
            b.set_property("x", "2")
            b.commit()
            done.set()

        thread = threading.Thread(target=other)
        thread.start()
        deadline = 200
        while not _waiting_for_the_writers_lock(pg_url) and deadline:
            deadline -= 1
            done.wait(0.01)
        assert deadline and not done.is_set()  # b waits for a's turn to end
        a.commit()
        thread.join(10)
        assert done.is_set()
        # Reading takes no turn.
        a.begin()
        assert a.get_property("x") == "1"
        b.begin()
        b.commit()
        a.commit()
    finally:
        a.close()
        b.close()


def test_a_listener_is_woken_by_each_commit_that_logged_events(pg_url: str) -> None:
    async def scenario() -> None:
        listener = Listener(pg_url, host="b")
        store = open_store(pg_url, host="a")
        try:
            await listener.connect()
            assert not await listener.wait(0.05)
            store.begin()
            store.append_event(EventType.FILE_ADDED, ROOT, "/x", {}, 1.0)
            store.append_event(EventType.FILE_ADDED, ROOT, "/y", {}, 1.0)
            assert not await listener.wait(0.05)  # not before it commits
            store.commit()
            assert await listener.wait(5)
            assert not await listener.wait(0.05)  # one notification per transaction
            assert await listener.ping() > 0
        finally:
            store.close()
            await listener.close()

    asyncio.run(scenario())


def test_a_store_whose_server_is_down_says_so_at_once_and_reconnects(
    pg_server: PgServer, pg_url: str
) -> None:
    store = open_store(pg_url, host="a")
    try:
        pg_server.pause()
        try:
            with pytest.raises(StoreUnavailableError):
                store.begin()
            # Asked again at once (status, the next change), it answers at once.
            started = time.monotonic()
            for _ in range(5):
                with pytest.raises(StoreUnavailableError):
                    store.begin()
            assert time.monotonic() - started < 0.5
        finally:
            pg_server.resume()
        deadline = time.monotonic() + 30
        while True:  # after a second it tries again, and gets a new session
            try:
                store.begin()
                break
            except StoreUnavailableError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        store.append_event(EventType.FILE_ADDED, ROOT, "/x", {}, 1.0)
        store.commit()
        assert [e.path for e in store.events_since(0)] == ["/x"]
    finally:
        store.close()
