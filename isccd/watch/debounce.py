"""Settling and coalescing of file-system changes: pure logic, with the clock passed in.

A file being written produces a burst of events; it is processed once, after it has been quiet
for ``settle`` seconds, or ``max_delay`` seconds after its first change if it never goes quiet.
Everything that happens to one path while it waits is coalesced into one entry, so the work
queue behind the debouncer holds each path at most once.

A file written to (:attr:`ChangeKind.WRITTEN`) is open for writing until the kernel says it was
closed (:attr:`ChangeKind.CLOSED`, inotify's ``IN_CLOSE_WRITE``): until then it is not released,
however long it stays quiet (a slow upload pauses between its writes), but only once it is closed,
and settled; or ``max_open_delay`` seconds after its first write if it is never closed (a log
file kept open and appended to forever), coded then as it is. The wait for ``max_delay`` starts
again at the close. A file created and closed in one go (a copy, a save) is released as soon as it
has settled after its close, as any other change.

What comes out are *actions*:

- :class:`Dirty`: look at this path again. The consumer stats it: a file whose validators changed
  is hashed, a directory is scanned, a path that vanished is forgotten. Created, modified,
  attribute-changed and deleted all end up here; the disk, not the event, says what happened.
- :class:`Moved`: a rename inside a root. Emitted at once and in order, because it changes no
  content: the consumer updates paths and keeps the codes. Whatever was pending for the old path
  (or below it, for a directory) now waits under the new path.
- :class:`Recrawl`: events were lost or too many are pending; the consumer reconciles the root
  from the disk (stat only).

A directory that appears (created, or moved in from outside) is returned as a :class:`Dirty`
immediately, so the files it already holds are found without waiting for events that were never
sent (they were written before its watch existed).

Nothing here reads the clock, sleeps, logs or touches the disk.
"""

from __future__ import annotations

import enum
import heapq
from collections import OrderedDict
from dataclasses import dataclass

from isccd.errors import OptionError


class ChangeKind(enum.Enum):
    """What an observer saw happen to a path."""

    TOUCHED = "touched"
    """Created, or its attributes changed (its content may have changed: it is looked at)."""
    WRITTEN = "written"
    """Written to (``IN_MODIFY``): open for writing until :attr:`CLOSED` comes."""
    CLOSED = "closed"
    """Closed after writing (``IN_CLOSE_WRITE``)."""
    REMOVED = "removed"
    """Deleted, or moved out of the root."""
    MOVED = "moved"
    """Renamed inside the root (``path`` to ``dest``)."""
    DIR_ADDED = "dir_added"
    """A directory was created or moved in from outside the root."""


@dataclass(frozen=True, slots=True)
class Change:
    """One observed change, as handed from the observer to the debouncer.

    Attributes:
        kind: What happened.
        root: The watched root the path is in.
        path: The path concerned (the source of a move).
        dest: The destination of a move; empty otherwise.
        is_dir: True when the path is a directory.
    """

    kind: ChangeKind
    root: str
    path: str
    dest: str = ""
    is_dir: bool = False


@dataclass(frozen=True, slots=True)
class Dirty:
    """Look at ``path`` again: hash it if changed, scan it if a directory, forget it if gone."""

    root: str
    path: str
    is_dir: bool = False


@dataclass(frozen=True, slots=True)
class Moved:
    """``src`` was renamed to ``dest`` inside ``root``; its codes stay valid."""

    root: str
    src: str
    dest: str
    is_dir: bool = False


class RecrawlReason(enum.StrEnum):
    """Why a root must be reconciled from the disk."""

    OVERFLOW = "overflow"
    """The kernel's event queue overflowed (``IN_Q_OVERFLOW``): events were lost."""
    PENDING = "pending"
    """More paths were waiting to settle than allowed: they were dropped for a reconcile."""
    WATCH_LIMIT = "watch_limit"
    """A directory could not be watched (``fs.inotify.max_user_watches``)."""


@dataclass(frozen=True, slots=True)
class Recrawl:
    """Reconcile ``root`` from the disk (stat only); ``reason`` says why."""

    root: str
    reason: RecrawlReason


Action = Dirty | Moved | Recrawl


@dataclass(frozen=True, slots=True)
class DebounceStatistics:
    """A snapshot of the debouncer's state.

    Attributes:
        pending: Paths waiting to settle.
        settled: Paths emitted as settled since the start.
        coalesced: Changes folded into an already pending path.
        overflows: Times the pending limit was hit.
    """

    pending: int
    settled: int
    coalesced: int
    overflows: int


class _Entry:
    __slots__ = ("first", "is_dir", "last", "open", "root")

    def __init__(self, root: str, first: float, *, is_dir: bool, open: bool = False) -> None:
        self.root = root
        self.first = first
        self.last = first
        self.is_dir = is_dir
        self.open = open  # written to, and not closed since


@dataclass(frozen=True, slots=True)
class DebounceOptions:
    """How changes are settled (``[watch] settle``, ``max_delay``, ``max_pending``,
    ``max_open_delay``).

    Attributes:
        settle: Seconds a path must stay quiet before it is released.
        max_delay: Seconds after a path's first change (or its close, for a file that was
            open for writing) by which it is released regardless.
        max_pending: Paths allowed to wait at once. A change that would exceed it drops the
            pending paths of its root and yields a :class:`Recrawl` of that root instead.
        max_open_delay: Seconds after its first write by which a file still open for writing
            is released regardless.
    """

    settle: float = 0.25
    max_delay: float = 5.0
    max_pending: int = 100_000
    max_open_delay: float = 600.0

    def __post_init__(self) -> None:
        """Check the values.

        Raises:
            OptionError: A value that is not positive.
        """
        for name in ("settle", "max_delay", "max_pending", "max_open_delay"):
            if not getattr(self, name) > 0:
                raise OptionError(name, f"must be greater than 0 (got {getattr(self, name)})")


class Debouncer:
    """Coalesces changes per path and releases them once settled (see
    :class:`DebounceOptions`).

    Times are seconds on any monotonic clock, passed to every call.
    """

    def __init__(self, options: DebounceOptions | None = None) -> None:
        options = options or DebounceOptions()
        self._settle = options.settle
        self._max_delay = options.max_delay
        self._max_pending = options.max_pending
        self._max_open_delay = options.max_open_delay
        self._entries: dict[str, _Entry] = {}
        # Quiet order of the paths not open for writing: least recently touched first (a touch
        # moves a path to the end).
        self._by_last: OrderedDict[str, None] = OrderedDict()
        # Max-delay order: (deadline, path), stale items skipped when popped (see _deadline).
        self._by_first: list[tuple[float, str]] = []
        self._settled = 0
        self._coalesced = 0
        self._overflows = 0

    def add(self, change: Change, now: float) -> list[Action]:
        """Take one change.

        Returns:
            Actions to carry out at once (moves, new directories, recrawls), in order.
        """
        if change.kind is ChangeKind.MOVED:
            self._rekey(change.path, change.dest, now, is_dir=change.is_dir)
            return [Moved(change.root, change.path, change.dest, change.is_dir)]
        if change.kind is ChangeKind.DIR_ADDED:
            self._drop(change.path)
            return [Dirty(change.root, change.path, is_dir=True)]
        entry = self._entries.get(change.path)
        if entry is not None:
            self._coalesced += 1
            entry.is_dir = change.is_dir
            if change.kind is ChangeKind.WRITTEN and not entry.open:
                # Out of the quiet order until it is closed; its deadline is the open file's.
                self._drop(change.path)
                entry.open = True
                entry.last = now
                self._insert(change.path, entry)
            elif change.kind is ChangeKind.CLOSED and entry.open:
                # Settles from its close, and may keep changing for max_delay after it.
                self._drop(change.path)
                entry.open = False
                entry.first = entry.last = now
                self._insert(change.path, entry)
            else:
                entry.last = now
                if not entry.open:
                    self._by_last.move_to_end(change.path)
            return []
        if len(self._entries) >= self._max_pending:
            return [self._overflow(change.root)]
        written = change.kind is ChangeKind.WRITTEN
        self._insert(change.path, _Entry(change.root, now, is_dir=change.is_dir, open=written))
        return []

    def pop_due(self, now: float) -> list[Dirty]:
        """Remove and return the paths that have settled (or waited ``max_delay``) by ``now``."""
        due: list[Dirty] = []
        while self._by_last:
            path = next(iter(self._by_last))
            if self._entries[path].last + self._settle > now:
                break
            due.append(self._release(path))
        while self._by_first and self._by_first[0][0] <= now:
            _, path = heapq.heappop(self._by_first)
            entry = self._entries.get(path)
            if entry is not None and self._deadline(entry) <= now:
                due.append(self._release(path))
        return due

    def next_deadline(self) -> float | None:
        """The earliest time at which :meth:`pop_due` will return something, or None."""
        deadline: float | None = None
        if self._by_last:
            deadline = self._entries[next(iter(self._by_last))].last + self._settle
        while self._by_first:
            limit, path = self._by_first[0]
            entry = self._entries.get(path)
            if entry is None or self._deadline(entry) != limit:
                heapq.heappop(self._by_first)  # stale: released, or moved to another path
                continue
            deadline = limit if deadline is None else min(deadline, limit)
            break
        return deadline

    def flush(self, root: str | None = None) -> list[Dirty]:
        """Release every pending path (of ``root``, or of all roots) now, settled or not."""
        paths = [p for p, e in self._entries.items() if root is None or e.root == root]
        return [self._release(path) for path in paths]

    def discard_root(self, root: str) -> int:
        """Forget the pending paths of a root that is no longer watched; returns how many."""
        paths = [p for p, e in self._entries.items() if e.root == root]
        for path in paths:
            self._drop(path)
        return len(paths)

    def statistics(self) -> DebounceStatistics:
        """Counters for ``isccd status`` and the logs."""
        return DebounceStatistics(
            len(self._entries), self._settled, self._coalesced, self._overflows
        )

    def __len__(self) -> int:
        return len(self._entries)

    def _deadline(self, entry: _Entry) -> float:
        """When ``entry`` is released however busy it is."""
        return entry.first + (self._max_open_delay if entry.open else self._max_delay)

    def _insert(self, path: str, entry: _Entry) -> None:
        self._entries[path] = entry
        if not entry.open:  # an open file never settles: only its close or deadline frees it
            self._by_last[path] = None
        heapq.heappush(self._by_first, (self._deadline(entry), path))

    def _drop(self, path: str) -> _Entry | None:
        entry = self._entries.pop(path, None)
        if entry is not None:
            self._by_last.pop(path, None)
        return entry

    def _release(self, path: str) -> Dirty:
        entry = self._drop(path)
        assert entry is not None
        self._settled += 1
        return Dirty(entry.root, path, entry.is_dir)

    def _rekey(self, src: str, dest: str, now: float, *, is_dir: bool) -> None:
        """Carry what was pending for ``src`` (and below it) over to ``dest``."""
        moves = [(src, dest)]
        if is_dir:
            prefix = src + "/"
            moves += [(p, dest + p[len(src) :]) for p in self._entries if p.startswith(prefix)]
        for old, new in moves:
            entry = self._drop(old)
            if entry is None:
                continue
            existing = self._drop(new)
            if existing is not None:
                entry.first = min(entry.first, existing.first)
            entry.last = now
            self._insert(new, entry)

    def _overflow(self, root: str) -> Recrawl:
        self._overflows += 1
        self.discard_root(root)
        return Recrawl(root, RecrawlReason.PENDING)
