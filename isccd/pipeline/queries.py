"""Questions asked of the index about one file: what it knows of it (``get``) and the files
related to it or to a code (``similar``).

The same functions serve the daemon (on the owner thread, with the live index) and the
command line reading the store directly (a read-only :class:`~isccd.pipeline.index.Index`
that loads the unit types a question needs), so both give the same answer, match for match:
the results of :mod:`isccd.results`. A file's hardlinks are one match
(:mod:`isccd.pipeline.peers`).

In a store a fleet shares the answers span the fleet, each file named with its host; ``host``
narrows them to the files of one host.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from isccd.errors import InvalidCodeError, NotIndexedError
from isccd.iscc import IsccError, iscc_decode, iscc_decompose
from isccd.iscc.constants import MT, ST_CC
from isccd.match import (
    CONTAINER_UNITS,
    CONTENT_UNITS,
    NEAR_UNITS,
    Thresholds,
    content_apart,
    near_unit,
    relate,
    within,
)
from isccd.model import FileRecord, RelationKind, Unit, UnitType
from isccd.pipeline.index import Index
from isccd.pipeline.peers import Peer, fold, size_of
from isccd.pipeline.relate import exact_copies, stored_side
from isccd.results import FileInfo, Match, SimilarQuery, SimilarResult, units_of
from isccd.store import NearPair, StoredFile

_CONTENT = {
    ST_CC.TEXT: UnitType.TEXT,
    ST_CC.IMAGE: UnitType.IMAGE,
    ST_CC.AUDIO: UnitType.AUDIO,
    ST_CC.VIDEO: UnitType.VIDEO,
    ST_CC.MIXED: UnitType.MIXED,
}
_MAIN = {MT.META: UnitType.META, MT.DATA: UnitType.DATA, MT.INSTANCE: UnitType.INSTANCE}

#: The order matches of equal distance are listed in.
_ORDER = {t: i for i, t in enumerate((UnitType.INSTANCE, *NEAR_UNITS))}


def units_of_code(code: str) -> tuple[Unit, ...]:
    """The comparable units of an ISCC-CODE or of a single unit.

    Raises:
        InvalidCodeError: The code cannot be decoded, or holds no comparable unit.
    """
    try:
        units = []
        for part in iscc_decompose(code):
            maintype, subtype, _, _, body = iscc_decode(part)
            unit_type = _CONTENT.get(ST_CC(subtype)) if maintype == MT.CONTENT else None
            unit_type = unit_type or _MAIN.get(MT(maintype))
            if unit_type is not None:
                units.append(Unit(unit_type, f"ISCC:{part}", body, ""))
    except (IsccError, ValueError, TypeError) as exc:
        raise InvalidCodeError(f"cannot decode {code!r}: {exc}") from None
    if not units:
        raise InvalidCodeError(f"{code!r} has no comparable unit")
    return tuple(units)


def unsaved(record: FileRecord) -> StoredFile:
    """A record that is not in the store (a file coded on the fly, or a code), as a subject
    for :func:`similar`."""
    return StoredFile(0, "", record, 0.0)


def coded(path: str, record: FileRecord) -> StoredFile:
    """A file that is not indexed, coded on the fly (by the daemon, or by a command reading the
    store), as a subject for :func:`similar`.

    Raises:
        NotIndexedError: No unit could be computed; the message says why.
    """
    if not record.units:
        reason = record.issues[0].reason if record.issues else "nothing could be computed"
        raise NotIndexedError(f"{path!r} is not in the index and cannot be coded: {reason}")
    return unsaved(record)


def subject_of_code(code: str) -> StoredFile:
    """An ISCC-CODE or unit as a subject for :func:`similar`.

    Raises:
        InvalidCodeError: The code cannot be decoded.
    """
    return unsaved(FileRecord(path="", stat=None, units=units_of_code(code)))


def subject(ix: Index, query: SimilarQuery) -> StoredFile | str:
    """The subject of a ``similar`` question, as the daemon and a command reading the store
    alike pick it: the code asked about, or the file indexed at the path asked about; the path
    itself when no file is indexed there, for the caller to code it without storing it (then
    :func:`coded`).

    Raises:
        InvalidCodeError: The code cannot be decoded.
    """
    if query.path is None:
        return subject_of_code(query.code or "")
    stored = ix.store.file_at(query.path)
    return stored if stored is not None else query.path


def get(ix: Index, path: str, host: str | None = None) -> FileInfo | None:
    """What the index knows about ``path`` (a tombstone if it was removed), or ``None``;
    ``host``: only its duplicates on that host."""
    store = ix.store
    stored = store.file_at(path)
    if stored is None:
        dead = store.tombstones_at(path)
        return _info(dead[0], (), ()) if dead else None
    record = stored.record
    links: list[str] = []
    if record.stat is not None:
        links = [
            s.path for s in store.files_by_identity(*record.stat.identity) if s.id != stored.id
        ]
    policy = ix.options.thresholds
    peers = [
        Peer(other, RelationKind.EXACT) for other in exact_copies(store, stored.id, record, policy)
    ]
    pairs = store.near_of(stored.id)
    others = {s.id: s for s in store.files_by_id(sorted({p.other(stored.id) for p in pairs}))}
    for pair in pairs:
        peer = others.get(pair.other(stored.id))
        near = holds(pair, record, peer.record, policy) if peer is not None else None
        if peer is not None and near is not None:
            peers.append(Peer(peer, RelationKind.NEAR, pair.unit, *near))
    matches = [m for m in fold(peers) if host is None or m.host == host]
    matches.sort(key=lambda m: (m.relation is not RelationKind.EXACT, m.distance, m.host, m.path))
    return _info(stored, tuple(links), tuple(matches))


def _info(stored: StoredFile, links: tuple[str, ...], duplicates: tuple[Match, ...]) -> FileInfo:
    record = stored.record
    stat = record.stat
    return FileInfo(
        path=record.path,
        root=stored.root,
        size=stat.size if stat is not None else record.filesize,
        mtime=stat.mtime_ns / 1e9 if stat is not None else None,
        mediatype=record.mediatype,
        mode=record.mode,
        iscc=record.iscc,
        datahash=record.datahash,
        name=record.name,
        units=units_of(record.units),
        profiles={u.type: u.profile for u in record.units},
        issues=record.issues,
        # Floats whatever the store returned, so that the JSON is the same as read back.
        indexed=float(stored.indexed_at),
        removed=None if stored.removed_at is None else float(stored.removed_at),
        links=links,
        duplicates=duplicates,
        host=stored.host,
    )


def holds(
    pair: NearPair, a: FileRecord, b: FileRecord, policy: Thresholds
) -> tuple[int, int] | None:
    """``(distance, threshold)`` when a stored near relation holds under ``policy``, else
    ``None``. The daemon re-evaluates its relations when its policy changes; a command reading
    the store may have been given a stricter one, and sees only what that policy reports."""
    if not (policy.admits(size_of(a)) and policy.admits(size_of(b))):
        return None
    return holds_between(pair.unit, digests_of(a), digests_of(b), policy)


def holds_between(
    unit: UnitType,
    a: Mapping[UnitType, bytes],
    b: Mapping[UnitType, bytes],
    policy: Thresholds,
) -> tuple[int, int] | None:
    """:func:`holds`, given the two files' digests by unit type (:func:`digests_of`), both
    files admitted by the policy's size: for a caller that checks many relations of a file."""
    mine, theirs = a.get(unit), b.get(unit)
    if mine is None or theirs is None:
        return None
    near = near_unit(unit, mine, theirs, policy)
    if near is None:
        return None
    if unit in CONTAINER_UNITS and content_apart(a, b, policy):
        return None  # a relation stored before the content decided
    return near[:2]


def holding(
    pairs: Iterable[NearPair],
    digests: Mapping[int, Mapping[UnitType, bytes] | None],
    policy: Thresholds,
) -> list[tuple[NearPair, int, int]]:
    """The stored relations of ``pairs`` that hold under ``policy``, each with its distance and
    threshold: :func:`holds_between` of each, in one pass (a listing of a library of families
    judges hundreds of thousands). ``digests``: each file's digests by id, ``None`` for a file
    not admitted; a pair with such a file, or one missing, does not hold."""
    bases = {unit: policy.of(unit) for unit in NEAR_UNITS}
    # Whether a file has a Content-Code: only then can its content overrule a near container.
    contents: dict[int, bool] = {}

    def has_content(file_id: int, of: Mapping[UnitType, bytes]) -> bool:
        if (known := contents.get(file_id)) is None:
            known = contents[file_id] = any(u in of for u in CONTENT_UNITS)
        return known

    held: list[tuple[NearPair, int, int]] = []
    for pair in pairs:
        a, b = digests.get(pair.a), digests.get(pair.b)
        if a is None or b is None:
            continue
        unit = pair.unit
        base, mine, theirs = bases.get(unit), a.get(unit), b.get(unit)
        if base is None or mine is None or theirs is None:
            continue
        near = within(mine, theirs, base)
        if near is None:
            continue
        if (
            unit in CONTAINER_UNITS
            and has_content(pair.a, a)
            and has_content(pair.b, b)
            and content_apart(a, b, policy)
        ):
            continue
        held.append((pair, near[0], near[1]))
    return held


def digests_of(record: FileRecord) -> dict[UnitType, bytes]:
    """A record's unit digests by unit type."""
    return {u.type: u.digest for u in record.units}


def similar(ix: Index, subject: StoredFile, query: SimilarQuery) -> SimilarResult:
    """Files related to ``subject`` (stored, or :func:`unsaved`), nearest first, one match per
    file and relation, at most ``query.limit`` of them (``query.path`` and ``query.code`` are
    not read: the caller turned them into ``subject``).

    A subject with a datahash (a file) finds the files with its bytes by datahash; one without
    (a code) by its Instance-Code, the start of their BLAKE3 digest.

    Raises:
        ValueError: ``query.max_distance`` is outside 0..64.
    """
    max_distance = query.max_distance
    if max_distance is not None and not 0 <= max_distance <= 64:
        raise ValueError(f"max_distance {max_distance} is outside 0..64 bits")
    wanted = set(query.units) if query.units is not None else {UnitType.INSTANCE, *NEAR_UNITS}
    thresholds = _within(ix.options.thresholds, wanted, max_distance)
    record = subject.record
    ix.refresh()
    candidates: dict[int, StoredFile] = {}
    ids: set[int] = set()
    for unit in record.units:
        radius = thresholds.of(unit.type)
        if radius is None or unit.type not in NEAR_UNITS:
            continue
        ix.ensure_loaded(unit.type)
        ids.update(h.file_id for h in ix.search.within(unit.type, unit.digest, radius))
    instance = record.unit(UnitType.INSTANCE)
    if record.datahash:
        candidates.update(
            (s.id, s) for s in ix.store.files_by_datahash(record.datahash, fleet=True)
        )
    elif instance is not None and UnitType.INSTANCE in wanted:
        candidates.update(
            (s.id, s) for s in ix.store.files_by_instance(instance.digest, fleet=True)
        )
    ids.difference_update(candidates)
    candidates.update((s.id, s) for s in ix.store.files_by_id(sorted(ids)))
    candidates.pop(subject.id, None)
    me = stored_side(subject, ix.store.host)
    peers = []
    for other in candidates.values():
        if not other.live or (query.host is not None and other.host != query.host):
            continue
        if UnitType.INSTANCE in wanted and _same_instance(record, other, thresholds):
            peers.append(Peer(other, RelationKind.EXACT))
            continue
        for r in relate(me, stored_side(other, ix.store.host), thresholds):
            if r.unit in wanted:
                peers.append(Peer(other, r.kind, r.unit, r.distance, r.threshold))
    matches = fold(peers)
    matches.sort(key=lambda m: (m.distance, _ORDER.get(m.unit, 99), m.host, m.path))
    return SimilarResult(tuple(matches[: query.limit]), truncated=len(matches) > query.limit)


def _within(policy: Thresholds, wanted: Iterable[UnitType], max_distance: int | None) -> Thresholds:
    """``policy`` for the unit types ``wanted`` only, each at ``max_distance`` when given."""
    wanted = set(wanted)
    radii: dict[str, int | None] = {}
    for unit_type in NEAR_UNITS:
        radius = policy.of(unit_type) if max_distance is None else max_distance
        radii[unit_type.value] = radius if unit_type in wanted else None
    return Thresholds(**radii, min_size=policy.min_size)


def _same_instance(subject: FileRecord, other: StoredFile, policy: Thresholds) -> bool:
    """Whether a subject known only by its code (no datahash) names ``other``'s bytes: its
    Instance-Code begins ``other``'s datahash (and ``other`` is large enough to be reported)."""
    instance = subject.unit(UnitType.INSTANCE)
    if subject.datahash or instance is None or not other.record.datahash:
        return False
    digest = bytes.fromhex(other.record.datahash)[2:]
    return digest.startswith(instance.digest) and policy.admits(size_of(other.record))
