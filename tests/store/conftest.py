"""Fixtures for the store tests: every contract test runs against each real backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from isccd.model import FileIssue, FileRecord, FileStat, IssueCode, IssueKind, Mode, Unit, UnitType
from isccd.store import Store, open_store, state_url

#: The store contract holds for each real backend.
BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a new store of each backend (a fresh database on the test server)."""
    if request.param == "sqlite":
        return state_url(tmp_path / "state")
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url, host="host-a")
    yield opened
    opened.close()


def make_record(
    path: str,
    *,
    ino: int = 100,
    dev: int = 1,
    size: int = 10,
    mtime: int = 1_000,
    ctime: int = 2_000,
    nlink: int = 1,
    datahash: str | None = None,
    data: bytes | None = None,
    text: bytes | None = None,
    profile: str = "iscc/1.5.0 bits/64",
) -> FileRecord:
    """A record with the given identity and units (the store does not interpret codes)."""
    units = []
    if text is not None:
        units.append(Unit(UnitType.TEXT, "ISCC:EAA" + text.hex().upper(), text, profile + " t/1"))
    if data is not None:
        units.append(Unit(UnitType.DATA, "ISCC:GAA" + data.hex().upper(), data, profile))
    return FileRecord(
        path=path,
        stat=FileStat(dev, ino, size, mtime, ctime, nlink),
        mediatype="text/plain",
        mode=Mode.TEXT,
        iscc="ISCC:KAC" + (datahash or "00")[:8].upper(),
        name="name",
        units=tuple(units),
        datahash=datahash,
        filesize=size,
        characters=5,
        extractor="text/utf-8",
        issues=(FileIssue("meta", IssueKind.SKIPPED, "no metadata", IssueCode.NO_CONTENT),),
        description="a description",
        metahash="1e20" + "ab" * 32,
    )


def hashed(n: int) -> str:
    """A multihash-shaped datahash, distinct per ``n``."""
    return "1e20" + f"{n:064x}"
