"""The events of a batch of new files (:meth:`Index.add_new`, logged together at its end) are
those of the files applied one by one: the same seqs, types, paths and data, and each record's
own, also after old events were purged, and on PostgreSQL."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from isccd.model import Event
from isccd.pipeline.index import Index
from isccd.pipeline.options import PipelineOptions
from isccd.store import open_store, state_url
from tests.pg import PgServer
from tests.pipeline.test_add_new import ROOT, TRICKY


def _events(url: str, together: bool, purge: bool) -> tuple[list[Event], list[list[Event]]]:
    before, batch = TRICKY
    ix = Index(open_store(url), PipelineOptions(), clock=lambda: 1_000.0)
    try:
        ix.begin()
        for rec in before:
            ix.savepoint()
            ix.apply_record(ROOT, rec)
            ix.release()
        ix.commit()
        if purge:
            ix.begin()
            assert ix.store.purge_events(2_000.0) > 0
            ix.commit()
        ix.begin()
        ix.savepoint()
        if together:
            each = ix.add_new(ROOT, batch)
            assert each is not None, "the batch was refused"
        else:
            each = [ix.apply_record(ROOT, rec) for rec in batch]
        ix.release()
        ix.commit()
        return ix.store.events_since(0, 10_000), each
    finally:
        ix.close()


@pytest.mark.parametrize("purge", [False, True])
def test_batch_events_on_sqlite(purge: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        alone = _events(state_url(Path(tmp) / "alone"), together=False, purge=purge)
        together = _events(state_url(Path(tmp) / "together"), together=True, purge=purge)
    assert together == alone
    logged, each = together
    flat = [e for events in each for e in events]
    assert logged[len(logged) - len(flat) :] == flat


def test_batch_events_on_postgres(pg_server: PgServer) -> None:
    names = [pg_server.new_database() for _ in range(2)]
    try:
        alone = _events(pg_server.url(names[0]), together=False, purge=True)
        together = _events(pg_server.url(names[1]), together=True, purge=True)
    finally:
        for name in names:
            pg_server.drop_database(name)
    assert together == alone
