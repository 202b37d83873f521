"""From a file on disk to a :class:`~isccd.model.FileRecord`: the one place extraction meets ISCC.

:func:`compute_record` is what the daemon and ``isccd scan`` run in a process pool (a top-level
function with picklable arguments and result) and what ``isccd code`` prints. For one file it:

1. opens the file safely (:mod:`isccd.extract.source`: regular files only, never a FIFO or a
   device, never through a symbolic link);
2. detects the media type from the name and the first 4096 bytes, and from it the mode;
3. reads the file once, feeding the Data- and Instance-Code hashers together;
4. extracts the content the mode needs and computes the Content-Code;
5. computes the Meta-Code from the embedded title and description, or the file name;
6. checks the file did not change, vanish or get replaced meanwhile (if it did, nothing computed
   is trusted: the record carries only an ``UNSTABLE`` or ``VANISHED`` issue, for a retry);
7. combines the units into the ISCC-CODE, as the ISCC SDK 0.9.7 does.

:func:`renamed_record` gives the record of the same file under another name without reading
it (the Meta-Code follows a name taken from the file name).

It never raises for a bad file: every problem becomes a :class:`~isccd.model.FileIssue` and
whatever units can still be computed are. Each unit carries a ``profile`` naming the algorithm
version, the bit length and the extractor and tool versions it depends on, so a store can
recompute just the units a new tool version affects (``units=``); :func:`current_versions` says
which versions are current.

Importing this package makes the compiled kernels of the process come from
:mod:`isccd.hashing.machine` (their machine code, cached on disk) when they are first needed.
"""

from __future__ import annotations

from isccd.hashing import machine
from isccd.hashing.issues import OUT_OF_MEMORY, issue_from_exception, out_of_memory
from isccd.hashing.options import ALGORITHM, EXTRACTION_REVISION, CodeOptions
from isccd.hashing.record import ALL_UNITS, compose_iscc, compute_record
from isccd.hashing.renamed import renamed_record
from isccd.hashing.versions import MISSING, UNKNOWN, Versions, current_versions
from isccd.iscc.kernels import use_loader

# The compiled kernels of every process that hashes files come from their machine code on disk,
# loaded without numba when they are first needed (isccd.hashing.machine).
use_loader(machine.compiled_kernels)

__all__ = [
    "ALGORITHM",
    "ALL_UNITS",
    "EXTRACTION_REVISION",
    "MISSING",
    "OUT_OF_MEMORY",
    "UNKNOWN",
    "CodeOptions",
    "Versions",
    "compose_iscc",
    "compute_record",
    "current_versions",
    "issue_from_exception",
    "out_of_memory",
    "renamed_record",
]
