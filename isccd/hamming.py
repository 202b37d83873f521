"""The index's in-memory Hamming search: every stored unit's first 64 bits, per unit type.

A query ("every file whose code is within distance d of this one") is exact, answered one of two
ways, whichever costs less for its radius and the number of codes:

- **a flat scan**: XOR against all codes and a hardware popcount (``numpy.bitwise_count``),
  about 0.65 ns a code (a millisecond per million);
- **a block index** (multi-index hashing): the 64 bits split into blocks, and the codes sorted
  by each block. Two codes within distance d of each other are within ``d // m`` bits in one
  of the first ``d % m + 1`` of the ``m`` blocks, or within one bit less in one of the others
  (were they beyond that in every block, they would differ in more than d bits), so only the
  codes in the buckets of the block values that close are compared. The blocks widen with the
  codes, so that a bucket holds a few of them: five of 13, 13, 13, 13 and 12 bits up to 50,000
  codes, four of 16 up to 2,000,000, three of 22, 21 and 21 beyond. With 512 queries a call
  at radius 8: 2.5 µs a query at 10,000 codes, 9 µs at 100,000 and 54 µs at 1,000,000,
  against 5.4 µs, 52 µs and 0.5 ms flat; one query at radius 12 over 1,000,000 codes,
  0.36 ms (``bench/index.py``). Where the buckets a query probes hold more codes than a flat
  scan costs (a family of near-identical codes fills the same buckets of every block, and
  a small index's buckets are full at wide radii), the flat scan answers instead.

Asked for each query's nearest few (:meth:`HammingIndex.nearest_each`, what indexing a file
asks), a flat scan runs compiled where the kernels are loaded (``hamming_nearest`` of
:mod:`isccd.iscc.kernels`, loaded for a scan of more than a few million distances, or once
numpy has listed a few million pairs within the radius: a family of near-identical files,
found by one large scan or by many small ones): it keeps each query's nearest as it goes and
counts the rest, where numpy lists every pair within the radius first (17 bytes a pair: a
query in a family of thousands finds thousands). Both give the same answers
(``tests/test_hamming.py``).

Layout per unit type: parallel numpy arrays of codes (``uint64``), file ids (``int64``) and a
live flag, grown geometrically so that appends are amortized O(1). Removing a file clears its
flag (a tombstone); when tombstones pile up the arrays are compacted. A file id appears at most
once per type among live slots. Memory: 17 bytes per code, times the growth slack (at most 1.5),
and, once a query has used it, 4 bytes per code a block and 1 more for the block index, with
its buckets' starts (160 KB for five blocks, 1 MB for four, 32 MB for three).

The block index is built by the first query it pays for, and covers the slots filled then.
Slots appended since are scanned flat, and so are the few whose code changed in place; it is
built again once the appended ones are more than an eighth of the codes it covers, or the changed
ones more than a quarter (and either more than 1,024), and dropped when the arrays are compacted.

Not thread-safe: it belongs to the thread that owns the store (see :mod:`isccd.store.owner`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from isccd.iscc import kernels
from isccd.iscc.kernels import KEY_SHIFT, Kernels
from isccd.model import UnitType

_GROWTH = 1.5
_MIN_CAPACITY = 1024
#: Distances computed in one numpy pass of the flat scan (about 10 bytes of buffers a
#: distance): 64-128 K measured fastest, about 0.6 ns a distance, as :meth:`HammingIndex.within`
#: of one code over 20,000; what a block saves is the calls.
_BLOCK = 1 << 17

#: The block index's layouts: the widths of its blocks in bits, from the most significant, for
#: up to a number of codes (the last for any more). Blocks grow with the codes so that a bucket
#: holds a few of them: at 10,000,000 codes a 13-bit block's bucket holds 1,200, each compared,
#: a 21-bit one's 5; a query probes more buckets of wider blocks, each cheap.
_LAYOUTS: tuple[tuple[int, tuple[int, ...]], ...] = (
    (50_000, (13, 13, 13, 13, 12)),
    (2_000_000, (16, 16, 16, 16)),
    (1 << 62, (22, 21, 21)),
)
#: Bucket lookups one numpy pass makes (8 bytes each, in a few arrays): a pass holds the
#: probes of a few queries at a time at wide radii (12,233 a query at radius 12 over three
#: blocks), of all of them at narrow ones.
_PROBES = 1 << 18
#: What the choice between the flat scan and the block index assumes a query costs, in µs
#: (fitted to ``bench/index.py``'s runs of 512 queries a call at 10,000 to 1,000,000 codes): a
#: code compared in the flat scan, a bucket looked up, a code found in a bucket and compared,
#: and a call, whatever its number of queries (a few numpy calls per block).
_COST_FLAT = 0.00065
_COST_BUCKET = 0.0215
_COST_FOUND = 0.0243
_COST_CALL = 40.0
#: Codes appended since the block index was built are scanned flat until they are more than
#: this many and an eighth of the codes indexed; then it is built again (0.4 ms for 10,000
#: codes, 45 ms for 1,000,000, 0.6 s for 3,000,000 and 2.3 s for 10,000,000).
_MIN_UNINDEXED = 1024
#: A flat scan of this many distances or more loads the compiled kernels when they are not yet
#: (about 3 ms of numpy; a family's scan is many times that). So does a family found by smaller
#: scans: once numpy has listed this many pairs within the radius for :meth:`nearest_each`
#: (a few tenths of a second of arrays of pairs, and growing with the family: a file added to
#: a family of ``n`` lists ``n``), as a tree of family files indexed a few at a time does.
_COMPILED_CELLS = 1 << 22
#: The most hits a query the compiled scan keeps (16 bytes each, per query of a call).
_MOST_KEPT = 1024


def code64(digest: bytes) -> int:
    """The first 64 bits of a unit digest as an unsigned integer (shorter digests are
    zero-padded on the right, so that prefixes stay comparable)."""
    return int.from_bytes(digest[:8].ljust(8, b"\0"), "big")


def codes64(packed: bytes) -> npt.NDArray[np.uint64]:
    """:func:`code64` of each digest in ``packed``: their first 64 bits, 8 bytes each,
    big-endian, one after the other (as the store reads them in bulk)."""
    return np.frombuffer(packed, dtype=">u8").astype(np.uint64)


class Hit(NamedTuple):
    """One file found by a query (a named tuple: a family's queries make them by the thousand,
    and a tuple is made in a fraction of a frozen dataclass's time).

    Attributes:
        file_id: The file.
        distance: Hamming distance of the first 64 bits.
        code: The file's code (its first 64 bits).
    """

    file_id: int
    distance: int
    code: int

    def rank(self) -> tuple[int, int]:
        """The order of hits: nearest first, ties by file id."""
        return self.distance, self.file_id


@functools.cache
def _flips(width: int, most: int) -> npt.NDArray[np.int64]:
    """Every ``width``-bit mask with at most ``most`` bits set, ascending: what XORed with a
    block value gives the values within ``most`` bits of it (none below 0)."""
    masks = [
        sum(1 << bit for bit in bits)
        for k in range(min(most, width) + 1)
        for bits in itertools.combinations(range(width), k)
    ]
    return np.array(sorted(masks), dtype=np.int64)


def _widths(count: int) -> tuple[int, ...]:
    """The widths of the blocks of a block index of ``count`` codes (:data:`_LAYOUTS`)."""
    return next(widths for most, widths in _LAYOUTS if count <= most)


def _radii(radius: int, blocks: int) -> tuple[int, ...]:
    """Per block, within how many of its bits a code within ``radius`` of a query may be
    looked for, such that every such code is within that of the query in at least one block:
    ``q`` in the first ``a + 1`` blocks and ``q - 1`` in the others, where ``radius`` is
    ``q * blocks + a`` (a code beyond them all would differ in at least ``(a + 1)(q + 1) +
    (blocks - a - 1) q = radius + 1`` bits). A block at -1 is not looked in."""
    q, a = divmod(radius, blocks)
    return tuple(q if i <= a else q - 1 for i in range(blocks))


#: A block looked in by a query: its shift and width, its slots in the order of their block
#: value, where each value's slots begin, and the flips that give the values looked for.
_Probed = tuple[int, int, npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.int64]]


class _Blocks:
    """The block index of the codes in slots ``[0, size)`` when it was built (blocks as wide
    as :func:`_widths` of their number): per block, the slots in the order of their block
    value, and where each value's slots begin."""

    def __init__(self, codes: npt.NDArray[np.uint64]) -> None:
        self.size = len(codes)
        #: Slots below ``size`` whose code changed since (False): compared one by one.
        self.fresh = np.ones(self.size, dtype=np.bool_)
        self.changed: list[int] = []
        self.blocks: list[tuple[int, int, npt.NDArray[np.int32], npt.NDArray[np.int32]]] = []
        shift = 64
        for width in _widths(self.size):
            shift -= width
            keys = _block_values(codes, shift, width)
            order = _ordered(keys).astype(np.int32)
            starts = np.zeros((1 << width) + 1, dtype=np.int32)
            np.cumsum(np.bincount(keys, minlength=1 << width), out=starts[1:])
            self.blocks.append((shift, width, order, starts))

    @property
    def nbytes(self) -> int:
        """Memory held by the block index."""
        return self.fresh.nbytes + sum(o.nbytes + s.nbytes for _, _, o, s in self.blocks)

    def change(self, slot: int) -> None:
        """Note that the code of an indexed slot changed."""
        if self.fresh[slot]:
            self.fresh[slot] = False
            self.changed.append(slot)

    def find(
        self,
        codes: npt.NDArray[np.uint64],
        queries: npt.NDArray[np.uint64],
        radius: int,
        block: int,
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.uint8]] | None:
        """Query positions, slots and distances of the unchanged indexed slots within
        ``radius`` of each query, each pair once, ordered by query, then slot: the queries a
        few at a time, so that a pass compares about ``block`` codes (at least one query's).

        ``None`` when the buckets the queries probe hold more codes than the flat scan would
        compare in the time (a family of near-identical codes fills the same few buckets of
        every block): the caller scans instead."""
        radii = _radii(radius, len(self.blocks))
        probed = [
            (shift, width, order, starts, _flips(width, most))
            for (shift, width, order, starts), most in zip(self.blocks, radii, strict=True)
            if most >= 0
        ]
        # The probes of a pass are held together: a few queries' at wide radii.
        step = max(1, _PROBES // max(1, sum(len(p[4]) for p in probed)))
        compared = np.zeros(len(queries), dtype=np.int64)
        for start in range(0, len(queries), step):
            some = slice(start, start + step)
            for shift, width, _, starts, masks in probed:
                probes = _probes(queries[some], shift, width, masks)
                compared[some] += (starts[probes + 1] - starts[probes]).sum(axis=1)
        if int(compared.sum()) * _COST_FOUND > len(queries) * self.size * _COST_FLAT:
            return None
        # The candidates of a pass are held together (tens of bytes each): bounded as the
        # flat scan's distances are, whatever the number of queries.
        ends = np.cumsum(compared)
        parts = []
        start = 0
        while start < len(queries):
            before = int(ends[start - 1]) if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, before + block, side="right")))
            stop = min(stop, start + step)
            parts.append(self._find(codes, queries, radius, probed, slice(start, stop)))
            start = stop
        return (
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
        )

    def _find(
        self,
        codes: npt.NDArray[np.uint64],
        queries: npt.NDArray[np.uint64],
        radius: int,
        probed: list[_Probed],
        some: slice,
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.uint8]]:
        """:meth:`find` of ``some`` of the queries, by the blocks ``probed`` and each one's
        flips."""
        found_queries = []
        found_slots = []
        for shift, width, order, starts, masks in probed:
            rows = _probes(queries[some], shift, width, masks)
            first = starts[rows].ravel()
            counts = starts[rows + 1].ravel() - first
            total = int(counts.sum())
            if not total:
                continue
            ends = np.cumsum(counts)
            at = np.arange(total) + np.repeat(first - (ends - counts), counts)
            found_slots.append(order[at])
            flips = rows.shape[1]
            found_queries.append(np.repeat(np.arange(len(first)) // flips + some.start, counts))
        if not found_slots:
            return _nothing()
        slots = np.concatenate(found_slots)
        asked = np.concatenate(found_queries)
        distances = np.bitwise_count(codes[slots] ^ queries[asked])
        keep = distances <= radius
        if self.changed:
            keep &= self.fresh[slots]
        # A pair close in several blocks was found in each: kept once.
        pairs, first_seen = np.unique(asked[keep] * self.size + slots[keep], return_index=True)
        return pairs // self.size, pairs % self.size, distances[keep][first_seen]


def _spans(
    exclude: Sequence[int], upto: Sequence[int] | None, queries: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """Per query, the file ids it leaves out as a span ``[lo, hi)`` (see
    :meth:`HammingIndex.nearest_each`); ``None`` when they are not one span (ids not
    consecutive)."""
    if not len(exclude):
        none = np.zeros(queries, dtype=np.int64)
        return none, none
    job = np.asarray(exclude, dtype=np.int64)
    if not bool((np.diff(job) == 1).all()):
        return None
    first = int(job[0])
    lo = np.full(queries, first, dtype=np.int64)
    if upto is not None:
        lo += np.asarray(upto, dtype=np.int64)
    return lo, np.full(queries, first + len(job), dtype=np.int64)


def _kernels(cells: int, listed: int) -> Kernels | None:
    """The compiled kernels for a flat scan of ``cells`` distances: once loaded (the workers'
    machine code, a few tens of MB with llvmlite) for every scan; before, only for a scan large
    enough that numpy's list of pairs would cost more, or once numpy has ``listed`` that many
    pairs (a family of near-identical files)."""
    loaded = kernels.load_kernels.cache_info().currsize > 0
    if not loaded and cells < _COMPILED_CELLS and listed < _COMPILED_CELLS:
        return None
    found = kernels.load_kernels()
    return found if found.accelerated else None


def _pays(radius: int, count: int, queries: int) -> bool:
    """Whether ``queries`` queries within ``radius`` over ``count`` codes are assumed to cost
    less through the block index than through the flat scan."""
    widths = _widths(count)
    buckets = found = 0.0
    for width, most in zip(widths, _radii(radius, len(widths)), strict=True):
        probed = len(_flips(width, most)) if most >= 0 else 0
        buckets += probed
        found += probed * count / (1 << width)
    indexed = _COST_CALL + queries * (buckets * _COST_BUCKET + found * _COST_FOUND)
    return indexed < queries * count * _COST_FLAT


def _block_values(
    codes: npt.NDArray[np.uint64], shift: int, width: int
) -> npt.NDArray[np.uint16] | npt.NDArray[np.uint32]:
    """The ``width``-bit block at ``shift`` of each code (16 bits each where they fit: a
    radix sort orders those)."""
    values = (codes >> np.uint64(shift)) & np.uint64((1 << width) - 1)
    if width <= 16:
        return values.astype(np.uint16)
    return values.astype(np.uint32)


def _ordered(keys: npt.NDArray[np.uint16] | npt.NDArray[np.uint32]) -> npt.NDArray[np.intp]:
    """The positions of ``keys`` in key order, equal keys in position order: a stable sort of
    16-bit keys is a radix sort (linear), and wider keys are sorted by their low 16 bits, then
    stably by the rest (at 10,000,000 keys, 0.55 s where one stable sort takes 1.3 s)."""
    if keys.dtype == np.uint16:
        return np.argsort(keys, kind="stable")
    low = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    return low[np.argsort((keys[low] >> 16).astype(np.uint16), kind="stable")]


def _probes(
    queries: npt.NDArray[np.uint64], shift: int, width: int, masks: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """The block values each query looks for: its own XORed with each mask, a row a query."""
    return _block_values(queries, shift, width).astype(np.int64)[:, None] ^ masks


def _nothing() -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.uint8]]:
    empty = np.empty(0, dtype=np.intp)
    return empty, empty, np.empty(0, dtype=np.uint8)


class HammingIndex:
    """Codes of one unit type, searchable by Hamming distance."""

    def __init__(self, capacity: int = _MIN_CAPACITY) -> None:
        """Create an empty index with room for ``capacity`` codes before it grows."""
        capacity = max(int(capacity), _MIN_CAPACITY)
        self._codes = np.zeros(capacity, dtype=np.uint64)
        self._ids = np.zeros(capacity, dtype=np.int64)
        self._live = np.zeros(capacity, dtype=np.bool_)
        self._n = 0
        self._dead = 0
        self._sorted = True  # ids[:n] ascending: lookups by binary search
        self._blocks: _Blocks | None = None
        #: Pairs within the radius :meth:`nearest_each` has listed in numpy (see
        #: :data:`_COMPILED_CELLS`).
        self._listed = 0

    def __len__(self) -> int:
        """Live codes."""
        return self._n - self._dead

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays."""
        blocks = self._blocks.nbytes if self._blocks is not None else 0
        return self._codes.nbytes + self._ids.nbytes + self._live.nbytes + blocks

    def _grow(self, need: int) -> None:
        capacity = len(self._codes)
        if need <= capacity:
            return
        new = max(need, int(capacity * _GROWTH) + 1)
        for name in ("_codes", "_ids", "_live"):
            old = getattr(self, name)
            grown = np.zeros(new, dtype=old.dtype)
            grown[: self._n] = old[: self._n]
            setattr(self, name, grown)

    def _slot(self, file_id: int) -> int:
        """The live slot of ``file_id``, or -1."""
        n = self._n
        if n == 0:
            return -1
        if self._sorted:
            i = int(np.searchsorted(self._ids[:n], file_id))
            # Dead slots may share the id of a later live one; scan the run of equal ids.
            while i < n and self._ids[i] == file_id:
                if self._live[i]:
                    return i
                i += 1
            return -1
        found = np.flatnonzero((self._ids[:n] == file_id) & self._live[:n])
        return int(found[0]) if len(found) else -1

    def add(self, file_id: int, code: int) -> None:
        """Insert or replace the code of ``file_id``."""
        n = self._n
        # A new file has the largest id yet: appended without looking for it.
        if not (self._sorted and (n == 0 or self._ids[n - 1] < file_id)):
            slot = self._slot(file_id)
            if slot >= 0:
                self._codes[slot] = code
                blocks = self._blocks
                if blocks is not None and slot < blocks.size:
                    blocks.change(slot)
                    if len(blocks.changed) * 4 > max(blocks.size, _MIN_UNINDEXED * 4):
                        self._blocks = None  # built again when a query wants it
                return
        self._grow(n + 1)
        if n and self._ids[n - 1] > file_id:
            self._sorted = False
        self._codes[n] = code
        self._ids[n] = file_id
        self._live[n] = True
        self._n = n + 1

    def add_many(
        self, file_ids: Sequence[int], codes: Sequence[int] | npt.NDArray[np.uint64]
    ) -> None:
        """Append codes of files not in the index yet (bulk load; no duplicate check)."""
        count = len(file_ids)
        if not count:
            return
        ids = np.asarray(file_ids, dtype=np.int64)
        self._grow(self._n + count)
        n = self._n
        if (n and self._ids[n - 1] > ids[0]) or bool(np.any(ids[1:] < ids[:-1])):
            self._sorted = False
        self._codes[n : n + count] = np.asarray(codes, dtype=np.uint64)
        self._ids[n : n + count] = ids
        self._live[n : n + count] = True
        self._n = n + count

    def discard(self, file_id: int) -> bool:
        """Remove ``file_id``; return whether it was there."""
        slot = self._slot(file_id)
        if slot < 0:
            return False
        self._live[slot] = False
        self._dead += 1
        if self._dead > _MIN_CAPACITY and self._dead * 4 > self._n:
            self.compact()
        return True

    def ids(self) -> npt.NDArray[np.int64]:
        """The file ids indexed (live), in slot order."""
        n = self._n
        return self._ids[:n][self._live[:n]]

    def get(self, file_id: int) -> int | None:
        """The code of ``file_id``, if indexed."""
        slot = self._slot(file_id)
        return int(self._codes[slot]) if slot >= 0 else None

    def compact(self) -> None:
        """Drop tombstoned slots and restore id order."""
        n = self._n
        keep = np.flatnonzero(self._live[:n])
        order = keep[np.argsort(self._ids[keep], kind="stable")]
        count = len(order)
        self._codes[:count] = self._codes[order]
        self._ids[:count] = self._ids[order]
        self._live[:count] = True
        self._live[count:n] = False
        self._n = count
        self._dead = 0
        self._sorted = True
        self._blocks = None  # the slots moved

    def within(self, code: int, radius: int) -> list[Hit]:
        """Every live file whose code is within ``radius`` bits of ``code``, nearest first
        (ties by file id). Exact: no approximation."""
        return self.within_each([code], radius)[0]

    def within_each(
        self,
        codes: Sequence[int],
        radius: int,
        *,
        skip: Sequence[int] | None = None,
        block: int = _BLOCK,
    ) -> list[list[Hit]]:
        """:meth:`within` of each of ``codes``: the hits of each, nearest first (ties by file
        id), found for all the codes together (a few numpy passes, not a few per code).

        Args:
            skip: A file id per code, left out of its hits (the file asking, which finds
                itself: a hit not built only to be dropped).
            block: At most this many distances per pass of the flat scan, or about this
                many codes compared per pass of the block index (at least one query's).
        """
        found: list[list[Hit]] = [[] for _ in codes]
        if self._n == 0 or radius < 0 or not found:
            return found
        queries = np.asarray(codes, dtype=np.uint64)
        asked, slots, distances = self._near(queries, radius, block)
        if not len(slots):
            return found
        live = self._live[slots]  # few: masked after, not before
        if skip is not None:
            live &= self._ids[slots] != np.asarray(skip, dtype=np.int64)[asked]
        slots = slots[live]
        hits = zip(
            asked[live].tolist(),
            self._ids[slots].tolist(),
            distances[live].tolist(),
            self._codes[slots].tolist(),
            strict=True,
        )
        for at, file_id, distance, code in hits:
            found[at].append(Hit(file_id, distance, code))
        for some in found:
            if len(some) > 1:
                some.sort(key=Hit.rank)
        return found

    def nearest_each(
        self,
        codes: Sequence[int],
        radius: int,
        limit: int,
        *,
        exclude: Sequence[int] = (),
        upto: Sequence[int] | None = None,
        block: int = _BLOCK,
    ) -> tuple[list[list[Hit]], list[int]]:
        """The ``limit`` nearest hits of each of ``codes`` within ``radius``, and how many there
        are in all, chosen in numpy: a query in a family of thousands of files costs a few
        array passes, not a hit object per file. Ties go to the larger file id (the file
        indexed last): among a family's files of one code, the newest, so that a family's
        relations spread over it instead of all ending on its first file.

        Args:
            exclude: File ids in an order (a job of new files); query ``q`` leaves out
                ``exclude[upto[q]:]`` (itself and the files after it), all of them without
                ``upto``.
            upto: Per query, where its part of ``exclude`` begins.
        """
        found: list[list[Hit]] = [[] for _ in codes]
        totals = [0] * len(codes)
        if self._n == 0 or radius < 0 or not found:
            return found, totals
        queries = np.asarray(codes, dtype=np.uint64)
        pairs = self._indexed(queries, radius, block)
        if pairs is None:
            # The compiled scan holds ``limit`` hits a query: for a bounded number only (an
            # index asked for every hit, with no max_links, lists them as they are found).
            spans = _spans(exclude, upto, len(codes)) if limit <= _MOST_KEPT else None
            cells = self._n * len(codes)
            kernels = _kernels(cells, self._listed) if spans is not None else None
            if kernels is not None and spans is not None:
                return self._nearest_compiled(kernels, queries, spans, radius, limit)
            pairs = self._scan(queries, radius, 0, self._n, block)
            self._listed += len(pairs[0])
        asked, slots, distances = pairs
        live = self._live[slots]
        ids = self._ids[slots]
        if len(exclude):
            job = np.asarray(exclude, dtype=np.int64)
            starts = np.zeros(len(codes), dtype=np.int64) if upto is None else np.asarray(upto)
            if bool((np.diff(job) == 1).all()):
                # Consecutive ids, as a job of new files has: a hit's place in the job is
                # its id less the first (outside it when that is negative or past the end).
                at = ids - job[0]
                live &= (at < starts[asked]) | (at >= len(job))
            else:
                order = np.argsort(job, kind="stable")
                ranked = job[order]
                at = np.minimum(np.searchsorted(ranked, ids), len(job) - 1)
                live &= (ranked[at] != ids) | (order[at] < starts[asked])
        asked, ids, distances, slots = asked[live], ids[live], distances[live], slots[live]
        if not len(asked):
            return found, totals
        counts = np.bincount(asked, minlength=len(codes))
        totals = counts.tolist()
        # Grouped by query (a stable sort of small integers: a radix sort), then per query
        # the ``limit`` nearest chosen by a partition: a query in a family of n files costs
        # O(n), not a sort of every hit of every query.
        group = np.argsort(asked.astype(np.int32), kind="stable")
        # Nearest first, then the larger file id: one integer key per hit.
        key = (distances[group].astype(np.int64) << 47) - ids[group]
        ends = np.cumsum(counts)
        codes64 = self._codes
        for q in np.flatnonzero(counts).tolist():
            stop = int(ends[q])
            start = stop - int(counts[q])
            part = key[start:stop]
            if len(part) > limit:
                pick = np.argpartition(part, limit - 1)[:limit] if limit > 0 else part[:0]
                pick = pick[np.argsort(part[pick])]
            else:
                pick = np.argsort(part)
            chosen = group[start:stop][pick]
            found[q] = [
                Hit(file_id, distance, code)
                for file_id, distance, code in zip(
                    ids[chosen].tolist(),
                    distances[chosen].tolist(),
                    codes64[slots[chosen]].tolist(),
                    strict=True,
                )
            ]
        return found, totals

    def _nearest_compiled(
        self,
        kernels: Kernels,
        queries: npt.NDArray[np.uint64],
        spans: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
        radius: int,
        limit: int,
    ) -> tuple[list[list[Hit]], list[int]]:
        """:meth:`nearest_each` by the compiled flat scan: one pass over the codes a query,
        keeping its ``limit`` nearest, with no list of every pair within ``radius``."""
        n = self._n
        kept = min(max(limit, 0), n)  # none kept below 0, as numpy's partition keeps
        slots, keys, counts = kernels.hamming_nearest(
            self._codes[:n], self._ids[:n], self._live[:n], queries, spans, radius, kept
        )
        found: list[list[Hit]] = []
        codes64 = self._codes
        for picked, keyed in zip(slots.tolist(), keys.tolist(), strict=True):
            hits = []
            for slot, key in zip(picked, keyed, strict=True):
                if slot < 0:
                    break
                file_id = int(self._ids[slot])
                hits.append(Hit(file_id, (key + file_id) >> KEY_SHIFT, int(codes64[slot])))
            found.append(hits)
        return found, counts.tolist()

    def _near(
        self, queries: npt.NDArray[np.uint64], radius: int, block: int
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.uint8]]:
        """Query positions, slots (live or not) and distances of every pair within
        ``radius``: through the block index where it costs less than the flat scan."""
        found = self._indexed(queries, radius, block)
        return self._scan(queries, radius, 0, self._n, block) if found is None else found

    def _indexed(
        self, queries: npt.NDArray[np.uint64], radius: int, block: int
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.uint8]] | None:
        """What :meth:`_near` finds, through the block index; ``None`` where the flat scan
        costs less."""
        n = self._n
        blocks = self._blocks
        if blocks is not None and n - blocks.size > max(_MIN_UNINDEXED, blocks.size // 8):
            blocks = self._blocks = None  # too many codes left out: built again if it pays
        if blocks is None and _pays(radius, n, len(queries)):
            blocks = self._blocks = _Blocks(self._codes[:n])
        if blocks is None or not _pays(radius, blocks.size, len(queries)):
            return None
        found = blocks.find(self._codes, queries, radius, block)
        if found is None:
            return None
        parts = [found]
        if blocks.changed:
            changed = np.asarray(blocks.changed, dtype=np.intp)
            asked, at, distances = _scan(self._codes[changed], queries, radius, block)
            parts.append((asked, changed[at], distances))
        if blocks.size < n:
            parts.append(self._scan(queries, radius, blocks.size, n, block))
        return (
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
        )

    def _scan(
        self, queries: npt.NDArray[np.uint64], radius: int, start: int, stop: int, block: int
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.uint8]]:
        """The flat scan of slots ``[start, stop)``."""
        asked, at, distances = _scan(self._codes[start:stop], queries, radius, block)
        return asked, at + start, distances


def _scan(
    stored: npt.NDArray[np.uint64], queries: npt.NDArray[np.uint64], radius: int, block: int
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.uint8]]:
    """Query positions, positions in ``stored`` and distances of every pair within ``radius``,
    by query, then position: each query against every code, a block of queries a pass."""
    n = len(stored)
    if n == 0 or not len(queries):
        return _nothing()
    rows = max(1, block // n)
    cells = min(rows, len(queries)) * n
    # One set of buffers for every block: fresh large arrays cost a page fault per page.
    xor = np.empty(cells, dtype=np.uint64)
    distances = np.empty(cells, dtype=np.uint8)
    near = np.empty(cells, dtype=np.bool_)
    found_asked, found_at, found_distances = [], [], []
    for start in range(0, len(queries), rows):
        chunk = queries[start : start + rows]
        size = len(chunk) * n
        np.bitwise_xor(stored, chunk[:, None], out=xor[:size].reshape(len(chunk), n))
        np.bitwise_count(xor[:size], out=distances[:size])
        np.less_equal(distances[:size], radius, out=near[:size])
        cells_near = np.flatnonzero(near[:size])  # flat: a 2-D nonzero is 40x slower
        if not len(cells_near):
            continue
        query, at = np.divmod(cells_near, n)
        found_asked.append(query + start)
        found_at.append(at)
        found_distances.append(distances[cells_near])
    if not found_at:
        return _nothing()
    return (
        np.concatenate(found_asked),
        np.concatenate(found_at),
        np.concatenate(found_distances),
    )


class HammingSearch:
    """The in-memory search: one :class:`HammingIndex` per unit type."""

    def __init__(self, unit_types: Iterable[UnitType]) -> None:
        """Index the given unit types (others are ignored by :meth:`add`)."""
        self._by_type = {unit_type: HammingIndex() for unit_type in unit_types}

    def add_type(self, unit_type: UnitType) -> HammingIndex:
        """Start indexing a unit type (empty); return its index."""
        return self._by_type.setdefault(unit_type, HammingIndex())

    def __getitem__(self, unit_type: UnitType) -> HammingIndex:
        """The index of one unit type."""
        return self._by_type[unit_type]

    def add(self, file_id: int, digests: Mapping[UnitType, bytes], *, new: bool = False) -> None:
        """Index (or re-index) a file's units; types missing from ``digests`` are removed.

        Args:
            new: ``file_id`` was never indexed (a file just stored): there is nothing to remove.
        """
        for unit_type, index in self._by_type.items():
            digest = digests.get(unit_type)
            if digest is not None:
                index.add(file_id, code64(digest))
            elif not new:
                index.discard(file_id)

    def add_new(self, file_ids: Sequence[int], digests: Sequence[Mapping[UnitType, bytes]]) -> None:
        """:meth:`add` of files never indexed (``new``), each with its digests, together."""
        for unit_type, index in self._by_type.items():
            found = [
                (f, d[unit_type]) for f, d in zip(file_ids, digests, strict=True) if unit_type in d
            ]
            index.add_many([f for f, _ in found], [code64(d) for _, d in found])

    def remove(self, file_id: int) -> None:
        """Forget a file in every unit type."""
        for index in self._by_type.values():
            index.discard(file_id)

    def within(self, unit_type: UnitType, digest: bytes, radius: int) -> list[Hit]:
        """Files whose ``unit_type`` code is within ``radius`` of ``digest``'s first 64 bits."""
        index = self._by_type.get(unit_type)
        return index.within(code64(digest), radius) if index is not None else []

    @property
    def nbytes(self) -> int:
        """Memory held by all arrays."""
        return sum(index.nbytes for index in self._by_type.values())

    def stats(self) -> dict[str, int]:
        """Live codes per unit type."""
        return {t.value: len(index) for t, index in self._by_type.items()}
