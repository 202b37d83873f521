"""The cyclic garbage collector's pace while a command works through many files.

A scan allocates a few hundred objects per file (messages, records, futures), nearly all freed
by reference counting; yet at the interpreter's default pace (a young collection every 700
allocations, an older one every ten of those, a full one when the heap has grown by a quarter) the
collector traverses the imported modules and the growing store index again and again. Measured
on a first scan of 20,000 small files: about 840 collections, 0.4 s of the command's CPU time.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations (net of frees) between young collections while a command works: cyclic garbage
#: (an exception's traceback, a cancelled task) waits at most this long, a few MiB at most.
#: Measured as above, the imports included: 5 collections, 0.03 s.
YOUNG_THRESHOLD = 50_000


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect less often inside the block; when it ends, collect as before, and let the
    collector scan again what :func:`settled` left out.

    Cycles are still collected, only in larger steps.
    """
    previous = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()


def settled() -> None:
    """Leave every object that exists now (the imported modules, the settings: what lives until
    the command ends) out of the collections that follow, inside :func:`fewer_collections`."""
    gc.freeze()
