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
    """

    protocol: int
    server: str
    commands: tuple[str, ...]
    events: tuple[str, ...]
    max_line_bytes: int
    subscriber_queue: int


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
        last_seq: The last sequence number in the event log.
        server: The socket server's figures (filled in by the server).
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


@dataclass(frozen=True, slots=True)
class SubscribeResult:
    """``subscribe``.

    Attributes:
        since: Events after this seq follow (the request's ``since``, or ``head`` without it).
        head: The last seq in the log when the subscription started.
        first: The oldest seq the log still holds (``head + 1`` when it is empty).
        complete: False when events after ``since`` were already pruned from the log: the
            replay has a hole and the client should resynchronize (e.g. with ``dupes``).
    """

    since: int
    head: int
    first: int
    complete: bool


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

    @classmethod
    def from_record(
        cls,
        record: FileRecord,
        root: str,
        *,
        indexed: float | None = None,
        removed: float | None = None,
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
            indexed=indexed,
            removed=removed,
        )


@dataclass(frozen=True, slots=True)
class SimilarMatch:
    """One file found by ``similar``.

    Attributes:
        path: The file.
        root: Its root.
        unit: The unit type compared.
        distance: Hamming distance between the units.
        threshold: The largest distance the query accepted for this unit type.
        iscc: The matching file's unit.
    """

    path: str
    root: str
    unit: UnitType
    distance: int
    threshold: int
    iscc: str


@dataclass(frozen=True, slots=True)
class SimilarResult:
    """``similar``: matches nearest first; ``truncated`` when ``limit`` cut the list."""

    matches: tuple[SimilarMatch, ...]
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class DupMember:
    """One file of a duplicate group.

    Attributes:
        path: The file.
        root: Its root.
        size: Bytes.
        iscc: The unit the group is made of, for this file.
        distance: Hamming distance to the group's first member (0 for exact groups).
    """

    path: str
    root: str
    size: int | None
    iscc: str | None
    distance: int = 0


@dataclass(frozen=True, slots=True)
class DupGroup:
    """A group of duplicates.

    Attributes:
        kind: Exact or near.
        unit: The unit type compared (``instance`` for exact groups).
        threshold: The Hamming-distance threshold (0 for exact groups).
        wasted_bytes: Bytes that all members but the largest take.
        members: The files, the reference member first.
    """

    kind: DupKind
    unit: UnitType
    threshold: int
    wasted_bytes: int
    members: tuple[DupMember, ...]


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
