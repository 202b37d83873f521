"""The socket file: permissions, its directory, stale and live sockets, peers, shutdown."""

from __future__ import annotations

import asyncio
import grp
import os
import socket
import stat
import sys
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from isccd.client import AsyncClient
from isccd.errors import DaemonUnavailableError, SocketSetupError
from isccd.model import EventType
from isccd.server import Broker, PeerCredentials, Server, ServerOptions, open_socket

from .fakes import FakeBackend, serving


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_the_socket_is_0660_in_a_directory_created_0750(short_dir: Path) -> None:
    path = short_dir / "run" / "isccd.sock"
    sock = open_socket(path)
    try:
        assert stat.S_ISSOCK(path.lstat().st_mode)
        assert _mode(path) == 0o660
        assert _mode(path.parent) == 0o750
        assert path.lstat().st_uid == os.geteuid()
        assert not (short_dir / "run" / ".isccd.sock").exists()  # the temporary name is gone
    finally:
        sock.close()
    assert not path.exists()


def test_a_private_socket_gets_a_private_directory_and_the_group_it_asks_for(
    short_dir: Path,
) -> None:
    private = open_socket(short_dir / "p" / "s.sock", mode=0o600)
    private.close()
    assert _mode(short_dir / "p") == 0o700
    group = grp.getgrgid(os.getegid()).gr_name
    for name in (group, str(os.getegid())):
        grouped = open_socket(short_dir / "g" / "s.sock", group=name)
        try:
            assert (short_dir / "g" / "s.sock").lstat().st_gid == os.getegid()
        finally:
            grouped.close()
    with pytest.raises(SocketSetupError, match="does not exist"):
        open_socket(short_dir / "g" / "s.sock", group="no-such-group-isccd")


@pytest.mark.parametrize(
    ("mode", "who"), [(0o777, "others"), (0o1777, "others"), (0o770, "its group")]
)
def test_a_directory_others_can_write_is_refused(short_dir: Path, mode: int, who: str) -> None:
    directory = short_dir / "shared"
    directory.mkdir()
    directory.chmod(mode)
    with pytest.raises(SocketSetupError, match=f"writable by {who}"):
        open_socket(directory / "isccd.sock")
    assert not (directory / "isccd.sock").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory away needs root")
def test_a_directory_owned_by_someone_else_is_refused(short_dir: Path) -> None:
    directory = short_dir / "theirs"
    directory.mkdir(mode=0o755)
    os.chown(directory, 65534, 65534)
    with pytest.raises(SocketSetupError, match="owned by uid 65534"):
        open_socket(directory / "isccd.sock")


def test_a_path_too_long_for_a_socket_address_is_refused(short_dir: Path) -> None:
    with pytest.raises(SocketSetupError, match="longer than 107 bytes"):
        open_socket(short_dir / ("d" * 100) / "isccd.sock")


def test_something_that_is_not_a_socket_is_left_alone(short_dir: Path) -> None:
    path = short_dir / "run" / "isccd.sock"
    path.parent.mkdir(mode=0o700)
    path.write_text("precious")
    with pytest.raises(SocketSetupError, match="not a socket"):
        open_socket(path)
    assert path.read_text() == "precious"


def test_a_stale_socket_is_replaced(short_dir: Path) -> None:
    path = short_dir / "run" / "isccd.sock"
    path.parent.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))
    dead.close()  # the file stays, nobody listens: what a crashed daemon leaves
    sock = open_socket(path)
    try:
        with socket.socket(socket.AF_UNIX) as probe:
            probe.connect(str(path))
    finally:
        sock.close()


def test_a_live_listener_is_never_replaced(short_dir: Path) -> None:
    path = short_dir / "run" / "isccd.sock"
    path.parent.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX) as live:
        live.bind(str(path))
        live.listen()
        with pytest.raises(SocketSetupError, match="already listening"):
            open_socket(path)
        assert path.exists()


def test_a_second_daemon_is_refused_and_the_first_keeps_serving(
    root_dir: Path, short_dir: Path
) -> None:
    async def main() -> None:
        backend = FakeBackend([str(root_dir)])
        async with serving(backend, short_dir) as (server, _):
            second = Server(backend, Broker(), ServerOptions(server.path))
            with pytest.raises(SocketSetupError, match="another isccd is running"):
                await second.start()
            await second.close()
            async with await AsyncClient.connect(server.path) as client:
                await client.hello()
            assert server.path.exists()

    asyncio.run(main())


def test_each_connection_logs_and_reports_who_connected(root_dir: Path, short_dir: Path) -> None:
    async def main() -> None:
        backend = FakeBackend([str(root_dir)])
        async with serving(backend, short_dir) as (server, _):
            with capture_logs() as logs:
                async with await AsyncClient.connect(server.path) as client:
                    await client.hello()
                    (mine,) = server.statistics().connections
                    assert mine.peer == PeerCredentials(os.getpid(), os.getuid(), os.getgid())
                # Another process: its own pid is seen.
                child = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-c",
                    "import socket, sys\n"
                    "s = socket.socket(socket.AF_UNIX)\n"
                    "s.connect(sys.argv[1])\n"
                    's.sendall(b\'{"id": 1, "cmd": "hello"}\\n\')\n'
                    "s.recv(65536)\n"
                    "sys.stdin.read()\n",
                    str(server.path),
                    stdin=asyncio.subprocess.PIPE,
                )
                child_peer = PeerCredentials(child.pid, os.getuid(), os.getgid())
                while not any(
                    c.peer == child_peer and c.requests for c in server.statistics().connections
                ):
                    await asyncio.sleep(0.01)
                assert child.stdin is not None
                child.stdin.close()
                assert await child.wait() == 0
            connected = [e for e in logs if e["event"] == "client_connected"]
            assert [(e["pid"], e["uid"], e["gid"]) for e in connected] == [
                (os.getpid(), os.getuid(), os.getgid()),
                (child.pid, os.getuid(), os.getgid()),
            ]

    asyncio.run(main())


def test_shutdown_is_bounded_closes_everyone_and_removes_the_socket(
    root_dir: Path, short_dir: Path
) -> None:
    async def main() -> None:
        backend = FakeBackend([str(root_dir)])
        backend.sync_gate = asyncio.Event()  # a barrier that never completes
        options = {"shutdown_timeout": 0.3, "close_timeout": 0.3, "write_buffer_bytes": 1024}
        async with serving(backend, short_dir, queue_size=100_000, **options) as (server, broker):
            idle = await AsyncClient.connect(server.path)
            await idle.hello()
            busy = await AsyncClient.connect(server.path)
            barrier = asyncio.ensure_future(busy.sync())
            stuck_reader, stuck_writer = await asyncio.open_unix_connection(server.path, limit=1024)
            stuck_writer.write(b'{"id": 1, "cmd": "subscribe"}\n')
            await stuck_reader.readline()
            for i in range(3000):  # more than the socket buffers hold: its writer is stuck
                backend.commit(backend_type(), str(root_dir), f"{root_dir}/{i}", pad="x" * 500)
            for event in backend.log:
                broker.publish(event)
            while not backend.calls:
                await asyncio.sleep(0.01)
            started = time.monotonic()
            await server.close()
            elapsed = time.monotonic() - started
            await server.close()  # idempotent
            assert elapsed < 0.3 + 0.3 + 2.0
            assert not server.path.exists()
            assert not (server.path.parent / ".isccd.sock").exists()
            assert server.statistics().connections == ()
            with pytest.raises(DaemonUnavailableError):
                await barrier
            assert [e async for e in idle.events()] == []  # end of stream
            for client in (idle, busy):
                await client.close()
            stuck_writer.close()
            with pytest.raises(DaemonUnavailableError):
                await AsyncClient.connect(server.path)

    def backend_type() -> EventType:
        return EventType.FILE_ADDED

    asyncio.run(main())


def test_a_server_can_start_again_on_the_same_path(root_dir: Path, short_dir: Path) -> None:
    async def main() -> None:
        backend = FakeBackend([str(root_dir)])
        for _ in range(2):
            async with (
                serving(backend, short_dir) as (server, _),
                await AsyncClient.connect(server.path) as client,
            ):
                await client.hello()

    asyncio.run(main())
