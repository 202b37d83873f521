"""What only the SQLite backend promises: WAL, checks at start, clear errors for unusable
databases, migrations, a size limit, and readers next to a writer."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from isccd.errors import (
    StoreCorruptError,
    StoreError,
    StoreFullError,
    StoreLockedError,
    StoreRemovedError,
)
from isccd.model import EventType
from isccd.store import DB_NAME, SqliteOptions, SqliteStore, open_store, state_url
from isccd.store.schema import LATEST, MIGRATIONS
from tests.store.conftest import hashed, make_record

ROOT = "/data"


def _db(tmp_path: Path) -> Path:
    return tmp_path / DB_NAME


def test_the_database_is_in_wal_mode_at_the_latest_schema(tmp_path: Path) -> None:
    open_store(state_url(tmp_path)).close()
    conn = sqlite3.connect(_db(tmp_path))
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def _modes(directory: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in directory.iterdir()}


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277])
def test_the_database_files_are_the_owners_alone_whatever_the_umask(
    tmp_path: Path, umask: int
) -> None:
    old = os.umask(umask)
    try:
        store = open_store(state_url(tmp_path))
        try:
            store.begin()
            store.add_file(ROOT, make_record("/data/a", ino=1, datahash=hashed(1)), 1.0)
            store.commit()  # the WAL and its index exist now
            modes = _modes(tmp_path)
        finally:
            store.close()
    finally:
        os.umask(old)
    assert {f"{DB_NAME}{s}" for s in ("", "-wal", "-shm", ".lock")} <= set(modes)
    assert set(modes.values()) == {0o600}, {k: oct(v) for k, v in modes.items()}


def test_database_files_left_readable_are_made_private(tmp_path: Path) -> None:
    open_store(state_url(tmp_path)).close()
    for name in (DB_NAME, f"{DB_NAME}.lock"):
        (tmp_path / name).chmod(0o644)
    open_store(state_url(tmp_path)).close()
    assert set(_modes(tmp_path).values()) == {0o600}


def test_a_garbage_file_is_reported_as_corrupt_not_crashed_on(tmp_path: Path) -> None:
    _db(tmp_path).write_bytes(os.urandom(8192))
    with pytest.raises(StoreCorruptError) as caught:
        open_store(state_url(tmp_path))
    message = str(caught.value)
    assert str(_db(tmp_path)) in message and "move it away" in message


def test_a_foreign_sqlite_database_is_not_taken_over(tmp_path: Path) -> None:
    conn = sqlite3.connect(_db(tmp_path))
    conn.execute("CREATE TABLE customers (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreCorruptError, match="not an isccd index"):
        open_store(state_url(tmp_path))


def test_damaged_pages_fail_the_check_at_start(tmp_path: Path) -> None:
    store = open_store(state_url(tmp_path))
    store.begin()
    for i in range(400):
        store.add_file(
            ROOT, make_record(f"/data/{i:05d}" + "x" * 100, ino=i, datahash=hashed(i)), 1.0
        )
    store.commit()
    store.close()
    raw = bytearray(_db(tmp_path).read_bytes())
    page = 4096
    assert len(raw) > 8 * page
    for offset in range(3 * page, len(raw) - page, page):  # keep the header page intact
        raw[offset + 8 : offset + 200] = os.urandom(192)
    _db(tmp_path).write_bytes(bytes(raw))
    with pytest.raises(StoreCorruptError):
        open_store(state_url(tmp_path))


def _damaged_after(tmp_path: Path, *, crash: bool) -> None:
    """A database of 400 files whose pages in the second half are overwritten (the schema,
    at the start, is left readable), its last writer
    having closed it (``crash=False``) or ended without closing it (a committed write still
    in the write-ahead log)."""
    store = open_store(state_url(tmp_path))
    store.begin()
    for i in range(400):
        store.add_file(
            ROOT, make_record(f"/data/{i:05d}" + "x" * 100, ino=i, datahash=hashed(i)), 1.0
        )
    store.commit()
    store.close()
    assert not Path(f"{_db(tmp_path)}-wal").exists()  # a clean close leaves no log behind
    if crash:  # a writer that commits and dies: its log is left behind
        code = (
            "import os, sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
            "c.execute('PRAGMA journal_mode = WAL'); c.execute('PRAGMA user_version = "
            f"{LATEST}'); os._exit(0)"
        )
        subprocess.run([sys.executable, "-c", code, str(_db(tmp_path))], check=True)
        assert Path(f"{_db(tmp_path)}-wal").stat().st_size > 0
    raw = bytearray(_db(tmp_path).read_bytes())
    page = 4096
    for offset in range(len(raw) // 2 // page * page, len(raw) - page, page):
        raw[offset + 8 : offset + 200] = os.urandom(192)
    _db(tmp_path).write_bytes(bytes(raw))


def test_a_large_database_left_by_a_writer_that_did_not_close_it_is_checked(
    tmp_path: Path,
) -> None:
    _damaged_after(tmp_path, crash=True)
    with pytest.raises(StoreCorruptError, match="move it away"):
        open_store(state_url(tmp_path), sqlite=SqliteOptions(quick_check_below=0))


def test_a_large_database_closed_cleanly_is_not_read_whole_at_start(tmp_path: Path) -> None:
    # Too large to read whole at every start (here: any size): it opens; the damage is
    # found where the store reads it (as a StoreCorruptError with the same advice).
    _damaged_after(tmp_path, crash=False)
    open_store(state_url(tmp_path), sqlite=SqliteOptions(quick_check_below=0)).close()
    conn = sqlite3.connect(_db(tmp_path))
    try:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] != "ok"  # damaged indeed
    finally:
        conn.close()
    # The same database below the size: checked at start.
    with pytest.raises(StoreCorruptError, match="move it away"):
        open_store(state_url(tmp_path))


def test_a_newer_schema_is_refused_with_advice(tmp_path: Path) -> None:
    open_store(state_url(tmp_path)).close()
    conn = sqlite3.connect(_db(tmp_path))
    conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer than this isccd knows"):
        open_store(state_url(tmp_path))


def test_an_old_database_is_migrated_with_its_data(tmp_path: Path) -> None:
    # A database as the first release wrote it: schema version 1, one file, one event.
    conn = sqlite3.connect(_db(tmp_path), isolation_level=None)
    for statement in MIGRATIONS[0].statements:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO roots (id, path) VALUES (1, ?)", (b"/data",))
    conn.execute("INSERT INTO dirs (id, path) VALUES (1, ?)", (b"/data",))
    conn.execute(
        "INSERT INTO files (root_id, dir_id, name, dev, ino, size, mtime_ns, ctime_ns, nlink, "
        "datahash, iscc, indexed_at, removed_at) "
        "VALUES (1, 1, ?, 1, 2, 3, 4, 5, 1, ?, ?, 1.0, 7.0)",
        (b"old.txt", bytes.fromhex(hashed(9)), "ISCC:KAC"),
    )
    conn.execute(
        "INSERT INTO events (type, time, root, path, data) VALUES ('file.added', 1.0, ?, ?, '{}')",
        (b"/data", b"/data/old.txt"),
    )
    conn.close()
    store = open_store(state_url(tmp_path))
    try:
        [tomb] = store.tombstones_at("/data/old.txt")
        assert tomb.record.datahash == hashed(9) and tomb.removed_at == 7.0
        assert store.last_seq() == 1
        store.begin()
        assert store.purge_events(before=2.0) == 1
        store.commit()
    finally:
        store.close()
    conn = sqlite3.connect(_db(tmp_path))
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
        indexes = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")
        }
        assert {"files_tombstone_path", "files_tombstones", "events_time"} <= indexes
    finally:
        conn.close()


def test_a_full_disk_is_a_clear_store_error(tmp_path: Path) -> None:
    # max_page_count stands in for the disk: SQLite reports SQLITE_FULL the same way.
    store = SqliteStore(_db(tmp_path), options=SqliteOptions(max_size=256 * 1024))
    try:
        store.begin()
        store.add_file(ROOT, make_record("/data/first", ino=0), 1.0)
        store.commit()
        store.begin()
        with pytest.raises(StoreFullError, match="full"):
            for i in range(1, 100_000):
                store.add_file(ROOT, make_record(f"/data/{i:06d}" + "y" * 200, ino=i), 1.0)
        store.rollback()
        assert store.file_at("/data/first") is not None
        assert store.file_at("/data/000001" + "y" * 200) is None
    finally:
        store.close()
    conn = sqlite3.connect(_db(tmp_path))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_a_disk_that_fills_while_the_schema_is_created_is_reported_as_full(tmp_path: Path) -> None:
    # Every size from too small for the first page to enough for the schema: the store opens,
    # or says the disk is full (SQLite may have rolled back the migration's transaction).
    outcomes = set()
    for kib in range(4, 160, 4):
        try:
            SqliteStore(tmp_path / f"{kib}.db", options=SqliteOptions(max_size=kib * 1024)).close()
            outcomes.add("opened")
        except StoreFullError:
            outcomes.add("full")
    assert outcomes == {"opened", "full"}


def test_a_reader_sees_committed_data_while_a_writer_holds_the_lock(tmp_path: Path) -> None:
    writer = open_store(state_url(tmp_path))
    writer.begin()
    writer.add_file(ROOT, make_record("/data/committed"), 1.0)
    writer.commit()
    writer.begin()
    writer.add_file(ROOT, make_record("/data/pending", ino=2), 1.0)
    try:
        reader = open_store(state_url(tmp_path), readonly=True)
        try:
            assert reader.file_at("/data/committed") is not None
            assert reader.file_at("/data/pending") is None
            with pytest.raises(StoreError):
                reader.add_file(ROOT, make_record("/data/no"), 1.0)
        finally:
            reader.close()
    finally:
        writer.rollback()
        writer.close()


def test_one_process_writes_and_a_second_writer_is_told_why_not(tmp_path: Path) -> None:
    first = open_store(state_url(tmp_path))
    try:
        with pytest.raises(
            StoreLockedError, match=rf"written by another isccd process \(pid {os.getpid()}\)"
        ) as info:
            open_store(state_url(tmp_path))
        assert info.value.holder == os.getpid()
        reader = open_store(state_url(tmp_path), readonly=True)  # readers are not limited
        reader.close()
    finally:
        first.close()
    open_store(state_url(tmp_path)).close()  # released on close


def test_a_writer_lock_held_elsewhere_waits_then_fails_clearly(tmp_path: Path) -> None:
    # Another process's long transaction: SQLite's own lock, after the busy timeout.
    open_store(state_url(tmp_path)).close()
    other = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        # A writer records its run of the event log as it opens: it waits for the lock there.
        with pytest.raises(StoreError, match="locked by another process"):
            open_store(
                state_url(tmp_path), sqlite=SqliteOptions(busy_timeout=0.05, quick_check=False)
            )
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_reading_a_missing_index_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="isccd scan"):
        open_store(state_url(tmp_path / "nowhere"), readonly=True)


def test_store_urls(tmp_path: Path) -> None:
    odd = tmp_path / os.fsdecode(b"st\xffate")  # a state directory whose name is not UTF-8
    url = state_url(odd)
    assert url.startswith("sqlite:///") and "%FF" in url
    store = open_store(url)
    assert isinstance(store, SqliteStore)
    assert os.fsencode(store.path) == os.fsencode(str(odd / DB_NAME))
    store.close()
    plain = open_store(str(tmp_path / "plain.db"))
    assert isinstance(plain, SqliteStore)
    plain.close()
    with pytest.raises(StoreError, match="unknown store URL scheme 'memory'"):
        open_store("memory://")
    with pytest.raises(StoreError, match=r"unknown store URL scheme 'mysql' in 'mysql://u:\*\*\*@"):
        open_store("mysql://u:hunter2@db.example/isccd")
    with pytest.raises(StoreError, match="needs a path"):
        open_store("sqlite://")
    assert urllib.parse.unquote_to_bytes(url.removeprefix("sqlite://")) == os.fsencode(
        odd / DB_NAME
    )


def test_events_written_in_a_transaction_appear_only_on_commit(tmp_path: Path) -> None:
    writer = open_store(state_url(tmp_path))
    reader = open_store(state_url(tmp_path), readonly=True)
    try:
        writer.begin()
        event = writer.append_event(EventType.FILE_ADDED, ROOT, "/data/x", {"n": 1}, 1.0)
        assert reader.events_since(0) == [] and reader.last_seq() == 0
        writer.commit()
        assert reader.events_since(0) == [event] and reader.last_seq() == event.seq
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_database_deleted_or_replaced_while_open_commits_nothing(
    tmp_path: Path, how: str
) -> None:
    state = tmp_path / "state"
    store = SqliteStore(_db(state))
    try:
        store.begin()
        store.add_file(ROOT, make_record("/data/a", ino=1), 1.0)
        store.commit()
        moved = tmp_path / "moved"
        state.rename(moved)  # the state directory removed (its files kept here to look at)
        if how == "replaced":
            state.mkdir()
            SqliteStore(_db(state)).close()  # another database at the path
        store.begin()
        store.add_file(ROOT, make_record("/data/b", ino=2), 1.0)
        with pytest.raises(StoreRemovedError, match="was deleted or replaced"):
            store.commit()
        store.rollback()
    finally:
        store.close()
    kept = SqliteStore(_db(moved), readonly=True)
    try:
        assert kept.file_at("/data/a") is not None
        assert kept.file_at("/data/b") is None
    finally:
        kept.close()


def test_adding_a_file_writes_its_rows_without_deleting_first(tmp_path: Path) -> None:
    store = SqliteStore(_db(tmp_path))
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    store.begin()
    file_id = store.add_file(ROOT, make_record("/data/a", data=b"a", text=b"a"), 1.0)
    store.commit()
    store._db.set_trace_callback(None)
    try:
        assert [s for s in statements if s.startswith("DELETE")] == []
        assert {u.type for u in store.files_by_id([file_id])[0].record.units} == {
            u.type for u in make_record("/data/a", data=b"a", text=b"a").units
        }
    finally:
        store.close()


def test_the_copies_and_links_of_a_file_are_found_through_the_indexes(tmp_path: Path) -> None:
    store = SqliteStore(_db(tmp_path))
    statements: list[str] = []
    try:
        store.begin()
        ids = [
            store.add_file(ROOT, make_record(f"/data/{i}", ino=i, datahash=hashed(i)), 1.0)
            for i in range(50)
        ]
        store.commit()
        store._db.set_trace_callback(statements.append)
        assert list(store.related_keys((1, 3), hashed(7))) == [ids[3], ids[7]]
        assert list(store.related_keys_many([(1, 3), (1, 5)], [hashed(7), hashed(9)])) == [
            ids[3],
            ids[5],
            ids[7],
            ids[9],
        ]
        store._db.set_trace_callback(None)
        assert len(statements) == 2  # one statement for both lookups, each time
        for query in statements:
            plan = " ".join(row[3] for row in store._db.execute(f"EXPLAIN QUERY PLAN {query}"))
            assert "files_live_identity" in plan and "files_live_datahash" in plan, plan
            assert "SCAN files" not in plan, plan
    finally:
        store.close()
