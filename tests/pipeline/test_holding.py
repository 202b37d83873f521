"""A listing's check of many stored relations at once (:func:`isccd.pipeline.queries.holding`)
says of each what the check of one relation (:func:`~isccd.pipeline.queries.holds_between`)
says of it: the same relations hold, with the same distances and thresholds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.match import Thresholds
from isccd.model import UnitType
from isccd.pipeline.queries import holding, holds_between
from isccd.store import NearPair

DATA, TEXT, IMAGE, META = UnitType.DATA, UnitType.TEXT, UnitType.IMAGE, UnitType.META

#: Digests a few bits apart, so that relations fall on both sides of the thresholds.
_digest = st.builds(
    lambda base, flips, length: (
        (int.from_bytes(base * (length // 8), "big") ^ flips) & ((1 << length * 8) - 1)
    ).to_bytes(length, "big"),
    st.sampled_from([b"\x00" * 8, b"\xff" * 8]),
    st.integers(0, (1 << 24) - 1).map(lambda x: x | x << 40),
    st.sampled_from([8, 8, 8, 16, 32]),
)
_digests = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from([DATA, TEXT, IMAGE, META]), _digest, max_size=4),
)
_threshold = st.one_of(st.none(), st.integers(0, 20))


@settings(max_examples=300, deadline=None)
@given(
    files=st.lists(_digests, min_size=2, max_size=8),
    links=st.lists(
        st.tuples(st.integers(0, 8), st.integers(0, 8), st.sampled_from([DATA, TEXT, IMAGE, META])),
        max_size=30,
    ),
    policy=st.builds(
        Thresholds, data=_threshold, text=_threshold, image=_threshold, meta=_threshold
    ),
)
def test_relations_held_at_once_are_those_held_one_by_one(
    files: list[dict[UnitType, bytes] | None],
    links: list[tuple[int, int, UnitType]],
    policy: Thresholds,
) -> None:
    # Id 8 is no file of the listing: a relation to it does not hold.
    by_id = dict(enumerate(files))
    pairs = [NearPair(min(x, y), max(x, y), unit, 0) for x, y, unit in links]
    expected = []
    for pair in pairs:
        a, b = by_id.get(pair.a), by_id.get(pair.b)
        if a is None or b is None:
            continue
        near = holds_between(pair.unit, a, b, policy)
        if near is not None:
            expected.append((pair, *near))
    assert holding(pairs, by_id, policy) == expected


def test_a_text_far_apart_overrules_a_near_data_code() -> None:
    near_data = {DATA: bytes(8), TEXT: bytes(8)}
    far_text = {DATA: b"\x00" * 7 + b"\x03", TEXT: b"\xff" * 8}
    no_text = {DATA: b"\x00" * 7 + b"\x07"}
    pairs = [NearPair(1, 2, DATA, 2), NearPair(1, 3, DATA, 3)]
    held = holding(pairs, {1: near_data, 2: far_text, 3: no_text}, Thresholds())
    # 1 and 2: 2 bits apart by data, 64 by text; 1 and 3: 3 bits by data, no text to compare.
    assert held == [(NearPair(1, 3, DATA, 3), 3, 8)]
