"""What a subscriber sees as files are copied, re-encoded, edited, renamed and deleted, with a
real daemon watching a real directory."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from isccd.cli.main import main
from isccd.client import Client
from isccd.model import Event, EventType
from isccd.results import DupesResult

from .conftest import Daemon, events_until, next_event, of_type

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow


def _text(words: int, seed: int) -> str:
    rng = random.Random(seed)
    vocabulary = [
        "archive", "river", "signal", "copper", "meadow", "lantern", "harbor", "quiet",
        "engine", "window", "garden", "silver", "market", "winter", "thunder", "paper",
    ]  # fmt: skip
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def _picture(path: Path) -> None:
    """A photo-like picture: gradients, shapes and noise."""
    rng = random.Random(7)
    image = Image.new("RGB", (320, 240))
    pixels = image.load()
    assert pixels is not None
    for y in range(240):
        for x in range(320):
            pixels[x, y] = (x * 255 // 320, y * 255 // 240, (x * y) % 256)
    draw = ImageDraw.Draw(image)
    for _ in range(25):
        x, y = rng.randrange(300), rng.randrange(220)
        color = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
        draw.ellipse((x, y, x + rng.randrange(10, 90), y + rng.randrange(10, 70)), fill=color)
    image.save(path, quality=92)


def test_copy_move_delete(make_daemon: Callable[..., Daemon]) -> None:
    daemon = make_daemon()
    original = daemon.root / "report.txt"
    original.write_text(_text(400, 1))
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await control.sync()
        await watcher.subscribe()

        # Copy: dup.exact, once the copy has settled (how soon is bench/daemon.py's to
        # measure: no bound in seconds holds on a busy machine).
        copy = daemon.root / "copy.txt"
        shutil.copyfile(original, copy)
        event = await next_event(watcher, of_type(EventType.DUP_EXACT, copy), timeout=60)
        assert event.data["unit"] == "instance"
        assert event.data["distance"] == 0
        assert [o["path"] for o in event.data["others"]] == [str(original)]
        assert event.data["iscc"]

        # Rename: file.moved, and the file is not hashed again; its Meta-Code comes from its
        # file name, so it follows the new name, and the ISCC-CODE is `isccd code`'s.
        renamed = daemon.root / "completely_different_name.txt"
        copy.rename(renamed)
        moved = await next_event(watcher, of_type(EventType.FILE_MOVED, renamed), timeout=10)
        assert moved.data["from"] == str(copy)
        await control.sync()
        hashed = [
            line["path"] for line in daemon.log_lines() if line.get("event") == "file_processed"
        ]
        assert str(renamed) not in hashed
        stored = await control.get(str(renamed))
        assert stored.name == "completely different name"
        assert stored.iscc == moved.data["iscc"] == _isccd_code(renamed)["iscc"]
        assert moved.data["previous"]["iscc"] == event.data["iscc"] != stored.iscc

        # Delete: file.removed, and the group shrinks.
        third = daemon.root / "third.txt"
        shutil.copyfile(original, third)
        await next_event(watcher, of_type(EventType.DUP_EXACT, third), timeout=10)
        (group,) = (await _dupes(daemon)).groups
        assert len(group.members) == 3
        renamed.unlink()
        await next_event(watcher, of_type(EventType.FILE_REMOVED, renamed), timeout=10)
        (group,) = (await _dupes(daemon)).groups
        assert sorted(m.path for m in group.members) == [str(original), str(third)]
        await control.close()
        await watcher.close()

    asyncio.run(scenario())
    assert daemon.stop() == 0


def _isccd_code(path: Path) -> Any:
    """What `isccd code PATH --json` prints for the file (an array of one)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["code", str(path), "--json"]) == 0
    [coded] = json.loads(out.getvalue())
    return coded


def test_a_file_renamed_while_the_daemon_was_stopped_gets_its_new_name_unread(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    (daemon.root / "r9.txt").write_text(_text(300, 5))
    daemon.start()

    async def indexed() -> None:
        client = await daemon.client()
        await client.sync()
        await client.close()

    asyncio.run(indexed())
    assert daemon.stop() == 0
    renamed = daemon.root / "completely_different_name.txt"
    (daemon.root / "r9.txt").rename(renamed)
    daemon.start()

    async def scenario() -> tuple[list[Event], Any]:
        client = await daemon.client()
        last = await client.sync()
        stored = await client.get(str(renamed))
        await client.close()
        return await events_until(daemon, 0, last), stored

    events, stored = asyncio.run(scenario())
    assert daemon.stop() == 0
    (moved,) = [e for e in events if e.type is EventType.FILE_MOVED]
    coded = _isccd_code(renamed)
    assert (
        (stored.name, stored.iscc)
        == (coded["name"], coded["iscc"])
        == (
            "completely different name",
            moved.data["iscc"],
        )
    )
    hashed = [line["path"] for line in daemon.log_lines() if line.get("event") == "file_processed"]
    assert hashed == [str(daemon.root / "r9.txt")]  # at the first start only


async def _dupes(daemon: Daemon) -> DupesResult:
    def query() -> DupesResult:
        with Client(daemon.socket) as client:
            return client.dupes()

    return await asyncio.to_thread(query)


def test_reencoded_picture_and_edited_document_are_near_duplicates(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    picture = daemon.root / "photo.jpg"
    _picture(picture)
    document = daemon.root / "notes.txt"
    text = _text(3000, 2)
    document.write_text(text)
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await control.sync()
        await watcher.subscribe()

        # A re-encoded JPEG: other bytes, the same picture.
        reencoded = daemon.root / "photo-small.jpg"
        with Image.open(picture) as image:
            image.save(reencoded, quality=60)
        near = await next_event(
            watcher,
            lambda e: (
                e.type is EventType.DUP_NEAR
                and e.path == str(reencoded)
                and e.data["unit"] == "image"
            ),
        )
        assert 0 <= near.data["distance"] <= near.data["threshold"] == 12
        assert near.data["others"][0]["path"] == str(picture)

        # An edited document: a few words changed.
        edited = daemon.root / "notes-edited.txt"
        words = text.split()
        words[100:104] = ["completely", "different", "words", "here"]
        edited.write_text(" ".join(words))
        near = await next_event(
            watcher,
            lambda e: (
                e.type is EventType.DUP_NEAR and e.path == str(edited) and e.data["unit"] == "text"
            ),
        )
        assert 0 <= near.data["distance"] <= near.data["threshold"] == 15
        assert near.data["others"][0]["path"] == str(document)
        await control.close()
        await watcher.close()

    asyncio.run(scenario())
    assert daemon.stop() == 0


def test_sync_returns_after_every_change_made_before_it(
    make_daemon: Callable[..., Daemon],
) -> None:
    # A long quiet period: without the barrier, nothing would be indexed for seconds.
    daemon = make_daemon(ISCCD_WATCH__SETTLE="30", ISCCD_WATCH__MAX_DELAY="60")
    (daemon.root / "old.txt").write_text("a file that will be deleted")
    (daemon.root / "edit.txt").write_text("a file that will be edited")
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        await control.sync()
        for i in range(30):
            (daemon.root / f"new-{i}.txt").write_text(f"new file {i}")
        (daemon.root / "old.txt").unlink()
        (daemon.root / "edit.txt").write_text("a file that was edited, just now")
        seq = await control.sync()
        assert (await control.status()).files_indexed == 31
        for i in range(30):
            assert (await control.get(str(daemon.root / f"new-{i}.txt"))).iscc
        assert (await control.get(str(daemon.root / "old.txt"))).removed is not None
        edited = await control.get(str(daemon.root / "edit.txt"))
        assert edited.size == len("a file that was edited, just now")
        # Every event those changes caused is in the log at or before the returned seq.
        watcher = await daemon.client()
        await watcher.subscribe(since=0)
        types = set()
        async for event in watcher.events():
            types.add((event.type, event.path.rsplit("/", 1)[-1]))
            if event.seq == seq:
                break
        assert (EventType.FILE_REMOVED, "old.txt") in types
        assert (EventType.FILE_CHANGED, "edit.txt") in types
        assert (EventType.FILE_ADDED, "new-29.txt") in types
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert daemon.stop() == 0


def test_ignored_paths_and_the_store_inside_a_root_are_not_indexed(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    daemon.state = daemon.root / "var" / "isccd"  # the store inside the watched tree
    (daemon.root / ".git").mkdir()
    (daemon.root / ".git" / "config").write_text("[core]")
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await control.sync()
        await watcher.subscribe()
        (daemon.root / ".git" / "HEAD").write_text("ref: refs/heads/main")
        (daemon.root / "film.mkv.part").write_text("half a film")
        (daemon.root / "film.mkv.part").rename(daemon.root / "film.mkv")
        await next_event(watcher, of_type(EventType.FILE_ADDED, daemon.root / "film.mkv"))
        await control.sync()
        await control.sync()  # commits change the store: they must not cause more work
        status = await control.status()
        assert status.files_indexed == 1
        assert status.queue_depth == 0
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert daemon.stop() == 0
    hashed = [line["path"] for line in daemon.log_lines() if line.get("event") == "file_processed"]
    assert hashed == [str(daemon.root / "film.mkv")]


def test_status_counts_each_roots_files_as_they_are_indexed(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    first, second = daemon.root, daemon.base / "second"
    second.mkdir()
    (first / "one.txt").write_text(_text(50, 1))
    daemon.start("--watch", str(second))

    def on_disk() -> dict[str, int]:
        return {str(r): sum(1 for p in r.rglob("*") if p.is_file()) for r in (first, second)}

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await control.sync()
        await watcher.subscribe()
        shutil.copyfile(first / "one.txt", first / "two.txt")
        (first / "three.txt").write_text(_text(50, 3))
        (second / "four.txt").write_text(_text(50, 4))
        added: set[str] = set()
        while len(added) < 3:
            event = await next_event(watcher, of_type(EventType.FILE_ADDED))
            added.add(Path(event.path).name)
        # Right after the watcher's changes, with no reconcile since the first sync.
        status = await control.status()
        assert (
            {r.path: r.files for r in status.roots} == on_disk() == {str(first): 3, str(second): 1}
        )
        assert status.files_indexed == 4
        (first / "one.txt").unlink()
        await next_event(watcher, of_type(EventType.FILE_REMOVED, first / "one.txt"))
        status = await control.status()
        assert (
            {r.path: r.files for r in status.roots} == on_disk() == {str(first): 2, str(second): 1}
        )
        await control.sync()
        status = await control.status()
        assert {r.path: r.files for r in status.roots} == on_disk()
        assert sum(r.files for r in status.roots) == status.files_indexed == 3
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert daemon.stop() == 0
