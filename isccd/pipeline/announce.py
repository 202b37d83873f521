"""Announcing a file's relations: storing its near-duplicate pairs and logging what began
(``dup.exact``, ``dup.near``) and what ended (``dup.resolved``), relative to before a change;
for another host's file, from its side too (:mod:`isccd.pipeline.mirror`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from isccd.match import Relation
from isccd.model import EventType, RelationKind, UnitType
from isccd.pipeline import events as payload
from isccd.pipeline import mirror
from isccd.pipeline.peers import Peer
from isccd.store import NearPair, StoredFile

if TYPE_CHECKING:
    from isccd.pipeline.index import Index


def _store_near(
    ix: Index,
    file_id: int,
    near: dict[tuple[int, UnitType], Relation],
    old: dict[tuple[int, UnitType], NearPair],
) -> None:
    """Store the near relations that began or changed distance, and delete those that ended
    (no statement when there are none: most files have no near relation); then bound the
    other files' relations (:func:`_bound`)."""
    gone = [p for key, p in old.items() if key not in near]
    if gone:
        ix.store.remove_near(gone)
    new = [
        NearPair.of(file_id, other, unit, r.distance)
        for (other, unit), r in near.items()
        if (other, unit) not in old or old[(other, unit)].distance != r.distance
    ]
    if new:
        ix.store.add_near(new)
        _bound(ix, [(p.other(file_id), p.unit) for p in new])


def _bound(ix: Index, others: Sequence[tuple[int, UnitType]]) -> None:
    """Keep each of ``others`` at ``max_links`` relations of the unit type it just gained one
    of, dropping its farthest (ties: the other file indexed first), but never the last relation
    of the other file (so that no near duplicate is left without a relation, and out of every
    group): then the next farthest goes instead. A relation dropped still holds; it is not
    among the nearest of one of its files any more, and ends without an event, as it would not
    have been stored had that file been indexed last."""
    limit = ix.options.thresholds.max_links
    if limit is None:
        return
    dropped: set[NearPair] = set()
    counts: dict[tuple[int, UnitType], int] = {}

    def count(file_id: int, unit: UnitType) -> int:
        if (file_id, unit) not in counts:
            counts[(file_id, unit)] = ix.store.near_count(file_id, unit)
        return counts[(file_id, unit)]

    for other, unit in others:
        if count(other, unit) <= limit:
            continue  # most files, even in a family: room for one more
        pairs = [p for p in ix.store.near_of(other) if p.unit is unit and p not in dropped]
        if len(pairs) <= limit:
            continue
        pairs.sort(key=lambda p: (p.distance, -p.other(other)))
        excess = len(pairs) - limit
        for pair in reversed(pairs):
            far = pair.other(other)
            if excess and count(far, unit) > 1:
                dropped.add(pair)
                counts[(far, unit)] -= 1
                counts[(other, unit)] = count(other, unit) - 1
                excess -= 1
    if dropped:
        ix.store.remove_near(sorted(dropped))


def announce(
    ix: Index,
    root: str,
    stored: StoredFile,
    relations: Sequence[Relation],
    *,
    old_exact: Iterable[int] = (),
    old_near: Sequence[NearPair] = (),
    reason: str = "changed",
    counts: Mapping[UnitType, int] | None = None,
) -> None:
    """Store the near relations of a file and log what began and what ended.

    Events list at most ``others_limit`` other files each (the closest first), so only
    those are read from the store; a ``dup.near`` says in ``count`` how many files the file is
    near by its unit (``counts``), of which it names the nearest ``max_links``.
    """
    before_exact = list(old_exact)
    if not relations and not old_near and not before_exact:
        return  # most files: nothing began, nothing ended
    file_id, record = stored.id, stored.record
    limit = ix.options.others_limit
    exact = [r.other for r in relations if r.kind is RelationKind.EXACT]
    near = {(r.other, r.unit): r for r in relations if r.kind is RelationKind.NEAR}
    old = {(p.other(file_id), p.unit): p for p in old_near}
    _store_near(ix, file_id, near, old)
    exact_now, exact_before = set(exact), set(before_exact)
    ended_exact = [i for i in before_exact if i not in exact_now]
    began_exact = [i for i in exact if i not in exact_before]
    ended: dict[UnitType, list[int]] = {}
    for other, unit in old:
        if (other, unit) not in near:
            ended.setdefault(unit, []).append(other)
    began: dict[UnitType, list[Relation]] = {}
    for key, relation in near.items():
        if key not in old:
            began.setdefault(relation.unit, []).append(relation)
    for found in began.values():
        found.sort(key=lambda r: (r.distance, r.other))
    listed = set(ended_exact[:limit]) | (set(exact[:limit]) if began_exact else set())
    listed.update(began_exact[:limit])
    for ids in ended.values():
        listed.update(ids[:limit])
    for found in began.values():
        listed.update(r.other for r in found[:limit])
    files = {s.id: s for s in ix.store.files_by_id(sorted(listed))}

    def known(ids: Iterable[int]) -> list[StoredFile]:
        return [files[i] for i in ids if i in files]

    if ended_exact:
        ix.note(EventType.DUP_RESOLVED, root, record.path, {
            "kind": "exact", "unit": UnitType.INSTANCE.value, "reason": reason,
            "others": payload.refs(known(ended_exact[:limit])), "count": len(ended_exact),
        })  # fmt: skip
        mirror.mirror(ix, EventType.DUP_RESOLVED, stored, known(ended_exact[:limit]),
                      mirror.resolved(stored, "exact", UnitType.INSTANCE, reason))  # fmt: skip
    if began_exact:
        ix.note(EventType.DUP_EXACT, root, record.path, {
            "unit": UnitType.INSTANCE.value, "distance": 0, "threshold": 0,
            **payload.brief(record), "code": payload.unit_code(stored, UnitType.INSTANCE),
            "others": payload.matches(Peer(f, RelationKind.EXACT) for f in known(exact[:limit])),
            "count": len(exact),
        })  # fmt: skip
        mirror.mirror(
            ix, EventType.DUP_EXACT, stored, known(began_exact[:limit]), mirror.exact(stored)
        )
    for unit, ids in ended.items():
        ix.note(EventType.DUP_RESOLVED, root, record.path, {
            "kind": "near", "unit": unit.value, "reason": reason,
            "others": payload.refs(known(ids[:limit])), "count": len(ids),
        })  # fmt: skip
        mirror.mirror(ix, EventType.DUP_RESOLVED, stored, known(ids[:limit]),
                      mirror.resolved(stored, "near", unit, reason))  # fmt: skip
    for unit, found in began.items():
        mine = record.unit(unit)
        ix.note(EventType.DUP_NEAR, root, record.path, {
            "unit": unit.value, "threshold": found[0].threshold, "bits": found[0].bits,
            "distance": found[0].distance, "iscc": record.iscc,
            "code": mine.iscc if mine else None,
            "others": payload.matches(
                Peer(f, RelationKind.NEAR, unit, r.distance, r.threshold)
                for r in found[:limit] if (f := files.get(r.other)) is not None
            ),
            "count": max(len(found), (counts or {}).get(unit, 0)),
        })  # fmt: skip
        by_id = {r.other: r for r in found[:limit]}
        mirror.mirror(ix, EventType.DUP_NEAR, stored, known(by_id), mirror.near(stored, by_id))
