"""Editing the store's watchlists, for ``isccd watchlist``: the pipeline's face over them.

The editor opens the store *beside* its writer (:func:`isccd.store.open_store` with
``beside``): a running daemon keeps the store's writer lock, and the watchlists are what no
writer mirrors behind a lock but reloads by the version it polls at the start of each batch
(:mod:`isccd.pipeline.watchmatch`). So the command writes them directly, each change in one
transaction under the database's own write lock (SQLite's, or the fleet's writers' lock), and
the daemon (every daemon of a fleet) matches with them from its next batch on. A SQLite store
that does not exist yet, or was written by an older isccd, is created or migrated first, as
``isccd scan`` would, when no writer holds it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from isccd.errors import InvalidCodeError, StoreError, StoreLockedError
from isccd.model import FileRecord
from isccd.pipeline.queries import units_of_code
from isccd.pipeline.watchmatch import TYPES
from isccd.store import Store, is_postgres_url, open_store
from isccd.store.watchlists import NewRef, Watchlist, WatchlistRefused, WatchUnit

__all__ = [
    "NewRef",
    "WatchUnit",
    "Watchlist",
    "WatchlistEditor",
    "WatchlistRefused",
    "ref_of_code",
    "ref_of_record",
]


def ref_of_code(code: str, label: str) -> NewRef:
    """A reference from an ISCC-CODE or a single unit.

    Raises:
        InvalidCodeError: It cannot be decoded, or holds no unit a watchlist matches.
    """
    units = [u for u in units_of_code(code) if u.type in TYPES]
    if not units:
        raise InvalidCodeError(f"{code!r} has no unit a watchlist matches")
    iscc = code if code.startswith("ISCC:") else f"ISCC:{code}"
    return NewRef(label, iscc, [(u.type, u.iscc, u.digest) for u in units])


def ref_of_record(record: FileRecord, label: str) -> NewRef | None:
    """A reference from a coded file (``None`` when it has no unit a watchlist matches)."""
    units = [(u.type, u.iscc, u.digest) for u in record.units if u.type in TYPES]
    return NewRef(label, record.iscc, units) if units else None


@dataclass(frozen=True, slots=True)
class Added:
    """What :meth:`WatchlistEditor.add` did: the watchlist's id and its new references'."""

    watchlist: int
    refs: Sequence[int]


class WatchlistEditor:
    """The store's watchlists, read and changed beside its writer."""

    def __init__(self, store_url: str, *, host: str, clock: Callable[[], float] = time.time):
        """Open the store beside its writer.

        Raises:
            StoreError: It cannot be opened (missing and not creatable, an older schema that
                its writer, a running older isccd, keeps).
        """
        self._clock = clock
        self._store = self._open(store_url, host)

    @staticmethod
    def _open(url: str, host: str) -> Store:
        try:
            return open_store(url, host=host, beside=True)
        except StoreError:
            if is_postgres_url(url):
                raise  # a fleet's database is migrated by its daemons
        # Created, or migrated, as a scan would; when its writer runs, what it opened is what
        # it migrated.
        with contextlib.suppress(StoreLockedError):
            open_store(url, host=host).close()
        return open_store(url, host=host, beside=True)

    def close(self) -> None:
        """Close the store."""
        self._store.close()

    def __enter__(self) -> WatchlistEditor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lists(self) -> list[Watchlist]:
        """Every watchlist, by name."""
        return self._store.watchlists()

    def units(self, name: str) -> list[WatchUnit]:
        """Every unit of a watchlist's references, by reference."""
        return self._store.watch_units_of_list(name)

    def add(self, name: str, threshold: int | None, refs: Sequence[NewRef]) -> Added:
        """Add references to a watchlist (made with ``threshold`` when new), all or none.

        Raises:
            StoreError: The watchlist has another threshold, or the store cannot be written.
        """
        store = self._store
        store.begin()
        try:
            list_id, ids = store.add_watch_refs(name, threshold, refs, self._clock())
            store.commit()
        except BaseException:
            store.rollback()
            raise
        return Added(list_id, ids)

    def remove(self, name: str, ref: int | None = None) -> int:
        """Remove a watchlist, or one of its references; how many references went.

        Raises:
            StoreError: No such watchlist or reference, or the store cannot be written.
        """
        store = self._store
        store.begin()
        try:
            removed = store.remove_watch(name, ref)
            store.commit()
        except BaseException:
            store.rollback()
            raise
        return removed
