"""Telling an unmounted disk from deleted files: the device of a root.

The store records the ``st_dev`` of each root directory when a reconcile of the whole root
completes. A disk that is unmounted leaves its mount point behind, usually empty, on the parent
file system: a walk would find every indexed file gone. So when a reconcile finds the root on
another device than recorded, the files indexed there decide:

- **Unavailable**: fewer than half of the files indexed under the root are found at their paths
  (in particular none). The root is reported unavailable (a ``ScanIssue`` with reason
  ``unavailable`` in the counters and ``scan.done``), nothing is tombstoned, no unit is
  recomputed, and the recorded device is kept: once the disk is mounted again the next
  reconcile finds everything unchanged.
- **Moved**: at least half of them are there. The root now lives on the new device (the same
  file system mounted under another device number, or the files copied to a new disk). Files
  whose path, inode, size, mtime and ctime match the stored ones (only the device differs) are
  re-identified without being read; other files are hashed like any changed file, and those
  with the same content are updated without an event; what is gone is tombstoned; the new
  device is recorded.

A root that legitimately moved to a new, mostly empty, file system thus stays unavailable: the
remedy is to remove the root from the configuration (its files are tombstoned), reload, and add
it again. A store that recorded no device yet (new, or written by an isccd before version 3 of
the schema) records the device the first completed reconcile sees.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from isccd.model import FileStat
from isccd.store import Store
from isccd.walk import IssueReason, Lookup, ScanIssue


def device_of(root: str) -> int | None:
    """The ``st_dev`` of a root directory now (blocking on the disk), if it can be stat'ed (the
    walk reports a missing or unreadable root)."""
    try:
        return Path(root).stat().st_dev
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class RootDevice:
    """The device a root was recorded on and the one it is on now.

    Attributes:
        root: The root.
        recorded: ``st_dev`` the store recorded, if any.
        current: ``st_dev`` of the root directory now, if it can be stat'ed.
    """

    root: str
    recorded: int | None
    current: int | None

    @property
    def moved(self) -> bool:
        """True when the root is on another device than recorded."""
        return None not in (self.recorded, self.current) and self.recorded != self.current

    def translate(self, stat: FileStat) -> FileStat:
        """A stored file's validators as they would read on the current device (a file on the
        recorded device keeps its inode and times when its file system is mounted again)."""
        if self.moved and stat.dev == self.recorded and self.current is not None:
            return replace(stat, dev=self.current)
        return stat

    def lookup(self, lookup: Lookup) -> Lookup:
        """``lookup`` with :meth:`translate` applied, for the walk's comparison."""
        if not self.moved:
            return lookup

        def translated(directory: str) -> Mapping[str, FileStat]:
            return {name: self.translate(st) for name, st in lookup(directory).items()}

        return translated

    def unavailable(self, present: int, missing: int) -> bool:
        """Whether the root counts as unavailable (see the module docstring), given how many
        indexed files the walk found at their paths and how many it did not."""
        return self.moved and present < missing

    def issue(self, present: int, missing: int) -> ScanIssue:
        """The report of an unavailable root."""
        return ScanIssue(
            self.root,
            IssueReason.UNAVAILABLE,
            f"the root is on device {_device(self.current)}, not {_device(self.recorded)} as "
            f"when it was indexed, and holds {present} of the {present + missing} files indexed "
            "there: is its disk unmounted? Nothing was removed from the index",
        )

    def settle(self, store: Store) -> int:
        """After a complete reconcile that found the root available: record its device, and
        re-identify the files still on the recorded one. Returns how many were."""
        if self.current is None:
            return 0
        moved = 0
        if self.moved and self.recorded is not None:
            moved = store.rebase_device(self.root, self.recorded, self.current)
        if self.recorded != self.current:
            store.set_root_device(self.root, self.current)
        return moved


def _device(dev: int | None) -> str:
    return "?" if dev is None else f"{os.major(dev)}:{os.minor(dev)}"
