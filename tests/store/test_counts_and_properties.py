"""Live files per root, named properties and the store's identity, against every backend; and
the migrations that add them to a database written before (schema 3, schema 5)."""

from __future__ import annotations

import sqlite3
import uuid
from collections import Counter
from pathlib import Path

import pytest

from isccd.errors import StoreCorruptError
from isccd.model import FileStat
from isccd.store import DB_NAME, Store, open_store, state_url
from isccd.store.schema import LATEST, MIGRATIONS
from tests.store.conftest import hashed, make_record


def _counted(store: Store) -> dict[str, int]:
    """Live files per root, counted one by one."""
    return dict(Counter(f.root for f in store.files_under("/")))


def test_live_files_are_counted_per_root_as_they_change(store: Store) -> None:
    assert store.live_by_root() == {}
    store.begin()
    a = store.add_file("/a", make_record("/a/1", ino=1, datahash=hashed(1)), 1.0)
    store.add_file("/a", make_record("/a/2", ino=2), 1.0)
    b = store.add_file("/b", make_record("/b/1", ino=3), 1.0)
    store.commit()
    assert store.live_by_root() == {"/a": 2, "/b": 1} == _counted(store)

    store.begin()
    store.move_file(a, "/b", "/b/moved", FileStat(1, 1, 10, 1_000, 2_000))  # across roots
    store.remove_file(b, 2.0)
    store.update_file(b, "/a", make_record("/b/1", ino=3), 2.0)  # a tombstone stays one
    store.commit()
    assert store.live_by_root() == {"/a": 1, "/b": 1} == _counted(store)

    # Stored again under its own root, or under another one (nested roots).
    [second] = store.files_under("/a/2")
    store.begin()
    store.update_file(second.id, "/a", second.record, 3.0)
    store.commit()
    assert store.live_by_root() == {"/a": 1, "/b": 1}
    store.begin()
    store.update_file(second.id, "/b", second.record, 3.0)
    store.commit()
    assert store.live_by_root() == {"/b": 2} == _counted(store)

    # Undone with the unit of work, or the transaction, that changed them.
    store.begin()
    store.add_file("/c", make_record("/c/1", ino=4), 4.0)
    store.savepoint()
    store.remove_file(a, 4.0)
    assert store.live_by_root() == {"/b": 1, "/c": 1}
    store.rollback_to()
    assert store.live_by_root() == {"/b": 2, "/c": 1}
    store.rollback()
    assert store.live_by_root() == {"/b": 2}

    # Purging tombstones leaves the live files' counts alone.
    store.begin()
    store.remove_file(a, 5.0)
    assert store.purge_tombstones(before=10.0) == 2
    store.commit()
    assert store.live_by_root() == {"/b": 1} == _counted(store)


def test_properties_are_written_in_transactions(store: Store) -> None:
    assert store.get_property("policy") is None
    store.begin()
    store.set_property("policy", "first")
    assert store.get_property("policy") == "first"
    store.rollback()
    assert store.get_property("policy") is None
    store.begin()
    store.set_property("policy", "first")
    store.savepoint()
    store.set_property("policy", "second")
    store.rollback_to()
    store.set_property("other", "x")
    store.commit()
    assert (store.get_property("policy"), store.get_property("other")) == ("first", "x")
    store.begin()
    store.set_property("policy", "second")
    store.commit()
    assert store.get_property("policy") == "second"


def test_a_schema_3_database_gets_root_counts_and_properties(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None)
    for migration in MIGRATIONS[:3]:
        for statement in migration.statements:
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 3")
    conn.execute(
        "INSERT INTO roots (id, path) VALUES (1, ?), (2, ?), (3, ?)", (b"/a", b"/b", b"/c")
    )
    conn.execute("INSERT INTO dirs (id, path) VALUES (1, ?), (2, ?), (3, ?)", (b"/a", b"/b", b"/c"))
    # Root /a: two live files and a tombstone; /b: one live; /c: only a tombstone.
    for ino, root, name, removed in (
        (1, 1, b"x", None),
        (2, 1, b"y", None),
        (3, 1, b"gone", 5.0),
        (4, 2, b"z", None),
        (5, 3, b"old", 5.0),
    ):
        conn.execute(
            "INSERT INTO files (root_id, dir_id, name, dev, ino, size, mtime_ns, ctime_ns, nlink, "
            "indexed_at, removed_at) VALUES (?, ?, ?, 1, ?, 3, 4, 5, 1, 1.0, ?)",
            (root, root, name, ino, removed),
        )
    conn.close()

    store = open_store(state_url(tmp_path))
    try:
        assert store.live_by_root() == {"/a": 2, "/b": 1}
        assert store.get_property("duplicate_policy") is None
        store.begin()
        store.add_file("/c", make_record("/c/new", ino=6), 2.0)
        store.remove_file(store.files_under("/a/x")[0].id, 2.0)
        store.set_property("duplicate_policy", "{}")
        store.commit()
    finally:
        store.close()
    reader = open_store(state_url(tmp_path), readonly=True)
    try:
        assert reader.live_by_root() == {"/a": 1, "/b": 1, "/c": 1} == _counted(reader)
        assert reader.get_property("duplicate_policy") == "{}"
    finally:
        reader.close()
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_every_store_has_an_identity_of_its_own_for_its_life(
    store: Store, store_url: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    identity = uuid.UUID(store.identity)
    assert identity.version == 4 and identity.variant == uuid.RFC_4122
    store.begin()
    store.add_file("/a", make_record("/a/1"), 1.0)
    store.rollback()
    assert store.identity == str(identity)
    assert store.log_end(str(identity)) == store.last_seq()
    store.close()
    again = open_store(store_url, host="host-a")
    if store_url.startswith("sqlite"):
        # Each run of a SQLite store's log has an identity of its own; the earlier ones are
        # known, with where they ended.
        assert again.identity != str(identity)
        assert again.log_end(str(identity)) == again.last_seq()
        current = again.identity
        again.close()
        reader = open_store(store_url, readonly=True)
        assert reader.identity == current
        reader.close()
        other_url = state_url(tmp_path / "other")
    else:
        assert again.identity == str(identity)  # a shared database keeps one for its life
        again.close()
        # Another host of the same fleet shares the database's identity; another database
        # has its own.
        fellow = open_store(store_url, host="host-b")
        assert fellow.identity == str(identity)
        fellow.close()
        server = request.getfixturevalue("pg_server")
        other_url = server.url(server.new_database())
    other = open_store(other_url, host="host-a")
    assert other.identity != str(identity)
    assert other.log_end(str(identity)) is None
    other.close()


@pytest.mark.slow
def test_a_schema_5_database_gets_an_identity(tmp_path: Path) -> None:
    identities = set()
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        conn = sqlite3.connect(tmp_path / name / DB_NAME, isolation_level=None)
        for migration in MIGRATIONS[:5]:
            for statement in migration.statements:
                conn.execute(statement)
        conn.execute("PRAGMA user_version = 5")
        conn.close()
        store = open_store(state_url(tmp_path / name))
        identities.add(store.identity)
        assert uuid.UUID(store.identity).version == 4
        store.close()
    assert len(identities) == 2  # random, not a constant of the migration


@pytest.mark.parametrize("value", [None, ""])
def test_a_database_without_an_identity_is_reported(tmp_path: Path, value: str | None) -> None:
    open_store(state_url(tmp_path)).close()
    conn = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None)
    if value is None:
        conn.execute("DELETE FROM properties WHERE name = 'store_id'")
    else:
        conn.execute("UPDATE properties SET value = ? WHERE name = 'store_id'", (value,))
    conn.close()
    store = open_store(state_url(tmp_path))
    try:
        with pytest.raises(StoreCorruptError, match="no identity"):
            _ = store.identity
    finally:
        store.close()
