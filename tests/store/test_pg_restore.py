"""A fleet's database restored from an older dump (``pg_dump``, then ``pg_restore``): its log
goes back to the dump, and the events logged after it reuse the numbers subscribers have seen.
A writer that followed the log further tells it when it connects (at start, from what it
saved, or when it reconnects), and gives the log a new run: the run it followed ends where the
dump ended, and a resume past that is refused. Ordinary restarts and reconnects make no run."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from isccd.model import EventType
from isccd.store import Store, open_store
from isccd.store.pgruns import read_mark
from isccd.store.pgschema import EVENTS_LOCK, LOCK_SPACE
from isccd.store.postgres import PostgresStore
from tests.pg import PgServer

ROOT = "/data"


def _log(store: Store, count: int) -> int:
    """Log ``count`` events, one transaction each; the last seq."""
    seq = 0
    for n in range(count):
        store.begin()
        seq = store.append_event(EventType.FILE_ADDED, ROOT, f"/data/{n}", {}, 1.0).seq
        store.commit()
    return seq


def _refused(store: Store, identity: str, since: int) -> bool:
    """Whether the server would refuse a resume from ``since`` of the log ``identity``
    (isccd.server.connection: ``store_mismatch`` past the run's end, or for a run unknown)."""
    end = store.log_end(identity)
    return end is None or since > end


def _database(url: str) -> str:
    return url.rsplit("/", 1)[1]


def test_a_writer_that_followed_the_log_further_begins_a_new_run_after_a_restore(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    name = _database(pg_url)
    marks = tmp_path / "a" / "fleet-log.json"
    a = open_store(pg_url, host="a", log_mark=marks)
    first = a.identity
    copied = _log(a, 3)
    dump = pg_server.dump(name)
    seen = _log(a, 3)  # a subscriber follows the log up to here
    a.close()
    assert read_mark(marks)[_created(pg_url)].seq == seen

    # An ordinary restart: the same run, and the resume is exact.
    a = open_store(pg_url, host="a", log_mark=marks)
    assert a.identity == first and not _refused(a, first, seen)
    a.close()

    pg_server.restore(name, dump)
    # Another host's daemon, new to the log, writes first: past what the subscriber saw, with
    # other events under the same numbers.
    b = open_store(pg_url, host="b", log_mark=tmp_path / "b" / "fleet-log.json")
    assert b.identity == first
    assert _log(b, 5) > seen
    # The host that followed the log starts again: its own events are gone from the log.
    a = open_store(pg_url, host="a", log_mark=marks)
    try:
        now = a.identity
        assert now != first
        assert a.log_end(first) == copied
        assert _refused(a, first, seen)  # refused: `since` is past where the dump ended
        assert not _refused(a, first, copied)  # up to the dump, the numbers are its events
        assert not _refused(b, now, a.last_seq(fleet=True))
        assert b.identity == now  # one log, one identity for every host
    finally:
        a.close()
        b.close()
    # Started again, nothing more is begun.
    a = open_store(pg_url, host="a", log_mark=marks)
    assert a.identity == now
    a.close()


def _created(url: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT value FROM properties WHERE host = '' AND name = 'store_id'"
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_a_reconnect_after_a_restore_begins_a_new_run_and_a_plain_one_does_not(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    name = _database(pg_url)
    a = open_store(pg_url, host="a")  # remembered while open only
    assert isinstance(a, PostgresStore)
    try:
        first = a.identity
        copied = _log(a, 2)
        dump = pg_server.dump(name)
        seen = _log(a, 2)
        # The server ends the session: the store reconnects, and the log went on.
        pg_server.sql("postgres", f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      f"WHERE datname = '{name}' AND pid <> pg_backend_pid()")  # fmt: skip
        assert a.last_seq(fleet=True) == seen
        assert a.identity == first
        pg_server.restore(name, dump)  # drops the database: every session ends
        assert a.last_seq(fleet=True) == copied  # the reconnect found it gone backwards
        assert a.identity != first
        assert a.log_end(first) == copied and _refused(a, first, seen)
    finally:
        a.close()


def test_two_writers_finding_the_log_gone_backwards_at_once_begin_one_run(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    name = _database(pg_url)
    marks = {h: tmp_path / h / "fleet-log.json" for h in ("a", "b")}
    a = open_store(pg_url, host="a", log_mark=marks["a"])
    b = open_store(pg_url, host="b", log_mark=marks["b"])
    first = a.identity
    copied = _log(a, 2)
    dump = pg_server.dump(name)
    _log(a, 2)
    seen = _log(b, 2)
    b.last_seq(fleet=True)
    a.last_seq(fleet=True)  # both have seen the whole log
    a.close()
    b.close()
    pg_server.restore(name, dump)

    # Both open while the writers' lock is held: each finds the log gone backwards, and waits
    # for the lock to record a run; the second finds the first's.
    holder = psycopg.connect(pg_url, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_SPACE, EVENTS_LOCK))
    opened: dict[str, Store] = {}

    def open_as(host: str) -> None:
        opened[host] = open_store(pg_url, host=host, log_mark=marks[host])

    threads = [threading.Thread(target=open_as, args=(h,)) for h in ("a", "b")]
    try:
        for thread in threads:
            thread.start()
        _wait_for_lock_waiters(holder, name, 2)
        holder.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_SPACE, EVENTS_LOCK))
        for thread in threads:
            thread.join(60)
        assert set(opened) == {"a", "b"}
        assert opened["a"].identity == opened["b"].identity != first
        runs = holder.execute(
            "SELECT name, value FROM properties WHERE host = '' AND name LIKE 'run:%' "
            "ORDER BY value"
        ).fetchall()
        assert runs == [
            (f"run:{first}", "0 1"),
            (f"run:{opened['a'].identity}", f"1 {copied + 1}"),
        ]
        assert _refused(opened["a"], first, seen)
    finally:
        holder.close()
        for store in opened.values():
            store.close()


def _wait_for_lock_waiters(conn: psycopg.Connection[Any], name: str, count: int) -> None:
    """Until ``count`` sessions wait for the writers' lock (polled on the server, for at most
    60 s: a session that never queues for it fails the test with what it saw)."""
    deadline = time.monotonic() + 60
    while True:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
            "WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = %s "
            "AND l.objid = %s::bigint::oid",
            (name, EVENTS_LOCK),
        ).fetchone()
        if row is not None and row[0] >= count:
            return
        assert time.monotonic() < deadline, f"{row} sessions wait for the lock, not {count}"
        conn.execute("SELECT pg_sleep(0.01)")  # the state of the server asked again
