"""The changes a store could not take: kept in order, a path once, bounded; past the bound a
root is reconciled instead."""

from __future__ import annotations

from isccd.daemon.deferred import Backlog, Deferred
from isccd.watch.debounce import Dirty, Moved


def test_changes_come_back_in_order_a_path_once() -> None:
    kept = Deferred(capacity=10)
    kept.add(Dirty("/r", "/r/a"))
    kept.add(Moved("/r", "/r/b", "/r/c"))
    kept.add(Dirty("/r", "/r/a", is_dir=True))  # seen again: the newest, at the end
    assert len(kept) == 2
    assert kept.take() == Backlog(
        (Moved("/r", "/r/b", "/r/c"), Dirty("/r", "/r/a", is_dir=True)), frozenset()
    )
    assert kept.take() == Backlog((), frozenset())


def test_past_the_bound_the_root_is_reconciled_instead() -> None:
    kept = Deferred(capacity=3)
    kept.add(Dirty("/r", "/r/1"))
    kept.add(Dirty("/s", "/s/1"))
    kept.add(Dirty("/r", "/r/2"))
    kept.add(Dirty("/r", "/r/3"))  # a fourth: /r's changes give way to a reconcile of /r
    kept.add(Dirty("/r", "/r/4"))  # /r is reconciled anyway
    kept.add(Dirty("/s", "/s/2"))  # room again for /s
    assert kept.take() == Backlog((Dirty("/s", "/s/1"), Dirty("/s", "/s/2")), frozenset({"/r"}))


def test_a_root_whose_reconcile_failed_is_reconciled_and_its_changes_dropped() -> None:
    kept = Deferred()
    kept.add(Dirty("/r", "/r/1"))
    kept.add(Dirty("/s", "/s/1"))
    kept.reconcile("/r")
    assert kept.take() == Backlog((Dirty("/s", "/s/1"),), frozenset({"/r"}))
