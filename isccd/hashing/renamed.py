"""A file's record under another name (a rename, a hardlink), without reading the file.

Every unit comes from the file's bytes except the Meta-Code, whose name is the file's embedded
title or, when it has none (or embedded metadata is not read), its file name. So under a new
name the units are kept, and a Meta-Code made from the file name is made again from the new one
and the stored description, the ISCC-CODE composed again: what :func:`compute_record` gives for
the file at its new path.

Two records cannot be renamed from what they hold: one stored before isccd kept where the name
came from, whose name may be its file name; and one whose Meta-Code was made from ISCC metadata
embedded in the file (not kept: only its hash is). Their Meta unit is kept but marked outdated,
so that the next reconcile of their directory computes it from the file, alone. A file renamed
to a name that leaves nothing to code (``___.txt``) loses its Meta-Code, as when it is coded;
renamed once more, it gets one again only when it is next read (its content changes, or the
Meta-Code's profile does).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import PurePath

from isccd.errors import NoContentError
from isccd.extract.meta import name_from_filename
from isccd.hashing.content import NO_NAME, make_unit
from isccd.hashing.issues import issue_from_exception
from isccd.hashing.options import EXTRACTION_REVISION
from isccd.hashing.record import compose_iscc
from isccd.iscc import gen_meta_code_v0
from isccd.iscc.meta import meta_name
from isccd.model import FileRecord, Unit, UnitType, sort_units

#: The extraction revision an outdated Meta unit is marked with: no current revision is it.
_OUTDATED = EXTRACTION_REVISION.partition("/")[0] + "/renamed"


def renamed_record(record: FileRecord, path: str, wide: bool) -> FileRecord:
    """The record of the same bytes at ``path`` (see the module docstring).

    Args:
        record: The record at its old path.
        path: The new path.
        wide: Whether ISCC-CODEs are composed WIDE (as the hashing options say).

    Returns:
        The record at ``path``, its Meta-Code and ISCC-CODE following the new name when they
        come from the file name.
    """
    moved = replace(record, path=path)
    meta = record.unit(UnitType.META)
    if meta is None or not _follows_name(record, path):
        return moved
    if not record.named_by_file or not _made_from_fields(record):
        return _outdated(moved, meta)
    others = [u for u in record.units if u.type is not UnitType.META]
    name = name_from_filename(path)
    if not meta_name(name):
        # What compute_record records for a file named so: no Meta-Code.
        issue = issue_from_exception(UnitType.META.value, NoContentError(NO_NAME))
        return replace(
            moved,
            units=tuple(others),
            iscc=compose_iscc(others, wide),
            name=None,
            description=None,
            metahash=None,
            named_by_file=None,
            issues=(*record.issues, issue),
        )
    made = gen_meta_code_v0(name, record.description, None, bits=meta.bits)
    units = sort_units([make_unit(UnitType.META, made["iscc"], meta.profile), *others])
    return replace(
        moved,
        units=units,
        iscc=compose_iscc(units, wide),
        name=made["name"],
        description=made.get("description"),
        metahash=made["metahash"],
    )


def _follows_name(record: FileRecord, path: str) -> bool:
    """Whether the Meta-Code may change when the file is named ``path``: its name is, or may
    be, the file name (a record stored before isccd kept where the name came from may have an
    embedded title only if it differs from the file name), and the name changes."""
    if record.named_by_file is False or PurePath(path).name == PurePath(record.path).name:
        return False
    return bool(record.named_by_file) or record.name == meta_name(name_from_filename(record.path))


def _made_from_fields(record: FileRecord) -> bool:
    """Whether the stored name and description are all the Meta-Code was made from (its
    metahash is theirs, not that of embedded ISCC metadata)."""
    if not record.name or not record.metahash:
        return False
    made = gen_meta_code_v0(record.name, record.description)
    return made["metahash"] == record.metahash


def _outdated(record: FileRecord, meta: Unit) -> FileRecord:
    """``record`` with its Meta unit's profile naming an extraction revision that is never
    current, so that the next reconcile computes the unit again."""
    name = _OUTDATED.partition("/")[0]
    parts = [p for p in meta.profile.split() if p.partition("/")[0] != name]
    unit = replace(meta, profile=" ".join([*parts, _OUTDATED]))
    return replace(record, units=sort_units([unit, *(u for u in record.units if u is not meta)]))
