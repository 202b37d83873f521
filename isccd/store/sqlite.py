"""The SQLite backend of the store: files, their units, relations, properties and events in one
database file in WAL mode in the state directory (:mod:`isccd.store.database` opens it, checks
and migrates it, and runs its transactions). It holds one host's index: ``fleet=True`` asks the
same as the host's own.
"""

from __future__ import annotations

import itertools
import json
import os
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from isccd.errors import StoreCorruptError, StoreError
from isccd.model import (
    Event,
    EventType,
    FileIssue,
    FileRecord,
    FileStat,
    Unit,
    UnitType,
    sort_units,
)
from isccd.store import watchlists as wl
from isccd.store.base import (
    IDENTITY_PROPERTY,
    FileKey,
    FolderFile,
    ListedFile,
    NearPair,
    NewEvent,
    StaleUnits,
    StoredFile,
    join_path,
    skipped_units,
    split_path,
)
from isccd.store.database import RUN_PROPERTY, Database, SqliteOptions, runs_of
from isccd.store.rows import (
    ACTIONABLE,
    FILE_COLUMNS,
    FILE_FROM,
    LISTED_COLUMNS,
    ListedUnit,
    event_json,
    file_from_row,
    from_fs,
    from_fs_once,
    in_code_order,
    instance_range,
    issues_of,
    listed_from_row,
    record_columns,
    to_fs,
)

__all__ = ["SqliteOptions", "SqliteStore"]

#: Bound parameters per ``IN (...)`` list (SQLite allows 32766; smaller keeps statements cached).
_IN_CHUNK = 500
#: Unit types by their stored name: a dict lookup, not an enum call, for each of the near rows
#: a family of files reads.
_UNIT_TYPES = {t.value: t for t in UnitType}


#: The columns of a new file's row, and one row's placeholders.
_ADD_COLUMNS = (
    "root_id, dir_id, name, dev, ino, size, mtime_ns, ctime_ns, nlink, datahash, iscc, "
    "mediatype, mode, meta_name, description, metahash, filesize, characters, width, height, "
    "duration, extractor, issues, named_by_file, blocks, indexed_at"
)
_ADD_ROW = "(" + ",".join("?" * len(_ADD_COLUMNS.split(","))) + ")"
#: New files per ``INSERT`` (25 parameters each): a scan's job gathers up to 512. Each
#: statement journals the pages it changes (the datahash index's at random), so a job in one
#: statement journals each page once, not once per hundred files.
_ADD_CHUNK = 512
#: Their units per ``INSERT`` (5 parameters each).
_UNIT_CHUNK = 200


def _chunks(ids: Sequence[int]) -> Iterator[tuple[list[int], str]]:
    """``ids`` in chunks for ``IN (...)`` lists: each chunk and its ``?,?,...`` placeholders."""
    for start in range(0, len(ids), _IN_CHUNK):
        chunk = list(ids[start : start + _IN_CHUNK])
        yield chunk, ",".join("?" * len(chunk))


class SqliteStore(Database):
    """A :class:`isccd.store.base.Store` in one SQLite database file.

    Opening it is :class:`~isccd.store.database.Database`'s (and raises what it raises). Not
    thread-safe: use it from the thread that opened it.
    """

    @property
    def shared(self) -> bool:
        """One host's database: no other daemon writes it."""
        return False

    def exclusive(self) -> None:
        """Nothing to do: a write transaction holds SQLite's write lock from its start."""

    # -- reading files -------------------------------------------------------------------------

    def _files(self, where: str, params: Sequence[Any] = ()) -> list[StoredFile]:
        rows = self._exec(f"SELECT {FILE_COLUMNS} FROM {FILE_FROM} WHERE {where}", params)  # noqa: S608 -- fixed fragments; values are bound
        rows_list = rows.fetchall()
        if not rows_list:
            return []
        units = self._units_of([row[0] for row in rows_list])
        name, host = from_fs_once(), self._host  # the few roots and directories, decoded once
        return [file_from_row(row, units.get(row[0], ()), host, name) for row in rows_list]

    def _units_of(self, ids: Sequence[int]) -> dict[int, tuple[Unit, ...]]:
        found: dict[int, list[Unit]] = {}
        types, profile, names = _UNIT_TYPES, self._profile_name, self._profile_names
        for chunk, marks in _chunks(ids):
            sql = "SELECT file_id, type, iscc, digest, profile_id FROM units WHERE file_id IN "
            rows = self._exec(f"{sql}({marks})", chunk).fetchall()
            for file_id, type_, iscc, digest, profile_id in rows:
                # A BLOB is read as bytes; a file's few profiles are named from the cache.
                named = names.get(profile_id) or profile(profile_id)
                unit = Unit(types[type_], iscc, digest, named)
                if (some := found.get(file_id)) is None:
                    found[file_id] = [unit]
                else:
                    some.append(unit)
        return {k: sort_units(v) if len(v) > 1 else (v[0],) for k, v in found.items()}

    def file_at(self, path: str) -> StoredFile | None:
        """The live file at ``path``."""
        directory, name = split_path(path)
        found = self._files(
            "d.path = ? AND f.name = ? AND f.removed_at IS NULL", (to_fs(directory), to_fs(name))
        )
        return found[0] if found else None

    def files_by_id(self, ids: Sequence[int]) -> list[StoredFile]:
        """Files with these ids, in the given order."""
        by_id: dict[int, StoredFile] = {}
        for chunk, marks in _chunks(ids):
            for stored in self._files(f"f.id IN ({marks})", chunk):
                by_id[stored.id] = stored
        return [by_id[i] for i in ids if i in by_id]

    def listed_files(self, ids: Sequence[int]) -> list[ListedFile]:
        """Files with these ids as a listing shows them, in the given order."""
        name = from_fs_once()
        by_id: dict[int, ListedFile] = {}
        for chunk, marks in _chunks(ids):
            rows = self._exec(
                f"SELECT {LISTED_COLUMNS} FROM {FILE_FROM} WHERE f.id IN ({marks})",  # noqa: S608 -- fixed fragments; values are bound
                chunk,
            ).fetchall()
            for listed in self._listed(rows, name):
                by_id[listed.id] = listed
        return [by_id[i] for i in ids if i in by_id]

    def _listed(
        self, rows: Sequence[Sequence[Any]], name: Callable[[bytes], str]
    ) -> list[ListedFile]:
        """Listed files from rows of :data:`LISTED_COLUMNS`, with their units."""
        units: dict[int, list[ListedUnit]] = {}
        types = _UNIT_TYPES
        for chunk, marks in _chunks([row[0] for row in rows]):
            sql = f"SELECT file_id, type, iscc, digest FROM units WHERE file_id IN ({marks})"  # noqa: S608 -- placeholders only
            for file_id, type_, iscc, digest in self._exec(sql, chunk).fetchall():
                unit = (types[type_], iscc, digest)
                if (some := units.get(file_id)) is None:
                    units[file_id] = [unit]
                else:
                    some.append(unit)
        host = self._host
        listed = []
        for row in rows:
            found = units.get(row[0])
            listed.append(listed_from_row(row, in_code_order(found) if found else (), host, name))
        return listed

    def files_by_identity(self, dev: int, ino: int) -> list[StoredFile]:
        """Live files with this identity."""
        return self._files(
            "f.dev = ? AND f.ino = ? AND f.removed_at IS NULL ORDER BY f.id", (dev, ino)
        )

    def files_by_datahash(self, datahash: str, *, fleet: bool = False) -> list[StoredFile]:
        """Live files with this datahash."""
        return self.files_by_datahashes([datahash]).get(datahash, [])

    def files_by_datahashes(
        self, datahashes: Sequence[str], *, fleet: bool = False
    ) -> dict[str, list[StoredFile]]:
        """Live files with each datahash."""
        found: dict[str, list[StoredFile]] = {}
        for start in range(0, len(datahashes), _IN_CHUNK):
            chunk = [bytes.fromhex(h) for h in datahashes[start : start + _IN_CHUNK]]
            marks = ",".join("?" * len(chunk))
            where = f"f.datahash IN ({marks}) AND f.removed_at IS NULL ORDER BY f.id"
            for stored in self._files(where, chunk):
                found.setdefault(stored.record.datahash or "", []).append(stored)
        return found

    def listed_by_datahashes(
        self, datahashes: Sequence[str], *, fleet: bool = False
    ) -> dict[str, list[ListedFile]]:
        """Live files with each datahash, as a listing shows them, each datahash's in id order
        (each file read by the statement that finds it live with that datahash)."""
        name = from_fs_once()
        found: dict[str, list[ListedFile]] = {}
        for start in range(0, len(datahashes), _IN_CHUNK):
            chunk = [bytes.fromhex(h) for h in datahashes[start : start + _IN_CHUNK]]
            marks = ",".join("?" * len(chunk))
            rows = self._exec(
                f"SELECT {LISTED_COLUMNS}, f.datahash FROM {FILE_FROM} "  # noqa: S608 -- fixed fragments; values are bound
                f"WHERE f.datahash IN ({marks}) AND f.removed_at IS NULL ORDER BY f.id",
                chunk,
            ).fetchall()
            listed = self._listed([row[:-1] for row in rows], name)
            for row, one in zip(rows, listed, strict=True):
                found.setdefault(bytes(row[-1]).hex(), []).append(one)
        return found

    def files_by_instance(self, digest: bytes, *, fleet: bool = False) -> list[StoredFile]:
        """Live files whose datahash begins with ``digest`` (a range of the datahash index)."""
        low, high = instance_range(digest)
        where = "f.datahash >= ? AND f.datahash < ? AND f.removed_at IS NULL ORDER BY f.id"
        return self._files(where, (low, high))

    def file_keys(self, ids: Sequence[int]) -> dict[int, FileKey]:
        """Identity and datahash of the live files among ``ids``."""
        found: dict[int, FileKey] = {}
        for chunk, marks in _chunks(ids):
            found.update(self._keys(f"id IN ({marks})", chunk))
        return found

    def related_keys(
        self, identity: tuple[int, int] | None, datahash: str | None
    ) -> dict[int, FileKey]:
        """Keys of the live files with this identity or this datahash (one statement, two
        index lookups: :meth:`related_keys_many` of the one pair)."""
        return self.related_keys_many(
            [identity] if identity is not None else [], [datahash] if datahash is not None else []
        )

    def related_keys_many(
        self, identities: Sequence[tuple[int, int]], datahashes: Sequence[str]
    ) -> dict[int, FileKey]:
        """Keys of the live files with one of these device numbers and inode numbers, or one
        of these datahashes, by id (a superset of :meth:`related_keys` of each pair: the
        caller picks each file's own). One statement per 125 of each, two index lookups:
        each term repeats the partial indexes' condition, which is what lets SQLite search
        both indexes rather than scan the table."""
        idents = sorted(set(identities))
        hashes = sorted({bytes.fromhex(h) for h in datahashes})
        keys: dict[int, FileKey] = {}
        for start in range(0, max(len(idents), len(hashes)), _IN_CHUNK // 4):
            some = idents[start : start + _IN_CHUNK // 4]
            devs, inos = sorted({d for d, _ in some}), sorted({i for _, i in some})
            blobs = hashes[start : start + _IN_CHUNK // 4]
            terms = []
            if some:
                terms.append(
                    f"(removed_at IS NULL AND dev IN ({','.join('?' * len(devs))}) "
                    f"AND ino IN ({','.join('?' * len(inos))}))"
                )
            if blobs:
                terms.append(f"(removed_at IS NULL AND datahash IN ({','.join('?' * len(blobs))}))")
            keys.update(self._keys(f"({' OR '.join(terms)})", [*devs, *inos, *blobs]))
        return dict(sorted(keys.items()))

    def live_paths(self, paths: Sequence[str]) -> set[str]:
        """The paths among ``paths`` that hold a live file (one index search per directory)."""
        by_dir: dict[str, list[bytes]] = {}
        for path in paths:
            directory, name = split_path(path)
            by_dir.setdefault(directory, []).append(to_fs(name))
        found: set[str] = set()
        for directory, names in by_dir.items():
            for start in range(0, len(names), _IN_CHUNK):
                chunk = names[start : start + _IN_CHUNK]
                rows = self._exec(
                    "SELECT f.name FROM dirs d JOIN files f ON f.dir_id = d.id "  # noqa: S608 -- fixed fragments; values are bound
                    "WHERE d.path = ? AND f.removed_at IS NULL "
                    f"AND f.name IN ({','.join('?' * len(chunk))})",
                    [to_fs(directory), *chunk],
                )
                found.update(join_path(directory, from_fs(name)) for (name,) in rows)
        return found

    def _keys(self, where: str, params: Sequence[Any]) -> dict[int, FileKey]:
        rows = self._exec(
            "SELECT id, dev, ino, datahash, coalesce(filesize, size) FROM files "  # noqa: S608 -- fixed fragments; values are bound
            f"WHERE removed_at IS NULL AND {where}",
            params,
        )
        return {
            file_id: FileKey(
                (dev, ino) if dev is not None else None,
                bytes(datahash).hex() if datahash is not None else None,
                size,
                self._host,
            )
            for file_id, dev, ino, datahash, size in rows
        }

    def unit_digests_of(self, ids: Sequence[int], unit_type: UnitType) -> dict[int, bytes]:
        """Digests of one unit type of the live files among ``ids``."""
        found: dict[int, bytes] = {}
        for chunk, marks in _chunks(ids):
            sql = "SELECT u.file_id, u.digest FROM units u JOIN files f ON f.id = u.file_id WHERE "
            for file_id, digest in self._exec(
                f"{sql}u.type = ? AND f.removed_at IS NULL AND u.file_id IN ({marks})",
                (unit_type.value, *chunk),
            ):
                found[file_id] = bytes(digest)
        return found

    def tombstones_at(self, path: str) -> list[StoredFile]:
        """Tombstones at ``path``, most recent first."""
        directory, name = split_path(path)
        return self._files(
            "d.path = ? AND f.name = ? AND f.removed_at IS NOT NULL "
            "ORDER BY f.removed_at DESC, f.id DESC",
            (to_fs(directory), to_fs(name)),
        )

    def validators_in_dir(self, directory: str) -> dict[str, FileStat]:
        """Name -> validators of the live files in ``directory``."""
        rows = self._exec(
            "SELECT f.name, f.dev, f.ino, f.size, f.mtime_ns, f.ctime_ns, f.nlink "
            "FROM files f JOIN dirs d ON d.id = f.dir_id "
            "WHERE d.path = ? AND f.removed_at IS NULL",
            (to_fs(directory),),
        )
        return {
            os.fsdecode(name): FileStat(dev, ino, size, mtime, ctime, nlink or 1)
            if dev is not None
            else FileStat(-1, -1, -1, -1, -1)
            for name, dev, ino, size, mtime, ctime, nlink in rows
        }

    def _dir_range(self, path: str) -> tuple[str, tuple[bytes, ...]]:
        if path == "/":
            return "1", ()
        top = to_fs(path)
        return "(d.path = ? OR (d.path >= ? AND d.path < ?))", (top, top + b"/", top + b"0")

    def dirs_under(self, path: str) -> list[str]:
        """Directories at or below ``path`` holding live files."""
        cond, params = self._dir_range(path)
        rows = self._exec(
            f"SELECT d.path FROM dirs d WHERE {cond} AND EXISTS "  # noqa: S608 -- fixed fragments
            "(SELECT 1 FROM files f WHERE f.dir_id = d.id AND f.removed_at IS NULL) "
            "ORDER BY d.path",
            params,
        )
        return [from_fs(row[0]) for row in rows]

    def files_under(self, path: str) -> list[StoredFile]:
        """Live files at or below ``path``."""
        cond, params = self._dir_range(path)
        directory, name = split_path(path)
        return self._files(
            f"f.removed_at IS NULL AND ({cond} OR (d.path = ? AND f.name = ?)) "
            "ORDER BY d.path, f.name",
            (*params, to_fs(directory), to_fs(name)),
        )

    def folder_files(
        self, chunk: int = 65536, *, fleet: bool = False
    ) -> Iterator[list[FolderFile]]:
        """Every live file's place, size, datahash and identity, in chunks by id."""
        name = from_fs_once()  # directories and roots, decoded once each

        host = self._host
        last = -1
        while True:
            rows = self._exec(
                "SELECT f.id, r.path, d.path, f.name, coalesce(f.filesize, f.size), f.datahash, "
                "f.dev, f.ino FROM files f JOIN dirs d ON d.id = f.dir_id "
                "JOIN roots r ON r.id = f.root_id "
                "WHERE f.id > ? AND f.removed_at IS NULL ORDER BY f.id LIMIT ?",
                (last, chunk),
            ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [
                FolderFile(
                    file_id,
                    host,
                    name(root),
                    name(directory),
                    from_fs(base),
                    size,
                    None if digest is None else bytes(digest),
                    None if dev is None or ino is None else (dev, ino),
                )
                for file_id, root, directory, base, size, digest, dev, ino in rows
            ]

    def issues_under(
        self, path: str, *, actionable: bool = False
    ) -> list[tuple[str, tuple[FileIssue, ...]]]:
        """Path and issues of the live files with issues at or below ``path``."""
        cond, params = self._dir_range(path)
        directory, name = split_path(path)
        rows = self._exec(
            "SELECT d.path, f.name, f.issues FROM files f JOIN dirs d ON d.id = f.dir_id "  # noqa: S608 -- fixed fragments; values are bound
            f"WHERE f.issues IS NOT NULL AND f.removed_at IS NULL "
            f"AND ({cond} OR (d.path = ? AND f.name = ?)) "
            + (ACTIONABLE.format(contains="instr") if actionable else "")
            + "ORDER BY d.path, f.name",
            (*params, to_fs(directory), to_fs(name)),
        )
        return issues_of(rows, actionable=actionable)

    def stale_units(self, is_stale: Callable[[str], bool], under: str) -> list[StaleUnits]:
        """Live files below ``under`` with units made or skipped under a stale profile."""
        stale_ids = [
            pid
            for pid, profile in self._exec("SELECT id, profile FROM profiles")
            if is_stale(profile)
        ]
        if not stale_ids:
            return []
        cond, params = self._dir_range(under)
        stale: dict[int, set[UnitType]] = {}
        for table in ("units", "skips"):
            for chunk, marks in _chunks(stale_ids):
                rows = self._exec(
                    f"SELECT u.file_id, u.type FROM {table} u JOIN files f ON f.id = u.file_id "  # noqa: S608 -- fixed fragments
                    f"JOIN dirs d ON d.id = f.dir_id WHERE u.profile_id IN ({marks}) "
                    f"AND f.removed_at IS NULL AND {cond}",
                    (*chunk, *params),
                )
                for file_id, unit_type in rows:
                    stale.setdefault(file_id, set()).add(UnitType(unit_type))
        files = self.files_by_id(sorted(stale))
        return [StaleUnits(f, frozenset(stale[f.id])) for f in files]

    def unit_codes(
        self, unit_type: UnitType, chunk: int = 65536, *, fleet: bool = False
    ) -> Iterator[tuple[list[int], bytes]]:
        """The live files' ids and 64-bit codes of one unit type, in chunks.

        SQLite cuts each digest to its first 8 bytes (a shorter one is padded here), and the units
        are read alone, not joined to their files (a lookup of a wide row for each unit: a
        quarter of the time): the tombstones, whose units are kept, are read first from
        their own index, 8 bytes each, and left out of each chunk."""
        dead = array("q", sorted(
            row[0] for row in self._exec("SELECT id FROM files WHERE removed_at IS NOT NULL")
        ))  # fmt: skip
        last = -1
        ids: list[int] = []
        codes: list[bytes] = []
        while True:
            rows = self._exec(
                "SELECT file_id, substr(digest, 1, 8) FROM units "
                "WHERE type = ? AND file_id > ? ORDER BY file_id LIMIT ?",
                (unit_type.value, last, chunk),
            ).fetchall()
            if not rows:
                break
            first, last = rows[0][0], rows[-1][0]
            gone = set(dead[bisect_left(dead, first) : bisect_right(dead, last)])
            if gone:
                rows = [row for row in rows if row[0] not in gone]
            cut = [row[1] for row in rows]
            if any(len(code) != 8 for code in cut):  # a digest shorter than 64 bits
                cut = [bytes(code).ljust(8, b"\0") for code in cut]
            if not ids and len(rows) == chunk:  # no tombstone here: the chunk as it came
                yield [row[0] for row in rows], b"".join(cut)
                continue
            ids += [row[0] for row in rows]
            codes += cut
            while len(ids) >= chunk:
                yield ids[:chunk], b"".join(codes[:chunk])
                ids, codes = ids[chunk:], codes[chunk:]
        if ids:
            yield ids, b"".join(codes)

    def exact_datahashes(self, *, fleet: bool = False) -> list[str]:
        """Datahashes held by more than one live identity."""
        # The datahashes of more than one live name first, from the index alone (most files
        # have their own): only their rows are read for the identities that tell links apart.
        rows = self._exec(
            "SELECT datahash FROM (SELECT DISTINCT datahash, dev, ino FROM files "
            "WHERE removed_at IS NULL AND datahash IN (SELECT datahash FROM files "
            "WHERE removed_at IS NULL AND datahash IS NOT NULL "
            "GROUP BY datahash HAVING count(*) > 1)) "
            "GROUP BY datahash HAVING count(*) > 1 ORDER BY datahash"
        )
        return [bytes(row[0]).hex() for row in rows]

    def ids_by_size(self, at_least: int, below: int) -> list[int]:
        """Live files by size (a full scan: asked only when the policy's ``min_size``
        changes)."""
        rows = self._exec(
            "SELECT id FROM files WHERE removed_at IS NULL "
            "AND coalesce(filesize, size) >= ? AND coalesce(filesize, size) < ? ORDER BY id",
            (at_least, below),
        )
        return [int(row[0]) for row in rows]

    def live_by_root(self) -> dict[str, int]:
        """Live files per root, from the counters the schema's triggers keep."""
        rows = self._exec("SELECT path, live FROM roots WHERE live > 0 ORDER BY path")
        return {from_fs(path): int(live) for path, live in rows}

    def root_device(self, root: str) -> int | None:
        """The recorded ``st_dev`` of a root."""
        row = self._exec("SELECT dev FROM roots WHERE path = ?", (to_fs(root),)).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else None

    # -- writing files -------------------------------------------------------------------------

    def _path_values(self, path: str) -> tuple[int, bytes]:
        """The ``dir_id`` and ``name`` columns of a path."""
        directory, name = split_path(path)
        return self._dir_id(directory), to_fs(name)

    def _record_values(self, root: str, record: FileRecord) -> tuple[Any, ...]:
        return (self._root_id(root), *self._path_values(record.path), *record_columns(record))

    def _write_skips(self, file_id: int, record: FileRecord, *, fresh: bool = False) -> None:
        if not fresh:
            self._exec("DELETE FROM skips WHERE file_id = ?", (file_id,))
        rows = [
            (file_id, unit_type.value, self._profile_id(profile))
            for unit_type, profile in skipped_units(record.issues).items()
        ]
        if rows:
            self._guarded(
                self._db.executemany,
                "INSERT INTO skips (file_id, type, profile_id) VALUES (?,?,?)",
                rows,
            )

    def _replace_units(self, file_id: int, units: Iterable[Unit]) -> None:
        self._exec("DELETE FROM units WHERE file_id = ?", (file_id,))
        rows = [
            (file_id, u.type.value, u.iscc, u.digest, self._profile_id(u.profile)) for u in units
        ]
        if rows:
            self._guarded(
                self._db.executemany,
                "INSERT INTO units (file_id, type, iscc, digest, profile_id) VALUES (?,?,?,?,?)",
                rows,
            )

    def add_file(self, root: str, record: FileRecord, now: float) -> int:
        """Store a new live file; return its id."""
        return self.add_files(root, [record], now)[0]

    def add_files(self, root: str, records: Sequence[FileRecord], now: float) -> list[int]:
        """Store new live files, in order; return their ids (one statement per hundred files,
        one for all their units)."""
        ids: list[int] = []
        for start in range(0, len(records), _ADD_CHUNK):
            chunk = records[start : start + _ADD_CHUNK]
            root_id = self._root_id(root)
            values = [
                (root_id, *self._path_values(record.path), *record_columns(record), now)
                for record in chunk
            ]
            rows = self._exec(
                f"INSERT INTO files ({_ADD_COLUMNS}) VALUES "  # noqa: S608 -- fixed fragments; values are bound
                + ",".join([_ADD_ROW] * len(chunk))
                + " RETURNING id, dir_id, name",
                [v for row in values for v in row],
            ).fetchall()
            # RETURNING gives the rows in no promised order: each is found by its path.
            by_path = {(dir_id, bytes(name)): file_id for file_id, dir_id, name in rows}
            ids += [by_path[(row[1], row[2])] for row in values]
        if any(a >= b for a, b in itertools.pairwise(ids)):
            raise StoreError("new file ids out of order")  # never seen: AUTOINCREMENT counts up
        # A job's units share a few profiles: each interned once, not once per unit (in the
        # order they come, as the units' rows would intern them).
        named = dict.fromkeys(u.profile for r in records for u in r.units)
        profiles = {p: self._profile_id(p) for p in named}
        units = [
            v
            for file_id, record in zip(ids, records, strict=True)
            for u in record.units
            for v in (file_id, u.type._value_, u.iscc, u.digest, profiles[u.profile])
        ]
        # Many rows to a statement: inside the owner's savepoint, a statement per row (as
        # executemany runs them) costs several times more.
        for start in range(0, len(units), _UNIT_CHUNK * 5):
            rows = units[start : start + _UNIT_CHUNK * 5]
            self._exec(
                "INSERT INTO units (file_id, type, iscc, digest, profile_id) VALUES "  # noqa: S608 -- fixed fragments; values are bound
                + ",".join(["(?,?,?,?,?)"] * (len(rows) // 5)),
                rows,
            )
        # Ids are never used again (AUTOINCREMENT): a new file has no units or skips to replace.
        for file_id, record in zip(ids, records, strict=True):
            if record.issues:
                self._write_skips(file_id, record, fresh=True)
        return ids

    def update_file(self, file_id: int, root: str, record: FileRecord, now: float) -> None:
        """Replace a live file's record."""
        values = self._record_values(root, record)
        self._exec(
            "UPDATE files SET root_id=?, dir_id=?, name=?, dev=?, ino=?, size=?, mtime_ns=?, "
            "ctime_ns=?, nlink=?, datahash=?, iscc=?, mediatype=?, mode=?, meta_name=?, "
            "description=?, metahash=?, filesize=?, characters=?, width=?, height=?, duration=?, "
            "extractor=?, issues=?, named_by_file=?, blocks=?, indexed_at=? "
            "WHERE id = ? AND removed_at IS NULL",
            (*values, now, file_id),
        )
        self._replace_units(file_id, record.units)
        self._write_skips(file_id, record)

    def move_file(self, file_id: int, root: str, path: str, stat: FileStat) -> None:
        """Rename a live file, keeping its units."""
        directory, name = split_path(path)
        self._exec(
            "UPDATE files SET root_id=?, dir_id=?, name=?, dev=?, ino=?, size=?, mtime_ns=?, "
            "ctime_ns=?, nlink=?, blocks=coalesce(?, blocks) WHERE id = ? AND removed_at IS NULL",
            (
                self._root_id(root),
                self._dir_id(directory),
                to_fs(name),
                stat.dev,
                stat.ino,
                stat.size,
                stat.mtime_ns,
                stat.ctime_ns,
                stat.nlink,
                stat.blocks,
                file_id,
            ),
        )

    def remove_file(self, file_id: int, now: float) -> None:
        """Make a live file a tombstone and drop its near relations."""
        self._exec(
            "UPDATE files SET removed_at = ? WHERE id = ? AND removed_at IS NULL", (now, file_id)
        )
        self._exec("DELETE FROM near WHERE a = ? OR b = ?", (file_id, file_id))

    def set_root_device(self, root: str, dev: int) -> None:
        """Record the ``st_dev`` of a root."""
        self._exec("UPDATE roots SET dev = ? WHERE id = ?", (dev, self._root_id(root)))

    def rebase_device(self, under: str, old: int, new: int) -> int:
        """Move the live files below ``under`` from device ``old`` to ``new``."""
        cond, params = self._dir_range(under)
        sql = (
            "UPDATE files SET dev = ? WHERE dev = ? AND removed_at IS NULL AND dir_id IN "  # noqa: S608 -- fixed fragments; values are bound
            f"(SELECT d.id FROM dirs d WHERE {cond})"
        )
        cursor = self._exec(sql, (new, old, *params))
        return cursor.rowcount

    def purge_tombstones(self, before: float) -> int:
        """Delete tombstones older than ``before`` and directories no file refers to."""
        cursor = self._exec(
            "DELETE FROM files WHERE removed_at IS NOT NULL AND removed_at < ?", (before,)
        )
        count = cursor.rowcount
        if count:
            self._exec("DELETE FROM dirs WHERE id NOT IN (SELECT dir_id FROM files)")
            self._exec("DELETE FROM roots WHERE id NOT IN (SELECT root_id FROM files)")
            self._forget_interned()
        return count

    # -- near relations ------------------------------------------------------------------------

    def near_of(self, file_id: int) -> list[NearPair]:
        """Relations of one file."""
        rows = self._exec(
            "SELECT a, b, unit, distance FROM near WHERE a = ? "
            "UNION ALL SELECT a, b, unit, distance FROM near WHERE b = ? ORDER BY 1, 2, 3",
            (file_id, file_id),
        )
        units = _UNIT_TYPES
        return [NearPair(a, b, units[unit], distance) for a, b, unit, distance in rows]

    def near_of_many(self, file_ids: Sequence[int], unit: UnitType) -> dict[int, list[NearPair]]:
        """The relations of one unit type of several files."""
        found: dict[int, list[NearPair]] = {}
        units = _UNIT_TYPES
        for chunk, marks in _chunks(sorted(set(file_ids))):
            rows = self._exec(
                f"SELECT a, b, unit, distance FROM near WHERE unit = ? AND a IN ({marks}) "  # noqa: S608 -- fixed fragments; values are bound
                "UNION ALL SELECT a, b, unit, distance FROM near WHERE unit = ? AND b IN "
                f"({marks})",
                (unit.value, *chunk, unit.value, *chunk),
            )
            asked, seen = set(chunk), set()
            for a, b, u, distance in rows:
                if a in asked and b in asked:  # listed by both halves of the union
                    if (a, b) in seen:
                        continue
                    seen.add((a, b))
                pair = NearPair(a, b, units[u], distance)
                if a in asked:
                    found.setdefault(a, []).append(pair)
                if b in asked:
                    found.setdefault(b, []).append(pair)
        return found

    def near_counts(self, file_ids: Sequence[int], unit: UnitType) -> dict[int, int]:
        """How many relations of one unit type each of several files has."""
        counts: dict[int, int] = {}
        for chunk, marks in _chunks(sorted(set(file_ids))):
            rows = self._exec(
                f"SELECT a, count(*) FROM near WHERE unit = ? AND a IN ({marks}) GROUP BY a "  # noqa: S608 -- fixed fragments; values are bound
                f"UNION ALL SELECT b, count(*) FROM near WHERE unit = ? AND b IN ({marks}) "
                "GROUP BY b",
                (unit.value, *chunk, unit.value, *chunk),
            )
            for file_id, n in rows:
                counts[file_id] = counts.get(file_id, 0) + n
        return counts

    def farthest_near(self, wanted: Mapping[int, int], unit: UnitType) -> dict[int, list[NearPair]]:
        """The farthest relations of one unit type of several files, as many as each wants.

        Each file's relations are read at both ends and its farthest chosen here: a file has
        a bounded number of them, and a window over their union costs SQLite two sorts of
        every row read (about 1.4 times as long for a family's files).
        """
        asked = sorted(f for f, n in wanted.items() if n > 0)
        # Per file, ``(-distance, other, a, b)``: farthest first, then the other indexed first.
        ends: dict[int, list[tuple[int, int, int, int]]] = {}
        for chunk, marks in _chunks(asked):
            params = (unit.value, *chunk)
            at_a = f"SELECT a, b, distance FROM near WHERE unit = ? AND a IN ({marks})"  # noqa: S608 -- fixed fragments; values are bound
            for a, b, distance in self._exec(at_a, params):
                ends.setdefault(a, []).append((-distance, b, a, b))
            at_b = f"SELECT a, b, distance FROM near WHERE unit = ? AND b IN ({marks})"  # noqa: S608 -- fixed fragments; values are bound
            for a, b, distance in self._exec(at_b, params):
                ends.setdefault(b, []).append((-distance, a, a, b))
        found: dict[int, list[NearPair]] = {}
        for f in asked:
            if (rows := ends.get(f)) is not None:
                rows.sort()
                found[f] = [NearPair(a, b, unit, -d) for d, _, a, b in rows[: wanted[f]]]
        return found

    def add_near(self, pairs: Sequence[NearPair]) -> None:
        """Insert or update relations."""
        self._guarded(
            self._db.executemany,
            "INSERT INTO near (a, b, unit, distance) VALUES (?,?,?,?) "
            "ON CONFLICT (a, b, unit) DO UPDATE SET distance = excluded.distance",
            [(p.a, p.b, p.unit.value, p.distance) for p in pairs],
        )

    def remove_near(self, pairs: Sequence[NearPair]) -> None:
        """Delete relations."""
        self._guarded(
            self._db.executemany,
            "DELETE FROM near WHERE a = ? AND b = ? AND unit = ?",
            [(p.a, p.b, p.unit.value) for p in pairs],
        )

    def near_pairs(self, *, fleet: bool = False) -> Iterator[NearPair]:
        """All relations (one host's: ``fleet`` changes nothing)."""
        rows = self._exec("SELECT a, b, unit, distance FROM near ORDER BY a, b, unit").fetchall()
        for a, b, unit, distance in rows:
            yield NearPair(a, b, _UNIT_TYPES[unit], distance)

    # -- properties ----------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """The identity of the log's current run, made when a writer last opened the database
        (before any writer did under this isccd: the UUID recorded when it was created)."""
        created = self.get_property(IDENTITY_PROPERTY)
        if not created:
            raise StoreCorruptError(f"the index database {self.path} has no identity recorded")
        return self.get_property(RUN_PROPERTY) or created

    def log_end(self, identity: str) -> int | None:
        """The last seq of the run named ``identity`` (see :meth:`Store.log_end`): the first
        seq of the run after it, less one; the last seq now for the current run."""
        runs = runs_of(self._exec("SELECT name, value FROM properties WHERE name LIKE 'run:%'"))
        if identity not in runs:
            return None
        ordinal = runs[identity][0]
        later = [first for number, first in runs.values() if number == ordinal + 1]
        return later[0] - 1 if later else self.last_seq()

    def get_property(self, name: str) -> str | None:
        """The value recorded under ``name``."""
        row = self._exec("SELECT value FROM properties WHERE name = ?", (name,)).fetchone()
        return str(row[0]) if row is not None else None

    def set_property(self, name: str, value: str) -> None:
        """Record a value in the current transaction."""
        self._exec(
            "INSERT INTO properties (name, value) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (name, value),
        )

    # -- events --------------------------------------------------------------------------------

    def append_event(
        self,
        type: EventType,
        root: str,
        path: str,
        data: Mapping[str, Any],
        now: float,
        *,
        host: str | None = None,
        file_id: int | None = None,
    ) -> Event:
        """Log an event in the current transaction. Every file here is this host's, and no
        other daemon follows the log: ``host`` and ``file_id`` are not stored."""
        text = event_json(data)
        seq = self._exec(
            "INSERT INTO events (type, time, root, path, data) VALUES (?,?,?,?,?)",
            (type.value, now, to_fs(root), to_fs(path), text),
        ).lastrowid  # the seq column is the rowid
        assert seq is not None
        return Event(seq, type, now, root, path, json.loads(text), self._host)

    def append_events(self, events: Sequence[NewEvent]) -> list[Event]:
        """Log events in the current transaction, in order, with one statement."""
        texts = [event_json(e.data) for e in events]
        before = self.last_seq()
        self._guarded(
            self._db.executemany,
            "INSERT INTO events (type, time, root, path, data) VALUES (?,?,?,?,?)",
            [
                (e.type.value, e.time, to_fs(e.root), to_fs(e.path), text)
                for e, text in zip(events, texts, strict=True)
            ],
        )
        # AUTOINCREMENT numbers the rows in insertion order, each above every seq ever used:
        # as many new seqs as rows means they are before+1, before+2, ...
        if self.last_seq() - before != len(events):
            raise StoreError("event seqs out of order")  # never seen: the writer is alone
        # One parse for all: what a subscriber reads back (enum members as their values);
        # plain data is that already.
        mixed = [text for e, text in zip(events, texts, strict=True) if not e.plain]
        parsed = iter(json.loads("[" + ",".join(mixed) + "]"))
        host = self._host
        return [
            Event(n, e.type, e.time, e.root, e.path, e.data if e.plain else next(parsed), host)
            for n, e in enumerate(events, before + 1)
        ]

    def events_since(self, seq: int, limit: int = 1000, *, fleet: bool = False) -> list[Event]:
        """Committed events after ``seq``."""
        rows = self._exec(
            "SELECT seq, type, time, root, path, data FROM events WHERE seq > ? "
            "ORDER BY seq LIMIT ?",
            (seq, limit),
        )
        return [
            Event(s, EventType(t), tm, from_fs(root), from_fs(path), json.loads(data), self._host)
            for s, t, tm, root, path, data in rows
        ]

    def last_seq(self, *, fleet: bool = False) -> int:
        """The highest sequence number ever used."""
        row = self._exec("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        return int(row[0]) if row else 0

    def first_seq(self, *, fleet: bool = False) -> int:
        """The lowest sequence number still logged."""
        row = self._exec("SELECT min(seq) FROM events").fetchone()
        return int(row[0]) if row[0] is not None else self.last_seq() + 1

    def purge_events(self, before: float) -> int:
        """Delete events older than ``before``."""
        return self._exec("DELETE FROM events WHERE time < ?", (before,)).rowcount

    # -- watchlists ----------------------------------------------------------------------------

    def watchlist_version(self) -> int:
        """The count of changes to the watchlists."""
        sql = "SELECT CAST(value AS INTEGER) FROM properties WHERE name = ?"
        return wl.version(self._exec, (sql, (wl.VERSION_PROPERTY,)))

    def watchlists(self) -> list[wl.Watchlist]:
        """Every watchlist, by name."""
        return wl.watchlists(self._exec)

    def watch_units_of_type(self, unit_type: UnitType) -> list[tuple[int, int, bytes]]:
        """``(unit row, watchlist, digest)`` of every reference unit of one type."""
        return wl.units_of_type(self._exec, unit_type)

    def watch_units_by_id(self, ids: Sequence[int]) -> list[wl.WatchUnit]:
        """Reference units by their rows."""
        return wl.units_by_id(self._exec, ids)

    def watch_refs_of_units(self, ids: Sequence[int]) -> list[wl.WatchUnit]:
        """Every unit of the references holding these unit rows."""
        return wl.units_of_refs_of(self._exec, ids)

    def watch_units_of_list(self, name: str) -> list[wl.WatchUnit]:
        """Every unit of a watchlist's references."""
        return wl.units_of_list(self._exec, name)

    def add_watch_refs(
        self, name: str, threshold: int | None, refs: Sequence[wl.NewRef], now: float
    ) -> tuple[int, list[int]]:
        """Add references to a watchlist (made when new), in the current transaction."""

        def insert_id(sql: str, params: Sequence[Any]) -> int:
            return int(self._exec(sql, params).fetchone()[0])

        added = wl.add(self._exec, name, threshold, refs, now, insert_id=insert_id)
        self._watchlists_changed()
        return added

    def remove_watch(self, name: str, ref: int | None) -> int:
        """Remove a watchlist or one of its references, in the current transaction."""
        removed = wl.remove(self._exec, name, ref)
        self._watchlists_changed()
        return removed

    def _watchlists_changed(self) -> None:
        self._exec(
            "UPDATE properties SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE name = ?",
            (wl.VERSION_PROPERTY,),
        )
