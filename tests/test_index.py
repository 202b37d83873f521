"""The in-memory Hamming index answers "everything within d" exactly, through updates."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from isccd.hamming import HammingIndex, HammingSearch, Hit, code64
from isccd.model import UnitType

codes = st.integers(min_value=0, max_value=2**64 - 1)


def brute_force(entries: dict[int, int], query: int, radius: int) -> list[Hit]:
    found = [
        Hit(file_id, (code ^ query).bit_count(), code)
        for file_id, code in entries.items()
        if (code ^ query).bit_count() <= radius
    ]
    return sorted(found, key=lambda h: (h.distance, h.file_id))


@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["add", "discard"]), st.integers(0, 60), codes), max_size=120
    ),
    query=codes,
    radius=st.integers(0, 64),
    near=st.integers(0, 60),
)
def test_queries_equal_a_brute_force_scan_after_any_updates(
    ops: list[tuple[str, int, int]], query: int, radius: int, near: int
) -> None:
    index = HammingIndex()
    model: dict[int, int] = {}
    for op, file_id, code in ops:
        if op == "add":
            index.add(file_id, code)
            model[file_id] = code
        else:
            assert index.discard(file_id) == (file_id in model)
            model.pop(file_id, None)
    assert len(index) == len(model)
    assert index.within(query, radius) == brute_force(model, query, radius)
    # Also a query close to a stored code, so small radii find something.
    if model:
        target = sorted(model.values())[near % len(model)] ^ (1 << (near % 64))
        assert index.within(target, 3) == brute_force(model, target, 3)
    for file_id, code in model.items():
        assert index.get(file_id) == code


def test_compaction_and_out_of_order_ids_keep_answers_exact() -> None:
    rng = random.Random(7)
    index = HammingIndex()
    model = {}
    ids = list(range(5000))
    rng.shuffle(ids)  # out of order: lookups fall back to a scan until compaction
    for file_id in ids:
        model[file_id] = rng.getrandbits(64)
        index.add(file_id, model[file_id])
    for file_id in ids[:3000]:  # enough tombstones to trigger compaction
        assert index.discard(file_id)
        del model[file_id]
    # Compacted at least once: the slots, filled out of order, are in id order again.
    assert list(index.ids()) == sorted(model)
    query = rng.getrandbits(64)
    assert index.within(query, 24) == brute_force(model, query, 24)
    for file_id in ids[3000:3010]:
        index.add(file_id, 0)
        model[file_id] = 0
    assert index.within(0, 2) == brute_force(model, 0, 2)


def test_bulk_loading_and_memory_per_code() -> None:
    index = HammingIndex()
    ids = np.arange(1, 100_001)
    values = np.random.default_rng(1).integers(0, 2**63, size=len(ids), dtype=np.int64)
    index.add_many(ids.tolist(), values.astype(np.uint64).tolist())
    assert len(index) == 100_000
    assert index.get(50_000) == int(values[49_999])
    # 17 bytes per code (8 code, 8 id, 1 flag) with at most 1.5x slack.
    assert 17 * 100_000 <= index.nbytes <= 17 * 100_000 * 1.5 + 17 * 1024


def test_code64_takes_the_first_64_bits_big_endian() -> None:
    assert code64(bytes(range(1, 33))) == int.from_bytes(bytes(range(1, 9)), "big")
    assert code64(b"\xff") == 0xFF << 56  # short digests are padded on the right


def test_unit_index_keeps_types_apart() -> None:
    index = HammingSearch([UnitType.DATA, UnitType.TEXT])
    index.add(
        1, {UnitType.DATA: b"\x00" * 8, UnitType.TEXT: b"\xff" * 8, UnitType.IMAGE: b"\x00" * 8}
    )
    index.add(2, {UnitType.DATA: b"\x00" * 7 + b"\x01"})
    assert index.within(UnitType.DATA, b"\x00" * 8, 1) == [Hit(1, 0, 0), Hit(2, 1, 1)]
    assert index.within(UnitType.TEXT, b"\x00" * 8, 64) == [Hit(1, 64, 2**64 - 1)]
    assert index.within(UnitType.IMAGE, b"\x00" * 8, 64) == []  # not indexed
    index.add(1, {UnitType.DATA: b"\x00" * 8})  # its text unit is gone now
    assert index.within(UnitType.TEXT, b"\x00" * 8, 64) == []
    index.remove(2)
    assert index.stats() == {"data": 1, "text": 0}


def test_a_new_file_is_indexed_under_the_types_it_has() -> None:
    index = HammingSearch([UnitType.DATA, UnitType.TEXT])
    index.add(1, {UnitType.DATA: b"\x00" * 8}, new=True)
    index.add(2, {UnitType.TEXT: b"\x0f" * 8}, new=True)
    assert index.within(UnitType.DATA, b"\x00" * 8, 64) == [Hit(1, 0, 0)]
    assert index.within(UnitType.TEXT, b"\x00" * 8, 64) == [Hit(2, 32, code64(b"\x0f" * 8))]
    assert index.stats() == {"data": 1, "text": 1}


@given(
    stored=st.lists(st.tuples(st.integers(0, 300), codes), max_size=80),
    gone=st.lists(st.integers(0, 300), max_size=20),
    queries=st.lists(codes, max_size=30),
    radius=st.integers(-1, 64),
    block=st.sampled_from([1, 7, 1 << 17]),
)
def test_a_block_of_queries_finds_what_each_query_finds(
    stored: list[tuple[int, int]], gone: list[int], queries: list[int], radius: int, block: int
) -> None:
    index = HammingIndex()
    for file_id, code in stored:
        index.add(file_id, code)
    for file_id in gone:
        index.discard(file_id)
    # Queries at and beside stored codes too, so that small radii find something.
    near = [code ^ (1 << (code % 64)) for _, code in stored[:10]]
    asked = [*queries, *near, *(code for _, code in stored[:10])]
    found = index.within_each(asked, radius, block=block)  # one query a pass, a few, all
    assert found == [index.within(query, radius) for query in asked]
    # Each query may leave one file out (the file asking): the same hits without it.
    ten = [file_id for file_id, _ in stored[:10]]
    skip = [-1] * len(queries) + ten + ten
    assert index.within_each(asked, radius, skip=skip, block=block) == [
        [h for h in index.within(query, radius) if h.file_id != left]
        for query, left in zip(asked, skip, strict=True)
    ]
