"""The plan of ``dedupe --dirs``: exact duplicate folders (``dupes --dirs``, asked with their
files) turned into groups of two files, each file of a duplicate folder with its copy in the
folder kept, every group carrying its folder's listing
(:class:`isccd.dedupe.plan.FolderGuard`): the engine then acts on each file as on any exact
duplicate (checked, logged, undoable), and leaves a folder whole when it changed since.

The one place that reads the ``dupes --dirs`` answer for dedupe, as
:func:`isccd.cli.dedupe.found_groups` is for files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from isccd.dedupe.build import Excluded, Found, FoundGroup, build_plan, observe
from isccd.dedupe.folders import listing
from isccd.dedupe.plan import FolderGuard, Group, GroupKind, Plan
from isccd.fspath import is_under
from isccd.results import DirMember, DirsResult, DupKind


@dataclass(frozen=True, slots=True)
class FolderPairs:
    """A duplicate folder's files, each with its copy in the folder kept.

    Attributes:
        groups: One exact group of two files for each file of the folder.
        unpaired: Its files with no copy in the folder kept (none, unless the answer was not
            one of exact duplicates).
    """

    groups: tuple[FoundGroup, ...]
    unpaired: tuple[str, ...] = ()


def pairs(folder: DirMember, kept: DirMember) -> FolderPairs:
    """Each file of ``folder`` paired with a file of ``kept`` with the same content (a content
    held several times is paired with its copies in turn)."""
    copies: dict[str, list[str]] = {}
    for file in kept.contents:
        copies.setdefault(file.datahash, []).append(_join(kept.path, file.name))
    taken: dict[str, int] = {}
    groups, unpaired = [], []
    for file in folder.contents:
        found = copies.get(file.datahash)
        if not found or not file.datahash.startswith("1e20"):
            unpaired.append(file.name)
            continue
        turn = taken.get(file.datahash, 0)
        taken[file.datahash] = turn + 1
        blake3 = file.datahash[4:]
        keep = Found((found[turn % len(found)],), kept.root, file.size, blake3)
        mine = Found((_join(folder.path, file.name),), folder.root, file.size, blake3)
        groups.append(FoundGroup(GroupKind.EXACT, (keep, mine)))
    return FolderPairs(tuple(groups), tuple(unpaired))


def _join(folder: str, name: str) -> str:
    return f"{folder.rstrip('/')}/{name}"


def kept_folder(members: Sequence[DirMember], keep_in: Sequence[str], prefix: str | None) -> int:
    """Which folder of an exact group stays: one under a ``--keep-in`` folder, else one under
    ``--keep path=PREFIX``, else the one with the shortest path, then the first by path."""

    def rank(i: int) -> tuple[bool, bool, int, str]:
        path = members[i].path
        protected = any(is_under(path, d) for d in keep_in)
        preferred = prefix is not None and is_under(path, prefix)
        return (not protected, not preferred, len(path), path)

    return min(range(len(members)), key=rank)


@dataclass(frozen=True, slots=True)
class FolderPlan:
    """The plan of ``dedupe --dirs``, and what was left out of it.

    Attributes:
        plan: The groups: each file of each duplicate folder with its copy kept.
        excluded: Files left out (gone, changed since indexed, ...), and whole folders left
            out with the reason (one of another group's, unreadable, of another host).
        folders: The duplicate folders acted on, each with the folder kept.
    """

    plan: Plan
    excluded: tuple[Excluded, ...]
    folders: tuple[tuple[str, str], ...]


def folder_plan(
    result: DirsResult,
    roots: Collection[str],
    *,
    host: str = "",
    keep_in: Sequence[str] = (),
    prefix: str | None = None,
) -> FolderPlan:
    """The plan acting on the exact duplicate folders of ``result`` (asked with ``files``).

    A folder is in one group at most: a group whose folder is at, above or below a folder of
    an earlier group (the most reclaimable first) leaves that folder out. Each folder that is
    acted on is read now (its listing, recorded in the plan).
    """
    groups: list[Group] = []
    excluded: list[Excluded] = []
    folders: list[tuple[str, str]] = []
    claimed: list[str] = []
    for found in result.groups:
        if found.kind is not DupKind.EXACT:
            continue
        members = []
        for member in found.members:
            if member.host not in ("", host):
                continue
            if any(is_under(member.path, c) or is_under(c, member.path) for c in claimed):
                excluded.append(Excluded(member.path, "its files are in another folder group"))
                continue
            members.append(member)
        if len(members) < 2:
            continue
        kept = members[kept_folder(members, keep_in, prefix)]
        claimed += [m.path for m in members]
        try:
            kept_folders = listing(kept.root, kept.path).folders
        except OSError as exc:
            excluded.append(Excluded(kept.path, f"cannot be read: {exc.strerror}"))
            continue
        for member in members:
            if member is kept:
                continue
            paired = pairs(member, kept)
            if paired.unpaired:
                why = f"{len(paired.unpaired)} of its files have no copy in {kept.path}"
                excluded.append(Excluded(member.path, why))
                continue
            try:
                listed = listing(member.root, member.path)
            except OSError as exc:
                excluded.append(Excluded(member.path, f"cannot be read: {exc.strerror}"))
                continue
            if listed.folders & kept_folders:
                why = f"holds a folder of {kept.path} (a bind mount): its files are those kept"
                excluded.append(Excluded(member.path, why))
                continue
            guard = FolderGuard(member.path, member.root, kept.path, listed.digest, listed.entries)
            seen = observe(paired.groups, roots)
            excluded += seen.excluded
            plan = build_plan(seen.groups, (), (kept.path,))
            groups += [dataclasses.replace(g, folder=guard) for g in plan.groups]
            folders.append((member.path, kept.path))
    return FolderPlan(Plan(tuple(groups)), tuple(excluded), tuple(folders))
