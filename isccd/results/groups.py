"""Duplicate groups (``dupes``): files with the same bytes, or joined by near relations."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

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
        size: Bytes it holds (its apparent size, as ``ls -l`` shows it).
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
        allocated: Bytes it takes on disk (its 512-byte blocks, as ``du`` counts them): less
            than ``size`` for a sparse file, what removing it frees; ``None`` when not known
            (a file indexed before isccd kept it, until it is indexed again).
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
    allocated: int | None = None

    @property
    def space(self) -> int:
        """The bytes removing it frees (:attr:`Footprint.space`)."""
        return self.allocated if self.allocated is not None else self.size or 0

    @property
    def names(self) -> tuple[str, ...]:
        """Its names, each qualified by its host (:attr:`Footprint.names`)."""
        host = self.host
        if not self.links:  # most files: one name
            return (f"{host}:{self.path}",)
        return tuple(f"{host}:{p}" for p in (self.path, *self.links))

    @property
    def footprint(self) -> Footprint:
        """The file as the totals count it."""
        return Footprint(self.names, self.size, self.allocated)


@dataclass(frozen=True, slots=True)
class Footprint:
    """A file as the totals count it: its names, and the space it takes.

    Attributes:
        names: Its names, each unique to it (qualified by the host in a fleet): two groups'
            members sharing a name are one file.
        size: Bytes it holds (``None``: not known, counted as 0).
        allocated: Bytes it takes on disk (``None``: not known, counted as its ``size``).
    """

    names: tuple[str, ...]
    size: int | None
    allocated: int | None = None

    @property
    def space(self) -> int:
        """The bytes removing it frees: allocated, else its size."""
        return self.allocated if self.allocated is not None else self.size or 0


@dataclass(frozen=True, slots=True)
class DupGroup:
    """A group of duplicates.

    Attributes:
        kind: Exact or near.
        unit: The unit type the group is compared by (``instance`` for exact groups; for near
            groups the type by which every member is near the centre).
        threshold: The Hamming-distance threshold of that unit type, scaled to the centre's
            unit length (0 for exact groups).
        reclaimable: Bytes on disk that keeping only the largest member (the first of the
            largest) would free: the allocated bytes of the others (their size where that is
            not known), so a sparse file frees only the blocks it holds.
        members: The files: exact groups largest first; near groups their centre first, then
            the others nearest to it first (ties: the larger first).
        reclaimable_size: The apparent size of those other members (what ``reclaimable`` was
            before isccd counted blocks): more than ``reclaimable`` when some are sparse.
        centre: The index in ``members`` of a near group's centre (always 0: the first);
            ``None`` for exact groups.
    """

    kind: DupKind
    unit: UnitType
    threshold: int
    reclaimable: int
    members: tuple[DupMember, ...]
    reclaimable_size: int = 0
    centre: int | None = None

    @classmethod
    def of(
        cls,
        kind: DupKind,
        unit: UnitType,
        threshold: int,
        members: tuple[DupMember, ...],
        centre: int | None = None,
    ) -> DupGroup:
        """A group of ``members``, with what keeping the largest frees (the first of the
        largest on a tie: in an exact group the first, in a near group the centre when it is
        among the largest), the rule :class:`Totals` keeps by."""
        space, size = _freed(members)
        return cls(kind, unit, threshold, space, members, size, centre)


@dataclass(frozen=True, slots=True)
class Totals:
    """What a list of groups adds up to, each file counted once.

    A file may be in more than one group (exact copies are near duplicates of each other
    too, so with near groups they are in their exact group and in a near group): groups that
    share a file are taken together, and keeping the largest file of each such set frees the
    space of the others. For groups that share no file (exact groups alone), that is the sum
    of the groups' ``reclaimable``.

    Attributes:
        groups: Groups.
        files: Distinct files in them (a file with hardlinks, or in two groups, counts once).
        reclaimable: Bytes on disk freed by keeping one file of each set of groups that share
            files: the allocated bytes of the others (their size where that is not known).
        reclaimable_size: The apparent size of those files.
    """

    groups: int = 0
    files: int = 0
    reclaimable: int = 0
    reclaimable_size: int = 0

    @classmethod
    def of(cls, groups: Sequence[DupGroup]) -> Totals:
        """The totals of ``groups``: :meth:`over` their members' footprints, each group that
        shares no file with another counted by its own ``reclaimable`` (the same rule)."""
        return cls._counted(
            [[m.names for m in g.members] for g in groups],
            lambda g: (groups[g].reclaimable, groups[g].reclaimable_size),
            lambda g: [m.footprint for m in groups[g].members],
        )

    @classmethod
    def over(cls, groups: Sequence[Sequence[Footprint]]) -> Totals:
        """The totals of groups of files (see the class docstring): the one count of the
        command line, the protocol and the report."""
        return cls._counted(
            [[member.names for member in group] for group in groups],
            lambda g: _freed(groups[g]),
            lambda g: groups[g],
        )

    @classmethod
    def _counted(
        cls,
        names: Sequence[Sequence[tuple[str, ...]]],
        alone: Callable[[int], tuple[int, int]],
        footprints: Callable[[int], Sequence[Footprint]],
    ) -> Totals:
        """The totals, given each group's members' names: a group whose names appear nowhere
        else (most groups) adds up as it is (``alone``: what it frees, on disk and by size);
        only the others are taken together, from their members' ``footprints``."""
        tied = _tied(names)
        files = reclaimable = reclaimable_size = 0
        for g, group in enumerate(names):
            if g not in tied:
                space, size = alone(g)
                files += len(group)
                reclaimable += space
                reclaimable_size += size
        if tied:
            shared = cls._together([footprints(g) for g in sorted(tied)])
            files += shared.files
            reclaimable += shared.reclaimable
            reclaimable_size += shared.reclaimable_size
        return cls(len(names), files, reclaimable, reclaimable_size)

    @classmethod
    def _together(cls, groups: Sequence[Sequence[Footprint]]) -> Totals:
        """:meth:`over` for groups that share files, each file counted once."""
        same_file = _Joined()  # names of one file
        for group in groups:
            for member in group:
                for name in member.names[1:]:
                    same_file.join(member.names[0], name)
        files: dict[str, Footprint] = {}  # each file once, by its joined name, in group order
        sharing = _Joined()  # files in groups that share a file
        for group in groups:
            ids = [same_file.find(member.names[0]) for member in group]
            for file_id, member in zip(ids, group, strict=True):
                files.setdefault(file_id, member)
                sharing.join(ids[0], file_id)
        sets: dict[str, list[Footprint]] = {}
        for file_id, footprint in files.items():
            sets.setdefault(sharing.find(file_id), []).append(footprint)
        reclaimable = reclaimable_size = 0
        for members in sets.values():
            space, size = _freed(members)
            reclaimable += space
            reclaimable_size += size
        return cls(len(groups), len(files), reclaimable, reclaimable_size)


def _tied(groups: Sequence[Sequence[tuple[str, ...]]]) -> set[int]:
    """The groups (by index) that share a file with another: given each member's names."""
    owner: dict[str, tuple[int, int]] = {}  # name -> (group, member) it was first seen in
    tied: set[int] = set()
    for g, group in enumerate(groups):
        for m, names in enumerate(group):
            for name in names:
                first = owner.setdefault(name, (g, m))
                if first != (g, m):
                    tied.update((first[0], g))
    return tied


class _Space(Protocol):
    """What :func:`_freed` reads of a file: a :class:`Footprint`, or a member."""

    @property
    def size(self) -> int | None: ...

    @property
    def allocated(self) -> int | None: ...


def _freed(files: Sequence[_Space]) -> tuple[int, int]:
    """What keeping one of ``files`` frees, on disk and in apparent size: the one kept is the
    largest, the first in ``files`` on a tie (an exact group's first, a near group's centre
    when it is among the largest). A file's space on disk is its allocated bytes, else its
    size (:attr:`Footprint.space`)."""
    if not files:
        return 0, 0
    largest, kept = files[0].size or 0, files[0].allocated
    space = size = 0
    for f in files:
        mine, blocks = f.size or 0, f.allocated
        space += blocks if blocks is not None else mine
        size += mine
        if mine > largest:
            largest, kept = mine, blocks
    return space - (kept if kept is not None else largest), size - largest


class _Joined:
    """Sets of names that were joined (union-find)."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        """The name that stands for the set of ``name``."""
        parent = self._parent
        parent.setdefault(name, name)
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    def join(self, a: str, b: str) -> None:
        """Make the sets of ``a`` and ``b`` one."""
        self._parent[self.find(b)] = self.find(a)


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
