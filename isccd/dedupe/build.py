"""Making a plan from the duplicate groups the index reports.

The index says which files are duplicates; the plan must also say what each file is right
now, so that the actions can check nothing changed in between. :func:`observe` looks at every
name once, reached beneath its root (:class:`isccd.beneath.RootDir`: no symbolic link on the
way followed, the last component not either), and only when its root is one of this host's
and the name is inside it: what the index says of a file's root is only what a row says, and a
fleet's shared database can be written by any host. It regroups the names by the file they are
(device and inode): names that became hardlinks of each other since they were indexed are one
member, and files that are gone, are no longer regular files, or no longer have the size the
index knows are left out, with the reason. :func:`build_plan` then chooses the member each
group keeps (pure).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from isccd.beneath import RootDir
from isccd.dedupe.keep import KeepRule, choose_keep
from isccd.dedupe.plan import Group, GroupKind, Member, Plan
from isccd.fspath import is_below


@dataclass(frozen=True, slots=True)
class Found:
    """One file of a duplicate group, as the index knows it.

    Attributes:
        paths: Its names.
        root: Its watched root.
        size: Its size in bytes, when known.
        blake3: Hex BLAKE3 of its content (or a prefix), for exact groups.
        code: Its unit of the group's type, for near groups.
        centre: It is the near group's centre.
    """

    paths: tuple[str, ...]
    root: str
    size: int | None
    blake3: str | None = None
    code: str | None = None
    centre: bool = False


@dataclass(frozen=True, slots=True)
class FoundGroup:
    """A duplicate group as the index reports it.

    Attributes:
        kind: Exact or near.
        members: Its files.
        threshold: For near groups, the threshold of the group's unit type.
    """

    kind: GroupKind
    members: tuple[Found, ...]
    threshold: int | None = None


@dataclass(frozen=True, slots=True)
class Excluded:
    """A file left out of the plan, and why.

    Attributes:
        path: The file.
        reason: Why.
    """

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class Observed:
    """Groups of files as they are now.

    Attributes:
        groups: Each group's kind and its members as observed (at least two).
        excluded: The files left out.
        thresholds: Each group's threshold (near groups; ``None`` for exact ones).
    """

    groups: tuple[tuple[GroupKind, tuple[Member, ...]], ...]
    excluded: tuple[Excluded, ...]
    thresholds: tuple[int | None, ...] = ()


#: Why a file whose root is not this host's is left out.
NOT_UNDER_A_ROOT = "not under a watched root of this host"

#: Why a file is left out, by the errno of looking it up beneath its root.
_REFUSED = {
    errno.ENOENT: "gone since it was indexed",
    errno.ELOOP: "reached through a symbolic link (never followed)",
    errno.EXDEV: NOT_UNDER_A_ROOT,
}


def _look(path: str, found: Found, beneath: RootDir | str) -> os.stat_result | str:
    """``lstat`` of ``path`` reached beneath its root, or why it cannot be in a plan."""
    if isinstance(beneath, str):
        return beneath
    if not is_below(path, found.root):
        return NOT_UNDER_A_ROOT
    try:
        st = beneath.stat(path)
    except OSError as exc:
        return _REFUSED.get(exc.errno or 0, f"cannot be looked at: {exc.strerror}")
    if not stat.S_ISREG(st.st_mode):
        return "no longer a regular file"
    if found.size is not None and st.st_size != found.size:
        return "changed since it was indexed (run `isccd rescan`)"
    return st


def _root_dir(root: str, roots: Collection[str]) -> RootDir | str:
    """The root's directory, open, or why its files cannot be in a plan."""
    if root not in roots:
        return NOT_UNDER_A_ROOT
    try:
        return RootDir(root)
    except OSError as exc:
        return f"its root cannot be opened: {exc.strerror}"


def observe(groups: Iterable[FoundGroup], roots: Collection[str]) -> Observed:
    """Look at every file of ``groups`` now (see the module docstring).

    Args:
        groups: The groups the index reports.
        roots: This host's watched roots (absolute, links resolved): a file whose root is not
            one of them is left out.
    """
    with contextlib.ExitStack() as stack:
        dirs: dict[str, RootDir | str] = {}

        def beneath(root: str) -> RootDir | str:
            if root not in dirs:
                opened = dirs[root] = _root_dir(root, roots)
                if isinstance(opened, RootDir):
                    stack.callback(opened.close)
            return dirs[root]

        return _observe(groups, beneath)


def _observe(groups: Iterable[FoundGroup], beneath: Callable[[str], RootDir | str]) -> Observed:
    out: list[tuple[GroupKind, tuple[Member, ...]]] = []
    thresholds: list[int | None] = []
    excluded: list[Excluded] = []
    for group in groups:
        by_file: dict[tuple[int, int], list[tuple[str, Found, os.stat_result]]] = {}
        for found in group.members:
            for path in found.paths:
                seen = _look(path, found, beneath(found.root))
                if isinstance(seen, str):
                    excluded.append(Excluded(path, seen))
                else:
                    by_file.setdefault((seen.st_dev, seen.st_ino), []).append((path, found, seen))
        members = []
        for names in by_file.values():
            names.sort(key=lambda n: n[0])
            path, found, st = names[0]
            paths = tuple(n[0] for n in names)
            members.append(
                Member(
                    paths,
                    found.root,
                    st.st_dev,
                    st.st_ino,
                    st.st_size,
                    st.st_mtime_ns,
                    found.blake3,
                    st.st_blocks * 512,
                    st.st_nlink,
                    found.code,
                    found.centre,
                )
            )
        if len(members) > 1:
            out.append((group.kind, tuple(members)))
            thresholds.append(group.threshold)
    return Observed(tuple(out), tuple(excluded), tuple(thresholds))


def build_plan(
    groups: Sequence[tuple[GroupKind, Sequence[Member]]],
    rules: Sequence[KeepRule],
    keep_in: Sequence[str] = (),
    thresholds: Sequence[int | None] = (),
) -> Plan:
    """A plan keeping in each group the member ``rules`` prefer (see :mod:`isccd.dedupe.keep`),
    each near group with its threshold (``thresholds``, in the order of ``groups``), beyond
    which a member is not near the kept file and is left in place.

    Members are listed by path, so the plan does not depend on the order they were found in.
    A file may be in several groups (exact copies are near duplicates of each other too): a
    file acted on in one group is left out of the later ones, and a file kept in one group is
    kept in the later ones as well, so no file is both kept and acted on.
    """
    plan = []
    kept: set[str] = set()
    acted: set[str] = set()
    for g, (kind, members) in enumerate(groups):
        ordered = tuple(sorted((m for m in members if m.path not in acted), key=lambda m: m.paths))
        if len(ordered) < 2:
            continue
        already = [i for i, m in enumerate(ordered) if m.path in kept]
        if already:
            candidates = [ordered[i] for i in already]
            keep = already[choose_keep(candidates, rules, keep_in)]
        else:
            keep = choose_keep(ordered, rules, keep_in)
        threshold = thresholds[g] if g < len(thresholds) else None
        plan.append(Group(kind, ordered, keep, threshold if kind is GroupKind.NEAR else None))
        kept.add(ordered[keep].path)
        acted.update(m.path for i, m in enumerate(ordered) if i != keep)
    return Plan(tuple(plan))
