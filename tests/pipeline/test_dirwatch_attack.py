"""Duplicate folder events under hostile trees: many copies settled at once, folders nested
deeper than Python's recursion limit, names that are not UTF-8, files renamed from one folder
into another: the daemon's folder watch neither crashes nor says anything but the truth."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from isccd.model import Event, EventType
from isccd.pipeline import PipelineOptions

from .harness import Harness

SETTLE = 1000.0
ALBUM = {"a.jpg": "A:0", "b.jpg": "B:0", "raw/c.cr2": "C:0"}

pytestmark = pytest.mark.slow


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path, options=PipelineOptions(folder_settle=SETTLE))
    yield harness
    harness.close()


def settled(h: Harness) -> list[Event]:
    h.clock.now += SETTLE
    events: list[Event] = h.run(h.pipeline.settle_folders())
    return events


def put(h: Harness, base: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        h.write(f"{base}/{name}", text)


def test_many_copies_settled_at_once_are_each_announced_once(h: Harness) -> None:
    put(h, "album", ALBUM)
    h.scan()
    h.run(h.pipeline.watch_folders(SETTLE))
    copies = [f"copy{i:03}" for i in range(150)]
    for name in copies:
        shutil.copytree(h.root / "album", h.root / name)
    h.scan()
    events = settled(h)
    assert sorted(e.path for e in events) == sorted(h.p(c) for c in copies)
    assert {e.type for e in events} == {EventType.DIR_DUP}
    for e in events:
        assert e.data["count"] == len(copies)  # album and the 149 other copies
        assert len(e.data["others"]) == 100  # named up to OTHERS_NAMED
    assert settled(h) == []


DEPTH = 1500


def nested(base: Path, depth: int, text: str | None) -> None:
    """``base/d/d/.../d/f.bin`` (``depth`` folders) holding ``text``, made without recursion
    (pathlib's ``mkdir(parents=True)`` recurses once per level); ``None`` removes it."""
    base.mkdir(parents=True, exist_ok=True)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            if text is not None and not Path(f"/proc/self/fd/{fd}/d").is_dir():
                os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        if text is None:
            os.unlink("f.bin", dir_fd=fd)
        else:
            out = os.open("f.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=fd)
            os.write(out, text.encode())
            os.close(out)
    finally:
        os.close(fd)


@pytest.fixture
def deep_trees(tmp_path: Path) -> Iterator[None]:
    """Deep trees removed at the end by ``rm`` (pytest's clean-up of old temporary folders
    recurses once per level)."""
    yield
    subprocess.run(["rm", "-rf", "--", str(tmp_path)], check=True)


@pytest.mark.usefixtures("deep_trees")
def test_folders_nested_deeper_than_the_recursion_limit(h: Harness) -> None:
    nested(h.root / "album", DEPTH, "F:0")
    h.write("album/top.bin", "T:0")
    h.scan()
    h.run(h.pipeline.watch_folders(SETTLE))
    nested(h.root / "copy", DEPTH, "F:0")
    h.write("copy/top.bin", "T:0")
    h.scan()
    events = settled(h)
    assert [(e.type, e.path) for e in events] == [(EventType.DIR_DUP, h.p("copy"))]
    nested(h.root / "copy", DEPTH, None)  # the deepest file taken away
    h.scan()
    events = settled(h)
    assert sorted((e.type, e.path, e.data["reason"]) for e in events) == [
        (EventType.DIR_RESOLVED, h.p("album"), "others_changed"),
        (EventType.DIR_RESOLVED, h.p("copy"), "changed"),
    ]


def test_a_folder_whose_name_is_not_utf8_is_announced_by_its_bytes(h: Harness) -> None:
    put(h, "album", ALBUM)
    h.scan()
    h.run(h.pipeline.watch_folders(SETTLE))
    odd = os.fsdecode(b"copy-\xff\xfe-\n")
    put(h, odd, ALBUM)
    h.scan()
    [event] = settled(h)
    assert (event.type, event.path) == (EventType.DIR_DUP, h.p(odd))
    assert [o["path"] for o in event.data["others"]] == [h.p("album")]
    stored = [e for e in h.committed if e.type is EventType.DIR_DUP]
    assert [e.path for e in stored] == [h.p(odd)]


def test_a_file_renamed_into_another_folder_resolves_and_back_announces_again(
    h: Harness,
) -> None:
    put(h, "album", ALBUM)
    put(h, "copy", ALBUM)
    h.write("elsewhere/x.bin", "X:0")
    h.scan()
    h.run(h.pipeline.watch_folders(SETTLE))
    (h.root / "copy" / "b.jpg").rename(h.root / "elsewhere" / "b.jpg")
    h.scan()
    events = settled(h)
    # copy's raw folder is still album's: shown alone now.
    assert sorted((e.type.value, e.path) for e in events) == [
        ("dir.dup", h.p("copy/raw")),
        ("dir.resolved", h.p("album")),
        ("dir.resolved", h.p("copy")),
    ]
    (h.root / "elsewhere" / "b.jpg").rename(h.root / "copy" / "b.jpg")
    h.scan()
    events = settled(h)
    assert [(e.type.value, e.path) for e in events] == [("dir.dup", h.p("copy"))]


def test_a_restart_in_the_middle_of_a_copy_announces_it_once_finished(tmp_path: Path) -> None:
    h = Harness(tmp_path, options=PipelineOptions(folder_settle=SETTLE))
    try:
        put(h, "album", ALBUM)
        h.scan()
        h.run(h.pipeline.watch_folders(SETTLE))
        put(h, "copy", {"raw/c.cr2": "C:0"})
        h.scan()  # stopped before the copy settled
    finally:
        h.close()
    h = Harness(tmp_path, options=PipelineOptions(folder_settle=SETTLE))
    try:
        h.run(h.pipeline.watch_folders(SETTLE))
        h.scan()
        assert settled(h) == []  # copy/raw, a copy of album/raw at the start: taken as said
        put(h, "copy", {"a.jpg": "A:0", "b.jpg": "B:0"})
        h.scan()
        events = settled(h)
        assert [(e.type.value, e.path, [o["path"] for o in e.data["others"]]) for e in events] == [
            ("dir.dup", h.p("copy"), [h.p("album")])
        ]
    finally:
        h.close()
