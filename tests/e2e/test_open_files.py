"""A file still being written is not announced, nor read, until it is closed: a slow upload is
one ``file.added`` with its final size, not a partial file and a string of changes."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

import pytest

from isccd.client import AsyncClient
from isccd.model import Event, EventType

from .conftest import Daemon, next_event, of_type

pytestmark = pytest.mark.slow

MIB = 1 << 20


def _chunk(step: int) -> bytes:
    return bytes([step]) * MIB


def _processed(daemon: Daemon, path: str) -> int:
    """How many times the daemon read the file (its log's one line per file hashed)."""
    return sum(
        1
        for line in daemon.log_lines()
        if line.get("event") == "file_processed" and line.get("path") == path
    )


def test_a_file_kept_open_and_written_in_steps_is_announced_once_when_closed(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    daemon.start()
    upload = daemon.root / "upload.bin"
    seen: list[Event] = []

    async def until(match: Callable[[Event], bool], watcher: AsyncClient) -> Event:
        # Every event on the way is kept: none may be about the upload before its close.
        def keep(event: Event) -> bool:
            seen.append(event)
            return match(event)

        return await next_event(watcher, keep, timeout=30)

    async def scenario() -> None:
        watcher = await daemon.client()
        await watcher.sync()  # the first reconcile is done: only the watcher sees the upload
        await watcher.subscribe()
        fd = os.open(upload, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            for step in range(4):
                os.write(fd, _chunk(step))
                # A file written and closed after the write, in one go: announced once it has
                # settled, later than the write would have been had it been announced.
                marker = daemon.root / f"marker-{step}.txt"
                marker.write_text(f"marker {step} written after {step + 1} MiB of the upload")
                await until(of_type(EventType.FILE_ADDED, marker), watcher)
        finally:
            os.close(fd)
        # The first event about it with its final size (a change, had it been announced early).
        await until(lambda e: e.path == str(upload) and e.data.get("size") == 4 * MIB, watcher)
        # Nothing more about it: a last marker, after the close, comes without a change of it.
        last = daemon.root / "marker-last.txt"
        last.write_text("after the upload was closed")
        await until(of_type(EventType.FILE_ADDED, last), watcher)
        await watcher.close()

    asyncio.run(scenario())
    about = [e.type for e in seen if e.path == str(upload)]
    assert about == [EventType.FILE_ADDED], about
    assert _processed(daemon, str(upload)) == 1
    assert daemon.stop() == 0


def test_a_file_written_and_closed_in_one_go_is_announced_after_the_settle_time(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon()
    daemon.start()

    async def scenario() -> None:
        watcher = await daemon.client()
        await watcher.subscribe()
        path = daemon.root / "saved.txt"
        path.write_bytes(b"saved in one go " * 1000)
        closed = time.monotonic()
        await next_event(watcher, of_type(EventType.FILE_ADDED, path), timeout=30)
        # The settle time (0.25 s) and the hashing; not the longest wait of an open file.
        assert time.monotonic() - closed < 60.0
        await watcher.close()

    asyncio.run(scenario())
    assert daemon.stop() == 0


def test_a_file_never_closed_is_coded_after_the_longest_wait(
    make_daemon: Callable[..., Daemon],
) -> None:
    daemon = make_daemon(ISCCD_WATCH__MAX_OPEN_DELAY="1")
    daemon.start()
    path = daemon.root / "kept-open.log"

    async def scenario() -> None:
        watcher = await daemon.client()
        await watcher.sync()
        await watcher.subscribe()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, b"a log line\n" * 100)
            added = await next_event(watcher, of_type(EventType.FILE_ADDED, path), timeout=30)
            assert added.data["size"] == 1100
        finally:
            os.close(fd)
        await watcher.close()

    asyncio.run(scenario())
    assert daemon.stop() == 0
