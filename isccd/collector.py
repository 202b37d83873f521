"""The cyclic garbage collector's pace while isccd works through many files.

A scan, and the daemon's indexing, allocate a few hundred objects per file (messages, records,
futures), nearly all freed by reference counting; yet at the interpreter's default pace (a young
collection every 700 allocations, an older one every ten of those, a full one when the heap has
grown by a quarter) the collector traverses the imported modules and the growing store index
again and again. Measured on a first scan of 20,000 small files: about 840 collections, 0.4 s of
the command's CPU time.

So nothing is collected while a process starts (its imports and its set-up: nothing they
allocate is garbage); once it has started, what exists then is left out of the collections
(``gc.freeze``) and the young generation is collected every :data:`YOUNG_THRESHOLD`
allocations. Cyclic garbage made after the start is still collected; what is frozen is never
traversed again, so only what lives as long as the process should be: a long-running process
collects once before it freezes (:meth:`Collector.settled`). What was alive then and later
ends in a reference cycle (the daemon's first workers' bookkeeping, once they are let go) is
not freed: a cost bounded by what existed at the start, paid once, that does not grow while
the process runs.

A command that builds one answer and ends (``dupes``, ``similar``, ``get``), or carries out
one plan (``dedupe``), runs without the collector (:func:`paused`): its hundreds of thousands of
groups, members, files or steps hold no cycle and are freed by reference counting, and the
collector would only walk them as they pile up (a third of a 100,000-file ``dupes --near``, a
tenth of ``dedupe --apply`` of 10,000 groups).

Imports nothing of isccd: ``isccd scan``, the daemon and the answering commands use it alike.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations (net of frees) between young collections once a process works through its files:
#: cyclic garbage (an exception's traceback, a cancelled task) waits at most this long, a few
#: MiB at most. Measured as above: 2 collections, 0.02 s.
YOUNG_THRESHOLD = 50_000


class Collector:
    """The collector's pace inside :func:`fewer_collections`."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled

    def settled(self, *, collect: bool = False) -> None:
        """The process has started: leave every object that exists now (the imported modules,
        the settings, the store's index: alive until the process ends) out of the collections
        from now on, and collect again, every :data:`YOUNG_THRESHOLD` allocations (unless the
        collector was disabled before the block).

        Args:
            collect: First collect what is already garbage, so that none of it is frozen: a
                frozen object is never collected, which a command that ends soon can afford
                and a service that runs for weeks should not (one full collection, a few
                tens of milliseconds at the daemon's start).
        """
        if collect:
            gc.collect()
        gc.freeze()
        if self._enabled:
            gc.enable()


@contextmanager
def fewer_collections() -> Iterator[Collector]:
    """Collect nothing while the process starts, and in large steps once it calls
    :meth:`Collector.settled`; when the block ends, the collector is as it was before it, and
    scans again what was left out.
    """
    enabled = gc.isenabled()
    previous = gc.get_threshold()
    gc.disable()
    gc.set_threshold(YOUNG_THRESHOLD, *previous[1:])
    try:
        yield Collector(enabled)
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()
        if enabled:
            gc.enable()


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection in the block (see the module docstring); when it ends, the
    collector is as it was before it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
