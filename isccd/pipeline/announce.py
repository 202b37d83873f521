"""Announcing a change of a file's relations, as a pure function: from the relations before
and after the change, the file, the related files read, the limit and the host, to the near
links to store and delete and the events to log (``dup.exact``, ``dup.near`` when a relation
began, ``dup.resolved`` when one ended).

It reads and writes nothing: :mod:`isccd.pipeline.changes` reads the files :func:`listed` names,
calls :func:`announce`, and applies what it returns. For another host's file of a fleet (a
shared store) the same finding is also announced from that file's side: an event about it,
attributed to its host (:attr:`isccd.model.Event.host`), naming this host's file (``count``
1), built by the same payload builders (:mod:`isccd.pipeline.events`) as this host's. The
other host's subscribers follow their host's events in the shared log, whether or not their
daemon runs; nothing is decided twice, and nothing waits on the other daemon. Only the other
files an event lists are mirrored (at most ``limit`` of them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from isccd.match import Relation
from isccd.model import EventType, RelationKind, UnitType
from isccd.pipeline import events as payload

# The records of the store's rows, as values: this module never sees the store itself.
from isccd.store.base import NearPair, StoredFile


@dataclass(frozen=True, slots=True)
class Notice:
    """An event to log.

    Attributes:
        type: The event type.
        root: The root of the file it is about.
        path: The path of the file it is about.
        data: The payload.
        host: ``None`` for this host's file; else the other host whose file it is about (the
            other side of a duplicate found across hosts).
    """

    type: EventType
    root: str
    path: str
    data: dict[str, Any]
    host: str | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """A file's relations before and after a change, compared.

    Attributes:
        file_id: The file.
        exact: Its exact copies now, in the order found.
        began_exact: Those it did not have before.
        ended_exact: Those it had before and has no more.
        near: Its near relations now, by ``(other, unit)``.
        old: Its stored near relations before, by ``(other, unit)``.
        began: The near relations that began, per unit, nearest first (ties by id).
        ended: The other files of the near relations that ended, per unit.
    """

    file_id: int
    exact: list[int] = field(default_factory=list)
    began_exact: list[int] = field(default_factory=list)
    ended_exact: list[int] = field(default_factory=list)
    near: dict[tuple[int, UnitType], Relation] = field(default_factory=dict)
    old: dict[tuple[int, UnitType], NearPair] = field(default_factory=dict)
    began: dict[UnitType, list[Relation]] = field(default_factory=dict)
    ended: dict[UnitType, list[int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Announcement:
    """What a change of relations causes.

    Attributes:
        add: Near links to store (new ones, and those whose distance changed).
        remove: Near links to delete (ended).
        events: The events to log, in order.
    """

    add: list[NearPair]
    remove: list[NearPair]
    events: list[Notice]


def compare(
    file_id: int,
    relations: Sequence[Relation],
    old_exact: Iterable[int] = (),
    old_near: Sequence[NearPair] = (),
) -> Change | None:
    """Compare a file's relations now with those before a change; ``None`` when there is
    nothing to announce (no relation before or after: most files)."""
    before_exact = list(old_exact)
    if not relations and not old_near and not before_exact:
        return None
    exact = [r.other for r in relations if r.kind is RelationKind.EXACT]
    near = {(r.other, r.unit): r for r in relations if r.kind is RelationKind.NEAR}
    old = {(p.other(file_id), p.unit): p for p in old_near}
    exact_now, exact_before = set(exact), set(before_exact)
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
    return Change(
        file_id,
        exact=exact,
        began_exact=[i for i in exact if i not in exact_before],
        ended_exact=[i for i in before_exact if i not in exact_now],
        near=near,
        old=old,
        began=began,
        ended=ended,
    )


def listed(change: Change, limit: int, near_limit: int | None = None) -> list[int]:
    """The other files the events of ``change`` name (at most ``limit`` per event, and
    ``near_limit`` per ``dup.near``, the closest first): the only ones to read."""
    ids = set(change.ended_exact[:limit]) | set(change.began_exact[:limit])
    if change.began_exact:
        ids.update(change.exact[:limit])
    for others in change.ended.values():
        ids.update(others[:limit])
    most = limit if near_limit is None else near_limit
    for found in change.began.values():
        ids.update(r.other for r in found[:most])
    return sorted(ids)


def announce(
    stored: StoredFile,
    change: Change,
    files: Mapping[int, StoredFile],
    *,
    limit: int,
    host: str,
    reason: str = "changed",
    counts: Mapping[UnitType, int] | None = None,
    near_limit: int | None = None,
) -> Announcement:
    """The near links and events of a change of a file's relations.

    Args:
        stored: The file, as it is after the change.
        change: Its relations compared (:func:`compare`).
        files: The other files read, by id (those :func:`listed` names; one missing is gone
            and left out).
        limit: At most this many other files per event.
        host: This host: another host's file named gets its side of the finding.
        reason: Why relations ended (``changed``, ``removed``, ``threshold``).
        counts: How many files the file is near per unit type, when the in-memory index
            found more than the relations kept (a ``dup.near`` says the larger).
        near_limit: At most this many other files per ``dup.near`` (the nearest); ``None``:
            ``limit``.
    """
    file_id, root, path = stored.id, stored.root, stored.path
    near, old = change.near, change.old
    remove = [p for key, p in old.items() if key not in near]
    add = [
        NearPair.of(file_id, other, unit, r.distance)
        for (other, unit), r in near.items()
        if (other, unit) not in old or old[(other, unit)].distance != r.distance
    ]
    events: list[Notice] = []

    def known(ids: Iterable[int]) -> list[StoredFile]:
        return [files[i] for i in ids if i in files]

    def mirror(type: EventType, others: Iterable[StoredFile], data: Any) -> None:
        events.extend(
            Notice(type, o.root, o.path, data(o), host=o.host)
            for o in others
            if o.host and o.host != host
        )

    if ended := change.ended_exact:
        named = known(ended[:limit])
        events.append(Notice(EventType.DUP_RESOLVED, root, path, payload.resolved(
            "exact", UnitType.INSTANCE, reason, named, len(ended))))  # fmt: skip
        mirror(EventType.DUP_RESOLVED, named, lambda o: payload.resolved(
            "exact", UnitType.INSTANCE, reason, [stored], 1))  # fmt: skip
    if change.began_exact:
        exact = known(change.exact[:limit])
        events.append(Notice(EventType.DUP_EXACT, root, path,
                             payload.exact(stored, exact, len(change.exact))))  # fmt: skip
        mirror(EventType.DUP_EXACT, known(change.began_exact[:limit]),
               lambda o: payload.exact(o, [stored], 1))  # fmt: skip
    for unit, ids in change.ended.items():
        named = known(ids[:limit])
        events.append(Notice(EventType.DUP_RESOLVED, root, path,
                             payload.resolved("near", unit, reason, named, len(ids))))  # fmt: skip
        mirror(EventType.DUP_RESOLVED, named,
               lambda o, u=unit: payload.resolved("near", u, reason, [stored], 1))  # fmt: skip
    for unit, found in change.began.items():
        most = limit if near_limit is None else near_limit
        shown = [(files[r.other], r) for r in found[:most] if r.other in files]
        count = max(len(found), (counts or {}).get(unit, 0))
        events.append(Notice(EventType.DUP_NEAR, root, path,
                             payload.near(stored, found[0], shown, count)))  # fmt: skip
        for other, r in shown:
            mirror(EventType.DUP_NEAR, [other], lambda o, r=r: payload.near(o, r, [(stored, r)], 1))
    return Announcement(add, remove, events)
