"""Questions asked of the index: one file (``get``), its neighbours (``similar``), and the
duplicate groups (``dupes``).

The same functions serve the daemon (on the owner thread, with the live index) and the
command line reading the store directly (a read-only :class:`~isccd.pipeline.index.Index`
that loads the unit types a question needs). Results are frozen dataclasses;
:mod:`isccd.pipeline.answers` turns them into the protocol's results, which both print.

In a store a fleet shares the answers span the fleet, each file named with its host; ``host``
narrows them to the files of one host (``get``, ``similar``) or to the groups with a member
there (``dupes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from isccd.match import NEAR_UNITS, RelationKind, Thresholds, near_unit, relate
from isccd.model import FileRecord, Unit, UnitType
from isccd.pipeline import events as payload
from isccd.pipeline.index import Index, exact_copies, stored_side
from isccd.store import NearPair, StoredFile


@dataclass(frozen=True, slots=True)
class Peer:
    """Another file related to the one asked about.

    Attributes:
        path: Its path.
        root: Its root.
        iscc: Its ISCC-CODE.
        size: Its size in bytes.
        kind: Hardlink, exact or near.
        unit: The unit type compared.
        distance: Hamming distance (0 for hardlink and exact).
        threshold: The threshold applied (0 for hardlink and exact).
        code: Its unit of that type (the Instance-Code for hardlink and exact).
        host: The host it is on.
    """

    path: str
    root: str
    iscc: str | None
    size: int | None
    kind: RelationKind
    unit: UnitType
    distance: int
    threshold: int
    code: str | None = None
    host: str = ""


@dataclass(frozen=True, slots=True)
class FileView:
    """Everything the index knows about one path.

    Attributes:
        file: The stored file (live, or the latest tombstone at that path).
        links: Other paths of the same file (hardlinks).
        duplicates: Exact duplicates and stored near-duplicate relations.
    """

    file: StoredFile
    links: tuple[str, ...]
    duplicates: tuple[Peer, ...]


def _peer(stored: StoredFile, kind: RelationKind, unit: UnitType, distance: int,
          threshold: int) -> Peer:  # fmt: skip
    code = stored.record.unit(unit)
    return Peer(
        stored.path,
        stored.root,
        stored.record.iscc,
        payload.size_of(stored.record),
        kind,
        unit,
        distance,
        threshold,
        code.iscc if code is not None else None,
        stored.host,
    )


def get(ix: Index, path: str, host: str | None = None) -> FileView | None:
    """What the index knows about ``path`` (a tombstone if it was removed), or ``None``;
    ``host``: only its duplicates on that host."""
    store = ix.store
    stored = store.file_at(path)
    if stored is None:
        dead = store.tombstones_at(path)
        return FileView(dead[0], (), ()) if dead else None
    record = stored.record
    links: list[str] = []
    if record.stat is not None:
        links = [
            s.path for s in store.files_by_identity(*record.stat.identity) if s.id != stored.id
        ]
    policy = ix.options.thresholds
    peers = [
        _peer(other, RelationKind.EXACT, UnitType.INSTANCE, 0, 0)
        for other in exact_copies(store, stored.id, record, policy)
    ]
    pairs = store.near_of(stored.id)
    others = {s.id: s for s in store.files_by_id(sorted({p.other(stored.id) for p in pairs}))}
    for pair in pairs:
        peer = others.get(pair.other(stored.id))
        near = _holds(pair, record, peer.record, policy) if peer is not None else None
        if peer is not None and near is not None:
            distance, threshold = near
            peers.append(_peer(peer, RelationKind.NEAR, pair.unit, distance, threshold))
    peers.sort(key=lambda p: (p.kind is not RelationKind.EXACT, p.distance, p.host, p.path))
    return FileView(stored, tuple(links), tuple(_on(peers, host)))


def _on(peers: Sequence[Peer], host: str | None) -> list[Peer]:
    return [p for p in peers if host is None or p.host == host]


def _holds(
    pair: NearPair, a: FileRecord, b: FileRecord, policy: Thresholds
) -> tuple[int, int] | None:
    """``(distance, threshold)`` when a stored near relation holds under ``policy``, else
    ``None``. The daemon re-evaluates its relations when its policy changes; a command reading
    the store may have been given a stricter one, and sees only what that policy reports."""
    mine, theirs = a.unit(pair.unit), b.unit(pair.unit)
    if mine is None or theirs is None:
        return None
    if not (policy.admits(payload.size_of(a)) and policy.admits(payload.size_of(b))):
        return None
    near = near_unit(pair.unit, mine.digest, theirs.digest, policy)
    return None if near is None else near[:2]


def similar(
    ix: Index,
    stored: StoredFile,
    max_distance: int | None = None,
    unit_types: Sequence[UnitType] | None = None,
    host: str | None = None,
) -> list[Peer]:
    """Files whose units are within reach of ``stored``'s, nearest first.

    Args:
        ix: The index.
        stored: The file (live, or a record computed on the fly with id 0).
        max_distance: Bits of the first 64 within which a unit counts (scaled for longer
            units, as thresholds are), 0 to 64; the configured threshold per unit type when
            ``None``.
        unit_types: Compare only these unit types (all near-duplicate types by default).
        host: Only files on this host (every host's by default).

    Returns:
        One entry per other file and relation (a hardlink, an exact copy, or each unit type by
        which it is near).

    Raises:
        ValueError: ``max_distance`` is outside 0..64.
    """
    if max_distance is not None and not 0 <= max_distance <= 64:
        raise ValueError(f"max_distance {max_distance} is outside 0..64 bits")
    record = stored.record
    wanted = tuple(unit_types) if unit_types is not None else NEAR_UNITS
    radii: dict[str, int | None] = {}
    for unit_type in NEAR_UNITS:
        radius = ix.options.thresholds.of(unit_type) if max_distance is None else max_distance
        radii[unit_type.value] = radius if unit_type in wanted else None
    thresholds = Thresholds(**radii, min_size=ix.options.thresholds.min_size)
    candidate_ids: set[int] = set()
    ix.refresh()
    for unit in record.units:
        radius = thresholds.of(unit.type)
        if radius is None or unit.type not in NEAR_UNITS:
            continue
        ix.ensure_loaded(unit.type)
        candidate_ids.update(h.file_id for h in ix.search.within(unit.type, unit.digest, radius))
    if record.datahash:
        found = ix.store.files_by_datahash(record.datahash, fleet=True)
        candidate_ids.update(s.id for s in found)
    candidate_ids.discard(stored.id)
    me = stored_side(stored, ix.store.host)
    peers = []
    for other in ix.store.files_by_id(sorted(candidate_ids)):
        if not other.live or (host is not None and other.host != host):
            continue
        for relation in relate(me, stored_side(other, ix.store.host), thresholds):
            peers.append(
                _peer(other, relation.kind, relation.unit, relation.distance, relation.threshold)
            )
    order = {t: i for i, t in enumerate(NEAR_UNITS)}
    peers.sort(key=lambda p: (p.distance, order.get(p.unit, -1), p.host, p.path))
    return peers


@dataclass(frozen=True, slots=True)
class Member:
    """One file of a duplicate group (its hardlinks are one member).

    Attributes:
        paths: The file's paths.
        root: The root of the first path.
        size: Its size in bytes.
        iscc: Its ISCC-CODE.
        units: Its units.
        host: The host it is on.
    """

    paths: tuple[str, ...]
    root: str
    size: int | None
    iscc: str | None
    units: tuple[Unit, ...] = ()
    host: str = ""

    def unit(self, unit_type: UnitType) -> Unit | None:
        """Its unit of ``unit_type``, if it has one."""
        return next((u for u in self.units if u.type is unit_type), None)


@dataclass(frozen=True, slots=True)
class NearLink:
    """One near relation inside a group.

    Attributes:
        a: Index of one member.
        b: Index of the other.
        unit: The unit type.
        distance: Hamming distance.
    """

    a: int
    b: int
    unit: UnitType
    distance: int


@dataclass(frozen=True, slots=True)
class DupGroup:
    """Files that are duplicates of each other.

    Attributes:
        kind: ``"exact"`` (same bytes) or ``"near"`` (connected by near relations).
        members: The files, largest first.
        wasted: Bytes that keeping only one member would free (exact: size times the extra
            copies; near: all but the largest).
        links: For near groups, the relations that connect the members.
    """

    kind: str
    members: tuple[Member, ...]
    wasted: int
    links: tuple[NearLink, ...] = ()


def _members(files: Sequence[StoredFile]) -> list[tuple[Member, list[int]]]:
    """Files grouped by identity (on their host): each member and the file ids it stands
    for."""
    by_identity: dict[object, list[StoredFile]] = {}
    for stored in files:
        identity = stored.record.stat.identity if stored.record.stat else ("id", stored.id)
        by_identity.setdefault((stored.host, identity), []).append(stored)
    members = []
    for group in by_identity.values():
        group.sort(key=lambda s: s.path)
        first = group[0]
        size = payload.size_of(first.record)
        paths = tuple(s.path for s in group)
        units = first.record.units
        member = Member(paths, first.root, size, first.record.iscc, units, first.host)
        members.append((member, [s.id for s in group]))
    members.sort(key=lambda m: (-(m[0].size or 0), m[0].host, m[0].paths))
    return members


def dupes(ix: Index, near: bool = False, host: str | None = None) -> list[DupGroup]:
    """Duplicate groups, the most wasted bytes first.

    Args:
        ix: The index.
        near: Include groups of near duplicates (connected components of the stored near
            relations) besides the exact ones.
        host: Only groups with a member on this host (every group of the fleet by default).
    """
    store = ix.store
    policy = ix.options.thresholds
    groups: list[DupGroup] = []
    copies = store.files_by_datahashes(store.exact_datahashes(fleet=True), fleet=True)
    for files in copies.values():
        members = [m for m, _ in _members(files) if policy.admits(m.size)]
        if len(members) > 1:
            size = members[0].size or 0
            groups.append(DupGroup("exact", tuple(members), size * (len(members) - 1)))
    if near:
        groups.extend(_near_groups(ix))
    if host is not None:
        groups = [g for g in groups if any(m.host == host for m in g.members)]
    groups.sort(key=lambda g: (-g.wasted, g.kind, g.members[0].host, g.members[0].paths))
    return groups


def _near_groups(ix: Index) -> list[DupGroup]:
    """Connected components of the stored near relations that hold under the policy."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    pairs = list(ix.store.near_pairs(fleet=True))
    files = {s.id: s for s in ix.store.files_by_id(sorted({i for p in pairs for i in (p.a, p.b)}))}
    policy = ix.options.thresholds
    held: list[NearPair] = []
    for pair in pairs:
        a, b = files.get(pair.a), files.get(pair.b)
        if a is None or b is None or not (a.live and b.live):
            continue
        if _holds(pair, a.record, b.record, policy) is not None:
            held.append(pair)
            parent[find(pair.a)] = find(pair.b)
    components: dict[int, list[int]] = {}
    for file_id in parent:
        components.setdefault(find(file_id), []).append(file_id)
    by_component: dict[int, list[NearPair]] = {}
    for pair in held:
        by_component.setdefault(find(pair.a), []).append(pair)
    groups = []
    for root_id, ids in components.items():
        members = _members([files[i] for i in sorted(ids)])
        if len(members) < 2:
            continue
        slot = {file_id: i for i, (_, ids_) in enumerate(members) for file_id in ids_}
        links = sorted(
            {
                NearLink(min(slot[p.a], slot[p.b]), max(slot[p.a], slot[p.b]), p.unit, p.distance)
                for p in by_component.get(root_id, [])
                if slot[p.a] != slot[p.b]
            },
            key=lambda k: (k.a, k.b, k.unit.value),
        )
        sizes = [m.size or 0 for m, _ in members]
        groups.append(
            DupGroup("near", tuple(m for m, _ in members), sum(sizes) - max(sizes), tuple(links))
        )
    return groups
