"""One file, as the index knows it (``get``), and the files related to one (``similar``, the
duplicates ``get`` lists, and the other files a duplicate event names)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from isccd.model import FileIssue, Mode, RelationKind, Unit, UnitType, sort_units


def units_of(units: Iterable[Unit]) -> dict[UnitType, str]:
    """A file's units as a map from unit type to code, in ISCC-CODE order."""
    return {u.type: u.iscc for u in sort_units(units)}


def file_type(mode: Mode | None) -> str:
    """The type ``dupes --type`` filters by: the content mode (``text``, ``image``, ``audio``,
    ``video``), or ``data`` for a file without a Content-Code."""
    return mode.value if mode is not None else "data"


@dataclass(frozen=True, slots=True)
class Match:
    """A file related to another one: found by ``similar``, listed by ``get`` among a file's
    duplicates, or named by a duplicate event among its ``others``.

    Attributes:
        path: The file (the first of its names).
        root: The root it belongs to.
        relation: Hardlink (the same file under another name), exact (the same bytes) or near.
        unit: The unit type compared (``instance`` for hardlinks and exact duplicates).
        distance: Hamming distance between the two files' units of that type (0 for hardlinks
            and exact duplicates).
        threshold: The largest distance accepted for that unit type and length (0 for
            hardlinks and exact duplicates).
        iscc: The file's ISCC-CODE.
        code: The file's unit of type ``unit``.
        size: Its size in bytes.
        links: Its other names (hardlinks): one file, one match.
        host: The host it is on.
    """

    path: str
    root: str
    relation: RelationKind
    unit: UnitType
    distance: int
    threshold: int
    iscc: str | None
    code: str | None
    size: int | None
    links: tuple[str, ...] = ()
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
        mode: Content processing mode (``None``: no Content-Code for its type).
        iscc: The ISCC-CODE.
        datahash: ``"1e20"`` + BLAKE3 hex of the bytes.
        name: The name the Meta-Code was made from.
        units: Every unit computed, by type, in ISCC-CODE order.
        profiles: What made each unit (ISCC version, bit length, extractor and tool versions),
            by type.
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
    units: Mapping[UnitType, str] = field(default_factory=dict)
    profiles: Mapping[UnitType, str] = field(default_factory=dict)
    issues: tuple[FileIssue, ...] = ()
    indexed: float | None = None
    removed: float | None = None
    links: tuple[str, ...] = ()
    duplicates: tuple[Match, ...] = ()
    host: str = ""


@dataclass(frozen=True, slots=True)
class SimilarResult:
    """``similar``: one match per related file (its hardlinks in ``links``), nearest first;
    ``truncated`` when ``limit`` cut the list."""

    matches: tuple[Match, ...]
    truncated: bool = False
