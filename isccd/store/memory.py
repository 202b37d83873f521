"""The in-memory backend (``memory://``): the store contract in plain Python, for tests.

Everything lives in dictionaries and vanishes with the object. Transactions and savepoints are
implemented with an undo log, so a rolled-back unit of work leaves no trace, exactly as with
SQLite.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from isccd.errors import StoreError
from isccd.fspath import is_under
from isccd.model import Event, EventType, FileRecord, FileStat, UnitType
from isccd.store.base import (
    IDENTITY_PROPERTY,
    FileKey,
    NearPair,
    StaleUnits,
    StoredFile,
    skipped_units,
    split_path,
)

_Key = tuple[int, int, UnitType]


class MemoryStore:
    """A :class:`isccd.store.base.Store` held in memory."""

    def __init__(self, url: str = "memory://") -> None:
        self._url = url
        self._files: dict[int, StoredFile] = {}
        self._by_path: dict[str, int] = {}
        self._by_identity: dict[tuple[int, int], set[int]] = {}
        self._by_datahash: dict[str, set[int]] = {}
        self._near: dict[_Key, int] = {}
        self._near_of: dict[int, set[_Key]] = {}
        self._events: list[Event] = []
        self._root_devs: dict[str, int] = {}
        self._properties: dict[str, str] = {IDENTITY_PROPERTY: str(uuid.uuid4())}
        self._next_id = 1
        self._next_seq = 1
        self._undo: list[Callable[[], None]] | None = None
        self._marks: list[int] = []
        self._closed = False

    @property
    def url(self) -> str:
        """The URL it was opened with."""
        return self._url

    @property
    def readonly(self) -> bool:
        """Always False."""
        return False

    @property
    def identity(self) -> str:
        """A random UUID made with this object."""
        return self._properties[IDENTITY_PROPERTY]

    def close(self) -> None:
        """Drop an open transaction; idempotent."""
        self.rollback()
        self._closed = True

    # -- transactions --------------------------------------------------------------------------

    def begin(self) -> None:
        """Start a transaction."""
        self._check()
        if self._undo is not None:
            raise StoreError("memory store: a transaction is already open")
        self._undo = []
        self._marks = []

    def commit(self) -> None:
        """Commit."""
        self._check()
        self._undo = None
        self._marks = []

    def rollback(self) -> None:
        """Undo everything since :meth:`begin`."""
        if self._undo is not None:
            self._unwind(0)
        self._undo = None
        self._marks = []

    def savepoint(self) -> None:
        """Start a unit of work."""
        if self._undo is None:
            raise StoreError("memory store: savepoint outside a transaction")
        self._marks.append(len(self._undo))

    def release(self) -> None:
        """Keep the unit of work."""
        self._marks.pop()

    def rollback_to(self) -> None:
        """Undo the unit of work."""
        self._unwind(self._marks.pop())

    def _unwind(self, mark: int) -> None:
        assert self._undo is not None
        while len(self._undo) > mark:
            self._undo.pop()()

    def _check(self) -> None:
        if self._closed:
            raise StoreError("memory store: closed")

    def _log(self, undo: Callable[[], None]) -> None:
        if self._undo is not None:
            self._undo.append(undo)

    # -- primitive mutations, each with its inverse ---------------------------------------------

    def _set(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        if key in table:
            old = table[key]
            self._log(lambda: table.__setitem__(key, old))
        else:
            self._log(lambda: table.pop(key, None))
        table[key] = value

    def _pop(self, table: dict[Any, Any], key: Any) -> None:
        if key in table:
            old = table.pop(key)
            self._log(lambda: table.__setitem__(key, old))

    def _add(self, table: dict[Any, set[Any]], key: Any, member: Any) -> None:
        members = table.setdefault(key, set())
        if member not in members:
            members.add(member)
            self._log(lambda: members.discard(member))

    def _discard(self, table: dict[Any, set[Any]], key: Any, member: Any) -> None:
        members = table.get(key)
        if members is not None and member in members:
            members.discard(member)
            self._log(lambda: members.add(member))

    def _index(self, stored: StoredFile) -> None:
        record = stored.record
        self._set(self._by_path, record.path, stored.id)
        if record.stat:
            self._add(self._by_identity, record.stat.identity, stored.id)
        if record.datahash:
            self._add(self._by_datahash, record.datahash, stored.id)

    def _unindex(self, stored: StoredFile) -> None:
        record = stored.record
        if self._by_path.get(record.path) == stored.id:
            self._pop(self._by_path, record.path)
        if record.stat:
            self._discard(self._by_identity, record.stat.identity, stored.id)
        if record.datahash:
            self._discard(self._by_datahash, record.datahash, stored.id)

    # -- reading files -------------------------------------------------------------------------

    def _live(self, ids: set[int] | None) -> list[StoredFile]:
        return [self._files[i] for i in sorted(ids or ())]

    def file_at(self, path: str) -> StoredFile | None:
        """The live file at ``path``."""
        file_id = self._by_path.get(path)
        return self._files[file_id] if file_id is not None else None

    def files_by_id(self, ids: Sequence[int]) -> list[StoredFile]:
        """Files with these ids, in the given order."""
        return [self._files[i] for i in ids if i in self._files]

    def files_by_identity(self, dev: int, ino: int) -> list[StoredFile]:
        """Live files with this identity."""
        return self._live(self._by_identity.get((dev, ino)))

    def files_by_datahash(self, datahash: str) -> list[StoredFile]:
        """Live files with this datahash."""
        return self._live(self._by_datahash.get(datahash))

    def file_keys(self, ids: Sequence[int]) -> dict[int, FileKey]:
        """Identity and datahash of the live files among ``ids``."""
        found = {}
        for file_id in ids:
            stored = self._files.get(file_id)
            if stored is not None and stored.live:
                record = stored.record
                identity = record.stat.identity if record.stat else None
                found[file_id] = FileKey(identity, record.datahash, _size(record))
        return found

    def unit_digests_of(self, ids: Sequence[int], unit_type: UnitType) -> dict[int, bytes]:
        """Digests of one unit type of the live files among ``ids``."""
        found = {}
        for file_id in ids:
            stored = self._files.get(file_id)
            unit = stored.record.unit(unit_type) if stored is not None and stored.live else None
            if unit is not None:
                found[file_id] = unit.digest
        return found

    def tombstones_at(self, path: str) -> list[StoredFile]:
        """Tombstones at ``path``, most recent first."""
        dead = [f for f in self._files.values() if not f.live and f.path == path]
        return sorted(dead, key=lambda f: (f.removed_at or 0.0, f.id), reverse=True)

    def validators_in_dir(self, directory: str) -> dict[str, FileStat]:
        """Name -> validators of the live files in ``directory``."""
        found = {}
        for path, file_id in self._by_path.items():
            parent, name = split_path(path)
            if parent == directory:
                stat = self._files[file_id].record.stat
                found[name] = stat if stat else FileStat(-1, -1, -1, -1, -1)
        return found

    def dirs_under(self, path: str) -> list[str]:
        """Directories at or below ``path`` holding live files."""
        return sorted({split_path(p)[0] for p in self._by_path if is_under(split_path(p)[0], path)})

    def files_under(self, path: str) -> list[StoredFile]:
        """Live files at or below ``path``."""
        return [
            self._files[i]
            for p, i in sorted(self._by_path.items(), key=lambda kv: _sort_key(kv[0]))
            if is_under(p, path)
        ]

    def stale_units(self, is_stale: Callable[[str], bool], under: str) -> list[StaleUnits]:
        """Live files with units of a stale profile."""
        verdicts: dict[str, bool] = {}
        found = []
        for stored in self.files_under(under):
            made = [(u.type, u.profile) for u in stored.record.units]
            skipped = list(skipped_units(stored.record.issues).items())
            stale = frozenset(
                unit_type
                for unit_type, profile in made + skipped
                if verdicts.setdefault(profile, is_stale(profile))
            )
            if stale:
                found.append(StaleUnits(stored, stale))
        return sorted(found, key=lambda s: s.file.id)

    def unit_digests(
        self, unit_type: UnitType, chunk: int = 65536
    ) -> Iterator[list[tuple[int, bytes]]]:
        """``(file id, digest)`` of live units of one type, in chunks."""
        rows = []
        for file_id in sorted(self._by_path.values()):
            unit = self._files[file_id].record.unit(unit_type)
            if unit is not None:
                rows.append((file_id, unit.digest))
        for start in range(0, len(rows), chunk):
            yield rows[start : start + chunk]

    def exact_datahashes(self) -> list[str]:
        """Datahashes held by more than one live identity."""
        found = []
        for datahash, ids in self._by_datahash.items():
            identities = {s.identity for i in ids if (s := self._files[i].record.stat)}
            if len(identities) > 1:
                found.append(datahash)
        return sorted(found)

    def ids_by_size(self, at_least: int, below: int) -> list[int]:
        """Live files by size."""
        found = []
        for file_id in self._by_path.values():
            size = _size(self._files[file_id].record)
            if size is not None and at_least <= size < below:
                found.append(file_id)
        return sorted(found)

    def count_files(self) -> tuple[int, int]:
        """``(live, tombstones)``."""
        live = len(self._by_path)
        return live, len(self._files) - live

    def live_by_root(self) -> dict[str, int]:
        """Live files per root (counted: this backend serves tests)."""
        return dict(Counter(self._files[i].root for i in self._by_path.values()))

    def root_device(self, root: str) -> int | None:
        """The recorded ``st_dev`` of a root."""
        return self._root_devs.get(root)

    # -- writing files -------------------------------------------------------------------------

    def add_file(self, root: str, record: FileRecord, now: float) -> int:
        """Store a new live file; return its id."""
        self._check()
        if record.path in self._by_path:
            raise StoreError(f"memory store: a live file is already stored at {record.path!r}")
        file_id = self._next_id
        self._next_id += 1
        self._log(lambda: setattr(self, "_next_id", file_id))
        stored = StoredFile(file_id, root, record, now)
        self._set(self._files, file_id, stored)
        self._index(stored)
        return file_id

    def update_file(self, file_id: int, root: str, record: FileRecord, now: float) -> None:
        """Replace a live file's record."""
        old = self._files.get(file_id)
        if old is None or not old.live:
            return
        new = StoredFile(file_id, root, record, now)
        self._unindex(old)
        self._set(self._files, file_id, new)
        self._index(new)

    def move_file(self, file_id: int, root: str, path: str, stat: FileStat) -> None:
        """Rename a live file, keeping its units."""
        old = self._files.get(file_id)
        if old is None or not old.live:
            return
        new = replace(old, root=root, record=replace(old.record, path=path, stat=stat))
        self._unindex(old)
        self._set(self._files, file_id, new)
        self._index(new)

    def remove_file(self, file_id: int, now: float) -> None:
        """Make a live file a tombstone and drop its relations."""
        old = self._files.get(file_id)
        if old is None or not old.live:
            return
        self._unindex(old)
        self._set(self._files, file_id, replace(old, removed_at=now))
        self.remove_near([NearPair(*key, 0) for key in list(self._near_of.get(file_id, ()))])

    def set_root_device(self, root: str, dev: int) -> None:
        """Record the ``st_dev`` of a root."""
        self._set(self._root_devs, root, dev)

    def rebase_device(self, under: str, old: int, new: int) -> int:
        """Move the live files below ``under`` from device ``old`` to ``new``."""
        moved = 0
        for stored in self.files_under(under):
            stat = stored.record.stat
            if stat is not None and stat.dev == old:
                new_record = replace(stored.record, stat=replace(stat, dev=new))
                self._unindex(stored)
                self._set(self._files, stored.id, replace(stored, record=new_record))
                self._index(self._files[stored.id])
                moved += 1
        return moved

    def purge_tombstones(self, before: float) -> int:
        """Forget tombstones older than ``before``."""
        old = [
            f.id for f in self._files.values() if f.removed_at is not None and f.removed_at < before
        ]
        for file_id in old:
            self._pop(self._files, file_id)
        return len(old)

    # -- near relations ------------------------------------------------------------------------

    def near_of(self, file_id: int) -> list[NearPair]:
        """Relations of one file."""
        return sorted(NearPair(*key, self._near[key]) for key in self._near_of.get(file_id, ()))

    def add_near(self, pairs: Sequence[NearPair]) -> None:
        """Insert or update relations."""
        for pair in pairs:
            key = (pair.a, pair.b, pair.unit)
            self._set(self._near, key, pair.distance)
            self._add(self._near_of, pair.a, key)
            self._add(self._near_of, pair.b, key)

    def remove_near(self, pairs: Sequence[NearPair]) -> None:
        """Delete relations."""
        for pair in pairs:
            key = (pair.a, pair.b, pair.unit)
            if key in self._near:
                self._pop(self._near, key)
                self._discard(self._near_of, pair.a, key)
                self._discard(self._near_of, pair.b, key)

    def near_pairs(self) -> Iterator[NearPair]:
        """All relations."""
        for key in sorted(self._near):
            yield NearPair(*key, self._near[key])

    # -- properties ----------------------------------------------------------------------------

    def get_property(self, name: str) -> str | None:
        """The value recorded under ``name``."""
        return self._properties.get(name)

    def set_property(self, name: str, value: str) -> None:
        """Record a value in the current transaction."""
        self._check()
        self._set(self._properties, name, value)

    # -- events --------------------------------------------------------------------------------

    def append_event(
        self, type: EventType, root: str, path: str, data: Mapping[str, Any], now: float
    ) -> Event:
        """Log an event in the current transaction."""
        self._check()
        seq = self._next_seq
        self._next_seq += 1
        event = Event(seq, type, now, root, path, dict(data))
        self._events.append(event)

        def undo() -> None:
            self._events.remove(event)
            self._next_seq = seq

        self._log(undo)
        return event

    def events_since(self, seq: int, limit: int = 1000) -> list[Event]:
        """Events after ``seq``."""
        return [e for e in self._events if e.seq > seq][:limit]

    def last_seq(self) -> int:
        """The highest sequence number used."""
        return self._next_seq - 1

    def first_seq(self) -> int:
        """The lowest sequence number still logged."""
        return self._events[0].seq if self._events else self._next_seq

    def purge_events(self, before: float) -> int:
        """Forget events older than ``before``."""
        old = self._events
        self._events = [e for e in old if e.time >= before]
        self._log(lambda: setattr(self, "_events", old))
        return len(old) - len(self._events)


def _sort_key(path: str) -> tuple[bytes, bytes]:
    # The order of the SQLite backend: by directory, then name, as bytes.
    directory, name = split_path(path)
    return (os.fsencode(directory), os.fsencode(name))


def _size(record: FileRecord) -> int | None:
    """The size read, else the validators' (as the SQLite backend's ``coalesce``)."""
    if record.filesize is not None:
        return record.filesize
    return record.stat.size if record.stat is not None else None
