"""Duplicate groups (``dupes``): the files with the same bytes, and the files joined by the
stored near relations (connected components), one member per file (its hardlinks folded in),
each member with its distance to the nearest other member.

The query narrows the policy the relations were decided under, never widens it: fewer unit
types, a smaller distance, a larger minimum size, some file types only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from isccd.fspath import is_under
from isccd.match import NEAR_UNITS, Thresholds
from isccd.model import UnitType
from isccd.pipeline.index import Index
from isccd.pipeline.peers import identity_of, size_of
from isccd.pipeline.queries import holds
from isccd.results import DupesQuery, DupesResult, DupGroup, DupKind, DupMember, Totals, file_type
from isccd.store import StoredFile

#: A member: the stored names of one file, the first one naming it.
_Names = list[StoredFile]


@dataclass(frozen=True, slots=True)
class _Link:
    """A near relation between two members of a group (by their index)."""

    a: int
    b: int
    unit: UnitType
    distance: int
    threshold: int


def dupes(ix: Index, query: DupesQuery) -> DupesResult:
    """Duplicate groups, the most reclaimable bytes first (``query.root``, if given, must be
    resolved as the store keeps paths)."""
    policy = narrowed(ix.options.thresholds, query)

    def keep(stored: StoredFile) -> bool:
        if not policy.admits(size_of(stored.record)):
            return False
        return query.types is None or file_type(stored.record.mode) in query.types

    groups: list[DupGroup] = []
    if query.units is None or UnitType.INSTANCE in query.units:
        groups.extend(_exact_groups(ix, keep))
    if query.near and policy.enabled():
        groups.extend(_near_groups(ix, policy, keep))
    if query.host is not None:
        groups = [g for g in groups if any(m.host == query.host for m in g.members)]
    if query.root is not None:
        top = query.root
        groups = [
            g
            for g in groups
            if any(is_under(p, top) for m in g.members for p in (m.path, *m.links))
        ]
    groups.sort(key=lambda g: (-g.reclaimable, g.kind, g.members[0].host, g.members[0].path))
    return DupesResult(
        tuple(groups[: query.limit]), truncated=len(groups) > query.limit, totals=Totals.of(groups)
    )


def narrowed(policy: Thresholds, query: DupesQuery) -> Thresholds:
    """The policy with only the query's near unit types, each within its ``max_distance``, and
    its ``min_size`` at least the query's."""
    radii: dict[str, int | None] = {}
    for unit_type in NEAR_UNITS:
        radius = policy.of(unit_type)
        if query.units is not None and unit_type not in query.units:
            radius = None
        if radius is not None and query.max_distance is not None:
            radius = min(radius, query.max_distance)
        radii[unit_type.value] = radius
    return Thresholds(**radii, min_size=max(policy.min_size, query.min_size))


def _names(files: Sequence[StoredFile]) -> list[_Names]:
    """Files grouped by identity (on their host), each by its names in byte order; the
    largest first."""
    by_identity: dict[object, _Names] = {}
    for stored in files:
        by_identity.setdefault(identity_of(stored), []).append(stored)
    members = [sorted(names, key=lambda s: s.path) for names in by_identity.values()]
    members.sort(key=lambda m: (-(size_of(m[0].record) or 0), m[0].host, m[0].path))
    return members


def _member(names: _Names, unit: UnitType, distance: int = 0, threshold: int = 0,
            nearest: int | None = None) -> DupMember:  # fmt: skip
    first = names[0]
    record = first.record
    code = record.unit(unit)
    return DupMember(
        path=first.path,
        root=first.root,
        size=size_of(record),
        iscc=record.iscc,
        unit=unit,
        code=code.iscc if code is not None else None,
        distance=distance,
        threshold=threshold,
        nearest=nearest,
        mediatype=record.mediatype,
        mode=record.mode,
        links=tuple(s.path for s in names[1:]),
        host=first.host,
        allocated=record.stat.allocated if record.stat is not None else None,
    )


def _exact_groups(ix: Index, keep: Callable[[StoredFile], bool]) -> list[DupGroup]:
    store = ix.store
    groups = []
    copies = store.files_by_datahashes(store.exact_datahashes(fleet=True), fleet=True)
    for files in copies.values():
        members = _names([s for s in files if keep(s)])
        if len(members) > 1:
            shown = tuple(_member(m, UnitType.INSTANCE) for m in members)
            groups.append(DupGroup.of(DupKind.EXACT, UnitType.INSTANCE, 0, shown))
    return groups


def _near_groups(
    ix: Index, policy: Thresholds, keep: Callable[[StoredFile], bool]
) -> list[DupGroup]:
    """Connected components of the stored near relations that hold under ``policy`` between
    files that ``keep`` admits."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    pairs = list(ix.store.near_pairs(fleet=True))
    files = {s.id: s for s in ix.store.files_by_id(sorted({i for p in pairs for i in (p.a, p.b)}))}
    held: list[tuple[int, int, UnitType, int, int]] = []
    for pair in pairs:
        a, b = files.get(pair.a), files.get(pair.b)
        if a is None or b is None or not (a.live and b.live and keep(a) and keep(b)):
            continue
        near = holds(pair, a.record, b.record, policy)
        if near is not None:
            held.append((pair.a, pair.b, pair.unit, *near))
            parent[find(pair.a)] = find(pair.b)
    components: dict[int, list[int]] = {}
    for file_id in parent:
        components.setdefault(find(file_id), []).append(file_id)
    relations: dict[int, list[tuple[int, int, UnitType, int, int]]] = {}
    for relation in held:
        relations.setdefault(find(relation[0]), []).append(relation)
    groups = []
    for top, ids in components.items():
        members = _names([files[i] for i in sorted(ids)])
        if len(members) < 2:
            continue
        slot = {s.id: i for i, names in enumerate(members) for s in names}
        links = [
            _Link(slot[a], slot[b], unit, distance, threshold)
            for a, b, unit, distance, threshold in relations.get(top, [])
            if slot[a] != slot[b]
        ]
        groups.append(_near_group(members, links, policy))
    return groups


def _near_group(members: list[_Names], links: list[_Link], policy: Thresholds) -> DupGroup:
    """A near group: each member with its nearest other member (the smallest distance; ties
    go to the larger member, then to the earlier unit type in reporting order)."""
    order = {t: i for i, t in enumerate(NEAR_UNITS)}
    best: dict[int, tuple[int, int, int, _Link]] = {}
    for link in links:
        for me, other in ((link.a, link.b), (link.b, link.a)):
            rank = (link.distance, other, order[link.unit], link)
            if me not in best or rank[:3] < best[me][:3]:
                best[me] = rank
    shown = []
    for i, names in enumerate(members):
        distance, other, _, link = best[i]
        shown.append(_member(names, link.unit, distance, link.threshold, other))
    counts = Counter(link.unit for link in links)
    # The unit most relations are near by; ties go to the earlier type in reporting order.
    unit = max(NEAR_UNITS, key=lambda t: (counts[t], -order[t]))
    first = members[0][0].record.unit(unit)
    threshold = policy.scaled(unit, first.bits if first else 64) or 0
    return DupGroup.of(DupKind.NEAR, unit, threshold, tuple(shown))
