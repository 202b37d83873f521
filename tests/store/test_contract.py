"""The store contract, run against every backend (SQLite and PostgreSQL).

A backend that passes this suite can replace another without anything above the store
changing; each test states one promise of :mod:`isccd.store.base`.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isccd.errors import StoreError
from isccd.hamming import code64, codes64
from isccd.model import EventType, FileIssue, FileStat, IssueCode, IssueKind, UnitType
from isccd.store import FileKey, ListedFile, NearPair, NewEvent, Store, open_store, state_url
from tests.store.conftest import hashed, make_record

ROOT = "/data"


def test_a_stored_record_reads_back_equal(store: Store) -> None:
    record = make_record("/data/a.txt", datahash=hashed(1), data=b"\x01" * 8, text=b"\x02" * 8)
    store.begin()
    file_id = store.add_file(ROOT, record, now=5.0)
    store.commit()
    stored = store.file_at("/data/a.txt")
    assert stored is not None
    assert (stored.id, stored.root, stored.indexed_at, stored.removed_at) == (
        file_id,
        ROOT,
        5.0,
        None,
    )
    assert stored.record == record


@pytest.mark.parametrize("named_by_file", [True, False, None])
def test_whether_the_name_came_from_the_file_name_reads_back(
    store: Store, named_by_file: bool | None
) -> None:
    record = replace(make_record("/data/a.txt"), named_by_file=named_by_file)
    store.begin()
    file_id = store.add_file(ROOT, record, now=5.0)
    store.update_file(file_id, ROOT, record, now=6.0)
    store.commit()
    stored = store.file_at("/data/a.txt")
    assert stored is not None and stored.record.named_by_file is named_by_file


def test_the_blocks_a_file_takes_read_back_and_a_move_without_them_keeps_them(
    store: Store,
) -> None:
    # A sparse file: 600 MiB of size in 8 blocks.
    stat = FileStat(1, 100, 600 << 20, 1_000, 2_000, 1, 8)
    record = replace(make_record("/data/a.img"), stat=stat)
    store.begin()
    file_id = store.add_file(ROOT, record, now=5.0)
    store.commit()
    stored = store.file_at("/data/a.img")
    assert stored is not None and stored.record.stat == stat
    assert stored.record.stat.allocated == 4096
    store.begin()
    # A rename seen by a walk that did not take the blocks keeps the stored ones; one that
    # took them stores them.
    store.move_file(file_id, ROOT, "/data/b.img", replace(stat, blocks=None))
    store.commit()
    moved = store.file_at("/data/b.img")
    assert moved is not None and moved.record.stat is not None
    assert moved.record.stat.blocks == 8
    store.begin()
    store.move_file(file_id, ROOT, "/data/c.img", replace(stat, blocks=16))
    store.update_file(file_id, ROOT, replace(record, path="/data/c.img"), now=6.0)
    store.commit()
    again = store.file_at("/data/c.img")
    assert again is not None and again.record.stat is not None
    assert again.record.stat.blocks == 8  # the record stored last


def test_adding_a_second_live_file_at_one_path_is_refused(store: Store) -> None:
    store.begin()
    store.add_file(ROOT, make_record("/data/a"), 1.0)
    with pytest.raises(StoreError):
        store.add_file(ROOT, make_record("/data/a", ino=2), 1.0)


names = st.binary(min_size=1, max_size=40).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
)


_examples = itertools.count()


# One store for every example, each example in a directory of its own.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(names, min_size=1, max_size=4))
@pytest.mark.slow
def test_paths_round_trip_byte_exact(store: Store, parts: list[bytes]) -> None:
    # Names that are not UTF-8 arrive as surrogate escapes and must come back as the same bytes.
    path = f"/data/{next(_examples)}/" + "/".join(os.fsdecode(p) for p in parts)
    store.begin()
    store.add_file(ROOT, make_record(path), 1.0)
    store.commit()
    stored = store.file_at(path)
    assert stored is not None and os.fsencode(stored.path) == os.fsencode(path)
    directory, name = path.rsplit("/", 1)
    assert list(store.validators_in_dir(directory)) == [name]
    assert [f.path for f in store.files_under(directory)] == [path]
    store.begin()
    event = store.append_event(EventType.FILE_ADDED, ROOT, path, {"other": path}, 2.0)
    store.commit()
    [logged] = store.events_since(event.seq - 1)
    assert os.fsencode(logged.path) == os.fsencode(path)
    assert os.fsencode(logged.data["other"]) == os.fsencode(path)


def test_very_long_paths_are_stored(store: Store) -> None:
    deep = "/data/" + "/".join(["d" * 200] * 60) + "/" + "f" * 255  # about 12,000 bytes
    store.begin()
    store.add_file(ROOT, make_record(deep), 1.0)
    store.commit()
    stored = store.file_at(deep)
    assert stored is not None and stored.path == deep


def test_identity_and_datahash_lookups(store: Store) -> None:
    store.begin()
    a = store.add_file(ROOT, make_record("/data/a", ino=1, datahash=hashed(7)), 1.0)
    link = store.add_file(ROOT, make_record("/data/b", ino=1, datahash=hashed(7)), 1.0)
    copy = store.add_file(ROOT, make_record("/data/c", ino=2, datahash=hashed(7)), 1.0)
    other = store.add_file(ROOT, make_record("/data/d", ino=3, datahash=hashed(8)), 1.0)
    store.commit()
    assert [f.id for f in store.files_by_identity(1, 1)] == [a, link]
    assert [f.id for f in store.files_by_datahash(hashed(7))] == [a, link, copy]
    related = store.related_keys((1, 1), hashed(8))  # its hardlink, and a file of those bytes
    assert sorted(related) == [a, link, other]
    assert related[other] == FileKey((1, 3), hashed(8), 10, "host-a")
    assert sorted(store.related_keys(None, hashed(7))) == [a, link, copy]
    assert store.related_keys(None, None) == {}
    many = store.files_by_datahashes([hashed(8), hashed(9), hashed(7)])
    assert {h: [f.id for f in found] for h, found in many.items()} == {
        hashed(7): [a, link, copy],
        hashed(8): [other],
    }
    # Two names of one file are not duplicates; a second identity with the same bytes is.
    assert store.exact_datahashes() == [hashed(7)]
    store.begin()
    store.remove_file(copy, 2.0)
    store.commit()
    assert store.exact_datahashes() == []
    assert sorted(store.related_keys((1, 2), hashed(7))) == [a, link]  # live files only
    assert [f.id for f in store.files_by_id([other, a, 999])] == [other, a]


def test_a_listed_file_is_what_its_stored_record_says(store: Store) -> None:
    # The listing's lean read against the full one: every field, for a file with and without
    # its validators, its size read or not, blocks known or not, units in code order, a
    # tombstone, and a name that is not UTF-8.
    plain = make_record("/data/a", ino=1, data=b"\x01" * 8, text=b"\x02" * 8)
    unread = replace(make_record("/data/b", ino=2, size=77, data=b"\x03" * 8), filesize=None)
    blocks = replace(plain, path="/data/c", stat=FileStat(1, 3, 4096, 1, 2, 2, 9))
    bare = replace(make_record("/data/d", data=b"\x04" * 16), stat=None, mode=None)
    odd = make_record(os.fsdecode(b"/data/\xff-e"), ino=5)
    store.begin()
    ids = store.add_files(ROOT, [plain, unread, blocks, bare, odd], 1.0)
    store.remove_file(ids[-1], 2.0)
    store.commit()
    asked = [ids[3], 999, *ids]
    listed = store.listed_files(asked)
    assert listed == [ListedFile.of(f) for f in store.files_by_id(asked)]
    assert [f.id for f in listed] == [ids[3], *ids]
    first = listed[1]
    assert (first.size, first.allocated, first.identity) == (10, None, (1, 1))
    assert [u[0] for u in first.units] == [UnitType.TEXT, UnitType.DATA]
    assert first.code(UnitType.DATA) == "ISCC:GAA" + "01" * 8 and first.code(UnitType.META) is None
    assert (listed[2].size, listed[3].allocated, listed[4].identity) == (77, 9 * 512, None)
    assert (listed[4].size, listed[4].mode, listed[-1].live, first.live) == (10, None, False, True)
    assert store.listed_files([]) == []


def test_copies_listed_by_datahash_are_what_their_stored_records_say(store: Store) -> None:
    # Exact groups read their files as a listing shows them: the same files, in the same order,
    # as the full read by datahash; tombstones and datahashes no live file has left out.
    records = [
        make_record(f"/data/{i}", ino=i + 1, datahash=hashed(i % 3), data=bytes([i]) * 8)
        for i in range(7)
    ]
    store.begin()
    ids = store.add_files(ROOT, records, 1.0)
    store.remove_file(ids[2], 2.0)  # both copies of hashed(2) become tombstones
    store.remove_file(ids[5], 2.0)
    store.commit()
    asked = [hashed(0), hashed(1), hashed(2), hashed(9)]
    listed = store.listed_by_datahashes(asked, fleet=True)
    full = store.files_by_datahashes(asked, fleet=True)
    assert listed == {h: [ListedFile.of(f) for f in files] for h, files in full.items()}
    assert [f.id for f in listed[hashed(0)]] == [ids[0], ids[3], ids[6]]
    assert set(listed) == {hashed(0), hashed(1)}
    assert store.listed_by_datahashes([]) == {}


def test_a_copy_changed_while_copies_are_listed_is_listed_as_it_was_found(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another writer (a fleet's other host, the daemon beside a command) changes a copy's
    # content, and removes another, right after the listing's first statement: a file is
    # listed with the row that was found live with the datahash, never a row read later.
    store.begin()
    ids = store.add_files(
        ROOT, [make_record(f"/data/{i}", ino=i + 1, size=10, datahash=hashed(1)) for i in range(3)],
        1.0,
    )  # fmt: skip
    store.commit()
    first = store._exec  # type: ignore[attr-defined]
    changed: list[str] = []

    def exec_then_change(query: str, *args: object) -> object:
        result = first(query, *args)
        if not changed and "datahash" in query and query.startswith("SELECT"):
            changed.append(query)
            rows = result.fetchall()
            monkeypatch.setattr(store, "_exec", first)
            store.begin()
            edited = make_record("/data/0", ino=1, size=99, datahash=hashed(2))
            store.update_file(ids[0], ROOT, edited, 2.0)
            store.remove_file(ids[1], 2.0)
            store.commit()
            return _Rows(rows)
        return result

    monkeypatch.setattr(store, "_exec", exec_then_change)
    listed = store.listed_by_datahashes([hashed(1)], fleet=True)[hashed(1)]
    assert changed
    assert [(f.id, f.size, f.live) for f in listed] == [(i, 10, True) for i in ids]


class _Rows(list[object]):
    """Rows fetched already, as a cursor gives them."""

    def fetchall(self) -> list[object]:
        return list(self)


def test_many_new_files_at_once(store: Store) -> None:
    store.begin()
    before = store.add_file(ROOT, make_record("/data/a", ino=1, datahash=hashed(7)), 1.0)
    records = [
        make_record("/data/b", ino=1, datahash=hashed(8), data=b"\x01" * 8),
        make_record("/data/sub/c", ino=2, datahash=hashed(7), text=b"\x02" * 8),
        make_record("/data/d", ino=3, datahash=hashed(9)),
    ]
    ids = store.add_files(ROOT, records, 2.0)
    store.commit()
    assert ids == sorted(ids) and ids[0] > before and len(set(ids)) == 3
    assert [f.record for f in store.files_by_id(ids)] == records
    assert store.live_paths(["/data/a", "/data/x", "/data/sub/c", "/elsewhere/d"]) == {
        "/data/a",
        "/data/sub/c",
    }
    assert store.live_paths([]) == set()
    # At least what related_keys finds for each pair; the caller picks each file's own.
    many = store.related_keys_many([(1, 1), (1, 3)], [hashed(7)])
    assert {before, ids[0], ids[1], ids[2]} <= many.keys()
    assert many[ids[1]] == FileKey((1, 2), hashed(7), 10, "host-a")
    assert store.related_keys_many([], []) == {}
    store.begin()
    store.remove_file(before, 3.0)
    store.commit()
    assert before not in store.related_keys_many([(1, 1)], [hashed(7)])
    assert store.live_paths(["/data/a"]) == set()
    # Ids are never given again, not even the last ones once their files are forgotten.
    store.begin()
    store.remove_file(ids[2], 3.0)
    assert store.purge_tombstones(4.0) == 2
    again = store.add_files(ROOT, [make_record("/data/d"), make_record("/data/e")], 5.0)
    store.commit()
    assert ids[2] < again[0] < again[1]
    assert [f.path for f in store.files_by_id(again)] == ["/data/d", "/data/e"]


def test_a_job_of_more_new_files_than_one_statement_holds(store: Store) -> None:
    """A scan's job gathers several hundred files: stored in order, with their units, however
    many statements that takes."""
    records = [
        make_record(f"/data/d{n // 200}/f{n}", ino=n, datahash=hashed(n), data=n.to_bytes(8, "big"))
        for n in range(1, 1101)
    ]
    store.begin()
    ids = store.add_files(ROOT, records, 2.0)
    store.commit()
    assert ids == sorted(set(ids)) and len(ids) == len(records)
    assert [f.record for f in store.files_by_id(ids)] == records


def test_the_troubled_files_under_a_directory(store: Store) -> None:
    issue = FileIssue("read", IssueKind.ERROR, "permission denied", IssueCode.ACCESS)
    store.begin()
    store.add_file(ROOT, replace(make_record("/data/d/fine"), issues=()), 1.0)
    store.add_file(ROOT, replace(make_record("/data/d/bad", ino=2), issues=(issue,)), 1.0)
    store.add_file(ROOT, replace(make_record("/data/e/bad", ino=3), issues=(issue,)), 1.0)
    gone = store.add_file(ROOT, replace(make_record("/data/d/gone", ino=4), issues=(issue,)), 1.0)
    store.remove_file(gone, 2.0)
    store.commit()
    assert store.issues_under("/data/d") == [("/data/d/bad", (issue,))]
    assert [f.path for f in store.files_under("/data/d")] == ["/data/d/bad", "/data/d/fine"]
    assert store.issues_under("/data/d/bad") == [("/data/d/bad", (issue,))]
    assert store.issues_under("/data/d/fine") == []
    assert [path for path, _ in store.issues_under("/")] == ["/data/d/bad", "/data/e/bad"]


def test_only_the_files_with_actionable_issues_are_read_when_asked(store: Store) -> None:
    """An error or a missing tool is actionable; a skip, a warning, or an issue whose other
    fields are those words is not (the database's filter, on the JSON text, is a first pass)."""
    error = FileIssue("read", IssueKind.ERROR, "permission denied", IssueCode.ACCESS)
    missing = FileIssue("audio", IssueKind.SKIPPED, "fpcalc not found", IssueCode.TOOL_MISSING)
    skip = FileIssue("mediatype", IssueKind.SKIPPED, "no Content-Code", IssueCode.UNSUPPORTED)
    worded = FileIssue("error", IssueKind.WARNING, "tool_missing", IssueCode.INVALID)
    issues = {"a": (skip, error), "b": (missing,), "c": (skip,), "d": (worded,), "e": ()}
    store.begin()
    for ino, (name, found) in enumerate(issues.items(), start=1):
        store.add_file(ROOT, replace(make_record(f"/data/x/{name}", ino=ino), issues=found), 1.0)
    store.commit()
    assert store.issues_under("/data/x", actionable=True) == [
        ("/data/x/a", (skip, error)),
        ("/data/x/b", (missing,)),
    ]
    assert [p for p, _ in store.issues_under("/data/x")] == [f"/data/x/{n}" for n in "abcd"]
    assert store.issues_under("/data/x/c", actionable=True) == []


def test_live_files_by_size(store: Store) -> None:
    store.begin()
    ids = [
        store.add_file(ROOT, make_record(f"/data/{size}", ino=size + 1, size=size), 1.0)
        for size in (0, 1, 99, 100, 5000)
    ]
    unread = replace(make_record("/data/unread", ino=9, size=50), filesize=None)
    ids.append(store.add_file(ROOT, unread, 1.0))  # the validators' size counts then
    store.remove_file(ids[2], 2.0)
    store.commit()
    assert store.ids_by_size(0, 1) == [ids[0]]
    assert store.ids_by_size(1, 100) == [ids[1], ids[5]]  # 99 is a tombstone
    assert store.ids_by_size(100, 10**9) == [ids[3], ids[4]]
    assert store.ids_by_size(5, 5) == []


def test_a_move_keeps_the_id_and_units_and_refreshes_validators(store: Store) -> None:
    store.begin()
    file_id = store.add_file(ROOT, make_record("/data/a", data=b"\x05" * 8), 1.0)
    moved = FileStat(1, 100, 10, 1_000, 9_999, 1)
    store.move_file(file_id, "/other", "/other/dir/b", moved)
    store.commit()
    assert store.file_at("/data/a") is None
    stored = store.file_at("/other/dir/b")
    assert stored is not None
    assert (stored.id, stored.root, stored.record.stat) == (file_id, "/other", moved)
    assert stored.record.unit(UnitType.DATA) is not None
    assert store.validators_in_dir("/other/dir") == {"b": moved}
    assert store.validators_in_dir("/data") == {}


def test_removal_leaves_a_tombstone_until_purged(store: Store) -> None:
    store.begin()
    old = store.add_file(ROOT, make_record("/data/a", ino=1), 1.0)
    store.remove_file(old, 10.0)
    new = store.add_file(ROOT, make_record("/data/a", ino=2), 11.0)
    store.remove_file(new, 20.0)
    store.commit()
    assert store.file_at("/data/a") is None
    assert [(t.id, t.removed_at) for t in store.tombstones_at("/data/a")] == [
        (new, 20.0),
        (old, 10.0),
    ]
    assert store.files_under("/data") == []
    assert [f.live for f in store.files_by_id([old])] == [False]
    store.begin()
    assert store.purge_tombstones(before=15.0) == 1
    store.commit()
    assert [t.id for t in store.tombstones_at("/data/a")] == [new]


def test_directory_queries_respect_path_boundaries(store: Store) -> None:
    store.begin()
    for i, path in enumerate(["/data/a/x", "/data/a/sub/y", "/data/a0/z", "/data/ab/w", "/data/a"]):
        store.add_file(ROOT, make_record(path, ino=i), 1.0)
    store.commit()
    assert sorted(store.validators_in_dir("/data/a")) == ["x"]
    assert store.dirs_under("/data/a") == ["/data/a", "/data/a/sub"]
    # "/data/a" is a file here as well as a directory of others: both count, by directory.
    under = [f.path for f in store.files_under("/data/a")]
    assert under == ["/data/a", "/data/a/x", "/data/a/sub/y"]
    assert {f.path for f in store.files_under("/data/a/x")} == {"/data/a/x"}
    assert store.dirs_under("/") == ["/data", "/data/a", "/data/a/sub", "/data/a0", "/data/ab"]


def test_near_relations_are_symmetric_and_die_with_the_file(store: Store) -> None:
    store.begin()
    a, b, c = (
        store.add_file(ROOT, make_record(f"/data/{n}", ino=i), 1.0) for i, n in enumerate("abc")
    )
    store.add_near([NearPair.of(b, a, UnitType.DATA, 3), NearPair.of(a, c, UnitType.TEXT, 9)])
    store.add_near([NearPair.of(a, b, UnitType.DATA, 2)])  # an update, not a second row
    store.commit()
    assert store.near_of(a) == [NearPair(a, b, UnitType.DATA, 2), NearPair(a, c, UnitType.TEXT, 9)]
    assert store.near_of(b) == [NearPair(a, b, UnitType.DATA, 2)]
    store.begin()
    store.remove_near([NearPair(a, c, UnitType.TEXT, 0)])
    store.remove_file(b, 2.0)
    store.commit()
    assert store.near_of(a) == []
    assert list(store.near_pairs()) == []


def test_event_sequence_numbers_only_grow(store: Store) -> None:
    assert (store.last_seq(), store.first_seq()) == (0, 1)
    store.begin()
    seqs = [
        store.append_event(EventType.FILE_ADDED, ROOT, f"/data/{i}", {"i": i}, float(i)).seq
        for i in range(5)
    ]
    store.commit()
    assert seqs == sorted(seqs) and len(set(seqs)) == 5
    assert [e.data["i"] for e in store.events_since(seqs[1])] == [2, 3, 4]
    assert [e.seq for e in store.events_since(0, limit=2)] == seqs[:2]
    store.begin()
    assert store.purge_events(before=10.0) == 5
    store.commit()
    assert store.events_since(0) == []
    assert store.last_seq() == seqs[-1]
    assert store.first_seq() == seqs[-1] + 1
    store.begin()
    later = store.append_event(EventType.SCAN_DONE, ROOT, "", {}, 11.0)
    store.commit()
    assert later.seq > seqs[-1]  # never reused, even after the log was emptied
    assert store.first_seq() == later.seq


def test_events_logged_together_are_those_logged_one_by_one(store: Store) -> None:
    data = {"unit": UnitType.DATA, "pair": (1, 2), "name": "é"}
    store.begin()
    first = store.append_event(EventType.SCAN_DONE, ROOT, "", {}, 1.0)
    together = store.append_events(
        [
            NewEvent(EventType.FILE_ADDED, ROOT, "/data/a", data, 2.0),
            NewEvent(EventType.DUP_EXACT, ROOT, "/data/b", {"n": 1}, 3.0),
            NewEvent(EventType.FILE_ERROR, ROOT, "/data/c", {}, 4.0),
        ]
    )
    after = store.append_event(EventType.SCAN_DONE, ROOT, "", {}, 5.0)
    store.commit()
    assert [e.seq for e in together] == [first.seq + 1, first.seq + 2, first.seq + 3]
    assert after.seq == first.seq + 4
    assert [(e.type, e.path, e.time) for e in together] == [
        (EventType.FILE_ADDED, "/data/a", 2.0),
        (EventType.DUP_EXACT, "/data/b", 3.0),
        (EventType.FILE_ERROR, "/data/c", 4.0),
    ]
    # What a subscriber reads back: enum members as their values, tuples as lists.
    assert together[0].data == {"unit": "data", "pair": [1, 2], "name": "é"}
    assert store.events_since(first.seq, limit=3) == together
    store.begin()
    assert store.append_events([]) == []
    # More than one statement's worth, in order.
    many = [NewEvent(EventType.FILE_ADDED, ROOT, f"/data/{i}", {"i": i}, 6.0) for i in range(401)]
    logged = store.append_events(many)
    last = store.append_event(EventType.SCAN_DONE, ROOT, "", {}, 7.0)
    store.commit()
    assert [e.seq for e in logged] == list(range(after.seq + 1, after.seq + 402))
    assert last.seq == after.seq + 402
    assert store.events_since(after.seq, limit=1000)[:-1] == logged
    assert [e.data["i"] for e in logged] == list(range(401))


def test_a_rolled_back_unit_of_work_leaves_no_trace(store: Store) -> None:
    store.begin()
    kept = store.add_file(ROOT, make_record("/data/kept", ino=1), 1.0)
    first = store.append_event(EventType.FILE_ADDED, ROOT, "/data/kept", {}, 1.0)
    store.savepoint()
    gone = store.add_file(ROOT, make_record("/data/gone", ino=2, datahash=hashed(3)), 1.0)
    store.add_near([NearPair.of(kept, gone, UnitType.DATA, 1)])
    store.move_file(kept, ROOT, "/data/renamed", FileStat(1, 1, 10, 1, 1))
    store.append_event(EventType.FILE_ADDED, ROOT, "/data/gone", {}, 1.0)
    store.rollback_to()
    store.savepoint()
    store.append_event(EventType.FILE_CHANGED, ROOT, "/data/kept", {}, 1.0)
    store.release()
    store.commit()
    assert store.file_at("/data/gone") is None and store.files_by_datahash(hashed(3)) == []
    assert store.file_at("/data/kept") is not None and store.file_at("/data/renamed") is None
    assert store.near_of(kept) == []
    assert [e.type for e in store.events_since(0)] == [EventType.FILE_ADDED, EventType.FILE_CHANGED]
    assert store.events_since(0)[0].seq == first.seq


def test_a_profile_read_back_after_a_rollback_is_the_one_stored(store: Store) -> None:
    # A rolled-back profile's row id is taken again by the next new profile: what was read
    # under the old id must not be taken for the new one.
    store.begin()
    store.savepoint()
    store.add_file(ROOT, make_record("/data/a", ino=1, data=b"\x01" * 8, profile="p/1"), 1.0)
    assert [u.profile for u in store.file_at("/data/a").record.units] == ["p/1"]  # type: ignore[union-attr]
    store.rollback_to()
    store.add_file(ROOT, make_record("/data/b", ino=2, data=b"\x02" * 8, profile="p/2"), 1.0)
    store.commit()
    assert [u.profile for u in store.file_at("/data/b").record.units] == ["p/2"]  # type: ignore[union-attr]


def test_rollback_undoes_the_whole_transaction(store: Store) -> None:
    store.begin()
    store.add_file(ROOT, make_record("/data/a"), 1.0)
    store.commit()
    store.begin()
    store.add_file(ROOT, make_record("/data/b", ino=2), 1.0)
    store.remove_file(store.file_at("/data/a").id, 2.0)  # type: ignore[union-attr]
    store.append_event(EventType.FILE_REMOVED, ROOT, "/data/a", {}, 2.0)
    store.rollback()
    assert store.file_at("/data/b") is None
    assert store.file_at("/data/a") is not None
    assert store.events_since(0) == [] and store.last_seq() == 0


def test_stale_units_follow_the_profile_predicate(store: Store) -> None:
    store.begin()
    old = store.add_file(
        ROOT,
        make_record("/data/old", ino=1, data=b"1" * 8, text=b"2" * 8, profile="iscc/1.4 bits/64"),
        1.0,
    )
    store.add_file(ROOT, make_record("/data/new", ino=2, data=b"1" * 8, text=b"2" * 8), 1.0)
    store.add_file(
        ROOT, make_record("/else/old", ino=3, data=b"1" * 8, profile="iscc/1.4 bits/64"), 1.0
    )
    store.commit()
    [stale] = store.stale_units(lambda profile: "iscc/1.4" in profile, under="/data")
    assert stale.file.id == old and stale.units == {UnitType.DATA, UnitType.TEXT}
    [text_only] = store.stale_units(
        lambda profile: profile.endswith("t/1") and "1.4" in profile, "/"
    )
    assert text_only.units == {UnitType.TEXT}


def test_unit_codes_come_in_chunks_without_tombstones(store: Store) -> None:
    store.begin()
    ids = [
        store.add_file(ROOT, make_record(f"/data/{i}", ino=i, data=bytes([i]) * 8), 1.0)
        for i in range(7)
    ]
    store.remove_file(ids[3], 2.0)
    store.commit()
    chunks = list(store.unit_codes(UnitType.DATA, chunk=2))
    assert [(len(c), len(packed)) for c, packed in chunks] == [(2, 16)] * 3
    assert [fid for c, _ in chunks for fid in c] == [i for n, i in enumerate(ids) if n != 3]
    assert chunks[0][1][:8] == b"\x00" * 8 and chunks[0][1][8:] == b"\x01" * 8
    assert list(store.unit_codes(UnitType.IMAGE)) == []


def test_unit_codes_are_the_first_64_bits_of_each_digest(store: Store) -> None:
    digests = [bytes(range(16)), b"\xff" * 8, b"\xab\xcd"]  # longer, exact, shorter
    store.begin()
    ids = [
        store.add_file(ROOT, make_record(f"/data/{i}", ino=i, data=d), 1.0)
        for i, d in enumerate(digests)
    ]
    store.commit()
    [(found, packed)] = list(store.unit_codes(UnitType.DATA))
    assert found == ids
    assert codes64(packed).tolist() == [code64(d) for d in digests]
    assert packed == bytes(range(8)) + b"\xff" * 8 + b"\xab\xcd" + b"\0" * 6


def test_unit_codes_leave_out_runs_of_tombstones_and_keep_chunks_full(store: Store) -> None:
    store.begin()
    ids = [
        store.add_file(ROOT, make_record(f"/data/{i}", ino=i, data=bytes([i]) * 8), 1.0)
        for i in range(20)
    ]
    dead = {0, 4, 5, 6, 7, 8, 12, 19}  # the first, a run across chunks, one alone, the last
    for n in sorted(dead):
        store.remove_file(ids[n], 2.0)
    store.commit()
    chunks = list(store.unit_codes(UnitType.DATA, chunk=3))
    assert [len(c) for c, _ in chunks] == [3, 3, 3, 3]
    live = [n for n in range(20) if n not in dead]
    assert [fid for c, _ in chunks for fid in c] == [ids[n] for n in live]
    assert b"".join(packed for _, packed in chunks) == b"".join(bytes([n]) * 8 for n in live)


def test_folder_files_come_in_chunks_with_their_places_and_without_tombstones(
    store: Store,
) -> None:
    store.begin()
    ids = [
        store.add_file(ROOT, make_record(f"/data/{d}/f{i}", ino=10 + i, size=100 + i,
                                         datahash=hashed(i) if i != 4 else None), 1.0)
        for i, d in enumerate(["a", "a", "a/b", "c", "c"])
    ]  # fmt: skip
    store.remove_file(ids[1], 2.0)
    store.commit()
    chunks = list(store.folder_files(chunk=2))
    assert [len(c) for c in chunks] == [2, 2]
    found = [f for c in chunks for f in c]
    assert [f.id for f in found] == [ids[0], ids[2], ids[3], ids[4]]
    first = found[0]
    assert (first.host, first.root, first.dir, first.name) == ("host-a", ROOT, "/data/a", "f0")
    assert (first.size, first.datahash, first.identity) == (100, bytes.fromhex(hashed(0)), (1, 10))
    assert [(f.dir, f.name) for f in found[1:]] == [("/data/a/b", "f2"), ("/data/c", "f3"),
                                                     ("/data/c", "f4")]  # fmt: skip
    assert found[3].datahash is None


def test_an_update_replaces_the_record(store: Store) -> None:
    store.begin()
    file_id = store.add_file(ROOT, make_record("/data/a", data=b"1" * 8, datahash=hashed(1)), 1.0)
    changed = replace(make_record("/data/a", data=b"9" * 8, datahash=hashed(2)), issues=())
    store.update_file(file_id, ROOT, changed, 3.0)
    store.commit()
    stored = store.file_at("/data/a")
    assert stored is not None and stored.record == changed and stored.indexed_at == 3.0
    assert store.files_by_datahash(hashed(1)) == []


def test_the_sqlite_store_survives_reopening(tmp_path: Path) -> None:
    url = state_url(tmp_path)
    store = open_store(url)
    store.begin()
    store.add_file(ROOT, make_record("/data/a", datahash=hashed(1)), 1.0)
    store.append_event(EventType.FILE_ADDED, ROOT, "/data/a", {}, 1.0)
    store.commit()
    store.close()
    store.close()  # idempotent
    again = open_store(url)
    try:
        assert again.file_at("/data/a") is not None and again.last_seq() == 1
    finally:
        again.close()


def test_file_keys_and_digests_read_only_what_duplicate_decisions_need(store: Store) -> None:
    store.begin()
    a = store.add_file(
        ROOT, make_record("/data/a", ino=1, datahash=hashed(1), data=b"\x01" * 32), 1.0
    )
    b = store.add_file(ROOT, make_record("/data/b", ino=2, size=7, text=b"\x02" * 8), 1.0)
    gone = store.add_file(ROOT, make_record("/data/c", ino=3, data=b"\x03" * 8), 1.0)
    store.remove_file(gone, 2.0)
    store.commit()
    keys = store.file_keys([b, a, gone, 999])
    assert keys == {
        a: FileKey((1, 1), hashed(1), 10, "host-a"),
        b: FileKey((1, 2), None, 7, "host-a"),
    }
    assert store.unit_digests_of([a, b, gone], UnitType.DATA) == {a: b"\x01" * 32}


def test_near_counts_are_per_file_and_unit_type(store: Store) -> None:
    store.begin()
    a, b, c = (
        store.add_file(ROOT, make_record(f"/data/{n}", ino=i), 1.0) for i, n in enumerate("abc")
    )
    store.add_near([NearPair.of(a, b, UnitType.DATA, 3), NearPair.of(c, a, UnitType.DATA, 1)])
    store.add_near([NearPair.of(a, c, UnitType.TEXT, 9)])
    store.commit()
    assert store.near_counts([a, b, c, 999], UnitType.DATA) == {a: 2, b: 1, c: 1}
    assert store.near_counts([b, a], UnitType.TEXT) == {a: 1}
    # Both ends asked: each pair listed once for each of its files.
    assert store.near_of_many([a, c, 999], UnitType.DATA) == {
        a: [NearPair.of(a, b, UnitType.DATA, 3), NearPair.of(a, c, UnitType.DATA, 1)],
        c: [NearPair.of(a, c, UnitType.DATA, 1)],
    }
    assert store.near_of_many([b], UnitType.TEXT) == {}


def test_the_farthest_relations_are_read_as_many_as_asked_farthest_first(store: Store) -> None:
    store.begin()
    a, b, c, d, e = (
        store.add_file(ROOT, make_record(f"/data/{n}", ino=i), 1.0) for i, n in enumerate("abcde")
    )
    data = UnitType.DATA
    store.add_near([
        NearPair.of(c, a, data, 2), NearPair.of(c, b, data, 5), NearPair.of(c, d, data, 5),
        NearPair.of(c, e, data, 1), NearPair.of(a, b, data, 4), NearPair.of(c, a, UnitType.TEXT, 9),
    ])  # fmt: skip
    store.commit()
    # Farthest first, ties by the other file's id (b before d), whichever end of a pair the
    # file is; a file asked for none, or without any, is left out.
    assert store.farthest_near({c: 3, a: 1, b: 0, 999: 2}, data) == {
        c: [NearPair.of(c, b, data, 5), NearPair.of(c, d, data, 5), NearPair.of(c, a, data, 2)],
        a: [NearPair.of(a, b, data, 4)],
    }
    # More than it has: all of them, in the same order.
    assert store.farthest_near({b: 5}, data) == {
        b: [NearPair.of(b, c, data, 5), NearPair.of(a, b, data, 4)]
    }
    assert store.farthest_near({c: 2}, UnitType.TEXT) == {c: [NearPair.of(a, c, UnitType.TEXT, 9)]}
