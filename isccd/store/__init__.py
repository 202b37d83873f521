"""The store: what isccd remembers between runs, behind a small backend interface.

:func:`open_store` picks the backend from a URL:

- ``sqlite:///var/lib/isccd/isccd.db`` (the default; everything after ``sqlite://`` is the
  path, percent-encoded where needed, as in ``file://`` URLs), or a plain path;
- ``memory://`` for tests.

A new backend (say a PostgreSQL one shared by a fleet) is one more entry in ``_BACKENDS`` that
implements :class:`isccd.store.base.Store`; nothing above the store changes. The pipeline uses a
store from one owner thread (:class:`isccd.store.owner.StoreOwner`).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from isccd.errors import StoreError
from isccd.store.base import FileKey, NearPair, StaleUnits, Store, StoredFile
from isccd.store.database import SqliteOptions
from isccd.store.memory import MemoryStore
from isccd.store.sqlite import SqliteStore

__all__ = [
    "DB_NAME",
    "FileKey",
    "MemoryStore",
    "NearPair",
    "SqliteOptions",
    "SqliteStore",
    "StaleUnits",
    "Store",
    "StoredFile",
    "open_store",
    "state_url",
]

#: The database file in a state directory.
DB_NAME = "isccd.db"


def state_url(state_dir: str | os.PathLike[str]) -> str:
    """The store URL of the default database in a state directory."""
    path = Path(state_dir).absolute() / DB_NAME
    return "sqlite://" + urllib.parse.quote(os.fsencode(path))


def _open_sqlite(location: str, readonly: bool, sqlite: SqliteOptions | None) -> Store:
    if not location:
        raise StoreError("a sqlite store URL needs a path: sqlite:///path/to/isccd.db")
    path = os.fsdecode(urllib.parse.unquote_to_bytes(location))
    return SqliteStore(Path(path), readonly=readonly, options=sqlite)


def _open_memory(location: str, readonly: bool, sqlite: SqliteOptions | None) -> Store:
    return MemoryStore("memory://" + location)


_BACKENDS: dict[str, Callable[[str, bool, SqliteOptions | None], Store]] = {
    "sqlite": _open_sqlite,
    "memory": _open_memory,
}


def open_store(url: str, *, readonly: bool = False, sqlite: SqliteOptions | None = None) -> Store:
    """Open the store a URL names.

    Args:
        url: ``sqlite://<path>``, ``memory://``, or a plain file path (SQLite).
        readonly: Open for reading only (a second process next to the writer).
        sqlite: Options of the SQLite backend.

    Returns:
        The open backend, checked and migrated when opened for writing.

    Raises:
        StoreError: Unknown scheme, or the store cannot be opened (see the backends).
    """
    scheme, sep, location = url.partition("://")
    if not sep:
        return _open_sqlite(urllib.parse.quote(os.fsencode(url)), readonly, sqlite)
    opener = _BACKENDS.get(scheme.lower())
    if opener is None:
        known = ", ".join(sorted(_BACKENDS))
        raise StoreError(f"unknown store URL scheme {scheme!r} in {url!r} (known: {known})")
    return opener(location, readonly, sqlite)
