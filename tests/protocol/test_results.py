"""Typed results (docs/protocol.md): each answer's dataclass round-trips through JSON; readers
ignore members they do not know and refuse members of the wrong type."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import isccd.protocol.results
import isccd.results
from isccd.model import FileIssue, IssueCode, IssueKind, Mode, RelationKind, UnitType
from isccd.protocol import HelloResult, SubscribeResult, from_wire, to_wire, wire_json
from isccd.results import (
    DaemonStatus,
    DupesResult,
    DupGroup,
    DupKind,
    DupMember,
    FileInfo,
    Match,
    RootStatus,
    ScanProgress,
    ServiceStatistics,
    SimilarResult,
    Totals,
)
from tests.protocol.strategies import paths

texts = st.text(max_size=12)
opt_int = st.none() | st.integers(min_value=0, max_value=2**62)
opt_float = st.none() | st.floats(min_value=0, max_value=4e9)
links = st.lists(paths, max_size=2).map(tuple)
matches = st.lists(
    st.builds(
        Match,
        paths,
        paths,
        st.sampled_from(RelationKind),
        st.sampled_from(UnitType),
        st.integers(0, 256),
        st.integers(0, 256),
        st.none() | texts,
        st.none() | texts,
        opt_int,
        links,
        texts,
    ),
    max_size=3,
).map(tuple)
results = st.one_of(
    st.builds(
        HelloResult,
        st.integers(1, 9),
        texts,
        st.tuples(texts),
        st.tuples(texts, texts),
        st.integers(1, 2**30),
        st.integers(1, 2**30),
        st.none() | st.uuids().map(str),
    ),
    st.builds(
        DaemonStatus,
        version=texts,
        pid=st.integers(1, 2**22),
        state=texts,
        started=st.floats(0, 4e9),
        roots=st.lists(
            st.builds(
                RootStatus,
                paths,
                texts,
                st.integers(0, 2**40),
                st.none()
                | st.builds(ScanProgress, texts, texts, *[st.integers(0, 9)] * 4, st.floats(0, 1)),
                st.none() | texts,
            ),
            max_size=3,
        ).map(tuple),
        queue_depth=st.integers(0, 2**30),
        files_indexed=st.integers(0, 2**40),
        last_seq=st.integers(0, 2**62),
        server=st.none() | st.builds(ServiceStatistics, *[st.integers(0, 2**30)] * 4),
    ),
    st.builds(
        SubscribeResult,
        *[st.integers(0, 2**62)] * 3,
        st.booleans(),
        st.none() | st.uuids().map(str),
    ),
    st.builds(
        FileInfo,
        path=paths,
        root=paths,
        size=opt_int,
        mtime=opt_float,
        mediatype=st.none() | texts,
        mode=st.none() | st.sampled_from(Mode),
        iscc=st.none() | texts,
        datahash=st.none() | texts,
        name=st.none() | texts,
        units=st.dictionaries(st.sampled_from(UnitType), texts, max_size=4),
        profiles=st.dictionaries(st.sampled_from(UnitType), texts, max_size=4),
        issues=st.lists(
            st.builds(
                FileIssue,
                texts,
                st.sampled_from(IssueKind),
                texts,
                st.none() | st.sampled_from(IssueCode),
            ),
            max_size=2,
        ).map(tuple),
        indexed=opt_float,
        removed=opt_float,
        links=st.lists(paths, max_size=2).map(tuple),
        duplicates=matches,
    ),
    st.builds(SimilarResult, matches, st.booleans()),
    st.builds(
        DupesResult,
        st.lists(
            st.builds(
                DupGroup,
                st.sampled_from(DupKind),
                st.sampled_from(UnitType),
                st.integers(0, 64),
                st.integers(0, 2**50),
                st.lists(
                    st.builds(
                        DupMember,
                        paths,
                        paths,
                        opt_int,
                        st.none() | texts,
                        st.sampled_from(UnitType),
                        st.none() | texts,
                        st.integers(0, 64),
                        st.integers(0, 64),
                        st.none() | st.integers(0, 9),
                        st.none() | texts,
                        st.none() | st.sampled_from(Mode),
                        links,
                        texts,
                    ),
                    max_size=3,
                ).map(tuple),
            ),
            max_size=3,
        ).map(tuple),
        st.booleans(),
        st.builds(Totals, *[st.integers(0, 2**40)] * 3),
    ),
)


@pytest.mark.slow
@given(results)
def test_typed_results_round_trip_through_json(result: Any) -> None:
    obj = json.loads(json.dumps(to_wire(result)))
    assert from_wire(type(result), obj) == result


@given(results)
def test_the_json_text_of_a_result_holds_the_values_the_standard_encoder_writes(
    result: Any,
) -> None:
    text = wire_json(result)
    assert text.isascii()
    assert "\n" not in text
    assert json.loads(text) == json.loads(json.dumps(to_wire(result), ensure_ascii=True))
    assert from_wire(type(result), json.loads(text)) == result


@pytest.mark.parametrize(
    "value",
    [
        {"path": "/b\udcff/c"},  # a name that is not UTF-8: the standard encoder writes it
        {"path": "/caf\u00e9/\U0001f600", "size": 1},  # beyond ASCII, beyond the BMP
        {"ino": 2**64 - 1, "big": 2**64},  # beyond 64 bits: the standard encoder
        [frozenset({"a"}), {1: "x"}, (), None, 1.5e-05],
    ],
)
def test_the_json_text_of_values_orjson_does_not_write_as_they_are(value: Any) -> None:
    text = wire_json(value)
    assert text.isascii()
    assert json.loads(text) == json.loads(json.dumps(to_wire(value), ensure_ascii=True))


def test_no_result_member_is_named_as_orjson_would_leave_it_out() -> None:
    # orjson writes a dataclass without its members whose names begin with an underscore.
    every: list[Any] = [HelloResult, SubscribeResult, DaemonStatus, DupesResult, DupGroup]
    every += [DupMember, FileInfo, Match, RootStatus, ScanProgress, ServiceStatistics]
    every += [SimilarResult, Totals]
    every += [c for c in vars(isccd.results).values() if dataclasses.is_dataclass(c)]
    every += [c for c in vars(isccd.protocol.results).values() if dataclasses.is_dataclass(c)]
    for cls in every:
        assert not [f.name for f in dataclasses.fields(cls) if f.name.startswith("_")], cls


def test_readers_ignore_members_they_do_not_know_and_default_missing_optional_ones() -> None:
    obj = {"path": "/r/a", "root": "/r", "colour": "blue"}
    assert from_wire(FileInfo, obj) == FileInfo("/r/a", "/r")


@pytest.mark.parametrize(
    "obj",
    [
        {"root": "/r"},
        {"path": 3, "root": "/r"},
        {"path": "/r/a", "root": "/r", "size": True},
        {"path": "/r/a", "root": "/r", "mode": "smell"},
        {"path": "/r/a", "root": "/r", "units": []},
        {"path": "/r/a", "root": "/r", "units": {"colour": "ISCC:GAA"}},
    ],
)
def test_readers_reject_members_of_the_wrong_type(obj: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"FileInfo\."):
        from_wire(FileInfo, obj)


@dataclass(frozen=True)
class _FloatFirst:
    v: float | int


@dataclass(frozen=True)
class _IntFirst:
    v: int | float
    tags: list[str] = field(default_factory=list)  # a type the wire does not convert


def test_a_union_tries_its_members_in_the_order_it_names_them() -> None:
    # The two unions are equal as types; each still reads 3 as its first member's type.
    assert type(from_wire(_FloatFirst, {"v": 3}).v) is float
    assert type(from_wire(_IntFirst, {"v": 3}).v) is int
    with pytest.raises(ValueError, match=r"^_IntFirst.v: expected an integer; _IntFirst.v: "):
        from_wire(_IntFirst, {"v": "x"})


def test_a_member_of_a_type_the_wire_cannot_convert_fails_only_where_a_value_reaches_it() -> None:
    assert from_wire(_IntFirst, {"v": 1}) == _IntFirst(1)
    with pytest.raises(TypeError, match=r"^_IntFirst.tags: cannot convert to list\[str\]"):
        from_wire(_IntFirst, {"v": 1, "tags": ["a"]})
