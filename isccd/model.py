"""Typed, immutable data shared by the layers of isccd.

Everything that crosses a layer boundary (a process pool, the store's owner thread, the socket
broker) is one of these frozen dataclasses or enums. This module imports nothing of isccd, so any
layer may import it.

Paths are ``str`` in the form :func:`os.fsdecode` gives on Linux: names that are not valid UTF-8
keep their bytes as lone surrogates (``surrogateescape``) and round-trip exactly through
:func:`os.fsencode`.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


class Mode(enum.StrEnum):
    """How a file's content is processed, decided from its media type."""

    TEXT = "text"
    """Text and documents: the Text-Code."""
    IMAGE = "image"
    """Still images: the Image-Code."""
    AUDIO = "audio"
    """Sound: the Audio-Code from Chromaprint features."""
    VIDEO = "video"
    """Moving images: the Video-Code from MPEG-7 frame signatures."""


class UnitType(enum.StrEnum):
    """The kinds of ISCC unit isccd computes and compares.

    Units are only ever compared with units of the same type.
    """

    META = "meta"
    """Meta-Code: similarity of the name and description."""
    TEXT = "text"
    """Content-Code Text."""
    IMAGE = "image"
    """Content-Code Image."""
    AUDIO = "audio"
    """Content-Code Audio."""
    VIDEO = "video"
    """Content-Code Video."""
    MIXED = "mixed"
    """Content-Code Mixed."""
    DATA = "data"
    """Data-Code: similarity of the raw bytes."""
    INSTANCE = "instance"
    """Instance-Code: BLAKE3 checksum of the raw bytes."""


#: The Content-Code unit each processing mode produces.
CONTENT_UNIT_OF_MODE: Mapping[Mode, UnitType] = {
    Mode.TEXT: UnitType.TEXT,
    Mode.IMAGE: UnitType.IMAGE,
    Mode.AUDIO: UnitType.AUDIO,
    Mode.VIDEO: UnitType.VIDEO,
}

#: Lengths a file's units may have, in bits: multiples of 32 from 64 to 256 (ISO 24138; a unit
#: of 32 bits cannot be part of an ISCC-CODE). The settings, ``isccd code`` and ``isccd scan``
#: accept these.
UNIT_BITS: tuple[int, ...] = tuple(range(64, 257, 32))


class IssueKind(enum.StrEnum):
    """How a unit or stage that did not produce a result ended."""

    ERROR = "error"
    """Something went wrong (corrupt input, a tool failed, the file vanished)."""
    SKIPPED = "skipped"
    """Nothing to compute, by design (no text in a document, audio too short, no tool)."""
    WARNING = "warning"
    """A result with a caveat: the file was coded, but not as expected (content that looked like
    a format its decoder then could not read, coded as generic data; a video signature written
    completely although the decoder reported errors)."""


class IssueCode(enum.StrEnum):
    """Why a stage has no result, for programs (the issue's ``reason`` is for people)."""

    VANISHED = "vanished"
    """The file disappeared before or while it was read: treat it as removed."""
    UNSTABLE = "unstable"
    """The file changed or was replaced while it was read: retry later."""
    NOT_REGULAR = "not_regular"
    """A FIFO, socket, device, directory or symbolic link: never opened."""
    ACCESS = "access"
    """Permission denied or an I/O error."""
    UNSUPPORTED = "unsupported"
    """The media type has no Content-Code."""
    NO_CONTENT = "no_content"
    """Nothing to code: empty file, no text, audio too short, encrypted document."""
    TOO_LARGE = "too_large"
    """Over a configured limit (e.g. a decompression bomb); refused, not decoded."""
    TOOL_MISSING = "tool_missing"
    """An external tool or optional extractor is not installed."""
    DISABLED = "disabled"
    """Turned off by the configuration (e.g. the Meta-Code with ``[code] meta = false``)."""
    TOOL_FAILED = "tool_failed"
    """An external tool or extractor failed or timed out."""
    INVALID = "invalid"
    """The content is corrupt or truncated and cannot be decoded."""
    INTERNAL = "internal"
    """An unexpected error in isccd itself (a bug); the message names the exception."""


class RelationKind(enum.StrEnum):
    """How two files relate. The value is the wire name (``relation``)."""

    HARDLINK = "hardlink"
    """The same file under two names (same device and inode)."""
    EXACT = "exact"
    """The same bytes in two files (equal datahash and size)."""
    NEAR = "near"
    """Similar content: units of one type within that type's threshold."""


@dataclass(frozen=True, slots=True)
class Unit:
    """One computed ISCC unit.

    Attributes:
        type: Which unit this is.
        iscc: The canonical code, ``"ISCC:"`` + base32.
        digest: The unit's body (``bits // 8`` bytes), for Hamming comparisons.
        profile: What made the unit: ISCC version, bit length, and the extractor and tool
            versions it depends on. A change of profile means the unit must be recomputed.
    """

    type: UnitType
    iscc: str
    digest: bytes
    profile: str

    @property
    def bits(self) -> int:
        """Length of the unit's body in bits."""
        return len(self.digest) * 8


#: Units in the order of an ISCC-CODE: Meta, Content, Data, Instance.
UNIT_ORDER: dict[UnitType, int] = {
    t: i
    for i, t in enumerate(
        (UnitType.META, UnitType.TEXT, UnitType.IMAGE, UnitType.AUDIO, UnitType.VIDEO,
         UnitType.MIXED, UnitType.DATA, UnitType.INSTANCE)
    )
}  # fmt: skip


def sort_units(units: Iterable[Unit]) -> tuple[Unit, ...]:
    """Units in ISCC-CODE order."""
    return tuple(sorted(units, key=lambda u: UNIT_ORDER[u.type]))


@dataclass(frozen=True, slots=True)
class FileIssue:
    """A per-file problem: why a stage or unit has no result, or what to know about its result.

    Attributes:
        stage: Where it happened: ``"read"``, ``"mediatype"``, or a unit type value
            (``"meta"``, ``"text"``, ``"image"``, ``"audio"``, ``"video"``, ``"data"``, ...).
        kind: Error, deliberate skip, or warning (a result with a caveat).
        reason: A sentence a user can act on.
        code: The cause, for programs (e.g. retry on ``UNSTABLE``); ``None`` if unclassified.
        profile: For a unit not computed because a component is missing (``TOOL_MISSING``)
            or turned off (``DISABLED``): the profile it was attempted with, naming the
            component as ``name/missing`` (e.g. ``"iscc/1.5.0 bits/64 fpcalc/missing
            isccd-extract/1"``) or ``meta/off``. Like a unit's profile, once it is outdated (the
            component is installed, the unit turned on) the unit is computed.
    """

    stage: str
    kind: IssueKind
    reason: str
    code: IssueCode | None = None
    profile: str | None = None

    @property
    def actionable(self) -> bool:
        """Whether someone has to act on it: an error, or a tool that is missing (what ``isccd
        errors`` lists, and what a scan reports)."""
        return self.kind is IssueKind.ERROR or self.code is IssueCode.TOOL_MISSING


@dataclass(frozen=True, slots=True)
class FileStat:
    """A file's identity and the validators that tell whether it changed, and the space it
    takes.

    ``size`` is the apparent size (the bytes the file holds); ``blocks`` the 512-byte blocks
    allocated to it (``st_blocks``), which a sparse file's holes do not take and which is what
    removing its last name frees. ``blocks`` is not a validator, and ``None`` when not known
    (a record stored before isccd kept it).
    """

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    nlink: int = 1
    blocks: int | None = None

    @classmethod
    def from_os(cls, st: os.stat_result) -> FileStat:
        """Build from the result of :func:`os.stat`, :func:`os.fstat` or ``DirEntry.stat``."""
        return cls(
            st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink,
            st.st_blocks,
        )  # fmt: skip

    @property
    def allocated(self) -> int | None:
        """Bytes allocated on disk (``st_blocks`` times 512, as ``du`` counts), or ``None``
        when not known."""
        return None if self.blocks is None else self.blocks * 512

    @property
    def identity(self) -> tuple[int, int]:
        """``(st_dev, st_ino)``: the same file under any name (renames, hardlinks)."""
        return (self.dev, self.ino)

    @property
    def version(self) -> tuple[int, int, int, int, int]:
        """``(dev, ino, size, mtime_ns, ctime_ns)``: every validator, equal between two stats
        exactly when the content can be trusted unchanged."""
        return (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)

    def same_content_version(self, other: FileStat) -> bool:
        """True when every validator matches, so the content can be trusted unchanged."""
        return self.version == other.version


@dataclass(frozen=True, slots=True)
class FileRecord:
    """Everything isccd learned about one file in one processing pass.

    Attributes:
        path: The file's path (see the module docstring for non-UTF-8 names).
        stat: The file's stat taken from the open descriptor before reading; ``None`` if the
            file could not be opened at all.
        mediatype: The detected media type, e.g. ``"image/jpeg"``.
        mode: The processing mode, or ``None`` when the type has no Content-Code.
        iscc: The composite ISCC-CODE, when at least Data and Instance were computed.
        name: The name the Meta-Code was made from.
        units: Every unit computed, in the order Meta, Content, Data, Instance.
        datahash: ``"1e20"`` + BLAKE3 hex of the bytes (a multihash).
        filesize: Bytes read.
        characters: Text mode: characters after normalization.
        width: Image and video: pixels.
        height: Image and video: pixels.
        duration: Audio and video: seconds.
        extractor: The extractor and tool versions used for the Content-Code.
        timings: Milliseconds spent per stage, in order; empty unless the record was computed
            with ``timed=True`` (:func:`isccd.hashing.compute_record`).
        issues: What could not be computed, and why.
        description: The description the Meta-Code was made from, if any.
        metahash: ``"1e20"`` + BLAKE3 hex of the Meta-Code's input (a multihash).
        named_by_file: Whether the Meta-Code's name is the file's name (the file has no
            embedded title, or embedded metadata is not read), so that renaming the file
            changes its Meta-Code; ``None`` when no Meta-Code was made, or for a record stored
            before isccd kept this.
    """

    path: str
    stat: FileStat | None
    mediatype: str | None = None
    mode: Mode | None = None
    iscc: str | None = None
    name: str | None = None
    units: tuple[Unit, ...] = ()
    datahash: str | None = None
    filesize: int | None = None
    characters: int | None = None
    width: int | None = None
    height: int | None = None
    duration: float | None = None
    extractor: str | None = None
    timings: tuple[tuple[str, float], ...] = ()
    issues: tuple[FileIssue, ...] = ()
    description: str | None = None
    metahash: str | None = None
    named_by_file: bool | None = None

    def unit(self, unit_type: UnitType) -> Unit | None:
        """The unit of the given type, if it was computed."""
        for unit in self.units:
            if unit.type is unit_type:
                return unit
        return None

    @property
    def failed(self) -> bool:
        """True when any stage ended in an error (skips are not failures)."""
        return any(issue.kind is IssueKind.ERROR for issue in self.issues)


class EventType(enum.StrEnum):
    """Everything the index announces. The value is the wire name."""

    FILE_ADDED = "file.added"
    """A new file was indexed."""
    FILE_CHANGED = "file.changed"
    """An indexed file's content changed and was recomputed."""
    FILE_MOVED = "file.moved"
    """An indexed file was renamed or moved; its codes were kept."""
    FILE_REMOVED = "file.removed"
    """An indexed file disappeared (it is kept as a tombstone for a while)."""
    DUP_EXACT = "dup.exact"
    """A file has the same bytes as another (equal Instance-Code datahash and size)."""
    DUP_NEAR = "dup.near"
    """A file is within a unit's Hamming threshold of another."""
    DUP_RESOLVED = "dup.resolved"
    """A duplicate relation ended (a file changed or was removed)."""
    FILE_ERROR = "file.error"
    """A file could not be (fully) processed; the reason is in the event."""
    FILE_UNSTABLE = "file.unstable"
    """A file kept changing while it was read and was given up for now."""
    SCAN_PROGRESS = "scan.progress"
    """A reconcile scan is under way."""
    SCAN_DONE = "scan.done"
    """A reconcile scan finished."""
    WATCH_RECRAWL = "watch.recrawl"
    """Events were lost (kernel queue overflow); the root is being reconciled."""
    WATCH_DEGRADED = "watch.degraded"
    """Part of a root cannot be watched: it is polled instead, or cannot be read."""
    WATCH_MATCH = "watch.match"
    """A new or changed file matches a watchlist's reference (exactly, or near by a unit)."""
    DIR_DUP = "dir.dup"
    """A folder became an exact duplicate of other folders (once its files settled)."""
    DIR_RESOLVED = "dir.resolved"
    """A folder stopped being an exact duplicate of the others it was announced with."""
    ROOT_UNAVAILABLE = "root.unavailable"
    """A root is gone (moved away, deleted, its disk unmounted); its index is kept."""
    ROOT_AVAILABLE = "root.available"
    """A root that was unavailable is back, watched and reconciled again."""
    STORE_DEGRADED = "store.degraded"
    """The store cannot be written (disk full, I/O error); not part of the log."""
    STORE_RECOVERED = "store.recovered"
    """The store can be written again; what failed meanwhile is reconciled."""
    SUBSCRIBER_LAGGED = "subscriber.lagged"
    """A subscriber did not keep up and was disconnected; resume from the given seq."""


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of the event log.

    Attributes:
        seq: Position in the log, strictly increasing, never reused.
        type: What happened.
        time: Unix time in seconds when the change was committed.
        root: The watched root the path belongs to (``""`` for daemon-wide events).
        path: The file concerned (``""`` for root- or daemon-wide events).
        data: Further JSON-serializable fields (the other path of a duplicate, the unit,
            distance and threshold, ISCC-CODEs, scan counters, ...).
        host: The host whose file or root the event is about (``""`` for a notice that is
            not part of the log). In a database a fleet shares, another host's daemon may log
            an event about this host's file (the other side of a duplicate it found).
        file_id: The store's id of the file a ``file.*`` event changed, kept by a store that
            other daemons follow (so that they keep their in-memory index current); ``None``
            otherwise. Never sent to clients.
    """

    seq: int
    type: EventType
    time: float
    root: str
    path: str
    data: Mapping[str, Any] = field(default_factory=dict)
    host: str = ""
    file_id: int | None = None
