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
  ``datahash``, ``size``, ``others`` (``path``, ``root``, ``iscc``, ``host``), ``count``.
- ``dup.near``: ``unit``, ``threshold``, ``bits``, ``distance`` (the smallest), ``iscc``,
  ``code`` (this file's unit), ``others`` (``path``, ``root``, ``iscc``, ``host``, ``code``,
  ``distance``), ``count``.
- ``dup.resolved``: ``kind`` (``exact`` or ``near``), ``unit``, ``reason`` (``changed``,
  ``removed``, ``threshold``), ``others``, ``count``.
- ``file.error``: ``issues`` (``stage``, ``kind``, ``reason``, ``code``).
- ``file.unstable``: ``attempts``, ``reason``.
- ``scan.done`` (reconciles of a whole root, or of a directory a client asked for; the
  watcher's own subtree walks are not announced): ``start`` (the
  directory walked), the counters ``dirs``, ``seen``,
  ``unchanged``, ``queued``, ``hashed``, ``added``, ``changed``, ``moved``, ``removed``,
  ``errors``, ``unstable``, ``duplicates``, and ``seconds``, ``walked`` and ``issues``
  (``path``, ``reason``, ``message``; at most 100): the parts of the tree that could not be seen.

``others`` lists at most ``PipelineOptions.others_limit`` files; ``count`` is the full number.
A duplicate found on another host of a fleet is also announced from that host's side
(:mod:`isccd.pipeline.mirror`).

``scan.progress`` is not logged: progress is transient and a log of it would bury the changes.
:meth:`Pipeline.reconcile <isccd.pipeline.pipeline.Pipeline.reconcile>` reports it through its
``progress`` callback, for the daemon to push live.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from isccd.model import FileIssue, FileRecord, UnitType
from isccd.store import StoredFile


def size_of(record: FileRecord) -> int | None:
    """The file's size: bytes read, or the validators' size."""
    if record.filesize is not None:
        return record.filesize
    return record.stat.size if record.stat else None


def content(record: FileRecord) -> dict[str, Any]:
    """What identifies a file's content in events."""
    return {
        "iscc": record.iscc,
        "datahash": record.datahash,
        "size": size_of(record),
        "mediatype": record.mediatype,
        "units": {u.type.value: u.iscc for u in record.units},
    }


def brief(record: FileRecord) -> dict[str, Any]:
    """A short reference to a content version."""
    return {"iscc": record.iscc, "datahash": record.datahash, "size": size_of(record)}


def peer(stored: StoredFile, **extra: Any) -> dict[str, Any]:
    """Another file in a duplicate event, with the host it is on."""
    return {
        "path": stored.path,
        "root": stored.root,
        "iscc": stored.record.iscc,
        "host": stored.host,
        **extra,
    }


def unit_code(stored: StoredFile, unit_type: UnitType) -> str | None:
    """A file's unit of one type, as its code (``None`` when it has none)."""
    unit = stored.record.unit(unit_type)
    return unit.iscc if unit else None


def issues(items: Sequence[FileIssue]) -> list[dict[str, Any]]:
    """Issues as JSON objects."""
    return [
        {
            "stage": i.stage,
            "kind": i.kind.value,
            "reason": i.reason,
            "code": i.code.value if i.code else None,
        }
        for i in items
    ]
