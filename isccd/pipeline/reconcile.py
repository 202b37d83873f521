"""One reconcile of a root, as state that lives on the store's owner thread.

The walk (:class:`isccd.walk.Walker`) is advanced in short steps: a thread of its own lists
directories for a moment (the disk is never asked on the owner thread, where a hung ``stat``
would stall every commit), then a job on the owner thread compares them with the store, so that
a long walk never holds the store for long and watcher events interleave with it. Each step
turns what the walk found into actions:

- unchanged files: nothing (no file is opened);
- new paths: a rename or a hardlink of a stored file is applied at once, without hashing;
  anything else becomes a :class:`HashJob`;
- changed files: a :class:`HashJob`; several paths of one multiply-linked file are hashed once;
- vanished paths: collected, and tombstoned only when the walk is over, so that a file moved to
  a directory walked later is recognised as moved rather than removed and re-added; and not at
  all when the root turns out to be on another device with few of its files (an unmounted
  disk, see :mod:`.rootdev`).

:meth:`Reconciler.finish` tombstones what vanished and returns the partial jobs for units whose
profile is outdated; :meth:`Reconciler.close` logs ``scan.done``.
"""

from __future__ import annotations

import logging
import os
import stat as stat_module
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from isccd.model import Event, EventType, FileRecord, FileStat, UnitType
from isccd.pipeline import changes
from isccd.pipeline.index import Index
from isccd.pipeline.options import profile_is_stale
from isccd.pipeline.rootdev import RootDevice
from isccd.store import StoredFile
from isccd.store.base import join_path
from isccd.walk import (
    NO_FILE,
    ItemKind,
    Listing,
    ScanIssue,
    ScanItem,
    ScanOptions,
    Walker,
    examine,
)

#: Issues listed in ``scan.done`` at most.
_ISSUES_LOGGED = 100

_log = logging.getLogger("isccd.pipeline")


@dataclass(frozen=True, slots=True)
class HashJob:
    """A file to hash.

    Attributes:
        root: Its root.
        path: Its path.
        stat: The validators the scan saw.
        units: ``None`` to compute everything; else only these units of the stored file
            ``file_id`` (their profile is outdated).
        file_id: The stored file, for a partial job.
        links: Whether other paths of the same file wait for this result.
    """

    root: str
    path: str
    stat: FileStat | None
    units: frozenset[UnitType] | None = None
    file_id: int | None = None
    links: bool = False


@dataclass(slots=True)
class ScanStats:
    """Counters of a reconcile (also its progress report).

    Attributes:
        root: The root.
        start: The directory walked (the root, or a subtree of it).
        dirs: Directories listed.
        seen: Regular files seen.
        unchanged: Files whose validators matched the store.
        queued: Files sent to hashing.
        hashed: Hash results applied.
        added: ``file.added`` events.
        changed: ``file.changed`` events.
        moved: ``file.moved`` events.
        removed: ``file.removed`` events.
        errors: ``file.error`` events.
        unstable: ``file.unstable`` events.
        duplicates: ``dup.exact`` and ``dup.near`` events.
        seconds: Time since the start.
        walked: Whether the walk is complete.
        issues: Parts of the tree that could not be scanned.
    """

    root: str
    start: str
    dirs: int = 0
    seen: int = 0
    unchanged: int = 0
    queued: int = 0
    hashed: int = 0
    added: int = 0
    changed: int = 0
    moved: int = 0
    removed: int = 0
    errors: int = 0
    unstable: int = 0
    duplicates: int = 0
    seconds: float = 0.0
    walked: bool = False
    issues: list[ScanIssue] = field(default_factory=list)

    def count(self, events: Sequence[Event]) -> None:
        """Count logged events."""
        for event in events:
            name = _COUNTED.get(event.type)
            if name is not None:
                setattr(self, name, getattr(self, name) + 1)

    def snapshot(self) -> ScanStats:
        """A copy safe to hand to another thread."""
        return ScanStats(**{k: getattr(self, k) for k in self.__slots__ if k != "issues"},
                         issues=list(self.issues))  # fmt: skip

    def as_dict(self) -> dict[str, object]:
        """JSON-ready counters (issues capped)."""
        data: dict[str, object] = {k: getattr(self, k) for k in self.__slots__ if k != "issues"}
        data["seconds"] = round(self.seconds, 3)
        data["issues"] = [
            {"path": i.path, "reason": i.reason.value, "message": i.message}
            for i in self.issues[:_ISSUES_LOGGED]
        ]
        return data


_COUNTED = {
    EventType.FILE_ADDED: "added",
    EventType.FILE_CHANGED: "changed",
    EventType.FILE_MOVED: "moved",
    EventType.FILE_REMOVED: "removed",
    EventType.FILE_ERROR: "errors",
    EventType.FILE_UNSTABLE: "unstable",
    EventType.DUP_EXACT: "duplicates",
    EventType.DUP_NEAR: "duplicates",
}


@dataclass(frozen=True, slots=True)
class Step:
    """What one step of the walk produced.

    Attributes:
        jobs: Files to hash.
        sightings: Files the store holds elsewhere, to place (:meth:`Reconciler.settle`) once
            the disk was asked about their other paths.
        done: The walk is complete.
        stats: The counters so far.
    """

    jobs: list[HashJob]
    sightings: list[Sighting]
    done: bool
    stats: ScanStats


@dataclass(frozen=True, slots=True)
class Sighting:
    """A file at a path the store does not hold it at, while the store holds a file of the same
    identity and content version (size and mtime) at other paths: a rename or a hardlink, told
    apart by whether those paths still hold it. The disk is asked off the owner thread
    (:func:`look`), then :func:`place` applies it.

    Attributes:
        root: Its root.
        path: The path it was found at.
        stat: Its validators.
        elsewhere: The stored paths of its identity, with their roots.
    """

    root: str
    path: str
    stat: FileStat
    elsewhere: tuple[tuple[str, str], ...]


#: What the disk holds at each path asked about: the identity of the file there, or ``None``
#: when no file of the tree is. A path left out could not be examined: it counts as holding the
#: file, so that a doubt never turns a hardlink into a move.
Present = Mapping[str, tuple[int, int] | None]


def _elsewhere(ix: Index, path: str, st: FileStat) -> list[StoredFile]:
    """Stored files with this identity and content version at other paths."""
    return [
        f
        for f in ix.store.files_by_identity(*st.identity)
        if f.path != path
        and f.record.stat is not None
        and f.record.stat.size == st.size
        and f.record.stat.mtime_ns == st.mtime_ns
    ]


def sighted(ix: Index, root: str, path: str, st: FileStat) -> Sighting | None:
    """The sighting of a file the store holds elsewhere, if it does."""
    found = _elsewhere(ix, path, st)
    return Sighting(root, path, st, tuple((f.root, f.path) for f in found)) if found else None


def look(
    sightings: Sequence[Sighting], *, follow_symlinks: bool = False
) -> dict[str, tuple[int, int] | None]:
    """What the disk holds at the sightings' other paths, each examined beneath its root
    (blocking: called off the owner thread).

    Returns:
        The :data:`Present` answer.
    """
    by_root: dict[str, set[str]] = {}
    for sighting in sightings:
        for root, path in sighting.elsewhere:
            by_root.setdefault(root, set()).add(path)
    present: dict[str, tuple[int, int] | None] = {}
    for root, paths in by_root.items():
        for path, found in examine(root, paths, follow_symlinks=follow_symlinks).items():
            if not isinstance(found, OSError):
                present[path] = (found.st_dev, found.st_ino)
            elif found.errno in NO_FILE:
                present[path] = None
    return present


def place(ix: Index, sighting: Sighting, present: Present) -> tuple[list[Event], bool]:
    """Apply a sighting as the store stands now: a hardlink when another path still holds the
    file, else a rename.

    Returns:
        The events logged, and whether the file must be hashed instead (the store no longer
        holds it elsewhere).
    """
    st = sighting.stat
    candidates = _elsewhere(ix, sighting.path, st)
    for candidate in candidates:
        if present.get(candidate.path, st.identity) == st.identity:
            return changes.link(ix, sighting.root, candidate, sighting.path, st), False
    if candidates:
        return changes.move_file(ix, candidates[0], sighting.root, sighting.path, st), False
    return [], True


def plan_path(
    ix: Index, root: str, path: str, found: os.stat_result | OSError
) -> tuple[list[Event], HashJob | Sighting | None, bool]:
    """What to do about one path a watcher reported, given what examining it beneath the root's
    directory found (:func:`isccd.walk.examine`, as the workers open it): apply a removal at
    once, or say what to hash or which sighting to place. A path that leads through a symbolic
    link (unless followed and beneath the root) is no file of the tree, and whatever the store
    held there is removed.

    Returns:
        The events logged, what is left to do, and whether the path is a directory to
        reconcile.
    """
    if isinstance(found, OSError):
        if found.errno in NO_FILE:
            return changes.remove_path(ix, path), None, False
        return [], None, False  # cannot tell (or the root is gone); the next reconcile will
    if stat_module.S_ISDIR(found.st_mode):
        return [], None, True
    if not stat_module.S_ISREG(found.st_mode):
        return changes.remove_path(ix, path), None, False
    return [], _plan_file(ix, root, path, FileStat.from_os(found)), False


def _plan_file(ix: Index, root: str, path: str, st: FileStat) -> HashJob | Sighting | None:
    stored = ix.store.file_at(path)
    before = stored.record.stat if stored is not None else None
    if before is not None and before.same_content_version(st):
        return None
    if before is None or before.identity != st.identity:
        sighting = sighted(ix, root, path, st)
        if sighting is not None:
            return sighting
    return HashJob(root, path, st)


class Reconciler:
    """The state of one reconcile: its walk lists directories on a thread of its own
    (:meth:`walk`), everything else runs on the owner thread."""

    def __init__(
        self,
        ix: Index,
        root: str,
        options: ScanOptions | None = None,
        *,
        start: str | None = None,
        device: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        collect: bool = False,
        announce: bool = False,
    ) -> None:
        """Prepare to reconcile ``root`` (or the subtree ``start``); with ``collect``, keep
        every event it logs in :attr:`events` (for small, watcher-driven subtrees); with
        ``announce``, log ``scan.done`` at the end of a subtree walk too (one a client asked
        for).

        Args:
            device: The root directory's ``st_dev`` now (:func:`.rootdev.device_of`), if it
                can be stat'ed.

        Raises:
            ValueError: ``start`` is outside ``root``, or an ignore pattern is malformed.
        """
        self._ix = ix
        self.root = root
        self._device = RootDevice(root, ix.store.root_device(root), device)
        self._lookup = self._device.lookup(ix.store.validators_in_dir)
        self._walker = Walker(root, self._lookup, options, start=start)
        self._present = 0  # indexed files found at their paths
        self._clock = clock
        self._started = clock()
        self._vanished: list[ScanItem] = []
        self._waiting: dict[tuple[int, int], list[tuple[str, FileStat]]] = {}
        self.stats = ScanStats(root, self._walker.start)
        self.events: list[Event] | None = [] if collect else None
        self._announce = announce

    def _count(self, events: Sequence[Event]) -> None:
        self.stats.count(events)
        if self.events is not None:
            self.events.extend(events)

    def _stats(self) -> ScanStats:
        self.stats.seconds = self._clock() - self._started
        return self.stats.snapshot()

    def walk(self, seconds: float = 0.05) -> tuple[list[Listing], bool]:
        """List directories for about ``seconds`` (blocking on the disk: never call it on the
        owner thread); :meth:`step` then compares them with the store.

        Returns:
            The listings, and whether the walk is complete.
        """
        return self._walker.take(seconds, self._clock)

    def step(self, listings: Sequence[Listing], walked: bool) -> Step:
        """Compare listed directories with the store: apply nothing yet, say what to hash and
        which sightings to place; ``walked`` when the walk is complete."""
        jobs: list[HashJob] = []
        sightings: list[Sighting] = []
        for listing in listings:
            scanned = self._walker.compare(listing)
            self.stats.dirs += 1
            self.stats.unchanged += scanned.unchanged
            self.stats.seen += scanned.unchanged
            self.stats.issues.extend(scanned.issues)
            self._present += scanned.unchanged
            known = self._known(
                [i.stat.identity for i in scanned.items if i.kind is not ItemKind.VANISHED]
            )
            for item in scanned.items:
                if item.kind is ItemKind.VANISHED:
                    self._vanished.append(item)
                    continue
                self.stats.seen += 1
                self._present += item.kind is ItemKind.CHANGED
                planned = self._plan(
                    item.path, item.stat, new=item.kind is ItemKind.NEW, known=known
                )
                if isinstance(planned, Sighting):
                    sightings.append(planned)
                elif planned is not None:
                    jobs.append(planned)
        self.stats.queued += len(jobs)
        self.stats.walked = walked
        return Step(jobs, sightings, walked, self._stats())

    def _known(self, identities: Sequence[tuple[int, int]]) -> set[tuple[int, int]]:
        """The identities among these that a live file of this host has (one read for a
        directory, where asking for each file would cost one read per file)."""
        if not identities:
            return set()
        keys = self._ix.store.related_keys_many(identities, []).values()
        return {k.identity for k in keys if k.identity is not None and self._ix.local(k)}

    def _plan(
        self, path: str, st: FileStat, *, new: bool, known: set[tuple[int, int]]
    ) -> HashJob | Sighting | None:
        """Say what to hash, or which sighting to place (a rename or a hardlink); nothing for
        another path of a file being hashed, which waits for its result (``known``: the
        identities stored, of those in the step)."""
        waiting = self._waiting.get(st.identity)
        if waiting is not None:
            waiting.append((path, st))
            return None
        # A new path is one the walk found no stored file at (in this job): no need to ask.
        stored = None if new else self._ix.store.file_at(path)
        if st.identity in known and (
            stored is None
            or (stored.record.stat is not None and stored.record.stat.identity != st.identity)
        ):
            sighting = sighted(self._ix, self.root, path, st)
            if sighting is not None:
                return sighting
        return self._hash(path, st)

    def _hash(self, path: str, st: FileStat) -> HashJob:
        links = st.nlink > 1
        if links:
            self._waiting[st.identity] = []
        return HashJob(self.root, path, st, links=links)

    def settle(
        self, sightings: Sequence[Sighting], present: Present
    ) -> tuple[list[HashJob], ScanStats]:
        """Place a step's sightings in the order they were found, given what the disk holds at
        their other paths (:func:`look`).

        Returns:
            Jobs for the files that must be hashed after all, and the counters.
        """
        jobs: list[HashJob] = []
        for sighting in sightings:
            waiting = self._waiting.get(sighting.stat.identity)
            if waiting is not None:  # another path of it is being hashed meanwhile
                waiting.append((sighting.path, sighting.stat))
                continue
            events, hashing = place(self._ix, sighting, present)
            self._count(events)
            if hashing:
                jobs.append(self._hash(sighting.path, sighting.stat))
        self.stats.queued += len(jobs)
        return jobs, self._stats()

    def applied(
        self, job: HashJob, record: FileRecord
    ) -> tuple[list[Event], list[HashJob], ScanStats]:
        """Apply a hash result, then the other paths of the same file that waited for it.

        Returns:
            The events logged, jobs for waiting paths that still need hashing (when the
            result could not be shared), and the counters.
        """
        self.stats.hashed += 1
        if job.units is not None and job.file_id is not None:
            events = changes.apply_partial(self._ix, job.root, job.file_id, record, job.units)
        else:
            events = changes.apply_record(self._ix, job.root, record, job.stat)
        more: list[HashJob] = []
        if job.links and job.stat is not None:
            source = self._ix.store.file_at(job.path)
            for path, st in self._waiting.pop(job.stat.identity, []):
                shareable = (
                    source is not None
                    and source.record.stat is not None
                    and source.record.stat.identity == st.identity
                    and source.record.stat.size == st.size
                    and source.record.stat.mtime_ns == st.mtime_ns
                )
                if shareable and source is not None:
                    events += changes.link(self._ix, job.root, source, path, st)
                else:
                    more.append(HashJob(job.root, path, st))
        self.stats.queued += len(more)
        self._count(events)
        return events, more, self._stats()

    def applied_many(
        self, done: Sequence[tuple[HashJob, FileRecord]]
    ) -> list[tuple[list[Event], list[HashJob], ScanStats]] | None:
        """:meth:`applied` of many hash results at once, when each is a whole record of a file
        at a new path that no other path waits for (:func:`isccd.pipeline.changes.add_new`,
        the common case of a first scan); ``None``, with nothing done, when not."""
        roots = {job.root for job, _ in done}
        if len(roots) != 1 or any(job.units is not None or job.links for job, _ in done):
            return None
        added = changes.add_new(self._ix, roots.pop(), [record for _, record in done])
        if added is None:
            return None
        self.stats.hashed += len(added)
        for events in added:
            self._count(events)
        stats = self._stats()
        return [(events, [], stats) for events in added]

    def unstable(self, job: HashJob, attempts: int, reason: str) -> ScanStats:
        """Report a file that kept changing (other paths waiting for it are left to the next
        reconcile); return the counters."""
        events = changes.apply_unstable(self._ix, job.root, job.path, attempts, reason)
        if job.stat is not None:
            self._waiting.pop(job.stat.identity, None)
        self.stats.hashed += 1
        self._count(events)
        return self._stats()

    def finish(self) -> list[HashJob]:
        """Tombstone what vanished; return partial jobs for outdated units. A root found on
        another device with few of its files is reported and left as it is (see
        :mod:`.rootdev`)."""
        store = self._ix.store
        for directory in self._walker.vanished_dirs(store.dirs_under(self._walker.start)):
            for name, st in self._lookup(directory).items():
                self._vanished.append(ScanItem(ItemKind.VANISHED, join_path(directory, name), st))
        if not self._device_settled():
            self._vanished.clear()
            return []
        events: list[Event] = []
        for item in self._vanished:
            stored = store.file_at(item.path)
            if stored is None:
                continue  # moved away (applied as a move) or already gone
            now = stored.record.stat
            if (
                now is not None
                and item.stat.ino >= 0
                and self._device.translate(now).identity != item.stat.identity
            ):
                continue  # another file took the path meanwhile
            # This file only: the path may be a directory now, with files indexed meanwhile.
            mark = len(self._ix.pending)
            changes.remove_file(self._ix, stored)
            events += self._ix.pending[mark:]
        self._vanished.clear()
        self._count(events)
        jobs: list[HashJob] = []
        versions = self._ix.options.versions
        if versions:
            for stale in store.stale_units(
                lambda p: profile_is_stale(p, versions), self._walker.start
            ):
                if self._walker.is_known(stale.file.path):
                    jobs.append(HashJob(
                        stale.file.root, stale.file.path, stale.file.record.stat,
                        units=stale.units, file_id=stale.file.id,
                    ))  # fmt: skip
        self.stats.queued += len(jobs)
        return jobs

    def _device_settled(self) -> bool:
        """Judge the root's device after the walk: False when the root is unavailable (it is
        reported) or a subtree walk cannot tell (the next whole-root reconcile will)."""
        device = self._device
        whole = self._walker.start == self.root
        if device.moved:
            if not whole:
                return False
            missing = len(self._vanished)
            if device.unavailable(self._present, missing):
                self.stats.issues.append(device.issue(self._present, missing))
                # Kept as unavailable (nothing tombstoned): likely an unmounted disk's mount point.
                _log.warning(
                    "root_device_unavailable",
                    extra={"root": self.root, "present": self._present, "missing": missing},
                )
                return False
        if whole and self.root not in self._walker.unknown:
            moved = device.settle(self._ix.store)
            if moved:
                _log.info("root_device_reidentified", extra={"root": self.root, "files": moved})
        return True

    def close(self) -> tuple[ScanStats, Event | None]:
        """Log ``scan.done`` with the counters; return them and the event.

        Only a walk of the whole root, or one made with ``announce``, is announced: another
        subtree walk (a directory that appeared under a watcher, a polled subtree, every few
        seconds) is part of watching, and its ``scan.done`` would bury the changes; its changes
        are logged as usual.
        """
        stats = self._stats()
        if self._walker.start != self.root and not self._announce:
            return stats, None
        # The root is the event's own; the wire format refuses data that repeats it.
        data = {k: v for k, v in stats.as_dict().items() if k != "root"}
        event = changes.emit(self._ix, EventType.SCAN_DONE, self.root, "", data)
        self._count([event])
        return stats, event

    def progress(self) -> ScanStats:
        """The counters so far."""
        return self._stats()
