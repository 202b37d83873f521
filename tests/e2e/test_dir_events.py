"""``dir.dup`` and ``dir.resolved`` from a real daemon: a tree copied into a watched root is said
once, for its top folder, once its files are quiet; a file edited in the copy resolves it; the
events are valid by docs/schema/event.schema.json; a daemon started again over the same store
says nothing again; ``[watch] folder_settle = 0`` says nothing at all."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from isccd.model import Event, EventType
from tests.schemas import check

from .conftest import Daemon, events_until, next_event, of_type

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow

TREE = {"notes.txt": "minutes of a meeting\n" * 40, "data/a.csv": "1,2,3\n" * 300,
        "data/b.csv": "4,5,6\n" * 300, "data/deep/c.bin": "x" * 5000}  # fmt: skip
DIRS = (EventType.DIR_DUP.value, EventType.DIR_RESOLVED.value)


def make(base: Path) -> None:
    for name, text in TREE.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)


def wire(event: Event) -> dict[str, Any]:
    envelope = {"event": event.type.value, "seq": event.seq, "time": event.time}
    return {**envelope, "root": event.root, "path": event.path, "host": event.host, **event.data}


def test_a_copied_tree_is_said_once_at_its_top_and_an_edit_resolves_it(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(ISCCD_WATCH__SETTLE="0.1", ISCCD_WATCH__FOLDER_SETTLE="0.5")
    make(daemon.root / "project")
    daemon.start()

    async def scenario() -> None:
        async with await daemon.client() as client:
            await client.sync()
        async with await daemon.client() as client:
            await client.subscribe(types=list(DIRS))
            shutil.copytree(daemon.root / "project", daemon.root / "backup" / "project-copy")
            dup = await next_event(client, of_type(EventType.DIR_DUP))
            check("event", wire(dup))
            assert dup.path == str(daemon.root / "backup")  # it holds nothing but the copy
            assert [o["path"] for o in dup.data["others"]] == [str(daemon.root / "project")]
            assert (dup.data["files"], dup.data["count"]) == (4, 1)
            (daemon.root / "backup" / "project-copy" / "notes.txt").write_text("edited\n")
            resolved = await next_event(client, of_type(EventType.DIR_RESOLVED))
            check("event", wire(resolved))
            assert (resolved.path, resolved.data["reason"]) == (dup.path, "changed")
            # The copy's data folder was outside the edit: still a copy, now said alone.
            data = await next_event(client, of_type(EventType.DIR_DUP))
            check("event", wire(data))
            copy = daemon.root / "backup" / "project-copy"
            assert data.path == str(copy / "data")
            assert [o["path"] for o in data.data["others"]] == [str(daemon.root / "project/data")]
        # Everything the log holds about folders: those three, nothing per file or per level.
        told = [e for e in await events_until(daemon, 0, data.seq) if e.type.value in DIRS]
        assert [(e.type, e.path) for e in told] == [
            (EventType.DIR_DUP, dup.path),
            (EventType.DIR_RESOLVED, dup.path),
            (EventType.DIR_DUP, data.path),
        ]

    asyncio.run(scenario())


def test_a_restart_says_nothing_again(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(ISCCD_WATCH__SETTLE="0.1", ISCCD_WATCH__FOLDER_SETTLE="0.3")
    make(daemon.root / "a")
    make(daemon.root / "b")
    daemon.start()

    async def said() -> list[Event]:
        async with await daemon.client() as client:
            await client.subscribe(since=0, types=list(DIRS))
            # Found by the first scan of the store, both new: each is told.
            first = await next_event(client, of_type(EventType.DIR_DUP))
            second = await next_event(client, of_type(EventType.DIR_DUP))
            assert (first.path, second.path) == (str(daemon.root / "a"), str(daemon.root / "b"))
            # A third copy: the one folder that changed is told.
            shutil.copytree(daemon.root / "a", daemon.root / "c")
            event = await next_event(client, of_type(EventType.DIR_DUP))
        return [event]

    [first] = asyncio.run(said())
    assert first.path == str(daemon.root / "c")
    assert sorted(o["path"] for o in first.data["others"]) == [
        str(daemon.root / "a"), str(daemon.root / "b"),
    ]  # fmt: skip
    assert daemon.stop() == 0
    daemon.start()

    async def quiet_restart() -> None:
        async with await daemon.client() as client:
            await client.sync()
            await client.subscribe(types=[*DIRS, EventType.FILE_ADDED.value])
            (daemon.root / "d").mkdir()
            (daemon.root / "d" / "other.txt").write_text("not a copy of anything\n")
            added = await next_event(client, of_type(EventType.FILE_ADDED))
        # Nothing about a, b and c again: the only folder events after the restart would be
        # logged before the file.added the subscription saw, so they are in the log by now.
        after = await events_until(daemon, first.seq, added.seq)
        assert [e for e in after if e.type.value in DIRS] == []

    asyncio.run(quiet_restart())


def test_folder_settle_0_says_nothing(make_daemon: Callable[..., Daemon]) -> None:
    daemon = make_daemon(ISCCD_WATCH__SETTLE="0.1", ISCCD_WATCH__FOLDER_SETTLE="0")
    make(daemon.root / "a")
    daemon.start()

    async def scenario() -> None:
        async with await daemon.client() as client:
            await client.sync()
            await client.subscribe(types=[*DIRS, EventType.FILE_ADDED.value])
            shutil.copytree(daemon.root / "a", daemon.root / "b")
            seen: set[str] = set()
            last = None
            while len(seen) < len(TREE):
                last = await next_event(client, lambda e: e.type.value in DIRS or
                                        e.path.startswith(str(daemon.root / "b")))  # fmt: skip
                assert last.type is EventType.FILE_ADDED, last
                seen.add(last.path)
            await client.sync()
        assert last is not None
        after = await events_until(daemon, 0, last.seq)
        assert [e for e in after if e.type.value in DIRS] == []

    asyncio.run(scenario())
