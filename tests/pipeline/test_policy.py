"""A duplicate policy changed while no pipeline ran is applied when the next one opens the store:
the stored relations are re-evaluated as at a reload, with the same events, once; a switch that
was interrupted is finished, not started over.

Files hash with the designed codes of :class:`tests.pipeline.harness.FamilyHasher` (``"A:3"`` is 3
bits from ``"A:0"``), so which relations each policy holds follows from the contents. Two stores
of the same root (``state`` names them) are compared where one is the reference: a reload in
one, the same change at an open in the other.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

from isccd.match import Thresholds
from isccd.model import Event, EventType
from isccd.pipeline import Pipeline, PipelineOptions, policy
from isccd.pipeline.index import Index
from isccd.results import DupesQuery
from isccd.store import open_store, state_url
from tests.pipeline.harness import PAD, Harness, others, pairs, snapshot

DEFAULT = Thresholds()
STRICT = Thresholds(data=2, min_size=100)
NEAR = DupesQuery(near=True)


def _open(tmp: Path, thresholds: Thresholds, state: str = "state") -> Harness:
    return Harness(tmp, options=PipelineOptions(thresholds=thresholds), state=state)


def _library(h: Harness) -> None:
    """Three small copies and a file near each, and a large pair of copies with a near one."""
    for name in ("a", "b", "c"):
        h.write(name, "A:0")
    h.write("near", "A:3")
    h.write("big", "B:0" + PAD)
    h.write("big_copy", "B:0" + PAD)
    h.write("big_near", "B:5" + PAD)


def _interrupted(state: Path, files: int) -> tuple[policy.Switch, list[Event]]:
    """Begin the switch from DEFAULT to STRICT in the store of ``state`` and re-evaluate its
    first ``files`` files, each step committed, then stop, as a process killed midway does."""
    ix = Index(open_store(state_url(state)), PipelineOptions(thresholds=DEFAULT))
    try:
        ix.begin()
        switch = policy.begin(ix, previous=DEFAULT, target=STRICT)
        ix.commit()
        ix.begin()
        events = policy.step(ix, switch=switch, part=switch.ids[:files])
        ix.commit()
    finally:
        ix.close()
    return switch, events


def _what(events: list[Event]) -> list[tuple[str, str, Any]]:
    """Events without their sequence numbers and times."""
    return [(e.type.value, e.path, e.data) for e in events]


def _recorded(tmp: Path, state: str = "state") -> Any:
    db = sqlite3.connect(tmp / state / "isccd.db")
    try:
        row = db.execute("SELECT value FROM properties WHERE name = ?", (policy.PROPERTY,))
        found = row.fetchone()
    finally:
        db.close()
    return json.loads(found[0]) if found else None


def test_a_policy_changed_between_runs_is_applied_once_at_the_next_open(tmp_path: Path) -> None:
    first = _open(tmp_path, DEFAULT)
    _library(first)
    first.scan()
    first.close()
    assert _recorded(tmp_path) == {"decided": policy.encode_policy(DEFAULT)}

    strict = _open(tmp_path, STRICT)
    try:
        events = strict.committed
        assert {(e.type.value, e.data["reason"]) for e in events} == {("dup.resolved", "threshold")}
        # The small files are now below min_size; big_near is 5 bits away, beyond 2.
        [exact] = [e for e in events if e.data["kind"] == "exact"]
        assert {exact.path.rsplit("/", 1)[-1], *others(exact)} == {"a", "b", "c"}
        near = [e for e in events if e.data["kind"] == "near"]
        assert len(near) + 1 == len(events)
        small = {(name, "near") for name in ("a", "b", "c")}
        assert pairs(near) == small | {("big", "big_near"), ("big_copy", "big_near")}
        assert strict.adopted.previous == DEFAULT and strict.adopted.files > 0
        assert list(strict.adopted.events) == events
        [group] = strict.dupes(near=True)
        assert sorted(m.path for m in group.members) == [strict.p("big"), strict.p("big_copy")]
    finally:
        strict.close()
    assert _recorded(tmp_path) == {"decided": policy.encode_policy(STRICT)}

    again = _open(tmp_path, STRICT)  # unchanged: nothing is re-evaluated
    try:
        assert again.committed == [] and again.adopted == policy.Adopted()
    finally:
        again.close()

    back = _open(tmp_path, DEFAULT)
    try:
        found = {e.type for e in back.committed}
        assert found == {EventType.DUP_EXACT, EventType.DUP_NEAR}
        assert snapshot(state_url(tmp_path / "state")) == snapshot_fresh(tmp_path, DEFAULT)
    finally:
        back.close()


def snapshot_fresh(tmp: Path, thresholds: Thresholds) -> dict[str, Any]:
    """What a fresh scan of the root under ``thresholds`` stores."""
    fresh = _open(tmp, thresholds, state="fresh")
    try:
        fresh.scan()
    finally:
        fresh.close()
    return snapshot(state_url(tmp / "fresh"))


def test_an_open_logs_what_a_reload_logs(tmp_path: Path) -> None:
    # Two stores of one root: one reloads the new policy, the other is opened under it.
    for state in ("reloaded", "reopened"):
        h = _open(tmp_path, DEFAULT, state=state)
        if state == "reloaded":
            _library(h)
        h.scan()
        if state == "reloaded":
            reloaded = h.adopt(STRICT)
        h.close()
    reopened = _open(tmp_path, STRICT, state="reopened")
    reopened.close()
    assert reloaded and _what(reopened.committed) == _what(reloaded)
    assert snapshot(state_url(tmp_path / "reopened")) == snapshot(state_url(tmp_path / "reloaded"))
    assert _recorded(tmp_path, "reopened") == _recorded(tmp_path, "reloaded")


def test_an_interrupted_switch_is_finished_by_the_next_open(tmp_path: Path) -> None:
    whole = _open(tmp_path, DEFAULT, state="whole")
    _library(whole)
    whole.scan()
    whole.close()
    whole = _open(tmp_path, STRICT, state="whole")
    whole.close()

    cut = _open(tmp_path, DEFAULT, state="cut")
    cut.scan()
    cut.close()
    # The switch's first two files are re-evaluated and committed, then the process dies.
    switch, first = _interrupted(tmp_path / "cut", 2)
    assert len(switch.ids) > 2
    progress = _recorded(tmp_path, "cut")
    assert progress["switching"] == {"to": policy.encode_policy(STRICT), "done": switch.ids[1]}

    # Opened under the policy it was moving to: the rest, and only the rest, is re-evaluated.
    rest = _open(tmp_path, STRICT, state="cut")
    rest.close()
    assert _what(first + rest.committed) == _what(whole.committed)
    assert rest.adopted.files == len(switch.ids) - 2
    assert snapshot(state_url(tmp_path / "cut")) == snapshot(state_url(tmp_path / "whole"))
    assert _recorded(tmp_path, "cut") == {"decided": policy.encode_policy(STRICT)}


def test_an_interrupted_switch_is_finished_before_the_next_one(tmp_path: Path) -> None:
    cut = _open(tmp_path, DEFAULT, state="cut")
    _library(cut)
    cut.scan()
    cut.close()
    _interrupted(tmp_path / "cut", 1)
    # A third policy: the small files count again, near ones within 5 bits.
    third = Thresholds(data=5)
    later = _open(tmp_path, third, state="cut")
    later.close()
    assert later.adopted.previous == DEFAULT
    assert snapshot(state_url(tmp_path / "cut")) == snapshot_fresh(tmp_path, third)
    assert _recorded(tmp_path, "cut") == {"decided": policy.encode_policy(third)}


def test_a_store_without_a_recorded_policy_takes_the_opening_one(tmp_path: Path) -> None:
    # As a store written before policies were recorded: its relations are taken as decided
    # under the policy of the first pipeline that opens it.
    h = _open(tmp_path, DEFAULT)
    _library(h)
    h.scan()
    h.close()
    db = sqlite3.connect(tmp_path / "state" / "isccd.db")
    db.execute("DELETE FROM properties WHERE name != 'store_id'")  # its identity stays
    db.commit()
    db.close()
    h = _open(tmp_path, STRICT)
    h.close()
    assert h.committed == [] and h.adopted == policy.Adopted()
    assert _recorded(tmp_path) == {"decided": policy.encode_policy(STRICT)}


def test_a_daemon_opens_under_the_stored_policy_and_adopts_its_own_later(tmp_path: Path) -> None:
    h = _open(tmp_path, DEFAULT)
    _library(h)
    h.scan()
    before = h.dupes(near=True)
    h.close()
    options = PipelineOptions(thresholds=STRICT)
    pipeline = Pipeline(state_url(tmp_path / "state"), options, hasher=h.hasher)
    try:
        assert pipeline.open(adopt=False) == policy.Adopted()
        # Until then, decisions and answers follow the policy the store was written under.
        assert asyncio.run(pipeline.dupes(NEAR)).groups == before
        adopted = asyncio.run(pipeline.adopt())
        assert adopted.previous == DEFAULT and adopted.events
        [group] = asyncio.run(pipeline.dupes(NEAR)).groups  # only the big copies are left
        assert group.kind == "exact" and len(group.members) == 2
        assert asyncio.run(pipeline.adopt()) == policy.Adopted()
    finally:
        pipeline.close()
    assert _recorded(tmp_path) == {"decided": policy.encode_policy(STRICT)}


def test_an_unreadable_record_is_replaced() -> None:
    for text in ("", "[]", '{"decided": {"data": "8"}}', '{"decided": {"colour": 1}}',
                 '{"decided": {}, "switching": {"to": {}, "done": true}}'):  # fmt: skip
        try:
            policy.parse(text)
        except ValueError:
            continue
        raise AssertionError(f"accepted {text!r}")
    state = policy.Recorded(DEFAULT, STRICT, 7)
    switching = {"to": policy.encode_policy(STRICT), "done": 7}
    found = policy.parse(
        json.dumps({"decided": policy.encode_policy(DEFAULT), "switching": switching})
    )
    assert found == state and found.effective == STRICT
