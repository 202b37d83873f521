"""The answers of the index and the daemon, defined once: files, their matches, duplicate groups,
the daemon's status, and the questions that ask for them.

The pipeline returns these frozen dataclasses, the daemon builds its status from them, the
protocol encodes them on the socket (docs/protocol.md) and the command line renders them as
text or JSON (docs/schema/ has a JSON Schema for each). One name and one shape per thing
everywhere, events included:

- ``iscc`` is always a file's whole ISCC-CODE; ``unit`` names the unit type compared and
  ``code`` is the file's unit of that type; ``units`` maps each unit type to the file's unit;
- ``size`` is a file's size in bytes (iscc-sdk calls it ``filesize``), ``allocated`` the bytes
  it takes on disk (less for a sparse file) and ``reclaimable`` what removing files frees, in
  allocated bytes;
- ``path`` is a file's first name and ``links`` its other names (hardlinks are one file);
- ``host`` is the host a file is on.

Imports only :mod:`isccd.model`, so every layer above may use it.

- :mod:`.files`: :class:`Match`, :class:`FileInfo`, :class:`SimilarResult`;
- :mod:`.groups`: :class:`DupMember`, :class:`DupGroup`, :class:`Totals` (and the
  :class:`Footprint` of a file it counts), :class:`DupesResult`;
- :mod:`.folders`: :class:`DirMember`, :class:`DirGroup`, :class:`DirsResult` (duplicate
  folders);
- :mod:`.status`: :class:`DaemonStatus` and its parts;
- :mod:`.queries`: :class:`SimilarQuery`, :class:`DupesQuery`, :class:`WatchedQuery` and
  their limits;
- :mod:`.watched`: :class:`WatchGroup`, :class:`WatchedResult` (the files matching a
  watchlist).

The submodules are imported on first use of one of their names (PEP 562): a command that only
needs the limits of a query (the parser) loads neither the status nor the groups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from isccd.submodules import on_first_use

if TYPE_CHECKING:
    from isccd.results.files import FileInfo, Match, SimilarResult, file_type, units_of
    from isccd.results.folders import DIRS_NAMES_SHOWN, DirFile, DirGroup, DirMember, DirsResult
    from isccd.results.groups import DupesResult, DupGroup, DupKind, DupMember, Footprint, Totals
    from isccd.results.queries import (
        DIRS_SHARE,
        DUPES_LIMIT,
        DUPES_LIMIT_MAX,
        FILE_TYPES,
        MAX_DISTANCE,
        SIMILAR_LIMIT,
        SIMILAR_LIMIT_MAX,
        DirsQuery,
        DupesQuery,
        SimilarQuery,
        WatchedQuery,
    )
    from isccd.results.status import (
        DaemonStatus,
        DatabaseStatus,
        FleetHost,
        HashingStatus,
        RootStatus,
        ScanProgress,
        ServiceStatistics,
    )
    from isccd.results.watched import WatchedResult, WatchGroup

#: Where each public name lives. Submodules are imported on first use of one of their names
#: (PEP 562). A test keeps this map, the imports above and ``__all__`` equal.
_SUBMODULES: dict[str, tuple[str, ...]] = {
    "files": ("FileInfo", "Match", "SimilarResult", "file_type", "units_of"),
    "folders": ("DIRS_NAMES_SHOWN", "DirFile", "DirGroup", "DirMember", "DirsResult"),
    "groups": ("DupesResult", "DupGroup", "DupKind", "DupMember", "Footprint", "Totals"),
    "queries": (
        "DIRS_SHARE",
        "DUPES_LIMIT",
        "DUPES_LIMIT_MAX",
        "FILE_TYPES",
        "MAX_DISTANCE",
        "SIMILAR_LIMIT",
        "SIMILAR_LIMIT_MAX",
        "DirsQuery",
        "DupesQuery",
        "SimilarQuery",
        "WatchedQuery",
    ),
    "status": (
        "DaemonStatus",
        "DatabaseStatus",
        "FleetHost",
        "HashingStatus",
        "RootStatus",
        "ScanProgress",
        "ServiceStatistics",
    ),
    "watched": ("WatchedResult", "WatchGroup"),
}
__getattr__, __dir__ = on_first_use(__name__, _SUBMODULES, globals())

__all__ = [
    "DIRS_NAMES_SHOWN",
    "DIRS_SHARE",
    "DUPES_LIMIT",
    "DUPES_LIMIT_MAX",
    "FILE_TYPES",
    "MAX_DISTANCE",
    "SIMILAR_LIMIT",
    "SIMILAR_LIMIT_MAX",
    "DaemonStatus",
    "DatabaseStatus",
    "DirFile",
    "DirGroup",
    "DirMember",
    "DirsQuery",
    "DirsResult",
    "DupGroup",
    "DupKind",
    "DupMember",
    "DupesQuery",
    "DupesResult",
    "FileInfo",
    "FleetHost",
    "Footprint",
    "HashingStatus",
    "Match",
    "RootStatus",
    "ScanProgress",
    "ServiceStatistics",
    "SimilarQuery",
    "SimilarResult",
    "Totals",
    "WatchGroup",
    "WatchedQuery",
    "WatchedResult",
    "file_type",
    "units_of",
]
