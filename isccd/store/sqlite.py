"""The SQLite backend: one database file in WAL mode in the state directory.

Opened for writing, the database is checked (``PRAGMA quick_check``) and migrated to the current
schema (:mod:`isccd.store.schema`). Opened read-only (``isccd dupes`` next to a running daemon),
it reads a consistent snapshot while another process writes: WAL lets readers and the one writer
proceed together, and a busy timeout covers checkpoints.

Only one process writes a database at a time (an advisory lock next to it); readers are not
limited. Every SQLite failure leaves this module as a :class:`~isccd.errors.StoreError` whose
message names the database and says what to do; corruption and a full disk get their own
subclasses.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from isccd.errors import StoreCorruptError, StoreError, StoreFullError, StoreLockedError
from isccd.model import (
    Event,
    EventType,
    FileRecord,
    FileStat,
    Unit,
    UnitType,
)
from isccd.store.base import (
    FileKey,
    NearPair,
    StaleUnits,
    StoredFile,
    skipped_units,
    split_path,
)
from isccd.store.rows import (
    FILE_COLUMNS,
    FILE_FROM,
    file_from_row,
    from_fs,
    record_columns,
    sort_units,
    to_fs,
)
from isccd.store.schema import LATEST, MIGRATIONS

P = ParamSpec("P")
T = TypeVar("T")

# Primary SQLite result codes (https://sqlite.org/rescode.html).
_BUSY, _LOCKED, _READONLY, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 5, 6, 8, 11, 13, 14, 26

#: Bound parameters per ``IN (...)`` list (SQLite allows 32766; smaller keeps statements cached).
_IN_CHUNK = 500


@dataclass(frozen=True, slots=True)
class SqliteOptions:
    """Tuning of the SQLite backend.

    Attributes:
        busy_timeout: Seconds to wait for a lock held by another process before failing.
        cache_kib: Page cache per connection, in KiB.
        max_size: Refuse to grow the database beyond this many bytes (a full-disk error is
            raised instead); ``None`` for no limit other than the disk.
        quick_check: Run ``PRAGMA quick_check`` when opening for writing.
    """

    busy_timeout: float = 5.0
    cache_kib: int = 8192
    max_size: int | None = None
    quick_check: bool = True


class SqliteStore:
    """A :class:`isccd.store.base.Store` in one SQLite database file.

    Not thread-safe: use it from the thread that opened it (the store owner thread, or a
    command's main thread for read-only use).
    """

    def __init__(
        self, path: str | Path, *, readonly: bool = False, options: SqliteOptions | None = None
    ) -> None:
        """Open (and for writing create, check and migrate) the database at ``path``.

        Raises:
            StoreError: It cannot be opened, is locked, or was written by a newer isccd.
            StoreCorruptError: It is not an isccd database or fails its integrity check.
        """
        self._path = str(path)
        self._readonly = readonly
        self._options = options or SqliteOptions()
        self._roots: dict[bytes, int] = {}
        self._dirs: dict[bytes, int] = {}
        self._profiles: dict[str, int] = {}
        self._profile_names: dict[int, str] = {}
        self._conn: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        try:
            if not readonly:
                self._lock_fd = self._take_writer_lock()
            self._conn = self._connect()
            if readonly:
                self._check_version_readable()
            else:
                self._prepare_writer()
        except sqlite3.Error as exc:
            self.close()
            raise self._error(exc, "open") from exc
        except StoreError:
            self.close()
            raise

    # -- opening -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``sqlite://`` + the percent-encoded database path."""
        return "sqlite://" + urllib.parse.quote(os.fsencode(self._path))

    @property
    def readonly(self) -> bool:
        """True when opened for reading only."""
        return self._readonly

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    def _take_writer_lock(self) -> int:
        """One writing process per database: a second one (``isccd scan`` next to the daemon)
        would change the store behind the first one's in-memory index. The kernel drops the
        lock when the process ends, however it ends."""
        Path(self._path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock_path = self._path + ".lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            holder = int(text) if text.isdigit() else None
            raise StoreLockedError(
                f"the index database {self._path} is being written by another isccd process"
                f"{f' (pid {holder})' if holder else ''}; one process at a time may write it",
                holder,
            ) from None
        except OSError:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    def _connect(self) -> sqlite3.Connection:
        timeout = self._options.busy_timeout
        if self._readonly:
            if not Path(self._path).is_file():
                raise StoreError(
                    f"no index at {self._path}: run `isccd scan` or start the daemon first"
                )
            uri = "file:" + urllib.parse.quote(self._path) + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
        else:
            Path(self._path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            conn = sqlite3.connect(self._path, timeout=timeout, isolation_level=None)
        conn.execute(f"PRAGMA cache_size = -{int(self._options.cache_kib)}")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def _prepare_writer(self) -> None:
        conn = self._db
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"{self._path}: cannot switch the database to WAL mode (got {mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        if self._options.max_size is not None:
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {max(1, self._options.max_size // page_size)}")
        if self._options.quick_check:
            problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
            if problems != ["ok"]:
                raise StoreCorruptError(
                    f"the index database {self._path} is damaged ({'; '.join(problems)}); "
                    "move it away and isccd will rebuild the index with a full scan"
                )
        self._migrate()

    def _version(self) -> int:
        version: int = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > LATEST:
            raise StoreError(
                f"the index database {self._path} has schema version {version}, newer than "
                f"this isccd knows ({LATEST}): upgrade isccd, or move the database away"
            )
        return version

    def _check_version_readable(self) -> None:
        version = self._version()
        if version != LATEST:
            raise StoreError(
                f"the index database {self._path} has schema version {version}; this isccd "
                f"reads version {LATEST}: run `isccd scan` or restart the daemon to upgrade it"
            )

    def _migrate(self, target: int = LATEST) -> None:
        version = self._version()
        if version == 0 and self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise StoreCorruptError(
                f"{self._path} holds tables but no isccd schema version: it is not an isccd "
                "index; move it away or choose another state directory"
            )
        for migration in MIGRATIONS:
            if version < migration.version <= target:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    for statement in migration.statements:
                        self._db.execute(statement)
                    self._db.execute(f"PRAGMA user_version = {migration.version}")
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                version = migration.version

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"the index database {self._path} is closed")
        return self._conn

    def close(self) -> None:
        """Close the connection; idempotent. An open transaction is rolled back."""
        conn, self._conn = self._conn, None
        lock, self._lock_fd = self._lock_fd, None
        try:
            if conn is not None:
                conn.close()
        except sqlite3.Error as exc:  # closing is best effort; report, never hide
            raise self._error(exc, "close") from exc
        finally:
            if lock is not None:
                os.close(lock)  # releases the writer lock

    def integrity_check(self) -> list[str]:
        """``PRAGMA integrity_check``: ``["ok"]`` or the problems found."""
        return [row[0] for row in self._guarded(self._db.execute, "PRAGMA integrity_check")]

    # -- errors --------------------------------------------------------------------------------

    def _error(self, exc: sqlite3.Error, doing: str) -> StoreError:
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        where = f"the index database {self._path}"
        if code in (_CORRUPT, _NOTADB) or "not a database" in str(exc):
            return StoreCorruptError(
                f"{where} is unreadable ({exc}); move it away and isccd will rebuild the index "
                "with a full scan"
            )
        if code == _FULL:
            limit = self._options.max_size
            cap = f" or its configured size limit of {limit} bytes" if limit else ""
            return StoreFullError(
                f"{where} cannot grow: the disk is full{cap} ({exc}); free some space"
            )
        if code in (_BUSY, _LOCKED):
            return StoreError(
                f"{where} is locked by another process ({exc}) while trying to {doing}; "
                "is another `isccd scan` or the daemon writing it?"
            )
        if code in (_READONLY, _CANTOPEN):
            return StoreError(f"cannot {doing} {where}: {exc}; check the state directory")
        return StoreError(f"cannot {doing} {where}: {exc}")

    def _guarded(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return fn(*args, **kwargs)
        except sqlite3.Error as exc:
            raise self._error(exc, "use") from exc

    # -- transactions --------------------------------------------------------------------------

    def begin(self) -> None:
        """Start a write transaction, taking the write lock now."""
        self._exec("BEGIN IMMEDIATE")

    def commit(self) -> None:
        """Commit the transaction."""
        self._exec("COMMIT")

    def rollback(self) -> None:
        """Roll back the transaction, if one is open."""
        if self._conn is not None and self._conn.in_transaction:
            self._exec("ROLLBACK")
        # Interned ids may point at rows that no longer exist.
        self._roots.clear()
        self._dirs.clear()
        self._profiles.clear()

    def savepoint(self) -> None:
        """Start a unit of work."""
        self._exec("SAVEPOINT unit")

    def release(self) -> None:
        """Keep the unit of work."""
        self._exec("RELEASE unit")

    def rollback_to(self) -> None:
        """Undo the unit of work."""
        self._exec("ROLLBACK TO unit")
        self._exec("RELEASE unit")
        self._roots.clear()
        self._dirs.clear()
        self._profiles.clear()

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, params)
        except sqlite3.Error as exc:
            raise self._error(exc, "write" if not sql.startswith("SELECT") else "read") from exc

    # -- interning -----------------------------------------------------------------------------

    def _intern(self, table: str, column: str, value: Any, cache: dict[Any, int]) -> int:
        found = cache.get(value)
        if found is not None:
            return found
        row = self._exec(f"SELECT id FROM {table} WHERE {column} = ?", (value,)).fetchone()  # noqa: S608 -- table and column are constants of this module
        if row is None:
            row = self._exec(
                f"INSERT INTO {table} ({column}) VALUES (?) RETURNING id",  # noqa: S608 -- as above
                (value,),
            ).fetchone()
        if len(cache) > 4096:  # directories are many; keep the cache bounded
            cache.clear()
        cache[value] = row[0]
        return int(row[0])

    def _root_id(self, root: str) -> int:
        return self._intern("roots", "path", to_fs(root), self._roots)

    def _dir_id(self, directory: str) -> int:
        return self._intern("dirs", "path", to_fs(directory), self._dirs)

    def _profile_id(self, profile: str) -> int:
        return self._intern("profiles", "profile", profile, self._profiles)

    def _profile_name(self, profile_id: int) -> str:
        name = self._profile_names.get(profile_id)
        if name is None:
            row = self._exec("SELECT profile FROM profiles WHERE id = ?", (profile_id,)).fetchone()
            name = self._profile_names[profile_id] = row[0] if row else ""
        return name

    # -- reading files -------------------------------------------------------------------------

    def _files(self, where: str, params: Sequence[Any] = ()) -> list[StoredFile]:
        rows = self._exec(f"SELECT {FILE_COLUMNS} FROM {FILE_FROM} WHERE {where}", params)  # noqa: S608 -- fixed fragments; values are bound
        rows_list = rows.fetchall()
        if not rows_list:
            return []
        units = self._units_of([row[0] for row in rows_list])
        return [file_from_row(row, units.get(row[0], ())) for row in rows_list]

    def _units_of(self, ids: Sequence[int]) -> dict[int, tuple[Unit, ...]]:
        found: dict[int, list[Unit]] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            sql = "SELECT file_id, type, iscc, digest, profile_id FROM units WHERE file_id IN "
            for file_id, type_, iscc, digest, profile_id in self._exec(f"{sql}({marks})", chunk):
                unit = Unit(UnitType(type_), iscc, bytes(digest), self._profile_name(profile_id))
                found.setdefault(file_id, []).append(unit)
        return {k: sort_units(v) for k, v in found.items()}

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
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = list(ids[start : start + _IN_CHUNK])
            marks = ",".join("?" * len(chunk))
            for stored in self._files(f"f.id IN ({marks})", chunk):
                by_id[stored.id] = stored
        return [by_id[i] for i in ids if i in by_id]

    def files_by_identity(self, dev: int, ino: int) -> list[StoredFile]:
        """Live files with this identity."""
        return self._files(
            "f.dev = ? AND f.ino = ? AND f.removed_at IS NULL ORDER BY f.id", (dev, ino)
        )

    def files_by_datahash(self, datahash: str) -> list[StoredFile]:
        """Live files with this datahash."""
        return self._files(
            "f.datahash = ? AND f.removed_at IS NULL ORDER BY f.id", (bytes.fromhex(datahash),)
        )

    def file_keys(self, ids: Sequence[int]) -> dict[int, FileKey]:
        """Identity and datahash of the live files among ``ids``."""
        found: dict[int, FileKey] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = list(ids[start : start + _IN_CHUNK])
            marks = ",".join("?" * len(chunk))
            sql = "SELECT id, dev, ino, datahash, coalesce(filesize, size) FROM files WHERE "
            for file_id, dev, ino, datahash, size in self._exec(
                f"{sql}removed_at IS NULL AND id IN ({marks})", chunk
            ):
                found[file_id] = FileKey(
                    (dev, ino) if dev is not None else None,
                    bytes(datahash).hex() if datahash is not None else None,
                    size,
                )
        return found

    def unit_digests_of(self, ids: Sequence[int], unit_type: UnitType) -> dict[int, bytes]:
        """Digests of one unit type of the live files among ``ids``."""
        found: dict[int, bytes] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = list(ids[start : start + _IN_CHUNK])
            marks = ",".join("?" * len(chunk))
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
            for start in range(0, len(stale_ids), _IN_CHUNK):
                chunk = stale_ids[start : start + _IN_CHUNK]
                marks = ",".join("?" * len(chunk))
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

    def unit_digests(
        self, unit_type: UnitType, chunk: int = 65536
    ) -> Iterator[list[tuple[int, bytes]]]:
        """``(file id, digest)`` of the live files' units of one type, in chunks."""
        last = -1
        while True:
            rows = self._exec(
                "SELECT u.file_id, u.digest FROM units u JOIN files f ON f.id = u.file_id "
                "WHERE u.type = ? AND u.file_id > ? AND f.removed_at IS NULL "
                "ORDER BY u.file_id LIMIT ?",
                (unit_type.value, last, chunk),
            ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [(file_id, bytes(digest)) for file_id, digest in rows]

    def exact_datahashes(self) -> list[str]:
        """Datahashes held by more than one live identity."""
        rows = self._exec(
            "SELECT datahash FROM (SELECT DISTINCT datahash, dev, ino FROM files "
            "WHERE removed_at IS NULL AND datahash IS NOT NULL) "
            "GROUP BY datahash HAVING count(*) > 1"
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

    def count_files(self) -> tuple[int, int]:
        """``(live, tombstones)``."""
        live, dead = self._exec(
            "SELECT count(*) FILTER (WHERE removed_at IS NULL), "
            "count(*) FILTER (WHERE removed_at IS NOT NULL) FROM files"
        ).fetchone()
        return int(live), int(dead)

    def live_by_root(self) -> dict[str, int]:
        """Live files per root, from the counters the schema's triggers keep."""
        rows = self._exec("SELECT path, live FROM roots WHERE live > 0 ORDER BY path")
        return {from_fs(path): int(live) for path, live in rows}

    def root_device(self, root: str) -> int | None:
        """The recorded ``st_dev`` of a root."""
        row = self._exec("SELECT dev FROM roots WHERE path = ?", (to_fs(root),)).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else None

    # -- writing files -------------------------------------------------------------------------

    def _record_values(self, root: str, record: FileRecord) -> tuple[Any, ...]:
        directory, name = split_path(record.path)
        return (self._root_id(root), self._dir_id(directory), to_fs(name), *record_columns(record))

    def _write_skips(self, file_id: int, record: FileRecord) -> None:
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

    def _write_units(self, file_id: int, units: Iterable[Unit]) -> None:
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
        values = self._record_values(root, record)
        row = self._exec(
            "INSERT INTO files (root_id, dir_id, name, dev, ino, size, mtime_ns, ctime_ns, nlink, "
            "datahash, iscc, mediatype, mode, meta_name, description, metahash, filesize, "
            "characters, width, height, duration, extractor, issues, indexed_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
            (*values, now),
        ).fetchone()
        file_id = int(row[0])
        self._write_units(file_id, record.units)
        self._write_skips(file_id, record)
        return file_id

    def update_file(self, file_id: int, root: str, record: FileRecord, now: float) -> None:
        """Replace a live file's record."""
        values = self._record_values(root, record)
        self._exec(
            "UPDATE files SET root_id=?, dir_id=?, name=?, dev=?, ino=?, size=?, mtime_ns=?, "
            "ctime_ns=?, nlink=?, datahash=?, iscc=?, mediatype=?, mode=?, meta_name=?, "
            "description=?, metahash=?, filesize=?, characters=?, width=?, height=?, duration=?, "
            "extractor=?, issues=?, indexed_at=? WHERE id = ? AND removed_at IS NULL",
            (*values, now, file_id),
        )
        self._write_units(file_id, record.units)
        self._write_skips(file_id, record)

    def move_file(self, file_id: int, root: str, path: str, stat: FileStat) -> None:
        """Rename a live file, keeping its units."""
        directory, name = split_path(path)
        self._exec(
            "UPDATE files SET root_id=?, dir_id=?, name=?, dev=?, ino=?, size=?, mtime_ns=?, "
            "ctime_ns=?, nlink=? WHERE id = ? AND removed_at IS NULL",
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
            self._dirs.clear()
            self._roots.clear()
        return count

    # -- near relations ------------------------------------------------------------------------

    def near_of(self, file_id: int) -> list[NearPair]:
        """Relations of one file."""
        rows = self._exec(
            "SELECT a, b, unit, distance FROM near WHERE a = ? "
            "UNION ALL SELECT a, b, unit, distance FROM near WHERE b = ? ORDER BY 1, 2, 3",
            (file_id, file_id),
        )
        return [NearPair(a, b, UnitType(unit), distance) for a, b, unit, distance in rows]

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

    def near_pairs(self) -> Iterator[NearPair]:
        """All relations."""
        rows = self._exec("SELECT a, b, unit, distance FROM near ORDER BY a, b, unit").fetchall()
        for a, b, unit, distance in rows:
            yield NearPair(a, b, UnitType(unit), distance)

    # -- properties ----------------------------------------------------------------------------

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
        self, type: EventType, root: str, path: str, data: Mapping[str, Any], now: float
    ) -> Event:
        """Log an event in the current transaction."""
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
        row = self._exec(
            "INSERT INTO events (type, time, root, path, data) VALUES (?,?,?,?,?) RETURNING seq",
            (type.value, now, to_fs(root), to_fs(path), text),
        ).fetchone()
        return Event(int(row[0]), type, now, root, path, json.loads(text))

    def events_since(self, seq: int, limit: int = 1000) -> list[Event]:
        """Committed events after ``seq``."""
        rows = self._exec(
            "SELECT seq, type, time, root, path, data FROM events WHERE seq > ? "
            "ORDER BY seq LIMIT ?",
            (seq, limit),
        )
        return [
            Event(s, EventType(t), tm, from_fs(root), from_fs(path), json.loads(data))
            for s, t, tm, root, path, data in rows
        ]

    def last_seq(self) -> int:
        """The highest sequence number ever used."""
        row = self._exec("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
        return int(row[0]) if row else 0

    def first_seq(self) -> int:
        """The lowest sequence number still logged."""
        row = self._exec("SELECT min(seq) FROM events").fetchone()
        return int(row[0]) if row[0] is not None else self.last_seq() + 1

    def purge_events(self, before: float) -> int:
        """Delete events older than ``before``."""
        return self._exec("DELETE FROM events WHERE time < ?", (before,)).rowcount
