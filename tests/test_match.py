"""Duplicate decisions: hardlink before exact before near; thresholds per unit type, scaled for
longer units. Expected values follow from the definitions (Hamming distance counts differing
bits)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.match import (
    Relation,
    Side,
    Thresholds,
    hamming,
    near_unit,
    relate,
    relate_all,
)
from isccd.model import RelationKind, UnitType

D = UnitType.DATA
T = UnitType.TEXT


def side(file_id: int, *, ino: int | None = None, datahash: str | None = None, size: int = 100,
         data: bytes | None = None, text: bytes | None = None) -> Side:  # fmt: skip
    digests = {}
    if data is not None:
        digests[D] = data
    if text is not None:
        digests[T] = text
    identity = (1, ino if ino is not None else file_id)
    return Side(file_id, identity, datahash, size, digests)


def flip(digest: bytes, *bits: int) -> bytes:
    value = int.from_bytes(digest, "big")
    for bit in bits:
        value ^= 1 << bit
    return value.to_bytes(len(digest), "big")


ZERO8 = bytes(8)


def test_published_defaults_and_validation() -> None:
    t = Thresholds()
    assert (t.of(UnitType.TEXT), t.of(UnitType.IMAGE), t.of(UnitType.AUDIO)) == (15, 12, 4)
    assert t.of(UnitType.META) is None and UnitType.META not in t.enabled()
    assert t.of(UnitType.INSTANCE) is None
    assert t.scaled(T, 256) == 60 and t.scaled(T, 128) == 30 and t.scaled(UnitType.META, 64) is None
    with pytest.raises(ValueError, match=r"outside 0\.\.64"):
        Thresholds(text=65)


def test_hamming_counts_differing_bits_over_the_common_prefix() -> None:
    assert hamming(b"\x00", b"\xff") == 8
    assert hamming(b"\x0f\x00", b"\x00") == 4  # only the first byte is common
    assert hamming(ZERO8, flip(ZERO8, 0, 5, 63)) == 3


def test_a_hardlink_is_never_a_duplicate() -> None:
    a = side(1, ino=9, datahash="1e20aa", data=ZERO8)
    b = side(2, ino=9, datahash="1e20aa", data=ZERO8)
    [relation] = relate(a, b, Thresholds())
    assert relation.kind is RelationKind.HARDLINK and relation.other == 2


def test_same_bytes_in_two_files_is_exact_and_only_exact() -> None:
    a = side(1, datahash="1e20" + "ab" * 32, data=ZERO8)
    b = side(2, datahash="1e20" + "ab" * 32, data=ZERO8)
    [relation] = relate(a, b, Thresholds())
    assert (relation.kind, relation.unit, relation.distance, relation.bits) == (
        RelationKind.EXACT, UnitType.INSTANCE, 0, 256,
    )  # fmt: skip
    # Equal hashes but different sizes cannot be the same bytes: not exact.
    c = side(3, datahash="1e20" + "ab" * 32, size=101, data=flip(ZERO8, 1))
    assert [r.kind for r in relate(a, c, Thresholds())] == [RelationKind.NEAR]


def test_near_by_each_unit_type_within_its_threshold() -> None:
    a = side(1, datahash="1e2001", data=ZERO8, text=ZERO8)
    b = side(2, datahash="1e2002", data=flip(ZERO8, *range(8)), text=flip(ZERO8, *range(16)))
    # Text: 16 bits > 15, not near; and the content decides: the Data-Code's 8 bits do not
    # make them near (tests/test_content_decides.py).
    assert relate(a, b, Thresholds()) == []
    # Without Content-Codes, Data: 8 bits <= 8, near.
    a0, b0 = side(1, datahash="1e2001", data=ZERO8), side(2, datahash="1e2002", data=b.digests[D])
    found = relate(a0, b0, Thresholds())
    assert [(r.kind, r.unit, r.distance, r.threshold, r.bits) for r in found] == [
        (RelationKind.NEAR, D, 8, 8, 64)
    ]
    assert relate(a0, b0, Thresholds(data=7)) == []
    assert [r.unit for r in relate(a, b, Thresholds(text=16))] == [T, D]


def test_longer_units_scale_the_threshold_and_need_a_close_prefix() -> None:
    t = Thresholds(data=8)
    base = bytes(32)
    spread = flip(base, *range(0, 256, 8))  # 32 bits differ, 2 in each 64-bit quarter
    assert near_unit(D, base, spread, t) == (32, 32, 256)
    too_far = flip(spread, 100)  # 33 > 8 * 4
    assert near_unit(D, base, too_far, t) is None
    front = flip(base, *range(255, 246, -1))  # 9 bits, all in the first 64: the prefix decides
    assert near_unit(D, base, front, t) is None
    # A 64-bit and a 256-bit unit compare over their common 64 bits.
    assert near_unit(D, ZERO8, flip(base, 0, 255), t) == (1, 8, 64)


def test_relate_all_keeps_the_closest_near_relations_per_unit() -> None:
    me = side(0, datahash="1e2000", data=ZERO8)
    others = [
        side(i, datahash=f"1e20{i:02x}", data=flip(ZERO8, *range(i % 5))) for i in range(1, 11)
    ]
    copy = side(99, datahash="1e2000", data=ZERO8)
    found, counts = relate_all(me, [*others, copy], Thresholds(max_links=3))
    near = [(r.other, r.distance) for r in found if r.kind is RelationKind.NEAR]
    # The nearest, ties to the file indexed last.
    assert near == [(10, 0), (5, 0), (6, 1)] and counts == {D: 10}
    assert [r.other for r in found if r.kind is RelationKind.EXACT] == [99]
    assert len(relate_all(me, others, Thresholds())[0]) == 10
    assert len(relate_all(me, others, Thresholds(max_links=None))[0]) == 10


EMPTY = "1e20" + "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"  # BLAKE3 of b""


def test_files_below_min_size_are_never_duplicates_but_hardlinks_stay_hardlinks() -> None:
    # Every empty file has the same bytes and the same units as every other.
    a = side(1, datahash=EMPTY, size=0, data=ZERO8, text=ZERO8)
    b = side(2, datahash=EMPTY, size=0, data=ZERO8, text=ZERO8)
    assert relate(a, b, Thresholds()) == []
    link = side(3, ino=1, datahash=EMPTY, size=0, data=ZERO8)
    assert [r.kind for r in relate(a, link, Thresholds())] == [RelationKind.HARDLINK]
    assert [r.kind for r in relate(a, b, Thresholds(min_size=0))] == [RelationKind.EXACT]
    # One byte is enough by default; below min_size neither exact nor near is reported.
    one, copy = side(1, datahash="1e2001", size=1), side(2, datahash="1e2001", size=1)
    assert [r.kind for r in relate(one, copy, Thresholds())] == [RelationKind.EXACT]
    small = side(1, datahash="1e2001", size=99, data=ZERO8)
    large = side(2, datahash="1e2002", size=100, data=flip(ZERO8, 0))
    larger = side(3, datahash="1e2003", size=5000, data=flip(ZERO8, 1))
    policy = Thresholds(min_size=100)
    assert relate(small, large, policy) == [] and relate(large, small, policy) == []
    assert relate(small, side(4, datahash="1e2001", size=99), policy) == []
    assert [r.kind for r in relate(large, larger, policy)] == [RelationKind.NEAR]
    assert [r.other for r in relate_all(large, [small, larger], policy)[0]] == [3]


def test_min_size_admits_unknown_sizes_and_is_never_negative() -> None:
    # A code asked about without its file has no size: it is compared.
    assert Thresholds(min_size=10**9).admits(None)
    assert not Thresholds().admits(0) and Thresholds().admits(1)
    with pytest.raises(ValueError, match="negative"):
        Thresholds(min_size=-1)
    assert "min_size" not in Thresholds().as_dict()


def _related_pair_by_pair(
    subject: Side, others: list[Side], thresholds: Thresholds
) -> tuple[list[Relation], dict[UnitType, int]]:
    """The model of :func:`relate_all`: :func:`relate` of each pair, then per unit type the
    ``max_links`` nearest near relations, ties to the larger file id."""
    found = [r for other in others for r in relate(subject, other, thresholds)]
    kept = [r for r in found if r.kind is not RelationKind.NEAR]
    per_unit: dict[UnitType, list[Relation]] = {}
    for r in found:
        if r.kind is RelationKind.NEAR:
            per_unit.setdefault(r.unit, []).append(r)
    for relations in per_unit.values():
        relations.sort(key=lambda r: (r.distance, -r.other))
        kept.extend(relations[: thresholds.max_links])
    return kept, {unit: len(relations) for unit, relations in per_unit.items()}


_UNITS = (UnitType.META, UnitType.DATA, UnitType.TEXT, UnitType.IMAGE, UnitType.AUDIO)
#: Two bases per unit, far apart: a file near one is far from the other.
_BASES = (bytes(32), bytes([0xFF] * 16 + [0] * 16))


@st.composite
def _sides(draw: st.DrawFn, file_id: int) -> Side:
    """A file whose units are a few to thirty flipped bits from one of two far bases, 64 or
    256 bits long (the flips in the first 64 bits or beyond), sometimes another name of
    file 0, a copy of its bytes, too small, or of unknown identity or size."""
    digests = {}
    for unit in draw(st.sets(st.sampled_from(_UNITS))):
        length = draw(st.sampled_from([8, 8, 32, 32, 0]))
        base = draw(st.sampled_from(_BASES))[:length]
        bits = (
            draw(st.lists(st.integers(0, 8 * length - 1), max_size=30, unique=True))
            if length
            else []
        )
        digests[unit] = flip(base, *bits)
    ino = draw(st.sampled_from([file_id, file_id, 0, None]))
    datahash = draw(st.sampled_from(["1e2000", "1e2001", None]))
    size = draw(st.sampled_from([100, 100, 1, None]))
    return Side(file_id, (1, ino) if ino is not None else None, datahash, size, digests)


_RADII = st.sampled_from([None, 0, 1, 4, 8, 12, 15, 64])


@pytest.mark.slow  # hundreds of drawn libraries: seconds of CPU under coverage
@settings(max_examples=400, deadline=None)
@given(
    subject=_sides(0),
    others=st.lists(st.integers(1, 40), max_size=25).flatmap(
        lambda ids: st.tuples(*(_sides(i) for i in ids))
    ),
    limit=st.sampled_from([None, 1, 2, 3, 16]),
    min_size=st.sampled_from([0, 1, 50]),
    radii=st.tuples(_RADII, _RADII, _RADII, _RADII, _RADII),
)
def test_relate_all_relates_as_each_pair_is_related(
    subject: Side,
    others: tuple[Side, ...],
    limit: int | None,
    min_size: int,
    radii: tuple[int | None, ...],
) -> None:
    """Hardlinks, copies, files too small, units of 0, 64 and 256 bits near and far, a
    Content-Code that overrules a container unit (switched off, it still does at its default
    threshold), unit types switched off, the same file twice: relating many at once is
    relating each pair."""
    meta, data, text, image, audio = radii
    thresholds = Thresholds(
        max_links=limit, min_size=min_size, meta=meta, data=data, text=text, image=image,
        audio=audio,
    )  # fmt: skip
    everyone = [*others, subject]
    assert relate_all(subject, everyone, thresholds) == _related_pair_by_pair(
        subject, everyone, thresholds
    )


def test_relate_all_keeps_equally_near_files_by_the_larger_id_and_the_threshold_inclusive() -> None:
    me = side(0, data=ZERO8)
    at_threshold = [side(i, data=flip(ZERO8, *range(8))) for i in (3, 1, 2)]  # 8 bits: near
    beyond = side(4, data=flip(ZERO8, *range(9)))
    found, counts = relate_all(me, [*at_threshold, beyond], Thresholds(data=8, max_links=2))
    assert [(r.other, r.distance) for r in found] == [(3, 8), (2, 8)] and counts == {D: 3}


def test_a_content_code_switched_off_still_overrules_a_near_container_unit() -> None:
    """Text off for near duplicates: two documents whose texts differ are still not near by
    their Data-Codes (the text judged at its default threshold)."""
    far_text = flip(bytes(32), *range(0, 256, 2))  # 128 of 256 bits: far
    me = side(0, data=ZERO8, text=bytes(32))
    other = side(1, data=flip(ZERO8, 0), text=far_text)
    assert relate_all(me, [other], Thresholds(text=None)) == ([], {})
    near_text = side(2, data=flip(ZERO8, 0), text=flip(bytes(32), 0))
    [relation], _ = relate_all(me, [near_text], Thresholds(text=None))
    assert relation.unit is D


def test_an_invalid_datahash_fails_only_where_a_copy_is_found() -> None:
    """Datahashes are compared as they are; only a copy's relation reads its bits."""
    me = side(0, datahash="n/a", data=ZERO8)
    [relation], _ = relate_all(me, [side(1, datahash="1e2001", data=ZERO8)], Thresholds())
    assert relation.kind is RelationKind.NEAR
