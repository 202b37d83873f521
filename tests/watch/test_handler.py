"""What each watchdog event means for the index, and the hand-over to the event loop."""

from __future__ import annotations

import asyncio
import threading

import pytest
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileClosedNoWriteEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
    FileSystemEvent,
)

from isccd.watch.debounce import Change, ChangeKind
from isccd.watch.handler import EVENT_FILTER, LoopHandler, to_change

R = "/r"


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (FileCreatedEvent("/r/a"), Change(ChangeKind.TOUCHED, R, "/r/a")),
        # A write, and the close after writing, told apart: the file waits for its close.
        (FileModifiedEvent("/r/a"), Change(ChangeKind.WRITTEN, R, "/r/a")),
        (FileClosedEvent("/r/a"), Change(ChangeKind.CLOSED, R, "/r/a")),
        (FileAttribEvent("/r/a"), Change(ChangeKind.TOUCHED, R, "/r/a")),
        (FileDeletedEvent("/r/a"), Change(ChangeKind.REMOVED, R, "/r/a")),
        (FileMovedEvent("/r/a", "/r/b"), Change(ChangeKind.MOVED, R, "/r/a", "/r/b")),
        (FileMovedEvent("/r/a", ""), Change(ChangeKind.REMOVED, R, "/r/a")),
        (FileMovedEvent("", "/r/b"), Change(ChangeKind.TOUCHED, R, "/r/b")),
        (DirCreatedEvent("/r/d"), Change(ChangeKind.DIR_ADDED, R, "/r/d", is_dir=True)),
        (DirDeletedEvent("/r/d"), Change(ChangeKind.REMOVED, R, "/r/d", is_dir=True)),
        (
            DirMovedEvent("/r/d", "/r/e"),
            Change(ChangeKind.MOVED, R, "/r/d", "/r/e", is_dir=True),
        ),
        (DirMovedEvent("", "/r/e"), Change(ChangeKind.DIR_ADDED, R, "/r/e", is_dir=True)),
        (DirModifiedEvent("/r/d"), None),
        (FileOpenedEvent("/r/a"), None),
        (FileClosedNoWriteEvent("/r/a"), None),
        (FileMovedEvent("/r/d/a", "/r/e/a", is_synthetic=True), None),
        (FileCreatedEvent("/r/e/a", is_synthetic=True), None),
        (FileCreatedEvent(b"/r/\xff"), Change(ChangeKind.TOUCHED, R, "/r/\udcff")),
    ],
)
def test_event_meaning(event: FileSystemEvent, expected: Change | None) -> None:
    assert to_change(event, R) == expected


def test_reads_are_not_asked_of_the_kernel() -> None:
    assert FileOpenedEvent not in EVENT_FILTER
    assert FileClosedNoWriteEvent not in EVENT_FILTER


def test_the_handler_delivers_on_the_loop_thread() -> None:
    async def main() -> tuple[list[Change], set[int]]:
        loop = asyncio.get_running_loop()
        seen: list[Change] = []
        threads: set[int] = set()
        done = asyncio.Event()

        def sink(change: Change) -> None:
            threads.add(threading.get_ident())
            seen.append(change)
            if len(seen) == 2:
                done.set()

        handler = LoopHandler(loop, R, sink)

        def observe() -> None:  # as watchdog's observer thread does
            for e in (FileCreatedEvent("/r/a"), DirModifiedEvent("/r"), FileDeletedEvent("/r/a")):
                handler.dispatch(e)

        observer_thread = threading.Thread(target=observe)
        observer_thread.start()
        await asyncio.wait_for(done.wait(), 5)
        observer_thread.join()
        return seen, threads

    seen, threads = asyncio.run(main())
    assert seen == [Change(ChangeKind.TOUCHED, R, "/r/a"), Change(ChangeKind.REMOVED, R, "/r/a")]
    assert threads == {threading.get_ident()}


def test_a_closed_loop_drops_events_quietly() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    LoopHandler(loop, R, lambda change: None).dispatch(FileCreatedEvent("/r/a"))
