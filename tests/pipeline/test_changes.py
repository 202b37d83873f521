"""The pipeline on real files and a real SQLite store: what each change on disk becomes in the
index and in the event log.

The files hash with :class:`~tests.pipeline.harness.FamilyHasher`'s designed codes, so the
expected relations follow from the file contents by construction.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from isccd.beneath import RootDir
from isccd.errors import StoreFullError
from isccd.match import Thresholds
from isccd.model import EventType, FileRecord, UnitType
from isccd.pipeline import PipelineOptions
from isccd.results import SimilarQuery
from isccd.store import SqliteOptions
from tests.pipeline.harness import (
    PAD,
    FamilyHasher,
    Harness,
    kinds,
    not_coded,
    others,
    pairs,
)
from tests.schemas import validator


def test_a_scan_announces_files_and_exact_duplicates(h: Harness) -> None:
    h.write("a", "A:0")
    h.write("sub/copy", "A:0")
    h.write("b", "B:0")
    events = h.scan()
    assert Counter(t for t, _ in kinds(events)) == {"file.added": 3, "dup.exact": 1, "scan.done": 1}
    [dup] = [e for e in events if e.type is EventType.DUP_EXACT]
    assert {dup.path.rsplit("/", 1)[-1], *others(dup)} == {"a", "copy"}
    assert (dup.data["unit"], dup.data["distance"], dup.data["threshold"]) == ("instance", 0, 0)
    assert dup.data["iscc"] and dup.root == str(h.root)
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert all(e.time > 1_000_000 for e in events)  # the injected clock
    [group] = h.dupes()
    assert group.kind == "exact" and group.reclaimable_size == 3
    assert group.reclaimable == Path(group.members[1].path).stat().st_blocks * 512
    assert sorted(m.path for m in group.members) == [h.p("a"), h.p("sub/copy")]


def test_hardlinks_are_hashed_once_and_never_reported_as_duplicates(h: Harness) -> None:
    h.write("a", "A:0")
    (h.root / "link").hardlink_to(h.root / "a")
    events = h.scan()
    assert sorted(kinds(events)) == [("file.added", "a"), ("file.added", "link"), ("scan.done", "")]
    assert sum(h.hasher.calls.values()) == 1
    added = {e.path: e for e in events if e.type is EventType.FILE_ADDED}
    second = added[h.p("link")] if h.p("a") in h.hasher.calls else added[h.p("a")]
    assert second.data["links"] in ([h.p("a")], [h.p("link")])
    assert h.dupes(near=True) == ()
    info = h.get(h.p("a"))
    assert info is not None and info.links == (h.p("link"),) and info.duplicates == ()
    # A later hardlink changes the file's ctime (its link count), so the validators ask for one
    # more read, but one for all three names; no duplicate is reported.
    (h.root / "late").hardlink_to(h.root / "a")
    assert kinds(h.scan()) == [("file.added", "late"), ("scan.done", "")]
    assert sum(h.hasher.calls.values()) == 2


def test_a_rename_keeps_the_codes_and_is_not_rehashed(h: Harness) -> None:
    h.write("a", "A:0")
    h.write("copy", "A:0")
    h.scan()
    calls = sum(h.hasher.calls.values())
    (h.root / "elsewhere").mkdir()
    (h.root / "a").rename(h.root / "elsewhere" / "renamed")
    events = h.scan()
    assert kinds(events) == [("file.moved", "renamed"), ("scan.done", "")]
    assert events[0].data["from"] == h.p("a")
    assert sum(h.hasher.calls.values()) == calls
    [group] = h.dupes()
    assert sorted(m.path for m in group.members) == [h.p("copy"), h.p("elsewhere/renamed")]


def test_a_file_written_to_then_renamed_before_the_write_was_seen_is_hashed_again(
    h: Harness,
) -> None:
    h.write("a", "A:0")
    h.scan()
    h.write("a", "A:12")  # its event still settling when the rename comes
    (h.root / "a").rename(h.root / "b")
    moved = h.run(h.pipeline.move_path(h.p("a"), str(h.root), h.p("b")))
    assert kinds(moved) == [("file.moved", "b")]
    # The write is found, by the write's own event (settled under the new name) or, if the
    # daemon was killed meanwhile, by the next reconcile.
    changed = h.scan()
    assert kinds(changed) == [("file.changed", "b"), ("scan.done", "")]
    info = h.get(h.p("b"))
    assert info is not None
    assert info.datahash == h.run(h.hasher(str(h.root), h.p("b"), None)).datahash


def test_a_removal_leaves_a_tombstone_and_resolves_duplicates(h: Harness) -> None:
    h.write("a", "A:0")
    h.write("copy", "A:0")
    h.write("near", "A:2")
    h.scan()
    (h.root / "copy").unlink()
    events = h.scan()
    assert [t for t, _ in kinds(events)] == [
        "file.removed",
        "dup.resolved",
        "dup.resolved",
        "scan.done",
    ]
    exact, near = events[1], events[2]
    assert (exact.data["kind"], exact.data["reason"], others(exact)) == ("exact", "removed", ["a"])
    assert (near.data["kind"], near.data["unit"], others(near)) == ("near", "data", ["near"])
    assert h.dupes() == ()
    info = h.get(h.p("copy"))
    assert info is not None and info.removed is not None


def test_near_duplicates_begin_change_and_end(h: Harness) -> None:
    h.write("a", "A:0")
    h.write("b", "A:3")
    events = h.scan()
    [near] = [e for e in events if e.type is EventType.DUP_NEAR]
    found = [near.data[k] for k in ("unit", "distance", "threshold", "bits")]
    assert found == ["data", 3, 8, 64]
    assert near.data["code"] and near.data["iscc"]
    [other] = near.data["others"]  # what it is near, and how near: its codes are a get away
    [named] = {h.p("a"), h.p("b")} - {near.path}
    assert other == {"path": named, "root": str(h.root), "host": other["host"], "links": [],
                     "distance": 3}  # fmt: skip
    validator("defs", "#/$defs/near_ref").validate(other)  # the published shape
    h.write("b", "A:9")  # 9 bits from A:0: beyond the Data threshold of 8
    events = h.scan()
    assert [t for t, _ in kinds(events)] == ["file.changed", "dup.resolved", "scan.done"]
    assert events[0].data["previous"]["datahash"] != events[0].data["datahash"]
    assert (events[1].data["kind"], events[1].data["reason"]) == ("near", "changed")
    h.write("c", "A:5")  # near both: 5 from A:0, 4 from A:9
    events = h.scan()
    [near] = [e for e in events if e.type is EventType.DUP_NEAR]
    assert sorted((o["path"][-1], o["distance"]) for o in near.data["others"]) == [
        ("a", 5),
        ("b", 4),
    ]
    [group] = h.dupes(near=True)
    assert group.kind == "near" and len(group.members) == 3
    # c, near both others (a-b, 9, is no relation), is the centre: a 5 bits from it, b 4.
    assert [(m.path[-1], m.distance) for m in group.members] == [("c", 0), ("b", 4), ("a", 5)]


def test_new_thresholds_are_applied_to_stored_relations(h: Harness) -> None:
    h.write("a", "A:0")
    h.write("b", "A:3")
    h.scan()
    events = h.adopt(Thresholds(data=2))
    assert [(e.type.value, e.data["reason"]) for e in events] == [("dup.resolved", "threshold")]
    events = h.adopt(Thresholds(data=3))
    assert [(e.type.value, e.data["distance"]) for e in events] == [("dup.near", 3)]


def test_empty_files_are_indexed_but_never_duplicates(h: Harness) -> None:
    h.write("pkg/__init__.py", "")
    h.write("other/__init__.py", "")
    h.write("one", "A")  # one byte: reported by default
    h.write("same", "A")
    events = h.scan()
    assert Counter(t for t, _ in kinds(events)) == {"file.added": 4, "dup.exact": 1, "scan.done": 1}
    [dup] = [e for e in events if e.type is EventType.DUP_EXACT]
    assert {dup.path.rsplit("/", 1)[-1], *others(dup)} == {"one", "same"}
    [group] = h.dupes(near=True)
    assert sorted(m.path for m in group.members) == [h.p("one"), h.p("same")]
    info = h.get(h.p("pkg/__init__.py"))
    assert info is not None and info.removed is None and info.units and info.duplicates == ()
    query = SimilarQuery(path=h.p("pkg/__init__.py"))
    assert h.run(h.pipeline.similar(query, not_coded)).matches == ()
    # Its other names are still known, and never hashed again.
    (h.root / "pkg" / "link.py").hardlink_to(h.root / "pkg" / "__init__.py")
    assert kinds(h.scan()) == [("file.added", "link.py"), ("scan.done", "")]
    matches = h.run(h.pipeline.similar(query, not_coded)).matches
    assert [(m.path, m.relation.value) for m in matches] == [(h.p("pkg/link.py"), "hardlink")]


def test_files_below_min_size_are_not_reported(tmp_path: Path) -> None:
    h = Harness(tmp_path, options=PipelineOptions(thresholds=Thresholds(min_size=100)))
    try:
        for name, text in (("a", "A:0"), ("copy", "A:0"), ("near", "A:3")):
            h.write(name, text)
        for name, text in (("big", "B:0"), ("big_copy", "B:0"), ("big_near", "B:3")):
            h.write(name, text + PAD)
        events = h.scan()
        reported = [e for e in events if e.type in (EventType.DUP_EXACT, EventType.DUP_NEAR)]
        assert {e.type for e in reported} == {EventType.DUP_EXACT, EventType.DUP_NEAR}
        for event in reported:
            assert {event.path.rsplit("/", 1)[-1], *others(event)} <= {
                "big",
                "big_copy",
                "big_near",
            }
        groups = h.dupes(near=True)
        assert sorted(g.kind for g in groups) == ["exact", "near"]
        assert all(m.size and m.size > 100 for g in groups for m in g.members)
        assert h.get(h.p("copy")).duplicates == ()  # type: ignore[union-attr]
    finally:
        h.close()


def test_a_new_min_size_resolves_and_finds_duplicates_once_per_group(h: Harness) -> None:
    for name in ("a", "b", "c"):
        h.write(name, "A:0")  # three copies of 3 bytes
    h.write("near", "A:3")  # near all three
    h.write("big", "B:0" + PAD)
    h.write("big_copy", "B:0" + PAD)
    h.scan()
    before = h.dupes(near=True)

    events = h.adopt(Thresholds(min_size=100))
    assert {(e.type.value, e.data["reason"]) for e in events} == {("dup.resolved", "threshold")}
    # The group of copies ends in one event, by one of them, naming the other two.
    [exact] = [e for e in events if e.data["kind"] == "exact"]
    assert exact.data["count"] == 2
    assert {exact.path.rsplit("/", 1)[-1], *others(exact)} == {"a", "b", "c"}
    near = [e for e in events if e.data["kind"] == "near"]
    assert pairs(near) == {("a", "near"), ("b", "near"), ("c", "near")}
    [group] = h.dupes(near=True)
    assert sorted(m.path for m in group.members) == [h.p("big"), h.p("big_copy")]

    events = h.adopt(Thresholds())
    [exact] = [e for e in events if e.type is EventType.DUP_EXACT]
    assert {exact.path.rsplit("/", 1)[-1], *others(exact)} == {"a", "b", "c"}
    near = [e for e in events if e.type is EventType.DUP_NEAR]
    assert len(events) == 1 + len(near)
    assert pairs(near) == {("a", "near"), ("b", "near"), ("c", "near")}
    assert h.dupes(near=True) == before


def test_touching_a_file_updates_its_validators_silently(h: Harness) -> None:
    path = h.write("a", "A:0")
    h.scan()
    os.utime(path, ns=(1, 1))
    assert kinds(h.scan()) == [("scan.done", "")]
    assert h.hasher.calls[str(path)] == 2
    h.scan()
    assert h.hasher.calls[str(path)] == 2  # validators were stored: not read again


def test_a_changing_file_is_retried_with_backoff_then_reported(h: Harness) -> None:
    settles = h.write("settles", "A:0")
    restless = h.write("restless", "B:0")
    h.hasher.unstable = {str(settles): 2, str(restless): 99}
    events = h.scan()
    assert ("file.added", "settles") in kinds(events)
    [unstable] = [e for e in events if e.type is EventType.FILE_UNSTABLE]
    assert unstable.path == str(restless) and unstable.data["attempts"] == 4
    assert h.hasher.calls[str(restless)] == 4 and h.hasher.calls[str(settles)] == 3
    # Two retries for one file, three for the other, each waiting twice as long as before.
    assert sorted(h.delays) == [0.5, 0.5, 1.0, 1.0, 2.0]
    assert h.get(str(restless)) is None  # nothing from a changing file is stored
    h.hasher.unstable.clear()
    assert ("file.added", "restless") in kinds(h.scan())


def test_an_unreadable_file_is_recorded_once_and_retried_when_it_changes(h: Harness) -> None:
    path = h.write("locked", "A:0")
    h.hasher.unreadable.add(str(path))
    events = h.scan()
    assert [t for t, _ in kinds(events)] == ["file.added", "file.error", "scan.done"]
    assert events[1].data["issues"][0]["code"] == "access"
    assert kinds(h.scan()) == [("scan.done", "")]
    h.hasher.unreadable.clear()
    path.write_text("A:1")
    assert [t for t, _ in kinds(h.scan())] == ["file.changed", "scan.done"]


def test_the_log_replays_exactly_what_was_committed(h: Harness) -> None:
    h.write("a", "A:0")
    h.write("b", "A:0")
    h.scan()
    middle = h.committed[2].seq
    (h.root / "b").unlink()
    h.scan()
    logged = h.run(h.pipeline.events_since(0))
    assert logged == h.committed
    assert h.run(h.pipeline.events_since(middle)) == h.committed[3:]
    assert h.run(h.pipeline.last_seq()) == h.committed[-1].seq
    assert h.run(h.pipeline.log_bounds()) == (h.committed[0].seq, h.committed[-1].seq)


def test_watcher_changes_are_applied_one_path_at_a_time(h: Harness) -> None:
    root = str(h.root)
    a = h.write("dir/a", "A:0")
    h.write("dir/b", "B:0")
    assert kinds(h.run(h.pipeline.process_path(root, str(a)))) == [("file.added", "a")]
    assert h.run(h.pipeline.process_path(root, str(a))) == []  # unchanged
    # A directory reported by a watcher is reconciled (b is found).
    assert ("file.added", "b") in kinds(h.run(h.pipeline.process_path(root, h.p("dir"))))
    (h.root / "dir").rename(h.root / "moved")
    moved = h.run(h.pipeline.move_path(h.p("dir"), root, h.p("moved")))
    assert sorted(kinds(moved)) == [("file.moved", "a"), ("file.moved", "b")]
    (h.root / "moved" / "a").unlink()
    assert kinds(h.run(h.pipeline.process_path(root, h.p("moved/a")))) == [("file.removed", "a")]
    assert kinds(h.run(h.pipeline.remove_path(h.p("moved")))) == [("file.removed", "b")]
    assert h.hasher.calls[str(a)] == 1


class OwnerThreadDisk:
    """Records every look at the tree made on the store's owner thread: a hung ``stat`` there (a
    network file system) would stall every commit."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, tree: Path) -> None:
        self.tree = str(tree)
        self.seen: list[str] = []
        for name in ("lstat", "stat", "scandir", "open"):
            monkeypatch.setattr(os, name, self._watch(name, getattr(os, name)))
        monkeypatch.setattr(RootDir, "open", self._watch("RootDir.open", RootDir.open, 1))

    def _watch(self, name: str, real: Callable[..., Any], at: int = 0) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            path = args[at] if len(args) > at else None
            if (
                threading.current_thread().name == "isccd-store"
                and isinstance(path, str)
                and path.startswith(self.tree)
            ):
                self.seen.append(f"{name}({path})")
            return real(*args, **kwargs)

        return watched


def test_the_disk_is_looked_at_off_the_store_thread(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(h.root)
    a = h.write("dir/a", "A:0")
    h.write("dir/b", "B:0")
    gone = h.write("gone", "C:0")
    for path in (a, h.root / "dir" / "b", gone):
        h.run(h.pipeline.process_path(root, str(path)))
    disk = OwnerThreadDisk(monkeypatch, h.root)
    (h.root / "dir").rename(h.root / "moved")
    moved = h.run(h.pipeline.move_path(h.p("dir"), root, h.p("moved")))
    assert sorted(kinds(moved)) == [("file.moved", "a"), ("file.moved", "b")]
    (h.root / "moved" / "a").rename(h.root / "renamed")  # seen as a new path only
    renamed = h.run(h.pipeline.process_path(root, h.p("renamed")))
    assert kinds(renamed) == [("file.moved", "renamed")]
    (h.root / "link").hardlink_to(h.root / "renamed")
    assert kinds(h.run(h.pipeline.process_path(root, h.p("link")))) == [("file.added", "link")]
    # A file that could not be opened and is gone by then is removed, not kept as unreadable.
    gone.write_text("C:1")
    h.hasher.vanishing.add(str(gone))
    assert kinds(h.run(h.pipeline.process_path(root, str(gone)))) == [("file.removed", "gone")]
    # A reconcile walks the tree on a thread of its own, and places what it found on the store's.
    (h.root / "moved" / "b").rename(h.root / "again")
    h.write("moved/new", "D:0")
    assert sorted(kinds(h.scan())) == [
        ("file.added", "new"),
        ("file.moved", "again"),
        ("scan.done", ""),
    ]
    assert disk.seen == []


def test_a_full_disk_stops_the_scan_cleanly_and_a_rescan_converges(tmp_path: Path) -> None:
    # Room for the schema (whatever its migrations have grown it to) and a few files more,
    # not for 300: the scan must hit the limit, whatever the size of an empty store.
    Harness(tmp_path).close()
    empty = (tmp_path / "state" / "isccd.db").stat().st_size
    small = Harness(tmp_path, sqlite=SqliteOptions(max_size=empty + 32 * 1024))
    for i in range(300):
        small.write(f"f{i:03d}", f"F{i}:0")
    try:
        with pytest.raises(StoreFullError):
            small.scan()
    finally:
        small.close()
    db = sqlite3.connect(tmp_path / "state" / "isccd.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    roomy = Harness(tmp_path)
    try:
        roomy.scan()
        assert len(roomy.stored()) == 300
    finally:
        roomy.close()


def test_tombstones_and_events_are_kept_for_their_retention(tmp_path: Path) -> None:
    h = Harness(tmp_path, options=PipelineOptions(tombstone_retention=100, event_retention=1000))
    try:
        h.write("a", "A:0")
        h.scan()
        (h.root / "a").unlink()
        h.scan()
        last = h.run(h.pipeline.last_seq())
        h.clock.now += 50
        assert h.run(h.pipeline.purge()) == (0, 0)
        assert h.get(h.p("a")).removed is not None  # type: ignore[union-attr]
        h.clock.now += 100
        assert h.run(h.pipeline.purge()) == (1, 0)
        assert h.get(h.p("a")) is None
        h.clock.now += 1000
        assert h.run(h.pipeline.purge()) == (0, len(h.committed))
        assert h.run(h.pipeline.events_since(0)) == []
        assert h.run(h.pipeline.last_seq()) == last  # sequence numbers are never reused
        assert h.run(h.pipeline.log_bounds()) == (last + 1, last)
    finally:
        h.close()


def test_a_crashing_hasher_costs_one_file_not_the_scan(tmp_path: Path) -> None:
    fake = FamilyHasher()

    async def crashing(root: str, path: str, units: frozenset[UnitType] | None) -> FileRecord:
        if path.endswith("bad"):
            raise RuntimeError("worker died")
        return await fake(root, path, units)

    h = Harness(tmp_path, hasher=crashing)
    try:
        h.write("bad", "A:0")
        h.write("good", "B:0")
        events = h.scan()
        assert sorted(kinds(events)) == [
            ("file.added", "bad"), ("file.added", "good"), ("file.error", "bad"), ("scan.done", ""),
        ]  # fmt: skip
        [error] = [e for e in events if e.type is EventType.FILE_ERROR]
        assert error.data["issues"][0]["code"] == "internal"
        assert "worker died" in error.data["issues"][0]["reason"]
    finally:
        h.close()


def test_a_file_replaced_by_a_directory_of_files(h: Harness) -> None:
    h.write("x", "A:0")
    h.scan()
    (h.root / "x").unlink()
    inner = h.write("x/inner", "B:0")
    # A watcher indexes the new file first; the reconcile then retires only the old file "x".
    assert kinds(h.run(h.pipeline.process_path(str(h.root), str(inner)))) == [
        ("file.added", "inner")
    ]
    assert kinds(h.scan()) == [("file.removed", "x"), ("scan.done", "")]
    assert h.stored(str(inner)) is not None
    assert h.get(h.p("x")).removed is not None  # type: ignore[union-attr]


def test_a_watched_path_through_a_link_out_of_the_root_is_not_indexed(
    h: Harness, tmp_path: Path
) -> None:
    # A watcher reports root/race/secret, the name of a file through a directory that is a
    # symbolic link to the outside: it is examined beneath the root, so nothing is hashed,
    # and what the index held at that name (from when race was a directory) is removed.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("S:0")
    h.write("race/secret", "A:0")
    root = str(h.root)
    assert kinds(h.run(h.pipeline.process_path(root, h.p("race/secret")))) == [
        ("file.added", "secret")
    ]
    (h.root / "race").rename(h.root / "moved")
    (h.root / "race").symlink_to(outside)
    calls = sum(h.hasher.calls.values())
    events = h.run(h.pipeline.process_path(root, h.p("race/secret")))
    assert kinds(events) == [("file.removed", "secret")]
    assert sum(h.hasher.calls.values()) == calls
    assert h.get(h.p("race/secret")).removed is not None  # type: ignore[union-attr]


def test_a_files_hardlinks_are_one_of_the_others_of_a_duplicate_event(h: Harness) -> None:
    h.write("a", "A:0")
    (h.root / "a-link").hardlink_to(h.root / "a")
    h.scan()
    h.write("copy", "A:0")
    events = h.scan()
    [dup] = [e for e in events if e.type is EventType.DUP_EXACT]
    assert dup.path == h.p("copy")
    # One entry for the file, its other name in links; count counts the names.
    [other] = dup.data["others"]
    assert (other["path"], other["links"], other["relation"]) == (
        h.p("a"),
        [h.p("a-link")],
        "exact",
    )
    assert other["code"] == dup.data["code"] and dup.data["count"] == 2
