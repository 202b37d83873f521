"""How a :class:`~isccd.model.FileRecord` maps to a row of the ``files`` table and back (the
SQLite and the PostgreSQL schema name their columns alike).

Paths are BLOBs of ``os.fsencode(path)`` (byte-exact for names that are not UTF-8); the datahash
is stored as raw multihash bytes; issues as a JSON list. Timings are not stored: they describe
one computation, not the file.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from isccd.model import (
    UNIT_ORDER,
    FileIssue,
    FileRecord,
    FileStat,
    IssueCode,
    IssueKind,
    Mode,
    Unit,
    UnitType,
)
from isccd.store.base import ListedFile, StoredFile, join_path

#: The columns :func:`file_from_row` reads, in its order.
FILE_COLUMNS = (
    "f.id, r.path, d.path, f.name, f.dev, f.ino, f.size, f.mtime_ns, f.ctime_ns, f.nlink, "
    "f.datahash, f.iscc, f.mediatype, f.mode, f.meta_name, f.description, f.metahash, "
    "f.filesize, f.characters, f.width, f.height, f.duration, f.extractor, f.issues, "
    "f.named_by_file, f.blocks, f.indexed_at, f.removed_at"
)
FILE_FROM = "files f JOIN roots r ON r.id = f.root_id JOIN dirs d ON d.id = f.dir_id"

#: An event's data, and a file's issues, as stored: compact ASCII JSON (one encoder for all,
#: not one per value).
event_json = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode


#: What :func:`os.fsencode` and :func:`os.fsdecode` use, read once (they read it per call).
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def to_fs(path: str) -> bytes:
    """A path as the bytes the file system uses (:func:`os.fsencode`)."""
    return path.encode(_FS_ENCODING, _FS_ERRORS)


def from_fs(blob: bytes) -> str:
    """The inverse of :func:`to_fs` (:func:`os.fsdecode`)."""
    return blob.decode(_FS_ENCODING, _FS_ERRORS)


def from_fs_once() -> Callable[[bytes], str]:
    """:func:`from_fs` remembering what it decoded: for the few directories and roots that a
    million rows name again and again."""
    names: dict[bytes, str] = {}

    def name(blob: bytes) -> str:
        found = names.get(blob)
        if found is None:
            found = names[blob] = from_fs(blob)
        return found

    return name


#: The multihash prefix of a datahash: BLAKE3 (``0x1e``), 32 bytes (``0x20``).
DATAHASH_PREFIX = b"\x1e\x20"


def instance_range(digest: bytes) -> tuple[bytes, bytes]:
    """The datahashes (as stored) that begin with an Instance-Code body: ``low <= datahash <
    high``. An Instance-Code is the start of the content's BLAKE3 digest."""
    low = DATAHASH_PREFIX + digest
    # The smallest byte string after every one that begins with ``low``: its last byte below
    # 0xff raised by one, the 0xff bytes after it dropped.
    stem = low.rstrip(b"\xff")
    high = stem[:-1] + bytes([stem[-1] + 1])
    return low, high


#: The stat columns of a record without stat.
_NO_STAT = (None,) * 6


def record_columns(record: FileRecord) -> tuple[Any, ...]:
    """The values of the ``files`` columns from ``dev`` to ``named_by_file``, then
    ``blocks``."""
    # Written out for speed (the store thread builds one per new file): enum values read as
    # ``_value_``, not through the ``value`` property; no unpacking into a fresh tuple.
    st = record.stat
    mode = record.mode
    datahash = record.datahash
    return ((st.dev, st.ino, st.size, st.mtime_ns, st.ctime_ns, st.nlink) if st else _NO_STAT) + (
        bytes.fromhex(datahash) if datahash else None,
        record.iscc,
        record.mediatype,
        mode._value_ if mode else None,
        record.name,
        record.description,
        record.metahash,
        record.filesize,
        record.characters,
        record.width,
        record.height,
        record.duration,
        record.extractor,
        issues_to_json(record.issues),
        record.named_by_file,
        st.blocks if st else None,
    )


#: Modes by their stored value (a dictionary is faster than the enumeration's call).
_MODES = {m.value: m for m in Mode}


def file_from_row(
    row: Sequence[Any],
    units: tuple[Unit, ...],
    host: str,
    name_of: Callable[[bytes], str] = from_fs,
) -> StoredFile:
    """A stored file on ``host`` from a row of :data:`FILE_COLUMNS` and its units
    (``name_of``: how its root and directory are decoded, :func:`from_fs_once` for many
    rows)."""
    (
        file_id, root, directory, name, dev, ino, size, mtime_ns, ctime_ns, nlink,
        datahash, iscc, mediatype, mode, meta_name, description, metahash,
        filesize, characters, width, height, duration, extractor, issues,
        named_by_file, blocks, indexed_at, removed_at,
    ) = row  # fmt: skip
    stat = None
    if dev is not None:
        nlink = nlink if nlink is not None else 1
        stat = FileStat(dev, ino, size, mtime_ns, ctime_ns, nlink, blocks)
    record = FileRecord(
        path=join_path(name_of(directory), from_fs(name)),
        stat=stat,
        mediatype=mediatype,
        mode=_MODES[mode] if mode else None,
        iscc=iscc,
        name=meta_name,
        units=units,
        datahash=bytes(datahash).hex() if datahash is not None else None,
        filesize=filesize,
        characters=characters,
        width=width,
        height=height,
        duration=duration,
        extractor=extractor,
        issues=issues_from_json(issues),
        description=description,
        metahash=metahash,
        named_by_file=None if named_by_file is None else bool(named_by_file),
    )
    return StoredFile(file_id, name_of(root), record, indexed_at, removed_at, host)


#: The columns of :func:`listed_from_row`, from :data:`FILE_FROM`.
LISTED_COLUMNS = (
    "f.id, r.path, d.path, f.name, f.dev, f.ino, f.size, f.filesize, f.blocks, f.iscc, "
    "f.mediatype, f.mode, f.removed_at IS NULL"
)

#: A listed file's unit: ``(type, code, digest)``.
ListedUnit = tuple[UnitType, str, bytes]


def listed_from_row(
    row: Sequence[Any], units: tuple[ListedUnit, ...], host: str, name_of: Callable[[bytes], str]
) -> ListedFile:
    """A listed file on ``host`` from a row of :data:`LISTED_COLUMNS` and its units (as
    :func:`file_from_row` reads a file: the size read, else the validators' while it has
    them; the blocks only with the validators)."""
    (file_id, root, directory, name, dev, ino, size, filesize, blocks, iscc, mediatype, mode,
     live) = row  # fmt: skip
    known = dev is not None
    return ListedFile(
        file_id,
        host,
        name_of(root),
        join_path(name_of(directory), from_fs(name)),
        (dev, ino) if known else None,
        filesize if filesize is not None else size if known else None,
        blocks * 512 if known and blocks is not None else None,
        iscc,
        mediatype,
        _MODES[mode] if mode else None,
        bool(live),
        units,
    )


def in_code_order(units: list[ListedUnit]) -> tuple[ListedUnit, ...]:
    """A file's listed units in ISCC-CODE order (:func:`isccd.model.sort_units`)."""
    if len(units) == 1:
        return (units[0],)
    return tuple(sorted(units, key=lambda u: UNIT_ORDER[u[0]]))


def issues_to_json(issues: Sequence[FileIssue]) -> str | None:
    """Issues as compact JSON (``None`` for none)."""
    if not issues:
        return None
    items = []
    for i in issues:
        item = {"stage": i.stage, "kind": i.kind._value_, "reason": i.reason}
        if i.code:
            item["code"] = i.code._value_
        if i.profile:
            item["profile"] = i.profile
        items.append(item)
    return event_json(items)


@functools.lru_cache(maxsize=1024)
def issues_from_json(text: str | None) -> tuple[FileIssue, ...]:
    """The inverse of :func:`issues_to_json`.

    Cached: the same few texts come back on many files (every file of a type without a
    Content-Code has the same skip), and the issues are frozen, so files can share them.
    """
    if not text:
        return ()
    return tuple(
        FileIssue(
            item["stage"],
            IssueKind(item["kind"]),
            item["reason"],
            IssueCode(item["code"]) if item.get("code") else None,
            item.get("profile"),
        )
        for item in json.loads(text)
    )


#: A ``WHERE`` clause's end that keeps the files whose issues may be actionable (an error or a
#: missing tool: see :attr:`~isccd.model.FileIssue.actionable`), from the JSON's text with the
#: dialect's substring function (``contains``: ``instr`` or ``strpos``). Either word as a JSON
#: string anywhere passes, a reason too: :func:`issues_of` decides, on these rows only.
ACTIONABLE = (
    f"AND ({{contains}}(f.issues, '\"{IssueKind.ERROR.value}\"') > 0 "
    f"OR {{contains}}(f.issues, '\"{IssueCode.TOOL_MISSING.value}\"') > 0) "
)


def issues_of(
    rows: Iterable[tuple[bytes, bytes, str]], *, actionable: bool = False
) -> list[tuple[str, tuple[FileIssue, ...]]]:
    """The path and issues of each row of directory, name and issues; with ``actionable``,
    of the rows with an actionable issue only."""
    found = [(join_path(from_fs(d), from_fs(n)), issues_from_json(i)) for d, n, i in rows]
    if actionable:
        return [(path, issues) for path, issues in found if any(i.actionable for i in issues)]
    return found
