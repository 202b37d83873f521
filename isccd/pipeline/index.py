"""The index: the store and its in-memory Hamming search kept in step, as the store's owner
thread owns them.

It is the object that thread owns (:class:`isccd.store.owner.StoreOwner`): every method runs
on it, and it implements the owner's transaction protocol (begin, savepoints, commit,
rollback) with the search's undo log, so a unit of work that fails, or a batch whose commit
fails, leaves the search as it was; the events logged in a batch are pending until it commits,
then handed to ``on_commit``. It decides nothing: relations are decided in
:mod:`isccd.pipeline.relate`, changes applied (and announced) by :mod:`isccd.pipeline.changes`.

In a store a fleet shares (:attr:`isccd.store.Store.shared`), the search holds the fleet's
codes, brought up to the other hosts' commits (:mod:`isccd.pipeline.fleetindex`) under the
writers' lock before each decision (:meth:`Index.decide`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from isccd.hamming import HammingSearch, codes64
from isccd.model import Event, FileRecord, UnitType
from isccd.pipeline.bounds import Step
from isccd.pipeline.dirwatch import FolderWatch
from isccd.pipeline.fleetindex import FleetIndex
from isccd.pipeline.options import PipelineOptions
from isccd.pipeline.watchmatch import Watchlists
from isccd.store import FileKey, NewEvent, Store, StoredFile

_log = logging.getLogger("isccd.pipeline")


class Index:
    """The store and its in-memory search, used from the store's owner thread."""

    def __init__(
        self,
        store: Store,
        options: PipelineOptions | None = None,
        *,
        clock: Callable[[], float] = time.time,
        on_commit: Callable[[Sequence[Event]], None] | None = None,
        load: bool = True,
    ) -> None:
        """Wrap an open store.

        Args:
            store: The backend (owned by the calling thread from now on).
            options: Thresholds, retention, retries.
            clock: Unix time for events and tombstones.
            on_commit: Called on this thread with the events of each committed batch, in
                sequence order (the daemon hands them to its broker). It must not block.
            load: Build the index of the enabled unit types now (else on first use).
        """
        self.store = store
        self.options = options or PipelineOptions()
        #: Unix time for events and tombstones.
        self.clock = clock
        self._on_commit = on_commit
        self.search = HammingSearch(())
        # Where the index stands in a shared log: read before any unit type is loaded.
        self.fleet = FleetIndex(store.last_seq(fleet=True)) if store.shared else None
        self._caught_up = False
        self._loaded: set[UnitType] = set()
        self._pending: list[Event] = []
        # The events of a job of new files, logged together at its end (changes.add_new).
        self.queue: list[NewEvent] | None = None
        # The near links a job of new files began, file by file, bounded and stored together
        # at its end (isccd.pipeline.bounds): a family's files share their nearest, read
        # once for the job.
        self.job_steps: list[Step] | None = None
        # Within a job of new files (changes.add_new): the files and keys it stored or read,
        # by id (a family's files name the same few others, most of them of the same job).
        self.job_files: dict[int, StoredFile] | None = None
        self.job_keys: dict[int, FileKey] | None = None
        self._undo: list[tuple[int, dict[UnitType, int | None]]] = []
        # How many files the in-memory index found within the threshold of a file's unit, of
        # which it was asked the nearest only: read back by relate.related() as it decides.
        self.totals: dict[tuple[int, UnitType], int] = {}
        self._marks: list[tuple[int, int, bool]] = []
        #: The watchlists every new or changed file is matched against, read again at the
        #: start of a batch when the store's version of them changed.
        self.watchlists = Watchlists()
        #: The folders' sums and the duplicate folders announced, once the daemon asks for
        #: them (:func:`isccd.pipeline.changes.watch_folders`); kept current at each commit.
        self.folders: FolderWatch | None = None
        if load:
            for unit_type in self.options.thresholds.enabled():
                self.ensure_loaded(unit_type)

    def set_options(self, options: PipelineOptions) -> None:
        """Work under ``options`` from now on, keeping the duplicate policy in force: that one
        is the store's, switched only with the relations (:mod:`isccd.pipeline.policy`)."""
        self.options = replace(options, thresholds=self.options.thresholds)

    # -- the in-memory search ------------------------------------------------------------------

    def ensure_loaded(self, unit_type: UnitType) -> None:
        """Build the index of one unit type from the store, if not done yet."""
        if unit_type in self._loaded:
            return
        index = self.search.add_type(unit_type)
        for ids, codes in self.store.unit_codes(unit_type, fleet=True):
            index.add_many(ids, codes64(codes))
        self._loaded.add(unit_type)

    def refresh(self) -> None:
        """Apply the other hosts' changes the log follower read (nothing for a store no other
        daemon writes)."""
        if self.fleet is not None:
            self.fleet.apply(self.search)

    def decide(self) -> None:
        """Before deciding relations: take the writers' lock, and bring the index up to every
        change committed so far (once per transaction: nothing commits while it holds it)."""
        self.store.exclusive()
        if self.fleet is not None and not self._caught_up:
            self.fleet.catch_up(self.store, self.search)
            self._caught_up = True

    def index_put(self, file_id: int, record: FileRecord | None, *, new: bool = False) -> None:
        """Index a file's units (``new``: a file just stored, under an id never used)."""
        if new:
            before: dict[UnitType, int | None] = dict.fromkeys(self._loaded)
        else:
            before = {t: self.search[t].get(file_id) for t in self._loaded}
        self._undo.append((file_id, before))
        if record is None:
            self.search.remove(file_id)
        else:
            self.search.add(file_id, {u.type: u.digest for u in record.units}, new=new)

    def index_new(self, ids: Sequence[int], records: Sequence[FileRecord]) -> None:
        """:meth:`index_put` of a job of files just stored, together."""
        loaded = self._loaded
        self._undo += [(file_id, dict.fromkeys(loaded)) for file_id in ids]
        self.search.add_new(ids, [{u.type: u.digest for u in r.units} for r in records])

    def _unwind(self, mark: int) -> None:
        while len(self._undo) > mark:
            file_id, before = self._undo.pop()
            for unit_type, code in before.items():
                if code is None:
                    self.search[unit_type].discard(file_id)
                else:
                    self.search[unit_type].add(file_id, code)

    def local(self, key: FileKey) -> bool:
        """Whether a file is this host's (another host's identity means nothing here)."""
        return key.host in ("", self.store.host)

    # -- events --------------------------------------------------------------------------------

    @property
    def pending(self) -> Sequence[Event]:
        """Events logged in the open batch, not committed yet."""
        return self._pending

    def since(self, mark: int) -> list[Event]:
        """The pending events logged since there were ``mark`` of them."""
        return self._pending[mark:]

    def logged(self, events: Sequence[Event]) -> None:
        """Events just logged in the open batch: pending until it commits."""
        self._pending += events

    # -- transactions (the owner's protocol) ---------------------------------------------------

    def begin(self) -> None:
        """Start a batch."""
        self.refresh()
        self.store.begin()
        self.watchlists.refresh(self.store)
        self._caught_up = False
        self._undo.clear()
        self._marks.clear()
        self.totals.clear()

    def savepoint(self) -> None:
        """Start a unit of work."""
        self.store.savepoint()
        self._marks.append((len(self._undo), len(self._pending), self._caught_up))

    def release(self) -> None:
        """Keep the unit of work."""
        self.store.release()
        self._marks.pop()

    def rollback_to(self) -> None:
        """Undo the unit of work, in the store and the index."""
        self.store.rollback_to()
        # The writers' lock taken in the unit is given up with it: other hosts may commit
        # before it is taken again, and the index must catch up with them then.
        undo, pending, self._caught_up = self._marks.pop()
        self._unwind(undo)
        del self._pending[pending:]

    def commit(self) -> None:
        """Commit the batch and hand its events to ``on_commit``."""
        self.store.commit()
        self._undo.clear()
        committed, self._pending = self._pending, []
        if committed and self.folders is not None:
            try:
                self.folders.note(committed, self.store, self.clock())
            except Exception:  # the batch is committed; the folders are found again at a start
                _log.exception("folder_sums_failed", extra={"events": len(committed)})
                self.folders = None
        if committed and self._on_commit is not None:
            try:
                self._on_commit(committed)
            except Exception:  # the batch is committed; a faulty listener must not undo that
                _log.exception("event_listener_failed", extra={"events": len(committed)})

    def rollback(self) -> None:
        """Undo the batch, in the store and the index."""
        self.store.rollback()
        self._unwind(0)
        self._marks.clear()
        self._pending.clear()

    def close(self) -> None:
        """Close the store."""
        self.store.close()
