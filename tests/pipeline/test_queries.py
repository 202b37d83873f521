"""The index's answers (:mod:`isccd.results`), which the daemon and the command line both give:
codes given to ``similar`` become units; files, matches and duplicate groups carry their
hardlinks (one entry per file), relations, units and distances.

Files are hashed by the pipeline tests' :class:`~tests.pipeline.harness.FamilyHasher`, whose
Data-Codes are designed (``"A:3"`` is 3 bits from ``"A:0"``, far from any ``"B:..."``), so the
expected distances follow from the contents; the default Data-Code threshold is 8 bits.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import iscc_core
import pytest

from isccd.errors import ProtocolError
from isccd.match import Thresholds
from isccd.model import FileRecord, RelationKind, UnitType
from isccd.pipeline import IndexReader, PipelineOptions, queries
from isccd.results import DupesQuery, DupesResult, DupKind, Match, SimilarQuery, SimilarResult
from isccd.store import default_host, state_url
from tests.pipeline.harness import Harness


def test_an_iscc_code_becomes_its_units() -> None:
    meta = iscc_core.gen_meta_code_v0("Title")["iscc"]
    text = iscc_core.gen_text_code_v0("Hello world, some text")["iscc"]
    data = iscc_core.gen_data_code_v0(io.BytesIO(b"\x00" * 2048))["iscc"]
    instance = iscc_core.gen_instance_code_v0(io.BytesIO(b"\x00" * 2048))["iscc"]
    code = iscc_core.gen_iscc_code_v0([meta, text, data, instance])["iscc"]
    units = queries.units_of_code(code)
    expected = ["ISCC:" + u for u in iscc_core.iscc_decompose(code)]
    assert [u.iscc for u in units] == expected
    assert [u.type for u in units] == [
        UnitType.META,
        UnitType.TEXT,
        UnitType.DATA,
        UnitType.INSTANCE,
    ]
    assert units[1].digest == iscc_core.iscc_decode(text)[4]
    (single,) = queries.units_of_code(text)
    assert single.type is UnitType.TEXT


@pytest.mark.parametrize("code", ["", "ISCC:NOTACODE", "hello"])
def test_an_undecodable_code_is_an_invalid_argument(code: str) -> None:
    with pytest.raises(ProtocolError) as info:
        queries.units_of_code(code)
    assert info.value.code == "invalid_argument"


@pytest.fixture(scope="module")
def h(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """x and x-copy: the same bytes, x-link a hardlink of x; a ~ b ~ c a chain of near
    duplicates by Data-Code (a-b 3 bits, b-c 6 bits, a-c 9 bits: beyond the threshold)."""
    harness = Harness(tmp_path_factory.mktemp("answers"))
    harness.write("x", "B:0")
    harness.write("x-copy", "B:0")
    (harness.root / "x-link").hardlink_to(harness.root / "x")
    for name, text in (("a", "A:0"), ("b", "A:3"), ("c", "A:9")):
        harness.write(name, text)
    harness.scan()
    yield harness
    harness.close()


def unit_of(h: Harness, name: str, unit_type: UnitType) -> str:
    info = h.get(h.p(name))
    assert info is not None
    return info.units[unit_type]


def instance_of(h: Harness, name: str) -> str:
    return unit_of(h, name, UnitType.INSTANCE)


def data_of(h: Harness, name: str) -> str:
    return unit_of(h, name, UnitType.DATA)


def iscc_of(h: Harness, name: str) -> str | None:
    info = h.get(h.p(name))
    assert info is not None
    return info.iscc


def test_groups_have_one_member_per_file_with_its_distance_to_the_centre(
    h: Harness,
) -> None:
    result = h.run(h.pipeline.dupes(DupesQuery(near=True)))
    near, exact = result.groups  # 6 bytes reclaimable by size, then 3
    assert not result.truncated
    totals = result.totals
    assert (totals.groups, totals.files, totals.reclaimable_size) == (2, 5, 9)
    # Reclaimable is the blocks on disk of every member but the first.
    blocks = [Path(m.path).stat().st_blocks * 512 for g in (near, exact) for m in g.members[1:]]
    assert totals.reclaimable == sum(blocks) == near.reclaimable + exact.reclaimable
    assert (exact.kind, exact.unit, exact.threshold, exact.reclaimable_size) == (
        DupKind.EXACT,
        UnitType.INSTANCE,
        0,
        3,
    )
    # One host's store: each file is named with this machine's host name.
    host = default_host()
    assert [
        (m.path, m.root, m.size, m.iscc, m.unit, m.code, m.distance, m.nearest, m.links, m.host)
        for m in exact.members
    ] == [
        (h.p("x"), str(h.root), 3, iscc_of(h, "x"), UnitType.INSTANCE, instance_of(h, "x"), 0,
         None, (h.p("x-link"),), host),
        (h.p("x-copy"), str(h.root), 3, iscc_of(h, "x-copy"), UnitType.INSTANCE,
         instance_of(h, "x-copy"), 0, None, (), host),
    ]  # fmt: skip
    assert (near.kind, near.unit, near.threshold, near.reclaimable_size) == (
        DupKind.NEAR,
        UnitType.DATA,
        8,
        6,
    )
    # b is near both others (c is 9 bits from a, beyond the threshold, but 6 from b): the
    # centre, listed first; each other member's distance is to it.
    assert near.centre == 0 and exact.centre is None
    assert [
        (m.path, m.iscc, m.unit, m.code, m.distance, m.threshold, m.nearest) for m in near.members
    ] == [
        (h.p(name), iscc_of(h, name), UnitType.DATA, data_of(h, name), distance, 8, nearest)
        for name, distance, nearest in (("b", 0, None), ("a", 3, 0), ("c", 6, 0))
    ]


def test_groups_are_limited_and_chosen_by_any_name_of_a_member(h: Harness) -> None:
    first = h.run(h.pipeline.dupes(DupesQuery(near=True, limit=1)))
    assert len(first.groups) == 1 and first.groups[0].kind is DupKind.NEAR and first.truncated
    query = DupesQuery(near=True, root=h.p("x-link"))
    [group] = h.run(h.pipeline.dupes(query)).groups
    assert group.kind is DupKind.EXACT


def test_a_file_lists_its_links_exact_copies_and_recorded_near_duplicates(h: Harness) -> None:
    x = h.get(h.p("x"))
    assert x is not None
    assert x.links == (h.p("x-link"),)
    assert x.duplicates == (
        Match(
            h.p("x-copy"), str(h.root), RelationKind.EXACT, UnitType.INSTANCE, 0, 0,
            iscc_of(h, "x-copy"), instance_of(h, "x-copy"), 3, (), default_host(),
        ),
    )  # fmt: skip
    assert x.host == default_host()
    b = h.get(h.p("b"))
    assert b is not None
    assert [(m.path, m.relation, m.unit, m.distance, m.threshold) for m in b.duplicates] == [
        (h.p("a"), RelationKind.NEAR, UnitType.DATA, 3, 8),
        (h.p("c"), RelationKind.NEAR, UnitType.DATA, 6, 8),
    ]
    assert h.get(h.p("nothing")) is None


def test_similar_to_a_stored_file_and_to_one_coded_on_the_fly(h: Harness, tmp_path: Path) -> None:
    coded: list[str] = []

    async def code(path: str) -> FileRecord:
        coded.append(path)
        record: FileRecord = await h.hasher(str(tmp_path), path, None)
        return record

    def similar(query: SimilarQuery) -> SimilarResult:
        return h.run(h.pipeline.similar(query, code))  # type: ignore[no-any-return]

    result = similar(SimilarQuery(path=h.p("x")))
    assert sorted((m.path.rsplit("/", 1)[-1], m.relation, m.distance) for m in result.matches) == [
        ("x-copy", RelationKind.EXACT, 0),
        ("x-link", RelationKind.HARDLINK, 0),
    ]
    assert coded == []  # a stored file is not coded again
    # A file that is not stored: "A:4" is 1 bit from A:3, 4 from A:0 and 5 from A:9.
    outside = tmp_path / "outside"
    outside.write_text("A:4")
    result = similar(SimilarQuery(path=str(outside), limit=2))
    assert coded == [str(outside)]
    assert [(m.path, m.distance) for m in result.matches] == [(h.p("b"), 1), (h.p("a"), 4)]
    assert result.truncated
    assert all(m.relation is RelationKind.NEAR and m.threshold == 8 for m in result.matches)


def test_a_reader_given_a_stricter_policy_reports_only_what_it_admits(h: Harness) -> None:
    # A command reading the store with its own configuration: stored relations are shown only
    # where its policy reports them.
    def read(thresholds: Thresholds) -> tuple[DupesResult, Any, Any, SimilarResult]:
        options = PipelineOptions(thresholds=thresholds)
        with IndexReader(state_url(h.state), options) as reader:
            return (
                reader.dupes(DupesQuery(near=True)),
                reader.get(h.p("b")),
                reader.get(h.p("x")),
                reader.similar(SimilarQuery(path=h.p("x")), _not_coded),
            )

    dupes, b, _, _ = read(Thresholds(data=4))  # b-c are 6 bits apart
    [near] = [g for g in dupes.groups if g.kind is DupKind.NEAR]
    assert sorted(m.path for m in near.members) == [h.p("a"), h.p("b")]
    assert [(m.distance, m.threshold, m.nearest) for m in near.members] == [(0, 4, None), (3, 4, 0)]
    assert [(m.path, m.distance, m.threshold) for m in b.duplicates] == [(h.p("a"), 3, 4)]
    dupes, b, x, similar = read(Thresholds(min_size=4))  # every file here has 3 bytes
    assert dupes.groups == () and b.duplicates == () and x.duplicates == ()
    assert x.links == (h.p("x-link"),)
    assert [(m.path, m.relation) for m in similar.matches] == [
        (h.p("x-link"), RelationKind.HARDLINK)
    ]


def _not_coded(path: str) -> FileRecord:
    raise AssertionError(f"{path} is indexed: nothing is coded on the fly")
