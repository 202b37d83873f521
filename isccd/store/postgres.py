"""The PostgreSQL backend of the store: one host's files, units, relations, properties and events
in a database a fleet shares (:mod:`isccd.store.pgdatabase` connects, holds the host's lock,
migrates and runs the transactions; :mod:`isccd.store.pgschema` is the schema).

Queries about paths, directories, roots, properties and the host's own log read the rows of this
store's host only; lookups by file id find any host's files (ids are unique across the fleet);
``fleet=True`` widens exact matches, unit digests, near relations and the log to every host. A
near relation between files of two hosts is stored once for each of them.

Lists are bound in binary (``%b``) and cast to their column's type (``%b::bytea[]``): in text
form psycopg quotes and escapes each element in Python, which for a job's arrays cost more than
the statement (a list of 500 ``bytea`` values: 12 ms, against 0.07 ms in binary).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
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
from isccd.store.database import RUN_PROPERTY
from isccd.store.pgdatabase import PgDatabase, PostgresOptions
from isccd.store.pgruns import log_end
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

__all__ = ["KnownHost", "PostgresOptions", "PostgresStore"]

#: Directory paths are indexed on their first bytes (see :mod:`isccd.store.pgschema`).
_PREFIX = 1024
#: Unit types by their stored name: a dict lookup, not an enum call, for each of the near rows
#: a family of files reads.
_UNIT_TYPES = {t.value: t for t in UnitType}

#: Common table expressions inserting the units and skips of the file ``f`` from arrays.
_CHILDREN = (
    "u AS (INSERT INTO units (file_id, type, iscc, digest, profile_id) SELECT f.id, t.* FROM f, "
    "unnest(%b::text[], %b::text[], %b::bytea[], %b::integer[]) AS t), "
    "s AS (INSERT INTO skips (file_id, type, profile_id) SELECT f.id, t.* FROM f, "
    "unnest(%b::text[], %b::integer[]) AS t)"
)

#: Files stored by one statement of :meth:`PostgresStore.add_files`.
_BATCH = 1000
#: The columns of a new file given as arrays, after its directory's id and its name: those of
#: :func:`~isccd.store.rows.record_columns`, with their types.
_ADD_TYPES = (
    "bigint", "bytea", "bigint", "bigint", "bigint", "bigint", "bigint", "bigint", "bytea",
    "text", "text", "text", "text", "text", "text", "bigint", "bigint", "bigint", "bigint",
    "double precision", "text", "text", "boolean", "bigint",
)  # fmt: skip
_ADD_ARRAYS = len(_ADD_TYPES)
_DURATION = 19  # its index in them
_ADD_NAMES = (
    "dir_id, name, dev, ino, size, mtime_ns, ctime_ns, nlink, datahash, iscc, mediatype, mode, "
    "meta_name, description, metahash, filesize, characters, width, height, duration, "
    "extractor, issues, named_by_file, blocks"
)
#: :meth:`PostgresStore.add_files` of a batch: the files from arrays, inserted in their order
#: (``o``), each found again by its path (``m``) for its units and skips (arrays naming their
#: file by its ``o``); ``(o, id)`` of each file.
_ADD_UNNEST = ", ".join(f"%b::{t}[]" for t in _ADD_TYPES)
_ADD_FILES = (
    f"WITH a AS (SELECT * FROM unnest({_ADD_UNNEST}) "  # noqa: S608 -- fixed fragments; values are bound
    f"WITH ORDINALITY AS a({_ADD_NAMES}, o)), "
    f"f AS (INSERT INTO files (host, root_id, {_ADD_NAMES}, indexed_at) "
    f"SELECT %s, %s, {_ADD_NAMES}, %s FROM a ORDER BY o RETURNING id, dir_id, name), "
    "m AS (SELECT a.o, f.id FROM f JOIN a ON a.dir_id = f.dir_id AND a.name = f.name), "
    "u AS (INSERT INTO units (file_id, type, iscc, digest, profile_id) "
    "SELECT m.id, c.type, c.iscc, c.digest, c.profile_id FROM unnest(%b::bigint[], %b::text[], "
    "%b::text[], %b::bytea[], %b::integer[]) AS c(o, type, iscc, digest, profile_id) "
    "JOIN m ON m.o = c.o), "
    "s AS (INSERT INTO skips (file_id, type, profile_id) SELECT m.id, c.type, c.profile_id "
    "FROM unnest(%b::bigint[], %b::text[], %b::integer[]) AS c(o, type, profile_id) "
    "JOIN m ON m.o = c.o) "
    "SELECT o, id FROM m"
)


@dataclass(frozen=True, slots=True)
class KnownHost:
    """A host that opened the database, as the database last heard of it.

    Attributes:
        name: Its host name.
        heard: Unix time of its last commit of events, heartbeat or opening (``None`` if
            never).
        last_seq: The highest sequence number of its log.
    """

    name: str
    heard: float | None
    last_seq: int


class PostgresStore(PgDatabase):
    """A :class:`isccd.store.base.Store` for one host in a shared PostgreSQL database.

    Opening it is :class:`~isccd.store.pgdatabase.PgDatabase`'s (and raises what it raises).
    Not thread-safe: use it from the thread that opened it.
    """

    # -- reading files -------------------------------------------------------------------------

    def _files(self, where: str, params: Sequence[Any] = ()) -> list[StoredFile]:
        rows = self._exec(
            f"SELECT {FILE_COLUMNS}, f.host FROM {FILE_FROM} WHERE {where}",  # noqa: S608 -- fixed fragments; values are bound
            params,
        ).fetchall()
        if not rows:
            return []
        units = self._units_of([row[0] for row in rows])
        return [file_from_row(row[:-1], units.get(row[0], ()), row[-1]) for row in rows]

    def _units_of(self, ids: Sequence[int]) -> dict[int, tuple[Unit, ...]]:
        found: dict[int, list[Unit]] = {}
        rows = self._exec(
            "SELECT file_id, type, iscc, digest, profile_id FROM units "
            "WHERE file_id = ANY(%b::bigint[])",
            (list(ids),),
        )
        for file_id, type_, iscc, digest, profile_id in rows.fetchall():
            unit = Unit(UnitType(type_), iscc, bytes(digest), self._profile_name(profile_id))
            found.setdefault(file_id, []).append(unit)
        return {k: sort_units(v) for k, v in found.items()}

    def _at(self, path: str) -> tuple[str, tuple[Any, ...]]:
        """The condition for rows at ``path`` on this host."""
        directory, name = split_path(path)
        dir_bytes = to_fs(directory)
        return (
            "d.host = %s AND sha256(d.path) = sha256(%s) AND f.name = %s",
            (self._host, dir_bytes, to_fs(name)),
        )

    def file_at(self, path: str) -> StoredFile | None:
        """The live file at ``path``."""
        cond, params = self._at(path)
        found = self._files(f"{cond} AND f.removed_at IS NULL", params)
        return found[0] if found else None

    def files_by_id(self, ids: Sequence[int]) -> list[StoredFile]:
        """Files with these ids, in the given order."""
        if not ids:
            return []
        by_id = {s.id: s for s in self._files("f.id = ANY(%b::bigint[])", (list(ids),))}
        return [by_id[i] for i in ids if i in by_id]

    def listed_files(self, ids: Sequence[int]) -> list[ListedFile]:
        """Files with these ids as a listing shows them, in the given order."""
        if not ids:
            return []
        rows = self._exec(
            f"SELECT {LISTED_COLUMNS}, f.host FROM {FILE_FROM} WHERE f.id = ANY(%b::bigint[])",  # noqa: S608 -- fixed fragments; values are bound
            (list(ids),),
        ).fetchall()
        by_id = {listed.id: listed for listed in self._listed(rows)}
        return [by_id[i] for i in ids if i in by_id]

    def _listed(self, rows: Sequence[Sequence[Any]]) -> list[ListedFile]:
        """Listed files from rows of :data:`LISTED_COLUMNS` and the host, with their units."""
        if not rows:
            return []
        name = from_fs_once()
        units: dict[int, list[ListedUnit]] = {}
        found = self._exec(
            "SELECT file_id, type, iscc, digest FROM units WHERE file_id = ANY(%b::bigint[])",
            ([row[0] for row in rows],),
        )
        for file_id, type_, iscc, digest in found.fetchall():
            units.setdefault(file_id, []).append((UnitType(type_), iscc, bytes(digest)))
        return [
            listed_from_row(row[:-1], in_code_order(units.get(row[0], [])), row[-1], name)
            for row in rows
        ]

    def files_by_identity(self, dev: int, ino: int) -> list[StoredFile]:
        """Live files on this host with this identity."""
        return self._files(
            "f.host = %s AND f.dev = %s AND f.ino = %s AND f.removed_at IS NULL ORDER BY f.id",
            (self._host, dev, ino),
        )

    def files_by_datahash(self, datahash: str, *, fleet: bool = False) -> list[StoredFile]:
        """Live files with this datahash (an index lookup), on this host or every host."""
        return self.files_by_datahashes([datahash], fleet=fleet).get(datahash, [])

    def files_by_datahashes(
        self, datahashes: Sequence[str], *, fleet: bool = False
    ) -> dict[str, list[StoredFile]]:
        """Live files with each datahash (index lookups, one round trip per thousand)."""
        found: dict[str, list[StoredFile]] = {}
        for start in range(0, len(datahashes), 1000):
            where = "f.datahash = ANY(%b::bytea[]) AND f.removed_at IS NULL"
            params: tuple[Any, ...] = (
                [bytes.fromhex(h) for h in datahashes[start : start + 1000]],
            )
            if not fleet:
                where, params = f"{where} AND f.host = %s", (*params, self._host)
            for stored in self._files(f"{where} ORDER BY f.id", params):
                found.setdefault(stored.record.datahash or "", []).append(stored)
        return found

    def listed_by_datahashes(
        self, datahashes: Sequence[str], *, fleet: bool = False
    ) -> dict[str, list[ListedFile]]:
        """Live files with each datahash, as a listing shows them, each datahash's in id order
        (this host's, or every host's; each file read by the statement that finds it live
        with that datahash)."""
        where = "f.datahash = ANY(%b::bytea[]) AND f.removed_at IS NULL"
        params: tuple[Any, ...] = ([bytes.fromhex(h) for h in datahashes],)
        if not fleet:
            where, params = f"{where} AND f.host = %s", (*params, self._host)
        rows = self._exec(
            f"SELECT {LISTED_COLUMNS}, f.host, f.datahash FROM {FILE_FROM} "  # noqa: S608 -- fixed fragments; values are bound
            f"WHERE {where} ORDER BY f.id",
            params,
        ).fetchall()
        found: dict[str, list[ListedFile]] = {}
        for row, listed in zip(rows, self._listed([row[:-1] for row in rows]), strict=True):
            found.setdefault(bytes(row[-1]).hex(), []).append(listed)
        return found

    def files_by_instance(self, digest: bytes, *, fleet: bool = False) -> list[StoredFile]:
        """Live files whose datahash begins with ``digest`` (a range of the datahash index),
        on this host or every host."""
        low, high = instance_range(digest)
        where = "f.datahash >= %s AND f.datahash < %s AND f.removed_at IS NULL"
        params: tuple[Any, ...] = (low, high)
        if not fleet:
            where, params = f"{where} AND f.host = %s", (*params, self._host)
        return self._files(f"{where} ORDER BY f.id", params)

    def file_keys(self, ids: Sequence[int]) -> dict[int, FileKey]:
        """Identity and datahash of the live files among ``ids`` (of any host)."""
        if not ids:
            return {}
        return self._keys("id = ANY(%b::bigint[])", (list(ids),))

    def related_keys(
        self, identity: tuple[int, int] | None, datahash: str | None
    ) -> dict[int, FileKey]:
        """Keys of this host's live files with this identity and of the fleet's with this
        datahash (:meth:`related_keys_many` of the one pair)."""
        return self.related_keys_many(
            [identity] if identity is not None else [], [datahash] if datahash is not None else []
        )

    def related_keys_many(
        self, identities: Sequence[tuple[int, int]], datahashes: Sequence[str]
    ) -> dict[int, FileKey]:
        """Keys of this host's live files with one of these device and inode numbers, and of
        the fleet's with one of these datahashes (one round trip; a superset of
        :meth:`related_keys` of each pair: the caller picks each file's own)."""
        if not identities and not datahashes:
            return {}
        return self._keys(
            "((host = %s AND dev = ANY(%b::bigint[]) AND ino = ANY(%b::bigint[])) "
            "OR datahash = ANY(%b::bytea[])) ORDER BY id",
            (
                self._host,
                sorted({dev for dev, _ in identities}),
                sorted({ino for _, ino in identities}),
                sorted({bytes.fromhex(h) for h in datahashes}),
            ),
        )

    def live_paths(self, paths: Sequence[str]) -> set[str]:
        """The paths among ``paths`` that hold a live file of this host (one round trip: their
        directories and names, then the pairs)."""
        if not paths:
            return set()
        wanted = {(to_fs(d), to_fs(n)) for d, n in map(split_path, paths)}
        rows = self._exec(
            "SELECT d.path, f.name FROM dirs d JOIN files f ON f.dir_id = d.id "
            "WHERE d.host = %s AND sha256(d.path) = ANY(%b::bytea[]) AND f.removed_at IS NULL "
            "AND f.name = ANY(%b::bytea[])",
            (
                self._host,
                sorted({hashlib.sha256(d).digest() for d, _ in wanted}),
                sorted({n for _, n in wanted}),
            ),
        ).fetchall()
        return {
            join_path(from_fs(bytes(d)), from_fs(bytes(n)))
            for d, n in rows
            if (bytes(d), bytes(n)) in wanted
        }

    def _keys(self, where: str, params: Sequence[Any]) -> dict[int, FileKey]:
        rows = self._exec(
            "SELECT id, dev, ino, datahash, coalesce(filesize, size), host FROM files "  # noqa: S608 -- fixed fragments; values are bound
            f"WHERE removed_at IS NULL AND {where}",
            params,
        )
        return {
            file_id: FileKey(
                (dev, ino) if dev is not None else None,
                bytes(datahash).hex() if datahash is not None else None,
                size,
                host,
            )
            for file_id, dev, ino, datahash, size, host in rows.fetchall()
        }

    def unit_digests_of(self, ids: Sequence[int], unit_type: UnitType) -> dict[int, bytes]:
        """Digests of one unit type of the live files among ``ids``."""
        rows = self._exec(
            "SELECT u.file_id, u.digest FROM units u JOIN files f ON f.id = u.file_id "
            "WHERE u.type = %s AND f.removed_at IS NULL AND u.file_id = ANY(%b::bigint[])",
            (unit_type.value, list(ids)),
        )
        return {file_id: bytes(digest) for file_id, digest in rows.fetchall()}

    def tombstones_at(self, path: str) -> list[StoredFile]:
        """Tombstones at ``path``, most recent first."""
        cond, params = self._at(path)
        return self._files(
            f"{cond} AND f.removed_at IS NOT NULL ORDER BY f.removed_at DESC, f.id DESC", params
        )

    def validators_in_dir(self, directory: str) -> dict[str, FileStat]:
        """Name -> validators of the live files in ``directory``."""
        rows = self._exec(
            "SELECT f.name, f.dev, f.ino, f.size, f.mtime_ns, f.ctime_ns, f.nlink "
            "FROM files f JOIN dirs d ON d.id = f.dir_id "
            "WHERE d.host = %s AND sha256(d.path) = sha256(%s) AND f.removed_at IS NULL",
            (self._host, to_fs(directory)),
        )
        return {
            os.fsdecode(name): FileStat(dev, ino, size, mtime, ctime, nlink or 1)
            if dev is not None
            else FileStat(-1, -1, -1, -1, -1)
            for name, dev, ino, size, mtime, ctime, nlink in rows.fetchall()
        }

    def _dir_range(self, path: str) -> tuple[str, tuple[Any, ...]]:
        """The condition for this host's directories at or below ``path``: a range of the
        indexed path prefix, rechecked on the whole path."""
        if path == "/":
            return "d.host = %s", (self._host,)
        top = to_fs(path)
        low, high = top + b"/", top + b"0"
        return (
            "d.host = %s AND (sha256(d.path) = sha256(%s) OR ("
            f"substr(d.path, 1, {_PREFIX}) BETWEEN %s AND %s AND d.path >= %s AND d.path < %s))",
            (self._host, top, low[:_PREFIX], high[:_PREFIX], low, high),
        )

    def dirs_under(self, path: str) -> list[str]:
        """Directories at or below ``path`` holding live files."""
        cond, params = self._dir_range(path)
        rows = self._exec(
            f"SELECT d.path FROM dirs d WHERE {cond} AND EXISTS "  # noqa: S608 -- fixed fragments
            "(SELECT 1 FROM files f WHERE f.dir_id = d.id AND f.removed_at IS NULL) "
            "ORDER BY d.path",
            params,
        )
        return [from_fs(row[0]) for row in rows.fetchall()]

    def files_under(self, path: str) -> list[StoredFile]:
        """Live files at or below ``path``."""
        cond, params = self._dir_range(path)
        at, at_params = self._at(path)
        return self._files(
            f"f.removed_at IS NULL AND (({cond}) OR ({at})) ORDER BY d.path, f.name",
            (*params, *at_params),
        )

    def folder_files(
        self, chunk: int = 65536, *, fleet: bool = False
    ) -> Iterator[list[FolderFile]]:
        """Every live file's place, size, datahash and identity, in chunks by id (``fleet``:
        on every host)."""
        name = from_fs_once()  # directories and roots, decoded once each

        host = "" if fleet else "AND f.host = %s "
        last = -1
        while True:
            rows = self._exec(
                "SELECT f.id, f.host, r.path, d.path, f.name, coalesce(f.filesize, f.size), "  # noqa: S608 -- fixed fragments
                "f.datahash, f.dev, f.ino FROM files f JOIN dirs d ON d.id = f.dir_id "
                "JOIN roots r ON r.id = f.root_id "
                f"WHERE f.id > %s AND f.removed_at IS NULL {host}ORDER BY f.id LIMIT %s",
                (last, *(() if fleet else (self._host,)), chunk),
            ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [
                FolderFile(
                    file_id,
                    on,
                    name(root),
                    name(directory),
                    from_fs(base),
                    size,
                    None if digest is None else bytes(digest),
                    None if dev is None or ino is None else (dev, ino),
                )
                for file_id, on, root, directory, base, size, digest, dev, ino in rows
            ]

    def issues_under(
        self, path: str, *, actionable: bool = False
    ) -> list[tuple[str, tuple[FileIssue, ...]]]:
        """Path and issues of this host's live files with issues at or below ``path``."""
        cond, params = self._dir_range(path)
        at, at_params = self._at(path)
        rows = self._exec(
            "SELECT d.path, f.name, f.issues FROM files f JOIN dirs d ON d.id = f.dir_id "  # noqa: S608 -- fixed fragments; values are bound
            f"WHERE f.issues IS NOT NULL AND f.removed_at IS NULL AND (({cond}) OR ({at})) "
            + (ACTIONABLE.format(contains="strpos") if actionable else "")
            + "ORDER BY d.path, f.name",
            (*params, *at_params),
        ).fetchall()
        return issues_of(rows, actionable=actionable)

    def stale_units(self, is_stale: Callable[[str], bool], under: str) -> list[StaleUnits]:
        """Live files below ``under`` with units made or skipped under a stale profile."""
        profiles = self._exec("SELECT id, profile FROM profiles").fetchall()
        stale_ids = [pid for pid, profile in profiles if is_stale(profile)]
        if not stale_ids:
            return []
        cond, params = self._dir_range(under)
        stale: dict[int, set[UnitType]] = {}
        for table in ("units", "skips"):
            rows = self._exec(
                f"SELECT u.file_id, u.type FROM {table} u JOIN files f ON f.id = u.file_id "  # noqa: S608 -- fixed fragments
                f"JOIN dirs d ON d.id = f.dir_id WHERE u.profile_id = ANY(%b::bigint[]) "
                f"AND f.removed_at IS NULL AND {cond}",
                (stale_ids, *params),
            )
            for file_id, unit_type in rows.fetchall():
                stale.setdefault(file_id, set()).add(UnitType(unit_type))
        files = self.files_by_id(sorted(stale))
        return [StaleUnits(f, frozenset(stale[f.id])) for f in files]

    def unit_codes(
        self, unit_type: UnitType, chunk: int = 65536, *, fleet: bool = False
    ) -> Iterator[tuple[list[int], bytes]]:
        """The live files' ids and 64-bit codes of one unit type, in chunks."""
        host = "" if fleet else "AND f.host = %s "
        last = -1
        while True:
            rows = self._exec(
                "SELECT u.file_id, u.digest FROM units u JOIN files f ON f.id = u.file_id "  # noqa: S608 -- fixed fragments
                f"WHERE u.type = %s AND u.file_id > %s AND f.removed_at IS NULL {host}"
                "ORDER BY u.file_id LIMIT %s",
                (unit_type.value, last, *(() if fleet else (self._host,)), chunk),
            ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield (
                [file_id for file_id, _ in rows],
                b"".join(bytes(digest[:8]).ljust(8, b"\0") for _, digest in rows),
            )

    def exact_datahashes(self, *, fleet: bool = False) -> list[str]:
        """Datahashes held by more than one live identity (one host's ``(dev, ino)``)."""
        host = "" if fleet else "AND host = %s "
        rows = self._exec(
            "SELECT datahash FROM (SELECT DISTINCT datahash, host, dev, ino FROM files "  # noqa: S608 -- fixed fragments
            f"WHERE removed_at IS NULL AND datahash IS NOT NULL {host}) AS identities "
            "GROUP BY datahash HAVING count(*) > 1 ORDER BY datahash",
            () if fleet else (self._host,),
        )
        return [bytes(row[0]).hex() for row in rows.fetchall()]

    def ids_by_size(self, at_least: int, below: int) -> list[int]:
        """This host's live files by size (a scan: asked only when ``min_size`` changes)."""
        rows = self._exec(
            "SELECT id FROM files WHERE host = %s AND removed_at IS NULL "
            "AND coalesce(filesize, size) >= %s AND coalesce(filesize, size) < %s ORDER BY id",
            (self._host, at_least, below),
        )
        return [int(row[0]) for row in rows.fetchall()]

    def live_by_root(self) -> dict[str, int]:
        """Live files per root of this host, from the counters the trigger keeps."""
        rows = self._exec(
            "SELECT path, live FROM roots WHERE host = %s AND live > 0 ORDER BY path",
            (self._host,),
        )
        return {from_fs(path): int(live) for path, live in rows.fetchall()}

    def root_device(self, root: str) -> int | None:
        """The recorded ``st_dev`` of a root."""
        row = self._exec(
            "SELECT dev FROM roots WHERE host = %s AND sha256(path) = sha256(%s)",
            (self._host, to_fs(root)),
        ).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else None

    # -- writing files -------------------------------------------------------------------------

    def _record_values(self, root: str, record: FileRecord) -> tuple[Any, ...]:
        directory, name = split_path(record.path)
        return (self._root_id(root), self._dir_id(directory), to_fs(name), *record_columns(record))

    def _children(self, record: FileRecord) -> tuple[Any, ...]:
        """The arrays of a record's units and skips, for :data:`_CHILDREN` (one round trip
        however many units a file has)."""
        units = record.units
        skips = skipped_units(record.issues)
        return (
            [u.type.value for u in units],
            [u.iscc for u in units],
            [u.digest for u in units],
            [self._profile_id(u.profile) for u in units],
            [t.value for t in skips],
            [self._profile_id(p) for p in skips.values()],
        )

    def add_file(self, root: str, record: FileRecord, now: float) -> int:
        """Store a new live file, its units and skips (one statement); return its id."""
        values = self._record_values(root, record)
        row = self._exec(
            "WITH f AS (INSERT INTO files (host, root_id, dir_id, name, dev, ino, size, "  # noqa: S608 -- fixed fragments; values are bound
            "mtime_ns, ctime_ns, nlink, datahash, iscc, mediatype, mode, meta_name, description, "
            "metahash, filesize, characters, width, height, duration, extractor, issues, "
            "named_by_file, blocks, indexed_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            f"%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id), "
            f"{_CHILDREN} "
            "SELECT id FROM f",
            (self._host, *values, now, *self._children(record)),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def add_files(self, root: str, records: Sequence[FileRecord], now: float) -> list[int]:
        """Store new live files, in order; return their ids: :meth:`add_file` of each, in a
        statement for up to :data:`_BATCH` files with their units and skips (and one more for
        their directories not interned yet)."""
        ids: list[int] = []
        for start in range(0, len(records), _BATCH):
            ids += self._add_batch(root, records[start : start + _BATCH], now)
        return ids

    def _add_batch(self, root: str, records: Sequence[FileRecord], now: float) -> list[int]:
        if not records:
            return []
        root_id = self._root_id(root)
        split = [split_path(record.path) for record in records]
        dir_ids = self._dir_ids([directory for directory, _ in split])
        columns: list[list[Any]] = [[] for _ in range(_ADD_ARRAYS)]
        for (directory, name), record in zip(split, records, strict=True):
            values = (dir_ids[directory], to_fs(name), *record_columns(record))
            for column, value in zip(columns, values, strict=True):
                column.append(value)
        duration = columns[_DURATION]
        columns[_DURATION] = [float(d) if d is not None else None for d in duration]
        units: list[list[Any]] = [[], [], [], [], []]
        skips: list[list[Any]] = [[], [], []]
        for n, record in enumerate(records, 1):
            for unit in record.units:
                units[0].append(n)
                units[1].append(unit.type.value)
                units[2].append(unit.iscc)
                units[3].append(unit.digest)
                units[4].append(self._profile_id(unit.profile))
            for unit_type, profile in skipped_units(record.issues).items():
                skips[0].append(n)
                skips[1].append(unit_type.value)
                skips[2].append(self._profile_id(profile))
        rows = self._exec(
            _ADD_FILES, (*columns, self._host, root_id, now, *units, *skips)
        ).fetchall()
        # Each new row is found by its path (distinct in a call), not by RETURNING's order.
        ids = [int(file_id) for _, file_id in sorted(rows)]
        if len(ids) != len(records) or any(a >= b for a, b in itertools.pairwise(ids)):
            raise StoreError(f"the index database {self._redacted} gave new file ids out of order")
        return ids

    def _dir_ids(self, directories: Sequence[str]) -> dict[str, int]:
        """:meth:`_dir_id` of each directory: the ones not interned yet looked up, and those
        not stored inserted, in one statement."""
        found: dict[str, int] = {}
        wanted: dict[bytes, str] = {}
        cache = self._dirs
        for directory in dict.fromkeys(directories):
            value = to_fs(directory)
            known = cache.get(value)
            if known is not None:
                found[directory] = known
            else:
                wanted[value] = directory
        if not wanted:
            return found
        rows = self._exec(
            "WITH v AS (SELECT p, o FROM unnest(%b::bytea[]) WITH ORDINALITY AS v(p, o)), "
            "old AS (SELECT d.id, v.p, v.o FROM v JOIN dirs d "
            "ON d.host = %s AND sha256(d.path) = sha256(v.p)), "
            "new AS (INSERT INTO dirs (host, path) SELECT %s, v.p FROM v "
            "WHERE v.o NOT IN (SELECT o FROM old) ORDER BY v.o RETURNING id, path) "
            "SELECT id, p FROM old UNION ALL SELECT id, path FROM new",
            (list(wanted), self._host, self._host),
        ).fetchall()
        for dir_id, path in rows:
            value = bytes(path)
            if len(cache) > 4096:  # as _intern_path: directories are many; keep it bounded
                cache.clear()
            cache[value] = found[wanted[value]] = int(dir_id)
        return found

    def update_file(self, file_id: int, root: str, record: FileRecord, now: float) -> None:
        """Replace a live file's record, units and skips."""
        row = self._exec(
            "WITH mine AS (SELECT id FROM files WHERE id = %s AND host = %s), "
            "du AS (DELETE FROM units WHERE file_id IN (SELECT id FROM mine)), "
            "ds AS (DELETE FROM skips WHERE file_id IN (SELECT id FROM mine)) "
            "UPDATE files SET root_id=%s, dir_id=%s, name=%s, dev=%s, ino=%s, size=%s, "
            "mtime_ns=%s, ctime_ns=%s, nlink=%s, datahash=%s, iscc=%s, mediatype=%s, mode=%s, "
            "meta_name=%s, description=%s, metahash=%s, filesize=%s, characters=%s, width=%s, "
            "height=%s, duration=%s, extractor=%s, issues=%s, named_by_file=%s, blocks=%s, "
            "indexed_at=%s "
            "WHERE id = %s AND host = %s AND removed_at IS NULL RETURNING id",
            (file_id, self._host, *self._record_values(root, record), now, file_id, self._host),
        ).fetchone()
        if row is not None:
            # A second statement: a unit's key deleted above is free only once that has run.
            self._exec(
                f"WITH f AS (SELECT %s::bigint AS id), {_CHILDREN} SELECT 1",
                (file_id, *self._children(record)),
            )

    def move_file(self, file_id: int, root: str, path: str, stat: FileStat) -> None:
        """Rename a live file, keeping its units."""
        directory, name = split_path(path)
        self._exec(
            "UPDATE files SET root_id=%s, dir_id=%s, name=%s, dev=%s, ino=%s, size=%s, "
            "mtime_ns=%s, ctime_ns=%s, nlink=%s, blocks=coalesce(%s, blocks) "
            "WHERE id = %s AND host = %s AND removed_at IS NULL",
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
                self._host,
            ),
        )

    def remove_file(self, file_id: int, now: float) -> None:
        """Make a live file a tombstone and drop its near relations (every host's)."""
        self._exec(
            "UPDATE files SET removed_at = %s WHERE id = %s AND host = %s AND removed_at IS NULL",
            (now, file_id, self._host),
        )
        self._exec("DELETE FROM near WHERE a = %s OR b = %s", (file_id, file_id))

    def set_root_device(self, root: str, dev: int) -> None:
        """Record the ``st_dev`` of a root."""
        self._exec("UPDATE roots SET dev = %s WHERE id = %s", (dev, self._root_id(root)))

    def rebase_device(self, under: str, old: int, new: int) -> int:
        """Move this host's live files below ``under`` from device ``old`` to ``new``."""
        cond, params = self._dir_range(under)
        cursor = self._exec(
            "UPDATE files SET dev = %s WHERE dev = %s AND removed_at IS NULL AND dir_id IN "  # noqa: S608 -- fixed fragments; values are bound
            f"(SELECT d.id FROM dirs d WHERE {cond})",
            (new, old, *params),
        )
        return cursor.rowcount

    def purge_tombstones(self, before: float) -> int:
        """Delete this host's tombstones older than ``before``, and its directories and roots
        that no file refers to any more."""
        count = self._exec(
            "DELETE FROM files WHERE host = %s AND removed_at IS NOT NULL AND removed_at < %s",
            (self._host, before),
        ).rowcount
        if count:
            for table, column in (("dirs", "dir_id"), ("roots", "root_id")):
                self._exec(
                    f"DELETE FROM {table} t WHERE t.host = %s AND NOT EXISTS "  # noqa: S608 -- constants
                    f"(SELECT 1 FROM files f WHERE f.{column} = t.id)",
                    (self._host,),
                )
            self._forget_interned()
        return count

    # -- near relations ------------------------------------------------------------------------

    def near_of(self, file_id: int) -> list[NearPair]:
        """This host's relations of one file."""
        rows = self._exec(
            "SELECT a, b, unit, distance FROM near WHERE host = %s AND (a = %s OR b = %s) "
            "ORDER BY a, b, unit",
            (self._host, file_id, file_id),
        )
        units = _UNIT_TYPES
        return [NearPair(a, b, units[u], d) for a, b, u, d in rows.fetchall()]

    def near_of_many(self, file_ids: Sequence[int], unit: UnitType) -> dict[int, list[NearPair]]:
        """This host's relations of one unit type of several files."""
        ids = sorted(set(file_ids))
        rows = self._exec(
            "SELECT a, b, unit, distance FROM near WHERE host = %s AND unit = %s "
            "AND (a = ANY(%b::bigint[]) OR b = ANY(%b::bigint[])) ORDER BY a, b",
            (self._host, unit.value, ids, ids),
        )
        asked = set(ids)
        found: dict[int, list[NearPair]] = {}
        units = _UNIT_TYPES
        for a, b, u, distance in rows.fetchall():
            pair = NearPair(a, b, units[u], distance)
            if a in asked:
                found.setdefault(a, []).append(pair)
            if b in asked:
                found.setdefault(b, []).append(pair)
        return found

    def near_counts(self, file_ids: Sequence[int], unit: UnitType) -> dict[int, int]:
        """How many of this host's relations of one unit type each of several files has."""
        ids = sorted(set(file_ids))
        rows = self._exec(
            "SELECT id, count(*) FROM (SELECT a AS id FROM near WHERE host = %s AND unit = %s "
            "AND a = ANY(%b::bigint[]) UNION ALL SELECT b FROM near WHERE host = %s AND unit = %s "
            "AND b = ANY(%b::bigint[])) AS ends GROUP BY id",
            (self._host, unit.value, ids, self._host, unit.value, ids),
        )
        return {int(file_id): int(n) for file_id, n in rows.fetchall()}

    def farthest_near(self, wanted: Mapping[int, int], unit: UnitType) -> dict[int, list[NearPair]]:
        """The farthest of this host's relations of one unit type of several files, as many
        as each wants."""
        asked = sorted(f for f, n in wanted.items() if n > 0)
        rows = self._exec(
            "WITH asked AS (SELECT * FROM unnest(%b::bigint[], %b::bigint[]) AS t(f, n)), "
            "ends AS (SELECT asked.f, asked.n, near.b AS o, near.a, near.b, near.unit, "
            "near.distance FROM asked JOIN near ON near.a = asked.f WHERE near.host = %s "
            "AND near.unit = %s UNION ALL SELECT asked.f, asked.n, near.a, near.a, near.b, "
            "near.unit, near.distance FROM asked JOIN near ON near.b = asked.f "
            "WHERE near.host = %s AND near.unit = %s) "
            "SELECT f, a, b, unit, distance FROM (SELECT *, row_number() OVER "
            "(PARTITION BY f ORDER BY distance DESC, o) AS r FROM ends) AS ranked "
            "WHERE r <= n ORDER BY f, r",
            (asked, [wanted[f] for f in asked], self._host, unit.value, self._host, unit.value),
        )
        found: dict[int, list[NearPair]] = {}
        units = _UNIT_TYPES
        for f, a, b, u, distance in rows.fetchall():
            found.setdefault(int(f), []).append(NearPair(a, b, units[u], distance))
        return found

    def add_near(self, pairs: Sequence[NearPair]) -> None:
        """Insert or update relations, for the host of each of the two files."""
        self._exec_many(
            "INSERT INTO near (host, a, b, unit, distance) SELECT DISTINCT f.host, %s, %s, %s, "
            "%s::integer FROM files f WHERE f.id IN (%s, %s) "
            "ON CONFLICT (host, a, b, unit) DO UPDATE SET distance = excluded.distance",
            [(p.a, p.b, p.unit.value, p.distance, p.a, p.b) for p in pairs],
        )

    def remove_near(self, pairs: Sequence[NearPair]) -> None:
        """Delete relations (for both hosts of a relation across hosts)."""
        self._exec_many(
            "DELETE FROM near WHERE a = %s AND b = %s AND unit = %s",
            [(p.a, p.b, p.unit.value) for p in pairs],
        )

    def near_pairs(self, *, fleet: bool = False) -> Iterator[NearPair]:
        """This host's relations, or every host's (each once)."""
        if fleet:
            query = (
                "SELECT DISTINCT ON (a, b, unit) a, b, unit, distance FROM near ORDER BY a, b, unit"
            )
            rows = self._exec(query).fetchall()
        else:
            rows = self._exec(
                "SELECT a, b, unit, distance FROM near WHERE host = %s ORDER BY a, b, unit",
                (self._host,),
            ).fetchall()
        for a, b, unit, distance in rows:
            yield NearPair(a, b, _UNIT_TYPES[unit], distance)

    # -- properties ----------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """The identity of the log's current run: the UUID recorded when the database was
        created, one for the fleet, until a writer found the log gone backwards (the database
        restored from an older dump) and began a new run (:mod:`isccd.store.pgruns`)."""
        rows = self._exec(
            "SELECT name, value FROM properties WHERE host = '' AND name IN (%s, %s)",
            (IDENTITY_PROPERTY, RUN_PROPERTY),
        ).fetchall()
        named = dict(rows)
        if IDENTITY_PROPERTY not in named:
            raise StoreCorruptError("the fleet's database has no identity recorded")
        return str(named.get(RUN_PROPERTY) or named[IDENTITY_PROPERTY])

    def log_end(self, identity: str) -> int | None:
        """The last seq of the run named ``identity`` (see :meth:`Store.log_end`): the first
        seq of the run after it, less one; the whole log's last seq now for the current run."""
        rows = self._exec(
            "SELECT name, value FROM properties WHERE host = '' AND name LIKE 'run:%%'"
        ).fetchall()
        return log_end(rows, self._created(), identity, self.last_seq(fleet=True))

    def _created(self) -> str:
        row = self._exec(
            "SELECT value FROM properties WHERE host = '' AND name = %s", (IDENTITY_PROPERTY,)
        ).fetchone()
        if row is None:
            raise StoreCorruptError("the fleet's database has no identity recorded")
        return str(row[0])

    def get_property(self, name: str) -> str | None:
        """The value this host recorded under ``name``."""
        row = self._exec(
            "SELECT value FROM properties WHERE host = %s AND name = %s", (self._host, name)
        ).fetchone()
        return str(row[0]) if row is not None else None

    def set_property(self, name: str, value: str) -> None:
        """Record a value in the current transaction."""
        self._exec(
            "INSERT INTO properties (host, name, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (host, name) DO UPDATE SET value = excluded.value",
            (self._host, name, value),
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
        """Log an event in the current transaction, numbered in commit order (see
        :meth:`~isccd.store.pgdatabase.PgDatabase._lock_events`), about this host or
        another one (``host``: the other side of a duplicate found across hosts)."""
        return self._append(NewEvent(type, root, path, data, now, host, file_id))

    def _append(self, event: NewEvent) -> Event:
        """:meth:`append_event` of ``event`` (its data as it is when ``plain``)."""
        type, root, path, data, now, host, file_id, plain = event
        text = event_json(data)
        about = host or self._host
        self._notify_once(now)
        row = self._exec(
            "INSERT INTO events (host, type, time, root, path, data, file_id) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING seq",
            (about, type.value, now, to_fs(root), to_fs(path), text, file_id),
        ).fetchone()
        assert row is not None
        self._logged_about(about, int(row[0]))
        data = data if plain else json.loads(text)
        return Event(int(row[0]), type, now, root, path, data, about, file_id)

    def append_events(self, events: Sequence[NewEvent]) -> list[Event]:
        """Log events in the current transaction, in order, in one statement (numbered in
        the order given: see :meth:`append_event`)."""
        if not events:
            return []
        texts = [event_json(e.data) for e in events]
        abouts = [e.host or self._host for e in events]
        self._notify_once(events[0].time)
        rows = self._exec(
            "INSERT INTO events (host, type, time, root, path, data, file_id) "
            "SELECT host, type, time, root, path, data, file_id FROM unnest(%b::text[], "
            "%b::text[], %b::float8[], %b::bytea[], %b::bytea[], %b::text[], %b::bigint[]) "
            "WITH ORDINALITY AS e(host, type, time, root, path, data, file_id, o) "
            "ORDER BY o RETURNING seq",
            (
                abouts,
                [e.type.value for e in events],
                [float(e.time) for e in events],
                [to_fs(e.root) for e in events],
                [to_fs(e.path) for e in events],
                texts,
                [e.file_id for e in events],
            ),
        ).fetchall()
        # The sequence numbers the rows as the INSERT takes them, in the order of the SELECT.
        seqs = sorted(int(row[0]) for row in rows)
        if len(seqs) != len(events):
            raise StoreError(f"the index database {self._redacted} numbered {len(seqs)} events")
        logged = []
        for seq, event, text, about in zip(seqs, events, texts, abouts, strict=True):
            self._logged_about(about, seq)
            data = event.data if event.plain else json.loads(text)
            logged.append(
                Event(
                    seq, event.type, event.time, event.root, event.path, data, about, event.file_id
                )
            )
        return logged

    def events_since(self, seq: int, limit: int = 1000, *, fleet: bool = False) -> list[Event]:
        """Committed events after ``seq``, of this host or every host."""
        host = "" if fleet else "AND host = %s "
        rows = self._exec(
            "SELECT seq, type, time, root, path, data, host, file_id FROM events "  # noqa: S608 -- fixed fragments
            f"WHERE seq > %s {host}ORDER BY seq LIMIT %s",
            (seq, *(() if fleet else (self._host,)), limit),
        )
        found = [
            Event(s, EventType(t), tm, from_fs(root), from_fs(path), json.loads(data), h, f)
            for s, t, tm, root, path, data, h, f in rows.fetchall()
        ]
        if fleet and found and not self._in_transaction:
            self._saw(found[-1].seq)
        return found

    def last_seq(self, *, fleet: bool = False) -> int:
        """The highest sequence number of this host's log, or of the whole log."""
        self._queue_logged()
        if not fleet:
            row = self._exec("SELECT last_seq FROM hosts WHERE name = %s", (self._host,)).fetchone()
            return int(row[0]) if row else 0
        row = self._exec("SELECT coalesce(max(last_seq), 0) FROM hosts").fetchone()
        last = int(row[0]) if row else 0
        if not self._in_transaction:  # committed: what a subscriber may have been told
            self._saw(last)
        return last

    def first_seq(self, *, fleet: bool = False) -> int:
        """The lowest sequence number still in this host's log; ``fleet``: in the whole log,
        and above every number a host's purge removed (another host may keep older events
        than the ones purged)."""
        self._queue_logged()
        if not fleet:
            row = self._exec(
                "SELECT min(seq) FROM events WHERE host = %s", (self._host,)
            ).fetchone()
            return int(row[0]) if row and row[0] is not None else self.last_seq() + 1
        row = self._exec(
            "SELECT (SELECT min(seq) FROM events), coalesce(max(purged_seq), 0), "
            "coalesce(max(last_seq), 0) FROM hosts"
        ).fetchone()
        assert row is not None
        oldest, purged, last = row
        return max(int(oldest) if oldest is not None else int(last) + 1, int(purged) + 1)

    def purge_events(self, before: float) -> int:
        """Delete this host's events older than ``before``, noting the highest removed."""
        row = self._exec(
            "WITH d AS (DELETE FROM events WHERE host = %s AND time < %s RETURNING seq), "
            "h AS (UPDATE hosts SET purged_seq = greatest(purged_seq, (SELECT max(seq) FROM d)) "
            "WHERE name = %s) SELECT count(*) FROM d",
            (self._host, before, self._host),
        ).fetchone()
        return int(row[0]) if row else 0

    def hosts(self) -> list[KnownHost]:
        """Every host that opened the database, by name."""
        rows = self._exec(
            "SELECT name, greatest(opened_at, seen_at), last_seq FROM hosts ORDER BY name"
        ).fetchall()
        return [KnownHost(name, heard, int(last)) for name, heard, last in rows]

    # -- watchlists (the fleet's: under the database's own host name, "") -------------------

    def _pg(self, sql: str, params: Sequence[Any]) -> wl.Rows:
        """:meth:`_exec` of a statement written with ``?`` placeholders."""
        return self._exec(sql.replace("?", "%s"), params)

    def watchlist_version(self) -> int:
        """The count of changes to the fleet's watchlists."""
        sql = "SELECT value::bigint FROM properties WHERE host = '' AND name = %s"
        return wl.version(self._exec, (sql, (wl.VERSION_PROPERTY,)))

    def watchlists(self) -> list[wl.Watchlist]:
        """Every watchlist, by name."""
        return wl.watchlists(self._pg)

    def watch_units_of_type(self, unit_type: UnitType) -> list[tuple[int, int, bytes]]:
        """``(unit row, watchlist, digest)`` of every reference unit of one type."""
        return wl.units_of_type(self._pg, unit_type)

    def watch_units_by_id(self, ids: Sequence[int]) -> list[wl.WatchUnit]:
        """Reference units by their rows."""
        return wl.units_by_id(self._pg, ids)

    def watch_refs_of_units(self, ids: Sequence[int]) -> list[wl.WatchUnit]:
        """Every unit of the references holding these unit rows."""
        return wl.units_of_refs_of(self._pg, ids)

    def watch_units_of_list(self, name: str) -> list[wl.WatchUnit]:
        """Every unit of a watchlist's references."""
        return wl.units_of_list(self._pg, name)

    def add_watch_refs(
        self, name: str, threshold: int | None, refs: Sequence[wl.NewRef], now: float
    ) -> tuple[int, list[int]]:
        """Add references to a watchlist (made when new), in the current transaction."""

        def insert_id(sql: str, params: Sequence[Any]) -> int:
            return int(self._pg(sql, params).fetchone()[0])

        added = wl.add(self._pg, name, threshold, refs, now, insert_id=insert_id)
        self._watchlists_changed()
        return added

    def remove_watch(self, name: str, ref: int | None) -> int:
        """Remove a watchlist or one of its references, in the current transaction."""
        removed = wl.remove(self._pg, name, ref)
        self._watchlists_changed()
        return removed

    def _watchlists_changed(self) -> None:
        self._exec(
            "UPDATE properties SET value = (value::bigint + 1)::text WHERE host = '' AND name = %s",
            (wl.VERSION_PROPERTY,),
        )
