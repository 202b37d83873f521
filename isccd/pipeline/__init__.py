"""The pipeline: from scans, watcher changes and computed records to the store, the in-memory
index and the events they cause. Shared by ``isccd scan`` and the daemon.

- :class:`Pipeline` (:mod:`.pipeline`): the asyncio facade. ``open()``, then ``reconcile(root)``,
  ``process_path``, ``remove_path``, ``move_path``, ``set_thresholds`` and ``adopt``, ``purge``,
  the questions ``get``/``similar``/``dupes`` and the event log (``events_since``,
  ``last_seq``, ``first_seq``); ``on_commit`` receives every committed batch of events in
  order.
- :class:`Index` (:mod:`.index`): the synchronous core on the store's owner thread: applies
  records, renames, hardlinks and removals, keeps relations and the index consistent, logs
  events in the same transaction.
- :mod:`.reconcile`: one reconcile, walked in short steps on the owner thread.
- :mod:`.queries`: ``get``, ``similar``, ``dupes`` for the daemon and for read-only commands.
- :mod:`.answers`: their answers as the protocol's results, for the daemon and the command
  line alike.
- :mod:`.events`: what each event's ``data`` holds.
- :mod:`.composition`: whether the stored ISCC-CODEs are WIDE, and composing them again when
  that option changed.
- :mod:`.policy`: the duplicate policy the stored relations were decided under, and the
  re-evaluation that switches them to another (at a reload, or when a pipeline opens the store
  under another policy).
"""

from __future__ import annotations

from isccd.pipeline.index import Index, is_unstable
from isccd.pipeline.options import PipelineOptions, profile_is_stale
from isccd.pipeline.pipeline import Hasher, Pipeline
from isccd.pipeline.queries import DupGroup, FileView, Member, Peer, dupes, get, similar
from isccd.pipeline.reconcile import HashJob, Reconciler, ScanStats

__all__ = [
    "DupGroup",
    "FileView",
    "HashJob",
    "Hasher",
    "Index",
    "Member",
    "Peer",
    "Pipeline",
    "PipelineOptions",
    "Reconciler",
    "ScanStats",
    "dupes",
    "get",
    "is_unstable",
    "profile_is_stale",
    "similar",
]
