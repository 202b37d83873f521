"""Several hosts' pipelines on one PostgreSQL database: duplicates found across hosts are
announced on both sides, near copies are found however far behind the in-memory index is, two
hosts adding copies at once find each other, and another host's files are never hardlinks.

Each host is a :class:`~isccd.pipeline.Pipeline` of its own, with its own root and owner thread,
in this process; the log follower of the daemon is not running (the index is brought up to date
from the log when a decision needs it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from isccd.model import Event, EventType
from isccd.pipeline import Pipeline, PipelineOptions
from isccd.results import DupesQuery
from tests.pipeline.harness import Clock, FamilyHasher

NEAR = DupesQuery(near=True)


class Host:
    """One host of the fleet: a pipeline over its own root."""

    def __init__(self, name: str, url: str, base: Path) -> None:
        self.name = name
        self.root = base / name
        self.root.mkdir()
        self.committed: list[Event] = []
        self.hasher = FamilyHasher()
        self.pipeline = Pipeline(
            url,
            PipelineOptions(),
            host=name,
            hasher=self.hasher,
            clock=Clock(),
            on_commit=self.committed.extend,
        )
        self.pipeline.open()

    def p(self, name: str) -> str:
        return str(self.root / name)

    async def add(self, name: str, text: str) -> list[Event]:
        (self.root / name).write_text(text)
        return await self.pipeline.process_path(str(self.root), self.p(name))

    async def remove(self, name: str) -> list[Event]:
        (self.root / name).unlink()
        return await self.pipeline.remove_path(self.p(name))


@pytest.fixture
def fleet(pg_url: str, tmp_path: Path) -> Iterator[tuple[Host, Host]]:
    a, b = Host("a", pg_url, tmp_path), Host("b", pg_url, tmp_path)
    yield a, b
    a.pipeline.close()
    b.pipeline.close()


def of(events: list[Event], kind: EventType) -> list[Event]:
    return [e for e in events if e.type is kind]


def named(event: Event) -> list[tuple[str, str]]:
    return [(o["host"], o["path"]) for o in event.data["others"]]


def test_a_copy_on_another_host_is_announced_on_both_sides(fleet: tuple[Host, Host]) -> None:
    a, b = fleet
    asyncio.run(a.add("x", "A:0"))
    events = asyncio.run(b.add("x-copy", "A:0"))
    mine, theirs = of(events, EventType.DUP_EXACT)
    assert (mine.host, mine.path, named(mine)) == ("b", b.p("x-copy"), [("a", a.p("x"))])
    assert (theirs.host, theirs.root, theirs.path) == ("a", str(a.root), a.p("x"))
    assert named(theirs) == [("b", b.p("x-copy"))] and theirs.data["count"] == 1
    # The other side is in host a's log, where its subscribers follow it.
    assert asyncio.run(a.pipeline.events_since(theirs.seq - 1, 1)) == [theirs]


def test_a_near_copy_is_found_on_another_host_whose_changes_the_index_had_not_seen(
    fleet: tuple[Host, Host],
) -> None:
    a, b = fleet  # both loaded their index before a's file existed
    asyncio.run(a.add("x", "A:0"))
    events = asyncio.run(b.add("y", "A:3"))
    mine, theirs = of(events, EventType.DUP_NEAR)
    assert (mine.host, named(mine), mine.data["distance"]) == ("b", [("a", a.p("x"))], 3)
    assert (theirs.host, theirs.path, named(theirs)) == ("a", a.p("x"), [("b", b.p("y"))])
    # Either host's answers name both files with their hosts.
    for host in (a, b):
        [group] = asyncio.run(host.pipeline.dupes(NEAR)).groups
        assert sorted((m.host, m.path) for m in group.members) == [
            ("a", a.p("x")),
            ("b", b.p("y")),
        ]


def test_removing_a_copy_resolves_the_duplicate_on_both_sides(fleet: tuple[Host, Host]) -> None:
    a, b = fleet
    asyncio.run(a.add("x", "A:0"))
    asyncio.run(b.add("near", "A:2"))
    asyncio.run(b.add("copy", "A:0"))
    events = asyncio.run(a.remove("x"))
    resolved = of(events, EventType.DUP_RESOLVED)
    assert sorted((e.host, e.path, e.data["kind"]) for e in resolved) == [
        ("a", a.p("x"), "exact"),
        ("a", a.p("x"), "near"),
        ("b", b.p("copy"), "exact"),
        ("b", b.p("near"), "near"),
    ]
    assert all(e.data["reason"] == "removed" for e in resolved)
    [left] = asyncio.run(b.pipeline.dupes(NEAR)).groups  # b's own two files remain near
    assert sorted(m.path for m in left.members) == [b.p("copy"), b.p("near")]


def test_hosts_adding_near_copies_at_the_same_time_find_each_other(
    fleet: tuple[Host, Host],
) -> None:
    a, b = fleet

    async def both(i: int) -> list[Event]:
        found = await asyncio.gather(a.add(f"x{i}", f"F{i}:0"), b.add(f"y{i}", f"F{i}:2"))
        return [e for events in found for e in events]

    for i in range(12):
        events = asyncio.run(both(i))
        # Whichever host committed second found the other's file: one finding, two sides.
        near = of(events, EventType.DUP_NEAR)
        assert sorted(e.host for e in near) == ["a", "b"], (i, near)


def test_another_hosts_file_with_the_same_inode_is_a_copy_not_a_hardlink(
    fleet: tuple[Host, Host],
) -> None:
    a, b = fleet
    asyncio.run(a.add("x", "B:0"))
    numbered = (a.root / "x").stat()
    # Another machine's file system may number its files alike: same (st_dev, st_ino).
    b.hasher.numbers[b.p("x")] = (numbered.st_dev, numbered.st_ino)
    events = asyncio.run(b.add("x", "B:0"))
    added = of(events, EventType.FILE_ADDED)
    assert [e.data.get("links") for e in added] == [None]
    assert [named(e) for e in of(events, EventType.DUP_EXACT) if e.host == "b"] == [
        [("a", a.p("x"))]
    ]
