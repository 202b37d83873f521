"""The events of a batch of new files (:func:`isccd.pipeline.changes.add_new`, logged together at
its end) are those of the files applied one by one: the same seqs, types, paths and data, and
each record's own, also after old events were purged, and on PostgreSQL. The events handed out
are what the log gives back, down to the type of every value (``==`` alone takes a unit type for
its value)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from isccd.model import Event
from isccd.pipeline import changes
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
            changes.apply_record(ix, ROOT, rec)
            ix.release()
        ix.commit()
        if purge:
            ix.begin()
            assert ix.store.purge_events(2_000.0) > 0
            ix.commit()
        ix.begin()
        ix.savepoint()
        if together:
            each = changes.add_new(ix, ROOT, batch)
            assert each is not None, "the batch was refused"
        else:
            each = [changes.apply_record(ix, ROOT, rec) for rec in batch]
        ix.release()
        ix.commit()
        return ix.store.events_since(0, 10_000), each
    finally:
        ix.close()


def _typed(value: Any) -> Any:
    """``value`` with the exact type of every part beside it."""
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, value)


def _same(events: list[Event], others: list[Event]) -> None:
    """The same events, data of the same types."""
    assert events == others
    assert [_typed(e.data) for e in events] == [_typed(e.data) for e in others]


@pytest.mark.parametrize("purge", [False, True])
def test_batch_events_on_sqlite(purge: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        alone = _events(state_url(Path(tmp) / "alone"), together=False, purge=purge)
        together = _events(state_url(Path(tmp) / "together"), together=True, purge=purge)
    assert together == alone
    logged, each = together
    flat = [e for events in each for e in events]
    _same(logged[len(logged) - len(flat) :], flat)
    _same([e for events in alone[1] for e in events], flat)


@pytest.mark.slow
def test_batch_events_on_postgres(pg_server: PgServer) -> None:
    names = [pg_server.new_database() for _ in range(2)]
    try:
        alone = _events(pg_server.url(names[0]), together=False, purge=True)
        together = _events(pg_server.url(names[1]), together=True, purge=True)
    finally:
        for name in names:
            pg_server.drop_database(name)
    assert together == alone
    logged, each = together
    flat = [e for events in each for e in events]
    _same(logged[len(logged) - len(flat) :], flat)
    _same([e for events in alone[1] for e in events], flat)
