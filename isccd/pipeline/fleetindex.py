"""The other hosts' part of the in-memory index, for a store a fleet shares.

Each daemon keeps the first 64 bits of every unit of the whole fleet in memory
(:mod:`isccd.hamming`), so that a near-duplicate question never waits on the database for its
scan. Its own files it indexes as it stores them; the other hosts' changes it learns from the
shared event log, where each ``file.*`` event names the file it changed (:attr:`Event.file_id`):
the file is read again, and its codes replace the old ones (or leave the index, when it is no
longer live). The log is the truth, so reading the same change twice does no harm.

Two readers feed it:

- the daemon's log follower (:mod:`isccd.daemon.fleetlog`), on its own connection, woken by the
  database's notifications: it reads what changed and :meth:`FleetIndex.offer` s it; the store's
  owner thread applies it before the index is next used (:meth:`FleetIndex.apply`);
- the owner thread itself, before it decides a file's relations, under the writers' lock
  (:meth:`FleetIndex.catch_up`): every change committed before the lock was taken is then in
  the index, so two hosts adding near copies at once cannot both miss the other, however far
  behind the follower is.

Every update carries the sequence number it is complete up to; one that is not newer than the
index is dropped (a later read covered it, with fresher codes).
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from isccd.hamming import HammingSearch
from isccd.model import Event, UnitType
from isccd.store import Store

#: Events read at once while catching up.
CATCH_UP_PAGE = 1000


@dataclass(frozen=True, slots=True)
class IndexUpdate:
    """Other hosts' changes to the index, complete up to a sequence number.

    Attributes:
        upto: Every other host's file change logged up to this seq is in ``codes``.
        codes: File id -> its unit digests by type, or ``None`` for a file that is no longer
            live.
    """

    upto: int
    codes: Mapping[int, Mapping[UnitType, bytes] | None]


def changed_files(events: Iterable[Event], host: str) -> list[int]:
    """The files the ``file.*`` events of other hosts than ``host`` changed, in order."""
    return sorted({e.file_id for e in events if e.file_id is not None and e.host != host})


def read_update(store: Store, events: Iterable[Event], upto: int) -> IndexUpdate:
    """What the files changed by ``events`` hold now, read from ``store`` (any connection)."""
    ids = changed_files(events, store.host)
    found = {s.id: s for s in store.files_by_id(ids)} if ids else {}
    codes: dict[int, Mapping[UnitType, bytes] | None] = {}
    for file_id in ids:
        stored = found.get(file_id)
        if stored is None or not stored.live:
            codes[file_id] = None
        else:
            codes[file_id] = {u.type: u.digest for u in stored.record.units}
    return IndexUpdate(upto, codes)


class FleetIndex:
    """Where the in-memory index stands in the shared log, and the updates waiting for it.

    :meth:`offer` may be called from any thread; everything else belongs to the store's owner
    thread, with the index.

    Args:
        position: The sequence number the index is complete up to (read before the index
            was loaded).
    """

    def __init__(self, position: int) -> None:
        self.position = position
        self._inbox: collections.deque[IndexUpdate] = collections.deque()
        self._lock = threading.Lock()
        self._waiting = 0

    @property
    def waiting(self) -> int:
        """Files in updates offered and not applied yet."""
        return self._waiting

    def offer(self, update: IndexUpdate) -> None:
        """Hand over an update read elsewhere (thread-safe); it is applied before the index
        is next used."""
        with self._lock:
            self._inbox.append(update)
            self._waiting += len(update.codes)

    def apply(self, index: HammingSearch) -> None:
        """Apply the updates offered so far."""
        while True:
            with self._lock:
                if not self._inbox:
                    return
                update = self._inbox.popleft()
                self._waiting -= len(update.codes)
            self._apply(index, update)

    def catch_up(self, store: Store, index: HammingSearch) -> None:
        """Apply every change other hosts committed so far, reading the log from the index's
        position (call under the writers' lock, so that nothing commits meanwhile)."""
        self.apply(index)
        head = store.last_seq(fleet=True)
        while self.position < head:
            events = store.events_since(self.position, CATCH_UP_PAGE, fleet=True)
            if not events:
                return
            self._apply(index, read_update(store, events, events[-1].seq))

    def _apply(self, index: HammingSearch, update: IndexUpdate) -> None:
        if update.upto <= self.position:
            return  # read before a newer update was applied: that one is as fresh or fresher
        for file_id, codes in update.codes.items():
            if codes is None:
                index.remove(file_id)
            else:
                index.add(file_id, codes)
        self.position = update.upto
