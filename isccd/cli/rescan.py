"""``isccd rescan --wait``: progress while the daemon reconciles, then what changed.

The daemon is asked to ``sync`` on one connection while another asks its ``status`` a few
times a second for the progress line (stderr, on a terminal only). Once every change is indexed
(the ``sync`` reply names the last event then), the events since the request are replayed on a
subscription and counted: files added, changed, moved and removed, files that failed, and
duplicates found.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from isccd.cli.output import Progress
from isccd.client import Client
from isccd.fspath import is_under
from isccd.model import EventType

#: Seconds between two looks at the daemon's progress.
POLL = 0.25

#: The events counted, and the name each is counted under.
COUNTED = {
    EventType.FILE_ADDED: "added",
    EventType.FILE_CHANGED: "changed",
    EventType.FILE_MOVED: "moved",
    EventType.FILE_REMOVED: "removed",
    EventType.FILE_ERROR: "errors",
    EventType.FILE_UNSTABLE: "unstable",
    EventType.DUP_EXACT: "duplicates",
    EventType.DUP_NEAR: "duplicates",
}

#: The counts in the order the summary gives them.
ORDER = ("added", "changed", "moved", "removed", "errors", "unstable", "duplicates")


@dataclass(frozen=True, slots=True)
class Changes:
    """What a rescan changed in the index.

    Attributes:
        seq: The last event once every change was indexed.
        counts: Events by what they count (:data:`COUNTED`), for the paths rescanned.
    """

    seq: int
    counts: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """``"3 added, 1 changed, 0 moved, 0 removed, 1 errors, ..."``."""
        return ", ".join(f"{self.counts.get(name, 0)} {name}" for name in ORDER)


def wait(connect: Callable[[], Client], path: str | None, since: int) -> Changes:
    """Wait until the daemon indexed every change under ``path`` (every root: ``None``), show
    its progress meanwhile, and count the changes logged after ``since``.

    Args:
        connect: Opens a new connection to the daemon.
        path: The root or directory rescanned.
        since: The last event's seq before the rescan was asked for.

    Raises:
        DaemonUnavailableError: The daemon went away.
        ProtocolError: It refused.
    """
    done: list[int] = []
    failed: list[BaseException] = []

    def sync() -> None:
        try:
            with connect() as client, client.waiting(None):
                done.append(client.sync(path))
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    # A daemon thread: the command interrupted (Ctrl-C) or failing ends without waiting for the
    # daemon's answer, which may be the whole rescan away; the rescan goes on in the daemon.
    syncing = threading.Thread(target=sync, name="isccd-sync", daemon=True)
    syncing.start()
    with connect() as client, Progress("rescanning") as progress:
        while syncing.is_alive():
            _show(client, path, progress)
            syncing.join(POLL)
    if failed:
        raise failed[0]
    return Changes(done[0], _counted(connect, path, since, done[0]))


def _show(client: Client, path: str | None, progress: Progress) -> None:
    """Draw the scans under way of the roots ``path`` concerns, else the hashing queue."""
    status = client.status()
    scans = [
        root.scan
        for root in status.roots
        if root.scan is not None and (path is None or is_under(path, root.path))
    ]
    if scans:
        progress.total = sum(s.files_queued for s in scans) or None
        progress.done = sum(s.files_done for s in scans)
        seen = sum(s.files_seen for s in scans)
        progress.advance(0, f"{scans[0].phase}, {seen:,} files seen")
    else:
        progress.total = None
        progress.advance(0, f"settling, {status.queue_depth:,} files to hash")


def _counted(
    connect: Callable[[], Client], path: str | None, since: int, last: int
) -> dict[str, int]:
    """The events after ``since`` up to ``last`` about ``path``, counted."""
    counts: Counter[str] = Counter()
    if last <= since:
        return dict(counts)
    with connect() as client:
        client.subscribe(since)
        for event in client.events():
            name = COUNTED.get(event.type)
            if name is not None and (path is None or is_under(event.path, path)):
                counts[name] += 1
            if event.seq >= last:
                break
    return dict(counts)
