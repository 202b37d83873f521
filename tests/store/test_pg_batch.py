"""PostgreSQL stores a batch of new files, and of events, in a few statements: what it stores
and returns is what storing them one by one does (ids and sequence numbers in the order given)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from isccd.errors import StoreError
from isccd.model import (
    Event,
    EventType,
    FileIssue,
    FileRecord,
    FileStat,
    IssueCode,
    IssueKind,
    Mode,
    Unit,
    UnitType,
)
from isccd.store import NewEvent, Store, open_store
from isccd.store import postgres as pg_store
from tests.pg import PgServer
from tests.store.conftest import hashed, make_record

ROOT = "/data"


@pytest.fixture
def two_stores(pg_server: PgServer) -> Iterator[tuple[Store, Store]]:
    """Two stores of one host, each on a new database: the same records give the same ids."""
    names = [pg_server.new_database(), pg_server.new_database()]
    stores = [open_store(pg_server.url(name), host="host-a") for name in names]
    try:
        yield stores[0], stores[1]
    finally:
        for store in stores:
            store.close()
        for name in names:
            pg_server.drop_database(name)


def _records() -> list[FileRecord]:
    """Records of every shape: with units of two profiles, skips, no stat, no units, many in
    one directory, in nested and new directories, names that are not UTF-8."""
    skipped = (
        FileIssue("content", IssueKind.SKIPPED, "no tool", IssueCode.TOOL_MISSING, "iscc/1.4"),
        FileIssue("meta", IssueKind.SKIPPED, "off", IssueCode.DISABLED, "iscc/1.5.0 bits/64"),
        FileIssue("read", IssueKind.WARNING, "a warning"),
    )
    records = [
        make_record(
            f"/data/many/f{i:03d}.txt", ino=10 + i, datahash=hashed(i % 7), data=bytes([i]) * 8
        )
        for i in range(40)
    ]
    records += [
        make_record("/data/a/b/c/deep", ino=200, text=b"\x07" * 8, data=b"\x08" * 8, profile="p/2"),
        dataclasses.replace(make_record("/data/skips", ino=201), issues=skipped),
        FileRecord(path="/data/bare", stat=None),
        FileRecord(
            path="/data/image.png",
            stat=FileStat(1, 202, 4096, 5, 6, 2, blocks=8),
            mediatype="image/png",
            mode=Mode.IMAGE,
            units=(Unit(UnitType.IMAGE, "ISCC:EEA", b"\x09" * 8, "iscc/1.5.0 bits/64"),),
            width=640,
            height=480,
            duration=None,
            named_by_file=True,
        ),
        dataclasses.replace(
            make_record("/data/audio.ogg", ino=203), duration=3, named_by_file=False
        ),
        make_record("/data/caf\udce9/r\udcfcckblick.txt", ino=204, data=b"\x0a" * 8),
        make_record("/data/caf\udce9/\udcff", ino=205, datahash=hashed(3)),
        make_record("/data/many/f999.txt", ino=206),
    ]
    # Names and bytes an array's text form would have to quote or escape: a batch's arrays
    # reach the server as they are, whatever they hold.
    records += [
        make_record(f"/data/{{odd, \\dir}}/{name}", ino=300 + i, data=data)
        for i, (name, data) in enumerate([
            ("NULL", b"\x00" * 8),
            ('say "hi"', b"\x00\xff" * 4),
            ("back\\slash", b"\\" * 8),
            ("{a,b}", b"{,}\x00" * 2),
            (" lead and trail ", b'"' * 8),
        ])
    ]  # fmt: skip
    return records


def _read(store: Store, ids: list[int]) -> tuple[object, ...]:
    """What a store gives back about the files, through its public reads."""
    return (
        [store.files_by_id([i]) for i in ids],
        store.files_under(ROOT),
        store.dirs_under(ROOT),
        store.validators_in_dir("/data/many"),
        store.validators_in_dir("/data/caf\udce9"),
        sorted((s.file.id, sorted(s.units)) for s in store.stale_units(lambda p: p != "p/2", ROOT)),
        store.live_by_root(),
        store.files_by_datahash(hashed(3)),
        store.file_at("/data/caf\udce9/\udcff"),
        store.live_paths([r.path for r in _records()] + ["/data/{odd, \\dir}/null"]),
    )


@pytest.mark.parametrize("batch", [1000, 7])
def test_a_batch_of_files_stores_what_one_by_one_does(
    two_stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    monkeypatch.setattr(pg_store, "_BATCH", batch)  # 7: several statements for a call
    one, many = two_stores
    records = _records()
    first = make_record("/data/many/first", ino=1, data=b"\x01" * 8)
    for store in (one, many):  # a directory and a profile interned before the batch
        store.begin()
        store.add_file(ROOT, first, 1.0)
        store.commit()
    one.begin()
    singles = [one.add_file(ROOT, record, 2.0) for record in records]
    one.commit()
    many.begin()
    batched = many.add_files(ROOT, records, 2.0)
    many.commit()
    assert batched == singles
    assert batched == sorted(batched)
    assert batched[0] > 1
    assert _read(many, batched) == _read(one, singles)
    # Each id names its own record, as given.
    for file_id, record in zip(batched, records, strict=True):
        (stored,) = many.files_by_id([file_id])
        assert stored.record.path == record.path
        assert stored.record.units == record.units
    # Files added one by one after the batch follow it, in an interned directory.
    many.begin()
    later = many.add_file(ROOT, make_record("/data/many/later", ino=300), 3.0)
    many.commit()
    assert later > batched[-1]


def test_a_batch_at_a_stored_path_fails_whole(two_stores: tuple[Store, Store]) -> None:
    store, _ = two_stores
    store.begin()
    store.add_file(ROOT, make_record("/data/x/taken", ino=1), 1.0)
    store.commit()
    store.begin()
    with pytest.raises(StoreError):
        store.add_files(
            ROOT, [make_record("/data/y/new", ino=2), make_record("/data/x/taken", ino=3)], 2.0
        )
    store.rollback()
    store.begin()  # the directory interned in the rolled-back batch is forgotten
    (file_id,) = store.add_files(ROOT, [make_record("/data/y/new", ino=2)], 3.0)
    store.commit()
    assert [f.record.path for f in store.files_under(ROOT)] == ["/data/x/taken", "/data/y/new"]
    assert store.files_by_id([file_id])[0].indexed_at == 3.0


def test_a_batch_in_a_savepoint_rolled_back_leaves_nothing(two_stores: tuple[Store, Store]) -> None:
    store, _ = two_stores
    store.begin()
    store.savepoint()
    store.add_files(ROOT, [make_record("/data/s/a", ino=1), make_record("/data/s/b", ino=2)], 1.0)
    store.rollback_to()
    store.savepoint()
    ids = store.add_files(ROOT, [make_record("/data/s/c", ino=3, data=b"\x03" * 8)], 1.0)
    store.release()
    store.commit()
    assert [f.record.path for f in store.files_under(ROOT)] == ["/data/s/c"]
    assert store.live_by_root() == {ROOT: 1}
    assert [f.id for f in store.files_by_id(ids)] == ids


def _events() -> list[NewEvent]:
    return [
        NewEvent(
            EventType.FILE_ADDED, ROOT, f"/data/f{i}", {"n": i, "s": "x" * i}, 5.0 + i, None, i
        )
        for i in range(12)
    ] + [
        # Another host's side of a duplicate; data that is not plain (a tuple: a list once
        # parsed); data kept as it is when plain; a path that is not UTF-8; an int time.
        NewEvent(EventType.DUP_EXACT, ROOT, "/data/g", {"other": [1, 2]}, 20.0, "host-b", 7),
        # What an array's text form would quote, in a path, the data and a host's name.
        NewEvent(EventType.FILE_ADDED, ROOT, '/data/{a,"NULL"}\\', {"q": '"\\{}'}, 20.5, "NULL"),
        NewEvent(EventType.FILE_REMOVED, ROOT, "/data/h", {"t": (1, "a")}, 21.0),
        NewEvent(EventType.FILE_ADDED, ROOT, "/data/i", {"k": {"v": 1.5}}, 22.0, plain=True),
        NewEvent(EventType.FILE_ADDED, ROOT, "/data/caf\udce9", {}, 23, None, None),
        NewEvent(EventType.FILE_ADDED, "/other", "/other/j", {"u": "é"}, 24.0, "host-c"),
    ]


def test_a_batch_of_events_logs_what_one_by_one_does(two_stores: tuple[Store, Store]) -> None:
    one, many = two_stores
    events = _events()
    for store in (one, many):  # a log that does not start empty
        store.begin()
        store.append_event(EventType.FILE_ADDED, ROOT, "/data/0", {}, 1.0)
        store.commit()
    one.begin()
    singles = [
        one.append_event(e.type, e.root, e.path, e.data, e.time, host=e.host, file_id=e.file_id)
        for e in events
    ]
    one.commit()
    many.begin()
    batched = many.append_events(events)
    many.commit()
    assert [e.seq for e in batched] == list(range(2, 2 + len(events)))
    assert _plain(batched) == _plain(singles)
    assert [type(e.data["t"]) for e in batched if "t" in e.data] == [list]
    assert batched[-3].data is events[-3].data  # plain: kept as it is
    for store in (one, many):
        assert store.events_since(0, fleet=True)[1:] == batched
        assert store.events_since(0)[1:] == [e for e in batched if e.host == "host-a"]
        assert store.last_seq() == max(e.seq for e in batched if e.host == "host-a")
        assert store.last_seq(fleet=True) == one.last_seq(fleet=True)
    assert [(h.name, h.last_seq) for h in many.hosts()] == [  # type: ignore[attr-defined]
        (h.name, h.last_seq)
        for h in one.hosts()  # type: ignore[attr-defined]
    ]
    assert many.append_events([]) == []


def _plain(events: list[Event]) -> list[tuple[object, ...]]:
    return [dataclasses.astuple(e) for e in events]
