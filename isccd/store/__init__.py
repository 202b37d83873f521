"""The store: what isccd remembers between runs, behind a small backend interface.

:func:`open_store` picks the backend from a URL:

- ``sqlite:///var/lib/isccd/isccd.db`` (the default; everything after ``sqlite://`` is the
  path, percent-encoded where needed, as in ``file://`` URLs), or a plain path: one host's
  index in an embedded database;
- ``postgresql://`` (or ``postgres://``) followed by a libpq connection URI: a database that a
  fleet of hosts shares (needs the ``isccd[fleet]`` extra; the driver is imported only then).

Both implement :class:`isccd.store.base.Store`; nothing above the store depends on which one is
in use. The pipeline uses a store from one owner thread (:class:`isccd.store.owner.StoreOwner`).
"""

from __future__ import annotations

import os
import socket
import urllib.parse
from pathlib import Path

from isccd.errors import StoreError
from isccd.store.base import (
    FileKey,
    FolderFile,
    ListedFile,
    NearPair,
    NewEvent,
    StaleUnits,
    Store,
    StoredFile,
)
from isccd.store.database import SqliteOptions
from isccd.store.pgurl import is_postgres_url, libpq_url, redact_url, url_fault
from isccd.store.sqlite import SqliteStore

__all__ = [
    "DB_NAME",
    "LOG_MARK_NAME",
    "FileKey",
    "FolderFile",
    "ListedFile",
    "NearPair",
    "NewEvent",
    "SqliteOptions",
    "SqliteStore",
    "StaleUnits",
    "Store",
    "StoredFile",
    "default_host",
    "is_postgres_url",
    "open_store",
    "redact_url",
    "state_url",
]

#: The database file in a state directory.
DB_NAME = "isccd.db"
#: The file in a state directory where a writer of a shared database remembers how far it
#: followed the event log (:mod:`isccd.store.pgruns`).
LOG_MARK_NAME = "fleet-log.json"


def state_url(state_dir: str | os.PathLike[str]) -> str:
    """The store URL of the default database in a state directory."""
    path = Path(state_dir).absolute() / DB_NAME
    return "sqlite://" + urllib.parse.quote(os.fsencode(path))


def default_host() -> str:
    """The host name a store is opened for when none is configured: the machine's."""
    return socket.gethostname()


def _open_sqlite(
    location: str, host: str, readonly: bool, sqlite: SqliteOptions | None, beside: bool
) -> Store:
    if not location:
        raise StoreError("a sqlite store URL needs a path: sqlite:///path/to/isccd.db")
    path = os.fsdecode(urllib.parse.unquote_to_bytes(location))
    return SqliteStore(Path(path), host=host, readonly=readonly, options=sqlite, beside=beside)


def _open_postgres(
    url: str, host: str, readonly: bool, log_mark: Path | None, beside: bool
) -> Store:
    # Checked here, not by libpq: its messages about a URL it refuses quote the URL whole.
    fault = url_fault(url)
    if fault is not None:
        raise StoreError(f"the store URL {redact_url(url)} is not one libpq accepts: {fault}")
    url = libpq_url(url)
    try:
        from isccd.store.postgres import PostgresStore  # noqa: PLC0415 -- the driver is optional
    except ImportError as exc:
        raise StoreError(
            f"the store {redact_url(url)} is a PostgreSQL database, and its driver is not "
            f"installed ({exc}): pip install 'isccd[fleet]'"
        ) from None
    return PostgresStore(url, host=host, readonly=readonly, log_mark=log_mark, beside=beside)


def open_store(
    url: str,
    *,
    host: str | None = None,
    readonly: bool = False,
    sqlite: SqliteOptions | None = None,
    log_mark: Path | None = None,
    beside: bool = False,
) -> Store:
    """Open the store a URL names.

    Args:
        url: ``sqlite://<path>``, ``postgresql://...``, or a plain file path (SQLite).
        host: The host name to read and write for (default: :func:`default_host`).
        readonly: Open for reading only (a second process next to the writer).
        sqlite: Options of the SQLite backend.
        log_mark: Where a writer of a shared database remembers how far it followed the event
            log, to tell when the database was restored from an older dump (the file
            :data:`LOG_MARK_NAME` of its state directory); ``None``: while it is open only.
        beside: Open an existing store at this isccd's schema to write beside its writer (a
            running daemon): the watchlists only, which every writer reloads by the version
            it polls at each batch; each transaction takes the database's write lock (the
            fleet's writers' lock for PostgreSQL).

    Returns:
        The open backend, checked and migrated when opened for writing.

    Raises:
        StoreError: Unknown scheme, or the store cannot be opened (see the backends).
    """
    host = host or default_host()
    if is_postgres_url(url):
        return _open_postgres(url, host, readonly, log_mark, beside)
    scheme, sep, location = url.partition("://")
    if not sep:
        return _open_sqlite(urllib.parse.quote(os.fsencode(url)), host, readonly, sqlite, beside)
    if scheme.lower() != "sqlite":
        raise StoreError(
            f"unknown store URL scheme {scheme!r} in {redact_url(url)!r} "
            "(known: sqlite, postgresql, postgres)"
        )
    return _open_sqlite(location, host, readonly, sqlite, beside)
