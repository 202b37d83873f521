"""Connection limits under pressure: a burst of connections against ``max_clients``, and silent
connections closed after ``idle_timeout``."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path

import pytest

from isccd.client import AsyncClient
from isccd.model import EventType

from .fakes import FakeBackend, serving

#: Connections of the burst (all pending in the listen backlog at once, which holds 128), and
#: the limit they run into.
BURST = 100
LIMIT = 16


async def _first_line(sock: socket.socket) -> str:
    """The reply to the hello a client sent: ``ok`` when served, else the error code."""
    loop = asyncio.get_running_loop()
    data = b""
    while not data.endswith(b"\n"):
        piece = await loop.sock_recv(sock, 4096)
        assert piece, f"closed without a line: {data!r}"
        data += piece
    reply = json.loads(data)
    return "ok" if reply.get("ok") else str(reply["error"]["code"])


def test_a_burst_of_connections_never_passes_max_clients(root_dir: Path, short_dir: Path) -> None:
    async def main() -> None:
        backend = FakeBackend([str(root_dir)])
        async with serving(backend, short_dir, max_clients=LIMIT) as (server, _):
            # Connected while the server's loop is busy here: all of them wait in the backlog
            # and are accepted in one go, as under a real burst.
            socks = []
            for _ in range(BURST):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(server.path))
                sock.sendall(b'{"id": 1, "cmd": "hello"}\n')
                sock.setblocking(False)
                socks.append(sock)
            try:
                codes = await asyncio.gather(*(_first_line(sock) for sock in socks))
                assert codes.count("ok") == LIMIT, codes.count("ok")
                assert codes.count("too_many_clients") == BURST - LIMIT
                assert server.statistics().refused == BURST - LIMIT
                assert len(server.statistics().connections) == LIMIT
            finally:
                for sock in socks:
                    sock.close()
            # The slots are given back as the served clients leave.
            async with asyncio.timeout(10):
                while server.statistics().connections:
                    await asyncio.sleep(0.01)
            async with await AsyncClient.connect(server.path) as client:
                await client.hello()

    asyncio.run(main())


@pytest.mark.slow
def test_a_silent_connection_is_closed_after_the_idle_time(root_dir: Path, short_dir: Path) -> None:
    async def main() -> None:
        backend = FakeBackend([str(root_dir)])
        async with serving(backend, short_dir, idle_timeout=1.0) as (server, broker):
            silent_reader, silent = await asyncio.open_unix_connection(server.path)
            partial_reader, partial = await asyncio.open_unix_connection(server.path)
            partial.write(b'{"id": 1, "cmd": "hel')  # a line never finished is no request
            async with await AsyncClient.connect(server.path) as subscriber:
                await subscriber.subscribe()
                talker = await AsyncClient.connect(server.path)
                started = time.monotonic()
                # Requests spaced by a tenth of the idle time keep it open, for longer than it
                # (a pause of the test's process short of 0.9 s does not close it).
                for _ in range(12):
                    await asyncio.sleep(0.1)
                    await talker.hello()
                async with asyncio.timeout(10):
                    for reader in (silent_reader, partial_reader):
                        line = await reader.readline()
                        assert json.loads(line)["error"]["code"] == "idle_timeout"
                        assert await reader.read() == b""  # and closed
                assert time.monotonic() - started >= 1.0
                await talker.hello()
                # Quiet for longer than the idle time (a connection opened now is closed for
                # it meanwhile), the subscriber still gets its events.
                later_reader, later = await asyncio.open_unix_connection(server.path)
                async with asyncio.timeout(10):
                    line = await later_reader.readline()
                assert json.loads(line)["error"]["code"] == "idle_timeout"
                later.close()
                event = backend.commit(EventType.FILE_ADDED, str(root_dir), f"{root_dir}/a.txt")
                broker.publish(event)
                async with asyncio.timeout(10):
                    received = await anext(aiter(subscriber.events()))
                assert received.seq == event.seq
                await talker.close()
            silent.close()
            partial.close()

    asyncio.run(main())


@pytest.mark.slow
def test_a_long_line_written_slowly_is_not_idle(root_dir: Path, short_dir: Path) -> None:
    """A client still writing its request (a long line in small writes, as on a busy machine)
    is served, not closed after the idle time: any byte received counts, so its pipe is never
    broken under its writes."""
    idle, pieces = 1.0, 50

    async def main() -> None:
        backend = FakeBackend([str(root_dir)])
        async with serving(backend, short_dir, idle_timeout=idle) as (server, _):
            reader, writer = await asyncio.open_unix_connection(server.path)
            line = b'{"id": 7, "cmd": "hello",' + b" " * pieces * 10 + b'"client": "slow"}\n'
            step = len(line) // pieces + 1
            started = time.monotonic()
            for at in range(0, len(line), step):
                writer.write(line[at : at + step])
                await writer.drain()
                await asyncio.sleep(idle / 20)  # the pace of a slow writer: well within idle
            assert time.monotonic() - started > 2 * idle  # longer than the idle time in all
            async with asyncio.timeout(10):
                reply = json.loads(await reader.readline())
            assert reply["id"] == 7 and reply["ok"], reply
            writer.close()

    asyncio.run(main())


def test_a_reply_over_the_limit_is_refused_and_the_connection_carries_on(
    root_dir: Path, short_dir: Path
) -> None:
    async def main() -> None:
        backend = FakeBackend([str(root_dir)])
        async with serving(backend, short_dir, max_reply_bytes=100) as (server, _):
            reader, writer = await asyncio.open_unix_connection(server.path)
            writer.write(b'{"id": 1, "cmd": "hello"}\n{"id": 2, "cmd": "nonsense"}\n')
            async with asyncio.timeout(10):
                too_large = json.loads(await reader.readline())
                after = json.loads(await reader.readline())
            assert too_large["id"] == 1 and too_large["error"]["code"] == "reply_too_large"
            assert after["id"] == 2 and after["error"]["code"] == "unknown_command"
            writer.close()

    asyncio.run(main())
