"""The store's backend interface: what the index keeps on disk, independent of the database.

A backend remembers files (by path, with their identity, validators and ISCC units), tombstones
of removed files, near-duplicate relations between files, the event log, and a few named
properties of the index as a whole (the duplicate policy its relations were decided under, and
the store's identity, :data:`IDENTITY_PROPERTY`). It makes no decisions: the pipeline decides
what changed and what to announce, and hands the backend the rows and events to write.

A backend is opened for one host name. SQLite holds one host's index; PostgreSQL may hold a
fleet's (:attr:`Store.shared`), and its backend reads and writes the rows of its own host,
except where a method takes ``fleet=True`` (exact matches, unit digests, near relations, the
event log). File ids are unique across the fleet, so lookups by id find any host's files. A near
relation between files of two hosts belongs to both: each host's :meth:`Store.near_of` sees it.
The interface holds what isccd calls, nothing more.

Contract shared by every backend (``tests/store`` runs one suite against each):

- A backend object is used by one thread only (the store's owner thread, see
  :mod:`isccd.store.owner`). It is not thread-safe.
- Writes happen between :meth:`Store.begin` and :meth:`Store.commit`; :meth:`Store.savepoint`,
  :meth:`Store.release` and :meth:`Store.rollback_to` bracket one unit of work inside it, so a
  failing unit is undone without losing the rest of the batch. Reads inside a transaction see its
  own writes.
- Events appended in a transaction get strictly increasing sequence numbers and become visible
  exactly when the transaction commits, together with the changes they describe.
- Writers of one store take turns: from a transaction's first write (or its
  :meth:`Store.exclusive`) to its end, no other writer commits, so that what the transaction
  read since then stays true until it commits (two hosts adding copies of one file at once
  cannot both miss the other), and writers never deadlock each other.
- Only live files (not tombstones) are returned unless a method says otherwise.
- Every failure is a :class:`isccd.errors.StoreError`: :class:`~isccd.errors.StoreCorruptError`
  when the data cannot be read, :class:`~isccd.errors.StoreFullError` when the disk (or the
  configured size limit) is full, :class:`~isccd.errors.StoreUnavailableError` when a database
  server was lost (the transaction is gone whole; the next :meth:`Store.begin` reconnects).

Paths are absolute, normalized ``str`` paths as :mod:`isccd.model` describes (non-UTF-8 bytes as
lone surrogates); backends store them byte-exact.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from isccd.model import Event, EventType, FileIssue, FileRecord, FileStat, Mode, UnitType
from isccd.store.watchlists import NewRef, Watchlist, WatchUnit

#: The property holding the store's identity (:attr:`Store.identity`).
IDENTITY_PROPERTY = "store_id"


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A file as the store knows it.

    Attributes:
        id: The store's number for this file; never reused. A rename keeps it, a removal
            turns the row into a tombstone, a new file at the same path gets a new one.
        root: The root the file was found under.
        record: What was computed for it, with ``record.path`` its current path and
            ``record.stat`` the validators the content was computed from.
        indexed_at: Unix time the record was stored.
        removed_at: Unix time the file was seen gone (a tombstone), or ``None`` while live.
        host: The host the file is on, as the store read it; ``""`` for a record not read
            from a store.
    """

    id: int
    root: str
    record: FileRecord
    indexed_at: float
    removed_at: float | None = None
    host: str = ""

    @property
    def path(self) -> str:
        """The file's path."""
        return self.record.path

    @property
    def live(self) -> bool:
        """True unless the file is a tombstone."""
        return self.removed_at is None


@dataclass(frozen=True, slots=True)
class FileKey:
    """The identity and content hash of a stored file.

    Attributes:
        identity: ``(st_dev, st_ino)``, if known (on its host).
        datahash: The Instance datahash, if computed.
        size: Size in bytes, if known.
        host: The host the file is on.
    """

    identity: tuple[int, int] | None
    datahash: str | None
    size: int | None
    host: str = ""


class NewEvent(NamedTuple):
    """An event to log (:meth:`Store.append_events`): the arguments of
    :meth:`Store.append_event`, for one of several logged together.

    ``plain``: ``data`` holds only what parsing its JSON gives back (dicts with ``str`` keys,
    lists, ``str``, ``int``, finite ``float``, ``bool``, ``None``; no enum members, tuples or
    other subclasses), so the logged event carries it as it is instead of a parse of its JSON.
    """

    type: EventType
    root: str
    path: str
    data: Mapping[str, Any]
    time: float
    host: str | None = None
    file_id: int | None = None
    plain: bool = False


class NearPair(NamedTuple):
    """Two files whose units of one type are within the near-duplicate threshold (a named
    tuple: a family's relations are read by the hundred thousand, and a tuple is made in a
    tenth of a frozen dataclass's time).

    Attributes:
        a: The smaller file id.
        b: The larger file id.
        unit: The unit type compared.
        distance: Hamming distance of the compared bits.
    """

    a: int
    b: int
    unit: UnitType
    distance: int

    @staticmethod
    def of(x: int, y: int, unit: UnitType, distance: int) -> NearPair:
        """The pair of ``x`` and ``y`` in canonical order."""
        return NearPair(min(x, y), max(x, y), unit, distance)

    def other(self, file_id: int) -> int:
        """The member that is not ``file_id``."""
        return self.b if file_id == self.a else self.a


class FolderFile(NamedTuple):
    """A live file as duplicate folders read it (:meth:`Store.folder_files`; a named tuple,
    read by the million).

    Attributes:
        id: The store's number for the file.
        host: The host it is on.
        root: Its root.
        dir: Its directory.
        name: Its name in that directory.
        size: Its size in bytes, if known.
        datahash: Its raw Instance datahash (multihash bytes), if computed.
        identity: ``(st_dev, st_ino)``, if known (on its host).
    """

    id: int
    host: str
    root: str
    dir: str
    name: str
    size: int | None
    datahash: bytes | None
    identity: tuple[int, int] | None


class ListedFile(NamedTuple):
    """A file as a duplicate listing shows it (:meth:`Store.listed_files`; a named tuple: the
    near groups of a library of families list every file of it, and a :class:`StoredFile`
    costs several times as much to read).

    Attributes:
        id: The store's number for the file.
        host: The host it is on.
        root: Its root.
        path: Its path.
        identity: ``(st_dev, st_ino)``, if known (on its host).
        size: Its size in bytes (:func:`isccd.pipeline.peers.size_of`), if known.
        allocated: Bytes it takes on disk (:attr:`isccd.model.FileStat.allocated`), if known.
        iscc: Its ISCC-CODE.
        mediatype: Its detected media type.
        mode: Its content mode.
        live: Whether it is live (not a tombstone).
        units: Its units as ``(type, code, digest)``, in ISCC-CODE order.
    """

    id: int
    host: str
    root: str
    path: str
    identity: tuple[int, int] | None
    size: int | None
    allocated: int | None
    iscc: str | None
    mediatype: str | None
    mode: Mode | None
    live: bool
    units: tuple[tuple[UnitType, str, bytes], ...]

    @staticmethod
    def of(stored: StoredFile) -> ListedFile:
        """What a listing shows of a stored file."""
        record, stat = stored.record, stored.record.stat
        return ListedFile(
            stored.id,
            stored.host,
            stored.root,
            record.path,
            stat.identity if stat is not None else None,
            record.filesize if record.filesize is not None else stat.size if stat else None,
            stat.allocated if stat is not None else None,
            record.iscc,
            record.mediatype,
            record.mode,
            stored.live,
            tuple((u.type, u.iscc, u.digest) for u in record.units),
        )

    def code(self, unit_type: UnitType) -> str | None:
        """Its unit of ``unit_type``, if computed."""
        for found, code, _ in self.units:
            if found is unit_type:
                return code
        return None

    def digests(self) -> dict[UnitType, bytes]:
        """Its unit digests by type (:func:`isccd.pipeline.queries.digests_of`)."""
        return {unit_type: digest for unit_type, _, digest in self.units}


@dataclass(frozen=True, slots=True)
class StaleUnits:
    """A live file with units made by an outdated profile, or skipped under one (a component
    that was missing, see :attr:`isccd.model.FileIssue.profile`).

    Attributes:
        file: The file.
        units: The unit types to compute again.
    """

    file: StoredFile
    units: frozenset[UnitType]


def skipped_units(issues: Sequence[FileIssue]) -> dict[UnitType, str]:
    """Unit type -> the profile a unit was not computed with (see ``FileIssue.profile``): what
    backends keep to answer :meth:`Store.stale_units` for skips."""
    return {UnitType(i.stage): i.profile for i in issues if i.profile and i.stage in _UNIT_STAGES}


_UNIT_STAGES = frozenset(t.value for t in UnitType)


class Transactional(Protocol):
    """Transactions with savepoints: what the store's owner thread drives
    (:class:`isccd.store.owner.StoreOwner`), on a backend or on anything built on one."""

    def begin(self) -> None:
        """Start a write transaction (taking the write lock now, not at the first write)."""

    def commit(self) -> None:
        """Make every change and event since :meth:`begin` durable and visible."""

    def rollback(self) -> None:
        """Undo every change since :meth:`begin`. Harmless outside a transaction."""

    def savepoint(self) -> None:
        """Mark the start of one unit of work inside the transaction."""

    def release(self) -> None:
        """Keep the unit of work started by the last :meth:`savepoint`."""

    def rollback_to(self) -> None:
        """Undo the unit of work started by the last :meth:`savepoint`, and end it."""

    def close(self) -> None:
        """Release resources; idempotent. An open transaction is rolled back."""


class Store(Transactional, Protocol):
    """A storage backend. See the module docstring for the contract."""

    @property
    def host(self) -> str:
        """The host name the store was opened for: its files are this host's."""
        ...

    @property
    def shared(self) -> bool:
        """Whether other daemons (other hosts of a fleet) write this store too."""
        ...

    def exclusive(self) -> None:
        """From now to the end of the transaction, no other writer commits (see the module
        docstring); idempotent. Called before reading what a decision rests on."""

    @property
    def identity(self) -> str:
        """A random UUID that the event log's sequence numbers are only meaningful together
        with: a store deleted and made again, or another one put in its place, has another.
        A SQLite store makes a new one each time a writer opens it (each run of its log), so
        that a copy restored over it, whose log goes back to the copy, is told from the log a
        client followed (see :meth:`log_end`); a database a fleet shares keeps one until a
        writer finds it restored from an older dump (:mod:`isccd.store.pgruns`).

        Raises:
            StoreCorruptError: The store has no identity recorded.
        """
        ...

    def log_end(self, identity: str) -> int | None:
        """The last sequence number this log had under ``identity``, an identity it had
        earlier or has now (the current one: its last now); ``None`` when it never had it.

        A client that followed the log under ``identity`` up to a seq beyond this has seen
        events this log no longer holds: the store was restored from an older copy, and the
        numbers after it count other events.
        """
        ...

    # -- files: reads ------------------------------------------------------------------------

    def file_at(self, path: str) -> StoredFile | None:
        """The live file at ``path``."""
        ...

    def files_by_id(self, ids: Sequence[int]) -> list[StoredFile]:
        """The files (live or tombstones) with these ids, in the order given; unknown ids are
        left out."""
        ...

    def files_by_identity(self, dev: int, ino: int) -> list[StoredFile]:
        """Live files with this ``(st_dev, st_ino)``: one file, or hardlinks of it."""
        ...

    def listed_files(self, ids: Sequence[int]) -> list[ListedFile]:
        """:meth:`files_by_id`, as a duplicate listing shows the files (a fraction of the
        cost a file)."""
        ...

    def files_by_datahash(self, datahash: str, *, fleet: bool = False) -> list[StoredFile]:
        """Live files whose content has this datahash, in id order (``fleet``: on every
        host)."""
        ...

    def files_by_datahashes(
        self, datahashes: Sequence[str], *, fleet: bool = False
    ) -> dict[str, list[StoredFile]]:
        """:meth:`files_by_datahash` of many datahashes at once: datahash -> its live files in
        id order (datahashes no live file has are left out)."""
        ...

    def listed_by_datahashes(
        self, datahashes: Sequence[str], *, fleet: bool = False
    ) -> dict[str, list[ListedFile]]:
        """:meth:`files_by_datahashes`, as a duplicate listing shows the files
        (:meth:`listed_files`)."""
        ...

    def files_by_instance(self, digest: bytes, *, fleet: bool = False) -> list[StoredFile]:
        """Live files whose datahash begins with this Instance-Code body (the start of their
        BLAKE3 digest: the files with those bytes, as an ISCC-CODE names them), in id order
        (``fleet``: on every host)."""
        ...

    def file_keys(self, ids: Sequence[int]) -> dict[int, FileKey]:
        """What duplicate decisions need of the live files among ``ids``, without loading
        their records (the cheap path for many near-duplicate candidates)."""
        ...

    def related_keys(
        self, identity: tuple[int, int] | None, datahash: str | None
    ) -> dict[int, FileKey]:
        """:meth:`file_keys` of this host's live files with ``identity`` (hardlinks) and of the
        fleet's with ``datahash`` (exact copies), by id: what a duplicate decision needs of
        them, in one read."""
        ...

    def related_keys_many(
        self, identities: Sequence[tuple[int, int]], datahashes: Sequence[str]
    ) -> dict[int, FileKey]:
        """:meth:`related_keys` of many files at once, by id: at least every file one of the
        pairs would find (the caller picks each file's own from the keys)."""
        ...

    def live_paths(self, paths: Sequence[str]) -> set[str]:
        """The paths among ``paths`` that hold a live file."""
        ...

    def unit_digests_of(self, ids: Sequence[int], unit_type: UnitType) -> dict[int, bytes]:
        """The full digests of one unit type of the live files among ``ids``."""
        ...

    def tombstones_at(self, path: str) -> list[StoredFile]:
        """Tombstones of files that were at ``path``, the most recent first."""
        ...

    def validators_in_dir(self, directory: str) -> dict[str, FileStat]:
        """Name -> stored validators of the live files directly in ``directory``."""
        ...

    def dirs_under(self, path: str) -> list[str]:
        """Directories at or below ``path`` that hold live files."""
        ...

    def files_under(self, path: str) -> list[StoredFile]:
        """Live files at ``path`` (a file) or anywhere below it (a directory), ordered by
        directory, then name (as bytes)."""
        ...

    def folder_files(
        self, chunk: int = 65536, *, fleet: bool = False
    ) -> Iterator[list[FolderFile]]:
        """Every live file's place, size, datahash and identity, in chunks by id (``fleet``:
        on every host): what duplicate folders are made of, without the files' records."""
        ...

    def issues_under(
        self, path: str, *, actionable: bool = False
    ) -> list[tuple[str, tuple[FileIssue, ...]]]:
        """The path and issues of each live file at or below ``path`` that has issues, in the
        order of :meth:`files_under` (their records are not read).

        Args:
            actionable: Only the files with an :attr:`~isccd.model.FileIssue.actionable` issue
                (all their issues); the others are not read either.
        """
        ...

    def stale_units(self, is_stale: Callable[[str], bool], under: str) -> list[StaleUnits]:
        """Live files at or below ``under`` with units whose profile ``is_stale`` rejects, or
        units skipped under such a profile (``FileIssue.profile`` of the record's issues), in
        id order. ``is_stale`` is evaluated once per distinct profile."""
        ...

    def unit_codes(
        self, unit_type: UnitType, chunk: int = 65536, *, fleet: bool = False
    ) -> Iterator[tuple[list[int], bytes]]:
        """The 64-bit codes of every live file's unit of this type, in chunks, by id
        (``fleet``: on every host): each chunk the files' ids and their codes, 8 bytes each,
        big-endian, one after the other (the first 64 bits of the unit's digest, a shorter one
        zero-padded on the right, as :func:`isccd.hamming.code64` reads it)."""
        ...

    def exact_datahashes(self, *, fleet: bool = False) -> list[str]:
        """Datahashes shared by live files of more than one identity (exact duplicates), in
        byte order (``fleet``: files on every host, an identity being one host's)."""
        ...

    def ids_by_size(self, at_least: int, below: int) -> list[int]:
        """Ids of the live files of at least ``at_least`` and fewer than ``below`` bytes (the
        size read, else the validators'), in order."""
        ...

    def live_by_root(self) -> dict[str, int]:
        """Live files per root, for the roots that hold any; the daemon's ``status`` asks it
        often, so a backend answers it without reading the files (SQLite: counters kept in
        the transactions that change them)."""
        ...

    def root_device(self, root: str) -> int | None:
        """The ``st_dev`` recorded for a root directory (:meth:`set_root_device`), if any."""
        ...

    # -- files: writes -----------------------------------------------------------------------

    def add_file(self, root: str, record: FileRecord, now: float) -> int:
        """Store a new live file at ``record.path`` and return its id.

        Raises:
            StoreError: A live file is already stored at that path.
        """
        ...

    def add_files(self, root: str, records: Sequence[FileRecord], now: float) -> list[int]:
        """:meth:`add_file` of many files, in order: their ids, in the same order, each
        greater than every id used before (the files at these paths must not be stored, and
        the paths must differ).

        Raises:
            StoreError: A live file is already stored at one of the paths.
        """
        ...

    def update_file(self, file_id: int, root: str, record: FileRecord, now: float) -> None:
        """Replace what is stored for a live file (same path) with ``record``."""

    def move_file(self, file_id: int, root: str, path: str, stat: FileStat) -> None:
        """Give a live file a new path (and root), keeping its units; refresh its validators."""

    def remove_file(self, file_id: int, now: float) -> None:
        """Turn a live file into a tombstone (its near relations are dropped)."""

    def purge_tombstones(self, before: float) -> int:
        """Forget tombstones removed before ``before``; return how many."""
        ...

    def set_root_device(self, root: str, dev: int) -> None:
        """Record the ``st_dev`` of a root directory. It is kept while the store holds files
        (live or tombstones) of that root."""

    def rebase_device(self, under: str, old: int, new: int) -> int:
        """Give the live files at or below ``under`` whose ``st_dev`` is ``old`` the device
        ``new`` (the same file system mounted under another device number); return how many."""
        ...

    # -- near-duplicate relations ------------------------------------------------------------

    def near_of(self, file_id: int) -> list[NearPair]:
        """Every stored relation of this file, in order."""
        ...

    def near_of_many(self, file_ids: Sequence[int], unit: UnitType) -> dict[int, list[NearPair]]:
        """The stored relations of one unit type of each of ``file_ids`` (a file without
        any is left out), in order."""
        ...

    def near_counts(self, file_ids: Sequence[int], unit: UnitType) -> dict[int, int]:
        """How many stored relations of one unit type each of ``file_ids`` has (what
        :meth:`near_of_many` would list; a file without any is left out)."""
        ...

    def farthest_near(self, wanted: Mapping[int, int], unit: UnitType) -> dict[int, list[NearPair]]:
        """The ``wanted[f]`` farthest stored relations of one unit type of each file ``f``
        (what :meth:`near_of_many` lists of it, farthest first, ties by the other file's id,
        smaller first; a file without any is left out): what bounding a file's relations
        drops first, read without its nearest."""
        ...

    def add_near(self, pairs: Sequence[NearPair]) -> None:
        """Store relations (a pair already stored is updated)."""

    def remove_near(self, pairs: Sequence[NearPair]) -> None:
        """Forget relations (unknown pairs are ignored)."""

    def near_pairs(self, *, fleet: bool = False) -> Iterator[NearPair]:
        """Every stored relation of this host's files (``fleet``: of every host's, each
        once)."""
        ...

    # -- properties --------------------------------------------------------------------------

    def get_property(self, name: str) -> str | None:
        """The value recorded under ``name``, if any."""
        ...

    def set_property(self, name: str, value: str) -> None:
        """Record ``value`` under ``name`` in the current transaction, replacing any."""

    # -- events ------------------------------------------------------------------------------

    # Watchlists (isccd.store.watchlists): the fleet's, in a shared database.

    def watchlist_version(self) -> int:
        """The count of changes to the watchlists: a writer polls it once per batch."""
        ...

    def watchlists(self) -> list[Watchlist]:
        """Every watchlist, by name."""
        ...

    def watch_units_of_type(self, unit_type: UnitType) -> list[tuple[int, int, bytes]]:
        """``(unit row, watchlist, digest)`` of every reference unit of one type."""
        ...

    def watch_units_by_id(self, ids: Sequence[int]) -> list[WatchUnit]:
        """Reference units by their rows, in row order."""
        ...

    def watch_refs_of_units(self, ids: Sequence[int]) -> list[WatchUnit]:
        """Every unit of the references holding the unit rows ``ids``, in row order."""
        ...

    def watch_units_of_list(self, name: str) -> list[WatchUnit]:
        """Every unit of a watchlist's references, by reference."""
        ...

    def add_watch_refs(
        self, name: str, threshold: int | None, refs: Sequence[NewRef], now: float
    ) -> tuple[int, list[int]]:
        """Add references to a watchlist, made with ``threshold`` when new, in the current
        transaction; the watchlist's id and the references' ids.

        Raises:
            StoreError: The watchlist exists with another threshold.
        """
        ...

    def remove_watch(self, name: str, ref: int | None) -> int:
        """Remove a watchlist, or its reference ``ref``, in the current transaction; how
        many references went.

        Raises:
            StoreError: No such watchlist or reference.
        """
        ...

    def append_event(
        self,
        type: EventType,
        root: str,
        path: str,
        data: Mapping[str, Any],
        now: float,
        *,
        host: str | None = None,
        file_id: int | None = None,
    ) -> Event:
        """Add an event to the log in the current transaction and return it with its seq.

        Args:
            type: What happened.
            root: The root concerned.
            path: The file concerned.
            data: The payload (JSON-serializable).
            now: Unix time.
            host: The host the event is about, when another host's file (the other side of a
                duplicate found across hosts); default: this store's host.
            file_id: The file a ``file.*`` event changed (see :attr:`Event.file_id`); a
                store that no other daemon follows need not keep it.
        """
        ...

    def append_events(self, events: Sequence[NewEvent]) -> list[Event]:
        """Add events to the log in the current transaction, in order; return them with
        their seqs: what :meth:`append_event` of each in turn returns."""
        ...

    def events_since(self, seq: int, limit: int = 1000, *, fleet: bool = False) -> list[Event]:
        """Up to ``limit`` events with a sequence number above ``seq``, in order (committed
        ones, and those of this connection's open transaction); ``fleet``: every host's.

        Sequence order is commit order: a reader that has read an event never finds, later,
        a committed event with a lower number that it was not shown.
        """
        ...

    def last_seq(self, *, fleet: bool = False) -> int:
        """The highest sequence number this host's log ever used (0 for a new store);
        ``fleet``: the whole log's, committed."""
        ...

    def first_seq(self, *, fleet: bool = False) -> int:
        """The lowest sequence number still in this host's log (``last_seq() + 1`` when
        empty); ``fleet``: of the whole log, where events below it may have been purged."""
        ...

    def purge_events(self, before: float) -> int:
        """Forget events logged before ``before`` (sequence numbers are never reused)."""
        ...


def split_path(path: str) -> tuple[str, str]:
    """``(directory, name)`` of an absolute path; the directory of ``/x`` is ``/``."""
    directory, _, name = path.rpartition("/")
    return (directory or "/", name)


def join_path(directory: str, name: str) -> str:
    """The inverse of :func:`split_path`."""
    return f"/{name}" if directory == "/" else f"{directory}/{name}"
