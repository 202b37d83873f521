"""The compact form in which a worker sends a :class:`~isccd.model.FileRecord` to the daemon.

A record pickled as itself costs about 30 µs each way (every frozen dataclass is rebuilt
through ``__setstate__``, field by field); as a tuple of plain values it costs a few, which
matters when small files are hashed by the thousand per second. :func:`unpack` inverts
:func:`pack` exactly.
"""

from __future__ import annotations

from typing import Any

from isccd.model import FileIssue, FileRecord, FileStat, IssueCode, IssueKind, Mode, Unit, UnitType

#: A record as plain values (see :func:`pack`).
Packed = tuple[Any, ...]

# Members by value: a dictionary lookup, several times faster than calling the enum.
_MODES = {m.value: m for m in Mode}
_UNIT_TYPES = {t.value: t for t in UnitType}
_KINDS = {k.value: k for k in IssueKind}
_CODES = {c.value: c for c in IssueCode}


def pack(record: FileRecord) -> Packed:
    """``record`` as a tuple of plain values (strings, numbers, bytes, tuples, None)."""
    # An enum member's ``_value_``, not ``.value``: a property, five times slower. Lists made
    # into tuples: for a few items, faster than a generator.
    stat = record.stat
    return (
        record.path,
        None
        if stat is None
        else (stat.dev, stat.ino, stat.size, stat.mtime_ns, stat.ctime_ns, stat.nlink, stat.blocks),
        record.mediatype,
        None if record.mode is None else record.mode._value_,
        record.iscc,
        record.name,
        tuple([(u.type._value_, u.iscc, u.digest, u.profile) for u in record.units]),
        record.datahash,
        record.filesize,
        record.characters,
        record.width,
        record.height,
        record.duration,
        record.extractor,
        record.timings,
        tuple(
            [
                (
                    i.stage,
                    i.kind._value_,
                    i.reason,
                    None if i.code is None else i.code._value_,
                    i.profile,
                )
                for i in record.issues
            ]
        ),
        record.description,
        record.metahash,
        record.named_by_file,
    )


def unpack(packed: Packed) -> FileRecord:
    """The record :func:`pack` made ``packed`` of."""
    (
        path, stat, mediatype, mode, iscc, name, units, datahash, filesize, characters, width,
        height, duration, extractor, timings, issues, description, metahash, named_by_file,
    ) = packed  # fmt: skip
    # Positional arguments in the order of FileRecord's fields, and lists made into tuples:
    # keywords and generators cost a microsecond more per record, in the daemon's process.
    return FileRecord(
        path,
        None if stat is None else FileStat(*stat),
        mediatype,
        None if mode is None else _MODES[mode],
        iscc,
        name,
        tuple([Unit(_UNIT_TYPES[t], code, digest, pr) for t, code, digest, pr in units]),
        datahash,
        filesize,
        characters,
        width,
        height,
        duration,
        extractor,
        timings,
        tuple(
            [
                FileIssue(stage, _KINDS[kind], reason, None if code is None else _CODES[code], pr)
                for stage, kind, reason, code, pr in issues
            ]
        ),
        description,
        metahash,
        named_by_file,
    )
