"""Duplicate folders from the store's rows (:func:`isccd.pipeline.folders.folder_groups`):
copied trees at their highest level, a folder wrapping its copy, a folder with one file more,
re-encoded albums by their near relations, contents that collide in the bucketing sums,
unknown contents, hardlinked copies; and, as a property over random trees, that every exact
group holds folders with equal contents, none above another, and none shown below a group of
their parents."""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.pipeline.folders import folder_groups
from isccd.results import DirGroup, DupKind
from isccd.store import FolderFile

ROOT = "/lib"
_ids = itertools.count(1)


def content(label: str) -> bytes:
    """A datahash as the store keeps it (multihash prefix, then 32 digest bytes)."""
    return b"\x1e\x20" + hashlib.blake2b(label.encode(), digest_size=32).digest()


def row(path: str, label: str | None, size: int = 100, *, host: str = "h",
        inode: int | None = None) -> FolderFile:  # fmt: skip
    directory, name = path.rsplit("/", 1)
    file_id = next(_ids)
    identity = (1, inode if inode is not None else file_id)
    digest = None if label is None else content(label)
    return FolderFile(file_id, host, ROOT, directory, name, size, digest, identity)


def tree(base: str, files: dict[str, str], **kw: object) -> list[FolderFile]:
    return [row(f"{base}/{rel}", label, **kw) for rel, label in files.items()]  # type: ignore[arg-type]


ALBUM = {"a.jpg": "A", "b.jpg": "B", "c.jpg": "C", "raw/a.cr2": "RA", "raw/b.cr2": "RB"}


def shown(groups: list[DirGroup], kind: DupKind = DupKind.EXACT) -> list[list[str]]:
    return [[m.path for m in g.members] for g in groups if g.kind is kind]


def test_a_copied_tree_is_one_group_at_its_top_not_one_per_level() -> None:
    files = tree("/lib/2019", ALBUM) + tree("/lib/backup/2019-copy", ALBUM)
    files += [row("/lib/other/x", "X"), row("/lib/backup/notes.txt", "N")]
    groups = folder_groups(files, {})
    assert shown(groups) == [["/lib/2019", "/lib/backup/2019-copy"]]
    [group] = groups
    assert group.reclaimable == 500 and [m.files for m in group.members] == [5, 5]


def test_names_and_layout_do_not_matter_but_counts_do() -> None:
    flat = {"1": "A", "2": "B", "3": "C", "4": "RA", "5": "RB"}
    twice = {**flat, "6": "A"}  # the same set of contents, one of them twice
    files = tree("/lib/album", ALBUM) + tree("/lib/flat", flat) + tree("/lib/twice", twice)
    assert shown(folder_groups(files, {})) == [["/lib/album", "/lib/flat"]]


def test_a_folder_whose_contents_are_all_in_one_subfolder_stands_for_it() -> None:
    files = tree("/lib/album", ALBUM) + tree("/lib/wrapped/only/album", ALBUM)
    assert shown(folder_groups(files, {})) == [["/lib/album", "/lib/wrapped"]]


def test_a_third_copy_of_a_subfolder_is_still_told() -> None:
    files = tree("/lib/a", ALBUM) + tree("/lib/b", ALBUM)
    files += [*tree("/lib/c/raw", {"x.cr2": "RA", "y.cr2": "RB"}), row("/lib/c/new", "N")]
    assert shown(folder_groups(files, {})) == [
        ["/lib/a", "/lib/b"],
        ["/lib/a/raw", "/lib/b/raw", "/lib/c/raw"],
    ]


def test_a_folder_with_one_file_more_is_a_near_duplicate_with_that_file_named() -> None:
    files = tree("/lib/album", ALBUM) + tree("/lib/album2", {**ALBUM, "new.jpg": "N"})
    assert shown(folder_groups(files, {})) == [["/lib/album/raw", "/lib/album2/raw"]]
    assert shown(folder_groups(files, {}, share=0.95), DupKind.NEAR) == []  # 10 of 11
    [_, group] = folder_groups(files, {}, share=0.9)
    assert group.kind is DupKind.NEAR
    centre, member = group.members
    assert (centre.path, member.path) == ("/lib/album2", "/lib/album")
    assert member.share == pytest.approx(10 / 11)
    assert (member.unmatched, member.missing, member.missing_count) == ((), ("new.jpg",), 1)


def test_a_re_encoded_album_is_near_by_the_relations_of_its_files() -> None:
    original = tree("/lib/album", {"a.jpg": "A", "b.jpg": "B", "c.jpg": "C"})
    encoded = tree("/lib/webp", {"a.webp": "A'", "b.webp": "B'", "c.webp": "C'"})
    near = {o.id: [e.id] for o, e in zip(original, encoded, strict=True)}
    assert folder_groups(original + encoded, {}, share=0.5) == []
    [group] = folder_groups(original + encoded, near, share=1.0)
    assert [m.path for m in group.members] == ["/lib/album", "/lib/webp"]
    assert group.members[1].share == 1.0 and group.reclaimable == 0
    # Two of three matched: 4 of 6 files.
    del near[original[0].id]
    [group] = folder_groups(original + encoded, near, share=0.6)
    member = group.members[1]
    assert member.share == pytest.approx(4 / 6)
    assert member.unmatched_count + member.missing_count == 2


def test_contents_with_equal_sums_are_not_called_equal() -> None:
    # Digests chosen so that the sums the folders are bucketed by are equal: 1+4 == 2+3.
    def made(n: int) -> bytes:
        return b"\x1e\x20" + bytes(16) + n.to_bytes(16, "big")

    def at(path: str, n: int) -> FolderFile:
        directory, name = path.rsplit("/", 1)
        return FolderFile(next(_ids), "h", ROOT, directory, name, 10, made(n), (1, next(_ids)))

    files = [at("/lib/x/1", 1), at("/lib/x/4", 4), at("/lib/y/2", 2), at("/lib/y/3", 3)]
    assert folder_groups(files, {}) == []
    files += [at("/lib/z/4", 4), at("/lib/z/1", 1)]
    assert shown(folder_groups(files, {})) == [["/lib/x", "/lib/z"]]


def test_a_file_of_unknown_content_makes_no_exact_duplicate_and_empty_files_do_not_count() -> None:
    files = tree("/lib/a", ALBUM) + tree("/lib/b", ALBUM) + [row("/lib/b/unreadable", None)]
    assert shown(folder_groups(files, {})) == [["/lib/a/raw", "/lib/b/raw"]]
    files = tree("/lib/a", ALBUM) + tree("/lib/b", ALBUM) + [row("/lib/b/empty", "E", size=0)]
    assert shown(folder_groups(files, {})) == [["/lib/a", "/lib/b"]]


def test_a_hardlinked_copy_frees_nothing() -> None:
    a = tree("/lib/a", {"1": "A", "2": "B"})
    b = [row("/lib/b/1", "A", inode=a[0].identity[1]), row("/lib/b/2", "B", inode=a[1].identity[1])]  # type: ignore[index]
    [group] = folder_groups(a + b, {})
    assert group.reclaimable == 0


def test_folders_of_two_hosts_are_told_apart() -> None:
    files = tree("/lib/a", ALBUM, host="one") + tree("/lib/a", ALBUM, host="two")
    files += [row("/lib/b", "B", host="one"), row("/lib/b", "X", host="two")]
    [group] = folder_groups(files, {})
    assert [(m.host, m.path) for m in group.members] == [("one", "/lib/a"), ("two", "/lib/a")]


def test_a_share_outside_0_to_1_is_refused() -> None:
    for share in (0, 1.5, -1):
        with pytest.raises(ValueError, match="share"):
            folder_groups([], {}, share=share)


# -- property: random trees of copies -------------------------------------------------------

_labels = st.sampled_from("ABCDEFGH")
_subtree = st.dictionaries(
    st.sampled_from(["p", "q", "s/p", "s/q", "s/t/p", "u/p"]), _labels, min_size=1, max_size=5
)


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(_subtree, min_size=1, max_size=3),
    placement=st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from(["/lib/a", "/lib/b", "/lib/c/d", "/lib/e"])),
        min_size=1, max_size=6,
    ),
)  # fmt: skip
def test_every_exact_group_holds_equal_contents_at_its_highest_level(
    parts: list[dict[str, str]], placement: list[tuple[int, str]]
) -> None:
    files: list[FolderFile] = []
    for n, (part, base) in enumerate(placement):
        files += tree(f"{base}/{n}", parts[part % len(parts)])
    by_dir: dict[str, Counter[bytes]] = {}
    for f in files:
        here = f.dir
        while here.startswith(ROOT):
            by_dir.setdefault(here, Counter())[f.datahash or b""] += 1
            here = here.rsplit("/", 1)[0]
    groups = folder_groups(files, {})
    in_group = {m.path: i for i, g in enumerate(groups) for m in g.members}
    for group in groups:
        paths = [m.path for m in group.members]
        assert len(paths) == len(set(paths)) >= 2
        # Equal contents, counted here from the rows.
        assert all(by_dir[p] == by_dir[paths[0]] for p in paths)
        # None above another.
        assert not any(p != q and q.startswith(p + "/") for p in paths for q in paths)
        # Not all below one group of their parents.
        parents = [p.rsplit("/", 1)[0] for p in paths]
        above = {in_group.get(p) for p in parents}
        assert not (len(set(parents)) == len(paths) and len(above) == 1 and None not in above)
    # Every pair of distinct placements of one part at different bases whose folders hold
    # nothing else is found, at their level or above.
    for (n, (_, base)), (m, (_, base2)) in itertools.combinations(enumerate(placement), 2):
        a, b = f"{base}/{n}", f"{base2}/{m}"
        if by_dir[a] != by_dir[b]:
            continue

        def at_or_above(path: str, group: DirGroup) -> set[int]:
            return {i for i, x in enumerate(group.members)
                    if path == x.path or path.startswith(x.path + "/")}  # fmt: skip

        covered = any(
            len(at_or_above(a, g) | at_or_above(b, g)) > 1
            and at_or_above(a, g)
            and at_or_above(b, g)
            for g in groups
        )
        assert covered, (a, b, [[x.path for x in g.members] for g in groups])
