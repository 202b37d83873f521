"""The isccd SQLite database file: opening it, its schema, its errors and its transactions.

Opened for writing, the database is checked (``PRAGMA quick_check``) and migrated to the current
schema (:mod:`isccd.store.schema`). The check reads the whole file (15 s for 10 million files), so
a large database is checked only when its last writer did not close it (a write-ahead log left
behind, which SQLite removes when the last connection closes cleanly); damage found later, as
the index is loaded or a file read, fails the same way with the same advice. Opened read-only
(``isccd dupes`` next to a running daemon), it reads a consistent snapshot while another
process writes: WAL lets readers and the one writer proceed together, and a busy timeout covers
checkpoints.

Only one process writes a database at a time (an advisory lock next to it); readers are not
limited. A writer checks before each commit that its path still leads to the file it opened
(device and inode): a database deleted or replaced while open (its state directory removed)
fails every commit with :class:`~isccd.errors.StoreRemovedError` instead of writing to a file
no one will read again. Every SQLite failure leaves this module as a
:class:`~isccd.errors.StoreError` whose message names the database and says what to do;
corruption and a full disk get their own subclasses.

Names stored once and referred to by id (roots, directories, unit profiles) are interned here,
with caches that a rolled-back transaction clears.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from isccd.errors import (
    StoreCorruptError,
    StoreError,
    StoreFullError,
    StoreLockedError,
    StoreNotWritableError,
    StoreRemovedError,
)
from isccd.store.rows import to_fs
from isccd.store.schema import LATEST, MIGRATIONS

P = ParamSpec("P")
T = TypeVar("T")

# Primary SQLite result codes (https://sqlite.org/rescode.html).
_BUSY, _LOCKED, _READONLY, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 5, 6, 8, 11, 13, 14, 26


@dataclass(frozen=True, slots=True)
class SqliteOptions:
    """Tuning of the SQLite backend.

    Attributes:
        busy_timeout: Seconds to wait for a lock held by another process before failing.
        cache_kib: Page cache per connection, in KiB.
        max_size: Refuse to grow the database beyond this many bytes (a full-disk error is
            raised instead); ``None`` for no limit other than the disk.
        quick_check: Run ``PRAGMA quick_check`` when opening for writing.
        quick_check_below: A database this large or larger is checked only when its last
            writer did not close it (its write-ahead log is still there).
    """

    busy_timeout: float = 5.0
    cache_kib: int = 8192
    max_size: int | None = None
    quick_check: bool = True
    quick_check_below: int = 512 * 2**20


#: The property naming the event log's current run (the store's identity now); each run is
#: also recorded as ``run:<identity>`` = ``"<ordinal> <first seq>"``.
RUN_PROPERTY = "run"


def runs_of(rows: Iterable[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """Identity -> (ordinal, first seq) of the ``run:`` properties among ``rows``."""
    found = {}
    for name, value in rows:
        ordinal, first = value.split()
        found[name.removeprefix("run:")] = (int(ordinal), int(first))
    return found


class Database:
    """One isccd SQLite database, open: its connection, writer lock, schema, transactions and
    interned names. :class:`isccd.store.sqlite.SqliteStore` keeps files, relations and events
    in it.

    Not thread-safe: use it from the thread that opened it (the store owner thread, or a
    command's main thread for read-only use).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        host: str = "",
        readonly: bool = False,
        options: SqliteOptions | None = None,
        beside: bool = False,
    ) -> None:
        """Open (and for writing create, check and migrate) the database at ``path``.

        Args:
            path: The database file.
            host: The host name its files are reported on (one database, one host).
            readonly: Open for reading only.
            options: Tuning.
            beside: Open an existing database at this isccd's schema for writing beside its
                writer, without the writer lock: only what every writer reloads by a
                version it polls at each batch (the watchlists) may be written this way,
                each transaction under SQLite's own write lock.

        Raises:
            StoreError: It cannot be opened, is locked, or was written by a newer isccd.
            StoreCorruptError: It is not an isccd database or fails its integrity check.
        """
        self._path = str(path)
        self._host = host
        self._readonly = readonly
        self._options = options or SqliteOptions()
        self._roots: dict[bytes, int] = {}
        self._dirs: dict[bytes, int] = {}
        self._profiles: dict[str, int] = {}
        self._profile_names: dict[int, str] = {}
        self._conn: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._identity: tuple[int, int] | None = None
        self._beside = beside and not readonly
        try:
            if not readonly and not beside:
                self._lock_fd = self._take_writer_lock()
            check = self._needs_check()
            self._conn = self._connect()
            if readonly or beside:
                self._check_version_readable()
            else:
                self._prepare_writer(check=check)
                self._identity = self._file_identity()
        except sqlite3.Error as exc:
            self.close()
            raise self._error(exc, "open") from exc
        except StoreError:
            self.close()
            raise

    # -- opening -------------------------------------------------------------------------------

    @property
    def host(self) -> str:
        """The host name its files are reported on."""
        return self._host

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    def _take_writer_lock(self) -> int:
        """One writing process per database: a second one (``isccd scan`` next to the daemon)
        would change the store behind the first one's in-memory index. The kernel drops the
        lock when the process ends, however it ends."""
        lock_path = self._path + ".lock"
        try:
            Path(self._path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise not_writable(Path(self._path).parent, exc) from None
        try:
            _make_private(fd)
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
        if self._readonly or self._beside:
            if not Path(self._path).is_file():
                raise StoreError(
                    f"no index at {self._path}: run `isccd scan` or start the daemon first"
                )
            mode = "rw" if self._beside else "ro"
            uri = "file:" + urllib.parse.quote(self._path) + "?mode=" + mode
            conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
        else:
            Path(self._path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._make_files_private()
            conn = sqlite3.connect(self._path, timeout=timeout, isolation_level=None)
        conn.execute(f"PRAGMA cache_size = -{int(self._options.cache_kib)}")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def _make_files_private(self) -> None:
        """Create the database file ``0600`` whatever the umask, and take group and others'
        bits off the files an older version left readable. SQLite gives the ``-wal`` and
        ``-shm`` files it creates the database file's mode, so they follow."""
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            _make_private(fd)
        finally:
            os.close(fd)
        for suffix in ("-wal", "-shm"):
            try:
                fd = os.open(self._path + suffix, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                _make_private(fd)
            finally:
                os.close(fd)

    def _needs_check(self) -> bool:
        """Whether opening for writing runs ``PRAGMA quick_check``: always for a small
        database; for a large one only when its last writer left its write-ahead log behind
        (it ended without closing: a crash, a kill, a lost power). Asked under the writer
        lock, before this process's own connection makes a log."""
        if not self._options.quick_check:
            return False
        try:
            size = Path(self._path).stat().st_size
        except FileNotFoundError:
            return False  # a new database: nothing to check
        try:
            left = Path(self._path + "-wal").stat().st_size > 0
        except FileNotFoundError:
            left = False
        return left or size < self._options.quick_check_below

    def _prepare_writer(self, *, check: bool) -> None:
        conn = self._db
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"{self._path}: cannot switch the database to WAL mode (got {mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        if self._options.max_size is not None:
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {max(1, self._options.max_size // page_size)}")
        if check:
            problems = [row[0] for row in conn.execute("PRAGMA quick_check(5)")]
            if problems != ["ok"]:
                raise StoreCorruptError(
                    f"the index database {self._path} is damaged ({'; '.join(problems)}); "
                    "move it away and isccd will rebuild the index with a full scan"
                )
        self._migrate()
        self._begin_run()

    def _begin_run(self) -> None:
        """Give the log's new run an identity of its own, recording where it starts.

        A copy of the database restored over it goes back to the copy's log: its runs end
        where the copy ended, and the next run starts from there. A client that followed the
        log further under an earlier run's identity is then refused, instead of being replayed
        the reused sequence numbers as if they were the events it missed (see
        :meth:`~isccd.store.base.Store.log_end`). A disk too full to record it keeps the last
        run's identity: the store must still open, degraded.
        """
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            rows = db.execute("SELECT name, value FROM properties WHERE name LIKE 'run:%'")
            runs = runs_of(rows.fetchall())
            if not runs:  # the first run under this isccd: the store's identity names the log
                created = db.execute("SELECT value FROM properties WHERE name = 'store_id'")
                row = created.fetchone()
                if row is not None:
                    runs[str(row[0])] = (0, 1)
                    db.execute("INSERT INTO properties (name, value) VALUES (?, '0 1')",
                               (f"run:{row[0]}",))  # fmt: skip
            seq = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()
            first = (int(seq[0]) if seq else 0) + 1
            run = str(uuid.uuid4())
            db.execute("INSERT INTO properties (name, value) VALUES (?, ?)",
                       (f"run:{run}", f"{len(runs)} {first}"))  # fmt: skip
            db.execute(
                "INSERT INTO properties (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (RUN_PROPERTY, run),
            )
            db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            if exc.sqlite_errorcode != sqlite3.SQLITE_FULL:
                raise
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

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
                    # A full disk may have rolled the transaction back already: its error is
                    # the one to report, not the ROLLBACK's.
                    if self._db.in_transaction:
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
        """Commit the transaction.

        Raises:
            StoreRemovedError: The database file was deleted or replaced since it was opened.
        """
        if self._identity is not None and self._file_identity() != self._identity:
            raise StoreRemovedError(
                f"the index database {self._path} was deleted or replaced while isccd was "
                "running (was its state directory removed?): nothing more is written to it; "
                "start isccd again to rebuild the index there"
            )
        self._exec("COMMIT")

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            st = Path(self._path).stat()
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def rollback(self) -> None:
        """Roll back the transaction, if one is open."""
        if self._conn is not None and self._conn.in_transaction:
            self._exec("ROLLBACK")
        self._forget_interned()

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
        self._forget_interned()

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, params)
        except sqlite3.Error as exc:
            raise self._error(
                exc, "read" if sql.startswith(("SELECT", "WITH")) else "write"
            ) from exc

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

    def _forget_interned(self) -> None:
        """Forget every interned id, both ways: after a rollback or a purge they may name rows
        that no longer exist, and SQLite gives their ids to the next rows inserted."""
        self._roots.clear()
        self._dirs.clear()
        self._profiles.clear()
        self._profile_names.clear()

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


def not_writable(directory: Path, exc: OSError) -> StoreNotWritableError:
    """The error for a state directory that cannot be created or written, saying why."""
    return StoreNotWritableError(
        f"the state directory {directory} cannot be written ({exc.strerror or exc}): the index "
        "lives there; give the daemon a writable one (--state, $STATE_DIRECTORY)"
    )


def _make_private(fd: int) -> None:
    """Make an open file of the database ours alone (``0600``): the index names every file
    of the watched trees, whoever may list the state directory."""
    st = os.fstat(fd)
    if st.st_mode & 0o7777 != 0o600 and st.st_uid == os.geteuid():
        os.fchmod(fd, 0o600)
