"""The results of the commands, as typed frozen data.

The daemon's handler returns these; the server writes them with :func:`to_wire`; clients read
them back with :func:`from_wire`. Their JSON form is documented in docs/protocol.md. Adding a
member with a default is a compatible change; removing or retyping one is not.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from isccd.model import FileIssue, FileRecord, Mode, UnitType


class DupKind(enum.StrEnum):
    """What makes a duplicate group."""

    EXACT = "exact"
    """The same bytes: equal Instance-Code datahash and size."""
    NEAR = "near"
    """Units of one type within that type's Hamming-distance threshold."""


class Relation(enum.StrEnum):
    """How a file found by ``similar`` (or listed by ``get``) relates to the one asked about."""

    HARDLINK = "hardlink"
    """The same file under another name (same device and inode)."""
    EXACT = "exact"
    """Another file with the same bytes (equal datahash and size)."""
    NEAR = "near"
    """Another file with a unit within that unit type's threshold."""


@dataclass(frozen=True, slots=True)
class HelloResult:
    """``hello``: what the server speaks.

    Attributes:
        protocol: The protocol version in use.
        server: Name and version of the server, e.g. ``"isccd 0.1.0"``.
        commands: The commands it accepts.
        events: The event types it may send.
        max_line_bytes: Longest request line accepted.
        subscriber_queue: Events buffered per subscriber before it is told it lagged.
        store: The identity of the store whose event log is served (``None`` from a server
            that does not tell).
    """

    protocol: int
    server: str
    commands: tuple[str, ...]
    events: tuple[str, ...]
    max_line_bytes: int
    subscriber_queue: int
    store: str | None = None


@dataclass(frozen=True, slots=True)
class ScanProgress:
    """A reconcile scan under way.

    Attributes:
        reason: Why it runs: ``"startup"``, ``"periodic"``, ``"recrawl"``, ``"request"``, ...
        phase: ``"walking"`` (listing and comparing) or ``"hashing"`` (computing codes).
        files_seen: Files listed so far.
        files_queued: Files found new or changed, to be hashed.
        files_done: Queued files processed so far.
        errors: Files that failed so far.
        started: Unix time the scan started.
    """

    reason: str
    phase: str
    files_seen: int
    files_queued: int
    files_done: int
    errors: int
    started: float


@dataclass(frozen=True, slots=True)
class RootStatus:
    """One watched root.

    Attributes:
        path: The root, symbolic links resolved.
        watch_mode: ``"inotify"`` (every directory watched), ``"partial"`` (some subtrees
            polled) or ``"polling"`` (the whole root polled).
        files: Files indexed under the root.
        scan: The scan under way, if any.
        note: Why the root is not fully watched and what would fix it (e.g. the sysctl value).
    """

    path: str
    watch_mode: str
    files: int
    scan: ScanProgress | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class ServiceStatistics:
    """The socket server's own figures, added to ``status`` by the server.

    Attributes:
        connections: Clients connected now.
        subscribers: Connections with a subscription.
        events_published: Events handed to the broker since the daemon started.
        subscribers_lagged: Subscribers disconnected for lagging since the daemon started.
    """

    connections: int
    subscribers: int
    events_published: int
    subscribers_lagged: int


@dataclass(frozen=True, slots=True)
class FleetHost:
    """Another host sharing the daemon's database.

    Attributes:
        name: Its host name.
        heard: Unix time the database last heard from it (its last commit of events, its
            daemon's heartbeat, or its opening the database); ``None`` if never.
        last_seq: The highest sequence number of its log.
    """

    name: str
    heard: float | None
    last_seq: int


@dataclass(frozen=True, slots=True)
class DatabaseStatus:
    """The database a fleet shares, as the daemon sees it (``status`` on a PostgreSQL store).

    Attributes:
        url: Its URL, without a password.
        host: The host name this daemon writes under.
        connected: Whether the daemon reads the shared log now.
        latency_ms: The last round trip to it, in milliseconds (``None`` before the first).
        checked: Unix time of that measurement.
        position: The last sequence number of the shared log the daemon has read (its
            in-memory index holds every change up to it).
        hosts: The other hosts that opened the database, by name.
        error: Why the daemon cannot read the log now, while it cannot.
    """

    url: str
    host: str
    connected: bool
    latency_ms: float | None = None
    checked: float | None = None
    position: int = 0
    hosts: tuple[FleetHost, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class DaemonStatus:
    """``status``.

    Attributes:
        version: The daemon's version.
        pid: Its process id.
        state: ``"starting"``, ``"ready"``, ``"reloading"`` or ``"stopping"``.
        started: Unix time it started.
        roots: The watched roots.
        queue_depth: Files waiting to be hashed.
        files_indexed: Files in the index (tombstones excluded).
        last_seq: The last sequence number in the event log (the fleet's, for a database
            a fleet shares).
        server: The socket server's figures (filled in by the server).
        problems: What keeps the daemon from working fully, a sentence each: the store cannot
            be written, a background loop failed, a reload was refused. Empty when all is well;
            problems of one root are in its ``note``.
        database: The shared database, for a store a fleet shares; ``None`` for one host's.
    """

    version: str
    pid: int
    state: str
    started: float
    roots: tuple[RootStatus, ...]
    queue_depth: int
    files_indexed: int
    last_seq: int
    server: ServiceStatistics | None = None
    problems: tuple[str, ...] = ()
    database: DatabaseStatus | None = None


@dataclass(frozen=True, slots=True)
class SubscribeResult:
    """``subscribe``.

    Attributes:
        since: Events after this seq follow (the request's ``since``, or ``head`` without it).
        head: The last seq in the log when the subscription started.
        first: The oldest seq the log still holds (``head + 1`` when it is empty).
        complete: False when events after ``since`` were already pruned from the log: the
            replay has a hole and the client should resynchronize (e.g. with ``dupes``).
        store: The identity of the store the sequence numbers belong to: keep it with the
            resume point and give it back with ``since`` (``None`` from a server that does not
            tell).
    """

    since: int
    head: int
    first: int
    complete: bool
    store: str | None = None


@dataclass(frozen=True, slots=True)
class UnsubscribeResult:
    """``unsubscribe``.

    Attributes:
        subscribed: Whether there was a subscription.
        seq: Resume point: every matching event up to it was delivered.
    """

    subscribed: bool
    seq: int | None = None


@dataclass(frozen=True, slots=True)
class UnitInfo:
    """One unit of an indexed file.

    Attributes:
        type: The unit type.
        iscc: The unit's code.
        bits: Length of its body.
        profile: What made it (ISCC version, bit length, extractor and tool versions).
    """

    type: UnitType
    iscc: str
    bits: int
    profile: str = ""


@dataclass(frozen=True, slots=True)
class SimilarMatch:
    """One file found by ``similar``.

    Attributes:
        path: The file.
        root: Its root.
        unit: The unit type compared (``instance`` for hardlinks and exact duplicates).
        distance: Hamming distance between the units (0 for hardlinks and exact duplicates).
        threshold: The largest distance the query accepted for this unit type (0 for
            hardlinks and exact duplicates).
        iscc: The matching file's unit of that type.
        relation: Hardlink, exact or near.
        host: The host the file is on.
    """

    path: str
    root: str
    unit: UnitType
    distance: int
    threshold: int
    iscc: str
    relation: Relation = Relation.NEAR
    host: str = ""


@dataclass(frozen=True, slots=True)
class FileInfo:
    """``get``: what the index knows about one file.

    Attributes:
        path: The file.
        root: The root it belongs to.
        size: Bytes.
        mtime: Modification time (Unix seconds).
        mediatype: Detected media type.
        mode: Content processing mode.
        iscc: The ISCC-CODE.
        datahash: ``"1e20"`` + BLAKE3 hex of the bytes.
        name: The name the Meta-Code was made from.
        units: Every unit computed.
        issues: What could not be computed, and why.
        indexed: Unix time the record was stored.
        removed: Unix time the file was found gone (a tombstone), else ``None``.
        links: The file's other names (hardlinks).
        duplicates: Its exact duplicates and the near duplicates the index recorded for it,
            as ``similar`` lists them (exact first, then nearest first).
        host: The host the file is on.
    """

    path: str
    root: str
    size: int | None = None
    mtime: float | None = None
    mediatype: str | None = None
    mode: Mode | None = None
    iscc: str | None = None
    datahash: str | None = None
    name: str | None = None
    units: tuple[UnitInfo, ...] = ()
    issues: tuple[FileIssue, ...] = ()
    indexed: float | None = None
    removed: float | None = None
    links: tuple[str, ...] = ()
    duplicates: tuple[SimilarMatch, ...] = ()
    host: str = ""

    @classmethod
    def from_record(
        cls,
        record: FileRecord,
        root: str,
        *,
        indexed: float | None = None,
        removed: float | None = None,
        links: tuple[str, ...] = (),
        duplicates: tuple[SimilarMatch, ...] = (),
        host: str = "",
    ) -> FileInfo:
        """The wire view of a stored record."""
        stat = record.stat
        return cls(
            path=record.path,
            root=root,
            size=stat.size if stat is not None else record.filesize,
            mtime=stat.mtime_ns / 1e9 if stat is not None else None,
            mediatype=record.mediatype,
            mode=record.mode,
            iscc=record.iscc,
            datahash=record.datahash,
            name=record.name,
            units=tuple(UnitInfo(u.type, u.iscc, u.bits, u.profile) for u in record.units),
            issues=record.issues,
            # Floats whatever the store returned, so that the JSON is the same as read back.
            indexed=None if indexed is None else float(indexed),
            removed=None if removed is None else float(removed),
            links=links,
            duplicates=duplicates,
            host=host,
        )


@dataclass(frozen=True, slots=True)
class SimilarResult:
    """``similar``: matches nearest first; ``truncated`` when ``limit`` cut the list."""

    matches: tuple[SimilarMatch, ...]
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class DupMember:
    """One file of a duplicate group (its hardlinks are the same member).

    Attributes:
        path: The file (the first of its names).
        root: Its root.
        size: Bytes.
        iscc: This file's unit of the group's type.
        distance: Hamming distance between that unit and the first member's (0 for exact
            groups); ``None`` when one of them has no unit of that type (the member is joined to
            the group by another unit type: see the group's ``pairs``).
        links: The file's other names (hardlinks).
        host: The host the file is on.
    """

    path: str
    root: str
    size: int | None
    iscc: str | None
    distance: int | None = 0
    links: tuple[str, ...] = ()
    host: str = ""


@dataclass(frozen=True, slots=True)
class DupPair:
    """A near relation between two members of a group.

    Attributes:
        a: Index of one member in ``members``.
        b: Index of the other (greater than ``a``).
        unit: The unit type by which they are near.
        distance: Hamming distance between their units.
        threshold: The largest distance accepted for that unit type and length.
    """

    a: int
    b: int
    unit: UnitType
    distance: int
    threshold: int


@dataclass(frozen=True, slots=True)
class DupGroup:
    """A group of duplicates.

    Attributes:
        kind: Exact or near.
        unit: The unit type compared (``instance`` for exact groups; for near groups the type
            most of its pairs are near by).
        threshold: The Hamming-distance threshold of that unit type (0 for exact groups).
        wasted_bytes: Bytes that keeping only one member would free (exact: the size times the
            extra copies; near: all members but the largest).
        members: The files, largest first; the reference member first.
        pairs: For near groups, the near relations that connect the members.
    """

    kind: DupKind
    unit: UnitType
    threshold: int
    wasted_bytes: int
    members: tuple[DupMember, ...]
    pairs: tuple[DupPair, ...] = ()


@dataclass(frozen=True, slots=True)
class DupesResult:
    """``dupes``: groups, largest ``wasted_bytes`` first; ``truncated`` when ``limit`` cut it."""

    groups: tuple[DupGroup, ...]
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class RescanResult:
    """``rescan``: the roots whose scan was started (progress follows as ``scan.*`` events)."""

    roots: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SyncResult:
    """``sync``: every change made on disk before the request is in the log at or before ``seq``."""

    seq: int
