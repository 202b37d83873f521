"""Under load: events lost in the kernel are noticed and repaired, and a subscriber that stops
reading is cut off without slowing anyone else."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from isccd.client import AsyncClient
from isccd.model import EventType

from .conftest import Daemon, next_event, of_type

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow

FLOOD = 20_000


def _create(directory: Path, count: int, prefix: str) -> None:
    for i in range(count):
        with (directory / f"{prefix}{i:05d}.txt").open("w") as fh:
            fh.write(f"{prefix} file {i}\n")


@pytest.mark.timeout(300)
def test_a_flood_while_stopped_is_recrawled_and_converges(
    make_daemon: Callable[..., Daemon],
) -> None:
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    # Each file makes three events (create, modify, close); the kernel keeps `queued`.
    if queued >= 3 * FLOOD:
        pytest.skip(f"fs.inotify.max_queued_events={queued} holds all {3 * FLOOD} events")
    daemon = make_daemon(ISCCD_HASHING__WORKERS="2")
    (daemon.root / "flood").mkdir()
    daemon.start()

    async def scenario() -> None:
        control = await daemon.client()
        watcher = await daemon.client()
        await control.sync()
        await watcher.subscribe(types=[EventType.WATCH_RECRAWL])
        daemon.signal(signal.SIGSTOP)  # as a stalled daemon: nobody reads the inotify queue
        try:
            await asyncio.to_thread(_create, daemon.root / "flood", FLOOD, "f")
        finally:
            daemon.signal(signal.SIGCONT)
        recrawl = await next_event(watcher, of_type(EventType.WATCH_RECRAWL), timeout=60)
        assert recrawl.data["reason"] == "overflow"
        assert recrawl.root == str(daemon.root)
        await control.sync()
        status = await control.status()
        assert status.files_indexed == FLOOD
        sample = daemon.root / "flood" / "f12345.txt"
        assert (await control.get(str(sample))).datahash is not None
        await control.close()
        await watcher.close()

    asyncio.run(asyncio.wait_for(scenario(), 240))
    assert daemon.stop() == 0


async def _lagged(client: AsyncClient) -> int:
    server = (await client.status()).server
    assert server is not None
    return server.subscribers_lagged


def test_a_subscriber_that_stops_reading_lags_and_the_others_keep_up(
    make_daemon: Callable[..., Daemon],
) -> None:
    # Commits publish up to a few hundred events at once: the queue must hold such a burst, and
    # the files must make more events than the queue, the socket buffers and the server's
    # write buffer hold together.
    count = 3000
    daemon = make_daemon(ISCCD_SERVER__SUBSCRIBER_QUEUE="1000", ISCCD_HASHING__WORKERS="2")
    daemon.start()

    # The slow subscriber: subscribes, then reads nothing, with the smallest receive buffer.
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(str(daemon.socket))
    slow.sendall(b'{"id": 1, "cmd": "subscribe"}\n')

    def drain() -> bytes:
        slow.settimeout(30)
        data = b""
        while chunk := slow.recv(1 << 16):
            data += chunk
        return data

    async def scenario() -> bytes:
        fast = await daemon.client()
        control = await daemon.client()
        await fast.subscribe(types=[EventType.FILE_ADDED])
        creating = asyncio.create_task(asyncio.to_thread(_create, daemon.root, count, "g"))
        received: set[str] = set()

        async def read_fast() -> None:
            async for event in fast.events():
                assert event.type is EventType.FILE_ADDED, event
                received.add(event.path)
                if len(received) == count:
                    return

        reading = asyncio.create_task(read_fast())
        # Once the server has cut the slow subscriber off, it gives it a moment to read what
        # was sent; it reads it all then.
        async with asyncio.timeout(120):
            while not await _lagged(control):
                await asyncio.sleep(0.05)
        data = await asyncio.to_thread(drain)
        async with asyncio.timeout(120):
            await reading
            await creating
        assert len(received) == count
        await fast.close()
        await control.close()
        return data

    try:
        data = asyncio.run(scenario())
    finally:
        slow.close()
    lines = [json.loads(line) for line in data.splitlines()]
    assert lines[0]["id"] == 1
    last = lines[-1]
    assert last["event"] == "subscriber.lagged"
    seqs = [line["seq"] for line in lines[1:-1]]
    assert seqs == sorted(seqs)
    assert last["seq"] >= (seqs[-1] if seqs else 0)
    assert daemon.stop() == 0
