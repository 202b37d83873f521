"""Bounding near links (:mod:`isccd.pipeline.bounds`): the rule applied one file at a time,
and a job of new files bounded as if its files had come one by one, whatever the job's size."""

from __future__ import annotations

import random
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.match import Thresholds
from isccd.model import FileRecord, UnitType
from isccd.pipeline import PipelineOptions, changes
from isccd.pipeline.bounds import Step, settle
from isccd.pipeline.index import Index
from isccd.store import NearPair, SqliteStore, open_store, state_url
from tests.store.conftest import hashed, make_record

DATA, TEXT = UnitType.DATA, UnitType.TEXT
OLD, NEW = 6, 6  # files stored before the steps, files the steps add


def bounded_model(
    pairs: set[NearPair], others: list[int], limit: int, unit: UnitType
) -> set[NearPair]:
    """The bound's rule, read from every relation at once: each file of ``others`` over
    ``limit`` drops its farthest (ties: the other file with the smaller id), skipping any
    whose other file would be left without a relation, until it is at ``limit``."""
    kept = set(pairs)

    def of(file_id: int) -> list[NearPair]:
        return [p for p in kept if p.unit is unit and file_id in (p.a, p.b)]

    for file_id in dict.fromkeys(others):
        mine = sorted(of(file_id), key=lambda p: (-p.distance, p.other(file_id)))
        excess = len(mine) - limit
        for pair in mine:
            if excess <= 0:
                break
            if len(of(pair.other(file_id))) > 1:
                kept.discard(pair)
                excess -= 1
    return kept


def one_at_a_time(stored: set[NearPair], steps: list[Step], limit: int) -> set[NearPair]:
    """The model: each step's links added, then the files at their other ends bounded."""
    kept = set(stored)
    for step in steps:
        kept |= set(step.added)
        for unit in dict.fromkeys(p.unit for p in step.added):
            others = [p.other(step.file_id) for p in step.added if p.unit is unit]
            kept = bounded_model(kept, others, limit, unit)
    return kept


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, set[NearPair], list[Step]]:
    """A bound, relations among the stored files (ties in distance among them, a family's),
    and steps: each new file's links to stored files and to the new files before it."""
    limit = draw(st.integers(1, 4))
    ids = list(range(1, OLD + NEW + 1))
    drawn = draw(st.lists(st.tuples(st.integers(0, OLD - 1), st.integers(0, OLD - 1))))
    stored = {
        NearPair.of(ids[x], ids[y], DATA, draw(st.integers(0, 3)))
        for x, y in dict.fromkeys(drawn)
        if x < y
    }
    stored = set({(p.a, p.b): p for p in stored}.values())  # one relation a pair of files
    steps = []
    for k in range(NEW):
        me = ids[OLD + k]
        targets = draw(st.lists(st.integers(0, OLD + k - 1), unique=True, max_size=OLD + k))
        units = draw(st.lists(st.sampled_from([DATA, DATA, TEXT]), min_size=len(targets)))
        added = [
            NearPair.of(me, ids[t], unit, draw(st.integers(0, 3)))
            for t, unit in zip(targets, units, strict=False)
        ]
        if added:
            steps.append(Step(me, added))
    return limit, stored, steps


def _store(tmp: str, stored: set[NearPair]) -> SqliteStore:
    store = open_store(state_url(Path(tmp) / "state"), host="host-a")
    assert isinstance(store, SqliteStore)
    store.begin()
    for i in range(OLD + NEW):
        store.add_file("/data", make_record(f"/data/f{i}", ino=i + 1), 1.0)
    store.add_near(sorted(stored))
    return store


@pytest.mark.slow  # a store a case: seconds of CPU under coverage
@settings(max_examples=300, deadline=None)
@given(graphs())
def test_a_job_keeps_what_its_files_one_at_a_time_keep(
    drawn: tuple[int, set[NearPair], list[Step]],
) -> None:
    limit, stored, steps = drawn
    expected = one_at_a_time(stored, steps, limit)
    with tempfile.TemporaryDirectory() as tmp:
        store = _store(tmp, stored)
        try:
            # A job: its links only in the steps, the store as before them.
            links = settle(store, steps, limit, stored=False)
            began = {p for s in steps for p in s.added}
            assert set(links.add) <= began and set(links.remove) <= stored
            assert len(links.add) == len(set(links.add))
            assert (stored - set(links.remove)) | set(links.add) == expected
            # The same files one at a time, each one's links stored before it is bounded.
            for step in steps:
                store.add_near(list(step.added))
                alone = settle(store, [step], limit, stored=True)
                assert not alone.add
                store.remove_near(alone.remove)
            assert set(store.near_pairs()) == expected
        finally:
            store.rollback()
            store.close()


def test_no_bound_keeps_every_link() -> None:
    steps = [Step(3, [NearPair(1, 3, DATA, 2), NearPair(2, 3, DATA, 5)])]
    with tempfile.TemporaryDirectory() as tmp:
        store = _store(tmp, set())
        try:
            links = settle(store, steps, None, stored=False)
            assert links.add == list(steps[0].added) and not links.remove
        finally:
            store.rollback()
            store.close()


def _family(n: int, seed: int) -> list[FileRecord]:
    """Files of one family: a clique of variants of one code, and a chain drifting from it."""
    rng = random.Random(seed)
    base = rng.getrandbits(64)
    records = []
    for i in range(n):
        if i % 3:  # a variant: up to 3 of 16 bits flipped, within 6 bits of every other one
            mask = sum(1 << b for b in rng.sample(range(16), rng.randint(0, 3)))
        else:  # the chain: one more of the high bits each time
            mask = (1 << (16 + i // 3 % 40)) - (1 << 16)
        code = (base ^ mask).to_bytes(8, "big")
        records.append(make_record(f"/data/f{i:03}", ino=i + 1, data=code, datahash=hashed(i)))
    return records


def _near_after(tmp: Path, records: list[FileRecord], size: int | None) -> set[NearPair]:
    """The links kept after ``records`` were applied in jobs of ``size`` (``None``: each
    applied as it comes, outside a job)."""
    db = tmp / f"jobs-{size}.db"
    options = PipelineOptions(thresholds=Thresholds(max_links=3))
    index = Index(SqliteStore(db), options, clock=lambda: 1_000.0)
    try:
        step = size or 1
        for start in range(0, len(records), step):
            index.begin()
            index.savepoint()
            if size is None:
                changes.apply_record(index, "/data", records[start])
            else:
                assert changes.add_new(index, "/data", records[start : start + size]) is not None
            index.release()
            index.commit()
        return set(index.store.near_pairs())
    finally:
        index.close()


def test_the_links_a_scan_keeps_do_not_depend_on_its_jobs(tmp_path: Path) -> None:
    # A family (a clique and a chain through it) indexed one file at a time, then in jobs
    # of 1, 7 and all 90 files: the same links, each file with one at least, none over
    # the bound.
    records = _family(90, seed=7)
    alone = _near_after(tmp_path, records, None)
    counts = Counter(i for p in alone for i in (p.a, p.b))
    assert len(counts) == 90 and max(counts.values()) == 3, counts
    for size in (1, 7, 90):
        assert _near_after(tmp_path, records, size) == alone, size


def test_links_stored_already_are_bounded_one_step_at_a_time() -> None:
    steps = [Step(3, [NearPair(1, 3, DATA, 2)]), Step(4, [NearPair(1, 4, DATA, 2)])]
    with tempfile.TemporaryDirectory() as tmp:
        store = _store(tmp, set())
        try:
            with pytest.raises(ValueError, match="one step at a time"):
                settle(store, steps, 1, stored=True)
        finally:
            store.rollback()
            store.close()


def test_a_file_kept_over_the_bound_for_others_stays_so_until_it_gains_again() -> None:
    # Limit 2. X keeps B and C as their only relations, then B and C gain others: X is over
    # the bound with none of its relations another's last, and stays so, as the docs say.
    a, x, b, c, n, p, q = 1, 2, 3, 4, 5, 6, 7
    steps = [
        Step(x, [NearPair.of(x, a, DATA, 5)]),
        Step(b, [NearPair.of(b, x, DATA, 1)]),
        Step(c, [NearPair.of(c, x, DATA, 1)]),
        Step(n, [NearPair.of(n, a, DATA, 0)]),
        Step(p, [NearPair.of(p, b, DATA, 0)]),
        Step(q, [NearPair.of(q, c, DATA, 0)]),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        store = _store(tmp, set())
        try:
            links = settle(store, steps, 2, stored=False)
        finally:
            store.rollback()
            store.close()
    kept = set(links.add)
    assert kept == one_at_a_time(set(), steps, 2)
    counts = Counter(i for pair in kept for i in (pair.a, pair.b))
    assert counts[x] == 3 and all(counts[o] == 2 for o in (a, b, c))
