"""The indexed files that match a watchlist: ``similar --watchlist`` and ``dupes --watchlist``.

The question the live ``watch.match`` events answer file by file, asked of the whole index at
once: each reference unit is looked up in the index's search (the Instance-Code among the
files with those bytes, every other unit within its watchlist's radius), and every file found
is judged by the very rule the events follow (:func:`isccd.pipeline.watchmatch.judge`: exact
by the Instance-Code, near within the watchlist's threshold, a near Data- or Meta-Code
overruled by a Content-Code of one type that is far apart). A file is listed once per
reference, by its best match, its hardlinks folded into it.

The same function serves the daemon (on the owner thread, with the live index) and a command
reading the store directly, so both give the same answer.
"""

from __future__ import annotations

from collections.abc import Callable

from isccd.errors import UnknownWatchlistError
from isccd.fspath import is_under
from isccd.model import RelationKind, UnitType
from isccd.pipeline.index import Index
from isccd.pipeline.peers import Peer, fold, size_of
from isccd.pipeline.watchmatch import TYPES, WatchHit, digests_of, judge, policy_of
from isccd.results import Match, WatchedQuery, WatchedResult, WatchGroup, file_type
from isccd.store import StoredFile
from isccd.store.watchlists import WatchUnit


def watched(ix: Index, query: WatchedQuery) -> WatchedResult:
    """The indexed files matching ``query.watchlist``'s references, a group per reference.

    Raises:
        UnknownWatchlistError: There is no such watchlist.
    """
    store = ix.store
    found = [w for w in store.watchlists() if w.name == query.watchlist]
    if not found:
        raise UnknownWatchlistError(f"there is no watchlist {query.watchlist!r}")
    watchlist = found[0]
    units = store.watch_units_of_list(watchlist.name)
    policy = ix.options.thresholds
    wanted = set(query.units) if query.units is not None else set(TYPES)
    if not query.near:
        wanted &= {UnitType.INSTANCE}
    ix.refresh()
    candidates: list[tuple[WatchUnit, list[int]]] = []
    files: dict[int, StoredFile] = {}
    for unit in units:
        if unit.type not in wanted:
            continue
        if unit.type is UnitType.INSTANCE:
            exact = store.files_by_instance(unit.digest, fleet=True)
            files.update((s.id, s) for s in exact)
            candidates.append((unit, [s.id for s in exact]))
            continue
        radius = policy_of(unit.threshold, policy).of(unit.type)
        if radius is None:
            continue
        ix.ensure_loaded(unit.type)
        candidates.append(
            (unit, [h.file_id for h in ix.search.within(unit.type, unit.digest, radius)])
        )
    unread = sorted({i for _, ids in candidates for i in ids} - files.keys())
    files.update((s.id, s) for s in store.files_by_id(unread))
    refs = digests_of(units)
    hits: dict[int, dict[int, WatchHit]] = {}  # reference -> file -> its best match
    for unit, ids in candidates:
        for file_id in ids:
            stored = files.get(file_id)
            if stored is None or not _listed(stored, query, policy.admits):
                continue
            record = stored.record
            mine = record.unit(unit.type)
            if mine is None:
                continue
            digests = {u.type: u.digest for u in record.units}
            hit = judge(unit, mine.digest, mine.iscc, policy, digests=digests,
                        ref_digests=refs[unit.ref])  # fmt: skip
            best = hits.setdefault(unit.ref, {}).get(file_id)
            if hit is not None and (best is None or hit.rank() < best.rank()):
                hits[unit.ref][file_id] = hit
    labels = {u.ref: u for u in units}
    groups = [
        WatchGroup(ref, labels[ref].label, labels[ref].reference, _matches(by_file, files))
        for ref, by_file in sorted(hits.items())
        if by_file
    ]
    return WatchedResult(
        watchlist.name, watchlist.threshold, watchlist.refs, tuple(groups[: query.limit]),
        truncated=len(groups) > query.limit,
    )  # fmt: skip


#: The order matches of equal distance are listed in.
_ORDER = {t: i for i, t in enumerate(TYPES)}


def _listed(stored: StoredFile, query: WatchedQuery, admits: Callable[[int | None], bool]) -> bool:
    """Whether a file found is one the question lists: live, on its host, under its root, of
    its types and sizes, and large enough to match anything at all (``[match] min_size``)."""
    record = stored.record
    size = size_of(record)
    return (
        stored.live
        and admits(size)
        and (query.host is None or stored.host == query.host)
        and (query.root is None or is_under(stored.path, query.root))
        and (query.min_size == 0 or (size or 0) >= query.min_size)
        and (query.types is None or file_type(record.mode) in query.types)
    )


def _matches(by_file: dict[int, WatchHit], files: dict[int, StoredFile]) -> tuple[Match, ...]:
    peers = [
        Peer(files[file_id], _relation(hit), hit.unit, hit.distance, hit.threshold)
        for file_id, hit in by_file.items()
    ]
    matches = fold(peers)
    matches.sort(
        key=lambda m: (
            m.relation is not RelationKind.EXACT,
            m.distance,
            _ORDER[m.unit],
            m.host,
            m.path,
        )
    )
    return tuple(matches)


def _relation(hit: WatchHit) -> RelationKind:
    return RelationKind.EXACT if hit.unit is UnitType.INSTANCE else RelationKind.NEAR
