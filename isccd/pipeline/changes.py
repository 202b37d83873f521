"""Applying what was learned about files: the one module that changes the store (files, near
links, events), deciding which events each change causes.

Every function runs on the store's owner thread, inside the transaction the
:class:`~isccd.pipeline.index.Index` opened, so reads see the batch's own writes and every
change is committed together with its events; the index keeps its in-memory search in step.

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
- After each change the file's relations are decided again (:mod:`isccd.pipeline.relate`) and
  compared with those before (:mod:`isccd.pipeline.announce`): new exact or near duplicates are
  announced, ended ones are ``dup.resolved``; near links are stored bounded
  (:mod:`isccd.pipeline.bounds`).

The line one change follows: ``apply_record`` -> ``relate.related`` -> ``announce`` (pure) ->
:func:`commit_announcement` -> ``bounds.settle`` (pure) -> the store's writes -> the index's
search.

In a store a fleet shares (:attr:`isccd.store.Store.shared`), relations span the fleet: exact
copies are looked up on every host, near ones in the in-memory index of the fleet's codes
(:mod:`isccd.pipeline.fleetindex`), each decision taken under the writers' lock; a duplicate on
another host is announced on both sides.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from isccd.hamming import Hit
from isccd.hashing import compose_iscc, renamed_record
from isccd.match import Relation
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
from isccd.pipeline import announce, bounds, relate
from isccd.pipeline import events as payload
from isccd.pipeline.dirwatch import FolderWatch, announced_property
from isccd.pipeline.index import Index
from isccd.pipeline.peers import size_of
from isccd.pipeline.watchmatch import WatchHit, payloads
from isccd.store import FileKey, NearPair, NewEvent, StoredFile

#: Issue codes meaning "there is no regular file here any more".
GONE = frozenset({IssueCode.VANISHED, IssueCode.NOT_REGULAR})


def issue_codes(record: FileRecord) -> set[IssueCode]:
    """The classified causes of a record's issues."""
    return {i.code for i in record.issues if i.code is not None}


def is_unstable(record: FileRecord) -> bool:
    """The file changed while it was read: nothing in the record can be trusted."""
    return IssueCode.UNSTABLE in issue_codes(record)


def _same_content(a: FileRecord, b: FileRecord) -> bool:
    return (
        a.datahash == b.datahash
        and a.iscc == b.iscc
        and {(u.type, u.digest) for u in a.units} == {(u.type, u.digest) for u in b.units}
    )


def _links_change(old: FileRecord, new: FileRecord) -> bool:
    """Whether the path now names another inode, one of several names (a copy replaced by a
    hardlink of its original changes its relations; an editor's save of the same bytes through
    a new inode, or a tree copied to a new disk, does not)."""
    if old.stat is None or new.stat is None or old.stat.identity == new.stat.identity:
        return False
    return new.stat.nlink > 1 or old.stat.nlink > 1


# -- events ------------------------------------------------------------------------------------


def emit(
    ix: Index,
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
    event = ix.store.append_event(type, root, path, data, ix.clock(), host=host, file_id=file_id)
    ix.logged([event])
    return event


def note(
    ix: Index,
    type: EventType,
    root: str,
    path: str,
    data: dict[str, Any],
    *,
    host: str | None = None,
    file_id: int | None = None,
    plain: bool = False,
) -> None:
    """:func:`emit`, or while :func:`add_new` applies a job, queue the event to be logged
    with the job's others, in the same order (nothing reads the log meanwhile; ``plain``:
    see :attr:`NewEvent.plain <isccd.store.NewEvent.plain>`)."""
    if ix.queue is None:
        emit(ix, type, root, path, data, host=host, file_id=file_id)
    else:
        ix.queue.append(NewEvent(type, root, path, data, ix.clock(), host, file_id, plain))


# -- relations announced -----------------------------------------------------------------------


def announce_relations(
    ix: Index,
    stored: StoredFile,
    relations: Sequence[Relation],
    *,
    old_exact: Iterable[int] = (),
    old_near: Sequence[NearPair] = (),
    reason: str = "changed",
    counts: Mapping[UnitType, int] | None = None,
) -> None:
    """Compare a file's relations with those before a change, and apply what that causes:
    its near links stored, bounded, and the events logged (:mod:`isccd.pipeline.announce`).
    Events list at most ``others_limit`` other files each (``near_named`` a ``dup.near``), so
    only those are read."""
    change = announce.compare(stored.id, relations, old_exact, old_near)
    if change is None:
        return  # most files: nothing began, nothing ended
    limit, named = ix.options.others_limit, ix.options.near_named
    files = _files(ix, announce.listed(change, limit, named))
    commit_announcement(
        ix,
        stored.id,
        announce.announce(
            stored,
            change,
            files,
            limit=limit,
            host=ix.store.host,
            reason=reason,
            counts=counts,
            near_limit=named,
        ),
    )


def _known(ix: Index, stored: StoredFile) -> None:
    """Remember a file a job of new files just stored (its row and key read as written)."""
    if ix.job_files is not None and ix.job_keys is not None:
        ix.job_files[stored.id] = stored
        ix.job_keys[stored.id] = _key(stored.record, ix.store.host)


def _files(ix: Index, ids: Sequence[int]) -> dict[int, StoredFile]:
    """The stored files of ``ids``, by id: within a job of new files each read once."""
    known = ix.job_files
    if known is None:
        return {s.id: s for s in ix.store.files_by_id(ids)}
    missing = [i for i in ids if i not in known]
    if missing:
        known.update((s.id, s) for s in ix.store.files_by_id(missing))
    return {i: known[i] for i in ids if i in known}


def commit_announcement(ix: Index, file_id: int, found: announce.Announcement) -> None:
    """Apply an announcement: delete the near links that ended, store those that began or
    changed distance (no statement when there are none: most files have no near relation),
    bound the other files' relations (:func:`bound`), and log the events (or queue them with
    a job's, both hosts' sides in their order)."""
    if found.remove:
        ix.store.remove_near(found.remove)
    if found.add:
        if ix.job_steps is None:
            ix.store.add_near(found.add)
            bound(ix, file_id, found.add)
        else:  # a job of new files: bounded in their order and stored together at its end
            ix.job_steps.append(bounds.Step(file_id, found.add))
    if not found.events:
        return
    clock, queue = ix.clock, ix.queue
    if queue is None:  # logged together, in order
        made = [NewEvent(n.type, n.root, n.path, n.data, clock(), n.host) for n in found.events]
        ix.logged(ix.store.append_events(made))
        return
    for n in found.events:  # queued with the job's, both hosts' sides, in order
        queue.append(NewEvent(n.type, n.root, n.path, n.data, clock(), n.host))


def bound(ix: Index, file_id: int, added: Sequence[NearPair]) -> None:
    """Keep the files at the other ends of ``added`` (one file's links, stored already) at
    ``max_links`` relations of the unit type (:mod:`isccd.pipeline.bounds`)."""
    step = bounds.Step(file_id, added)
    links = bounds.settle(ix.store, [step], ix.options.thresholds.max_links, stored=True)
    if links.remove:
        ix.store.remove_near(links.remove)


# -- applying ----------------------------------------------------------------------------------


def apply_record(
    ix: Index, root: str, record: FileRecord, seen: FileStat | None = None
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
    mark = len(ix.pending)
    codes = issue_codes(record)
    if codes & GONE:
        # The file only: its path may hold a directory of indexed files by now.
        gone = ix.store.file_at(record.path)
        if gone is not None:
            remove_file(ix, gone)
        return ix.since(mark)
    if record.stat is None:
        _apply_unreadable(ix, root, record, seen)
        return ix.since(mark)
    existing = ix.store.file_at(record.path)
    if existing is None:
        _add(ix, root, record)
    else:
        _update(ix, root, existing, record)
    return ix.since(mark)


def add_new(ix: Index, root: str, records: Sequence[FileRecord]) -> list[list[Event]] | None:
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
        or ix.store.live_paths(paths)
    ):
        return None
    ix.decide()
    # An index of a unit type built from the store once the batch is in it would hold the
    # files stored after the one asked about (a policy enabling a type not loaded yet).
    for unit_type in ix.options.thresholds.enabled():
        ix.ensure_loaded(unit_type)
    admits = ix.options.thresholds.admits
    identities = [r.stat.identity if r.stat is not None else None for r in records]
    datahashes = [r.datahash if admits(size_of(r)) else None for r in records]
    # The files stored before the job, read before its own rows are in: those are found
    # from their records.
    keys = ix.store.related_keys_many(
        [i for i in identities if i is not None], [h for h in datahashes if h is not None]
    )
    by_identity: dict[tuple[int, int], list[int]] = {}
    by_datahash: dict[str, list[int]] = {}
    for other, key in keys.items():
        if key.identity is not None and ix.local(key):
            by_identity.setdefault(key.identity, []).append(other)
        if key.datahash is not None:
            by_datahash.setdefault(key.datahash, []).append(other)
    now = ix.clock()
    ids = ix.store.add_files(root, records, now)
    ix.index_new(ids, records)
    near = relate.near_each(ix, ids, records)
    watched = ix.watchlists.match_each(ix.store, records, ix.options.thresholds)
    # The events are logged together at the end, in the order they come (another host's side
    # of a duplicate, in a shared store, among them): the order of the files one by one.
    start, marks = len(ix.pending), [0]
    host = ix.store.host
    job: dict[int, FileRecord] = {}
    try:
        ix.queue = []
        ix.job_steps = []
        ix.job_files, ix.job_keys = {}, {}
        # A read that fails here fails the job as any of its writes would: the state above
        # is dropped below, and the batch's files are applied again one by one.
        _read_ahead(ix, set(ids), keys, near)
        for i, (file_id, record) in enumerate(zip(ids, records, strict=True)):
            identity, datahash = identities[i], datahashes[i]
            linked = by_identity.get(identity, ()) if identity is not None else ()
            copies = by_datahash.get(datahash, ()) if datahash is not None else ()
            mine: dict[int, FileKey] = {}
            if linked or copies:  # most files have neither
                for o in sorted({*linked, *copies}):
                    mine[o] = keys[o] if o in keys else _key(job[o], host)
            _added(ix, root, file_id, record, now, keys=mine, near=near[i], watched=watched[i])
            queued = ix.queue
            marks.append(len(queued) if queued is not None else len(ix.pending) - start)
            # What each record finds is what it would find alone: the job's files before
            # it, not those after it.
            job[file_id] = record
            _known(ix, StoredFile(file_id, root, record, now, host=host))
            if identity is not None:
                by_identity.setdefault(identity, []).append(file_id)
            if record.datahash:
                by_datahash.setdefault(_stored_hex(record.datahash), []).append(file_id)
    finally:
        queue, ix.queue = ix.queue, None
        steps, ix.job_steps = ix.job_steps, None
        ix.job_files = ix.job_keys = None
    _end_job(ix, queue, steps)
    events = ix.since(start)
    return [events[a:b] for a, b in itertools.pairwise(marks)]


def _read_ahead(
    ix: Index,
    job: set[int],
    keys: Mapping[int, FileKey],
    near: Sequence[Mapping[UnitType, Sequence[Hit]]],
) -> None:
    """Read together what a job's files will ask of the files stored before it, which each
    would read on its own: the keys of those its near search found, and the hardlinks and
    other files its events name (every hardlink, the first ``others_limit`` copies of each
    content, the ``near_named`` files a ``dup.near`` would name were every hit a near
    relation). Two statements instead of one or two a file: on a shared database each is a
    round trip under the writers' lock. What is not read here is read when asked for."""
    assert ix.job_files is not None and ix.job_keys is not None
    found = {h.file_id for hits in near for some in hits.values() for h in some} - job
    if found:
        ix.job_keys.update(ix.store.file_keys(sorted(found)))
    named: set[int] = set()
    copies: dict[str, list[int]] = {}
    for other, key in keys.items():
        if key.identity is not None and ix.local(key):
            named.add(other)
        if key.datahash is not None:
            copies.setdefault(key.datahash, []).append(other)
    for same in copies.values():
        named.update(sorted(same)[: ix.options.others_limit])
    # A dup.near names the nearest of the relations kept, ties to the smaller id; those kept
    # are the nearest hits, ties to the larger (:func:`isccd.match.relate_all`).
    kept, shown = ix.options.thresholds.max_links, ix.options.near_named
    for hits in near:
        for some in hits.values():
            first = sorted(some[:kept], key=_named_first)[:shown]
            named.update(h.file_id for h in first if h.file_id not in job)
    if named:
        ix.job_files.update((s.id, s) for s in ix.store.files_by_id(sorted(named)))


def _named_first(hit: Hit) -> tuple[int, int]:
    return hit.distance, hit.file_id


def _end_job(ix: Index, queue: list[NewEvent] | None, steps: Sequence[bounds.Step] | None) -> None:
    """What a job of new files does once all its files are in: bound the near links they
    began as if they had come one by one, store those that stay and drop those they
    displaced, and log its events together."""
    if steps:
        links = bounds.settle(ix.store, steps, ix.options.thresholds.max_links, stored=False)
        if links.remove:
            ix.store.remove_near(links.remove)
        if links.add:
            ix.store.add_near(links.add)
    if queue is not None:
        ix.logged(ix.store.append_events(queue))


def _add(ix: Index, root: str, record: FileRecord) -> StoredFile:
    now = ix.clock()
    file_id = ix.store.add_file(root, record, now)
    _added(ix, root, file_id, record, now)
    ix.index_put(file_id, record, new=True)
    return StoredFile(file_id, root, record, now, host=ix.store.host)


def _added(
    ix: Index,
    root: str,
    file_id: int,
    record: FileRecord,
    now: float,
    *,
    keys: Mapping[int, FileKey] | None = None,
    near: Mapping[UnitType, Sequence[Hit]] | None = None,
    watched: Sequence[WatchHit] | None = None,
) -> None:
    """Relate and announce a file just stored at ``now`` (``keys`` and ``near``: see
    :meth:`relations`; ``watched``: the watchlists' references it matches, when looked up
    beforehand); the caller indexes it."""
    if watched is None:
        watched = ix.watchlists.match_each(ix.store, [record], ix.options.thresholds)[0]
    if keys is not None and not keys and near is not None and not near:
        # Looked up beforehand (add_new, which took the writers' lock): related to nothing,
        # as most files are. Its event and issues are all there is to it.
        data = payload.content(record)
        note(ix, EventType.FILE_ADDED, root, record.path, data, file_id=file_id, plain=True)
        if record.issues:
            _report_issues(ix, root, record, ())
        _report_matches(ix, root, record, watched)
        return
    relations, counts = relate.related(ix, file_id, record, keys, near)
    links = [r.other for r in relations if r.kind is RelationKind.HARDLINK]
    paths = _paths(ix, links) if links else []
    data = payload.content(record) | ({"links": paths} if paths else {})
    note(ix, EventType.FILE_ADDED, root, record.path, data, file_id=file_id, plain=True)
    _report_issues(ix, root, record, ())
    _report_matches(ix, root, record, watched)
    if relations:  # a new file: nothing ended either
        stored = StoredFile(file_id, root, record, now, host=ix.store.host)
        announce_relations(ix, stored, relations, counts=counts)


def _update(ix: Index, root: str, existing: StoredFile, record: FileRecord) -> None:
    ix.store.exclusive()  # the relations read below are the ones this change ends
    old = existing.record
    now = ix.clock()
    if _same_content(old, record) and not _links_change(old, record):
        ix.store.update_file(existing.id, root, record, now)
        _report_issues(ix, root, record, old.issues)
        return
    old_exact = relate.exact_ids(ix, existing.id, old)
    old_near = ix.store.near_of(existing.id)
    ix.store.update_file(existing.id, root, record, now)
    stored = StoredFile(existing.id, root, record, now, host=ix.store.host)
    relations, counts = relate.related(ix, existing.id, record)
    links = _paths(ix, [r.other for r in relations if r.kind is RelationKind.HARDLINK])
    data = payload.content(record) | {"previous": payload.brief(old)}
    data |= {"links": links} if links else {}
    emit(ix, EventType.FILE_CHANGED, root, record.path, data, file_id=existing.id)
    _report_issues(ix, root, record, old.issues)
    watched = ix.watchlists.match_each(ix.store, [record], ix.options.thresholds)[0]
    _report_matches(ix, root, record, watched)
    announce_relations(ix, stored, relations, old_exact=old_exact, old_near=old_near, counts=counts)
    ix.index_put(existing.id, record)


def _apply_unreadable(ix: Index, root: str, record: FileRecord, seen: FileStat | None) -> None:
    """A file that exists but cannot be read: keep what was known, note the problem, and
    remember the validators so it is retried once it changes."""
    existing = ix.store.file_at(record.path)
    if existing is not None:
        kept = replace(existing.record, stat=seen or existing.record.stat, issues=record.issues)
        ix.store.update_file(existing.id, root, kept, ix.clock())
        _report_issues(ix, root, record, existing.record.issues)
        return
    if seen is None:
        _report_issues(ix, root, record, ())
        return
    _add(ix, root, replace(record, stat=seen))


def _report_issues(ix: Index, root: str, record: FileRecord, before: Sequence[FileIssue]) -> None:
    errors = [i for i in record.issues if i.kind is IssueKind.ERROR]
    if errors and set(errors) != {i for i in before if i.kind is IssueKind.ERROR}:
        note(ix, EventType.FILE_ERROR, root, record.path, {"issues": payload.issues(errors)})


def _report_matches(ix: Index, root: str, record: FileRecord, hits: Sequence[WatchHit]) -> None:
    """Announce the watchlists a new or changed file matches (:mod:`.watchmatch`)."""
    for data in payloads(record, hits) if hits else ():
        note(ix, EventType.WATCH_MATCH, root, record.path, data, plain=True)


def apply_unstable(ix: Index, root: str, path: str, attempts: int, reason: str) -> list[Event]:
    """Report a file that kept changing while it was read; nothing is stored."""
    event = emit(ix, EventType.FILE_UNSTABLE, root, path, {"attempts": attempts, "reason": reason})
    return [event]


def apply_partial(
    ix: Index, root: str, stored_id: int, record: FileRecord, units: frozenset[UnitType]
) -> list[Event]:
    """Apply a record that recomputed only ``units`` of a stored file (profile change): the
    new units replace the old ones of those types, the rest is kept, and the ISCC-CODE is
    composed again."""
    found = ix.store.files_by_id([stored_id])
    existing = found[0] if found else None
    if existing is None or not existing.live or existing.path != record.path:
        return []  # changed meanwhile: the next scan takes care of it
    if record.stat is None:
        return apply_record(ix, root, record)  # gone, or unreadable now
    if existing.record.stat is None or not record.stat.same_content_version(existing.record.stat):
        return []  # it changed since the scan: a full rehash is due, not a partial one
    kept = [u for u in existing.record.units if u.type not in units]
    merged = sort_units([*kept, *record.units])
    stale_issues = {t.value for t in units}
    issues = tuple(i for i in existing.record.issues if i.stage not in stale_issues)
    new = replace(
        existing.record,
        units=tuple(merged),
        iscc=compose_iscc(merged, ix.options.wide) or existing.record.iscc,
        issues=issues + record.issues,
        extractor=record.extractor or existing.record.extractor,
        **_learned(record),
    )
    if issue_codes(new) & GONE:
        return apply_record(ix, root, new)
    mark = len(ix.pending)
    _update(ix, root, existing, new)  # the file is known: no need to look it up again
    return ix.since(mark)


def remove_path(ix: Index, path: str) -> list[Event]:
    """Tombstone the live file at ``path``, or every live file below it (a directory)."""
    mark = len(ix.pending)
    for stored in ix.store.files_under(path):
        remove_file(ix, stored)
    return ix.since(mark)


def remove_file(ix: Index, stored: StoredFile) -> None:
    """Tombstone one live file and log what ended."""
    ix.store.exclusive()  # the relations read below are the ones this removal ends
    old_exact = relate.exact_ids(ix, stored.id, stored.record)
    old_near = ix.store.near_of(stored.id)
    ix.store.remove_file(stored.id, ix.clock())
    brief = payload.brief(stored.record)
    emit(ix, EventType.FILE_REMOVED, stored.root, stored.path, brief, file_id=stored.id)
    announce_relations(ix, stored, [], old_exact=old_exact, old_near=old_near, reason="removed")
    ix.index_put(stored.id, None)


def move_file(ix: Index, stored: StoredFile, root: str, path: str, stat: FileStat) -> list[Event]:
    """Give a stored file a new path. Its units are kept, except a Meta-Code made from the
    file name, which follows the new name (its relations are re-evaluated then); the
    ``file.moved`` event carries the ISCC-CODE under the new name."""
    mark = len(ix.pending)
    if stored.path == path:
        return []
    ix.store.exclusive()
    occupant = ix.store.file_at(path)
    if occupant is not None and occupant.id != stored.id:
        remove_file(ix, occupant)  # renamed over another file
    old = stored.record
    record = replace(renamed_record(old, path, ix.options.wide), stat=stat)
    data: dict[str, Any] = {"from": stored.path, "from_root": stored.root, "iscc": record.iscc}
    if record.units == old.units and record.issues == old.issues:
        ix.store.move_file(stored.id, root, path, stat)
        emit(ix, EventType.FILE_MOVED, root, path, data, file_id=stored.id)
        return ix.since(mark)
    old_exact = relate.exact_ids(ix, stored.id, old)
    old_near = ix.store.near_of(stored.id)
    now = ix.clock()
    ix.store.update_file(stored.id, root, record, now)
    if record.iscc != old.iscc:
        data["previous"] = payload.brief(old)
    emit(ix, EventType.FILE_MOVED, root, path, data, file_id=stored.id)
    moved = StoredFile(stored.id, root, record, now, host=ix.store.host)
    relations, counts = relate.related(ix, stored.id, record)
    announce_relations(ix, moved, relations, old_exact=old_exact, old_near=old_near, counts=counts)
    ix.index_put(stored.id, record)
    return ix.since(mark)


def move_path(
    ix: Index, src: str, root: str, dst: str, found: Mapping[str, FileStat]
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
    mark = len(ix.pending)
    for stored in ix.store.files_under(src):
        new = dst + stored.path[len(src) :]
        old_stat = stored.record.stat
        st = found.get(new, old_stat)
        if st is None or old_stat is None or st.identity != old_stat.identity:
            remove_file(ix, stored)  # not the same file any more: the caller rescans dst
            continue
        if (st.size, st.mtime_ns) != (old_stat.size, old_stat.mtime_ns):
            # Written to before the rename was seen: keep the validators its codes were
            # computed from, so that the next look at the new path (the write's own event,
            # or a reconcile after a crash) hashes it again.
            st = old_stat
        move_file(ix, stored, root, new, st)
    return ix.since(mark)


def link(ix: Index, root: str, source: StoredFile, path: str, stat: FileStat) -> list[Event]:
    """Store another path of an already indexed file (a hardlink): no hashing (a
    Meta-Code made from the file name is made from this name)."""
    record = replace(renamed_record(source.record, path, ix.options.wide), stat=stat)
    return apply_record(ix, root, record)


def _paths(ix: Index, ids: Sequence[int]) -> list[str]:
    return [s.path for s in _files(ix, ids).values()]


# -- ISCC-CODEs ---------------------------------------------------------------------------


def recompose(ix: Index, file_ids: Sequence[int], wide: bool) -> list[Event]:
    """Compose the ISCC-CODEs of these files again from their stored units, WIDE or not
    (see :mod:`isccd.pipeline.composition`); a file whose ISCC-CODE changes is
    ``file.changed``.

    Returns:
        The events logged.
    """
    mark = len(ix.pending)
    for stored in ix.store.files_by_id(file_ids):
        iscc = compose_iscc(stored.record.units, wide)
        if stored.live and iscc is not None and iscc != stored.record.iscc:
            _update(ix, stored.root, stored, replace(stored.record, iscc=iscc))
    return ix.since(mark)


# -- retention -----------------------------------------------------------------------------


def watch_folders(ix: Index, settle: float) -> None:
    """Keep the folders' sums from now on, and announce duplicate folders once their files
    have been quiet for ``settle`` seconds (:mod:`isccd.pipeline.dirwatch`)."""
    if ix.folders is None:
        folders = FolderWatch(settle)
        folders.load(ix.store)
        if folders.unsaved:  # the first time: what holds now is taken as said, and kept
            ix.store.set_property(announced_property(ix.store.host), folders.saved())
        ix.folders = folders


def folders_due(ix: Index) -> float | None:
    """When :func:`settle_folders` has something to decide (Unix time), or ``None``.

    Raises:
        RuntimeError: The folders' sums were dropped after a failure (logged): watch them
            again.
    """
    if ix.folders is None:
        raise RuntimeError("the folders' sums are not kept (a failure dropped them)")
    return ix.folders.due()


def settle_folders(ix: Index) -> list[Event]:
    """Log the ``dir.dup`` and ``dir.resolved`` events of the folders quiet long enough."""
    if ix.folders is None:
        return []
    mark = len(ix.pending)
    folders = ix.folders
    for event in folders.settle(ix.clock(), ix.store):
        emit(ix, event.type, event.root, event.path, event.data)
    if folders.unsaved:
        # Kept with the events that said it: a restart then says only what changed since.
        ix.store.set_property(announced_property(ix.store.host), folders.saved())
    return ix.since(mark)


def purge(ix: Index) -> tuple[int, int]:
    """Forget tombstones and events older than their retention; ``(files, events)``."""
    now = ix.clock()
    files = ix.store.purge_tombstones(now - ix.options.tombstone_retention)
    events = ix.store.purge_events(now - ix.options.event_retention)
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
