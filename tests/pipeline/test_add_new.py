"""Files at new paths applied together (:meth:`Index.add_new`, what a first scan does with each
batch of small files) end as applied one by one: the same rows, relations and events, in the
same order, whatever hardlinks, copies and near duplicates the batch holds among itself and
with the files stored before it."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from isccd.model import Event, FileRecord, FileStat, Unit, UnitType
from isccd.pipeline.index import Index
from isccd.pipeline.options import PipelineOptions
from isccd.store import NearPair, StoredFile, open_store, state_url

ROOT = "/r"

#: Data-Code digests: 0 and 1 are 3 bits apart (near), 2 is far from both.
DIGESTS = (bytes(8), bytes([0, 0, 0, 0, 0, 0, 0, 7]), b"\xff" * 8)


def record(i: int, *, ino: int, size: int, content: int, digest: int, nlink: int) -> FileRecord:
    """The record of file ``i`` (inode ``ino`` when it has ``nlink`` > 1 names, else its own);
    ``content`` picks the datahash, ``digest`` the Data-Code."""
    datahash = "1e20" + f"{content:064x}"
    code = DIGESTS[digest]
    return FileRecord(
        path=f"{ROOT}/d{i % 3}/f{i}",
        stat=FileStat(1, 1000 + ino if nlink > 1 else 5000 + i, size, 1, 2, nlink),
        mediatype="application/octet-stream",
        mode=None,
        iscc="ISCC:KAC" + datahash[-8:].upper(),
        units=(Unit(UnitType.DATA, "ISCC:GAA" + code.hex().upper(), code, "p/1"),),
        datahash=datahash,
        filesize=size,
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
        )
        for i in range(start, start + count)
    ]


def _apply(
    state: Path, before: list[FileRecord], batch: list[FileRecord], together: bool
) -> tuple[list[Event], list[tuple[int, str, FileRecord]], list[NearPair], bool]:
    ix = Index(open_store(state_url(state)), PipelineOptions(), clock=lambda: 1_000.0)
    done = True
    try:
        ix.begin()
        for record in before:
            ix.savepoint()
            ix.apply_record(ROOT, record)
            ix.release()
        ix.commit()
        ix.begin()
        ix.savepoint()
        if together:
            done = ix.add_new(ROOT, batch) is not None
        else:
            for record in batch:
                ix.apply_record(ROOT, record)
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


@settings(max_examples=60, deadline=None)
@given(data=st.data(), stored=st.integers(0, 5), new=st.integers(1, 12))
def test_a_batch_of_new_files_ends_as_applied_one_by_one(
    data: st.DataObject, stored: int, new: int
) -> None:
    before = data.draw(records(0, stored))
    batch = data.draw(records(stored, new))
    with tempfile.TemporaryDirectory() as tmp:
        alone = _apply(Path(tmp) / "alone", before, batch, together=False)
        together = _apply(Path(tmp) / "together", before, batch, together=True)
    assert together[3], "the batch was refused"
    assert together[:3] == alone[:3]


def test_a_batch_with_a_stored_path_is_refused_untouched(tmp_path: Path) -> None:
    first = [record(i, ino=0, size=10, content=0, digest=0, nlink=1) for i in range(3)]
    ix = Index(open_store(state_url(tmp_path / "state")), PipelineOptions())
    try:
        ix.begin()
        ix.apply_record(ROOT, first[1])
        ix.commit()
        ix.begin()
        assert ix.add_new(ROOT, first) is None
        twice = [first[0], first[0]]
        assert ix.add_new(ROOT, twice) is None
        assert ix.pending == []
        ix.commit()
        assert [f.path for f in ix.store.files_under(ROOT)] == [first[1].path]
        assert len(ix.store.events_since(0)) == 1
    finally:
        ix.close()
