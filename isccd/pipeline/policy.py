"""The duplicate policy the stored relations were decided under, and the switch to another one.

The near pairs in the store, and the ``dup.*`` events already logged, follow the policy
(:class:`isccd.match.Thresholds`: thresholds and ``min_size``) in force when they were decided.
The store records that policy (property :data:`PROPERTY`), so that a pipeline opened under
another one, at a reload or at the next start after the configuration changed while nothing ran
(the daemon stopped, ``isccd scan`` with another configuration), re-evaluates the affected files
and logs what began and ended (``dup.exact``, ``dup.near``, ``dup.resolved`` with reason
``threshold``), once.

A switch runs in chunks, each its own transaction, and every chunk records how far it got with
its events. A switch interrupted (killed, a full disk) is finished by the next one, before any
further switch, so that every file is re-evaluated exactly once from the policy its relations
were decided under. A store that records no policy (a new one, or one written before policies
were recorded) takes the policy of the pipeline that opens it, without re-evaluating.

The functions taking an :class:`Index` run on the store's owner thread, each as one job
(submitted by :class:`isccd.pipeline.Pipeline`); the record is JSON:
``{"decided": {...}, "switching": {"to": {...}, "done": <last file id re-evaluated>}}``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from isccd.match import NEAR_UNITS, Side, Thresholds, is_exact
from isccd.model import Event, RelationKind
from isccd.pipeline import changes, relate
from isccd.pipeline.index import Index
from isccd.pipeline.peers import size_of
from isccd.pipeline.relate import side_of, stored_side
from isccd.store import StoredFile

_log = logging.getLogger("isccd.pipeline")

#: The store property holding the record.
PROPERTY = "duplicate_policy"

_FIELDS = tuple(f.name for f in dataclasses.fields(Thresholds))


@dataclass(frozen=True, slots=True)
class Recorded:
    """What the store says about its relations.

    Attributes:
        decided: The policy the relations were decided under (of the files above ``done``
            while a switch is under way).
        target: The policy a switch under way is moving to, if one is.
        done: The files up to this id have been re-evaluated under ``target``.
    """

    decided: Thresholds
    target: Thresholds | None = None
    done: int = 0

    @property
    def effective(self) -> Thresholds:
        """The policy once any switch under way is finished."""
        return self.decided if self.target is None else self.target


@dataclass(frozen=True, slots=True)
class Switch:
    """One switch under way.

    Attributes:
        previous: The policy the files' relations were decided under.
        target: The policy they are re-evaluated under.
        ids: The files to re-evaluate, in id order.
    """

    previous: Thresholds
    target: Thresholds
    ids: Sequence[int]


@dataclass(frozen=True, slots=True)
class Adopted:
    """The outcome of bringing the stored relations under a policy.

    Attributes:
        previous: The policy they had been decided under, when it was another one.
        files: Files re-evaluated.
        events: The events logged.
    """

    previous: Thresholds | None = None
    files: int = 0
    events: Sequence[Event] = ()


def encode_policy(thresholds: Thresholds) -> dict[str, int | None]:
    """A policy as JSON-ready values, every field named."""
    return {name: getattr(thresholds, name) for name in _FIELDS}


def decode(values: Any) -> Thresholds:
    """The inverse of :func:`encode`; a field it lacks keeps its default, but for
    ``max_links``: a policy recorded before relations were bounded bounded none (so the next
    switch, to a bounded policy, prunes them).

    Raises:
        ValueError: Not a policy.
    """
    if not isinstance(values, dict) or not set(values) <= set(_FIELDS):
        raise ValueError(f"not a duplicate policy: {values!r}")
    for value in values.values():
        if value is not None and not _is_int(value):
            raise ValueError(f"not a duplicate policy: {values!r}")
    given: dict[str, Any] = {"max_links": None} | values
    return Thresholds(**given)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON's true is no number


def recorded(ix: Index) -> Recorded | None:
    """The store's record; ``None`` when it has none, or one this isccd cannot read (it is
    then replaced, as if none had been recorded)."""
    text = ix.store.get_property(PROPERTY)
    if text is None:
        return None
    try:
        return parse(text)
    except ValueError as exc:
        _log.warning("policy_record_unreadable", extra={"error": str(exc)})
        return None


def parse(text: str) -> Recorded:
    """A record from its JSON.

    Raises:
        ValueError: Not a record.
    """
    try:
        found = json.loads(text)
        decided = decode(found["decided"])
        switching = found.get("switching")
        if switching is None:
            return Recorded(decided)
        target, done = decode(switching["to"]), switching["done"]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a duplicate policy record: {text!r}") from exc
    if not _is_int(done):
        raise ValueError(f"not a duplicate policy record: {text!r}")
    return Recorded(decided, target, done)


def record(ix: Index, state: Recorded) -> None:
    """Write the record in the current transaction."""
    found: dict[str, Any] = {"decided": encode_policy(state.decided)}
    if state.target is not None:
        found["switching"] = {"to": encode_policy(state.target), "done": state.done}
    ix.store.set_property(PROPERTY, json.dumps(found, sort_keys=True, separators=(",", ":")))


def keep(ix: Index, fallback: Thresholds) -> None:
    """Decide under the store's policy (the one a switch under way moves to) until the next
    switch; a store that records none takes ``fallback``."""
    found = recorded(ix)
    if found is None:
        found = Recorded(fallback)
        record(ix, found)
    ix.options = replace(ix.options, thresholds=found.effective)


def begin(ix: Index, previous: Thresholds, target: Thresholds, done: int = 0) -> Switch:
    """Start a switch (or take up one interrupted after file ``done``): the index decides
    under ``target`` from now on, and the files whose relations it affects are named.

    Returns:
        The switch; its files are re-evaluated with :func:`step`, in id order.
    """
    ix.options = replace(ix.options, thresholds=previous)
    ids = [i for i in switch_to(ix, target) if i > done]
    record(ix, Recorded(previous, target, done) if ids else Recorded(target))
    return Switch(previous, target, ids)


def step(ix: Index, switch: Switch, part: Sequence[int]) -> list[Event]:
    """Re-evaluate the next files of a switch (a chunk of ``switch.ids``, in order) and record
    the progress with the events, in one transaction.

    Returns:
        The events logged.
    """
    events = reevaluate(ix, part, switch.previous)
    last = part[-1] if part else 0
    finished = not switch.ids or last >= switch.ids[-1]
    record(
        ix, Recorded(switch.target) if finished else Recorded(switch.previous, switch.target, last)
    )
    return events


def switch_to(ix: Index, thresholds: Thresholds) -> list[int]:
    """Switch the index to a new duplicate policy; return the ids of the files whose
    relations must be re-evaluated (with :func:`reevaluate` and the old policy, in chunks):
    those with a unit whose threshold changed, those whose size lies between the old and
    the new ``min_size``, and every file with a near relation when ``max_links`` changed."""
    old = ix.options.thresholds
    ix.options = replace(ix.options, thresholds=thresholds)
    changed = {t for t in NEAR_UNITS if old.of(t) != thresholds.of(t)}
    ids: set[int] = set()
    for unit_type in changed:
        if thresholds.of(unit_type) is not None:
            ix.ensure_loaded(unit_type)
            ids.update(int(i) for i in ix.search[unit_type].ids())
    bound = old.max_links != thresholds.max_links
    for pair in ix.store.near_pairs():
        if bound or pair.unit in changed:
            ids.update((pair.a, pair.b))
    if old.min_size != thresholds.min_size:
        low, high = sorted((old.min_size, thresholds.min_size))
        ids.update(ix.store.ids_by_size(low, high))
    return sorted(ids)


def reevaluate(
    ix: Index, file_ids: Sequence[int], previous: Thresholds | None = None
) -> list[Event]:
    """Recompute the relations of these files under the current policy, logging what began
    (``dup.exact``, ``dup.near``) and ended (``dup.resolved``, reason ``threshold``).

    Args:
        file_ids: The files, as :func:`switch_to` named them.
        previous: The policy their relations were decided under (the current one when
            ``None``). Exact relations are not stored: they follow from ``min_size``, so a
            file that crossed it gains or loses all its copies at once, and the copy with
            the lowest id announces it for the whole group.

    Returns:
        The events logged.
    """
    mark = len(ix.pending)
    current = ix.options.thresholds
    previous = previous or current
    groups: dict[str, list[Side]] = {}  # datahash -> the live files holding those bytes

    def copies(stored: StoredFile, policy: Thresholds) -> list[int]:
        """Exact copies of a file under a policy, reading each group of copies once."""
        datahash = stored.record.datahash
        if not datahash:
            return []
        if datahash not in groups:
            found = ix.store.files_by_datahash(datahash, fleet=True)
            groups[datahash] = [stored_side(s, ix.store.host) for s in found]
        me = side_of(stored.id, stored.record)
        return [o.file_id for o in groups[datahash] if is_exact(me, o, policy)]

    for stored in ix.store.files_by_id(list(file_ids)):
        if not stored.live or stored.host != ix.store.host:
            continue  # gone, or another host's (which decides its files' relations itself)
        relations = relate.relations(ix, stored.id, stored.record)
        exact = [r.other for r in relations if r.kind is RelationKind.EXACT]
        old_exact = exact
        size = size_of(stored.record)
        if previous.admits(size) != current.admits(size):
            group = exact if current.admits(size) else copies(stored, previous)
            if all(other > stored.id for other in group):
                old_exact = group if previous.admits(size) else []
        changes.announce_relations(
            ix,
            stored,
            relations,
            old_exact=old_exact,
            old_near=ix.store.near_of(stored.id),
            reason="threshold",
        )
    return list(ix.pending[mark:])
