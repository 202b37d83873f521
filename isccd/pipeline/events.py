"""The payloads of the events the pipeline logs (``Event.data``), built in one place.

Every event has ``seq``, ``time``, ``root`` and ``path`` on the :class:`~isccd.model.Event`
itself. The data adds, per type:

- ``file.added`` / ``file.changed``: ``iscc``, ``datahash``, ``size``, ``mediatype``, ``units``
  (unit type -> ISCC unit); ``links`` (other paths of the same file: hardlinks) when there are
  any; ``file.changed`` also ``previous`` (``iscc``, ``datahash``, ``size``).
- ``file.moved``: ``from``, ``from_root``, ``iscc`` (under the new name: a Meta-Code made from
  the file name follows it); ``previous`` (``iscc``, ``datahash``, ``size``) when it changed.
- ``file.removed``: ``iscc``, ``datahash``, ``size``.
- ``dup.exact``: ``unit`` (``"instance"``), ``distance`` 0, ``threshold`` 0, ``iscc``,
  ``code`` (this file's Instance-Code), ``datahash``, ``size``, ``others`` (matches, as
  ``similar`` lists them: one per file, its hardlinks in ``links``), ``count``.
- ``dup.near``: ``unit``, ``threshold``, ``bits``, ``distance`` (the smallest), ``iscc``,
  ``code`` (this file's unit), ``others`` (``path``, ``root``, ``host``, ``links``,
  ``distance``: the event's unit and threshold hold for all), ``count``.
- ``dup.resolved``: ``kind`` (``exact`` or ``near``), ``unit``, ``reason`` (``changed``,
  ``removed``, ``threshold``), ``others`` (``path``, ``links``, ``root``, ``host``, ``size``,
  ``iscc``), ``count``.
- ``file.error``: ``issues`` (``stage``, ``kind``, ``reason``, ``code``, ``profile``).
- ``file.unstable``: ``attempts``, ``reason``.
- ``scan.done`` (reconciles of a whole root, or of a directory a client asked for; the
  watcher's own subtree walks are not announced): ``start`` (the
  directory walked), the counters ``dirs``, ``seen``,
  ``unchanged``, ``queued``, ``hashed``, ``added``, ``changed``, ``moved``, ``removed``,
  ``errors``, ``unstable``, ``duplicates``, and ``seconds``, ``walked`` and ``issues``
  (``path``, ``reason``, ``message``; at most 100): the parts of the tree that could not be seen.

``others`` lists at most ``PipelineOptions.others_limit`` names, folded into one entry per file;
``count`` is the full number of other names.
A duplicate found on another host of a fleet is also announced from that host's side: the
same builders (:func:`exact`, :func:`near`, :func:`resolved`) make both sides' payloads, the
other file's naming this host's file only (``count`` 1; see :mod:`isccd.pipeline.announce`).

``scan.progress`` is not logged: progress is transient and a log of it would bury the changes.
:meth:`Pipeline.reconcile <isccd.pipeline.pipeline.Pipeline.reconcile>` reports it through its
``progress`` callback, for the daemon to push live.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from isccd.match import Relation
from isccd.model import FileIssue, FileRecord, RelationKind, UnitType, sort_units
from isccd.pipeline.peers import Peer, fold, size_of
from isccd.results import Match
from isccd.store import StoredFile

#: The members of a match that a ``dup.resolved`` event names: the relation has ended, so it
#: has no distance any more.
_REF = ("path", "links", "root", "host", "size", "iscc")
#: The members of a match that a ``dup.near`` event names: the event says the unit and the
#: threshold once, and a subscriber that wants a file's codes asks ``get`` (a full match of
#: each of the ``max_links`` others made a family's events ~18x an unrelated tree's; the
#: nearest ``PipelineOptions.near_named`` are named, a few hundred bytes whatever the family).
_NEAR = ("path", "root", "host", "links", "distance")
#: The members of a match, in order.
_MATCH = tuple(f.name for f in dataclasses.fields(Match))


def content(record: FileRecord) -> dict[str, Any]:
    """What identifies a file's content in events, as plain values: what parsing its JSON
    gives back (unit types as their values; see :attr:`isccd.store.NewEvent.plain`)."""
    return {
        "iscc": record.iscc,
        "datahash": record.datahash,
        "size": size_of(record),
        "mediatype": record.mediatype,
        "units": {u.type._value_: u.iscc for u in sort_units(record.units)},
    }


def brief(record: FileRecord) -> dict[str, Any]:
    """A short reference to a content version."""
    return {"iscc": record.iscc, "datahash": record.datahash, "size": size_of(record)}


def matches(peers: Iterable[Peer]) -> list[dict[str, Any]]:
    """Other files in a duplicate event: one match per file (see :func:`fold`)."""
    # Field by field: dataclasses.asdict copies recursively, and a match holds only values
    # and a tuple of names.
    return [{name: getattr(m, name) for name in _MATCH} for m in fold(peers)]


def refs(files: Iterable[StoredFile]) -> list[dict[str, Any]]:
    """Other files in a ``dup.resolved`` event: one per file, with its names."""
    return [
        {k: v for k, v in m.items() if k in _REF}
        for m in matches(Peer(f, RelationKind.EXACT) for f in files)
    ]


def unit_code(stored: StoredFile, unit_type: UnitType) -> str | None:
    """A file's unit of one type, as its code (``None`` when it has none)."""
    unit = stored.record.unit(unit_type)
    return unit.iscc if unit else None


def issues(items: Sequence[FileIssue]) -> list[dict[str, Any]]:
    """Issues as JSON objects."""
    return [dataclasses.asdict(i) for i in items]


def exact(subject: StoredFile, others: Sequence[StoredFile], count: int) -> dict[str, Any]:
    """The payload of ``dup.exact`` about ``subject``, naming ``others`` of its ``count``
    copies."""
    return {
        "unit": UnitType.INSTANCE.value, "distance": 0, "threshold": 0,
        **brief(subject.record), "code": unit_code(subject, UnitType.INSTANCE),
        "others": matches(Peer(f, RelationKind.EXACT) for f in others), "count": count,
    }  # fmt: skip


def near(
    subject: StoredFile,
    nearest: Relation,
    others: Iterable[tuple[StoredFile, Relation]],
    count: int,
) -> dict[str, Any]:
    """The payload of ``dup.near`` about ``subject``, near its ``count`` others by
    ``nearest.unit``: the smallest distance is ``nearest``'s, ``others`` the files named with
    their relations (nearest first)."""
    unit = nearest.unit
    peers = (Peer(f, RelationKind.NEAR, unit, r.distance, r.threshold) for f, r in others)
    return {
        "unit": unit.value, "threshold": nearest.threshold, "bits": nearest.bits,
        "distance": nearest.distance, "iscc": subject.record.iscc,
        "code": unit_code(subject, unit),
        "others": [{name: getattr(m, name) for name in _NEAR} for m in fold(peers)],
        "count": count,
    }  # fmt: skip


def resolved(
    kind: str, unit: UnitType, reason: str, others: Iterable[StoredFile], count: int
) -> dict[str, Any]:
    """The payload of ``dup.resolved``: ``count`` relations of ``kind`` by ``unit`` ended
    for ``reason``, ``others`` named."""
    return {
        "kind": kind, "unit": unit.value, "reason": reason,
        "others": refs(others), "count": count,
    }  # fmt: skip
