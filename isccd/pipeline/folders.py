"""Duplicate folders (``dupes --dirs``): folders whose files duplicate another folder's.

**Exact.** Two folders are exact duplicates when they hold the same file contents: the same
multiset of contents (Instance datahashes) at any depth below them, whatever the files' names
and the folders' layout, as ``rmlint -D`` means it. Empty files are no content and are not
counted; a folder holding a file whose content was not computed (unreadable, or not yet
indexed) is no exact duplicate of anything. Folders are bucketed by a sum of their files'
hashes (a multiset hash, added up from the leaves in one pass over the directories), and the
members of each bucket are then compared by their sorted contents, so that no two folders are
called exact duplicates by a collision of the sums.

**Near.** Two folders are near duplicates when at least a share (``--share``, 90 % unless
asked otherwise) of both folders' files have an exact or near duplicate in the other one (a
near duplicate by the stored relations, under the same policy as file groups). A file is
matched in the other folder at the same depth below it: ``A/x/f`` matches in ``B`` when its
duplicate is ``B/<one folder>/g``, as a copied or re-encoded tree keeps its shape. Near pairs
become groups around a centre folder by the rule of file groups (:mod:`isccd.pipeline.centres`),
each member with its share and the files matched in neither direction.

**Highest level.** A folder whose contents are all in one subfolder is the same duplicate as
that subfolder and is shown instead of it; an exact group all of whose folders' parents are
in one exact group is not shown (the parents' group says it); a near pair whose parents are
a near or exact pair is not either. (An exact group below a near pair is shown: those
subfolders are copies, and what removing one frees is counted.) A folder is never a
duplicate of a folder above or below it.

:func:`folder_groups` is pure: it takes the store's rows (:meth:`isccd.store.Store.folder_files`)
and the held near relations (:func:`isccd.pipeline.groups.dup_dirs` reads them through the
index); :class:`FolderTree` is kept current by :mod:`isccd.pipeline.dirwatch` too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from isccd.fspath import is_under
from isccd.pipeline.centres import centred
from isccd.results import DIRS_NAMES_SHOWN, DirFile, DirGroup, DirMember, DupKind
from isccd.store import FolderFile

#: A folder: ``(host, path)``.
Folder = tuple[str, str]


def fingerprint(contents: Iterable[bytes]) -> bytes:
    """What two folders holding the same contents (raw datahashes, in any order) share, and
    two folders holding other contents do not (a BLAKE2b digest of the sorted contents)."""
    return hashlib.blake2b(b"".join(sorted(contents)), digest_size=32).digest()


_MASK = (1 << 128) - 1


@dataclass(slots=True)
class _Node:
    """A folder of the tree: its place, what is below it, and how it adds up."""

    host: str
    path: str
    root: str
    parent: int  # -1: a root (nothing above it is a folder of the library)
    depth: int
    children: list[int]
    own: list[int]  # indices of its own files (in the list of files)
    files: int = 0  # files with content at any depth
    size: int = 0
    blank: int = 0  # files whose content is unknown
    sum: int = 0  # the multiset hash of the contents


def folder_groups(
    files: Sequence[FolderFile],
    near: Mapping[int, Iterable[int]],
    *,
    share: float | None = None,
    contents: bool = False,
) -> list[DirGroup]:
    """The duplicate folders of ``files``: exact groups, the most reclaimable first, then, with
    a ``share``, near groups, the largest centre first.

    Args:
        files: Every live file (:meth:`isccd.store.Store.folder_files`).
        near: For a file id, the ids of the files it is a near duplicate of (relations that
            hold; either direction may be given).
        share: Near groups too: the least share of two folders' files that have a duplicate
            in the other (above 0, at most 1).
        contents: Each exact group's folders with their files (:attr:`DirMember.contents`).

    Raises:
        ValueError: ``share`` is not above 0 and at most 1.
    """
    if share is not None and not 0 < share <= 1:
        raise ValueError(f"share {share} is not above 0 and at most 1")
    tree = FolderTree([f for f in files if f.size != 0])
    exact, member_of, covered_by = tree.exact_groups()
    groups = [tree.exact_group(g, contents=contents) for g in exact]
    groups.sort(key=lambda g: (-g.reclaimable, -g.members[0].size, g.members[0].host,
                               g.members[0].path))  # fmt: skip
    if share is not None:
        groups += tree.near_groups(near, share, member_of, covered_by)
    return groups


class FolderTree:
    """Folders, each with what is below it: made from a list of files (their rows kept, for
    near groups and to compare contents), or kept current file by file (:meth:`count`).

    Args:
        files: The files (empty files left out).
        contents: A fingerprint of the contents of the files below a folder (by its host and
            path), equal for folders holding the same contents, when the rows are not kept:
            how two folders with equal sums are told to hold equal contents.
    """

    def __init__(
        self,
        files: list[FolderFile],
        contents: Callable[[str, str], bytes] | None = None,
    ) -> None:
        self.files = files
        self._contents = contents
        self.nodes: list[_Node] = []
        self.slot: dict[Folder, int] = {}
        self.leaf: list[int] = []  # the folder of each file
        for index, f in enumerate(files):
            at = self._node(f.host, f.dir, f.root)
            self.nodes[at].own.append(index)
            self.leaf.append(at)
        for folder in self.nodes:
            for index in folder.own:
                f = files[index]
                if f.datahash is None:
                    folder.blank += 1
                else:
                    folder.sum += int.from_bytes(f.datahash[-16:], "big")
                folder.files += 1
                folder.size += f.size or 0
            folder.sum &= _MASK
        # Children before parents: deeper first.
        for folder in sorted(self.nodes, key=lambda n: -n.depth):
            if folder.parent >= 0:
                up = self.nodes[folder.parent]
                up.files += folder.files
                up.size += folder.size
                up.blank += folder.blank
                up.sum = (up.sum + folder.sum) & _MASK

    def count(self, file: FolderFile, sign: int) -> list[int]:
        """Add (``sign`` 1) or take away (-1) one file from the sums of its folder and every
        folder above it (an empty file counts for nothing; its id and identity are not read).

        Returns:
            The folders whose sums changed, the file's own first.
        """
        size, datahash = file.size, file.datahash
        if size == 0:
            return []
        chain = []
        node = self._node(file.host, file.dir, file.root)
        while node >= 0:
            chain.append(node)
            folder = self.nodes[node]
            folder.files += sign
            folder.size += sign * (size or 0)
            if datahash is None:
                folder.blank += sign
            else:
                folder.sum = (folder.sum + sign * int.from_bytes(datahash[-16:], "big")) & _MASK
            node = folder.parent
        return chain

    def key(self, node: int) -> Folder:
        """``(host, path)`` of a folder."""
        folder = self.nodes[node]
        return folder.host, folder.path

    def folder(self, host: str, path: str, root: str) -> int:
        """The folder at ``path`` (made, with those between it and its root, if it holds no
        file now)."""
        return self._node(host, path, root)

    def _node(self, host: str, path: str, root: str) -> int:
        """The folder at ``path``, made with the folders between it and its root."""
        found = self.slot.get((host, path))
        if found is not None:
            return found
        missing = [path]  # from the folder up to the first one known (or the root)
        while True:
            here = missing[-1]
            if here in (root, "/") or not is_under(here, root):
                parent = -1
                break
            up = here.rsplit("/", 1)[0] or "/"
            known = self.slot.get((host, up))
            if known is not None:
                parent = known
                break
            missing.append(up)
        for here in reversed(missing):
            depth = 0 if parent < 0 else self.nodes[parent].depth + 1
            index = len(self.nodes)
            self.nodes.append(_Node(host, here, root, parent, depth, [], []))
            self.slot[(host, here)] = index
            if parent >= 0:
                self.nodes[parent].children.append(index)
            parent = index
        return parent

    def below(self, node: int) -> list[int]:
        """The indices of the files at any depth below ``node``."""
        found: list[int] = []
        todo = [node]
        while todo:
            n = self.nodes[todo.pop()]
            found += n.own
            todo += n.children
        return found

    def relative(self, node: int, index: int) -> str:
        """A file's path relative to the folder ``node``."""
        f = self.files[index]
        base = self.nodes[node].path.rstrip("/")
        return f"{f.dir}/{f.name}"[len(base) + 1 :].lstrip("/")

    # -- exact -----------------------------------------------------------------------------

    def exact_groups(self) -> tuple[list[list[int]], dict[int, int], dict[int, int]]:
        """The exact groups shown (folder nodes, by host and path); the group of each folder
        in one, before the groups covered by their parents' were dropped; and the folder that
        stands for each subfolder holding all of its contents."""
        buckets: dict[tuple[int, int, int], list[int]] = {}
        for index, node in enumerate(self.nodes):
            if node.files and not node.blank:
                buckets.setdefault((node.files, node.size, node.sum), []).append(index)
        candidates: list[list[int]] = []
        covered_by: dict[int, int] = {}
        for bucket in buckets.values():
            if len(bucket) > 1:
                candidates += self._same_contents(bucket, covered_by)
        member_of = {n: gi for gi, group in enumerate(candidates) for n in group}
        for n, top in covered_by.items():  # a subfolder holding all of its folder's contents
            if top in member_of:
                member_of[n] = member_of[top]
        shown = []
        for group in candidates:
            parents = {self.nodes[n].parent for n in group}
            covered = (
                -1 not in parents
                and len(parents) == len(group)
                and len({member_of.get(p, -1) for p in parents}) == 1
                and member_of.get(next(iter(parents)), -1) >= 0
            )
            if not covered:
                shown.append(sorted(group, key=lambda n: (self.nodes[n].host, self.nodes[n].path)))
        return shown, member_of, covered_by

    def _same_contents(self, bucket: list[int], covered_by: dict[int, int]) -> list[list[int]]:
        """The folders of one bucket of sums with the same contents, each at its highest
        level: a folder all of whose contents are in one subfolder stands for it (the
        subfolder is noted in ``covered_by``)."""
        inside = set(bucket)
        tops = []
        for n in bucket:
            top = n
            while self.nodes[top].parent in inside:
                top = self.nodes[top].parent
            if top == n:
                tops.append(n)
            else:
                covered_by[n] = top
        if len(tops) < 2:
            return []
        # The same sums are not the same contents until the contents say so.
        by_contents: dict[bytes, list[int]] = {}
        for n in tops:
            if self._contents is not None:
                contents = self._contents(self.nodes[n].host, self.nodes[n].path)
            else:
                contents = fingerprint(self.files[i].datahash or b"" for i in self.below(n))
            by_contents.setdefault(contents, []).append(n)
        return [g for g in by_contents.values() if len(g) > 1]

    def exact_group(self, group: list[int], *, contents: bool = False) -> DirGroup:
        """An exact group, its first folder kept (``contents``: with their files)."""
        members = tuple(
            self._member(n, contents=self._contents_of(n)) if contents else self._member(n)
            for n in group
        )
        kept = {(self.files[i].host, self.files[i].identity) for i in self.below(group[0])}
        freed: dict[object, int] = {}
        for n in group[1:]:
            for i in self.below(n):
                f = self.files[i]
                key = (f.host, f.identity) if f.identity is not None else ("id", f.id)
                if key not in kept:
                    freed[key] = f.size or 0
        return DirGroup(DupKind.EXACT, members, sum(freed.values()))

    def _contents_of(self, node: int) -> tuple[DirFile, ...]:
        found = []
        for i in self.below(node):
            f = self.files[i]
            if f.datahash is not None:
                found.append(DirFile(self.relative(node, i), f.size or 0, f.datahash.hex()))
        return tuple(sorted(found, key=lambda d: d.name))

    def _member(self, node: int, **shown: object) -> DirMember:
        n = self.nodes[node]
        return DirMember(n.path, n.root, n.host, n.files, n.size, **shown)  # type: ignore[arg-type]

    # -- near ------------------------------------------------------------------------------

    def _up(self, node: int, levels: int) -> int:
        for _ in range(levels):
            node = self.nodes[node].parent
            if node < 0:
                return -1
        return node

    def _chain(self, node: int) -> list[int]:
        chain = []
        while node >= 0:
            chain.append(node)
            node = self.nodes[node].parent
        return chain

    def near_groups(
        self,
        near: Mapping[int, Iterable[int]],
        share: float,
        member_of: Mapping[int, int],
        covered_by: Mapping[int, int],
    ) -> list[DirGroup]:
        """Near groups: folder pairs whose share of matched files is at least ``share``,
        grouped around centres (a subfolder holding all of a folder's contents shown as
        that folder)."""
        matches = self._matches(near)
        pairs: dict[tuple[int, int], float] = {}
        measured: dict[tuple[int, int], tuple[int, int]] = {}  # shown pair -> folders measured
        for (x, y), found in self._near_pairs(self._pair_counts(matches), share, member_of).items():
            tx, ty = covered_by.get(x, x), covered_by.get(y, y)
            if tx != ty:
                pairs[(min(tx, ty), max(tx, ty))] = found
                measured[(tx, ty)], measured[(ty, tx)] = (x, y), (y, x)
        nodes = sorted({n for pair in pairs for n in pair})
        slot = {n: i for i, n in enumerate(nodes)}
        key = [(-self.nodes[n].files, self.nodes[n].host, self.nodes[n].path) for n in nodes]
        order = [0] * len(nodes)
        for position, i in enumerate(sorted(range(len(nodes)), key=lambda i: key[i])):
            order[i] = position
        edges = {
            (slot[x], slot[y]): (round((1 - found) * 1_000_000), 0)
            for (x, y), found in pairs.items()
        }
        groups = []
        for group in centred(edges, order):
            centre = nodes[group.centre]

            def share_of(m: int, centre: int = centre) -> float:
                return pairs[(min(m, centre), max(m, centre))]

            members = sorted((nodes[m] for m in group.members),
                             key=lambda m: (-share_of(m), key[slot[m]]))  # fmt: skip
            shown = [self._member(centre)]
            for m in members:
                mine, theirs = measured[(m, centre)]
                unmatched = self._unmatched(mine, theirs, matches)
                missing = self._unmatched(theirs, mine, matches)
                shown.append(
                    self._member(
                        m,
                        share=share_of(m),
                        unmatched=tuple(unmatched[:DIRS_NAMES_SHOWN]),
                        unmatched_count=len(unmatched),
                        missing=tuple(missing[:DIRS_NAMES_SHOWN]),
                        missing_count=len(missing),
                    )
                )
            groups.append(DirGroup(DupKind.NEAR, tuple(shown)))
        return groups

    def _pair_counts(self, matches: _Matches) -> dict[tuple[int, int], int]:
        """``(x, y) -> n``: ``n`` files below the folder ``x`` have a duplicate at their depth
        below the folder ``y`` (neither folder above the other).

        Files whose duplicates lie in the same folders count alike: they are counted by that
        signature (their folder, and their duplicates' folders), and each signature's pairs
        of folders are found once (a copied folder of a hundred files is one signature)."""
        leaf = self.leaf
        signatures: dict[tuple[int, frozenset[int]], int] = {}
        for index in matches.files():
            key = (leaf[index], frozenset(leaf[j] for j in matches.of(index)))
            signatures[key] = signatures.get(key, 0) + 1
        chains: dict[int, list[int]] = {}
        ancestors: dict[int, set[int]] = {}

        def chain(node: int) -> list[int]:
            found = chains.get(node)
            if found is None:
                found = chains[node] = self._chain(node)
                ancestors[node] = set(found)
            return found

        counts: dict[tuple[int, int], int] = {}
        for (here, theirs_leaves), n in signatures.items():
            mine = chain(here)
            seen: set[tuple[int, int]] = set()
            for there in theirs_leaves:
                theirs = chain(there)
                for x, y in zip(mine, theirs, strict=False):
                    if x == y or x in ancestors[there] or y in ancestors[here]:
                        break
                    if (x, y) not in seen:
                        seen.add((x, y))
                        counts[(x, y)] = counts.get((x, y), 0) + n
        return counts

    def _near_pairs(
        self, counts: Mapping[tuple[int, int], int], share: float, member_of: Mapping[int, int]
    ) -> dict[tuple[int, int], float]:
        """The near pairs ``(x, y)``, ``x < y``, and their shares: at least ``share``, not in
        one exact group, and not below a near or exact pair of their parents."""
        pairs: dict[tuple[int, int], float] = {}
        for (x, y), there in counts.items():
            if x > y:
                continue
            found = (there + counts.get((y, x), 0)) / (self.nodes[x].files + self.nodes[y].files)
            same = member_of.get(x, -1)
            if found >= share and not (same >= 0 and same == member_of.get(y, -2)):
                pairs[(x, y)] = found
        shown = {}
        for (x, y), found in pairs.items():
            px, py = self.nodes[x].parent, self.nodes[y].parent
            above = (min(px, py), max(px, py)) in pairs or member_of.get(px, -1) == member_of.get(
                py, -2
            )
            if not (px >= 0 and py >= 0 and px != py and above):
                shown[(x, y)] = found
        return shown

    def _matches(self, near: Mapping[int, Iterable[int]]) -> _Matches:
        """For each file, the files that duplicate it: the same content, or near by a held
        relation (files in the tree only)."""
        return _Matches(self.files, near)

    def _unmatched(self, node: int, other: int, matches: _Matches) -> list[str]:
        """The files below ``node`` with no duplicate at their depth below ``other``."""
        depth = self.nodes[node].depth
        left = []
        for i in self.below(node):
            levels = self.nodes[self.leaf[i]].depth - depth
            if not any(self._up(self.leaf[j], levels) == other for j in matches.of(i)):
                left.append(self.relative(node, i))
        return sorted(left)


class _Matches:
    """The duplicates of each file of a list: the files with its content (kept as groups, a
    copy held once, not once per file), and those near it by a held relation."""

    def __init__(self, files: Sequence[FolderFile], near: Mapping[int, Iterable[int]]) -> None:
        by_content: dict[bytes, list[int]] = {}
        for i, f in enumerate(files):
            if f.datahash is not None:
                by_content.setdefault(f.datahash, []).append(i)
        self._groups = [same for same in by_content.values() if len(same) > 1]
        del by_content
        self._group_of = [-1] * len(files)
        for g, same in enumerate(self._groups):
            for i in same:
                self._group_of[i] = g
        index_of: dict[int, int] = {f.id: i for i, f in enumerate(files)} if near else {}
        self._near: dict[int, set[int]] = {}
        for file_id, others in near.items():
            mine = index_of.get(file_id)
            if mine is None:
                continue
            for other in others:
                theirs = index_of.get(other)
                if theirs is not None and theirs != mine:
                    self._near.setdefault(mine, set()).add(theirs)
                    self._near.setdefault(theirs, set()).add(mine)

    def files(self) -> Iterator[int]:
        """The files with at least one duplicate."""
        for same in self._groups:
            yield from same
        group_of = self._group_of
        yield from (i for i in self._near if group_of[i] < 0)

    def of(self, index: int) -> Iterator[int]:
        """The duplicates of one file (none twice)."""
        g = self._group_of[index]
        near = self._near.get(index, ())
        if g >= 0:
            same = self._groups[g]
            yield from (j for j in same if j != index)
            yield from (j for j in near if self._group_of[j] != g)
        else:
            yield from near
