"""The compact form of a record between a worker and the daemon: every field comes back."""

from __future__ import annotations

import dataclasses

from isccd.hashing.wire import pack, unpack
from isccd.model import FileIssue, FileRecord, FileStat, IssueCode, IssueKind, Mode, Unit, UnitType


def test_a_record_with_every_field_set_comes_back_equal() -> None:
    record = FileRecord(
        path="/r/a.txt",
        stat=FileStat(1, 2, 3, 4, 5, 6),
        mediatype="text/plain",
        mode=Mode.TEXT,
        iscc="ISCC:KAC",
        name="a",
        units=(
            Unit(UnitType.TEXT, "ISCC:EAA", b"\x01" * 8, "iscc/1.5.0 bits/64"),
            Unit(UnitType.DATA, "ISCC:GAA", b"\x02" * 8, "iscc/1.5.0 bits/64"),
        ),
        datahash="1e20ab",
        filesize=3,
        characters=2,
        width=7,
        height=8,
        duration=1.5,
        extractor="x/1",
        timings=(("read", 0.25),),
        issues=(
            FileIssue("meta", IssueKind.WARNING, "why", IssueCode.INVALID, "p/1"),
            FileIssue("read", IssueKind.ERROR, "no"),
        ),
        description="d",
        metahash="1e20cd",
        named_by_file=True,
    )
    assert all(getattr(record, f.name) != f.default for f in dataclasses.fields(FileRecord))
    back = unpack(pack(record))
    assert back == record
    assert back.units[0].type is UnitType.TEXT and back.issues[0].code is IssueCode.INVALID


def test_a_record_of_an_unopened_file_comes_back_equal() -> None:
    record = FileRecord("/r/gone", None, issues=(FileIssue("read", IssueKind.ERROR, "gone"),))
    assert unpack(pack(record)) == record
