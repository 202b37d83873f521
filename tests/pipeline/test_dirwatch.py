"""Duplicate folders kept current (``dir.dup``, ``dir.resolved``) by a real pipeline over a
real tree, its clock driven by the test: a copy made file by file is announced once, when its
last file has settled, at its highest level; nothing is said while a folder is still busy; a
change, an emptied folder and the others going each resolve; a restart announces nothing
again; a renamed copy is the same duplicate under its new name."""

from __future__ import annotations

import json
import shutil
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from isccd.model import Event, EventType
from isccd.pipeline import PipelineOptions
from isccd.pipeline.dirwatch import FolderWatch
from isccd.store import open_store, state_url
from tests.store.conftest import hashed, make_record

from .harness import Harness

SETTLE = 1000.0
ALBUM = {"a.jpg": "A:0", "b.jpg": "B:0", "raw/c.cr2": "C:0", "raw/d.cr2": "D:0"}


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path, options=PipelineOptions(folder_settle=SETTLE))
    yield harness
    harness.close()


def watch(h: Harness) -> None:
    h.run(h.pipeline.watch_folders(SETTLE))


def settled(h: Harness, *, wait: bool = True) -> list[tuple[str, str, list[str]]]:
    """The folder events once every folder is quiet (``wait``), else as things are now."""
    if wait:
        h.clock.now += SETTLE
    events: list[Event] = h.run(h.pipeline.settle_folders())
    return [(e.type.value, e.path, sorted(o["path"] for o in e.data["others"])) for e in events]


def put(h: Harness, base: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        h.write(f"{base}/{name}", text)


def test_a_copy_made_file_by_file_is_announced_once_at_its_top(h: Harness) -> None:
    put(h, "album", ALBUM)
    h.scan()
    watch(h)
    assert settled(h) == []
    # The subfolder is copied first: a duplicate of album/raw, for now.
    put(h, "copy/raw", {"c.cr2": "C:0", "d.cr2": "D:0"})
    h.scan()
    put(h, "copy", {"a.jpg": "A:0"})
    h.scan()
    assert settled(h, wait=False) == []  # nothing is decided while the copy is busy
    put(h, "copy", {"b.jpg": "B:0"})
    h.scan()
    assert h.run(h.pipeline.folders_due()) is not None
    [(kind, path, others)] = settled(h)
    assert (kind, path, others) == ("dir.dup", h.p("copy"), [h.p("album")])
    assert settled(h) == [] and h.run(h.pipeline.folders_due()) is None
    [event] = [e for e in h.committed if e.type is EventType.DIR_DUP]
    assert event.data["files"] == 4 and event.data["count"] == 1
    assert event.data["others"][0]["files"] == 4 and event.root == str(h.root)


def test_a_copy_settled_half_way_is_said_as_it_is_each_time(h: Harness) -> None:
    put(h, "album", ALBUM)
    h.scan()
    watch(h)
    put(h, "copy/raw", {"c.cr2": "C:0", "d.cr2": "D:0"})
    h.scan()
    # copy holds nothing but its raw folder, a copy of album/raw: it stands for it.
    assert settled(h) == [("dir.dup", h.p("copy"), [h.p("album/raw")])]
    put(h, "copy", {"a.jpg": "A:0", "b.jpg": "B:0"})
    h.scan()
    assert settled(h) == [
        ("dir.resolved", h.p("copy"), [h.p("album/raw")]),
        ("dir.dup", h.p("copy"), [h.p("album")]),
    ]


def test_a_change_an_emptied_folder_and_the_others_going_resolve(h: Harness) -> None:
    put(h, "album", ALBUM)
    put(h, "copy", ALBUM)
    put(h, "third", ALBUM)
    h.scan()
    watch(h)  # what holds at the start is taken as announced
    assert settled(h) == []
    h.write("third/a.jpg", "A:1")
    h.scan()
    # third is no duplicate any more, but its raw folder still is, and is now shown alone.
    events = settled(h)
    assert events == [
        ("dir.resolved", h.p("third"), [h.p("album"), h.p("copy")]),
        ("dir.dup", h.p("third/raw"), [h.p("album/raw"), h.p("copy/raw")]),
    ]
    [resolved] = [e for e in h.committed if e.type is EventType.DIR_RESOLVED]
    assert resolved.data["reason"] == "changed"
    shutil.rmtree(h.root / "copy")
    h.scan()
    events = settled(h)
    # album/raw and third/raw stay duplicates of each other: no news for them.
    assert sorted(events) == [
        ("dir.resolved", h.p("album"), [h.p("copy")]),
        ("dir.resolved", h.p("copy"), [h.p("album")]),
        ("dir.resolved", h.p("copy/raw"), [h.p("album/raw"), h.p("third/raw")]),
    ]
    reasons = {e.path: e.data["reason"] for e in h.committed if e.type is EventType.DIR_RESOLVED}
    assert reasons[h.p("copy")] == "removed" and reasons[h.p("album")] == "others_changed"


def test_a_restart_announces_nothing_again_and_a_renamed_copy_stays_a_duplicate(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path, options=PipelineOptions(folder_settle=SETTLE))
    try:
        put(h, "album", ALBUM)
        h.scan()
        watch(h)
        put(h, "copy", ALBUM)
        h.scan()
        assert settled(h) == [("dir.dup", h.p("copy"), [h.p("album")])]
    finally:
        h.close()
    h = Harness(tmp_path, options=PipelineOptions(folder_settle=SETTLE))
    try:
        watch(h)
        h.scan()
        assert settled(h) == []
        (h.root / "copy").rename(h.root / "renamed")
        h.scan()
        moved = [e for e in h.committed if e.type is EventType.FILE_MOVED]
        assert len(moved) == 4
        # album's copy is gone (it says so), and the renamed one is its copy now.
        assert sorted(settled(h)) == [
            ("dir.dup", h.p("renamed"), [h.p("album")]),
            ("dir.resolved", h.p("album"), [h.p("copy")]),
            ("dir.resolved", h.p("copy"), [h.p("album")]),
        ]
    finally:
        h.close()


def test_a_folder_with_a_file_of_unknown_content_is_no_duplicate(h: Harness) -> None:
    put(h, "album", ALBUM)
    h.scan()
    watch(h)
    put(h, "copy", ALBUM)
    h.hasher.unreadable.add(h.p("copy/extra"))
    h.write("copy/extra", "E:0")
    h.scan()
    assert settled(h) == [("dir.dup", h.p("copy/raw"), [h.p("album/raw")])]


@pytest.mark.slow
def test_loading_a_large_store_holds_a_chunk_of_its_files_at_a_time(tmp_path: Path) -> None:
    # 40,000 files in 200 folders, the first two copies of each other: the folders' sums are
    # counted a chunk of rows at a time, none kept (a million files' rows held at once took
    # 480 MB, which the allocator kept from the system for as long as the daemon ran), and
    # the copies are found as when every row was read first.
    store = open_store(state_url(tmp_path / "state"), host="host-a")
    try:
        store.begin()
        records = [
            make_record(
                f"/data/f{i // 200:03}/x{i % 200:03}",
                ino=i + 1,
                datahash=hashed(i % 200 if i < 400 else i),
            )
            for i in range(40_000)
        ]
        store.add_files("/data", records, 1.0)
        store.commit()
        watch = FolderWatch(SETTLE)
        tracemalloc.start()
        try:
            watch.load(store)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        folder = ["host-a", "/data"]
        assert json.loads(watch.saved()) == [
            [[*folder, "/data/f000"], [[*folder, "/data/f001"]]],
            [[*folder, "/data/f001"], [[*folder, "/data/f000"]]],
        ]
        assert peak < 8 * 2**20, peak
    finally:
        store.close()
