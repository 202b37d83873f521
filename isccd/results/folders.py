"""Duplicate folders (``dupes --dirs``): folders whose files duplicate another folder's.

An **exact** group is folders holding the same file contents (the same multiset of contents,
at any depth below them, whatever their names and layout), as ``rmlint -D`` means it. A
**near** group is a centre folder and the folders most of whose files, and most of the
centre's, have an exact or near duplicate in the other one. A folder is shown at the highest
level that qualifies: the subfolders of two duplicate folders are not listed again.
"""

from __future__ import annotations

from dataclasses import dataclass

from isccd.results.groups import DupKind


@dataclass(frozen=True, slots=True)
class DirFile:
    """A file of an exact group's folder, as ``dedupe --dirs`` pairs them (asked for with
    :attr:`~isccd.results.DirsQuery.files`).

    Attributes:
        name: Its path relative to the folder.
        size: Its size in bytes.
        datahash: Its Instance datahash (hex).
    """

    name: str
    size: int
    datahash: str


@dataclass(frozen=True, slots=True)
class DirMember:
    """One folder of a group.

    Attributes:
        path: The folder.
        root: The root it is in.
        host: The host it is on.
        files: Its files with content, at any depth (empty files are not counted).
        size: Their bytes.
        share: The share of this folder's and the centre's files that have a duplicate in the
            other one (1 for the centre, and in exact groups).
        unmatched: This folder's files (paths relative to it) with no duplicate in the centre,
            at most :data:`DIRS_NAMES_SHOWN` of them.
        unmatched_count: How many there are in all.
        missing: The centre's files (relative to the centre) with no duplicate in this folder,
            at most :data:`DIRS_NAMES_SHOWN`.
        missing_count: How many there are in all.
        contents: In an exact group asked with ``files``: every file below the folder, by
            name; else empty.
    """

    path: str
    root: str
    host: str
    files: int
    size: int
    share: float = 1.0
    unmatched: tuple[str, ...] = ()
    unmatched_count: int = 0
    missing: tuple[str, ...] = ()
    missing_count: int = 0
    contents: tuple[DirFile, ...] = ()


#: Most names of unmatched (or missing) files listed for a member of a near group.
DIRS_NAMES_SHOWN = 20


@dataclass(frozen=True, slots=True)
class DirGroup:
    """Duplicate folders.

    Attributes:
        kind: Exact (the same contents) or near (a share of them).
        members: The folders; the first is the centre of a near group, and in an exact group
            the first by host and path.
        reclaimable: Bytes that keeping only the first folder would free in an exact group:
            the sizes of the other folders' files, each file (a host and inode) once and none
            that is a hardlink of a file kept; 0 in near groups, which are only moved.
    """

    kind: DupKind
    members: tuple[DirMember, ...]
    reclaimable: int = 0


@dataclass(frozen=True, slots=True)
class DirsResult:
    """``dupes --dirs``: exact groups then near ones, each the most reclaimable (then the
    largest) first.

    Attributes:
        groups: The groups, at most the query's ``limit``.
        truncated: ``limit`` cut the list.
        folders: Folders in every group the query matched (those cut by ``limit`` too).
        reclaimable: What every exact group the query matched frees.
    """

    groups: tuple[DirGroup, ...]
    truncated: bool = False
    folders: int = 0
    reclaimable: int = 0
