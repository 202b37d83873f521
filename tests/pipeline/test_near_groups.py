"""Near groups through the pipeline: around centres, one unit type each (designed codes:
``"A:v"`` is ``v`` bits from ``"A:0"``)."""

from __future__ import annotations

from pathlib import Path

from isccd.model import UnitType
from isccd.results import DupKind
from tests.pipeline.harness import Harness


def test_a_chain_of_snapshots_is_several_groups_each_around_its_centre(h: Harness) -> None:
    # 31 snapshots of a growing log, each 2 bits from the one before: one connected chain of
    # relations, 60 bits from end to end.
    for i in range(31):
        h.write(f"log.{i:02}", f"A:{2 * i}")
    h.scan()
    groups = h.dupes(near=True)
    assert len(groups) > 3
    seen = [m.path for g in groups for m in g.members]
    assert len(seen) == len(set(seen)) == 31
    for group in groups:
        assert group.kind is DupKind.NEAR and group.unit is UnitType.DATA
        centre, *others = group.members
        bits = int(centre.path.rsplit(".", 1)[1]) * 2
        assert group.centre == 0 and (centre.distance, centre.nearest) == (0, None)
        for m in others:
            # Each member's distance is to the centre, and within the threshold of it.
            assert m.nearest == 0 and m.distance <= m.threshold == 8
            assert m.distance == abs(int(m.path.rsplit(".", 1)[1]) * 2 - bits)


def test_a_relation_by_one_unit_never_joins_a_group_of_another(h: Harness) -> None:
    h.write("letter.docx", "A:0|X:0")
    h.write("letter.txt", "B:0|X:2")  # the same text in another container
    h.write("letter-old.txt", "B:3")  # an earlier version of the text file's bytes, no text
    h.scan()
    groups = {g.unit: [m.path.rsplit("/", 1)[1] for m in g.members] for g in h.dupes(near=True)}
    assert {u: sorted(p) for u, p in groups.items()} == {
        UnitType.TEXT: ["letter.docx", "letter.txt"],
        UnitType.DATA: ["letter-old.txt", "letter.txt"],
    }


def test_a_pair_near_by_two_units_is_shown_once_by_the_first(h: Harness) -> None:
    h.write("a", "A:0|X:0")
    h.write("b", "A:1|X:1")
    h.scan()
    [group] = h.dupes(near=True)
    assert group.unit is UnitType.TEXT and len(group.members) == 2


def test_the_index_announces_and_groups_no_files_alike_by_their_container_only(
    h: Harness,
) -> None:
    h.write("letter1.docx", "A:0|X:0")
    h.write("letter2.docx", "A:2|Y:0")  # same template, other text
    h.write("letter1.zip", "A:3")  # no Content-Code: the Data-Code decides
    pairs = {
        frozenset((Path(e.path).name, Path(o["path"]).name))
        for e in h.scan()
        if e.type.value == "dup.near"
        for o in e.data["others"]
    }
    assert pairs == {
        frozenset(("letter1.zip", "letter1.docx")),
        frozenset(("letter1.zip", "letter2.docx")),
    }
    [group] = h.dupes(near=True)
    assert group.unit is UnitType.DATA
    assert group.members[0].path == h.p("letter1.zip")  # the centre: near both


def _chain_groups(h: Harness, order: list[int]) -> set[frozenset[str]]:
    """A chain of five files, each 6 bits from the next (the threshold is 8), indexed one at a
    time in ``order``: the three in the middle are near two files each, so only a tie decides
    which of them is a centre."""
    for i in order:
        h.write(f"c{i}", f"A:{6 * i}")
        h.scan()
    return {frozenset(m.path.rsplit("/", 1)[1] for m in g.members) for g in h.dupes(near=True)}


def test_the_groups_do_not_depend_on_the_order_files_were_indexed_in(tmp_path: Path) -> None:
    found = []
    for n, order in enumerate(([0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [2, 0, 4, 1, 3])):
        (tmp_path / str(n)).mkdir()
        h = Harness(tmp_path / str(n))
        try:
            found.append(_chain_groups(h, order))
        finally:
            h.close()
    assert found[0] == found[1] == found[2]
    assert sum(len(g) for g in found[0]) >= 4  # the chain is shown, not left out
