"""The index's answers to ``get``, ``similar`` and ``dupes``, as the protocol's results.

The daemon answers its clients through these functions, on its store's owner thread with the
live index; the command line reading a store directly calls the same functions on a read-only
:class:`~isccd.pipeline.index.Index`. Both therefore give the same result, member for
member, and one renderer prints either. The questions themselves are
:mod:`isccd.pipeline.queries`; this module only shapes their answers.
"""

from __future__ import annotations

from collections import Counter

from isccd.errors import ProtocolError
from isccd.fspath import is_under
from isccd.iscc import IsccError, iscc_decode, iscc_decompose
from isccd.iscc.constants import MT, ST_CC
from isccd.match import NEAR_UNITS, Thresholds, hamming
from isccd.model import FileRecord, Unit, UnitType
from isccd.pipeline import queries as q
from isccd.pipeline.index import Index
from isccd.protocol import (
    DupesQuery,
    DupesResult,
    DupGroup,
    DupKind,
    DupMember,
    DupPair,
    ErrorCode,
    FileInfo,
    Relation,
    SimilarMatch,
    SimilarQuery,
    SimilarResult,
)
from isccd.store import StoredFile

_CONTENT = {
    ST_CC.TEXT: UnitType.TEXT,
    ST_CC.IMAGE: UnitType.IMAGE,
    ST_CC.AUDIO: UnitType.AUDIO,
    ST_CC.VIDEO: UnitType.VIDEO,
    ST_CC.MIXED: UnitType.MIXED,
}
_MAIN = {MT.META: UnitType.META, MT.DATA: UnitType.DATA, MT.INSTANCE: UnitType.INSTANCE}


def units_of_code(code: str) -> tuple[Unit, ...]:
    """The comparable units of an ISCC-CODE or of a single unit.

    Raises:
        ProtocolError: ``invalid_argument`` when the code cannot be decoded.
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
        raise ProtocolError(ErrorCode.INVALID_ARGUMENT, f"cannot decode {code!r}: {exc}") from None
    if not units:
        raise ProtocolError(ErrorCode.INVALID_ARGUMENT, f"{code!r} has no comparable unit")
    return tuple(units)


def unsaved(record: FileRecord) -> StoredFile:
    """A record that is not in the store (a file coded on the fly, or a code), as a subject
    for :func:`similar`."""
    return StoredFile(0, "", record, 0.0)


def coded(path: str, record: FileRecord) -> StoredFile:
    """A file that is not indexed, coded on the fly (by the daemon, or by a command reading the
    store), as a subject for :func:`similar`.

    Raises:
        ProtocolError: ``not_found`` when no unit could be computed, with the reason.
    """
    if not record.units:
        reason = record.issues[0].reason if record.issues else "nothing could be computed"
        raise ProtocolError(
            ErrorCode.NOT_FOUND, f"{path!r} is not in the index and cannot be coded: {reason}"
        )
    return unsaved(record)


def subject_of_code(code: str) -> StoredFile:
    """An ISCC-CODE or unit as a subject for :func:`similar`.

    Raises:
        ProtocolError: ``invalid_argument`` when the code cannot be decoded.
    """
    return unsaved(FileRecord(path="", stat=None, units=units_of_code(code)))


def get(ix: Index, path: str, host: str | None = None) -> FileInfo | None:
    """What the index knows about ``path`` (a tombstone if it was removed), or ``None``;
    ``host``: only its duplicates on that host."""
    view = q.get(ix, path, host)
    if view is None:
        return None
    stored = view.file
    return FileInfo.from_record(
        stored.record,
        stored.root,
        indexed=stored.indexed_at,
        removed=stored.removed_at,
        links=view.links,
        duplicates=tuple(_match(p) for p in view.duplicates),
        host=stored.host,
    )


def similar(ix: Index, subject: StoredFile, query: SimilarQuery) -> SimilarResult:
    """Files related to ``subject`` (stored, or :func:`unsaved`), nearest first, at most
    ``query.limit`` of them (``query.path`` and ``query.code`` are not read: the caller turned
    them into ``subject``)."""
    peers = q.similar(ix, subject, query.max_distance, host=query.host)
    matches = tuple(_match(p) for p in peers[: query.limit])
    return SimilarResult(matches, truncated=len(peers) > query.limit)


def dupes(ix: Index, query: DupesQuery) -> DupesResult:
    """Duplicate groups, the most wasted bytes first (``query.root``, if given, must be
    resolved as the store keeps paths)."""
    groups = q.dupes(ix, query.near, query.host)
    if query.root is not None:
        top = query.root
        groups = [g for g in groups if any(is_under(p, top) for m in g.members for p in m.paths)]
    thresholds = ix.options.thresholds
    out = tuple(_group(g, thresholds) for g in groups[: query.limit])
    return DupesResult(out, truncated=len(groups) > query.limit)


def _match(peer: q.Peer) -> SimilarMatch:
    return SimilarMatch(
        peer.path,
        peer.root,
        peer.unit,
        peer.distance,
        peer.threshold,
        peer.code or peer.iscc or "",
        Relation(peer.kind.value),
        peer.host,
    )


def _group(group: q.DupGroup, thresholds: Thresholds) -> DupGroup:
    """A pipeline group as the protocol shows it: one member per file (hardlinks in its
    ``links``), each with its unit of the group's type and the distance to the first."""
    kind = DupKind(group.kind)
    if kind is DupKind.EXACT:
        unit = UnitType.INSTANCE
    else:
        counts = Counter(link.unit for link in group.links)
        # The unit most pairs are near by; ties go to the earlier type in reporting order.
        unit = max(NEAR_UNITS, key=lambda t: (counts[t], -NEAR_UNITS.index(t)))
    first = group.members[0].unit(unit)
    members = tuple(_member(m, unit, first, kind) for m in group.members)
    if kind is DupKind.EXACT:
        return DupGroup(kind, unit, 0, group.wasted, members)
    threshold = thresholds.scaled(unit, first.bits if first else 64) or 0
    pairs = tuple(_pair(group, link, thresholds) for link in group.links)
    return DupGroup(kind, unit, threshold, group.wasted, members, pairs)


def _member(member: q.Member, unit_type: UnitType, first: Unit | None, kind: DupKind) -> DupMember:
    mine = member.unit(unit_type)
    distance: int | None = 0
    if kind is DupKind.NEAR:
        distance = hamming(first.digest, mine.digest) if first and mine else None
    return DupMember(
        member.paths[0],
        member.root,
        member.size,
        mine.iscc if mine else None,
        distance,
        member.paths[1:],
        member.host,
    )


def _pair(group: q.DupGroup, link: q.NearLink, thresholds: Thresholds) -> DupPair:
    a, b = group.members[link.a].unit(link.unit), group.members[link.b].unit(link.unit)
    bits = min(a.bits, b.bits) if a and b else 64
    return DupPair(
        link.a, link.b, link.unit, link.distance, thresholds.scaled(link.unit, bits) or 0
    )
