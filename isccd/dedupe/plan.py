"""The plan of a dedupe run: duplicate groups, the member each keeps, and the steps that follow.

A :class:`Plan` is what the user reviews (a dry run prints it, a plan file stores it) and what
``--apply`` carries out. Each :class:`Member` records what was observed when the plan was made
(device, inode, size, modification time and, for exact duplicates, the content's BLAKE3
digest): immediately before acting on a file, the engine checks that both it and the kept file
are still exactly that (:mod:`isccd.dedupe.verify`).

Pure: frozen dataclasses and functions over them; nothing here touches the disk.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from isccd.fspath import is_under
from isccd.iscc import IsccError, iscc_decode

#: Version of the plan model and of its file format (docs/schema/plan.schema.json).
PLAN_VERSION = 1


class GroupKind(enum.StrEnum):
    """What joins a group."""

    EXACT = "exact"
    """The same bytes (equal Instance-Code and size)."""
    NEAR = "near"
    """Similar content (a unit within its threshold): never linked or removed, only moved."""


class Action(enum.StrEnum):
    """What is done to each member that is not kept."""

    LINK = "link"
    """Replace it by a hard link to the kept file (same file system only)."""
    REFLINK = "reflink"
    """Replace it by a copy sharing the kept file's blocks (``FICLONE``; btrfs, XFS)."""
    REMOVE = "remove"
    """Delete it (exact duplicates only)."""
    MOVE = "move"
    """Move it under a folder, keeping its path (the only action for near duplicates)."""


#: Actions that destroy a name's own bytes: only for exact duplicates.
EXACT_ONLY = frozenset({Action.LINK, Action.REFLINK, Action.REMOVE})


@dataclass(frozen=True, slots=True)
class Member:
    """One file of a group (all its hardlinked names are one member).

    Attributes:
        paths: Its names, absolute; the first is the one shown.
        root: The watched root the names are inside; nothing outside it is touched.
        device: ``st_dev`` when the plan was made.
        inode: ``st_ino`` when the plan was made.
        size: Bytes when the plan was made.
        mtime_ns: Modification time (ns) when the plan was made.
        blake3: Hex BLAKE3 digest of the content, or a prefix of it (at least 64 bits), for
            exact groups; ``None`` when unknown (near groups).
        allocated: Bytes its blocks took on disk when the plan was made (``st_blocks`` times
            512, less than ``size`` for a sparse file): what replacing or removing it frees;
            ``None`` when not known (a plan written without it), and then its size counts.
        nlink: Its number of names when the plan was made (``st_nlink``): more than
            ``paths`` when it has names outside the group, which keep it (and its blocks)
            whatever is done to these.
        code: For near groups, its unit of the group's type (an ISCC unit code): how near it
            is to the kept file is measured by it; ``None`` when unknown.
        centre: It is the near group's centre, the file every other member is near.
    """

    paths: tuple[str, ...]
    root: str
    device: int
    inode: int
    size: int
    mtime_ns: int
    blake3: str | None = None
    allocated: int | None = None
    nlink: int = 1
    code: str | None = None
    centre: bool = False

    @property
    def path(self) -> str:
        """The name shown for the member."""
        return self.paths[0]

    @property
    def identity(self) -> tuple[int, int]:
        """``(device, inode)``: the same file under any of its names."""
        return (self.device, self.inode)

    @property
    def space(self) -> int:
        """The bytes on disk acting on it frees: its blocks, else its size; nothing when
        other names keep it."""
        if self.nlink > len(self.paths):
            return 0
        return self.allocated if self.allocated is not None else self.size


@dataclass(frozen=True, slots=True)
class FolderGuard:
    """The folder a group's file belongs to, when the plan acts on duplicate folders
    (``dedupe --dirs``): the folder is acted on whole or not at all.

    Attributes:
        path: The duplicate folder, whose files are acted on.
        root: The watched root it is inside.
        kept: The folder whose files stay (its exact duplicate).
        listing: What the folder held when the plan was made: a digest of every name below it
            with its type, device, inode, size and modification time
            (:func:`isccd.dedupe.folders.listing`). If it holds anything else when the plan
            is carried out, none of its files is touched.
        entries: How many names that was.
    """

    path: str
    root: str
    kept: str
    listing: str
    entries: int


@dataclass(frozen=True, slots=True)
class Group:
    """Duplicates of one another, and the member that stays.

    Attributes:
        kind: Exact or near.
        members: The files (at least two).
        keep: Index in ``members`` of the one kept.
        threshold: For near groups, the largest distance (in bits of the kept file's unit) at
            which a member is near the kept file, and so may be moved.
        folder: For a duplicate folder's file (``dedupe --dirs``), its folder.
    """

    kind: GroupKind
    members: tuple[Member, ...]
    keep: int
    threshold: int | None = None
    folder: FolderGuard | None = None

    @property
    def kept(self) -> Member:
        """The member that stays."""
        return self.members[self.keep]


@dataclass(frozen=True, slots=True)
class Plan:
    """Duplicate groups with their kept members.

    Attributes:
        groups: The groups, in the order they are acted on.
        version: The plan format's version.
    """

    groups: tuple[Group, ...]
    version: int = PLAN_VERSION


@dataclass(frozen=True, slots=True)
class Step:
    """One name to act on.

    Attributes:
        group: Index of its group in the plan.
        kind: The group's kind (the contents of an exact group are compared first).
        action: What is done.
        path: The name acted on.
        member: The member the name belongs to, as recorded.
        kept: The kept member of the group, as recorded.
        target: For a move, where the name goes.
    """

    group: int
    kind: GroupKind
    action: Action
    path: str
    member: Member
    kept: Member
    target: str | None = None


@dataclass(frozen=True, slots=True)
class Untouched:
    """A member the plan leaves alone, and why (protected by ``--keep-in``, a near member
    without ``--near``, ...).

    Attributes:
        group: Index of its group.
        path: The member's name.
        reason: Why it is left alone.
    """

    group: int
    path: str
    reason: str


def move_target(directory: str, path: str) -> str:
    """Where ``--move DIR`` puts ``path``: its whole absolute path under ``DIR``, so that files
    from different folders never collide and the tree can be read back."""
    return directory.rstrip("/") + "/" + path.lstrip("/")


def steps_of(
    plan: Plan,
    action: Action,
    *,
    near: bool = False,
    move_to: str | None = None,
    protected: tuple[str, ...] = (),
) -> tuple[tuple[Step, ...], tuple[Untouched, ...]]:
    """The steps carrying out ``action`` on ``plan``, and the members left alone.

    Every name of every member but the kept one is a step, unless the member is the kept
    file under another name (a hardlink: nothing to do), lies under a ``protected`` folder
    (``--keep-in``), or belongs to a near group and the action is not a move with ``near``,
    or it is not known to be within the group's threshold of the kept file
    (:func:`near_kept`): the keep rules may keep a member other than the centre, and the
    members near the centre need not be near that one.

    Args:
        plan: The plan.
        action: The action.
        near: Near groups were asked for (``--near``).
        move_to: The folder of ``Action.MOVE``.
        protected: Folders whose files are never touched.

    Raises:
        ValueError: ``action`` is a move without ``move_to``.
    """
    if action is Action.MOVE and move_to is None:
        raise ValueError("a move needs the folder to move to")
    steps: list[Step] = []
    left: list[Untouched] = []
    for index, group in enumerate(plan.groups):
        kept = group.kept
        if group.kind is GroupKind.NEAR and not (near and action is Action.MOVE):
            why = "near duplicates are only ever moved (--near --move DIR)"
            left += [Untouched(index, m.path, why) for m in group.members]
            continue
        for member in group.members:
            if member is kept:
                continue
            if member.identity == kept.identity:
                left.append(Untouched(index, member.path, "already a hardlink of the kept file"))
                continue
            guarded = [p for p in member.paths if any(is_under(p, d) for d in protected)]
            if guarded:
                left.append(Untouched(index, member.path, "in a --keep-in folder"))
                continue
            if group.kind is GroupKind.NEAR and (far := _far(group, member)) is not None:
                left.append(Untouched(index, member.path, far))
                continue
            for path in member.paths:
                target = move_target(move_to, path) if move_to is not None else None
                steps.append(Step(index, group.kind, action, path, member, kept, target))
    return tuple(steps), tuple(left)


def near_kept(group: Group, member: Member) -> int | None:
    """How many bits ``member`` of a near group is from the kept file by their codes (over
    the bits both have), or ``None`` when that cannot be told (a code missing or not an ISCC
    unit of one type)."""
    mine, kept = _body(member.code), _body(group.kept.code)
    if mine is None or kept is None or mine[0] != kept[0]:
        return None
    n = min(len(mine[1]), len(kept[1]))
    return (int.from_bytes(mine[1][:n], "big") ^ int.from_bytes(kept[1][:n], "big")).bit_count()


def _far(group: Group, member: Member) -> str | None:
    """Why a near group's member is not moved, or ``None`` when it is near the kept file."""
    distance = near_kept(group, member)
    if distance is None or group.threshold is None:
        return "not known to be near the file kept (the plan gives no codes to compare)"
    if distance > group.threshold:
        return f"not near the file kept: {distance} bits from it, beyond {group.threshold}"
    return None


def _body(code: str | None) -> tuple[tuple[int, int], bytes] | None:
    """``((maintype, subtype), digest)`` of an ISCC unit code."""
    if code is None:
        return None
    try:
        maintype, subtype, _, _, body = iscc_decode(code)
    except (IsccError, ValueError):
        return None
    return (int(maintype), int(subtype)), body
