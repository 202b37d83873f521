"""Requests over a real socket to a real server with a fake daemon behind it."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from isccd.client import AsyncClient
from isccd.errors import ProtocolError, StoreError
from isccd.model import EventType, UnitType
from isccd.protocol import (
    MAX_LINE_BYTES,
    PROTOCOL_VERSION,
    Command,
    DupesRequest,
    HelloRequest,
    Reply,
    RescanRequest,
    SimilarRequest,
)
from isccd.results import DupesQuery, FileInfo, SimilarQuery

from .fakes import FakeBackend, serving

Scenario = Callable[[AsyncClient, FakeBackend], Awaitable[None]]


def run(root: Path, directory: Path, scenario: Scenario, **options: Any) -> FakeBackend:
    backend = FakeBackend([str(root)])

    async def main() -> None:
        async with (
            serving(backend, directory, **options) as (server, _),
            await AsyncClient.connect(server.path) as client,
        ):
            await scenario(client, backend)

    asyncio.run(main())
    return backend


def _code(reply: Reply) -> str:
    assert reply.error is not None, reply
    return reply.error.code


def test_hello_says_what_the_server_speaks(root_dir: Path, short_dir: Path) -> None:
    async def scenario(client: AsyncClient, _: FakeBackend) -> None:
        hello = await client.hello()
        assert hello.protocol == PROTOCOL_VERSION
        assert set(hello.commands) == {c.value for c in Command}
        assert "dup.exact" in hello.events
        assert "subscriber.lagged" in hello.events
        assert hello.max_line_bytes == MAX_LINE_BYTES
        assert hello.subscriber_queue == 1000
        assert hello.server.startswith("isccd ")
        reply = await client.request(HelloRequest(0, protocol=PROTOCOL_VERSION + 1))
        assert _code(reply) == "unsupported_version"

    run(root_dir, short_dir, scenario)


def test_status_combines_the_daemon_and_the_server(root_dir: Path, short_dir: Path) -> None:
    async def scenario(client: AsyncClient, backend: FakeBackend) -> None:
        backend.commit(EventType.FILE_ADDED, str(root_dir), f"{root_dir}/a.txt")
        status = await client.status()
        assert status.pid == os.getpid()
        assert [r.path for r in status.roots] == [str(root_dir)]
        assert status.last_seq == 1
        assert status.queue_depth == 3
        assert status.server is not None
        assert status.server.connections == 1
        assert status.server.subscribers == 0

    run(root_dir, short_dir, scenario)


def test_get_resolves_the_path_and_answers_from_the_index(root_dir: Path, short_dir: Path) -> None:
    info = FileInfo(
        f"{root_dir}/sub/b.txt",
        str(root_dir),
        size=1,
        units={UnitType.DATA: "ISCC:GAAQQICA"},
    )

    async def scenario(client: AsyncClient, backend: FakeBackend) -> None:
        backend.files[info.path] = info
        assert await client.get(f"{root_dir}/sub/../sub/./b.txt") == info
        with pytest.raises(ProtocolError) as not_found:
            await client.get(f"{root_dir}/a.txt")
        assert not_found.value.code == "not_found"

    backend = run(root_dir, short_dir, scenario)
    assert backend.calls == [("get", info.path), ("get", f"{root_dir}/a.txt")]


def test_paths_outside_the_roots_never_reach_the_daemon(root_dir: Path, short_dir: Path) -> None:
    (root_dir / "escape").symlink_to("/etc")

    async def scenario(client: AsyncClient, _: FakeBackend) -> None:
        for path in ("/etc/passwd", f"{root_dir}/../x", f"{root_dir}/escape/passwd"):
            with pytest.raises(ProtocolError) as outside:
                await client.get(path)
            assert outside.value.code == "outside_roots"
        for request in (
            SimilarRequest(0, SimilarQuery(path="/etc/passwd")),
            DupesRequest(0, DupesQuery(root="/etc")),
            RescanRequest(0, "/etc"),
        ):
            assert _code(await client.request(request)) == "outside_roots"
        with pytest.raises(ProtocolError) as sync_outside:
            await client.sync("/etc")
        assert sync_outside.value.code == "outside_roots"
        assert (await client.hello()).protocol == PROTOCOL_VERSION  # still connected

    backend = run(root_dir, short_dir, scenario)
    assert backend.calls == []


def test_outside_paths_answer_alike_whether_they_exist_or_not(
    root_dir: Path, short_dir: Path
) -> None:
    # Through a link in the root, through an ancestor of the root, and elsewhere: an existing
    # and a missing path get the same reply, word for word but for the path itself.
    (short_dir / "outside").mkdir()
    (short_dir / "outside" / "secret").write_text("s")
    (root_dir / "escape").symlink_to(short_dir / "outside")
    pairs = [
        (f"{root_dir}/escape/secret", f"{root_dir}/escape/missing"),
        (f"{short_dir}/outside/secret", f"{short_dir}/outside/missing"),
        (f"{short_dir}/outside/secret", f"{short_dir}/missing/secret"),
        (f"{root_dir}/../outside/secret", f"{root_dir}/../missing/secret"),
        ("/etc/passwd", "/etc/no-such-file"),
        (str(short_dir), f"{short_dir}-missing"),
    ]

    async def scenario(client: AsyncClient, _: FakeBackend) -> None:
        for key, cmd in (("path", c) for c in ("get", "similar", "rescan", "sync")):
            for exists, missing in pairs:
                answers = []
                for path in (exists, missing):
                    line = json.dumps({"id": 1, "cmd": cmd, key: path}).encode() + b"\n"
                    await client.send_raw(line)
                    reply = await client.read_reply()
                    assert reply.error is not None, reply
                    answers.append((reply.error.code, reply.error.message.replace(repr(path), "P")))
                assert answers[0] == answers[1] == ("outside_roots", answers[0][1]), answers
        await client.send_raw(
            json.dumps({"id": 2, "cmd": "dupes", "root": "/nope"}).encode() + b"\n"
        )
        assert _code(await client.read_reply()) == "outside_roots"

    backend = run(root_dir, short_dir, scenario)
    assert backend.calls == []


def test_similar_dupes_rescan_and_sync(root_dir: Path, short_dir: Path) -> None:
    async def scenario(client: AsyncClient, backend: FakeBackend) -> None:
        for name in ("a.txt", "sub/b.txt"):
            backend.files[f"{root_dir}/{name}"] = FileInfo(f"{root_dir}/{name}", str(root_dir))
        reply = await client.request(
            SimilarRequest(0, SimilarQuery(path=f"{root_dir}/./a.txt", limit=5))
        )
        matches = reply.unwrap()["matches"]
        assert [m["path"] for m in matches] == [f"{root_dir}/sub/b.txt"]
        assert matches[0]["distance"] == 3
        assert _code(await client.request(SimilarRequest(0, SimilarQuery(code="bad")))) == (
            "invalid_argument"
        )
        assert (await client.request(DupesRequest(0, DupesQuery(near=True)))).unwrap() == {
            "groups": [],
            "truncated": False,
            "totals": {"groups": 0, "files": 0, "reclaimable": 0, "reclaimable_size": 0},
        }
        rescan = await client.request(RescanRequest(0, f"{root_dir}/sub"))
        assert rescan.unwrap() == {"roots": [f"{root_dir}/sub"]}
        backend.commit(EventType.FILE_ADDED, str(root_dir), f"{root_dir}/c.txt")
        assert await client.sync() == 1

    backend = run(root_dir, short_dir, scenario)
    assert [name for name, _ in backend.calls] == ["similar", "similar", "dupes", "rescan", "sync"]
    assert backend.calls[0][1] == SimilarQuery(path=f"{root_dir}/a.txt", limit=5)


def test_sync_answers_only_after_the_daemon_has_caught_up(root_dir: Path, short_dir: Path) -> None:
    async def scenario(client: AsyncClient, backend: FakeBackend) -> None:
        backend.sync_gate = asyncio.Event()
        barrier = asyncio.ensure_future(client.sync())
        while not backend.calls:
            await asyncio.sleep(0)
        for _ in range(20):
            await asyncio.sleep(0)
        assert not barrier.done()
        backend.commit(EventType.FILE_CHANGED, str(root_dir), f"{root_dir}/a.txt")
        backend.sync_gate.set()
        assert await barrier == 1

    run(root_dir, short_dir, scenario)


async def _raw_errors(client: AsyncClient, payload: bytes, count: int) -> list[Reply]:
    await client.send_raw(payload)
    return [await client.read_reply() for _ in range(count)]


def test_bad_input_gets_error_replies_and_the_connection_carries_on(
    root_dir: Path, short_dir: Path
) -> None:
    async def scenario(client: AsyncClient, _: FakeBackend) -> None:
        replies = await _raw_errors(
            client,
            b'{"id": 1, "cmd": "status"\n'  # malformed JSON
            b'{"id": 2, "cmd": "teleport"}\n'  # unknown command
            b"\xc3\x28\xff\n"  # invalid UTF-8
            b"[1, 2, 3]\n"  # not an object
            b'{"id": 5, "cmd": "get", "path": 5}\n'  # bad argument
            b'{"id": 6, "cmd": "get", "path": "/x", "deep": true}\n',  # unknown argument
            6,
        )
        assert [(r.id, _code(r)) for r in replies] == [
            (None, "invalid_json"),
            (2, "unknown_command"),
            (None, "invalid_utf8"),
            (None, "not_an_object"),
            (5, "invalid_argument"),
            (6, "invalid_argument"),
        ]
        assert all(r.error is not None and r.error.message for r in replies)
        assert (await client.hello()).protocol == PROTOCOL_VERSION

    run(root_dir, short_dir, scenario)


def test_an_oversized_line_is_refused_and_the_next_request_is_served(
    root_dir: Path, short_dir: Path
) -> None:
    async def scenario(client: AsyncClient, _: FakeBackend) -> None:
        huge = b'{"id": 1, "cmd": "get", "path": "/' + b"a" * (MAX_LINE_BYTES + 10) + b'"}\n'
        (reply,) = await _raw_errors(client, huge, 1)
        assert reply.id is None
        assert _code(reply) == "line_too_long"
        assert (await client.hello()).protocol == PROTOCOL_VERSION

    run(root_dir, short_dir, scenario)


def test_pipelined_requests_are_answered_in_order(root_dir: Path, short_dir: Path) -> None:
    async def scenario(client: AsyncClient, _: FakeBackend) -> None:
        lines = b"".join(
            json.dumps({"id": f"r{i}", "cmd": "hello" if i % 2 else "status"}).encode() + b"\n"
            for i in range(200)
        )
        await client.send_raw(lines)
        replies = [await client.read_reply() for _ in range(200)]
        assert [r.id for r in replies] == [f"r{i}" for i in range(200)]
        assert all(r.ok for r in replies)

    run(root_dir, short_dir, scenario, max_pending_requests=8)


def test_daemon_failures_become_error_replies(root_dir: Path, short_dir: Path) -> None:
    async def scenario(client: AsyncClient, backend: FakeBackend) -> None:
        backend.fail_with = StoreError("database is locked")
        with pytest.raises(ProtocolError) as unavailable:
            await client.status()
        assert unavailable.value.code == "unavailable"
        backend.fail_with = RuntimeError("a bug")
        with pytest.raises(ProtocolError) as internal:
            await client.status()
        assert internal.value.code == "internal_error"
        assert "a bug" not in internal.value.message  # internals are logged, not sent
        backend.fail_with = None
        assert (await client.status()).last_seq == 0

    run(root_dir, short_dir, scenario)


def test_a_client_that_half_closes_still_gets_its_replies(root_dir: Path, short_dir: Path) -> None:
    async def main() -> None:
        backend = FakeBackend([str(root_dir)])
        async with serving(backend, short_dir) as (server, _):
            reader, writer = await asyncio.open_unix_connection(server.path)
            writer.write(b'{"id": 1, "cmd": "hello"}\n{"id": 2, "cmd": "status"}')
            writer.write_eof()
            data = await reader.read()  # until the server closes
            writer.close()
        replies = [json.loads(line) for line in data.splitlines()]
        assert [(r["id"], r["ok"]) for r in replies] == [(1, True), (2, True)]

    asyncio.run(main())


def test_clients_over_the_limit_are_refused(root_dir: Path, short_dir: Path) -> None:
    async def main() -> None:
        backend = FakeBackend([str(root_dir)])
        async with serving(backend, short_dir, max_clients=2) as (server, _):
            first = await AsyncClient.connect(server.path)
            second = await AsyncClient.connect(server.path)
            await first.hello()
            await second.hello()
            reader, writer = await asyncio.open_unix_connection(server.path)
            line = await reader.readline()
            assert json.loads(line)["error"]["code"] == "too_many_clients"
            assert await reader.read() == b""  # and closed
            writer.close()
            assert server.statistics().refused == 1
            await first.close()
            await second.close()

    asyncio.run(main())


def test_lone_surrogates_are_refused_and_the_connection_and_subscription_carry_on(
    root_dir: Path, short_dir: Path
) -> None:
    # Each string field, with a JSON escape that stands for no character (and no byte of a
    # file name), pipelined between good requests on a subscribed connection.
    bad: list[dict[str, Any]] = [
        {"cmd": "get", "path": f"{root_dir}/\ud800"},
        {"cmd": "similar", "path": f"{root_dir}/\udfff"},
        {"cmd": "dupes", "root": f"{root_dir}/\ud800"},
        {"cmd": "rescan", "path": f"{root_dir}/\ud800"},
        {"cmd": "sync", "path": f"{root_dir}/\ud800"},
        {"cmd": "subscribe", "roots": [f"{root_dir}/\ud800"]},
        {"cmd": "hello", "client": "\ud800"},
    ]

    async def main() -> None:
        backend = FakeBackend([str(root_dir)])
        async with (
            serving(backend, short_dir) as (server, broker),
            await AsyncClient.connect(server.path) as client,
        ):
            await client.subscribe()
            lines = []
            for i, fields in enumerate(bad):
                lines.append(json.dumps({"id": f"bad{i}", **fields}))
                lines.append(json.dumps({"id": f"ok{i}", "cmd": "status"}))
            await client.send_raw("\n".join(lines).encode() + b"\n")
            replies = [await client.read_reply() for _ in lines]
            assert [(r.id, r.ok or _code(r)) for r in replies] == [
                pair
                for i in range(len(bad))
                for pair in ((f"bad{i}", "invalid_argument"), (f"ok{i}", True))
            ]
            event = backend.commit(EventType.FILE_ADDED, str(root_dir), f"{root_dir}/a.txt")
            broker.publish(event)
            async with asyncio.timeout(10):
                received = await anext(aiter(client.events()))
            assert received.seq == event.seq

    asyncio.run(main())
