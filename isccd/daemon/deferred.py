"""Changes the store could not take, kept until it can.

While the store cannot be written (a full disk; a database a fleet shares that is restarting
or out of reach, see :mod:`isccd.daemon.storehealth`), the watcher goes on noticing changes, and
the work queue fails to apply them. :class:`Deferred` keeps each one (a path to look at again, a
rename), in order, a path once, and hands them back when the store takes writes again: they
are applied as if just seen, without walking any tree.

It is bounded (:data:`CAPACITY` changes): past the bound, the changes of the root that would
overflow it are dropped and that root is reconciled instead (a stat walk of it finds whatever
changed). A root whose reconcile failed on the store is reconciled again too. So nothing is
lost, and a short outage costs only the changes it saw.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from isccd.watch.debounce import Dirty, Moved

#: Changes kept at most while the store cannot be written.
CAPACITY = 10_000


@dataclass(frozen=True, slots=True)
class Backlog:
    """What to do once the store takes writes again.

    Attributes:
        changes: The changes to apply, in the order they were seen.
        roots: The roots to reconcile instead (their changes overflowed, or a reconcile of
            them failed).
    """

    changes: tuple[Dirty | Moved, ...]
    roots: frozenset[str]


class Deferred:
    """The changes waiting for the store, bounded.

    Args:
        capacity: Changes kept at most.
    """

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._changes: OrderedDict[tuple[str, ...], Dirty | Moved] = OrderedDict()
        self._roots: set[str] = set()

    def __len__(self) -> int:
        """Changes kept."""
        return len(self._changes)

    def add(self, change: Dirty | Moved) -> None:
        """Keep a change that failed to be written (a path already kept moves to the end)."""
        if change.root in self._roots:
            return  # its root is reconciled anyway
        key = ("dirty", change.path) if isinstance(change, Dirty) else ("moved", change.src)
        self._changes.pop(key, None)
        if len(self._changes) >= self._capacity:
            self.reconcile(change.root)
            return
        self._changes[key] = change

    def reconcile(self, root: str) -> None:
        """Reconcile ``root`` once the store can be written (and drop its kept changes)."""
        self._roots.add(root)
        for key in [k for k, c in self._changes.items() if c.root == root]:
            del self._changes[key]

    def take(self) -> Backlog:
        """Everything kept, emptied."""
        backlog = Backlog(tuple(self._changes.values()), frozenset(self._roots))
        self._changes.clear()
        self._roots.clear()
        return backlog
