"""Watchlists in memory, and the files that match them: the ``watch.match`` events.

Every reference unit of every watchlist is in one :class:`~isccd.hamming.HammingIndex` per
unit type, keyed by its row in the store (the search the near index uses: 17 to 21 bytes a
unit, so 100,000 references of four units each take under 10 MB). A file's units are looked up
in them within the largest threshold any watchlist gives that type; what the search finds (its
first 64 bits within that radius) is read from the store, judged by its own watchlist's
threshold over the units' common length (:func:`isccd.match.within`), and announced:

- by the Instance-Code, a match is **exact** (the same bytes: equal over the common length);
- by any other unit type, **near**: within the watchlist's ``threshold`` (its own for every
  type), or the ``[match]`` threshold of the type when the watchlist has none. A type that
  ``[match]`` switches off (the Meta-Code by default) is matched only by a watchlist with a
  threshold of its own;
- but a near Data- or Meta-Code is no match where the file and the reference both have a
  Content-Code of one type that is beyond the watchlist's threshold (its own, else the type's
  ``[match]`` one): the content decides, as it does for duplicates
  (:func:`isccd.match.content_apart`), so a letter from the reference's Word template does not
  match it by the template's ZIP;
- files smaller than ``[match] min_size`` (empty files) match nothing, as they duplicate
  nothing.

A file matching a watchlist gets one event for it: the best match (exact first, then by unit
type in the order of :data:`isccd.match.NEAR_UNITS`, then nearest) and the first
:data:`NAMED` of all its matches (``matches``), with their ``count``.

The watchlists are read again when the store's watchlist version changed: :meth:`refresh` is
called as each batch begins, so a watchlist added by ``isccd watchlist`` (beside the daemon,
or on another host of a fleet) is matched from the next batch on.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from isccd.hamming import HammingIndex, code64
from isccd.match import CONTAINER_UNITS, NEAR_UNITS, Thresholds, content_apart, within
from isccd.model import FileRecord, UnitType
from isccd.pipeline.peers import size_of
from isccd.store import Store
from isccd.store.watchlists import WatchUnit

#: The unit types matched, in the order a file's best match is chosen.
TYPES: tuple[UnitType, ...] = (UnitType.INSTANCE, *NEAR_UNITS)
#: Matches named in one event.
NAMED = 4


@dataclass(frozen=True, slots=True)
class WatchHit:
    """One reference unit a file's unit matches.

    Attributes:
        ref: The reference unit (with its watchlist and label).
        unit: The unit type.
        distance: Hamming distance over the common length.
        threshold: The largest distance accepted over that length (0 for exact).
        bits: The common length.
        code: The file's unit, as an ISCC.
    """

    ref: WatchUnit
    unit: UnitType
    distance: int
    threshold: int
    bits: int
    code: str

    def rank(self) -> tuple[int, int, int]:
        """The order of matches: by unit type (exact first), then nearest, then reference."""
        return TYPES.index(self.unit), self.distance, self.ref.ref


class Watchlists:
    """Every watchlist's reference units, searchable, as of the store's watchlist version."""

    def __init__(self) -> None:
        """Empty, and read from the store by the first :meth:`refresh`."""
        self.version: int | None = None
        self._search: dict[UnitType, HammingIndex] = {}
        self._thresholds: dict[int, int | None] = {}
        self._units = 0

    def __len__(self) -> int:
        """Reference units held."""
        return self._units

    @property
    def nbytes(self) -> int:
        """Memory held by the search."""
        return sum(index.nbytes for index in self._search.values())

    def refresh(self, store: Store) -> bool:
        """Read the watchlists again when the store's version of them changed; whether it
        did (one small read otherwise)."""
        version = store.watchlist_version()
        if version == self.version:
            return False
        self._thresholds = {w.id: w.threshold for w in store.watchlists()}
        self._search = {}
        self._units = 0
        for unit_type in TYPES if self._thresholds else ():
            rows = store.watch_units_of_type(unit_type)
            if rows:
                index = HammingIndex(len(rows))
                index.add_many([r for r, _, _ in rows], [code64(d) for _, _, d in rows])
                self._search[unit_type] = index
                self._units += len(rows)
        self.version = version
        return True

    def _radius(self, unit_type: UnitType, thresholds: Thresholds) -> int | None:
        """The largest 64-bit distance any watchlist accepts for a unit type."""
        if unit_type is UnitType.INSTANCE:
            return 0
        found = [
            t if t is not None else thresholds.of(unit_type) for t in self._thresholds.values()
        ]
        radii = [r for r in found if r is not None]
        return max(radii) if radii else None

    def match_each(
        self, store: Store, records: Sequence[FileRecord], thresholds: Thresholds
    ) -> list[list[WatchHit]]:
        """The reference units each record matches, best first, found for all the records
        together (one search per unit type, one read of what it found)."""
        found: list[list[tuple[int, UnitType, bytes, str]]] = [[] for _ in records]
        if not self._search:
            return [[] for _ in records]
        wanted: set[int] = set()
        for unit_type, index in self._search.items():
            radius = self._radius(unit_type, thresholds)
            if radius is None:
                continue
            asked = [
                (i, unit)
                for i, record in enumerate(records)
                if thresholds.admits(size_of(record))
                and (unit := record.unit(unit_type)) is not None
            ]
            if not asked:
                continue
            hits = index.within_each([code64(u.digest) for _, u in asked], radius)
            for (i, unit), some in zip(asked, hits, strict=True):
                for hit in some:
                    found[i].append((hit.file_id, unit_type, unit.digest, unit.iscc))
                    wanted.add(hit.file_id)
        if not wanted:
            return [[] for _ in records]
        units = store.watch_refs_of_units(sorted(wanted))
        refs, ref_digests = {u.id: u for u in units}, digests_of(units)
        return [
            self._judged(some, refs, {u.type: u.digest for u in record.units}, ref_digests,
                         thresholds)
            for some, record in zip(found, records, strict=True)
        ]  # fmt: skip

    @staticmethod
    def _judged(
        candidates: Sequence[tuple[int, UnitType, bytes, str]],
        refs: dict[int, WatchUnit],
        digests: Mapping[UnitType, bytes],
        ref_digests: Mapping[int, Mapping[UnitType, bytes]],
        thresholds: Thresholds,
    ) -> list[WatchHit]:
        hits = []
        for row, _, digest, code in candidates:
            ref = refs.get(row)
            if ref is None:  # removed since the search was built: the next batch reloads
                continue
            hit = judge(
                ref, digest, code, thresholds, digests=digests, ref_digests=ref_digests[ref.ref]
            )
            if hit is not None:
                hits.append(hit)
        return sorted(hits, key=WatchHit.rank)


def digests_of(units: Iterable[WatchUnit]) -> dict[int, dict[UnitType, bytes]]:
    """Each reference's digests, by unit type, by reference id."""
    found: dict[int, dict[UnitType, bytes]] = {}
    for unit in units:
        found.setdefault(unit.ref, {})[unit.type] = unit.digest
    return found


def judge(
    ref: WatchUnit,
    digest: bytes,
    code: str,
    thresholds: Thresholds,
    *,
    digests: Mapping[UnitType, bytes],
    ref_digests: Mapping[UnitType, bytes],
) -> WatchHit | None:
    """Whether a file's unit of ``ref``'s type matches the reference unit ``ref`` (the rule
    of the module docstring), for the live ``watch.match`` and the questions alike.

    Args:
        ref: The reference unit.
        digest: The file's unit of that type.
        code: That unit as an ISCC.
        thresholds: The ``[match]`` policy (the types' thresholds where the watchlist has
            none of its own).
        digests: All the file's digests, by unit type.
        ref_digests: All the reference's digests, by unit type.
    """
    unit_type = ref.type
    if unit_type is UnitType.INSTANCE:
        bits = 8 * min(len(digest), len(ref.digest))
        if bits and digest[: bits // 8] == ref.digest[: bits // 8]:
            return WatchHit(ref, unit_type, 0, 0, bits, code)
        return None
    policy = policy_of(ref.threshold, thresholds)
    base = policy.of(unit_type)
    if base is None:
        return None
    near = within(digest, ref.digest, base)
    if near is None:
        return None
    # A Data- or Meta-Code near the reference's is its container's, or its name's: where both
    # have a Content-Code of one type, it decides (as for duplicates: isccd.match).
    if unit_type in CONTAINER_UNITS and content_apart(digests, ref_digests, policy):
        return None
    distance, limit, bits = near
    return WatchHit(ref, unit_type, distance, limit, bits, code)


@functools.lru_cache(maxsize=64)
def policy_of(threshold: int | None, thresholds: Thresholds) -> Thresholds:
    """The thresholds a watchlist matches by: its own ``threshold`` for every unit type, else
    the ``[match]`` policy's."""
    if threshold is None:
        return thresholds
    every = dict.fromkeys((t.value for t in NEAR_UNITS), threshold)
    return dataclasses.replace(thresholds, **every)


def payloads(record: FileRecord, hits: Sequence[WatchHit]) -> list[dict[str, Any]]:
    """The ``watch.match`` payloads of one file's matches: one per watchlist, by name."""
    by_list: dict[str, list[WatchHit]] = {}
    for hit in hits:
        by_list.setdefault(hit.ref.name, []).append(hit)
    return [_payload(record, by_list[name]) for name in sorted(by_list)]


def _payload(record: FileRecord, hits: Sequence[WatchHit]) -> dict[str, Any]:
    best = hits[0]
    return {
        "watchlist": best.ref.name,
        "ref": best.ref.ref,
        "label": best.ref.label,
        "unit": best.unit.value,
        "relation": "exact" if best.unit is UnitType.INSTANCE else "near",
        "distance": best.distance,
        "threshold": best.threshold,
        "bits": best.bits,
        "iscc": record.iscc,
        "code": best.code,
        "reference": best.ref.iscc,
        "matches": [
            {
                "ref": h.ref.ref,
                "label": h.ref.label,
                "unit": h.unit.value,
                "distance": h.distance,
                "threshold": h.threshold,
            }
            for h in hits[:NAMED]
        ],
        "count": len(hits),
    }
