"""The report's view of the duplicates: groups and members as the page shows them.

The view is made from the ``dupes`` answer by :func:`isccd.report.adapt.view_of_dupes`, and
the duplicate folders from the ``dirs`` answer by :func:`isccd.report.adapt.view_of_dirs`, the
functions that know those answers' shapes; everything else in the report reads only these
frozen dataclasses. What the files are now on disk (times, identity, a preview) is looked up
when the report is made and kept apart, in :class:`FileFacts`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from isccd.results import Footprint, Totals


class PreviewKind(enum.StrEnum):
    """What stands for a file on the page."""

    IMAGE = "image"
    """A small WebP picture: of the image itself, or a frame of a video."""
    TEXT = "text"
    """The first lines of a text or document."""
    ICON = "icon"
    """An icon of the file's type: no picture or text could be made (or none is made for
    the type, e.g. audio)."""


@dataclass(frozen=True, slots=True)
class MemberView:
    """One file of a group (its hardlinks are the same member).

    Attributes:
        path: The file (the first of its names).
        links: Its other names (hardlinks).
        root: The watched root it is in.
        size: Bytes, as indexed (its apparent size).
        unit: The group's unit type (``instance`` in exact groups).
        distance: Hamming distance of that unit to the group's centre (0 for the centre, and
            in exact groups); ``None`` when not known.
        instance: Its Instance-Code, in exact groups (the content's BLAKE3 prefix a plan
            carries); ``None`` otherwise.
        host: The host it is on, when that is another host of a fleet sharing the index
            (it is never looked at here, and no plan names it); ``""`` for this host's.
        allocated: Bytes it takes on disk, as indexed (``None``: not known).
        centre: It is its near group's centre, the file every other member is near.
        code: Its unit of the group's type, in near groups (a plan measures how near a
            member is to the file kept by it); ``None`` otherwise.
    """

    path: str
    links: tuple[str, ...]
    root: str
    size: int | None
    unit: str
    distance: int | None
    instance: str | None = None
    host: str = ""
    allocated: int | None = None
    centre: bool = False
    code: str | None = None

    @property
    def footprint(self) -> Footprint:
        """The file as the totals count it (:class:`~isccd.results.Totals`)."""
        where = f"{self.host}:"
        names = tuple(where + p for p in (self.path, *self.links))
        return Footprint(names, self.size, self.allocated)


@dataclass(frozen=True, slots=True)
class GroupView:
    """A duplicate group.

    Attributes:
        kind: ``"exact"`` (the same bytes) or ``"near"`` (similar content).
        unit: The unit type the group is compared by (``instance`` for exact groups).
        threshold: The largest distance that unit type accepts (0 for exact groups).
        reclaimable: Bytes on disk that keeping only the largest member would free
            (allocated bytes, less than the sizes for sparse files).
        members: The files: exact groups largest first; near groups their centre first, then
            the others nearest to it first.
    """

    kind: str
    unit: str
    threshold: int
    reclaimable: int
    members: tuple[MemberView, ...]


@dataclass(frozen=True, slots=True)
class FolderView:
    """One folder of a group of duplicate folders.

    Attributes:
        path: The folder.
        root: The watched root it is in.
        files: Its files with content, at any depth below it.
        size: Their bytes.
        host: The host it is on, when that is another host of a fleet sharing the index;
            ``""`` for this host's.
        centre: It is its near group's centre.
        share: The share of its and the centre's files that have a duplicate in the other
            (1 for the centre, and in exact groups).
        unmatched: Its files (relative to it) with no duplicate in the centre, the first of
            them.
        unmatched_count: How many there are in all.
        missing: The centre's files (relative to the centre) with no duplicate in it, the
            first of them.
        missing_count: How many there are in all.
    """

    path: str
    root: str
    files: int
    size: int
    host: str = ""
    centre: bool = False
    share: float = 1.0
    unmatched: tuple[str, ...] = ()
    unmatched_count: int = 0
    missing: tuple[str, ...] = ()
    missing_count: int = 0


@dataclass(frozen=True, slots=True)
class FolderGroupView:
    """Duplicate folders.

    Attributes:
        kind: ``"exact"`` (the same contents) or ``"near"`` (a share of them).
        reclaimable: Bytes keeping only the first folder of an exact group frees (0 in near
            groups).
        members: The folders: the centre first in a near group.
    """

    kind: str
    reclaimable: int
    members: tuple[FolderView, ...]


@dataclass(frozen=True, slots=True)
class FoldersView:
    """The duplicate folders of a report, as ``dupes --dirs`` lists them.

    Attributes:
        groups: Exact groups, then near ones.
        truncated: The answer was cut at the group limit.
        folders: Folders in every group matched (those cut too).
        reclaimable: What every exact group matched frees.
        error: Why the folders could not be listed (e.g. a daemon that does not know the
            request); ``""`` when they were.
    """

    groups: tuple[FolderGroupView, ...] = ()
    truncated: bool = False
    folders: int = 0
    reclaimable: int = 0
    error: str = ""


@dataclass(frozen=True, slots=True)
class ReportView:
    """The groups of a report, the most reclaimable bytes first.

    Attributes:
        groups: Exact and near groups.
        truncated: The answer was cut at the group limit.
        folders: The duplicate folders.
    """

    groups: tuple[GroupView, ...]
    truncated: bool = False
    folders: FoldersView = FoldersView()

    def totals(self) -> Totals:
        """Groups, files and reclaimable bytes of the whole report, as ``dupes`` counts them
        (each file once, however many groups it is in)."""
        return Totals.over([[m.footprint for m in g.members] for g in self.groups])


@dataclass(frozen=True, slots=True)
class Preview:
    """What stands for a file's content on the page.

    Attributes:
        kind: A picture, lines of text, or an icon.
        mediatype: The media type sniffed from the file (``""`` when it could not be read).
        data: The WebP picture for :attr:`PreviewKind.IMAGE`, the UTF-8 text for
            :attr:`PreviewKind.TEXT`, empty for an icon.
        note: Why there is only an icon, when something failed (shown on the page).
    """

    kind: PreviewKind
    mediatype: str = ""
    data: bytes = b""
    note: str = ""


@dataclass(frozen=True, slots=True)
class FileStat:
    """A file's identity and version, from ``lstat`` (what a plan records of it).

    Attributes:
        device: ``st_dev``.
        inode: ``st_ino``.
        size: Bytes.
        mtime_ns: Modification time in nanoseconds.
        allocated: Bytes its blocks take on disk (``None``: not known).
    """

    device: int
    inode: int
    size: int
    mtime_ns: int
    allocated: int | None = None


@dataclass(frozen=True, slots=True)
class FileFacts:
    """A member's file as it is on disk when the report is made.

    Attributes:
        stat: Its identity and version; ``None`` when it is gone or cannot be looked at (then
            the preview's note says why, and no plan can name it).
        preview: What stands for its content.
    """

    stat: FileStat | None
    preview: Preview
