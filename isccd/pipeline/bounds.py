"""Near links kept bounded: ``max_links`` relations of a unit type a file, its nearest.

The rule, one file at a time: once a file's new links are in, each file at the other end of
one that now has more than ``max_links`` relations of that unit type drops its farthest (ties:
the other file indexed first, which has the smaller id), but never the last relation of the
file at the other end of it (so that no near duplicate is left without a relation, and out of
every group): then the next farthest goes instead. A file is bounded when it gains a link; one
that kept more to keep others' last relations stays so until it next gains one, even if those
others have gained more since. A relation dropped still holds; it is not among the nearest of
one of its files any more, and ends without an event, as it would not have been stored had
that file been indexed last.

A job of new files is bounded as if its files had come one at a time (:func:`settle` replays
its :class:`Step`\\ s in memory), so the links a scan keeps do not depend on how its files were
gathered into jobs, and a link begun and dropped within one job is never written. What the
replay needs of the store is read once a job and unit type: how many relations the files that
gained one have, the farthest of those that may have to drop some, the counts of the files at
their other ends and, only when too many of a file's farthest cannot go, all of its relations.

Pure: the store's relations come in through a :class:`LinkReader` (the store is one), and
what is to be written goes back as :class:`Links`; :mod:`isccd.pipeline.changes` writes it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from isccd.model import UnitType
from isccd.store.base import NearPair


class LinkReader(Protocol):
    """The store's reads of near relations that bounding needs."""

    def near_counts(self, file_ids: Sequence[int], unit: UnitType) -> dict[int, int]:
        """How many relations of ``unit`` each file has (files with none left out)."""
        ...

    def farthest_near(self, wanted: Mapping[int, int], unit: UnitType) -> dict[int, list[NearPair]]:
        """Each file's farthest relations of ``unit``, as many as it wants, farthest first
        (ties: the other file with the smaller id)."""
        ...

    def near_of_many(self, file_ids: Sequence[int], unit: UnitType) -> dict[int, list[NearPair]]:
        """All relations of ``unit`` of each file."""
        ...


@dataclass(frozen=True, slots=True)
class Step:
    """One file's new near links, in the order the files came.

    Attributes:
        file_id: The file that began them.
        added: Its links begun or changed in distance (each names ``file_id``); in a job of
            new files (``settle(stored=False)``), links the store does not hold.
    """

    file_id: int
    added: Sequence[NearPair]


@dataclass(frozen=True, slots=True)
class Links:
    """What bounding leaves to write.

    Attributes:
        add: The steps' links that stay, in their order (none when they are stored already).
        remove: Stored links dropped, sorted by their files' ids.
    """

    add: list[NearPair] = field(default_factory=list)
    remove: list[NearPair] = field(default_factory=list)


def settle(reader: LinkReader, steps: Sequence[Step], limit: int | None, *, stored: bool) -> Links:
    """Bound the relations of the files at the other ends of ``steps``' links, each step as
    if bounded alone after the ones before it (the rule: the module docstring).

    Args:
        reader: The store's relations, as they were before the steps' links (``stored``:
            with them).
        steps: Files' new links, in the order of the files.
        limit: ``max_links``; ``None`` keeps every relation.
        stored: The steps' links are in the store already (one file's change, applied as it
            comes: one step), rather than only in the steps (a job of new files, whose
            files' links are all new).

    Raises:
        ValueError: ``stored`` with more than one step: the store's counts would already
            hold the later steps' links when the earlier ones are bounded.
    """
    if stored and len(steps) > 1:
        raise ValueError("links stored already are bounded one step at a time")
    if stored:
        add: list[NearPair] = []
    else:
        add = [p for s in steps for p in s.added]
    if limit is None or not steps:
        return Links(add)
    units = dict.fromkeys(p.unit for s in steps for p in s.added)
    dropped: set[NearPair] = set()
    for unit in units:
        _Replay(reader, steps, unit=unit, limit=limit, stored=stored, dropped=dropped).run()
    if stored:
        return Links([], sorted(dropped))
    began = set(add)
    return Links([p for p in add if p not in dropped], sorted(dropped - began))


class _Replay:
    """The steps of one unit type replayed over the relations read for them."""

    def __init__(
        self,
        reader: LinkReader,
        steps: Sequence[Step],
        *,
        unit: UnitType,
        limit: int,
        stored: bool,
        dropped: set[NearPair],
    ) -> None:
        self.reader, self.unit, self.limit = reader, unit, limit
        self.stored, self.dropped = stored, dropped
        self.steps = [(s.file_id, [p for p in s.added if p.unit is unit]) for s in steps]
        # The links only the steps hold, by file (both ends).
        self.fresh: dict[int, list[NearPair]] = {}
        # Stored relations read, by file, farthest first; ``whole``: all of that file's.
        self.read: dict[int, list[NearPair]] = {}
        self.whole: set[int] = set()
        # By file, once it had to drop some: its relations in the order they go, as
        # ``(-distance, other, pair)``; ``last``: the place of the last stored one read, when
        # more may not have been.
        self.order: dict[int, list[tuple[int, int, NearPair]]] = {}
        self.last: dict[int, tuple[int, int]] = {}
        new = set() if stored else {f for f, _ in self.steps}
        gained: dict[int, int] = {}
        for file_id, added in self.steps:
            for p in added:
                other = p.other(file_id)
                gained[other] = gained.get(other, 0) + (0 if stored else 1)
        # Relations each file has now, kept as the steps add and drop them. A file the job
        # stored has only the steps' links; of a stored file, only as many of its farthest
        # are read as it could ever have to drop (its count and gains over the bound).
        old = sorted(gained.keys() - new)
        self.counts: dict[int, int] = dict.fromkeys(new, 0) | dict.fromkeys(old, 0)
        self.counts |= reader.near_counts(old, unit) if old else {}
        self.whole.update(new)
        wanted = {o: self.counts[o] + gained[o] - limit for o in old}
        wanted = {o: n for o, n in wanted.items() if n > 0}
        self.whole.update(o for o in old if o not in wanted)  # never over: never read
        if wanted:
            self.read = reader.farthest_near(wanted, unit)
            self.whole.update(o for o, n in wanted.items() if len(self.read.get(o, ())) < n)
            self._count_ends(self.read.values())

    def run(self) -> None:
        counts, fresh, order, limit = self.counts, self.fresh, self.order, self.limit
        for file_id, added in self.steps:
            if not self.stored:
                for p in added:
                    a, b = p.a, p.b
                    fresh.setdefault(a, []).append(p)
                    fresh.setdefault(b, []).append(p)
                    counts[a] += 1
                    counts[b] += 1
                    if a in order:
                        bisect.insort(order[a], (-p.distance, b, p))
                    if b in order:
                        bisect.insort(order[b], (-p.distance, a, p))
            for other in dict.fromkeys(p.other(file_id) for p in added):
                excess = counts[other] - limit
                if excess > 0:
                    self._drop_farthest(other, excess)

    def _drop_farthest(self, file_id: int, excess: int) -> None:
        """Drop ``excess`` of a file's relations, farthest first, skipping any whose other
        file has no other; when the stored ones read run out first, all are read."""
        dropped, counts = self.dropped, self.counts
        while True:
            mine = self._ordered(file_id)
            # A stored relation nearer than the last one read may not have been read.
            last = self.last.get(file_id)
            at = 0
            while excess and at < len(mine):
                closeness, far, pair = mine[at]
                if pair in dropped:  # dropped at its other end
                    del mine[at]
                    continue
                if last is not None and (closeness, far) > last:
                    break  # past what was read: read the rest
                if counts[far] > 1:
                    dropped.add(pair)
                    del mine[at]
                    counts[far] -= 1
                    counts[file_id] -= 1
                    excess -= 1
                    continue
                at += 1
            if not excess or last is None:
                return
            self._read_whole(file_id)

    def _ordered(self, file_id: int) -> list[tuple[int, int, NearPair]]:
        """A file's relations, farthest first, then the other indexed first (kept so as the
        steps add theirs; some may have been dropped at their other end since)."""
        mine = self.order.get(file_id)
        if mine is None:
            links = (*self.read.get(file_id, ()), *self.fresh.get(file_id, ()))
            mine = sorted((-p.distance, p.other(file_id), p) for p in links)
            self.order[file_id] = mine
            read = self.read.get(file_id)
            if read and file_id not in self.whole:
                self.last[file_id] = (-read[-1].distance, read[-1].other(file_id))
        return mine

    def _read_whole(self, file_id: int) -> None:
        every = self.reader.near_of_many([file_id], self.unit).get(file_id, [])
        self.read[file_id] = [p for p in every if p not in self.dropped]
        self.whole.add(file_id)
        self.order.pop(file_id, None)
        self.last.pop(file_id, None)
        self._count_ends([every])

    def _count_ends(self, links: Iterable[Sequence[NearPair]]) -> None:
        """Read the counts of the files at the other ends of stored relations not counted
        yet (a file not counted has gained and lost nothing in the replay)."""
        ends = {p.a for ps in links for p in ps} | {p.b for ps in links for p in ps}
        ends -= self.counts.keys()
        if ends:
            found = self.reader.near_counts(sorted(ends), self.unit)
            self.counts |= {e: found.get(e, 0) for e in ends}
