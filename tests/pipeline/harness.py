"""A pipeline over a temporary root, hashing with designed codes, for the pipeline's tests.

:class:`FamilyHasher` is a fake whose Data-Code is designed: a file holding ``"A:3"`` is 3 bits
from ``"A:0"`` and far from any ``"B:..."``; so the expected relations follow from the file
contents by construction. A file holding ``"A:3|X:1"`` has a Text-Code designed the same way
(``X``'s code with its lowest bit flipped) as well.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from isccd.match import Thresholds
from isccd.model import Event, FileIssue, FileRecord, FileStat, IssueCode, IssueKind, Unit, UnitType
from isccd.pipeline import Pipeline, PipelineOptions
from isccd.results import DupesQuery, DupGroup, FileInfo
from isccd.store import SqliteOptions, Store, open_store, state_url

PROFILE = "fake/1"


def family_digest(text: str) -> bytes:
    """``"F:v"`` -> F's 64-bit code with its lowest ``v`` bits flipped."""
    family, _, variant = text.partition(":")
    base = int.from_bytes(hashlib.sha256(family.encode()).digest()[:8], "big")
    flips = int(variant.split(":")[0] or 0)
    return (base ^ ((1 << flips) - 1)).to_bytes(8, "big")


class FamilyHasher:
    """A fake hasher with designed codes; counts calls and can pretend files are unstable or
    unreadable. It hashes batches too (:class:`isccd.pipeline.BatchHasher`), one file after
    the other, and keeps their sizes in ``batches``."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.calls: Counter[str] = Counter()
        self.unstable: dict[str, int] = {}  # path -> how many more reads see it change
        self.unreadable: set[str] = set()
        self.vanishing: set[str] = set()  # deleted as they are read, so never opened
        self.numbers: dict[str, tuple[int, int]] = {}  # path -> the (st_dev, st_ino) it reads

    async def __call__(self, root: str, path: str, units: frozenset[UnitType] | None) -> FileRecord:
        assert path.startswith(root + "/"), (root, path)
        self.calls[path] += 1
        if path in self.vanishing:
            Path(path).unlink()
        if path in self.unreadable or path in self.vanishing:
            issue = FileIssue("read", IssueKind.ERROR, "permission denied", IssueCode.ACCESS)
            return FileRecord(path, None, issues=(issue,))
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            issue = FileIssue("read", IssueKind.ERROR, "gone", IssueCode.VANISHED)
            return FileRecord(path, None, issues=(issue,))
        with os.fdopen(fd, "rb") as f:
            stat = FileStat.from_os(os.fstat(f.fileno()))
            if path in self.numbers:
                stat = dataclasses.replace(
                    stat, dev=self.numbers[path][0], ino=self.numbers[path][1]
                )
            data = f.read()
        if self.unstable.get(path, 0) > 0:
            self.unstable[path] -= 1
            issue = FileIssue("read", IssueKind.ERROR, "changed while read", IssueCode.UNSTABLE)
            return FileRecord(path, stat, issues=(issue,))
        sha = hashlib.sha256(data).digest()
        designed, _, text = data.decode().partition("|")
        digest = family_digest(designed)
        made = [Unit(UnitType.DATA, "ISCC:GAA" + digest.hex().upper(), digest, PROFILE)]
        if text:
            content = family_digest(text)
            code = "ISCC:EAA" + content.hex().upper()
            made.insert(0, Unit(UnitType.TEXT, code, content, PROFILE))
        return FileRecord(
            path=path,
            stat=stat,
            iscc="ISCC:FAKE" + sha[:4].hex().upper(),
            units=(
                *made,
                Unit(UnitType.INSTANCE, "ISCC:IAA" + sha[:8].hex().upper(), sha[:8], PROFILE),
            ),
            datahash="1e20" + sha.hex(),
            filesize=len(data),
        )

    async def many(
        self, files: Sequence[tuple[str, str, frozenset[UnitType] | None]]
    ) -> list[FileRecord]:
        self.batches.append(len(files))
        return [await self(root, path, units) for root, path, units in files]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


class Harness:
    """A pipeline over a temporary root, with the events it committed."""

    def __init__(
        self,
        tmp: Path,
        *,
        options: PipelineOptions | None = None,
        hasher: Any = None,
        state: str = "state",
        sqlite: SqliteOptions | None = None,
    ) -> None:
        self.root = tmp / "root"
        self.root.mkdir(exist_ok=True)
        self.state = tmp / state
        self.hasher = hasher or FamilyHasher()
        self.committed: list[Event] = []
        self.delays: list[float] = []
        self.clock = Clock()

        async def sleep(seconds: float) -> None:
            self.delays.append(seconds)

        self.pipeline = Pipeline(
            state_url(self.state),
            options or PipelineOptions(unstable_delay=0.5),
            hasher=self.hasher,
            clock=self.clock,
            on_commit=self.committed.extend,
            sleep=sleep,
            sqlite=sqlite,
        )
        self.adopted = self.pipeline.open()

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def p(self, name: str) -> str:
        return str(self.root / name)

    def run(self, coro: Any) -> Any:
        return asyncio.run(coro)

    def scan(self) -> list[Event]:
        before = len(self.committed)
        self.run(self.pipeline.reconcile(str(self.root)))
        return self.committed[before:]

    def dupes(self, near: bool = False) -> tuple[DupGroup, ...]:
        groups: tuple[DupGroup, ...] = self.run(self.pipeline.dupes(DupesQuery(near=near))).groups
        return groups

    def get(self, path: str) -> FileInfo | None:
        info: FileInfo | None = self.run(self.pipeline.get(path))
        return info

    def adopt(self, thresholds: Thresholds) -> list[Event]:
        options = dataclasses.replace(self.pipeline.options, thresholds=thresholds)
        return list(self.run(self.pipeline.set_options(options)).events)

    def read(self, question: Callable[[Store], Any]) -> Any:
        """``question`` asked of the database as committed, on a read-only connection."""
        store = open_store(state_url(self.state), readonly=True)
        try:
            return question(store)
        finally:
            store.close()

    def stored(self, path: str | None = None) -> Any:
        """The live file at ``path`` in the database, or every live file."""
        return self.read(
            lambda store: store.files_under("/") if path is None else store.file_at(path)
        )

    def close(self) -> None:
        self.pipeline.close()


async def not_coded(path: str) -> FileRecord:
    """A coder for ``similar`` that must not be called: the file asked about is indexed."""
    raise AssertionError(f"{path} is indexed: nothing is coded on the fly")


def kinds(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.type.value, e.path.rsplit("/", 1)[-1]) for e in events]


def others(event: Event) -> list[str]:
    return [o["path"].rsplit("/", 1)[-1] for o in event.data["others"]]


#: Makes a FamilyHasher file of over 100 bytes without changing its family or variant.
PAD = ":" + "x" * 100


def pairs(events: list[Event]) -> set[tuple[str, str]]:
    """Each pair of files an event reports on, by name, in sorted order."""
    return {
        tuple(sorted((e.path.rsplit("/", 1)[-1], other)))  # type: ignore[misc]
        for e in events
        for other in others(e)
    }


def snapshot(url: str) -> dict[str, Any]:
    """The state a store holds, in terms of paths (ids differ between stores)."""
    store = open_store(url, readonly=True)
    try:
        files = {f.path: f for f in store.files_under("/")}
        by_id = {f.id: f.path for f in files.values()}
        near = sorted(
            (*sorted((by_id[p.a], by_id[p.b])), p.unit.value, p.distance)
            for p in store.near_pairs()
        )
        exact = sorted(
            sorted(f.path for f in store.files_by_datahash(d)) for d in store.exact_datahashes()
        )
        return {
            "files": {
                p: (f.record.datahash, f.record.units, f.record.stat) for p, f in files.items()
            },
            "near": near,
            "exact": exact,
        }
    finally:
        store.close()
