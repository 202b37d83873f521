"""Subscriptions over real sockets: replay joined to live, filters, lag, resume."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.client import AsyncClient
from isccd.errors import ProtocolError, StoreError
from isccd.model import Event, EventType
from isccd.protocol import SubscribeRequest
from isccd.server import Broker, Server

from .fakes import HOST, FakeBackend, publish_all, serving

A, B = EventType.DUP_EXACT, EventType.FILE_ADDED


def _run(
    root: Path,
    directory: Path,
    scenario: Callable[[Server, Broker, FakeBackend], Awaitable[None]],
    **options: Any,
) -> None:
    backend = FakeBackend([str(root)])

    async def main() -> None:
        async with serving(backend, directory, **options) as (server, broker):
            await scenario(server, broker, backend)

    asyncio.run(main())


async def _take(client: AsyncClient, count: int) -> list[Event]:
    out: list[Event] = []
    async for event in client.events():
        out.append(event)
        if len(out) == count:
            break
    return out


def _commit(backend: FakeBackend, broker: Broker | None, root: Path, n: int, **kw: Any) -> None:
    for i in range(n):
        event_type = kw.get("event_type", A if i % 2 else B)
        backend.commit(event_type, kw.get("event_root", str(root)), f"{root}/f{i}")
    if broker is not None:
        publish_all(backend, broker)


def test_replay_then_live(root_dir: Path, short_dir: Path) -> None:
    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        _commit(backend, broker, root_dir, 10)
        async with await AsyncClient.connect(server.path) as client:
            result = await client.subscribe(since=3)
            assert (result.since, result.head, result.first, result.complete) == (3, 10, 1, True)
            assert [e.seq for e in await _take(client, 7)] == list(range(4, 11))
            _commit(backend, broker, root_dir, 5)
            live = await _take(client, 5)
            assert [e.seq for e in live] == list(range(11, 16))
            assert live[0].path == f"{root_dir}/f0"
            assert live[0].time == backend.log[10].time
            assert client.last_seq == 15

    _run(root_dir, short_dir, scenario)


def test_without_since_only_new_events_come(root_dir: Path, short_dir: Path) -> None:
    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        _commit(backend, broker, root_dir, 4)
        async with await AsyncClient.connect(server.path) as client:
            result = await client.subscribe()
            assert (result.since, result.head) == (4, 4)
            _commit(backend, broker, root_dir, 2)
            assert [e.seq for e in await _take(client, 2)] == [5, 6]

    _run(root_dir, short_dir, scenario)


def test_filters_select_types_and_roots(root_dir: Path, short_dir: Path) -> None:
    other = "/srv/other"

    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        _commit(backend, None, root_dir, 6)  # seq 1..6, alternating B, A
        _commit(backend, None, root_dir, 2, event_root=other, event_type=A)  # 7, 8
        _commit(backend, None, root_dir, 1, event_root="", event_type=A)  # 9, daemon-wide
        publish_all(backend, broker)
        async with (
            await AsyncClient.connect(server.path) as by_type,
            await AsyncClient.connect(server.path) as by_root,
        ):
            await by_type.subscribe(since=0, types=[A])
            await by_root.subscribe(since=0, roots=[f"{root_dir}/"])
            assert [e.seq for e in await _take(by_type, 6)] == [2, 4, 6, 7, 8, 9]
            assert [e.seq for e in await _take(by_root, 7)] == [1, 2, 3, 4, 5, 6, 9]
            _commit(backend, broker, root_dir, 2)  # live: 10 (B), 11 (A)
            assert [e.seq for e in await _take(by_type, 1)] == [11]
            assert [e.seq for e in await _take(by_root, 2)] == [10, 11]

    _run(root_dir, short_dir, scenario)


def test_a_subscription_follows_its_host_unless_it_asks_for_the_fleet(
    root_dir: Path, short_dir: Path
) -> None:
    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        backend.commit(B, str(root_dir), f"{root_dir}/mine", host=HOST)  # 1
        backend.commit(B, "/srv/b", "/srv/b/theirs", host="host-b")  # 2
        backend.commit(A, str(root_dir), f"{root_dir}/mine", host=HOST)  # 3: about this host
        backend.commit(A, "", "")  # 4: a notice about no host
        publish_all(backend, broker)
        async with (
            await AsyncClient.connect(server.path) as own,
            await AsyncClient.connect(server.path) as fleet,
        ):
            await own.subscribe(since=0)
            await fleet.subscribe(since=0, fleet=True)
            assert [e.seq for e in await _take(own, 3)] == [1, 3, 4]
            replayed = await _take(fleet, 4)
            assert [(e.seq, e.host) for e in replayed] == [
                (1, HOST), (2, "host-b"), (3, HOST), (4, "")
            ]  # fmt: skip
            backend.commit(B, "/srv/b", "/srv/b/more", host="host-b")  # 5
            backend.commit(B, str(root_dir), f"{root_dir}/new", host=HOST)  # 6
            publish_all(backend, broker)
            assert [e.seq for e in await _take(own, 1)] == [6]
            assert [e.seq for e in await _take(fleet, 2)] == [5, 6]
            # The other host's events were skipped over: resuming from here misses nothing.
            assert (await own.unsubscribe()).seq == 6

    _run(root_dir, short_dir, scenario)


def test_since_ahead_of_the_log_and_double_subscriptions_are_refused(
    root_dir: Path, short_dir: Path
) -> None:
    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        _commit(backend, broker, root_dir, 3)
        async with await AsyncClient.connect(server.path) as client:
            with pytest.raises(ProtocolError) as ahead:
                await client.subscribe(since=4)
            assert ahead.value.code == "unknown_seq"
            assert broker.statistics().subscribers == 0
            await client.subscribe(since=3)
            reply = await client.request(SubscribeRequest(0))
            assert reply.error is not None
            assert reply.error.code == "already_subscribed"
            _commit(backend, broker, root_dir, 1)
            assert [e.seq for e in await _take(client, 1)] == [4]

    _run(root_dir, short_dir, scenario)


def test_a_since_from_another_store_is_refused_and_the_store_is_told(
    root_dir: Path, short_dir: Path
) -> None:
    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        _commit(backend, broker, root_dir, 3)
        async with await AsyncClient.connect(server.path) as client:
            assert (await client.hello()).store == backend.store
            other = "00000000-0000-4000-8000-000000000002"
            with pytest.raises(ProtocolError) as refused:
                await client.subscribe(since=1, store=other)
            assert refused.value.code == "store_mismatch"
            assert other in refused.value.message and backend.store in refused.value.message
            assert broker.statistics().subscribers == 0
            result = await client.subscribe(since=1, store=backend.store)
            assert (result.store, client.store) == (backend.store, backend.store)
            assert [e.seq for e in await _take(client, 2)] == [2, 3]

    _run(root_dir, short_dir, scenario)


def test_a_replay_over_pruned_events_says_it_is_incomplete(root_dir: Path, short_dir: Path) -> None:
    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        _commit(backend, broker, root_dir, 10)
        backend.prune(upto=5)
        async with await AsyncClient.connect(server.path) as client:
            result = await client.subscribe(since=2)
            assert (result.first, result.complete) == (6, False)
            assert [e.seq for e in await _take(client, 5)] == [6, 7, 8, 9, 10]
        async with await AsyncClient.connect(server.path) as client:
            assert (await client.subscribe(since=5)).complete

    _run(root_dir, short_dir, scenario)


def test_unsubscribe_returns_the_resume_point_and_stops_the_events(
    root_dir: Path, short_dir: Path
) -> None:
    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        _commit(backend, broker, root_dir, 3)
        async with await AsyncClient.connect(server.path) as client:
            await client.subscribe(since=0, types=[B])
            assert [e.seq for e in await _take(client, 2)] == [1, 3]
            result = await client.unsubscribe()
            assert (result.subscribed, result.seq) == (True, 3)
            assert broker.statistics().subscribers == 0
            _commit(backend, broker, root_dir, 3)
            await client.hello()
            await client.subscribe(since=result.seq, types=[B])
            assert [e.seq for e in await _take(client, 2)] == [4, 6]
            assert (await client.unsubscribe()).seq == 6
            assert not (await client.unsubscribe()).subscribed

    _run(root_dir, short_dir, scenario)


def test_events_replayed_before_the_daemon_published_them_come_once(
    root_dir: Path, short_dir: Path
) -> None:
    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        _commit(backend, broker, root_dir, 2)
        _commit(backend, None, root_dir, 3)  # committed (3, 4, 5), not published yet
        async with await AsyncClient.connect(server.path) as client:
            await client.subscribe(since=0)
            assert [e.seq for e in await _take(client, 5)] == [1, 2, 3, 4, 5]
            publish_all(backend, broker)  # the late publication of 3, 4, 5
            _commit(backend, broker, root_dir, 1)
            assert [e.seq for e in await _take(client, 1)] == [6]

    _run(root_dir, short_dir, scenario)


def test_a_failing_event_log_ends_the_subscription_not_the_daemon(
    root_dir: Path, short_dir: Path
) -> None:
    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        _commit(backend, broker, root_dir, 3)
        async with await AsyncClient.connect(server.path) as client:
            backend.fail_with = StoreError("disk I/O error")
            with pytest.raises(ProtocolError) as failed:
                await client.subscribe(since=0)
            assert failed.value.code == "unavailable"
        backend.fail_with = None
        async with await AsyncClient.connect(server.path) as client:
            backend.replay_error = StoreError("disk I/O error")  # now during the replay
            await client.subscribe(since=0)
            assert [e async for e in client.events()] == []  # closed without events
        backend.replay_error = None
        async with await AsyncClient.connect(server.path) as client:
            await client.subscribe(since=0)
            assert len(await _take(client, 3)) == 3

    _run(root_dir, short_dir, scenario)


def test_a_subscriber_that_stops_reading_lags_and_the_others_keep_receiving(
    root_dir: Path, short_dir: Path
) -> None:
    pad = "x" * 1000

    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        slow_reader, slow_writer = await asyncio.open_unix_connection(server.path, limit=1024)
        slow_writer.write(b'{"id": 1, "cmd": "subscribe", "since": 0}\n')
        assert json.loads(await slow_reader.readline())["ok"]
        fast = await AsyncClient.connect(server.path)
        await fast.subscribe(since=0)
        fast_seqs: list[int] = []

        async def read_fast() -> None:
            async for event in fast.events():
                fast_seqs.append(event.seq)
                if event.path == "last":
                    return

        reading = asyncio.ensure_future(read_fast())
        count = 0
        while broker.statistics().lagged == 0:
            count += 1
            assert count < 50_000, "the slow subscriber never lagged"
            backend.commit(B, str(root_dir), f"{root_dir}/f{count}", pad=pad)
            publish_all(backend, broker)
            for _ in range(3):
                await asyncio.sleep(0)
        for i in range(20):
            backend.commit(B, str(root_dir), f"{root_dir}/after{i}")
        last = backend.commit(A, str(root_dir), "last")
        publish_all(backend, broker)
        await reading
        await fast.close()
        assert fast_seqs == list(range(1, last.seq + 1))

        # The slow one gets what was sent before the lag, the notice, and the end of stream.
        lines = (await slow_reader.read()).splitlines()
        slow_writer.close()
        messages = [json.loads(line) for line in lines]
        notice = messages[-1]
        assert notice["event"] == "subscriber.lagged"
        resume = notice["seq"]
        assert notice["resume"] == resume
        seqs = [m["seq"] for m in messages[:-1]]
        assert seqs == list(range(seqs[0], resume + 1)) if seqs else resume >= 0
        assert resume < last.seq
        assert broker.statistics().lagged == 1

        # Resuming from the notice's seq misses nothing and repeats nothing.
        async with await AsyncClient.connect(server.path) as again:
            await again.subscribe(since=resume)
            rest = await _take(again, last.seq - resume)
            assert [e.seq for e in rest] == list(range(resume + 1, last.seq + 1))

    _run(root_dir, short_dir, scenario, queue_size=200, write_buffer_bytes=4096, close_timeout=30)


def test_statistics_follow_subscribers(root_dir: Path, short_dir: Path) -> None:
    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        async with await AsyncClient.connect(server.path) as client:
            await client.subscribe(types=[A])
            _commit(backend, broker, root_dir, 4)
            await _take(client, 2)
            (connection,) = server.statistics().connections
            assert connection.subscription is not None
            assert connection.subscription.delivered == 2
            assert connection.subscription.cursor == 4
            assert not connection.subscription.replaying
            assert server.service_statistics().subscribers == 1
            assert server.service_statistics().events_published == 4
        for _ in range(100):
            if not server.statistics().connections:
                break
            await asyncio.sleep(0)
        assert broker.statistics().subscribers == 0
        assert server.statistics().connections == ()

    _run(root_dir, short_dir, scenario)


bursts = st.lists(
    st.tuples(st.integers(1, 25), st.integers(0, 3), st.booleans()), min_size=1, max_size=8
)


@settings(max_examples=200)
@given(
    sizes=st.tuples(
        st.integers(0, 40),  # events in the log before subscribing
        st.floats(0, 1),  # where in them `since` points
        st.integers(1, 7),  # replay page
        st.integers(1, 30),  # subscriber queue
        st.integers(0, 2),  # extra loop turns each replay page takes
    ),
    plan=bursts,
    filtered=st.booleans(),
)
def test_replay_and_live_join_without_gap_or_duplicate_under_concurrent_publishing(
    tmp_tree: Path,
    sizes: tuple[int, float, int, int, int],
    plan: list[tuple[int, int, bool]],
    filtered: bool,
) -> None:
    """Whatever the timing, page and queue sizes: every matching event after ``since``, once,
    in order, across as many lag-and-resume rounds as it takes."""
    initial, since_fraction, page, queue, replay_pause = sizes
    root = str(tmp_tree)
    since = int(initial * since_fraction)
    types = [A] if filtered else None
    received: list[int] = []

    async def main() -> None:
        backend = FakeBackend([root])
        backend.replay_pause = replay_pause
        async with serving(backend, tmp_tree.parent, queue_size=queue, replay_page=page) as (
            server,
            broker,
        ):
            for i in range(initial):
                backend.commit(A if i % 3 else B, root, f"{root}/i{i}")
            publish_all(backend, broker)

            async def publisher() -> None:
                for count, yields, late in plan:
                    for i in range(count):
                        backend.commit(A if i % 2 else B, root, f"{root}/p{i}")
                    if late:  # committed, published a little later
                        for _ in range(yields + 1):
                            await asyncio.sleep(0)
                    publish_all(backend, broker)
                    for _ in range(yields):
                        await asyncio.sleep(0)
                backend.commit(A, root, "final")
                publish_all(backend, broker)

            async def subscriber() -> None:
                cursor = since
                while True:
                    async with await AsyncClient.connect(server.path) as client:
                        await client.subscribe(cursor, types=types)
                        async for event in client.events():
                            if event.type is EventType.SUBSCRIBER_LAGGED:
                                cursor = event.seq
                                break
                            received.append(event.seq)
                            cursor = event.seq
                            if event.path == "final":
                                return

            await asyncio.gather(subscriber(), publisher())
            expected = [
                e.seq for e in backend.log if e.seq > since and (not filtered or e.type is A)
            ]
            assert received == expected

    asyncio.run(main())


def test_clients_skip_events_they_do_not_know_but_count_their_seq(short_dir: Path) -> None:
    """A newer server may send event types this client does not know."""

    async def newer_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.write(
            b'{"id":1,"ok":true,"result":{"since":0,"head":0,"first":1,"complete":true}}\n'
            b'{"event":"file.added","seq":1,"time":1,"root":"/r","path":"/r/a"}\n'
            b'{"event":"file.teleported","seq":2,"time":1,"root":"/r","path":"/r/a"}\n'
        )
        writer.close()

    async def main() -> None:
        server = await asyncio.start_unix_server(newer_server, short_dir / "s.sock")
        async with server, await AsyncClient.connect(short_dir / "s.sock") as client:
            await client.subscribe(since=0)
            assert [e.seq async for e in client.events()] == [1]
            assert client.last_seq == 2

    asyncio.run(main())


def test_a_notice_outside_the_log_reaches_live_subscribers_in_order(
    root_dir: Path, short_dir: Path
) -> None:
    async def scenario(server: Server, broker: Broker, backend: FakeBackend) -> None:
        _commit(backend, broker, root_dir, 3)
        async with await AsyncClient.connect(server.path) as client:
            await client.subscribe(since=0)
            assert [e.seq for e in await _take(client, 3)] == [1, 2, 3]
            await client.sync()  # the replay has caught up: the subscription is live
            notice = Event(3, EventType.STORE_DEGRADED, 9.0, "", "", {"reason": "disk full"})
            broker.notify(notice)
            _commit(backend, broker, root_dir, 1)
            got = await _take(client, 2)
            assert [(e.type, e.seq) for e in got] == [
                (EventType.STORE_DEGRADED, 3),
                (EventType.FILE_ADDED, 4),
            ]
            assert got[0].data == {"reason": "disk full"}

    _run(root_dir, short_dir, scenario)
