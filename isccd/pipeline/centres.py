"""Near groups around centres: which files of a family are shown together, and around which.

A near group is a **centre** and the files within the threshold of the centre, by one unit
type: every member is a near duplicate of the centre, so one look at the centre explains the
whole group. Relations are not transitive (``a`` near ``b`` and ``b`` near ``c`` says nothing
of ``a`` and ``c``), so the groups are not the connected components of the relations: a chain
of files each a little longer than the one before becomes several groups, each no wider than
the threshold on either side of its centre.

The rule, given the near relations of one unit type (an undirected graph):

1. Files are ranked by how many others they are near (most first), ties by a stable key of
   each file that the caller gives (the index: the larger file, then the first by name). The
   rank depends on a file's own relations and key only.
2. In that order, a file not yet covered becomes a centre, and covers itself and every file
   it is near. No two centres are near each other.
3. Every covered file that is not a centre joins the **nearest** centre it is near (ties go to
   the centre ranked first): a file near two centres is shown once, with the more similar.
4. A centre left with no member (all its files nearer to other centres) takes back its
   nearest file from a centre that keeps at least one other, so that no near duplicate is
   left out when it can be shown; a centre that cannot is not a group.

The result is deterministic (it depends on the relations and the keys, not on the order
they are read in), and it is local: adding or removing a file changes the rank of the files it
is near only, so only the groups around those files can change; a library's other groups stay
as they were.

This module does no I/O and keeps no state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Centred:
    """One group: its centre and its other members (node numbers of the graph).

    Attributes:
        centre: The centre.
        members: The others, each within the threshold of the centre, in node order.
    """

    centre: int
    members: tuple[int, ...]


def centred(edges: Mapping[tuple[int, int], tuple[int, ...]], ids: Sequence[int]) -> list[Centred]:
    """The groups of a graph of near relations, by the module's rule.

    Args:
        edges: ``(x, y) -> (distance, ...)`` for each related pair of nodes, ``x < y``; only
            the distance is read.
        ids: The stable key of each node, which breaks ties (smaller first).

    Returns:
        The groups of at least two nodes, in the order their centres were chosen.
    """
    near: dict[int, dict[int, tuple[int, ...]]] = {}
    for (x, y), value in edges.items():
        near.setdefault(x, {})[y] = value
        near.setdefault(y, {})[x] = value
    return around(near, ids)


def around(near: Mapping[int, Mapping[int, tuple[int, ...]]], ids: Sequence[int]) -> list[Centred]:
    """:func:`centred`, given each node's relations: ``near[x][y] == near[y][x] ==
    (distance, ...)`` for each related pair (for a caller that builds them so)."""
    order = sorted(near, key=lambda n: (-len(near[n]), ids[n]))
    covered: set[int] = set()
    centres: list[int] = []
    for node in order:
        if node not in covered:
            centres.append(node)
            covered.add(node)
            covered.update(near[node])
    rank = {c: i for i, c in enumerate(centres)}
    joined: dict[int, list[int]] = {c: [] for c in centres}
    home: dict[int, int] = {}
    for node in order:
        if node in rank:
            continue
        mine = near[node]
        best = min((c for c in mine if c in rank), key=lambda c: (mine[c][0], rank[c]))
        joined[best].append(node)
        home[node] = best
    for centre in centres:
        if joined[centre]:
            continue
        mine = near[centre]
        spare = [n for n in mine if len(joined[home[n]]) > 1]
        if spare:
            taken = min(spare, key=lambda n: (mine[n][0], ids[n]))
            joined[home[taken]].remove(taken)
            joined[centre].append(taken)
            home[taken] = centre
    return [Centred(c, tuple(sorted(joined[c]))) for c in centres if joined[c]]
