"""The index's in-memory Hamming search: every stored unit's first 64 bits, per unit type.

A query ("every file whose code is within distance d of this one") is an exact, flat scan:
XOR against all codes and a hardware popcount (``numpy.bitwise_count``), about a millisecond per
million codes. Measured alternatives (permuted tables, multi-index hashing) only pay off at radii
of about 3 bits, while ISCC near-duplicate radii are 4-16 bits of 64, so the flat scan is both the
simplest and the fastest exact answer on one host.

Layout per unit type: parallel numpy arrays of codes (``uint64``), file ids (``int64``) and a
live flag, grown geometrically so that appends are amortized O(1). Removing a file clears its
flag (a tombstone); when tombstones pile up the arrays are compacted. A file id appears at most
once per type among live slots. Memory: 17 bytes per code, times the growth slack (at most 1.5).

Not thread-safe: it belongs to the thread that owns the store (see :mod:`isccd.store.owner`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from isccd.model import UnitType

_GROWTH = 1.5
_MIN_CAPACITY = 1024
#: Distances computed in one numpy pass by :meth:`HammingIndex.within_each` (about 10 bytes
#: of buffers a distance): 64-128 K measured fastest, about 0.6 ns a distance, as
#: :meth:`HammingIndex.within` of one code over 20,000; what a block saves is the calls.
_BLOCK = 1 << 17


def code64(digest: bytes) -> int:
    """The first 64 bits of a unit digest as an unsigned integer (shorter digests are
    zero-padded on the right, so that prefixes stay comparable)."""
    return int.from_bytes(digest[:8].ljust(8, b"\0"), "big")


@dataclass(frozen=True, slots=True)
class Hit:
    """One file found by a query.

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

    def __len__(self) -> int:
        """Live codes."""
        return self._n - self._dead

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays."""
        return self._codes.nbytes + self._ids.nbytes + self._live.nbytes

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
                return
        self._grow(n + 1)
        if n and self._ids[n - 1] > file_id:
            self._sorted = False
        self._codes[n] = code
        self._ids[n] = file_id
        self._live[n] = True
        self._n = n + 1

    def add_many(self, file_ids: Sequence[int], codes: Sequence[int]) -> None:
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

    def within(self, code: int, radius: int) -> list[Hit]:
        """Every live file whose code is within ``radius`` bits of ``code``, nearest first
        (ties by file id). Exact: no approximation."""
        if self._n == 0 or radius < 0:
            return []
        distances = self.distances(code)
        candidates = np.nonzero(distances <= radius)[0]
        if not len(candidates):
            return []
        candidates = candidates[self._live[candidates]]  # few: masked after, not before
        ids = self._ids[candidates]
        dist = distances[candidates]
        codes = self._codes[candidates]
        order = np.lexsort((ids, dist))
        return [Hit(int(ids[i]), int(dist[i]), int(codes[i])) for i in order]

    def within_each(
        self,
        codes: Sequence[int],
        radius: int,
        *,
        skip: Sequence[int] | None = None,
        block: int = _BLOCK,
    ) -> list[list[Hit]]:
        """:meth:`within` of each of ``codes``: the same hits in the same order, found for
        several codes per numpy pass (a block of queries against every slot), not one.

        Args:
            skip: A file id per code, left out of its hits (the file asking, which finds
                itself: a hit not built only to be dropped).
            block: At most this many distances per pass (at least one query's).
        """
        found: list[list[Hit]] = [[] for _ in codes]
        n = self._n
        if n == 0 or radius < 0 or not found:
            return found
        queries = np.asarray(codes, dtype=np.uint64)
        skipped = None if skip is None else np.asarray(skip, dtype=np.int64)
        rows = max(1, block // n)
        cells = min(rows, len(queries)) * n
        # One set of buffers for every block: fresh large arrays cost a page fault per page.
        xor = np.empty(cells, dtype=np.uint64)
        distances = np.empty(cells, dtype=np.uint8)
        near = np.empty(cells, dtype=np.bool_)
        stored = self._codes[:n]
        for start in range(0, len(queries), rows):
            chunk = queries[start : start + rows]
            size = len(chunk) * n
            np.bitwise_xor(stored, chunk[:, None], out=xor[:size].reshape(len(chunk), n))
            np.bitwise_count(xor[:size], out=distances[:size])
            np.less_equal(distances[:size], radius, out=near[:size])
            cells_near = np.flatnonzero(near[:size])  # flat: a 2-D nonzero is 40x slower
            if not len(cells_near):
                continue
            query, slot = np.divmod(cells_near, n)
            live = self._live[slot]  # few: masked after, not before
            if skipped is not None:
                live &= self._ids[slot] != skipped[query + start]
            hits = zip(
                (query[live] + start).tolist(),
                self._ids[slot[live]].tolist(),
                distances[cells_near[live]].tolist(),
                stored[slot[live]].tolist(),
                strict=True,
            )
            for at, file_id, distance, code in hits:
                found[at].append(Hit(file_id, distance, code))
        for some in found:
            if len(some) > 1:
                some.sort(key=Hit.rank)
        return found

    def distances(self, code: int) -> npt.NDArray[np.uint8]:
        """Hamming distance from ``code`` to every slot (live or not), in slot order."""
        query = np.uint64(code)
        return np.bitwise_count(np.bitwise_xor(self._codes[: self._n], query))


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
