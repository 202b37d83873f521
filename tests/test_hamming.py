"""The in-memory Hamming index answers "everything within d" exactly, through updates."""

from __future__ import annotations

import random
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import isccd.hashing  # noqa: F401 - the compiled kernels as the daemon loads them
from isccd import hamming
from isccd.hamming import HammingIndex, HammingSearch, Hit, code64
from isccd.iscc.kernels import PYTHON_KERNELS, Kernels, load_kernels
from isccd.model import UnitType

codes = st.integers(min_value=0, max_value=2**64 - 1)


def brute_force(entries: dict[int, int], query: int, radius: int) -> list[Hit]:
    found = [
        Hit(file_id, (code ^ query).bit_count(), code)
        for file_id, code in entries.items()
        if (code ^ query).bit_count() <= radius
    ]
    return sorted(found, key=lambda h: (h.distance, h.file_id))


@pytest.mark.slow
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


@pytest.mark.slow
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


def clustered(rng: np.random.Generator, count: int, families: np.ndarray) -> np.ndarray:
    """``count`` codes, each a few bits (0-8) from one of the codes of ``families``: a query
    near one family finds its other codes at every radius."""
    codes = families[rng.integers(0, len(families), count)]
    for _ in range(8):  # up to 8 random bits flipped (a bit may be drawn twice)
        flip = rng.integers(0, 2, count).astype(np.uint64)
        codes ^= flip << rng.integers(0, 64, count).astype(np.uint64)
    return codes


def built(index: HammingIndex) -> bool:
    """Whether the index has built its block index (a query went through it)."""
    return index._blocks is not None


def brute_force_each(model: dict[int, int], queries: list[int], radius: int) -> list[list[Hit]]:
    ids = np.fromiter(model, dtype=np.int64, count=len(model))
    values = np.fromiter(model.values(), dtype=np.uint64, count=len(model))
    found = []
    for query in queries:
        distances = np.bitwise_count(values ^ np.uint64(query))
        hits = [
            Hit(int(ids[i]), int(distances[i]), int(values[i]))
            for i in np.flatnonzero(distances <= radius)
        ]
        found.append(sorted(hits, key=Hit.rank))
    return found


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    radius=st.integers(0, 9),
    families=st.integers(1, 400),
    changed=st.integers(0, 400),
    gone=st.integers(0, 400),
    appended=st.integers(0, 2000),
)
def test_the_block_index_finds_what_a_brute_force_scan_finds(
    *, seed: int, radius: int, families: int, changed: int, gone: int, appended: int
) -> None:
    rng = np.random.default_rng(seed)
    index = HammingIndex()
    groups = rng.integers(0, 2**64, size=families, dtype=np.uint64)
    codes = clustered(rng, 6000, groups)
    model = dict(zip(range(1, 6001), codes.tolist(), strict=True))
    index.add_many(list(model), list(model.values()))
    asked = clustered(rng, 300, groups).tolist() + rng.choice(codes, 50).tolist()
    expected = brute_force_each(model, asked, radius)
    assert index.within_each(asked, radius) == expected
    assert all(expected[300:])  # a stored code finds itself at least
    assert built(index)  # 350 queries over 6,000 codes: through the block index
    # Codes changed in place, files removed, files added after the index was built.
    for file_id in rng.choice(np.arange(1, 6001), changed, replace=False).tolist():
        model[file_id] = int(clustered(rng, 1, groups)[0])
        index.add(file_id, model[file_id])
    for file_id in rng.choice(np.arange(1, 6001), gone, replace=False).tolist():
        assert index.discard(file_id) == (file_id in model)
        model.pop(file_id, None)
    more = clustered(rng, appended, groups).tolist()
    for file_id, code in enumerate(more, start=10_000):
        index.add(file_id, code)
        model[file_id] = code
    skip = rng.choice(np.array(list(model)), len(asked)).tolist()
    assert index.within_each(asked, radius, skip=skip) == [
        [h for h in hits if h.file_id != left]
        for hits, left in zip(brute_force_each(model, asked, radius), skip, strict=True)
    ]
    assert index.within_each(asked[:40], radius) == [index.within(q, radius) for q in asked[:40]]


@pytest.mark.parametrize("layout", [widths for _, widths in hamming._LAYOUTS])
@pytest.mark.parametrize("radius", [0, 1, 5, 8, 12, 15])
@pytest.mark.parametrize("probes", [hamming._PROBES, 2_000])
def test_every_layout_of_the_block_index_finds_every_code_within_any_radius(
    layout: tuple[int, ...], radius: int, probes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each layout the index takes as it grows (five 13-bit blocks to three of 21 and 22
    # bits), forced on a few thousand codes of families and strangers; every radius, each
    # block looked in within its share of it; the probes a pass many or few.
    assert sum(layout) == 64
    monkeypatch.setattr(hamming, "_LAYOUTS", ((1 << 62, layout),))
    monkeypatch.setattr(hamming, "_PROBES", probes)
    monkeypatch.setattr(hamming, "_COST_FOUND", 0.0)  # never left to the flat scan
    rng = np.random.default_rng(radius * 1000 + len(layout))
    groups = rng.integers(0, 2**64, size=40, dtype=np.uint64)
    codes = np.concatenate([clustered(rng, 3000, groups), rng.integers(0, 2**64, 1000, np.uint64)])
    asked = np.concatenate([clustered(rng, 30, groups), codes[rng.integers(0, len(codes), 10)]])
    blocks = hamming._Blocks(codes)
    assert [width for _, width, _, _ in blocks.blocks] == list(layout)
    found = blocks.find(codes, asked, radius, 5_000)
    assert found is not None
    model = dict(enumerate(codes.tolist()))
    expected = brute_force_each(model, asked.tolist(), radius)
    got: list[list[Hit]] = [[] for _ in asked]
    for query, slot, distance in zip(*(a.tolist() for a in found), strict=True):
        got[query].append(Hit(slot, distance, model[slot]))
    assert [sorted(hits, key=Hit.rank) for hits in got] == expected
    # Families: beyond a few bits, more than each stored code asked finds itself.
    assert sum(map(len, expected)) > len(asked) or radius < 5


@pytest.mark.slow
def test_the_block_index_answers_single_queries_at_scale_and_survives_compaction() -> None:
    rng = np.random.default_rng(11)
    index = HammingIndex()
    groups = rng.integers(0, 2**64, size=500, dtype=np.uint64)
    alone = rng.integers(0, 2**64, size=100_000, dtype=np.uint64)
    codes = np.concatenate([clustered(rng, 20_000, groups), alone])
    model = dict(zip(range(1, len(codes) + 1), codes.tolist(), strict=True))
    index.add_many(list(model), list(model.values()))
    asked = clustered(rng, 20, groups).tolist()
    for query in asked:  # one at a time, as the daemon asks of a changed file
        assert [index.within(query, 8)] == brute_force_each(model, [query], 8)
    assert built(index)  # 120,000 codes: one query pays for the block index
    for file_id in range(1, 60_001):  # half of them: compacted, the index dropped
        index.discard(file_id)
        del model[file_id]
    assert not built(index)
    assert index.within_each(asked, 8) == brute_force_each(model, asked, 8)
    # Wider radii are answered by the flat scan, exactly too.
    assert index.within_each(asked[:5], 15) == brute_force_each(model, asked[:5], 15)


def test_a_family_filling_the_same_buckets_is_scanned_flat_and_answered_exactly() -> None:
    # 30,000 codes a few bits from one (a burst of photos, a dataset exported every day) among
    # 100,000 others: every query from the family probes the family's few buckets in each
    # block, and finds more codes there than the flat scan compares in the time.
    rng = np.random.default_rng(3)
    index = HammingIndex()
    family = clustered(rng, 30_000, rng.integers(0, 2**64, size=1, dtype=np.uint64))
    codes = np.concatenate([family, rng.integers(0, 2**64, size=100_000, dtype=np.uint64)])
    model = dict(zip(range(1, len(codes) + 1), codes.tolist(), strict=True))
    index.add_many(list(model), list(model.values()))
    stranger = rng.integers(0, 2**64, size=1, dtype=np.uint64).tolist()
    assert index.within(stranger[0], 8) == brute_force_each(model, stranger, 8)[0]
    assert built(index)  # a stranger's query pays for the block index
    asked = clustered(rng, 40, family[:1])
    blocks = index._blocks
    assert blocks is not None
    assert blocks.find(index._codes, asked, 8, 1 << 17) is None  # the family's: scanned flat
    tracemalloc.start()
    try:
        hits, totals = index.nearest_each(asked.tolist(), 8, 16)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    expected = brute_force_each(model, asked.tolist(), 8)
    for found, count, everything in zip(hits, totals, expected, strict=True):
        everything.sort(key=lambda h: (h.distance, -h.file_id))
        assert found == everything[:16] and count == len(everything) > 500
    # The compiled scan keeps each query's nearest 16 as it goes: no list of the family's
    # pairs (over 500 a query, 17 bytes each, in several arrays) is ever held.
    assert sum(totals) > 20_000
    assert peak < 17 * sum(totals)


def test_the_block_index_compares_a_bounded_number_of_codes_a_pass() -> None:
    # Many queries over many codes: found candidates grow with both, so the block index
    # compares them a pass at a time, as the flat scan does, not all at once.
    rng = np.random.default_rng(5)
    index = HammingIndex()
    codes = rng.integers(0, 2**64, size=100_000, dtype=np.uint64)
    model = dict(zip(range(1, len(codes) + 1), codes.tolist(), strict=True))
    index.add_many(list(model), list(model.values()))
    asked = rng.integers(0, 2**64, size=1500, dtype=np.uint64).tolist()
    asked += clustered(rng, 500, codes[:50]).tolist()
    expected = brute_force_each(model, asked, 8)
    tracemalloc.start()
    try:
        found = index.within_each(asked, 8)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert built(index)
    assert found == expected
    assert any(expected[1500:])
    # About 850 codes compared a query (70 buckets of 12 codes), 1.7 million in all: 88 MB of
    # arrays at once; a pass of the default 131,072 compared takes a few MB.
    assert peak < 32 * 1024 * 1024
    # Passes of a few queries each find the same.
    assert index.within_each(asked[1490:1510], 8, block=2_000) == expected[1490:1510]


#: A fresh interpreter (the daemon's main process does not load numba until it pays): a family
#: indexed a file at a time, each file's query a flat scan too small to load the kernels.
_FAMILY_A_FILE_AT_A_TIME = """
import sys
import numpy as np
from isccd import hamming
from isccd.iscc import kernels

hamming._COMPILED_CELLS = 50_000  # the rule, at a size a test can reach
rng = np.random.default_rng(9)
base = int(rng.integers(0, 2**63))
index = hamming.HammingIndex()
loaded_at = None
for file_id in range(1, 401):
    code = base ^ (1 << int(rng.integers(0, 64)))
    index.add(file_id, code)
    hits, totals = index.nearest_each([code], 8, 16, exclude=[file_id])
    assert totals == [file_id - 1] and len(hits[0]) == min(16, file_id - 1)
    if loaded_at is None and kernels.load_kernels.cache_info().currsize:
        loaded_at = file_id
print(loaded_at)
"""


def test_a_family_indexed_a_file_at_a_time_loads_the_compiled_scan() -> None:
    # Each query scans at most 400 codes, far below the cells that load the kernels; the
    # pairs numpy lists for the family add up (1 + 2 + ... + n), and past the same number
    # the compiled scan takes over, where a file's query costs a pass, not a list of its
    # family.
    done = subprocess.run(
        [sys.executable, "-c", _FAMILY_A_FILE_AT_A_TIME],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    loaded_at = int(done.stdout)
    # The query of file n lists n pairs (itself among them): 1 + 2 + ... + n first reaches
    # 50,000 at n = 316, and the query after it loads the kernels.
    assert loaded_at == 317


@pytest.fixture(scope="module", autouse=True)
def _compiled_kernels() -> Kernels:
    """The compiled kernels, loaded once for the module (from the workers' machine code)."""
    kernels = load_kernels()
    assert kernels.accelerated
    return kernels


#: How nearest_each may scan flat: numpy's list of pairs, the compiled kernel, or the kernel's
#: pure-Python fallback.
SCANS = ("numpy", "compiled", "python")


def scanning(how: str) -> object:
    """What :func:`isccd.hamming._kernels` gives for ``how``."""
    kernels = {"numpy": None, "compiled": load_kernels(), "python": PYTHON_KERNELS}[how]
    return lambda cells, listed=0: kernels


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 300),
    st.integers(0, 20),
    st.integers(0, 64),
    st.booleans(),
    st.sampled_from(SCANS),
)
def test_the_nearest_are_the_first_of_what_a_query_finds(  # noqa: PLR0917 - Hypothesis's draws
    seed: int, n: int, limit: int, radius: int, consecutive: bool, how: str
) -> None:
    rng = random.Random(seed)
    index = HammingIndex()
    base = rng.getrandbits(64)
    # Ids as a store gives them (consecutive, a job the last of them), or any ids.
    first = rng.randrange(1, 1000)
    ids = list(range(first, first + n)) if consecutive else rng.sample(range(1, 10 * n + 1), n)
    for file_id in ids:
        index.add(file_id, base ^ rng.getrandbits(64) & rng.getrandbits(64) & rng.getrandbits(64))
    queries = [base ^ rng.getrandbits(8) for _ in range(5)]
    # A job of the last ids: each query leaves out the job's files from its own on.
    job, upto = ids[-5:], [0, 1, 2, 3, 4]
    for gone in rng.sample(ids, n // 4):  # tombstones: live slots only
        index.discard(gone)
    chosen = hamming._kernels
    hamming._kernels = scanning(how)  # type: ignore[assignment]
    try:
        hits, totals = index.nearest_each(queries, radius, limit, exclude=job, upto=upto)
    finally:
        hamming._kernels = chosen
    for q, code in enumerate(queries):
        everything = [h for h in index.within(code, radius) if h.file_id not in job[q:]]
        everything.sort(key=lambda h: (h.distance, -h.file_id))  # ties: the newest first
        assert hits[q] == everything[:limit] and totals[q] == len(everything)


@pytest.mark.parametrize("limit", [0, 5, 300, 1024, 1025, 1 << 62])
@pytest.mark.parametrize("how", SCANS)
def test_any_limit_is_answered_in_full_by_every_scan(limit: int, how: str) -> None:
    # More asked than stored (up to "every hit", as an index without max_links asks): what
    # there is, nearest first, and never a buffer of ``limit`` hits a query.
    rng = random.Random(limit)
    index = HammingIndex()
    base = rng.getrandbits(64)
    for file_id in range(1, 201):
        index.add(file_id, base ^ rng.getrandbits(64) & rng.getrandbits(64) & rng.getrandbits(64))
    queries = [base ^ rng.getrandbits(6) for _ in range(3)]
    chosen = hamming._kernels
    hamming._kernels = scanning(how)  # type: ignore[assignment]
    try:
        hits, totals = index.nearest_each(queries, 20, limit)
    finally:
        hamming._kernels = chosen
    for q, code in enumerate(queries):
        everything = sorted(index.within(code, 20), key=lambda h: (h.distance, -h.file_id))
        assert hits[q] == everything[:limit] and totals[q] == len(everything) > 0


@pytest.mark.parametrize("radius", [-(1 << 64), -1, 65, 1 << 63, (1 << 64) + 3])
@pytest.mark.parametrize("limit", [-1, -(1 << 40)])
@pytest.mark.parametrize("how", SCANS)
def test_every_scan_answers_a_radius_or_limit_past_the_ends_alike(
    radius: int, limit: int, how: str
) -> None:
    # A radius below 0 finds nothing and one beyond 64 bits finds every code, whichever scan
    # answers (the compiled one's C integers are 64 bits wide); a limit below 0 keeps no hit
    # but counts them all, as numpy's partition does.
    index = HammingIndex()
    for file_id in range(1, 41):
        index.add(file_id, (1 << (file_id % 64)) - 1)
    chosen = hamming._kernels
    hamming._kernels = scanning(how)  # type: ignore[assignment]
    try:
        hits, totals = index.nearest_each([0, 7], radius, limit, exclude=[40])
    finally:
        hamming._kernels = chosen
    assert hits == [[], []]
    assert totals == ([39, 39] if radius > 64 else [0, 0])
    for some in (index.nearest_each([0, 7], radius, 50, exclude=[40])[0], hits):
        assert all(h.distance <= 64 for found in some for h in found)
