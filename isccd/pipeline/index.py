"""The index: what isccd knows about the files, the store and its in-memory Hamming search kept
in step; it applies what was learned about files and decides which events that causes.

It is the object the store's owner thread owns (:class:`isccd.store.owner.StoreOwner`): every
method runs on that thread, inside the transaction the owner opened, so reads see the batch's
own writes and every change is committed together with its events. It implements the owner's
transaction protocol, keeping the in-memory index in step: a unit of work that fails, or a batch
whose commit fails, leaves the index as it was.

Decisions (the store only stores):

- A record for a path the store does not know is ``file.added``; for a known path whose content
  differs, or that became or stopped being a hardlink of another stored file (a copy replaced
  by a link of its original), ``file.changed``; a path whose content is the same otherwise
  (``touch``, ``chmod``, an editor's save of identical bytes) is updated silently.
- A file found at a new path with the identity, size and mtime of a stored file that is gone
  from its old path is ``file.moved`` (the rename may change ctime, so ctime is not compared);
  if the old path still holds it, it is a hardlink: stored under the new path too, sharing the
  record, never hashed again and never reported as a duplicate of itself. Either way nothing is
  read, and a Meta-Code made from the file name follows the new name
  (:func:`isccd.hashing.renamed_record`), with the ISCC-CODE.
- After each change the file's relations are recomputed (:mod:`isccd.match`): new exact or near
  duplicates are announced, ended ones are ``dup.resolved``.

In a store a fleet shares (:attr:`isccd.store.Store.shared`), relations span the fleet: exact
copies are looked up on every host, near ones in the in-memory index of the fleet's codes
(:mod:`isccd.pipeline.fleetindex`), each decision taken under the writers' lock; a duplicate on
another host is announced on both sides (:mod:`isccd.pipeline.mirror`). Files of other hosts
are never this host's hardlinks, whatever their ``(st_dev, st_ino)``.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from isccd.hamming import HammingSearch, Hit, code64
from isccd.hashing import compose_iscc, renamed_record
from isccd.match import (
    CONTENT_UNITS,
    Relation,
    Side,
    Thresholds,
    is_exact,
    near_radii,
    relate_all,
)
from isccd.model import (
    Event,
    EventType,
    FileIssue,
    FileRecord,
    FileStat,
    IssueCode,
    IssueKind,
    RelationKind,
    UnitType,
    sort_units,
)
from isccd.pipeline import events as payload
from isccd.pipeline.announce import announce
from isccd.pipeline.fleetindex import FleetIndex
from isccd.pipeline.options import PipelineOptions
from isccd.pipeline.peers import size_of
from isccd.store import FileKey, NewEvent, Store, StoredFile

_log = logging.getLogger("isccd.pipeline")

#: Issue codes meaning "there is no regular file here any more".
GONE = frozenset({IssueCode.VANISHED, IssueCode.NOT_REGULAR})


def issue_codes(record: FileRecord) -> set[IssueCode]:
    """The classified causes of a record's issues."""
    return {i.code for i in record.issues if i.code is not None}


def is_unstable(record: FileRecord) -> bool:
    """The file changed while it was read: nothing in the record can be trusted."""
    return IssueCode.UNSTABLE in issue_codes(record)


def side_of(file_id: int, record: FileRecord, *, foreign: bool = False) -> Side:
    """What :mod:`isccd.match` needs of a stored or new record (``foreign``: another host's
    file, whose identity means nothing here)."""
    return Side(
        file_id=file_id,
        identity=record.stat.identity if record.stat and not foreign else None,
        datahash=record.datahash,
        size=size_of(record),
        digests={u.type: u.digest for u in record.units},
    )


def _same_content(a: FileRecord, b: FileRecord) -> bool:
    return (
        a.datahash == b.datahash
        and a.iscc == b.iscc
        and {(u.type, u.digest) for u in a.units} == {(u.type, u.digest) for u in b.units}
    )


def stored_side(stored: StoredFile, host: str) -> Side:
    """:func:`side_of` a stored file, seen from ``host``."""
    return side_of(stored.id, stored.record, foreign=bool(stored.host) and stored.host != host)


def _links_change(old: FileRecord, new: FileRecord) -> bool:
    """Whether the path now names another inode, one of several names (a copy replaced by a
    hardlink of its original changes its relations; an editor's save of the same bytes through
    a new inode, or a tree copied to a new disk, does not)."""
    if old.stat is None or new.stat is None or old.stat.identity == new.stat.identity:
        return False
    return new.stat.nlink > 1 or old.stat.nlink > 1


def exact_copies(
    store: Store, file_id: int, record: FileRecord, thresholds: Thresholds
) -> list[StoredFile]:
    """Live files of the fleet holding the same bytes as this one, other than itself and its
    hardlinks, when the policy reports them."""
    if not record.datahash or not thresholds.admits(size_of(record)):
        return []
    me = side_of(file_id, record)
    return [
        s
        for s in store.files_by_datahash(record.datahash, fleet=True)
        if s.id != file_id and is_exact(me, stored_side(s, store.host), thresholds)
    ]


class Index:
    """Store + in-memory index + duplicate decisions, used from one thread."""

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
        self._clock = clock
        self._on_commit = on_commit
        self.search = HammingSearch(())
        # Where the index stands in a shared log: read before any unit type is loaded.
        self.fleet = FleetIndex(store.last_seq(fleet=True)) if store.shared else None
        self._caught_up = False
        self._loaded: set[UnitType] = set()
        self._pending: list[Event] = []
        # The events of a job of new files, logged together at its end (add_new).
        self._queue: list[NewEvent] | None = None
        self._undo: list[tuple[int, dict[UnitType, int | None]]] = []
        # How many files the in-memory index found within the threshold of a file's unit, of
        # which it was asked the nearest only: read back by related() as it decides.
        self._totals: dict[tuple[int, UnitType], int] = {}
        self._marks: list[tuple[int, int, bool]] = []
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
        for chunk in self.store.unit_digests(unit_type, fleet=True):
            index.add_many([fid for fid, _ in chunk], [code64(d) for _, d in chunk])
        self._loaded.add(unit_type)

    def refresh(self) -> None:
        """Apply the other hosts' changes the log follower read (nothing for a store no other
        daemon writes)."""
        if self.fleet is not None:
            self.fleet.apply(self.search)

    def _decide(self) -> None:
        """Before deciding relations: take the writers' lock, and bring the index up to every
        change committed so far (once per transaction: nothing commits while it holds it)."""
        self.store.exclusive()
        if self.fleet is not None and not self._caught_up:
            self.fleet.catch_up(self.store, self.search)
            self._caught_up = True

    def _index_put(self, file_id: int, record: FileRecord | None, *, new: bool = False) -> None:
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

    def _unwind(self, mark: int) -> None:
        while len(self._undo) > mark:
            file_id, before = self._undo.pop()
            for unit_type, code in before.items():
                if code is None:
                    self.search[unit_type].discard(file_id)
                else:
                    self.search[unit_type].add(file_id, code)

    # -- transactions (the owner's protocol) ---------------------------------------------------

    def begin(self) -> None:
        """Start a batch."""
        self.refresh()
        self.store.begin()
        self._caught_up = False
        self._undo.clear()
        self._marks.clear()
        self._totals.clear()

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

    # -- events --------------------------------------------------------------------------------

    @property
    def pending(self) -> Sequence[Event]:
        """Events logged in the open batch, not committed yet."""
        return self._pending

    def emit(
        self,
        type: EventType,
        root: str,
        path: str,
        data: dict[str, Any],
        *,
        host: str | None = None,
        file_id: int | None = None,
    ) -> Event:
        """Log an event in the current transaction (``host``: about another host's file;
        ``file_id``: the file a ``file.*`` event changed)."""
        event = self.store.append_event(
            type, root, path, data, self._clock(), host=host, file_id=file_id
        )
        self._pending.append(event)
        return event

    def note(
        self,
        type: EventType,
        root: str,
        path: str,
        data: dict[str, Any],
        *,
        host: str | None = None,
        file_id: int | None = None,
        plain: bool = False,
    ) -> None:
        """:meth:`emit`, or while :meth:`add_new` applies a job, queue the event to be logged
        with the job's others, in the same order (nothing reads the log meanwhile; ``plain``:
        see :attr:`NewEvent.plain <isccd.store.NewEvent.plain>`)."""
        if self._queue is None:
            self.emit(type, root, path, data, host=host, file_id=file_id)
        else:
            queued = NewEvent(type, root, path, data, self._clock(), host, file_id, plain)
            self._queue.append(queued)

    # -- relations -----------------------------------------------------------------------------

    def relations(
        self,
        file_id: int,
        record: FileRecord,
        keys: Mapping[int, FileKey] | None = None,
        near: Mapping[UnitType, Sequence[Hit]] | None = None,
    ) -> list[Relation]:
        """:meth:`related`, without the counts."""
        return self.related(file_id, record, keys, near)[0]

    def related(
        self,
        file_id: int,
        record: FileRecord,
        keys: Mapping[int, FileKey] | None = None,
        near: Mapping[UnitType, Sequence[Hit]] | None = None,
    ) -> tuple[list[Relation], dict[UnitType, int]]:
        """Hardlink, exact and near relations of a stored file with every other live file (at
        most ``max_links`` near relations per unit type, the nearest), and how many files it
        is near per unit type.

        Near candidates come from the in-memory index, which holds the first 64 bits of every
        unit: for 64-bit units that is the whole digest, so only their identity and datahash
        are read from the store; longer units are confirmed on their full digests.

        Args:
            keys: What :meth:`Store.related_keys` returns for the file, if read beforehand
                (:meth:`add_new`).
            near: What the in-memory index finds within each unit type's threshold of the
                record's unit, if searched beforehand (:meth:`add_new`).
        """
        self._decide()
        thresholds = self.options.thresholds
        identity = record.stat.identity if record.stat is not None else None
        # Too small to be anyone's duplicate: only its other names count. Not looking up its
        # copies keeps a tree of a thousand empty files linear, not quadratic.
        admitted = thresholds.admits(size_of(record))
        if keys is None:
            keys = self.store.related_keys(identity, record.datahash if admitted else None)
        # Hardlinks and exact copies: their relation follows from their keys alone.
        sides = {other: self._key_side(other, key, {}) for other, key in keys.items()}
        if admitted:
            self._near_sides(file_id, record, sides, near)
        sides.pop(file_id, None)
        searched = {t: self._totals.pop((file_id, t)) for t in near_radii(thresholds)
                    if (file_id, t) in self._totals}  # fmt: skip
        if not sides:
            return [], {}  # most files: related to nothing
        me = side_of(file_id, record)
        relations, counts = relate_all(me, list(sides.values()), thresholds)
        # The index was asked for the nearest only: how many it holds within the threshold.
        return relations, {t: max(n, searched.get(t, 0)) for t, n in counts.items()}

    def _near_sides(
        self,
        file_id: int,
        record: FileRecord,
        sides: dict[int, Side],
        near: Mapping[UnitType, Sequence[Hit]] | None,
    ) -> None:
        """Add to ``sides`` the files whose units are within the near thresholds of the
        record's (what :meth:`relations` compares beyond hardlinks and exact copies), searched
        now or given in ``near``."""
        radii = near_radii(self.options.thresholds)
        digests: dict[int, dict[UnitType, bytes]] = {}
        for unit in record.units:
            radius = radii.get(unit.type)
            if radius is None:
                continue
            if near is None:
                self.ensure_loaded(unit.type)
                index = self.search[unit.type]
                hits: Sequence[Hit]
                [hits], [total] = index.nearest_each(
                    [code64(unit.digest)], radius, self._searched(), exclude=[file_id]
                )
                self._totals[(file_id, unit.type)] = total
            else:
                hits = near.get(unit.type, [])
            found = {h.file_id: h.code.to_bytes(8, "big") for h in hits if h.file_id != file_id}
            if found and unit.bits > 64:
                found = self.store.unit_digests_of(sorted(found), unit.type)
            for other, digest in found.items():
                digests.setdefault(other, {})[unit.type] = digest
        fresh = sorted(digests.keys() - sides.keys())
        if not fresh:
            return  # most files: near nothing
        self._content_of(record, fresh, digests)
        for other, key in self.store.file_keys(fresh).items():
            sides[other] = self._key_side(other, key, digests[other])

    def _content_of(
        self, record: FileRecord, ids: Sequence[int], digests: dict[int, dict[UnitType, bytes]]
    ) -> None:
        """Add to ``digests`` the Content-Codes of the files near ``record`` by a container
        unit only, of the types ``record`` has: whether those say the content differs
        (:func:`isccd.match.content_apart`) is what decides."""
        mine = [u.type for u in record.units if u.type in CONTENT_UNITS]
        if not mine:
            return  # the Data-Code is what there is
        for unit_type in mine:
            lacking = [i for i in ids if unit_type not in digests[i]]
            if lacking:
                for other, digest in self.store.unit_digests_of(lacking, unit_type).items():
                    digests[other][unit_type] = digest

    def local(self, key: FileKey) -> bool:
        """Whether a file is this host's (another host's identity means nothing here)."""
        return key.host in ("", self.store.host)

    def _key_side(self, file_id: int, key: FileKey, digests: dict[UnitType, bytes]) -> Side:
        """What :mod:`isccd.match` needs of a file known by its key."""
        identity = key.identity if self.local(key) else None
        return Side(file_id, identity, key.datahash, key.size, digests)

    def _exact_ids(self, file_id: int, record: FileRecord) -> list[int]:
        return [s.id for s in exact_copies(self.store, file_id, record, self.options.thresholds)]

    # -- applying ------------------------------------------------------------------------------

    def apply_record(
        self, root: str, record: FileRecord, seen: FileStat | None = None
    ) -> list[Event]:
        """Apply a freshly computed record (see the module docstring for the decisions).

        Args:
            root: The root the file belongs to.
            record: What :func:`isccd.hashing.compute_record` returned. An unstable record must
                not be applied (retry it, then :meth:`apply_unstable`); one of a file that could
                not be opened says ``vanished`` when its path holds no file any more (the
                pipeline asks the disk before this job).
            seen: The validators the scan saw, used when the file could not be opened (so that
                it is not retried until it changes).

        Returns:
            The events logged.
        """
        mark = len(self._pending)
        codes = issue_codes(record)
        if codes & GONE:
            # The file only: its path may hold a directory of indexed files by now.
            gone = self.store.file_at(record.path)
            if gone is not None:
                self.remove_file(gone)
            return self._pending[mark:]
        if record.stat is None:
            self._apply_unreadable(root, record, seen)
            return self._pending[mark:]
        existing = self.store.file_at(record.path)
        if existing is None:
            self._add(root, record)
        else:
            self._update(root, existing, record)
        return self._pending[mark:]

    def add_new(self, root: str, records: Sequence[FileRecord]) -> list[list[Event]] | None:
        """Apply the records of files at new paths together: the rows, relations and events
        of :meth:`apply_record` on each in turn, in the same order, with a few statements for
        all (one read for the paths, one write for the rows, one read for their hardlinks and
        copies).

        Returns:
            The events of each record; ``None``, with nothing done, when a record is not a
            readable file's, or a path holds a stored file or comes twice.
        """
        paths = [r.path for r in records]
        if (
            any(r.stat is None or issue_codes(r) & GONE for r in records)
            or len(set(paths)) != len(paths)
            or self.store.live_paths(paths)
        ):
            return None
        self._decide()
        # An index of a unit type built from the store once the batch is in it would hold the
        # files stored after the one asked about (a policy enabling a type not loaded yet).
        for unit_type in self.options.thresholds.enabled():
            self.ensure_loaded(unit_type)
        admits = self.options.thresholds.admits
        identities = [r.stat.identity if r.stat is not None else None for r in records]
        datahashes = [r.datahash if admits(size_of(r)) else None for r in records]
        # The files stored before the job, read before its own rows are in: those are found
        # from their records.
        keys = self.store.related_keys_many(
            [i for i in identities if i is not None], [h for h in datahashes if h is not None]
        )
        by_identity: dict[tuple[int, int], list[int]] = {}
        by_datahash: dict[str, list[int]] = {}
        for other, key in keys.items():
            if key.identity is not None and self.local(key):
                by_identity.setdefault(key.identity, []).append(other)
            if key.datahash is not None:
                by_datahash.setdefault(key.datahash, []).append(other)
        now = self._clock()
        ids = self.store.add_files(root, records, now)
        self._index_new(ids, records)
        near = self._near_each(ids, records)
        # The events are logged together at the end, except in a shared store: there another
        # host's side of a duplicate (isccd.pipeline.mirror) is logged as it comes.
        self._queue = None if self.store.shared else []
        start, marks = len(self._pending), [0]
        host = self.store.host
        job: dict[int, FileRecord] = {}
        try:
            for i, (file_id, record) in enumerate(zip(ids, records, strict=True)):
                identity, datahash = identities[i], datahashes[i]
                linked = by_identity.get(identity, ()) if identity is not None else ()
                copies = by_datahash.get(datahash, ()) if datahash is not None else ()
                mine: dict[int, FileKey] = {}
                if linked or copies:  # most files have neither
                    for o in sorted({*linked, *copies}):
                        mine[o] = keys[o] if o in keys else _key(job[o], host)
                self._added(root, file_id, record, now, keys=mine, near=near[i])
                queued = self._queue
                marks.append(len(queued) if queued is not None else len(self._pending) - start)
                # What each record finds is what it would find alone: the job's files before
                # it, not those after it.
                job[file_id] = record
                if identity is not None:
                    by_identity.setdefault(identity, []).append(file_id)
                if record.datahash:
                    by_datahash.setdefault(_stored_hex(record.datahash), []).append(file_id)
        finally:
            queue, self._queue = self._queue, None
        if queue is not None:
            self._pending += self.store.append_events(queue)
        events = self._pending[start:]
        return [events[a:b] for a, b in itertools.pairwise(marks)]

    def _near_each(
        self, ids: Sequence[int], records: Sequence[FileRecord]
    ) -> list[dict[UnitType, list[Hit]]]:
        """What :meth:`_near_sides` would find in the in-memory index for each of a job of new
        files, were each indexed as it is added: per unit type, the files indexed before the
        job and the job's files before it, nearest first (ties by file id), at most
        :meth:`_searched` of them. The job's files are indexed already: those at or after a
        file are left out of its hits. One pass per block of the job's codes, not one per
        code."""
        radii = near_radii(self.options.thresholds)
        asked: dict[UnitType, tuple[list[int], list[int]]] = {t: ([], []) for t in radii}
        for i, record in enumerate(records):
            for unit in record.units:
                if (wanted := asked.get(unit.type)) is not None:
                    wanted[0].append(i)
                    wanted[1].append(code64(unit.digest))
        found: list[dict[UnitType, list[Hit]]] = [{} for _ in records]
        for unit_type, (at, codes) in asked.items():
            if not at:
                continue
            index = self.search[unit_type]
            hits, totals = index.nearest_each(
                codes, radii[unit_type], self._searched(), exclude=ids, upto=at
            )
            for i, some, total in zip(at, hits, totals, strict=True):
                if some:  # most files: near nothing
                    found[i][unit_type] = some
                    self._totals[(ids[i], unit_type)] = total
        return found

    def _searched(self) -> int:
        """Hits asked of the in-memory index per unit type: twice ``max_links``, as some are
        no near relation (exact copies, longer units beyond the threshold, content that
        differs), so that a family costs a bounded number of comparisons per file."""
        limit = self.options.thresholds.max_links
        return 2 * limit if limit is not None else 1 << 62

    def _add(self, root: str, record: FileRecord) -> StoredFile:
        now = self._clock()
        file_id = self.store.add_file(root, record, now)
        self._added(root, file_id, record, now)
        self._index_put(file_id, record, new=True)
        return StoredFile(file_id, root, record, now, host=self.store.host)

    def _added(
        self,
        root: str,
        file_id: int,
        record: FileRecord,
        now: float,
        *,
        keys: Mapping[int, FileKey] | None = None,
        near: Mapping[UnitType, Sequence[Hit]] | None = None,
    ) -> None:
        """Relate and announce a file just stored at ``now`` (``keys`` and ``near``: see
        :meth:`relations`); the caller indexes it."""
        if keys is not None and not keys and near is not None and not near:
            # Looked up beforehand (add_new, which took the writers' lock): related to nothing,
            # as most files are. Its event and issues are all there is to it.
            data = payload.content(record)
            self.note(EventType.FILE_ADDED, root, record.path, data, file_id=file_id, plain=True)
            if record.issues:
                self._report_issues(root, record, ())
            return
        relations, counts = self.related(file_id, record, keys, near)
        links = [r.other for r in relations if r.kind is RelationKind.HARDLINK]
        paths = self._paths(links) if links else []
        data = payload.content(record) | ({"links": paths} if paths else {})
        self.note(EventType.FILE_ADDED, root, record.path, data, file_id=file_id, plain=True)
        self._report_issues(root, record, ())
        if relations:  # a new file: nothing ended either
            stored = StoredFile(file_id, root, record, now, host=self.store.host)
            announce(self, root, stored, relations, counts=counts)

    def _index_new(self, ids: Sequence[int], records: Sequence[FileRecord]) -> None:
        """:meth:`_index_put` of a job of files just stored, together."""
        loaded = self._loaded
        self._undo += [(file_id, dict.fromkeys(loaded)) for file_id in ids]
        self.search.add_new(ids, [{u.type: u.digest for u in r.units} for r in records])

    def _update(self, root: str, existing: StoredFile, record: FileRecord) -> None:
        self.store.exclusive()  # the relations read below are the ones this change ends
        old = existing.record
        now = self._clock()
        if _same_content(old, record) and not _links_change(old, record):
            self.store.update_file(existing.id, root, record, now)
            self._report_issues(root, record, old.issues)
            return
        old_exact = self._exact_ids(existing.id, old)
        old_near = self.store.near_of(existing.id)
        self.store.update_file(existing.id, root, record, now)
        stored = StoredFile(existing.id, root, record, now, host=self.store.host)
        relations, counts = self.related(existing.id, record)
        links = self._paths([r.other for r in relations if r.kind is RelationKind.HARDLINK])
        data = payload.content(record) | {"previous": payload.brief(old)}
        data |= {"links": links} if links else {}
        self.emit(EventType.FILE_CHANGED, root, record.path, data, file_id=existing.id)
        self._report_issues(root, record, old.issues)
        announce(
            self, root, stored, relations, old_exact=old_exact, old_near=old_near, counts=counts
        )
        self._index_put(existing.id, record)

    def _apply_unreadable(self, root: str, record: FileRecord, seen: FileStat | None) -> None:
        """A file that exists but cannot be read: keep what was known, note the problem, and
        remember the validators so it is retried once it changes."""
        existing = self.store.file_at(record.path)
        if existing is not None:
            kept = replace(existing.record, stat=seen or existing.record.stat, issues=record.issues)
            self.store.update_file(existing.id, root, kept, self._clock())
            self._report_issues(root, record, existing.record.issues)
            return
        if seen is None:
            self._report_issues(root, record, ())
            return
        self._add(root, replace(record, stat=seen))

    def _report_issues(self, root: str, record: FileRecord, before: Sequence[FileIssue]) -> None:
        errors = [i for i in record.issues if i.kind is IssueKind.ERROR]
        if errors and set(errors) != {i for i in before if i.kind is IssueKind.ERROR}:
            self.note(EventType.FILE_ERROR, root, record.path, {"issues": payload.issues(errors)})

    def apply_unstable(self, root: str, path: str, attempts: int, reason: str) -> list[Event]:
        """Report a file that kept changing while it was read; nothing is stored."""
        event = self.emit(
            EventType.FILE_UNSTABLE, root, path, {"attempts": attempts, "reason": reason}
        )
        return [event]

    def apply_partial(
        self, root: str, stored_id: int, record: FileRecord, units: frozenset[UnitType]
    ) -> list[Event]:
        """Apply a record that recomputed only ``units`` of a stored file (profile change): the
        new units replace the old ones of those types, the rest is kept, and the ISCC-CODE is
        composed again."""
        found = self.store.files_by_id([stored_id])
        existing = found[0] if found else None
        if existing is None or not existing.live or existing.path != record.path:
            return []  # changed meanwhile: the next scan takes care of it
        if record.stat is None:
            return self.apply_record(root, record)  # gone, or unreadable now
        if existing.record.stat is None or not record.stat.same_content_version(
            existing.record.stat
        ):
            return []  # it changed since the scan: a full rehash is due, not a partial one
        kept = [u for u in existing.record.units if u.type not in units]
        merged = sort_units([*kept, *record.units])
        stale_issues = {t.value for t in units}
        issues = tuple(i for i in existing.record.issues if i.stage not in stale_issues)
        new = replace(
            existing.record,
            units=tuple(merged),
            iscc=compose_iscc(merged, self.options.wide) or existing.record.iscc,
            issues=issues + record.issues,
            extractor=record.extractor or existing.record.extractor,
            **_learned(record),
        )
        if issue_codes(new) & GONE:
            return self.apply_record(root, new)
        mark = len(self._pending)
        self._update(root, existing, new)  # the file is known: no need to look it up again
        return self._pending[mark:]

    def remove_path(self, path: str) -> list[Event]:
        """Tombstone the live file at ``path``, or every live file below it (a directory)."""
        mark = len(self._pending)
        for stored in self.store.files_under(path):
            self.remove_file(stored)
        return self._pending[mark:]

    def remove_file(self, stored: StoredFile) -> None:
        """Tombstone one live file and log what ended."""
        self.store.exclusive()  # the relations read below are the ones this removal ends
        old_exact = self._exact_ids(stored.id, stored.record)
        old_near = self.store.near_of(stored.id)
        self.store.remove_file(stored.id, self._clock())
        brief = payload.brief(stored.record)
        self.emit(EventType.FILE_REMOVED, stored.root, stored.path, brief, file_id=stored.id)
        announce(
            self, stored.root, stored, [], old_exact=old_exact, old_near=old_near, reason="removed"
        )
        self._index_put(stored.id, None)

    def move_file(self, stored: StoredFile, root: str, path: str, stat: FileStat) -> list[Event]:
        """Give a stored file a new path. Its units are kept, except a Meta-Code made from the
        file name, which follows the new name (its relations are re-evaluated then); the
        ``file.moved`` event carries the ISCC-CODE under the new name."""
        mark = len(self._pending)
        if stored.path == path:
            return []
        self.store.exclusive()
        occupant = self.store.file_at(path)
        if occupant is not None and occupant.id != stored.id:
            self.remove_file(occupant)  # renamed over another file
        old = stored.record
        record = replace(renamed_record(old, path, self.options.wide), stat=stat)
        data: dict[str, Any] = {"from": stored.path, "from_root": stored.root, "iscc": record.iscc}
        if record.units == old.units and record.issues == old.issues:
            self.store.move_file(stored.id, root, path, stat)
            self.emit(EventType.FILE_MOVED, root, path, data, file_id=stored.id)
            return self._pending[mark:]
        old_exact = self._exact_ids(stored.id, old)
        old_near = self.store.near_of(stored.id)
        now = self._clock()
        self.store.update_file(stored.id, root, record, now)
        if record.iscc != old.iscc:
            data["previous"] = payload.brief(old)
        self.emit(EventType.FILE_MOVED, root, path, data, file_id=stored.id)
        moved = StoredFile(stored.id, root, record, now, host=self.store.host)
        relations, counts = self.related(stored.id, record)
        announce(
            self, root, moved, relations, old_exact=old_exact, old_near=old_near, counts=counts
        )
        self._index_put(stored.id, record)
        return self._pending[mark:]

    def move_path(
        self, src: str, root: str, dst: str, found: Mapping[str, FileStat]
    ) -> list[Event]:
        """A file or directory was renamed from ``src`` to ``dst`` (under ``root``): every live
        file at or below ``src`` moves with it, keeping its codes.

        Args:
            src: The old path.
            root: The root of the new one.
            dst: The new path.
            found: What the disk holds at the new paths (examined before this job); a path it
                does not name could not be examined, and its file is taken to have moved.
        """
        mark = len(self._pending)
        for stored in self.store.files_under(src):
            new = dst + stored.path[len(src) :]
            old_stat = stored.record.stat
            st = found.get(new, old_stat)
            if st is None or old_stat is None or st.identity != old_stat.identity:
                self.remove_file(stored)  # not the same file any more: the caller rescans dst
                continue
            if (st.size, st.mtime_ns) != (old_stat.size, old_stat.mtime_ns):
                # Written to before the rename was seen: keep the validators its codes were
                # computed from, so that the next look at the new path (the write's own event,
                # or a reconcile after a crash) hashes it again.
                st = old_stat
            self.move_file(stored, root, new, st)
        return self._pending[mark:]

    def link(self, root: str, source: StoredFile, path: str, stat: FileStat) -> list[Event]:
        """Store another path of an already indexed file (a hardlink): no hashing (a
        Meta-Code made from the file name is made from this name)."""
        record = replace(renamed_record(source.record, path, self.options.wide), stat=stat)
        return self.apply_record(root, record)

    def _paths(self, ids: Sequence[int]) -> list[str]:
        return [s.path for s in self.store.files_by_id(list(ids))]

    # -- ISCC-CODEs ---------------------------------------------------------------------------

    def recompose(self, file_ids: Sequence[int], wide: bool) -> list[Event]:
        """Compose the ISCC-CODEs of these files again from their stored units, WIDE or not
        (see :mod:`isccd.pipeline.composition`); a file whose ISCC-CODE changes is
        ``file.changed``.

        Returns:
            The events logged.
        """
        mark = len(self._pending)
        for stored in self.store.files_by_id(file_ids):
            iscc = compose_iscc(stored.record.units, wide)
            if stored.live and iscc is not None and iscc != stored.record.iscc:
                self._update(stored.root, stored, replace(stored.record, iscc=iscc))
        return self._pending[mark:]

    # -- retention -----------------------------------------------------------------------------

    def purge(self) -> tuple[int, int]:
        """Forget tombstones and events older than their retention; ``(files, events)``."""
        now = self._clock()
        files = self.store.purge_tombstones(now - self.options.tombstone_retention)
        events = self.store.purge_events(now - self.options.event_retention)
        return files, events


def _stored_hex(datahash: str) -> str:
    """A datahash as the store gives it back."""
    return bytes.fromhex(datahash).hex()


def _key(record: FileRecord, host: str) -> FileKey:
    """The :class:`FileKey` the store gives back for a file just stored from ``record``."""
    identity = record.stat.identity if record.stat is not None else None
    datahash = _stored_hex(record.datahash) if record.datahash else None
    return FileKey(identity, datahash, size_of(record), host)


def _learned(record: FileRecord) -> dict[str, Any]:
    """What a partial record learned along with its units: the Meta-Code's inputs when it has
    one, and what the content extraction measured."""
    fields: dict[str, Any] = {}
    if record.unit(UnitType.META) is not None:
        fields.update(
            name=record.name,
            description=record.description,
            metahash=record.metahash,
            named_by_file=record.named_by_file,
        )
    for name in ("characters", "width", "height", "duration"):
        if getattr(record, name) is not None:
            fields[name] = getattr(record, name)
    return fields
