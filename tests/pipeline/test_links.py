"""Bounded near relations: a family of files keeps at most ``max_links`` relations a file per
unit type, in the store and in the events (designed codes: ``"A:v:n"`` is ``v`` bits from
``"A:0"``, ``n`` only makes its bytes its own)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from isccd.match import Thresholds
from isccd.model import EventType
from isccd.pipeline import PipelineOptions
from isccd.pipeline.policy import parse
from isccd.store import Store
from tests.pipeline.harness import Harness


def links(h: Harness) -> Counter[int]:
    """How many stored relations each file has."""

    def count(store: Store) -> Counter[int]:
        found: Counter[int] = Counter()
        for pair in store.near_pairs():
            found.update((pair.a, pair.b))
        return found

    result: Counter[int] = h.read(count)
    return result


def clique(h: Harness, n: int) -> None:
    for i in range(n):
        h.write(f"shot{i:03}.raw", f"A:{i % 4}:{i}")


def test_files_of_one_code_do_not_pile_up_on_the_first(tmp_path: Path) -> None:
    # Fifty files with the same Data-Code (a log whose growth leaves it unchanged): every
    # relation is a tie, and ties go to the file indexed first.
    h = Harness(tmp_path, options=PipelineOptions(thresholds=Thresholds(max_links=4)))
    try:
        for i in range(50):
            h.write(f"log.{i:02}", f"A:0:{i}")
        h.scan()
        assert len(links(h)) == 50 and max(links(h).values()) <= 4
    finally:
        h.close()


def test_a_family_keeps_at_most_max_links_relations_a_file(tmp_path: Path) -> None:
    h = Harness(tmp_path, options=PipelineOptions(thresholds=Thresholds(max_links=5)))
    try:
        clique(h, 30)  # every file near every other: 435 pairs
        events = h.scan()
        # Every file keeps a relation, and none more than 5.
        assert len(links(h)) == 30 and max(links(h).values()) <= 5
        near = [e for e in events if e.type is EventType.DUP_NEAR]
        # Each file names its 4 nearest (near_named), nearest first, and counts every file
        # indexed before it.
        assert PipelineOptions().near_named == 4
        named = [len(e.data["others"]) for e in near]
        assert named == [min(4, e.data["count"]) for e in near], named
        for e in near:
            distances = [o["distance"] for o in e.data["others"]]
            assert distances == sorted(distances) and distances[0] == e.data["distance"]
        assert sorted(e.data["count"] for e in near) == list(range(1, 30))
        # Groups around centres of the relations kept: every file in one.
        groups = h.dupes(near=True)
        assert sum(len(g.members) for g in groups) == 30
    finally:
        h.close()


def test_a_store_decided_without_a_bound_is_pruned_to_it(tmp_path: Path) -> None:
    h = Harness(tmp_path, options=PipelineOptions(thresholds=Thresholds(max_links=None)))
    try:
        clique(h, 20)
        h.scan()
        assert max(links(h).values()) == 19
        h.adopt(Thresholds(max_links=4))
        assert len(links(h)) == 20 and max(links(h).values()) <= 4
    finally:
        h.close()


def test_a_policy_recorded_before_the_bound_bounded_nothing() -> None:
    recorded = parse('{"decided": {"data": 8, "text": 15, "min_size": 1}}')
    assert recorded.decided.max_links is None
    assert recorded.decided != Thresholds()  # so a pipeline under the default switches
