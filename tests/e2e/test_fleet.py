"""Three daemons, three host names, one PostgreSQL database: a fleet.

Each daemon has its own root and socket. Copies and near copies found across hosts reach the
subscribers of both hosts, naming the other file with its host; a rename on one host reaches
the other hosts' fleet subscribers; the answers span the fleet. Then the hard part: a daemon
killed and restarted, the database stopped and started while files keep coming, and a
subscriber that resumes with ``since`` across all of it receives exactly the events it missed.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from isccd.client import AsyncClient, Client
from isccd.errors import ProtocolError
from isccd.model import Event, EventType
from isccd.results import DupesQuery
from tests.cli.test_index_cli import prose
from tests.e2e.conftest import Daemon, daemons, next_event
from tests.extract.media import scene
from tests.pg import PgServer

#: Each test runs a real daemon process.
pytestmark = pytest.mark.slow

HOSTS = ("fleet-a", "fleet-b", "fleet-c")


@pytest.fixture(scope="module")
def fleet(pg_server: PgServer) -> Iterator[dict[str, Daemon]]:
    """Three daemons on a database of their own, started."""
    database = pg_server.new_database()
    env = {"ISCCD_STORE__URL": pg_server.url(database), "ISCCD_WATCH__SETTLE": "0.1"}
    with daemons() as make:
        made = {host: make(ISCCD_STORE__HOST=host, **env) for host in HOSTS}
        for daemon in made.values():
            daemon.start()
        yield made
    pg_server.drop_database(database)


def write_image(path: Path, fmt: str, seed: int) -> None:
    buffer = io.BytesIO()
    scene(seed=seed).save(buffer, format=fmt, **({"quality": 80} if fmt == "JPEG" else {}))
    path.write_bytes(buffer.getvalue())


async def subscribed(daemon: Daemon, **kw: Any) -> AsyncClient:
    client = await daemon.client()
    await client.subscribe(**kw)
    return client


def of(kind: EventType, path: Path, host: str) -> Callable[[Event], bool]:
    return lambda e: e.type is kind and e.path == str(path) and e.host == host


def others(event: Event) -> list[tuple[str, str]]:
    return [(o["host"], o["path"]) for o in event.data["others"]]


async def until(client: AsyncClient, match: Callable[[Event], bool]) -> list[Event]:
    """Every event up to the first that ``match`` accepts."""
    seen: list[Event] = []
    async with asyncio.timeout(30):
        async for event in client.events():
            seen.append(event)
            if match(event):
                return seen
    raise AssertionError(f"the subscription ended after {seen}")


def test_copies_near_copies_and_renames_reach_every_host(fleet: dict[str, Daemon]) -> None:
    a, b, c = (fleet[h] for h in HOSTS)
    original, copy = a.root / "report.txt", b.root / "report-copy.txt"
    png, jpeg = a.root / "photo.png", c.root / "photo.jpg"
    moved = a.root / "renamed.txt"

    async def scenario() -> None:
        on_a, on_b = await subscribed(a), await subscribed(b)
        whole = await subscribed(c, fleet=True)
        async with on_a, on_b, whole:
            # An exact copy: written on a, then on b. Both hosts hear of it.
            original.write_text(prose(7))
            await next_event(whole, of(EventType.FILE_ADDED, original, "fleet-a"))
            copy.write_text(prose(7))
            mine = await next_event(on_b, of(EventType.DUP_EXACT, copy, "fleet-b"))
            assert others(mine) == [("fleet-a", str(original))]
            theirs = await next_event(on_a, of(EventType.DUP_EXACT, original, "fleet-a"))
            assert others(theirs) == [("fleet-b", str(copy))]

            # An image re-encoded on another host: near by its Image-Code.
            write_image(png, "PNG", seed=3)
            await next_event(whole, of(EventType.FILE_ADDED, png, "fleet-a"))
            write_image(jpeg, "JPEG", seed=3)
            near = await next_event(whole, of(EventType.DUP_NEAR, jpeg, "fleet-c"))
            assert near.data["unit"] == "image" and others(near) == [("fleet-a", str(png))]
            seen_on_a = await next_event(on_a, of(EventType.DUP_NEAR, png, "fleet-a"))
            assert others(seen_on_a) == [("fleet-c", str(jpeg))]

            # A rename on a reaches the fleet's subscribers, not b's own (b's files only).
            original.rename(moved)
            event = await next_event(whole, of(EventType.FILE_MOVED, moved, "fleet-a"))
            assert event.data["from"] == str(original)
            (b.root / "marker.txt").write_text(prose(8))
            seen = await until(on_b, of(EventType.FILE_ADDED, b.root / "marker.txt", "fleet-b"))
            assert {e.host for e in seen} == {"fleet-b"}

    asyncio.run(scenario())

    # Every host answers for the fleet, naming each file's host; --host narrows.
    with Client(c.socket) as client:
        groups = client.dupes(DupesQuery(near=True)).groups
        only_b = client.dupes(DupesQuery(near=True, host="fleet-b")).groups
        status = client.status()
    found = {frozenset((m.host, m.path) for m in g.members) for g in groups}
    assert found == {
        frozenset({("fleet-a", str(moved)), ("fleet-b", str(copy))}),
        frozenset({("fleet-a", str(png)), ("fleet-c", str(jpeg))}),
    }
    assert [sorted(m.host for m in g.members) for g in only_b] == [["fleet-a", "fleet-b"]]
    assert status.database is not None and status.database.connected
    assert status.database.host == "fleet-c" and "postgresql://" in status.database.url
    assert [h.name for h in status.database.hosts] == ["fleet-a", "fleet-b"]
    assert all(h.heard is not None for h in status.database.hosts)


def _until(daemon: Daemon, check: Callable[[Client], bool], timeout: float = 60) -> None:
    """Poll ``check`` on a client of ``daemon`` until it holds; the database may still be
    coming back (``unavailable``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with Client(daemon.socket) as client:
                if check(client):
                    return
        except ProtocolError:
            pass  # the store is not back yet
        if time.monotonic() > deadline:
            raise AssertionError(f"not in time; log:\n{daemon.log_tail()}")
        time.sleep(0.2)


def _indexed(client: Client, paths: list[Path]) -> bool:
    client.sync()
    return all(client.get(str(p)).removed is None for p in paths)


def _written(root: Path, prefix: str, count: int, seed: int) -> list[Path]:
    paths = []
    for i in range(count):
        path = root / f"{prefix}-{i:02d}.txt"
        path.write_text(prose(seed + i, words=80))
        paths.append(path)
    return paths


def test_a_killed_daemon_and_a_restarted_database_lose_no_event(
    fleet: dict[str, Daemon], pg_server: PgServer
) -> None:
    a, b, c = (fleet[h] for h in HOSTS)
    with Client(c.socket) as client:
        store = client.hello().store
        since = client.status().last_seq

    expected = {
        "fleet-a": _written(a.root, "before", 5, 200),
        "fleet-c": _written(c.root, "before", 3, 300),
    }
    # b is killed, files come while it is dead, and it starts again: its start reconciles its
    # root, and the database stops in the middle of that, while files keep coming on a and c.
    b.kill()
    expected["fleet-b"] = _written(b.root, "while-dead", 40, 100)
    b.start()
    pg_server.pause()
    try:
        expected["fleet-a"] += _written(a.root, "during", 5, 400)
        expected["fleet-c"] += _written(c.root, "during", 3, 500)
        # The daemons keep watching, and say they work without their database.
        _until(a, lambda client: client.status().state == "degraded")
        notice = a.wait_notice("STATUS", timeout=30)
        while "degraded" not in notice["STATUS"]:
            notice = a.wait_notice("STATUS", timeout=30)
    finally:
        pg_server.resume()
    expected["fleet-a"] += _written(a.root, "after", 5, 600)

    for host, paths in expected.items():

        def indexed(client: Client, paths: list[Path] = paths) -> bool:
            return _indexed(client, paths)

        _until(fleet[host], indexed)
    _until(a, lambda client: client.status().state == "ready")

    # A subscriber of the fleet resuming from before all this gets exactly what it missed.
    with Client(c.socket) as client:
        head = client.status().last_seq
        client.subscribe(since, store=store, fleet=True)
        received = []
        for event in client.events():
            received.append(event)
            if event.seq >= head:
                break
    database = a.env_extra["ISCCD_STORE__URL"].rsplit("/", 1)[1]
    rows = pg_server.sql(database, f"SELECT seq FROM events WHERE seq > {since} ORDER BY seq")
    logged = [row[0] for row in rows if isinstance(row[0], int) and row[0] <= head]
    assert [e.seq for e in received] == logged
    added = {(e.host, e.path) for e in received if e.type is EventType.FILE_ADDED}
    for host, paths in expected.items():
        assert {(host, str(p)) for p in paths} <= added, host
