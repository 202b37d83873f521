"""The pipeline: from scans, watcher changes and computed records to the index (the store and
its in-memory search) and the events they cause. Shared by ``isccd scan`` and the daemon, and
closed: callers use what this package hands on, never the store.

- :class:`Pipeline` (:mod:`.pipeline`): the asyncio facade. ``open()``, then
  ``reconcile(root)``, ``process_path``, ``remove_path``, ``move_path``, ``set_options``,
  ``adopt``, ``recompose``, ``purge``; the questions ``get``, ``similar``, ``dupes``
  and ``counts``, answered with the results of :mod:`isccd.results`; the event log
  (``emit``, ``events_since``, ``last_seq``, ``log_bounds``);
  ``on_commit`` receives every committed batch of events in order.
- :class:`IndexReader` (:mod:`.reader`): the same questions asked of a store read directly.
- :class:`Index` (:mod:`.index`): the synchronous core on the store's owner thread: applies
  records, renames, hardlinks and removals, keeps relations and the search consistent, logs
  events in the same transaction.
- :mod:`.reconcile`: one reconcile, planned in short steps on the owner thread.
- :mod:`.queries`: ``get`` and ``similar`` over an index; :mod:`.groups`: ``dupes``;
  :mod:`.peers`: other files named with their hardlinks.
- :mod:`.events`: what each event's ``data`` holds.
- :mod:`.composition`: whether the stored ISCC-CODEs are WIDE, and composing them again when
  that option changed.
- :mod:`.policy`: the duplicate policy the stored relations were decided under, and the
  re-evaluation that switches them to another (at a reload, or when a pipeline opens the store
  under another policy).
- :mod:`.watchmatch`: the watchlists in memory, and the ``watch.match`` events of the files
  that match them; :class:`WatchlistEditor` (:mod:`.watchlists`): the watchlists changed by
  ``isccd watchlist``, beside the store's writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isccd.submodules import on_first_use

if TYPE_CHECKING:
    from isccd.pipeline.dirwatch import FILE_EVENTS
    from isccd.pipeline.fleetindex import FleetIndex, IndexUpdate, read_update
    from isccd.pipeline.options import DAY, PipelineOptions, profile_is_stale
    from isccd.pipeline.pipeline import LOG_MARK_NAME, BatchHasher, Counts, Hasher, Pipeline
    from isccd.pipeline.policy import Adopted, encode_policy
    from isccd.pipeline.reader import IndexReader
    from isccd.pipeline.reconcile import ScanStats
    from isccd.pipeline.watchlists import (
        NewRef,
        Watchlist,
        WatchlistEditor,
        WatchlistRefused,
        WatchUnit,
        ref_of_code,
        ref_of_record,
    )

# Imported on first use: a command that reads the index (``isccd dupes``) loads the reader,
# not the scan's pipeline with its workers and its watcher's folder events.
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "dirwatch": ("FILE_EVENTS",),
    "fleetindex": ("FleetIndex", "IndexUpdate", "read_update"),
    "options": ("DAY", "PipelineOptions", "profile_is_stale"),
    "pipeline": ("LOG_MARK_NAME", "BatchHasher", "Counts", "Hasher", "Pipeline"),
    "policy": ("Adopted", "encode_policy"),
    "reader": ("IndexReader",),
    "reconcile": ("ScanStats",),
    "watchlists": (
        "NewRef",
        "Watchlist",
        "WatchlistEditor",
        "WatchlistRefused",
        "WatchUnit",
        "ref_of_code",
        "ref_of_record",
    ),
}
__getattr__, __dir__ = on_first_use(__name__, _SUBMODULES, globals())
__all__ = [
    "DAY",
    "FILE_EVENTS",
    "LOG_MARK_NAME",
    "Adopted",
    "BatchHasher",
    "Counts",
    "FleetIndex",
    "Hasher",
    "IndexReader",
    "IndexUpdate",
    "NewRef",
    "Pipeline",
    "PipelineOptions",
    "ScanStats",
    "WatchUnit",
    "Watchlist",
    "WatchlistEditor",
    "WatchlistRefused",
    "encode_policy",
    "profile_is_stale",
    "read_update",
    "ref_of_code",
    "ref_of_record",
]
