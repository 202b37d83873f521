"""Near groups around centres (:mod:`isccd.pipeline.centres`) on designed graphs: a chain of
files each a few bits from the last, a clique, and a file between two families."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from isccd.pipeline.centres import Centred, centred

Edges = dict[tuple[int, int], tuple[int, int]]


def chain(n: int, step: int = 2, threshold: int = 8) -> Edges:
    """Files ``0..n-1``, file ``i`` ``step * i`` bits from file 0: related within
    ``threshold``, as a growing log's snapshots are."""
    return {
        (x, y): (step * (y - x), threshold)
        for x in range(n)
        for y in range(x + 1, n)
        if step * (y - x) <= threshold
    }


def check(groups: list[Centred], edges: Edges) -> None:
    """Every member within the threshold of its centre (a relation), no file in two groups."""
    seen: list[int] = []
    for group in groups:
        assert group.members
        for m in group.members:
            assert (min(m, group.centre), max(m, group.centre)) in edges
        seen += [group.centre, *group.members]
    assert len(seen) == len(set(seen))


def test_a_chain_longer_than_the_threshold_is_several_groups_each_within_it() -> None:
    edges = chain(100)
    groups = centred(edges, range(100))
    check(groups, edges)
    # The chain is one connected component of 100 files; around centres, each group spans at
    # most the threshold on either side: 9 files (4 steps of 2 bits each way).
    assert len(groups) > 10 and max(1 + len(g.members) for g in groups) <= 9
    assert sum(1 + len(g.members) for g in groups) == 100  # nobody left out


def test_a_clique_is_one_group_around_its_first_file() -> None:
    edges = {(x, y): (1, 8) for x in range(6) for y in range(x + 1, 6)}
    assert centred(edges, range(6)) == [Centred(0, (1, 2, 3, 4, 5))]


def test_a_file_near_two_centres_joins_the_nearer() -> None:
    # Two families around 0 and 10 (each centre near three files); 5 is near both, 2 bits
    # from 10 and 6 from 0.
    edges: Edges = {(0, i): (1, 8) for i in (1, 2, 3)} | {(10, i): (1, 8) for i in (11, 12, 13)}
    edges |= {(0, 5): (6, 8), (5, 10): (2, 8)}
    assert centred(edges, range(14)) == [Centred(0, (1, 2, 3)), Centred(10, (5, 11, 12, 13))]
    edges[(0, 5)] = (2, 8)  # as near to both: the centre ranked first (more relations, or
    edges[(5, 10)] = (2, 8)  # the same number and the smaller id) has it
    assert centred(edges, range(14)) == [Centred(0, (1, 2, 3, 5)), Centred(10, (11, 12, 13))]


def test_a_centre_left_alone_takes_back_its_nearest_file() -> None:
    # 0-1-2-3, 1 and 2 apart; 1 is the centre (ties to the smaller id) of 0 and 2; 3 becomes a
    # centre too, and 2 is as near to it: it has only 2 to take.
    edges: Edges = {(0, 1): (3, 8), (1, 2): (3, 8), (2, 3): (3, 8)}
    assert centred(edges, range(4)) == [Centred(1, (0,)), Centred(3, (2,))]


def test_adding_a_file_changes_only_the_groups_around_it() -> None:
    before = centred(chain(200), range(200))
    after = centred(chain(201), range(201))
    changed = [g for g in before if g not in after]
    # File 200 is near files 196..199 only: the groups holding those may change, no other.
    assert all(max(g.centre, *g.members) >= 190 for g in changed)
    assert len(changed) <= 2


@given(st.integers(0, 2**32 - 1), st.integers(2, 40))
def test_the_groups_do_not_depend_on_the_order_relations_are_read_in(seed: int, n: int) -> None:
    rng = random.Random(seed)
    edges: Edges = {
        (x, y): (rng.randrange(9), 8)
        for x in range(n)
        for y in range(x + 1, n)
        if rng.random() < 0.2
    }
    shuffled = list(edges.items())
    rng.shuffle(shuffled)
    groups = centred(edges, range(n))
    assert centred(dict(shuffled), range(n)) == groups
    check(groups, edges)
