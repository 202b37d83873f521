"""Files at new paths applied together (:func:`isccd.pipeline.changes.add_new`, what a first scan
does with each batch of small files) end as applied one by one: the same rows, relations and
events, in the same order, whatever hardlinks, copies and near duplicates the batch holds among
itself and with the files stored before it."""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.errors import StoreError
from isccd.match import Thresholds
from isccd.model import (
    Event,
    EventType,
    FileIssue,
    FileRecord,
    FileStat,
    IssueCode,
    IssueKind,
    Mode,
    Unit,
    UnitType,
)
from isccd.pipeline import Pipeline, changes
from isccd.pipeline.index import Index
from isccd.pipeline.options import PipelineOptions
from isccd.store import NearPair, StoredFile, open_store, state_url
from tests.pg import PgServer
from tests.pipeline.harness import FamilyHasher, Harness, kinds, others

ROOT = "/r"

#: Data-Code digests: 0 and 1 are 3 bits apart (near), 2 is far from both.
DIGESTS = (bytes(8), bytes([0, 0, 0, 0, 0, 0, 0, 7]), b"\xff" * 8)


def record(
    i: int,
    *,
    ino: int,
    size: int,
    content: int,
    digest: int,
    nlink: int,
    text: int | None = None,
    failed: bool = False,
) -> FileRecord:
    """The record of file ``i`` (inode ``ino`` when it has ``nlink`` > 1 names, else its own);
    ``content`` picks the datahash, ``digest`` the Data-Code, ``text`` a Text-Code (from the
    same pool), and ``failed`` adds an error."""
    datahash = "1e20" + f"{content:064x}"
    code = DIGESTS[digest]
    units = [Unit(UnitType.DATA, "ISCC:GAA" + code.hex().upper(), code, "p/1")]
    if text is not None:
        words = DIGESTS[text]
        units.insert(0, Unit(UnitType.TEXT, "ISCC:EAA" + words.hex().upper(), words, "p/1"))
    issue = FileIssue("text", IssueKind.ERROR, "cannot decode", IssueCode.INVALID)
    return FileRecord(
        path=f"{ROOT}/d{i % 3}/f{i}",
        stat=FileStat(1, 1000 + ino if nlink > 1 else 5000 + i, size, 1, 2, nlink),
        mediatype="text/plain" if text is not None else "application/octet-stream",
        mode=Mode.TEXT if text is not None else None,
        iscc="ISCC:KAC" + datahash[-8:].upper(),
        units=tuple(units),
        datahash=datahash,
        filesize=size,
        issues=(issue,) if failed else (),
    )


@st.composite
def records(draw: st.DrawFn, start: int, count: int) -> list[FileRecord]:
    """Records at distinct paths whose identities, contents and digests come from small pools,
    so that hardlinks, exact copies and near duplicates are common."""
    return [
        record(
            i,
            ino=draw(st.integers(0, 3)),
            size=draw(st.sampled_from([0, 10, 10, 20])),
            content=draw(st.integers(0, 2)),
            digest=draw(st.integers(0, 2)),
            nlink=draw(st.integers(1, 2)),
            text=draw(st.none() | st.integers(0, 2)),
            failed=draw(st.integers(0, 5)) == 0,
        )
        for i in range(start, start + count)
    ]


#: A batch with one of each case, after two stored files: hardlinks of a stored file and of one
#: in the batch, copies of both, near duplicates by Data- and Text-Code, an empty file, an error.
TRICKY = (
    [
        record(0, ino=1, size=10, content=1, digest=0, nlink=2),
        record(1, ino=0, size=10, content=2, digest=2, nlink=1, text=0),
    ],
    [
        record(2, ino=1, size=10, content=1, digest=0, nlink=2),
        record(3, ino=0, size=10, content=1, digest=1, nlink=1),
        record(4, ino=2, size=20, content=0, digest=1, nlink=2, text=1),
        record(5, ino=2, size=20, content=0, digest=1, nlink=2, text=1),
        record(6, ino=0, size=20, content=0, digest=2, nlink=1, text=0, failed=True),
        record(7, ino=0, size=0, content=2, digest=0, nlink=1),
    ],
)


def _apply(
    url: str,
    before: list[FileRecord],
    batch: list[FileRecord],
    *,
    together: bool,
    options: PipelineOptions | None = None,
    removed: frozenset[int] = frozenset(),
) -> tuple[list[Event], list[tuple[int, str, FileRecord]], list[NearPair], bool]:
    ix = Index(open_store(url), options or PipelineOptions(), clock=lambda: 1_000.0)
    done = True
    try:
        ix.begin()
        for record in before:
            ix.savepoint()
            changes.apply_record(ix, ROOT, record)
            ix.release()
        for i in sorted(removed):  # tombstones: slots the in-memory index keeps, dead
            changes.remove_path(ix, before[i].path)
        ix.commit()
        ix.begin()
        ix.savepoint()
        if together:
            done = changes.add_new(ix, ROOT, batch) is not None
        else:
            for record in batch:
                changes.apply_record(ix, ROOT, record)
        ix.release()
        ix.commit()
        store = ix.store
        files: list[StoredFile] = store.files_under(ROOT)
        return (
            store.events_since(0, 10_000),
            sorted((f.id, f.path, f.record) for f in files),
            sorted(store.near_pairs(), key=lambda p: (p.a, p.b, p.unit.value)),
            done,
        )
    finally:
        ix.close()


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(data=st.data(), stored=st.integers(0, 5), new=st.integers(1, 12))
def test_a_batch_of_new_files_ends_as_applied_one_by_one(
    data: st.DataObject, stored: int, new: int
) -> None:
    before = data.draw(records(0, stored))
    removed = data.draw(st.frozensets(st.integers(0, stored - 1))) if stored else frozenset()
    batch = data.draw(records(stored, new))
    with tempfile.TemporaryDirectory() as tmp:
        alone = _apply(
            state_url(Path(tmp) / "alone"), before, batch, together=False, removed=removed
        )
        together = _apply(
            state_url(Path(tmp) / "together"), before, batch, together=True, removed=removed
        )
    assert together[3], "the batch was refused"
    assert together[:3] == alone[:3]


def widened(r: FileRecord, tail: int) -> FileRecord:
    """``r`` with 256-bit units: the 64 bits the in-memory index holds, then a tail from a
    small pool (all zeros, a byte apart, far), so that near candidates are confirmed on their
    full digests."""
    rest = (bytes(24), bytes(7) + b"\xff" + bytes(16), b"\xff" * 24)[tail]
    return replace(r, units=tuple(replace(u, digest=u.digest + rest) for u in r.units))


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(data=st.data(), stored=st.integers(0, 4), new=st.integers(1, 10))
def test_a_batch_ends_as_one_by_one_under_any_policy_and_with_256_bit_units(
    data: st.DataObject, stored: int, new: int
) -> None:
    thresholds = Thresholds(
        data=data.draw(st.sampled_from([None, 8])), min_size=data.draw(st.sampled_from([0, 1, 15]))
    )
    limit = data.draw(st.sampled_from([1, 16, None]))
    options = PipelineOptions(thresholds=replace(thresholds, max_links=limit))
    tails = st.none() | st.integers(0, 2)
    before = [
        r if (t := data.draw(tails)) is None else widened(r, t)
        for r in data.draw(records(0, stored))
    ]
    batch = [
        r if (t := data.draw(tails)) is None else widened(r, t)
        for r in data.draw(records(stored, new))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        alone = _apply(
            state_url(Path(tmp) / "alone"), before, batch, together=False, options=options
        )
        together = _apply(
            state_url(Path(tmp) / "together"), before, batch, together=True, options=options
        )
    assert together[3], "the batch was refused"
    assert together[:3] == alone[:3]


@pytest.mark.slow
def test_every_case_at_once_on_both_backends(tmp_path: Path, pg_server: PgServer) -> None:
    before, batch = TRICKY
    alone = _apply(state_url(tmp_path / "alone"), before, batch, together=False)
    together = _apply(state_url(tmp_path / "together"), before, batch, together=True)
    assert together[3]
    assert together[:3] == alone[:3]
    kinds = {e.type.value for e in alone[0]}
    assert {"file.added", "file.error", "dup.exact", "dup.near"} <= kinds
    assert any(e.data.get("links") for e in alone[0])  # a hardlink was seen too
    names = [pg_server.new_database() for _ in range(2)]
    try:
        on_pg = [
            _apply(pg_server.url(name), before, batch, together=together)
            for name, together in zip(names, (False, True), strict=True)
        ]
    finally:
        for name in names:
            pg_server.drop_database(name)
    assert on_pg[1][3]
    assert on_pg[1][1:3] == on_pg[0][1:3]
    assert [(e.seq, e.type, e.path, e.data) for e in on_pg[1][0]] == [
        (e.seq, e.type, e.path, e.data) for e in on_pg[0][0]
    ]


def test_a_batch_with_a_stored_path_is_refused_untouched(tmp_path: Path) -> None:
    first = [record(i, ino=0, size=10, content=0, digest=0, nlink=1) for i in range(3)]
    ix = Index(open_store(state_url(tmp_path / "state")), PipelineOptions())
    try:
        ix.begin()
        changes.apply_record(ix, ROOT, first[1])
        ix.commit()
        ix.begin()
        assert changes.add_new(ix, ROOT, first) is None
        twice = [first[0], first[0]]
        assert changes.add_new(ix, ROOT, twice) is None
        assert ix.pending == []
        ix.commit()
        assert [f.path for f in ix.store.files_under(ROOT)] == [first[1].path]
        assert len(ix.store.events_since(0)) == 1
    finally:
        ix.close()


def test_a_batch_reads_the_stored_files_it_names_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each new file is a copy of one stored file and near all of them: its events name its
    # copy and its nearest, whose keys its near search needed first. On a shared database each
    # read is a round trip under the writers' lock: the batch reads them once, not per file.
    before = [record(i, ino=0, size=10, content=i, digest=0, nlink=1) for i in range(20)]
    batch = [record(20 + i, ino=0, size=10, content=i, digest=1, nlink=1) for i in range(20)]
    ix = Index(open_store(state_url(tmp_path / "state")), PipelineOptions())
    try:
        ix.begin()
        for r in before:
            changes.apply_record(ix, ROOT, r)
        ix.commit()
        reads = {"files_by_id": 0, "file_keys": 0}
        for name in reads:
            read = getattr(ix.store, name)

            def counted(*args: object, _read: object = read, _name: str = name) -> object:
                reads[_name] += 1
                return _read(*args)  # type: ignore[operator]

            monkeypatch.setattr(ix.store, name, counted)
        ix.begin()
        events = changes.add_new(ix, ROOT, batch)
        ix.commit()
    finally:
        ix.close()
    assert events is not None
    kinds = [e.type for job in events for e in job]
    assert kinds.count(EventType.DUP_EXACT) == 20 and kinds.count(EventType.DUP_NEAR) == 20
    assert reads == {"files_by_id": 1, "file_keys": 1}


def test_a_batch_whose_first_read_fails_is_applied_again_one_by_one_as_if_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read of the stored files a batch will name fails (a lost connection): the batch is
    # undone and its files applied one by one, as the batcher does. Nothing of the failed
    # job stays behind: each file logs its events and stores its relations, as without it.
    before = [record(i, ino=0, size=10, content=i, digest=0, nlink=1) for i in range(3)]
    batch = [record(20 + i, ino=0, size=10, content=i, digest=1, nlink=1) for i in range(3)]
    ix = Index(open_store(state_url(tmp_path / "state")), PipelineOptions(), clock=lambda: 1e3)
    try:
        ix.begin()
        for r in before:
            changes.apply_record(ix, ROOT, r)
        ix.commit()
        read, failed = ix.store.files_by_id, list[list[int]]()

        def flaky(ids: list[int]) -> list[StoredFile]:
            if not failed:
                failed.append(ids)
                raise StoreError("the connection to the database was lost")
            return read(ids)

        monkeypatch.setattr(ix.store, "files_by_id", flaky)
        ix.begin()
        ix.savepoint()
        with pytest.raises(StoreError, match="was lost"):
            changes.add_new(ix, ROOT, batch)
        ix.rollback_to()
        assert (ix.queue, ix.job_steps, ix.job_files, ix.job_keys) == (None, None, None, None)
        for r in batch:
            ix.savepoint()
            changes.apply_record(ix, ROOT, r)
            ix.release()
        ix.commit()
        got = (
            ix.store.events_since(0, 10_000),
            sorted((f.id, f.path, f.record) for f in ix.store.files_under(ROOT)),
            sorted(ix.store.near_pairs(), key=lambda p: (p.a, p.b, p.unit.value)),
        )
    finally:
        ix.close()
    assert failed
    alone = _apply(state_url(tmp_path / "alone"), before, batch, together=False)
    assert got == alone[:3]
    announced = [e.path for e in got[0] if e.type is EventType.DUP_NEAR]
    assert set(announced) >= {r.path for r in batch}


def test_a_batch_under_the_stores_policy_names_no_file_before_it_is_added(tmp_path: Path) -> None:
    # The daemon opens the store without adopting its configured policy, and decides under the
    # store's (here with Data-Code near duplicates) until the adoption is done; a first
    # reconcile's batch of near copies comes meanwhile. The configured policy leaves the
    # Data-Code out, so its in-memory index is built on first use, inside the batch.
    Harness(tmp_path).close()  # records the default policy in the store
    root = tmp_path / "root"
    for i in range(4):
        (root / f"f{i}").write_text(f"A:{i}")
    committed: list[Event] = []
    pipeline = Pipeline(
        state_url(tmp_path / "state"),
        PipelineOptions(thresholds=Thresholds(data=None)),
        hasher=FamilyHasher(),
        on_commit=committed.extend,
    )
    pipeline.open(adopt=False)
    try:
        asyncio.run(pipeline.reconcile(str(root)))
    finally:
        pipeline.close()
    added: set[str] = set()
    near = []
    for event in committed:
        if event.type is EventType.FILE_ADDED:
            added.add(event.path.rsplit("/", 1)[-1])
        elif event.type is EventType.DUP_NEAR:
            assert set(others(event)) <= added, kinds(committed)
            near.append(sorted(others(event)))
    assert len(added) == 4
    # Each file is announced with the ones added before it: three announcements, one pair
    # with the first, then two, then three files.
    assert sorted(len(o) for o in near) == [1, 2, 3]


@pytest.mark.slow
def test_a_batch_undone_in_a_fleet_catches_up_again_before_the_next_decision(pg_url: str) -> None:
    # A batch takes the writers' lock and brings the index up to the other hosts' changes
    # before it stores anything; when it fails (here a value the database refuses), its
    # savepoint gives the lock up, another host commits, and the files go one by one.
    a = Index(open_store(pg_url, host="a"), PipelineOptions())
    b = Index(open_store(pg_url, host="b"), PipelineOptions())
    try:
        theirs = record(0, ino=0, size=10, content=1, digest=0, nlink=1)
        mine = record(1, ino=0, size=10, content=2, digest=1, nlink=1)  # 3 bits from theirs
        refused = replace(record(2, ino=0, size=10, content=0, digest=2, nlink=1), extractor="\0")
        a.begin()
        a.savepoint()
        with pytest.raises(StoreError):
            changes.add_new(a, ROOT, [mine, refused])
        a.rollback_to()
        b.begin()
        changes.apply_record(b, ROOT, theirs)
        b.commit()  # not blocked: host a holds no lock now
        a.savepoint()
        events = changes.apply_record(a, ROOT, mine)
        a.release()
        a.commit()
        near = [e for e in events if e.type is EventType.DUP_NEAR]
        # Announced on both sides: the other host's in its own name.
        assert sorted((e.host, e.path, e.data["others"][0]["host"]) for e in near) == [
            ("a", mine.path, "b"),
            ("b", theirs.path, "a"),
        ]
    finally:
        a.close()
        b.close()


@pytest.mark.slow
def test_a_batch_in_a_fleet_logs_both_hosts_sides_in_the_order_of_one_by_one(
    pg_server: PgServer,
) -> None:
    # The files stored before are another host's: the batch's copies, hardlinks (copies,
    # across hosts) and near duplicates of them are announced on both sides.
    before, batch = TRICKY
    names = [pg_server.new_database() for _ in range(2)]
    logs = []
    try:
        for name, together in zip(names, (False, True), strict=True):
            url = pg_server.url(name)
            a = Index(open_store(url, host="a"), PipelineOptions(), clock=lambda: 1_000.0)
            try:
                a.begin()
                for stored in before:
                    changes.apply_record(a, ROOT, stored)
                a.commit()
            finally:
                a.close()
            b = Index(open_store(url, host="b"), PipelineOptions(), clock=lambda: 1_000.0)
            try:
                b.begin()
                b.savepoint()
                if together:
                    assert changes.add_new(b, ROOT, batch) is not None
                else:
                    for new in batch:
                        changes.apply_record(b, ROOT, new)
                b.release()
                b.commit()
                logged = b.store.events_since(0, 10_000, fleet=True)
                logs.append([(e.seq, e.type, e.host, e.path, e.data) for e in logged])
            finally:
                b.close()
    finally:
        for name in names:
            pg_server.drop_database(name)
    assert logs[1] == logs[0]
    after = logs[0][len(before) :]
    told_a = {kind for _, kind, host, _, _ in after if host == "a"}
    assert {EventType.DUP_EXACT, EventType.DUP_NEAR} <= told_a  # the other side, told
