"""Watchlists in the store, on each backend: added, read, removed, counted by a version that a
writer polls, and written beside a running writer (no writer lock) as the CLI does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from isccd.errors import StoreError, StoreLockedError
from isccd.model import UnitType
from isccd.store import Store, open_store, state_url
from isccd.store.schema import MIGRATIONS
from isccd.store.watchlists import NewRef

IMAGE = (UnitType.IMAGE, "ISCC:EEAxx", bytes(range(8)))
DATA = (UnitType.DATA, "ISCC:GAAxx", b"\xff" * 8)


def refs(*labels: str) -> list[NewRef]:
    return [NewRef(label, "ISCC:KEC" + label, (IMAGE, DATA)) for label in labels]


def test_added_listed_read_by_type_and_removed(store: Store) -> None:
    start = store.watchlist_version()
    store.begin()
    list_id, ids = store.add_watch_refs("brand", None, refs("logo.png", "banner.png"), 5.0)
    store.commit()
    assert store.watchlist_version() == start + 1
    [listed] = store.watchlists()
    assert (listed.id, listed.name, listed.threshold, listed.refs) == (list_id, "brand", None, 2)
    images = store.watch_units_of_type(UnitType.IMAGE)
    assert [(w, d) for _, w, d in images] == [(list_id, IMAGE[2])] * 2
    [unit] = store.watch_units_by_id([images[1][0]])
    assert (unit.ref, unit.label, unit.name, unit.type) == (ids[1], "banner.png", "brand", IMAGE[0])
    assert [u.label for u in store.watch_units_of_list("brand")] == ["logo.png"] * 2 + [
        "banner.png"
    ] * 2
    store.begin()
    assert store.remove_watch("brand", ids[0]) == 1
    store.commit()
    assert [u.ref for u in store.watch_units_of_list("brand")] == [ids[1]] * 2
    store.begin()
    assert store.remove_watch("brand", None) == 1
    store.commit()
    assert store.watchlists() == []
    assert store.watch_units_of_type(UnitType.IMAGE) == []
    assert store.watchlist_version() == start + 3


def test_a_threshold_is_the_lists_and_unknown_names_are_refused(store: Store) -> None:
    store.begin()
    store.add_watch_refs("strict", 3, refs("a"), 1.0)
    store.add_watch_refs("strict", None, refs("b"), 2.0)  # more of it, same threshold
    store.commit()
    [listed] = store.watchlists()
    assert (listed.threshold, listed.refs) == (3, 2)
    store.begin()
    with pytest.raises(StoreError, match="threshold 3, not 5"):
        store.add_watch_refs("strict", 5, refs("c"), 3.0)
    with pytest.raises(StoreError, match="no watchlist 'other'"):
        store.remove_watch("other", None)
    with pytest.raises(StoreError, match="no reference 999"):
        store.remove_watch("strict", 999)
    store.rollback()


def test_written_beside_the_writer_and_seen_by_its_next_poll(store_url: str) -> None:
    writer = open_store(store_url, host="host-a")
    try:
        if store_url.startswith("sqlite"):
            with pytest.raises(StoreLockedError):
                open_store(store_url, host="host-a").close()
        before = writer.watchlist_version()
        beside = open_store(store_url, host="host-a", beside=True)
        try:
            beside.begin()
            beside.add_watch_refs("brand", None, refs("logo.png"), 1.0)
            beside.commit()
        finally:
            beside.close()
        assert writer.watchlist_version() == before + 1
        assert [w.name for w in writer.watchlists()] == ["brand"]
    finally:
        writer.close()


def test_a_store_of_the_version_before_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "isccd.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for migration in MIGRATIONS[:-1]:
        for statement in migration.statements:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {MIGRATIONS[-2].version}")
    conn.close()
    store = open_store(state_url(tmp_path))
    try:
        assert store.watchlist_version() == 0
        assert store.watchlists() == []
    finally:
        store.close()
