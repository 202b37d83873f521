"""The other side of a duplicate found across hosts.

In a store a fleet shares, the host that finds a duplicate on another host logs its own event
(its file, naming the other one with its host) and, in the same transaction, the same finding
seen from the other file: an event about that file, attributed to the other host
(:attr:`isccd.model.Event.host`), naming this host's file. The other host's subscribers follow
their host's events in the shared log, so they learn of it whether or not their daemon runs,
and a subscriber resuming with ``since`` finds it where it was committed. Nothing is decided
twice, and nothing waits on the other daemon.

Only the other files an event lists are mirrored (at most ``others_limit`` of them): each gets
one event naming this host's file (``count`` 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from isccd.match import Relation
from isccd.model import EventType, RelationKind, UnitType
from isccd.pipeline import events as payload
from isccd.pipeline.peers import Peer
from isccd.store import StoredFile

if TYPE_CHECKING:
    from isccd.pipeline.index import Index


def mirror(
    ix: Index,
    type: EventType,
    stored: StoredFile,
    others: Iterable[StoredFile],
    data: Callable[[StoredFile], dict[str, Any]],
) -> None:
    """Log, for each of ``others`` on another host than this one, a ``type`` event about it
    with ``data(other)``."""
    host = ix.store.host
    for other in others:
        if other.host and other.host != host:
            ix.emit(type, other.root, other.path, data(other), host=other.host)


def exact(stored: StoredFile) -> Callable[[StoredFile], dict[str, Any]]:
    """The payload of ``dup.exact`` about another file that ``stored`` now duplicates."""

    def build(other: StoredFile) -> dict[str, Any]:
        return {
            "unit": UnitType.INSTANCE.value, "distance": 0, "threshold": 0,
            **payload.brief(other.record), "code": payload.unit_code(other, UnitType.INSTANCE),
            "others": payload.matches([Peer(stored, RelationKind.EXACT)]), "count": 1,
        }  # fmt: skip

    return build


def near(
    stored: StoredFile, relations: dict[int, Relation]
) -> Callable[[StoredFile], dict[str, Any]]:
    """The payload of ``dup.near`` about another file ``stored`` is now near (``relations``:
    by the other file's id, all of one unit type)."""

    def build(other: StoredFile) -> dict[str, Any]:
        r = relations[other.id]
        mine = Peer(stored, RelationKind.NEAR, r.unit, r.distance, r.threshold)
        return {
            "unit": r.unit.value, "threshold": r.threshold, "bits": r.bits,
            "distance": r.distance, "iscc": other.record.iscc,
            "code": payload.unit_code(other, r.unit), "others": payload.matches([mine]),
            "count": 1,
        }  # fmt: skip

    return build


def resolved(
    stored: StoredFile, kind: str, unit: UnitType, reason: str
) -> Callable[[StoredFile], dict[str, Any]]:
    """The payload of ``dup.resolved`` about another file whose relation with ``stored``
    ended."""

    def build(other: StoredFile) -> dict[str, Any]:
        return {
            "kind": kind, "unit": unit.value, "reason": reason,
            "others": payload.refs([stored]), "count": 1,
        }  # fmt: skip

    return build
