"""Duplicate groups (``dupes``): files with the same bytes, or joined by near relations."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from isccd.model import Mode, UnitType


class DupKind(enum.StrEnum):
    """What makes a duplicate group."""

    EXACT = "exact"
    """The same bytes: equal Instance-Code datahash and size."""
    NEAR = "near"
    """Units of one type within that type's Hamming-distance threshold."""


@dataclass(frozen=True, slots=True)
class DupMember:
    """One file of a duplicate group (its hardlinks are the same member).

    Attributes:
        path: The file (the first of its names).
        root: Its root.
        size: Bytes.
        iscc: Its ISCC-CODE.
        unit: The group's unit type (``instance`` in exact groups).
        code: Its unit of that type (in exact groups its Instance-Code, a prefix of the
            content's BLAKE3).
        distance: Hamming distance of that unit to the group's centre (0 for the centre, and
            in exact groups).
        threshold: The largest distance accepted for that unit type and the length compared
            (0 in exact groups).
        nearest: The index in ``members`` of the member ``distance`` is measured to: the
            centre (``None`` for the centre itself, and in exact groups, whose members are all
            0 apart).
        mediatype: Its detected media type.
        mode: Its content mode (``None``: no Content-Code for its type).
        links: The file's other names (hardlinks).
        host: The host the file is on.
    """

    path: str
    root: str
    size: int | None
    iscc: str | None
    unit: UnitType
    code: str | None
    distance: int
    threshold: int
    nearest: int | None = None
    mediatype: str | None = None
    mode: Mode | None = None
    links: tuple[str, ...] = ()
    host: str = ""


@dataclass(frozen=True, slots=True)
class DupGroup:
    """A group of duplicates.

    Attributes:
        kind: Exact or near.
        unit: The unit type the group is compared by (``instance`` for exact groups; for near
            groups the type by which every member is near the centre).
        threshold: The Hamming-distance threshold of that unit type, scaled to the centre's
            unit length (0 for exact groups).
        reclaimable: Bytes that keeping only one member would free (exact: the size times the
            extra copies; near: all members but the largest).
        members: The files: exact groups largest first; near groups their centre first, then
            the others nearest to it first (ties: the larger first).
        centre: The index in ``members`` of a near group's centre (always 0: the first);
            ``None`` for exact groups.
    """

    kind: DupKind
    unit: UnitType
    threshold: int
    reclaimable: int
    members: tuple[DupMember, ...]
    centre: int | None = None


@dataclass(frozen=True, slots=True)
class Totals:
    """What a list of groups adds up to.

    Attributes:
        groups: Groups.
        files: Members (a file with hardlinks counts once).
        reclaimable: Bytes freed by keeping one member of each group.
    """

    groups: int = 0
    files: int = 0
    reclaimable: int = 0

    @classmethod
    def of(cls, groups: tuple[DupGroup, ...] | list[DupGroup]) -> Totals:
        """The totals of ``groups``."""
        return cls(
            len(groups), sum(len(g.members) for g in groups), sum(g.reclaimable for g in groups)
        )


@dataclass(frozen=True, slots=True)
class DupesResult:
    """``dupes``: groups, the most reclaimable bytes first.

    Attributes:
        groups: The groups, at most the query's ``limit``.
        truncated: ``limit`` cut the list.
        totals: Every group the query matched, the ones cut by ``limit`` included.
    """

    groups: tuple[DupGroup, ...]
    truncated: bool = False
    totals: Totals = Totals()
