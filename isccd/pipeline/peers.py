"""Other files as answers and events name them: one :class:`~isccd.results.Match` per file,
its hardlinks folded into it (``path`` the first name, ``links`` the others)."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from isccd.model import FileRecord, RelationKind, UnitType
from isccd.results import Match
from isccd.store import StoredFile


def size_of(record: FileRecord) -> int | None:
    """The file's size: bytes read, or the validators' size."""
    if record.filesize is not None:
        return record.filesize
    return record.stat.size if record.stat else None


def identity_of(stored: StoredFile) -> Hashable:
    """What makes two stored names one file: the host and ``(st_dev, st_ino)`` (the row's
    id when it has no stat)."""
    record = stored.record
    return (stored.host, record.stat.identity if record.stat else ("id", stored.id))


@dataclass(frozen=True, slots=True)
class Peer:
    """One other file found related, before hardlinks are folded.

    Attributes:
        file: The stored file.
        relation: Hardlink, exact or near.
        unit: The unit type compared (``instance`` for hardlinks and exact copies).
        distance: Hamming distance (0 for hardlinks and exact copies).
        threshold: The threshold applied (0 for hardlinks and exact copies).
    """

    file: StoredFile
    relation: RelationKind
    unit: UnitType = UnitType.INSTANCE
    distance: int = 0
    threshold: int = 0


def fold(peers: Iterable[Peer]) -> list[Match]:
    """One match per file and relation, in the order each file first appears: a file's
    names (its hardlinks, which share its content and so its distances) become one match,
    named by the first of them in byte order."""
    found: dict[Hashable, list[Peer]] = {}
    for peer in peers:
        key = (identity_of(peer.file), peer.relation, peer.unit)
        found.setdefault(key, []).append(peer)
    return [_match(sorted(group, key=lambda p: p.file.path)) for group in found.values()]


def _match(names: Sequence[Peer]) -> Match:
    first = names[0]
    record = first.file.record
    code = record.unit(first.unit)
    return Match(
        path=first.file.path,
        root=first.file.root,
        relation=first.relation,
        unit=first.unit,
        distance=first.distance,
        threshold=first.threshold,
        iscc=record.iscc,
        code=code.iscc if code is not None else None,
        size=size_of(record),
        links=tuple(p.file.path for p in names[1:]),
        host=first.file.host,
    )
