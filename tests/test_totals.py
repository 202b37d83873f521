"""What duplicate groups add up to (:class:`isccd.results.Totals`): each file once, whatever
groups it is in, and the space keeping the largest file of each set of groups that share
files frees, on disk and by size."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.model import UnitType
from isccd.results import DupGroup, DupKind, DupMember, Footprint, Totals


def member(path: str, size: int, allocated: int | None = None, *links: str) -> DupMember:
    return DupMember(path, "/r", size, None, UnitType.INSTANCE, None, 0, 0, None,
                     links=links, host="h", allocated=allocated)  # fmt: skip


def group(kind: DupKind, *members: DupMember) -> DupGroup:
    return DupGroup.of(kind, UnitType.INSTANCE, 0, members)


def test_exact_copies_in_their_near_group_count_once() -> None:
    # a and b are copies (exact) and near c; the near group holds all three.
    a, b, c = member("/r/a", 100, 104), member("/r/b", 100, 104), member("/r/c", 80, 84)
    exact, near = group(DupKind.EXACT, a, b), group(DupKind.NEAR, a, b, c)
    assert (exact.reclaimable, near.reclaimable) == (104, 188)
    # 3 files, not 5; keeping a frees b and c: 188 bytes on disk, not 104 + 188.
    assert Totals.of([exact, near]) == Totals(2, 3, 188, 180)


def test_groups_that_share_no_file_add_up() -> None:
    one = group(DupKind.EXACT, member("/r/a", 10, 4096), member("/r/b", 10, 4096))
    two = group(DupKind.EXACT, member("/r/c", 5, 0), member("/r/d", 5, 4096))
    assert Totals.of([one, two]) == Totals(
        2, 4, one.reclaimable + two.reclaimable, one.reclaimable_size + two.reclaimable_size
    )


def test_a_sparse_file_frees_its_blocks_and_a_file_without_them_its_size() -> None:
    dense, sparse, old = (
        member("/r/a", 1 << 20, 1 << 20),
        member("/r/b", 1 << 20, 4096),
        member("/r/c", 1 << 20),
    )
    g = group(DupKind.EXACT, dense, sparse, old)
    assert (g.reclaimable, g.reclaimable_size) == (4096 + (1 << 20), 2 << 20)
    assert Totals.of([g]) == Totals(1, 3, g.reclaimable, g.reclaimable_size)


def test_a_near_group_keeps_its_largest_member_not_its_centre() -> None:
    # The centre is listed first, whatever its size: keeping it would free the two larger
    # files; keeping the first of the largest (a) frees the centre and b.
    centre, a, b = member("/r/c", 80, 84), member("/r/a", 100, 104), member("/r/b", 100, 108)
    near = DupGroup.of(DupKind.NEAR, UnitType.DATA, 8, (centre, a, b), centre=0)
    assert (near.reclaimable, near.reclaimable_size, near.centre) == (84 + 108, 180, 0)
    assert Totals.of([near]) == Totals(1, 3, near.reclaimable, near.reclaimable_size)


def test_a_file_named_differently_in_two_groups_is_one_file() -> None:
    # Its hardlink was its first name in one group, its other name in the other.
    exact = group(DupKind.EXACT, member("/r/a", 10, 10, "/r/z"), member("/r/b", 10, 10))
    near = group(DupKind.NEAR, member("/r/z", 10, 10), member("/r/c", 4, 4))
    assert Totals.of([exact, near]) == Totals(2, 3, 14, 14)


def test_the_same_path_on_two_hosts_is_two_files() -> None:
    here = member("/r/a", 10, 10)
    there = DupMember("/r/a", "/r", 10, None, UnitType.INSTANCE, None, 0, 0, host="other",
                      allocated=10)  # fmt: skip
    assert Totals.of([group(DupKind.EXACT, here, there)]).files == 2


@st.composite
def grouped_files(draw: st.DrawFn) -> list[list[Footprint]]:
    """Groups of files, each file with one size and allocation wherever it appears."""
    files = [
        Footprint((f"/r/{c}",), draw(st.integers(0, 1000)), draw(st.none() | st.integers(0, 999)))
        for c in "abcdefg"
    ]
    one_group = st.lists(st.sampled_from(files), min_size=2, max_size=4, unique=True)
    return draw(st.lists(one_group, max_size=5))


@settings(max_examples=30)  # each example is small; a few dozen cover the shapes
@given(grouped_files())
def test_totals_never_count_a_file_twice_nor_free_more_than_there_is(
    groups: list[list[Footprint]],
) -> None:
    totals = Totals.over(groups)
    distinct = {f.names: f for g in groups for f in g}
    assert (totals.groups, totals.files) == (len(groups), len(distinct))
    # At least one file stays (the largest of a set of groups sharing files, its copies
    # aside), and none is freed twice.
    spaces = [f.space for f in distinct.values()]
    sizes = [f.size or 0 for f in distinct.values()]
    assert 0 <= totals.reclaimable <= sum(spaces) - (min(spaces) if spaces else 0)
    assert 0 <= totals.reclaimable_size <= sum(sizes) - (max(sizes) if sizes else 0)


@settings(max_examples=30)
@given(st.lists(st.tuples(st.integers(0, 1000), st.none() | st.integers(0, 999)), min_size=2,
                max_size=5), st.integers(0, 4))  # fmt: skip
def test_a_group_alone_frees_what_its_totals_say(
    files: list[tuple[int, int | None]], centre: int
) -> None:
    # Whichever member is listed first (a near group's centre), a group and its totals keep
    # the same file.
    members = tuple(member(f"/r/{i}", size, allocated) for i, (size, allocated) in enumerate(files))
    g = DupGroup.of(DupKind.NEAR, UnitType.DATA, 8, members, centre=min(centre, len(files) - 1))
    assert Totals.of([g]) == Totals(1, len(files), g.reclaimable, g.reclaimable_size)


@st.composite
def named_groups(draw: st.DrawFn) -> list[list[Footprint]]:
    """Groups of files that each file may join under any of its names, its first name or its
    hardlink first, so that the same file is named differently in two groups."""
    files = [
        ((f"/r/{c}", f"/r/{c}.link"), draw(st.integers(0, 99)), draw(st.none() | st.integers(0, 9)))
        for c in "abcdef"
    ]
    names = st.sampled_from([(0,), (1,), (0, 1), (1, 0)])
    shown = st.tuples(st.sampled_from(files), names).map(
        lambda f: Footprint(tuple(f[0][0][i] for i in f[1]), f[0][1], f[0][2])
    )
    return draw(st.lists(st.lists(shown, min_size=2, max_size=4), max_size=6))


def modelled(groups: list[list[Footprint]]) -> Totals:
    """Totals by brute force: a member joins its names into one file, files named alike are
    one, groups sharing a file are one set, and each set keeps its first largest file."""
    files: list[set[str]] = []
    for member in (m for g in groups for m in g):
        joined = {n for f in files if f & set(member.names) for n in f} | set(member.names)
        files = [f for f in files if not f & joined] + [joined]

    def file_of(member: Footprint) -> int:
        return next(i for i, f in enumerate(files) if member.names[0] in f)

    sets: list[tuple[set[int], set[int]]] = []  # (groups, files)
    for g, group in enumerate(groups):
        mine = {file_of(m) for m in group}
        touching = [s for s in sets if s[1] & mine]
        sets = [s for s in sets if not s[1] & mine]
        merged = ({g}.union(*(s[0] for s in touching)), mine.union(*(s[1] for s in touching)))
        sets.append(merged)
    first: dict[int, Footprint] = {}  # each file as it is first shown, in group order
    for member in (m for g in groups for m in g):
        first.setdefault(file_of(member), member)
    reclaimable = reclaimable_size = 0
    for _, held in sets:
        shown = [f for i, f in first.items() if i in held]
        kept = max(shown, key=lambda f: f.size or 0)  # the first of the largest
        reclaimable += sum(f.space for f in shown) - kept.space
        reclaimable_size += sum(f.size or 0 for f in shown) - (kept.size or 0)
    return Totals(len(groups), len(first), reclaimable, reclaimable_size)


@settings(max_examples=200)
@given(named_groups())
def test_totals_are_those_of_joining_every_name_and_every_group_that_shares_a_file(
    groups: list[list[Footprint]],
) -> None:
    assert Totals.over(groups) == modelled(groups)


@settings(max_examples=100)  # each example makes its groups' members too
@given(named_groups(), st.data())
def test_the_totals_of_groups_are_those_of_their_members(
    groups: list[list[Footprint]], data: st.DataObject
) -> None:
    # ``Totals.of`` counts a group that shares no file by the group's own reclaimable: the
    # same as joining its members' footprints, whichever member is its centre.
    made = []
    for files in groups:
        members = tuple(
            DupMember(f.names[0], "/r", f.size, None, UnitType.DATA, None, 0, 8, None,
                      links=f.names[1:], allocated=f.allocated)
            for f in files
        )  # fmt: skip
        centre = data.draw(st.integers(0, len(members) - 1))
        made.append(DupGroup.of(DupKind.NEAR, UnitType.DATA, 8, members, centre=centre))
    qualified = [[Footprint(tuple(f":{n}" for n in f.names), f.size, f.allocated) for f in g]
                 for g in groups]  # fmt: skip
    assert Totals.of(made) == modelled(qualified)
