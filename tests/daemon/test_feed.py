"""The feed from watcher to work queue: settled paths in order, renames at once, lost events
turned into a reconcile and an event, degradations announced."""

from __future__ import annotations

import asyncio
from typing import Any

from isccd.daemon.feed import Feed
from isccd.model import EventType
from isccd.watch.debounce import (
    Change,
    ChangeKind,
    DebounceOptions,
    Dirty,
    Moved,
    Recrawl,
    RecrawlReason,
)
from isccd.watch.watcher import Degradation

R = "/r"


class FakeQueue:
    def __init__(self) -> None:
        self.items: list[Dirty | Moved] = []
        self.discarded: list[str] = []
        self.changed = asyncio.Event()

    async def put(self, action: Dirty | Moved) -> None:
        self.items.append(action)
        self.changed.set()

    async def discard_root(self, root: str) -> int:
        self.discarded.append(root)
        return 0


class FakeScans:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    def request(self, root: str, reason: str) -> None:
        self.requests.append((root, reason))


def _feed(max_pending: int = 1000) -> tuple[Feed, FakeQueue, FakeScans, list[tuple[Any, ...]]]:
    queue, scans, emitted = FakeQueue(), FakeScans(), []
    feed = Feed(
        DebounceOptions(settle=0.05, max_delay=1.0, max_pending=max_pending),
        queue,  # type: ignore[arg-type]
        scans,  # type: ignore[arg-type]
        lambda *event: emitted.append(event),
    )
    return feed, queue, scans, emitted


async def _until(queue: FakeQueue, count: int) -> None:
    async with asyncio.timeout(5):
        while len(queue.items) < count:
            queue.changed.clear()
            await queue.changed.wait()


def test_settled_paths_and_renames_reach_the_queue_in_order() -> None:
    async def scenario() -> None:
        feed, queue, _, _ = _feed()
        runner = asyncio.create_task(feed.run())
        for _ in range(5):
            feed.on_change(Change(ChangeKind.TOUCHED, R, "/r/a"))
        feed.on_change(Change(ChangeKind.MOVED, R, "/r/x", "/r/y"))
        await _until(queue, 1)
        assert queue.items == [Moved(R, "/r/x", "/r/y")]  # at once, before /r/a settles
        await _until(queue, 2)
        assert queue.items[1] == Dirty(R, "/r/a")
        feed.on_change(Change(ChangeKind.DIR_ADDED, R, "/r/new", is_dir=True))
        await _until(queue, 3)
        assert queue.items[2] == Dirty(R, "/r/new", is_dir=True)
        runner.cancel()

    asyncio.run(scenario())


def test_flush_releases_at_once_and_drained_waits_for_the_queue() -> None:
    async def scenario() -> None:
        feed, queue, _, _ = _feed()
        feed.reconfigure(DebounceOptions(settle=60, max_delay=120, max_pending=1000))
        runner = asyncio.create_task(feed.run())
        feed.on_change(Change(ChangeKind.TOUCHED, R, "/r/slow"))
        assert feed.pending() == 1
        feed.flush(R)
        await asyncio.wait_for(feed.drained(), 5)
        assert queue.items == [Dirty(R, "/r/slow")]
        assert feed.pending() == 0
        runner.cancel()

    asyncio.run(scenario())


def test_lost_events_become_a_reconcile_and_an_event() -> None:
    async def scenario() -> None:
        feed, queue, scans, emitted = _feed(max_pending=100)
        feed.on_change(Change(ChangeKind.TOUCHED, R, "/r/pending"))
        feed.on_recrawl(Recrawl(R, RecrawlReason.OVERFLOW))
        await asyncio.sleep(0)
        assert emitted == [(EventType.WATCH_RECRAWL, R, "", {"reason": "overflow"})]
        assert scans.requests == [(R, "recrawl (overflow)")]
        assert queue.discarded == [R]
        assert feed.pending() == 0  # the reconcile covers what was pending
        # A flood beyond the bound is handled the same way.
        for i in range(150):
            feed.on_change(Change(ChangeKind.TOUCHED, R, f"/r/f{i}"))
        assert scans.requests[-1] == (R, "recrawl (pending)")
        assert emitted[-1][3] == {"reason": "pending"}

    asyncio.run(scenario())


def test_a_degradation_is_announced() -> None:
    feed, _, _, emitted = _feed()
    feed.on_degraded(Degradation(R, ("/r/deep",), "inotify watch limit reached", "fs.x=1"))
    assert emitted == [
        (
            EventType.WATCH_DEGRADED,
            R,
            "/r/deep",
            {
                "paths": ["/r/deep"],
                "count": 1,
                "reason": "inotify watch limit reached",
                "fix": "fs.x=1",
            },
        )
    ]


def test_ignored_paths_never_reach_the_queue() -> None:
    async def scenario() -> None:
        feed, queue, _, _ = _feed()
        feed.set_ignore([".git/", "*.part", "/own/state/"])
        runner = asyncio.create_task(feed.run())
        feed.on_change(Change(ChangeKind.TOUCHED, R, "/r/.git/index"))
        feed.on_change(Change(ChangeKind.TOUCHED, R, "/r/sub/.git/HEAD"))
        feed.on_change(Change(ChangeKind.TOUCHED, R, "/r/own/state/isccd.db-wal"))
        feed.on_change(Change(ChangeKind.DIR_ADDED, R, "/r/.git/objects/ab", is_dir=True))
        feed.on_change(Change(ChangeKind.TOUCHED, R, "/r/movie.part"))
        # A download renamed into place arrives; a file renamed to an ignored name leaves.
        feed.on_change(Change(ChangeKind.MOVED, R, "/r/movie.part", "/r/movie.mkv"))
        feed.on_change(Change(ChangeKind.MOVED, R, "/r/notes.txt", "/r/notes.part"))
        feed.on_change(Change(ChangeKind.MOVED, R, "/r/a.part", "/r/b.part"))
        await _until(queue, 2)
        feed.flush()
        await asyncio.wait_for(feed.drained(), 5)
        assert queue.items == [Dirty(R, "/r/movie.mkv"), Dirty(R, "/r/notes.txt")]
        runner.cancel()

    asyncio.run(scenario())


def test_each_change_kept_is_told_as_it_arrives() -> None:
    # The daemon starts its hashing workers then, while the change settles.
    async def scenario() -> None:
        seen: list[int] = []
        queue, scans = FakeQueue(), FakeScans()
        feed = Feed(
            DebounceOptions(settle=60, max_delay=600),
            queue,  # type: ignore[arg-type]
            scans,  # type: ignore[arg-type]
            lambda *event: None,
            ignore=["*.part"],
            on_change=lambda: seen.append(feed.pending()),
        )
        feed.on_change(Change(ChangeKind.TOUCHED, R, "/r/movie.part"))
        assert seen == []
        feed.on_change(Change(ChangeKind.TOUCHED, R, "/r/a"))
        assert seen == [1]  # at once, long before /r/a settles

    asyncio.run(scenario())
