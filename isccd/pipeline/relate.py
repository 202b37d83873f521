"""Deciding a file's relations: its hardlinks, exact copies and near duplicates among the live
files (of the fleet, in a shared store), by :mod:`isccd.match`.

It reads the store and the in-memory Hamming search of an :class:`~isccd.pipeline.index.Index`
and writes neither (the one side effect: the writers' lock, taken before deciding, and the
search's counts of a file's hits, which :func:`related` reads back). Near candidates come from
the in-memory index, which holds the first 64 bits of every unit: for 64-bit units that is the
whole digest, so only their identity and datahash are read from the store; longer units are
confirmed on their full digests. Files of other hosts are never this host's hardlinks, whatever
their ``(st_dev, st_ino)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from isccd.hamming import Hit, code64
from isccd.match import CONTENT_UNITS, Relation, Side, Thresholds, is_exact, near_radii, relate_all
from isccd.model import FileRecord, UnitType
from isccd.pipeline.index import Index
from isccd.pipeline.peers import size_of
from isccd.store import FileKey, Store, StoredFile


def side_of(file_id: int, record: FileRecord, *, foreign: bool = False) -> Side:
    """What :mod:`isccd.match` needs of a stored or new record (``foreign``: another host's
    file, whose identity means nothing here)."""
    return Side(
        file_id=file_id,
        identity=record.stat.identity if record.stat and not foreign else None,
        datahash=record.datahash,
        size=size_of(record),
        digests={u.type: u.digest for u in record.units},
    )


def stored_side(stored: StoredFile, host: str) -> Side:
    """:func:`side_of` a stored file, seen from ``host``."""
    return side_of(stored.id, stored.record, foreign=bool(stored.host) and stored.host != host)


def key_side(host: str, file_id: int, key: FileKey, digests: dict[UnitType, bytes]) -> Side:
    """What :mod:`isccd.match` needs of a file known by its key, seen from ``host`` (another
    host's identity means nothing here)."""
    identity = key.identity if key.host in ("", host) else None
    return Side(file_id, identity, key.datahash, key.size, digests)


def exact_copies(
    store: Store, file_id: int, record: FileRecord, thresholds: Thresholds
) -> list[StoredFile]:
    """Live files of the fleet holding the same bytes as this one, other than itself and its
    hardlinks, when the policy reports them."""
    if not record.datahash or not thresholds.admits(size_of(record)):
        return []
    me = side_of(file_id, record)
    return [
        s
        for s in store.files_by_datahash(record.datahash, fleet=True)
        if s.id != file_id and is_exact(me, stored_side(s, store.host), thresholds)
    ]


def exact_ids(ix: Index, file_id: int, record: FileRecord) -> list[int]:
    """The ids of :func:`exact_copies`."""
    return [s.id for s in exact_copies(ix.store, file_id, record, ix.options.thresholds)]


def relations(
    ix: Index,
    file_id: int,
    record: FileRecord,
    keys: Mapping[int, FileKey] | None = None,
    near: Mapping[UnitType, Sequence[Hit]] | None = None,
) -> list[Relation]:
    """:func:`related`, without the counts."""
    return related(ix, file_id, record, keys, near)[0]


def related(
    ix: Index,
    file_id: int,
    record: FileRecord,
    keys: Mapping[int, FileKey] | None = None,
    near: Mapping[UnitType, Sequence[Hit]] | None = None,
) -> tuple[list[Relation], dict[UnitType, int]]:
    """Hardlink, exact and near relations of a stored file with every other live file (at
    most ``max_links`` near relations per unit type, the nearest), and how many files it
    is near per unit type.

    Args:
        ix: The index (its writers' lock is taken first: see :meth:`Index.decide`).
        file_id: The file.
        record: Its record.
        keys: What :meth:`Store.related_keys` returns for the file, if read beforehand
            (a job of new files).
        near: What the in-memory index finds within each unit type's threshold of the
            record's unit, if searched beforehand (:func:`near_each`).
    """
    ix.decide()
    thresholds = ix.options.thresholds
    identity = record.stat.identity if record.stat is not None else None
    # Too small to be anyone's duplicate: only its other names count. Not looking up its
    # copies keeps a tree of a thousand empty files linear, not quadratic.
    admitted = thresholds.admits(size_of(record))
    if keys is None:
        keys = ix.store.related_keys(identity, record.datahash if admitted else None)
    # Hardlinks and exact copies: their relation follows from their keys alone.
    host = ix.store.host
    sides = {other: key_side(host, other, key, {}) for other, key in keys.items()}
    if admitted:
        _near_sides(ix, file_id, record, sides, near)
    sides.pop(file_id, None)
    totals = ix.totals
    searched = {t: totals.pop((file_id, t)) for t in near_radii(thresholds)
                if (file_id, t) in totals}  # fmt: skip
    if not sides:
        return [], {}  # most files: related to nothing
    me = side_of(file_id, record)
    found, counts = relate_all(me, list(sides.values()), thresholds)
    # The index was asked for the nearest only: how many it holds within the threshold.
    return found, {t: max(n, searched.get(t, 0)) for t, n in counts.items()}


def _near_sides(
    ix: Index,
    file_id: int,
    record: FileRecord,
    sides: dict[int, Side],
    near: Mapping[UnitType, Sequence[Hit]] | None,
) -> None:
    """Add to ``sides`` the files whose units are within the near thresholds of the
    record's (what :func:`related` compares beyond hardlinks and exact copies), searched
    now or given in ``near``."""
    radii = near_radii(ix.options.thresholds)
    digests: dict[int, dict[UnitType, bytes]] = {}
    for unit in record.units:
        radius = radii.get(unit.type)
        if radius is None:
            continue
        if near is None:
            ix.ensure_loaded(unit.type)
            index = ix.search[unit.type]
            hits: Sequence[Hit]
            [hits], [total] = index.nearest_each(
                [code64(unit.digest)], radius, searched(ix.options.thresholds), exclude=[file_id]
            )
            ix.totals[(file_id, unit.type)] = total
        else:
            hits = near.get(unit.type, [])
        found = {h.file_id: h.code.to_bytes(8, "big") for h in hits if h.file_id != file_id}
        if found and unit.bits > 64:
            found = ix.store.unit_digests_of(sorted(found), unit.type)
        for other, digest in found.items():
            digests.setdefault(other, {})[unit.type] = digest
    fresh = sorted(digests.keys() - sides.keys())
    if not fresh:
        return  # most files: near nothing
    _content_of(ix.store, record, fresh, digests)
    host = ix.store.host
    for other, key in _keys(ix, fresh).items():
        sides[other] = key_side(host, other, key, digests[other])


def _keys(ix: Index, ids: Sequence[int]) -> dict[int, FileKey]:
    """The keys of the stored files ``ids``: within a job of new files each read once."""
    known = ix.job_keys
    if known is None:
        return ix.store.file_keys(ids)
    missing = [i for i in ids if i not in known]
    if missing:
        known.update(ix.store.file_keys(missing))
    return {i: known[i] for i in ids if i in known}


def _content_of(
    store: Store,
    record: FileRecord,
    ids: Sequence[int],
    digests: dict[int, dict[UnitType, bytes]],
) -> None:
    """Add to ``digests`` the Content-Codes of the files near ``record`` by a container
    unit only, of the types ``record`` has: whether those say the content differs
    (:func:`isccd.match.content_apart`) is what decides."""
    mine = [u.type for u in record.units if u.type in CONTENT_UNITS]
    if not mine:
        return  # the Data-Code is what there is
    for unit_type in mine:
        lacking = [i for i in ids if unit_type not in digests[i]]
        if lacking:
            for other, digest in store.unit_digests_of(lacking, unit_type).items():
                digests[other][unit_type] = digest


def near_each(
    ix: Index, ids: Sequence[int], records: Sequence[FileRecord]
) -> list[dict[UnitType, list[Hit]]]:
    """What :func:`_near_sides` would find in the in-memory index for each of a job of new
    files, were each indexed as it is added: per unit type, the files indexed before the
    job and the job's files before it, nearest first (ties by file id), at most
    :func:`searched` of them. The job's files are indexed already: those at or after a
    file are left out of its hits. One pass per block of the job's codes, not one per
    code."""
    thresholds = ix.options.thresholds
    radii = near_radii(thresholds)
    asked: dict[UnitType, tuple[list[int], list[int]]] = {t: ([], []) for t in radii}
    for i, record in enumerate(records):
        for unit in record.units:
            if (wanted := asked.get(unit.type)) is not None:
                wanted[0].append(i)
                wanted[1].append(code64(unit.digest))
    found: list[dict[UnitType, list[Hit]]] = [{} for _ in records]
    for unit_type, (at, codes) in asked.items():
        if not at:
            continue
        index = ix.search[unit_type]
        hits, totals = index.nearest_each(
            codes, radii[unit_type], searched(thresholds), exclude=ids, upto=at
        )
        for i, some, total in zip(at, hits, totals, strict=True):
            if some:  # most files: near nothing
                found[i][unit_type] = some
                ix.totals[(ids[i], unit_type)] = total
    return found


def searched(thresholds: Thresholds) -> int:
    """Hits asked of the in-memory index per unit type: twice ``max_links``, as some are
    no near relation (exact copies, longer units beyond the threshold, content that
    differs), so that a family costs a bounded number of comparisons per file."""
    limit = thresholds.max_links
    return 2 * limit if limit is not None else 1 << 62
