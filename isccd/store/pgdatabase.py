"""A PostgreSQL database shared by a fleet, as one host's store sees it: its connection, the
host's lock, the schema, errors and transactions.

The store works on one session, taken from a small connection pool (psycopg_pool) that opens
it, checks it before use and replaces it when it breaks. The session holds a session-level
advisory lock on the host name (``pg_try_advisory_lock`` on :data:`~isccd.store.pgschema.
LOCK_SPACE` and the host's number): a second daemon opening the same database under the same
host name is refused with :class:`~isccd.errors.StoreLockedError` for as long as the first one's
session lives, and PostgreSQL drops the lock when that session ends, however it ends.

A lost connection (a server restart, a network failure, an administrator's
``pg_terminate_backend``) fails the operation with :class:`~isccd.errors.StoreUnavailableError`
and drops the session: the transaction it was in is gone whole, the owner thread fails that
batch, and the next :meth:`PgDatabase.begin` (or read) takes a new session and the host's lock
again before anything else, so nothing is ever written without the lock.

Every driver error leaves this module as a :class:`~isccd.errors.StoreError` whose message names
the database by its URL without its password (:func:`isccd.store.pgurl.redact_url`).

Names stored once and referred to by id (roots, directories, profiles) are interned here, with
caches that a rolled-back transaction clears.

A writer checks, each time it takes a session, that the fleet's event log did not go
backwards since it last saw it (the database restored from an older dump), and gives it a new
identity when it did (:mod:`isccd.store.pgruns`).

Statements whose result nothing waits for (savepoints and their release, the writers' lock, the
notification, the hosts' last sequence numbers) are queued and sent with the next statement in
one round trip (libpq's pipeline mode).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from isccd.errors import (
    StoreCorruptError,
    StoreError,
    StoreFullError,
    StoreLockedError,
    StoreUnavailableError,
)
from isccd.store.pgruns import LogMark, check_log, read_mark, save_mark
from isccd.store.pgschema import (
    EVENTS_CHANNEL,
    EVENTS_LOCK,
    HOST_LOCK_BASE,
    LATEST,
    LOCK_SPACE,
    MIGRATION_LOCK,
    MIGRATIONS,
)
from isccd.store.pgurl import redact_url
from isccd.store.rows import to_fs

# SQLSTATE codes (https://www.postgresql.org/docs/current/errcodes-appendix.html).
_UNAVAILABLE = frozenset({"57P01", "57P02", "57P03", "53300", "08000", "08003", "08006"})
_FULL = frozenset({"53100"})
_CORRUPT = frozenset({"XX001", "XX002"})
_CONFIG_WORDS = ("authentication", "password", "does not exist", "pg_hba.conf", "permission")
#: Statements that write (every statement of the backends that writes starts with one of these).
_WRITES = (b"INSERT", b"UPDATE", b"DELETE", b"WITH")
#: Seconds a store that found its database unreachable answers at once that it still is, before
#: it tries again: while the server is down, each of a daemon's jobs must not wait for a
#: connection in turn (``isccd status``, the changes it defers, its health checks).
RETRY_AFTER = 1.0
#: Seconds to wait for a connection once the database was found unreachable.
RECONNECT_TIMEOUT = 2.0
#: Seconds between saves of how far this writer followed the log (and at close): a daemon that
#: crashes forgets at most the last ones, and tells a log restored to before them still.
MARK_EVERY = 5.0
_SAVEPOINT = b"SAVEPOINT unit"
_RELEASE = b"RELEASE SAVEPOINT unit"


@dataclass(frozen=True, slots=True)
class PostgresOptions:
    """Connections of the PostgreSQL backend (libpq's own options go in the URL).

    Attributes:
        pool_size: Connections the pool opens at most (the store's session is one of them).
        connect_timeout: Seconds to wait for a connection before the store is unavailable.
        idle_in_transaction_timeout: Seconds a session may sit in an open transaction before
            the server ends it: a daemon that hangs mid-transaction must not hold the event
            log's lock (and so every other host's events) for longer.
    """

    pool_size: int = 4
    connect_timeout: float = 10.0
    idle_in_transaction_timeout: float = 60.0


def _log_pool_quietly() -> None:
    # The pool logs each failed connection attempt with its own wording; isccd reports the
    # failure once, as a StoreError with the URL redacted.
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)


class PgDatabase:
    """One host's view of an isccd PostgreSQL database. Not thread-safe: use it from one
    thread (the store owner thread, or a command's main thread for read-only use)."""

    def __init__(
        self,
        url: str,
        *,
        host: str,
        readonly: bool = False,
        options: PostgresOptions | None = None,
        log_mark: Path | None = None,
        beside: bool = False,
    ) -> None:
        """Connect, then (for writing) migrate, register the host, take its lock, and check
        that the event log did not go backwards.

        Args:
            url: The libpq connection URI.
            host: The host name to read and write for.
            readonly: Open for reading only.
            options: Connections.
            log_mark: A file of this host's own (in its state directory) that remembers, from
                one run of the writer to the next, how far it followed the event log
                (:mod:`isccd.store.pgruns`); ``None``: remembered while it is open only.
            beside: Open for writing beside the host's daemon, without its host lock or a
                migration: only what every writer reloads by a version it polls at each
                batch (the watchlists) may be written this way, each transaction under the
                fleet's writers' lock as every write is.

        Raises:
            StoreUnavailableError: The server cannot be reached in time.
            StoreLockedError: Another daemon holds this host name on the database.
            StoreError: Authentication fails, the database is missing, is not an isccd index,
                or was written by a newer isccd.
        """
        self._url = url
        self._redacted = redact_url(url)
        self._host = host
        # Opened beside the writer: as a reader (no host lock, no migration), but writable.
        self._readonly = readonly or beside
        self._read_only_session = readonly
        self._options = options or PostgresOptions()
        self._conn: psycopg.Connection[Any] | None = None
        self._in_transaction = False
        self._events_locked = False
        self._notified = False
        self._savepoints: list[tuple[bool, bool, dict[str, int], int, int]] = []
        self._queued: list[tuple[bytes, Sequence[Any] | None]] = []
        # Host -> the highest seq this transaction logged about it (hosts.last_seq, at commit).
        self._logged: dict[str, int] = {}
        # The highest seq this transaction logged (how far this writer saw the log, at commit).
        self._logged_high = self._logged_own = 0
        # How far this writer followed the log, by database identity; when it last saved that.
        self._mark_path = log_mark
        self._marks: dict[str, LogMark] = read_mark(log_mark) if log_mark is not None else {}
        self._mark: LogMark | None = None
        self._mark_saved: tuple[float, LogMark | None] = (time.monotonic(), None)
        self._host_id: int | None = None
        # While the database is unreachable: until when to say so at once, and why.
        self._unreachable: tuple[float, str] | None = None
        self._roots: dict[bytes, int] = {}
        self._dirs: dict[bytes, int] = {}
        self._profiles: dict[str, int] = {}
        self._profile_names: dict[int, str] = {}
        _log_pool_quietly()
        self._pool: ConnectionPool[psycopg.Connection[Any]] | None = ConnectionPool(
            url,
            min_size=1,
            max_size=max(1, self._options.pool_size),
            kwargs={
                "autocommit": True,
                "fallback_application_name": f"isccd {host} pid {os.getpid()}",
            },
            configure=self._configure,
            reset=self._reset,
            check=ConnectionPool.check_connection,
            open=False,
            name="isccd",
            timeout=self._options.connect_timeout,
        )
        try:
            self._probe()  # fails at once, with libpq's reason, where the pool would retry
            try:
                self._pool.open(wait=True, timeout=self._options.connect_timeout)
            except PoolTimeout:
                self._connect_failed()
            conn = self._session()
            if not self._readonly:
                self._migrate(conn)
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._redacted} host={self._host!r}>"

    # -- opening -------------------------------------------------------------------------------

    @property
    def host(self) -> str:
        """The host name this store reads and writes for."""
        return self._host

    @property
    def redacted_url(self) -> str:
        """The database's URL without its password."""
        return self._redacted

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Run on every new connection of the pool."""
        timeout_ms = int(self._options.idle_in_transaction_timeout * 1000)
        conn.execute(
            sql.SQL("SET idle_in_transaction_session_timeout = {}").format(sql.Literal(timeout_ms))
        )
        if self._read_only_session:
            conn.execute("SET default_transaction_read_only = on")

    @staticmethod
    def _reset(conn: psycopg.Connection[Any]) -> None:
        """Run when a connection goes back to the pool: it must not keep a host's lock."""
        conn.execute("SELECT pg_advisory_unlock_all()")

    def _session(self) -> psycopg.Connection[Any]:
        """The store's connection: the current one, or a new one holding the host's lock."""
        if self._conn is not None:
            return self._conn
        if self._pool is None:
            raise StoreError(f"the index database {self._redacted} is closed")
        timeout = self._options.connect_timeout
        if self._unreachable is not None:
            until, reason = self._unreachable
            if time.monotonic() < until:
                raise StoreUnavailableError(reason)
            timeout = min(timeout, RECONNECT_TIMEOUT)
        try:
            conn = self._pool.getconn(timeout=timeout)
        except PoolTimeout:
            try:
                self._connect_failed()
            except StoreUnavailableError as exc:
                self._unreachable = (time.monotonic() + RETRY_AFTER, str(exc))
                raise
        self._unreachable = None
        self._conn = conn
        try:
            if not self._readonly:
                self._take_host(conn)
            else:
                self._check_version_readable(conn)
        except psycopg.Error as exc:
            self._raise(exc, "open")
        except BaseException:
            self._drop_session()
            raise
        return conn

    def _probe(self) -> None:
        """Connect once, directly: raise why not (a wrong password is no reason to retry)."""
        seconds = max(2, int(self._options.connect_timeout))
        try:
            probe = psycopg.connect(self._url, connect_timeout=seconds)
        except psycopg.Error as exc:
            text = str(exc)
            where = f"cannot connect to the index database {self._redacted}"
            if any(word in text for word in _CONFIG_WORDS):
                raise StoreError(f"{where}: {text}; check [store] url and the password") from None
            raise StoreUnavailableError(f"{where}: {text}") from None
        probe.close()

    def _connect_failed(self) -> NoReturn:
        """The pool found no connection in time: connect once directly, for the reason."""
        self._probe()
        raise StoreUnavailableError(
            f"no connection to the index database {self._redacted} within "
            f"{self._options.connect_timeout:g} s"
        )

    def _take_host(self, conn: psycopg.Connection[Any]) -> None:
        """Register the host name and take its lock, or fail naming who holds it."""
        version = self._version(conn)
        if version == 0:
            return  # a new database: migrating comes first, then the host (see _migrate)
        row = conn.execute(
            "INSERT INTO hosts (name, opened_at) VALUES (%s, %s) "
            "ON CONFLICT (name) DO UPDATE SET opened_at = excluded.opened_at RETURNING id",
            (self._host, time.time()),
        ).fetchone()
        assert row is not None
        self._host_id = int(row[0])
        key = HOST_LOCK_BASE + self._host_id
        taken = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_SPACE, key)).fetchone()
        if taken is not None and taken[0]:
            self._check_log(conn)
            return
        holder = conn.execute(
            "SELECT a.application_name, a.client_addr::text FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
            "AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid AND l.granted "
            "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            (LOCK_SPACE, key),
        ).fetchone()
        who = ""
        if holder is not None:
            who = f" ({holder[0] or 'a client'}{f' at {holder[1]}' if holder[1] else ''})"
        self._drop_session()
        raise StoreLockedError(
            f"the host name {self._host!r} is in use on the index database {self._redacted} "
            f"by another isccd{who}; each daemon sharing a database needs its own "
            "[store] host"
        )

    def _check_log(self, conn: psycopg.Connection[Any]) -> None:
        """Check the event log against how far this writer followed it, before anything else
        on a new session (see :func:`~isccd.store.pgruns.check_log`)."""
        mark = check_log(conn, self._marks, self._host)
        self._mark = mark
        if mark.store:
            self._marks[mark.store] = mark
            self._save_mark(force=True)

    def _saw(self, seq: int, own: int = 0) -> None:
        """This writer saw the log committed up to ``seq``, and its own host's events up to
        ``own`` (under the run it knows)."""
        mark = self._mark
        if mark is not None and mark.store and (seq > mark.seq or own > mark.own):
            self._mark = mark.past(seq, own)
            self._marks[self._mark.store] = self._mark
            self._save_mark(force=False)

    def _save_mark(self, *, force: bool) -> None:
        """Save how far this writer followed the log (at most every :data:`MARK_EVERY`
        seconds unless ``force``). A file that cannot be written leaves it remembered while
        the store is open: the store must still work."""
        mark, path = self._mark, self._mark_path
        saved_at, saved = self._mark_saved
        if path is None or mark is None or not mark.store or mark == saved:
            return
        now = time.monotonic()
        if not force and now - saved_at < MARK_EVERY:
            return
        try:
            save_mark(path, mark)
        except OSError as exc:
            if saved is not None or force:
                logging.getLogger("isccd.store").warning(
                    "fleet_log_mark_unsaved", extra={"path": str(path), "error": str(exc)}
                )
        self._mark_saved = (now, mark)

    def _drop_session(self) -> None:
        """Give the session back to the pool (which discards it when broken). A transaction
        that was open stays marked open, and lost, until :meth:`rollback`."""
        conn, self._conn = self._conn, None
        if conn is not None and self._pool is not None:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.close()  # never hand back a connection in a transaction
            self._pool.putconn(conn)

    def _version(self, conn: psycopg.Connection[Any]) -> int:
        # The catalog itself, not to_regclass(): its cache may not know of a table another
        # session has just created.
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relname = 'isccd_schema' AND n.nspname = current_schema())"
        ).fetchone()
        if row is None or not row[0]:
            return 0
        found = conn.execute("SELECT coalesce(max(version), 0) FROM isccd_schema").fetchone()
        version = int(found[0]) if found else 0
        if version > LATEST:
            raise StoreError(
                f"the index database {self._redacted} has schema version {version}, newer "
                f"than this isccd knows ({LATEST}): upgrade isccd on this host"
            )
        return version

    def _check_version_readable(self, conn: psycopg.Connection[Any]) -> None:
        version = self._version(conn)
        if version != LATEST:
            raise StoreError(
                f"the index database {self._redacted} has schema version {version}; this "
                f"isccd reads version {LATEST}: run `isccd scan` or start the daemon to "
                "create or upgrade it"
            )

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        """Apply the missing migrations, each in its own transaction, one daemon at a time (a
        session lock around them all: each transaction then starts after the previous
        daemon's migrations committed, and sees their tables)."""
        try:
            if self._version(conn) == LATEST:
                return
            conn.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_SPACE, MIGRATION_LOCK))
            try:
                for migration in MIGRATIONS:
                    with conn.transaction():
                        version = self._version(conn)
                        if version >= migration.version:
                            continue
                        if version == 0:
                            self._check_empty(conn)
                            conn.execute(
                                "CREATE TABLE isccd_schema (version integer PRIMARY KEY, "
                                "summary text NOT NULL, applied_at timestamptz NOT NULL "
                                "DEFAULT now())"
                            )
                        for statement in migration.statements:
                            conn.execute(statement.encode())
                        conn.execute(
                            "INSERT INTO isccd_schema (version, summary) VALUES (%s, %s)",
                            (migration.version, migration.summary),
                        )
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_SPACE, MIGRATION_LOCK))
            self._take_host(conn)
        except psycopg.Error as exc:
            self._raise(exc, "migrate")

    def _check_empty(self, conn: psycopg.Connection[Any]) -> None:
        row = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm')"
        ).fetchone()
        if row is not None and row[0]:
            raise StoreCorruptError(
                f"the database {self._redacted} holds tables but no isccd schema version: it "
                "is not an isccd index; choose another database (or schema) in [store] url"
            )

    def close(self) -> None:
        """Release the host's lock and close every connection; idempotent. An open
        transaction is rolled back."""
        pool, self._pool = self._pool, None
        conn, self._conn = self._conn, None
        self._save_mark(force=True)
        if conn is not None:
            conn.close()  # the server drops the session's locks and rolls back
            if pool is not None:
                pool.putconn(conn)
        if pool is not None:
            pool.close()

    # -- errors --------------------------------------------------------------------------------

    def _raise(self, exc: psycopg.Error, doing: str) -> NoReturn:
        """Raise ``exc`` as a StoreError; a lost session is dropped first."""
        conn = self._conn
        lost = conn is None or conn.broken or conn.closed
        state = getattr(exc, "sqlstate", None)
        where = f"the index database {self._redacted}"
        if lost or state in _UNAVAILABLE or isinstance(exc, psycopg.InterfaceError):
            self._drop_session()
            # The next session is waited for briefly: the server may be down.
            self._unreachable = (time.monotonic(), str(exc))
            raise StoreUnavailableError(
                f"{where} is unavailable ({exc}) while trying to {doing}; isccd reconnects on "
                "the next transaction"
            ) from exc
        if state in _FULL:
            raise StoreFullError(f"{where} cannot grow: the server's disk is full ({exc})") from exc
        if state in _CORRUPT:
            raise StoreCorruptError(f"{where} reports damaged data ({exc})") from exc
        if state == "25006":
            raise StoreError(f"cannot {doing} {where}: opened for reading only") from exc
        raise StoreError(f"cannot {doing} {where}: {exc}") from exc

    # -- statements ----------------------------------------------------------------------------

    def _live_session(self) -> psycopg.Connection[Any]:
        """The session, reconnected if it was lost outside a transaction. A transaction whose
        session was lost fails every statement until it is rolled back: its statements must
        never run, committed one by one, on a new session."""
        if self._conn is None and self._in_transaction:
            raise StoreUnavailableError(
                f"the index database {self._redacted} was lost in the middle of a transaction"
            )
        return self._session()

    def _exec(self, query: str, params: Sequence[Any] | None = None) -> psycopg.Cursor[Any]:
        """Run one statement on the session (a write in a transaction takes the writers' lock
        first, see :meth:`_lock_events`). Outside a transaction (a read, or ``BEGIN``) a
        session found lost is replaced and the statement run once more."""
        doing = "read" if query.startswith("SELECT") else "write"
        statement = query.encode()
        if self._in_transaction and statement.startswith(_WRITES):
            self._lock_events()
        retry = not self._in_transaction
        while True:
            conn = self._live_session()
            try:
                if not self._queued:
                    return conn.execute(statement, params)
                queued, self._queued = self._queued, []
                with conn.pipeline():
                    for before, values in queued:
                        conn.execute(before, values)
                    return conn.execute(statement, params)  # read once the pipeline synced
            except psycopg.Error as exc:
                if retry and (conn.broken or conn.closed):
                    retry = False
                    self._drop_session()
                    self._unreachable = (time.monotonic(), str(exc))  # wait briefly: it may be down
                    continue
                self._raise(exc, doing)

    def _exec_many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        if self._in_transaction:
            self._lock_events()
        conn = self._live_session()
        try:
            queued, self._queued = self._queued, []
            with conn.pipeline(), conn.cursor() as cursor:
                for before, values in queued:
                    cursor.execute(before, values)
                cursor.executemany(query.encode(), rows)
        except psycopg.Error as exc:
            self._raise(exc, "write")

    # -- transactions --------------------------------------------------------------------------

    def begin(self) -> None:
        """Start a write transaction (reconnecting, and taking the host's lock, if needed)."""
        self._in_transaction = False  # one lost with its session is given up by now
        self._drop_broken()
        self._queued.clear()
        self._exec("BEGIN")
        self._in_transaction = True
        self._events_locked = self._notified = False
        self._savepoints.clear()
        self._logged.clear()
        self._logged_high = self._logged_own = 0

    def commit(self) -> None:
        """Commit the transaction."""
        self._queue_logged()
        self._exec("COMMIT")
        self._in_transaction = False
        self._events_locked = self._notified = False
        self._saw(self._logged_high, self._logged_own)

    def rollback(self) -> None:
        """Roll back the transaction, if one is open; a lost session has nothing to undo."""
        self._forget_interned()
        in_transaction, self._in_transaction = self._in_transaction, False
        self._events_locked = self._notified = False
        self._savepoints.clear()
        self._queued.clear()
        self._logged.clear()
        self._logged_high = self._logged_own = 0
        self._drop_broken()
        if self._conn is not None and in_transaction:
            # A session lost now took its transaction with it: nothing is left to undo.
            with contextlib.suppress(StoreUnavailableError):
                self._exec("ROLLBACK")

    def savepoint(self) -> None:
        """Start a unit of work (sent with its first statement)."""
        self._queued.append((_SAVEPOINT, None))
        self._savepoints.append(
            (
                self._events_locked,
                self._notified,
                dict(self._logged),
                self._logged_high,
                self._logged_own,
            )
        )

    def release(self) -> None:
        """Keep the unit of work (sent with the next statement; nothing, when it ran none)."""
        if self._queued and self._queued[-1][0] is _SAVEPOINT:
            self._queued.pop()
        else:
            self._queued.append((_RELEASE, None))
        self._savepoints.pop()

    def rollback_to(self) -> None:
        """Undo the unit of work (and the writers' lock and the notification taken in it)."""
        if self._queued and self._queued[-1][0] is _SAVEPOINT:
            self._queued.pop()  # it ran no statement: nothing to undo
        else:
            self._exec("ROLLBACK TO SAVEPOINT unit")
            self._queued.append((_RELEASE, None))
        (
            self._events_locked,
            self._notified,
            self._logged,
            self._logged_high,
            self._logged_own,
        ) = self._savepoints.pop()
        self._forget_interned()

    def _drop_broken(self) -> None:
        if self._conn is not None and (self._conn.broken or self._conn.closed):
            self._drop_session()

    @property
    def shared(self) -> bool:
        """A fleet's database: the daemons of other hosts write it too."""
        return True

    def exclusive(self) -> None:
        """Take the writers' lock now, before the first write (see :meth:`_lock_events`)."""
        if self._in_transaction:
            self._lock_events()

    def _lock_events(self) -> None:
        """Before the transaction's first write: wait for the writers' lock, held until the
        transaction ends. No other transaction then numbers events until this one has
        committed (commit order is sequence order); every writer holds it before it takes a
        row lock, so writers of the fleet never deadlock each other; and what this one read
        since is what it commits against (no other host commits meanwhile)."""
        if self._events_locked:
            return
        self._queued.append((b"SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, EVENTS_LOCK)))
        self._events_locked = True

    def _notify_once(self, now: float) -> None:
        """Before the transaction's first event: notify listeners when it commits, and note
        that this host was heard from."""
        if self._notified:
            return
        self._lock_events()
        self._queued.append((
            b"WITH seen AS (UPDATE hosts SET seen_at = %s WHERE name = %s) "
            b"SELECT pg_notify(%s, %s)",
            (now, self._host, EVENTS_CHANNEL, self._host),
        ))  # fmt: skip
        self._notified = True

    def _logged_about(self, host: str, seq: int) -> None:
        """An event about ``host`` was logged in this transaction with ``seq``."""
        self._logged[host] = max(seq, self._logged.get(host, 0))
        self._logged_high = max(seq, self._logged_high)
        if host == self._host:
            self._logged_own = max(seq, self._logged_own)

    def _queue_logged(self) -> None:
        """Queue the update of the hosts' last sequence numbers this transaction logged, once
        (before its commit, or before they are read)."""
        if not self._logged:
            return
        names, seqs = list(self._logged), list(self._logged.values())
        self._queued.append((
            b"UPDATE hosts h SET last_seq = greatest(h.last_seq, v.seq) FROM "
            b"unnest(%b::text[], %b::bigint[]) AS v(name, seq) WHERE h.name = v.name",
            (names, seqs),
        ))  # fmt: skip
        self._logged = {}

    # -- interning -----------------------------------------------------------------------------

    def _intern_path(self, table: str, path: str, cache: dict[bytes, int]) -> int:
        value = to_fs(path)
        found = cache.get(value)
        if found is not None:
            return found
        row = self._exec(
            f"SELECT id FROM {table} WHERE host = %s AND sha256(path) = sha256(%s)",  # noqa: S608 -- table is a constant of this module
            (self._host, value),
        ).fetchone()
        if row is None:
            row = self._exec(
                f"INSERT INTO {table} (host, path) VALUES (%s, %s) RETURNING id",  # noqa: S608 -- as above
                (self._host, value),
            ).fetchone()
        assert row is not None
        if len(cache) > 4096:  # directories are many; keep the cache bounded
            cache.clear()
        cache[value] = int(row[0])
        return int(row[0])

    def _forget_interned(self) -> None:
        """Forget every interned id: after a rollback or a purge they may name rows that no
        longer exist."""
        self._roots.clear()
        self._dirs.clear()
        self._profiles.clear()
        self._profile_names.clear()

    def _root_id(self, root: str) -> int:
        return self._intern_path("roots", root, self._roots)

    def _dir_id(self, directory: str) -> int:
        return self._intern_path("dirs", directory, self._dirs)

    def _profile_id(self, profile: str) -> int:
        found = self._profiles.get(profile)
        if found is not None:
            return found
        # Shared by the fleet: another host may insert the same profile at the same time.
        row = self._exec(
            "WITH new AS (INSERT INTO profiles (profile) VALUES (%s) "
            "ON CONFLICT (profile) DO NOTHING RETURNING id) "
            "SELECT id FROM new UNION ALL SELECT id FROM profiles WHERE profile = %s",
            (profile, profile),
        ).fetchone()
        assert row is not None
        self._profiles[profile] = int(row[0])
        return int(row[0])

    def _profile_name(self, profile_id: int) -> str:
        name = self._profile_names.get(profile_id)
        if name is None:
            row = self._exec("SELECT profile FROM profiles WHERE id = %s", (profile_id,)).fetchone()
            name = self._profile_names[profile_id] = str(row[0]) if row else ""
        return name
