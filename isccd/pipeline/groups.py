"""Duplicate groups (``dupes``, and ``dupes --dirs`` by :mod:`isccd.pipeline.folders`): the
files with the same bytes, and per unit type the files
within the threshold of a centre by the stored near relations (:mod:`isccd.pipeline.centres`),
one member per file (its hardlinks folded in), each near member with its distance to the
centre.

A pair of files near by several unit types is shown once, in the group of the first type in
reporting order (text before data): the later type's relations between files already shown
together are left out before its groups are made.

The query narrows the policy the relations were decided under, never widens it: fewer unit
types, a smaller distance, a larger minimum size, some file types only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from isccd.fspath import is_under
from isccd.match import NEAR_UNITS, Thresholds
from isccd.model import UnitType
from isccd.pipeline.centres import Centred, around
from isccd.pipeline.folders import folder_groups
from isccd.pipeline.index import Index
from isccd.pipeline.queries import holding
from isccd.results import (
    DirsQuery,
    DirsResult,
    DupesQuery,
    DupesResult,
    DupGroup,
    DupKind,
    DupMember,
    Totals,
    file_type,
)
from isccd.store import ListedFile, NearPair

#: A member: the stored names of one file, the first one naming it.
_Names = list[ListedFile]


def dupes(ix: Index, query: DupesQuery) -> DupesResult:
    """Duplicate groups, the most reclaimable bytes first (``query.root``, if given, must be
    resolved as the store keeps paths)."""
    policy = narrowed(ix.options.thresholds, query)

    def keep(listed: ListedFile) -> bool:
        if not policy.admits(listed.size):
            return False
        return query.types is None or file_type(listed.mode) in query.types

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


def dup_dirs(ix: Index, query: DirsQuery) -> DirsResult:
    """Duplicate folders of the store (every host's in a fleet), exact then near, by
    :func:`folder_groups` (``query.root``, if given, must be resolved as the store keeps
    paths)."""
    files = [f for chunk in ix.store.folder_files(fleet=True) for f in chunk]
    near: dict[int, set[int]] = {}
    if query.near and ix.options.thresholds.enabled():
        near = _held_near(ix)
    groups = folder_groups(
        files, near, share=query.share if query.near else None, contents=query.files
    )
    if query.host is not None:
        groups = [g for g in groups if any(m.host == query.host for m in g.members)]
    if query.root is not None:
        top = query.root
        # A group whose folders are, or hold, the folder asked about.
        groups = [
            g
            for g in groups
            if any(is_under(m.path, top) or is_under(top, m.path) for m in g.members)
        ]
    return DirsResult(
        tuple(groups[: query.limit]),
        truncated=len(groups) > query.limit,
        folders=len({(m.host, m.path) for g in groups for m in g.members}),
        reclaimable=sum(g.reclaimable for g in groups),
    )


def _held_near(ix: Index) -> dict[int, set[int]]:
    """The files each file is near by a stored relation that holds under the policy."""
    near: dict[int, set[int]] = {}
    for pair, _, _ in _held(ix, ix.options.thresholds, lambda _: True)[0]:
        near.setdefault(pair.a, set()).add(pair.b)
        near.setdefault(pair.b, set()).add(pair.a)
    return near


def _held(
    ix: Index, policy: Thresholds, keep: Callable[[ListedFile], bool]
) -> tuple[list[tuple[NearPair, int, int]], dict[int, ListedFile]]:
    """The stored near relations that hold under ``policy`` between live files that ``keep``
    admits, each with its distance and threshold, and the files they join, by id."""
    pairs = list(ix.store.near_pairs(fleet=True))
    ids = sorted({i for p in pairs for i in (p.a, p.b)})
    files = {f.id: f for f in ix.store.listed_files(ids)}
    # Each file is judged once, not once a relation: a family's file has a dozen.
    admitted: dict[int, dict[UnitType, bytes] | None] = {}
    for file_id, listed in files.items():
        fit = listed.live and keep(listed) and policy.admits(listed.size)
        admitted[file_id] = listed.digests() if fit else None
    return holding(pairs, admitted, policy), files


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


def _names(files: Sequence[ListedFile]) -> list[_Names]:
    """Files grouped by identity (on their host: :func:`isccd.pipeline.peers.identity_of`),
    each by its names in byte order; the largest first."""
    by_identity: dict[object, _Names] = {}
    for listed in files:
        key = (listed.host, listed.identity if listed.identity is not None else ("id", listed.id))
        if (some := by_identity.get(key)) is None:
            by_identity[key] = [listed]
        else:
            some.append(listed)
    members = [sorted(names, key=lambda s: s.path) if len(names) > 1 else names
               for names in by_identity.values()]  # fmt: skip
    members.sort(key=lambda m: (-(m[0].size or 0), m[0].host, m[0].path))
    return members


def _member(names: _Names, unit: UnitType, distance: int = 0, threshold: int = 0,
            nearest: int | None = None) -> DupMember:  # fmt: skip
    first = names[0]
    return DupMember(
        first.path,
        first.root,
        first.size,
        first.iscc,
        unit,
        first.code(unit),
        distance,
        threshold,
        nearest,
        first.mediatype,
        first.mode,
        tuple([s.path for s in names[1:]]) if len(names) > 1 else (),
        first.host,
        first.allocated,
    )


def _exact_groups(ix: Index, keep: Callable[[ListedFile], bool]) -> list[DupGroup]:
    store = ix.store
    groups = []
    copies = store.listed_by_datahashes(store.exact_datahashes(fleet=True), fleet=True)
    for files in copies.values():
        members = _names([f for f in files if keep(f)])
        if len(members) > 1:
            shown = tuple(_member(m, UnitType.INSTANCE) for m in members)
            groups.append(DupGroup.of(DupKind.EXACT, UnitType.INSTANCE, 0, shown))
    return groups


def _near_groups(
    ix: Index, policy: Thresholds, keep: Callable[[ListedFile], bool]
) -> list[DupGroup]:
    """The near groups of the stored relations that hold under ``policy`` between files that
    ``keep`` admits: per unit type, groups around centres (:mod:`isccd.pipeline.centres`)."""
    held, files = _held(ix, policy, keep)
    members = _names([files[i] for i in sorted({i for p, _, _ in held for i in (p.a, p.b)})])
    slot = {s.id: i for i, names in enumerate(members) for s in names}
    # Ties between centres go to the member listed first (the largest, then by name): what
    # the tree holds decides, not the order files happened to be indexed in, so that an
    # index rebuilt, resumed after a crash or fed by events shows the groups a fresh scan
    # of the same tree shows.
    order = list(range(len(members)))
    # Each unit's relations between members: ``near[x][y] == near[y][x] == (distance,
    # threshold)``, the nearest where a pair was stored twice.
    related: dict[UnitType, dict[int, dict[int, tuple[int, int]]]] = {}
    for pair, distance, threshold in held:
        x, y = slot[pair.a], slot[pair.b]
        if x == y:
            continue
        if (near := related.get(pair.unit)) is None:
            near = related[pair.unit] = {}
        if (mine := near.get(x)) is None:
            mine = near[x] = {}
        known = mine.get(y)
        if known is None or distance < known[0]:
            mine[y] = value = (distance, threshold)
            if (theirs := near.get(y)) is None:
                theirs = near[y] = {}
            theirs[x] = value
    del held, files, slot  # a library's relations and files: what the groups keep is theirs
    groups: list[DupGroup] = []
    # For each earlier unit, the group each member is shown in (one at most: a centre's
    # group): two members shown together by one unit are not grouped again by a later one.
    shown: list[dict[int, int]] = []
    for unit in NEAR_UNITS:
        near = _apart(related.get(unit, {}), shown)
        home: dict[int, int] = {}
        for found in around(near, order):
            for m in (found.centre, *found.members):
                home[m] = len(groups)
            groups.append(_near_group(members, unit, found, near[found.centre], policy))
        if home:  # a unit without groups hides nothing from the later ones
            shown.append(home)
    return groups


def _apart(
    near: dict[int, dict[int, tuple[int, int]]], shown: list[dict[int, int]]
) -> dict[int, dict[int, tuple[int, int]]]:
    """``near`` without the relations between members that an earlier unit's groups show
    together (``shown``: each earlier unit's group of each member)."""
    if not shown:
        return near
    left: dict[int, dict[int, tuple[int, int]]] = {}
    for x, mine in near.items():
        homes = [(home, g) for home in shown if (g := home.get(x)) is not None]
        kept = {
            y: value for y, value in mine.items() if not any(home.get(y) == g for home, g in homes)
        }
        if kept:
            left[x] = kept
    return left


def _near_group(
    members: list[_Names],
    unit: UnitType,
    found: Centred,
    distances: dict[int, tuple[int, int]],
    policy: Thresholds,
) -> DupGroup:
    """A near group: its centre first, then its members, each with its distance to the centre
    by ``unit`` (``distances``: the centre's relations, ``(distance, threshold)`` by member;
    nearest first, ties go to the larger member)."""
    centre = members[found.centre]
    order = sorted(found.members, key=lambda m: (distances[m][0], m))
    bits = next((len(digest) * 8 for kind, _, digest in centre[0].units if kind is unit), 64)
    threshold = policy.scaled(unit, bits) or 0
    shown = [_member(centre, unit, 0, threshold)]
    shown += [_member(members[m], unit, *distances[m], nearest=0) for m in order]
    return DupGroup.of(DupKind.NEAR, unit, threshold, tuple(shown), centre=0)
